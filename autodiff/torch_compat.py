"""The torch face of Tensor: torch's types, its random state, and torch's meaning of methods.

Two faces, one Tensor
---------------------
`import autodiff as torch` and `import autodiff.numpy as np` share one array type. Most
names mean the same in both (`x.sum()`, `x.reshape(2, 3)`, `x.T`); some do not: NumPy's
`x.transpose(0, 1)` is an axes permutation (the identity on a matrix) where torch's swaps two
dims, `x.var()` is biased in NumPy and unbiased in torch, `x.max(1)` gives values in NumPy and
`(values, indices)` in torch, `x.repeat(2, 1)` repeats elements in NumPy and tiles in torch,
`x.sort()` sorts in place in NumPy and returns `(values, indices)` in torch.

A value's face is the type of the concrete value underneath it (`autodiff.core.tensor.face_of`):

- a level-0 Tensor is torch's: only the torch face makes them (`autodiff.tensor`, `zeros`,
  `randn`, ..., `Tensor(...)`, `requires_grad=True`, parameters), and every operation on one
  returns one, so results inherit the face with no bookkeeping on the hot path;
- a NumPy array or a Python number is NumPy's: `autodiff.numpy` functions on them return
  arrays, and function transforms (`grad`, `vmap`, ...) trace them with tracers over them;
- a tracer has the face of the value it traces (its primal chain ends at a level-0 Tensor
  or at a NumPy array), so `autodiff.grad(f)(np_array)` runs `f` with NumPy's meanings and
  `autograd.functional.jacobian(f, tensor)` with torch's; a dual tensor is torch's;
- a staged value (inside `jit`) has only a shape and a dtype: its face is unknown.

A method whose meanings differ is installed once, as a dispatcher, and reads its call so:

- a call both libraries accept with different meanings runs with the value's face's meaning
  (`x.var()`, `x.max(1)`, `x.transpose(0, 1)` on a matrix, `x.repeat(2, 1)`, `x.sort()`);
  for a staged value, whose face is unknown, it raises a TypeError naming both readings and
  the function that says which is meant (`autodiff.numpy.var(x)` or `autodiff.var(x)`);
- a call spelled in one library's signature only runs with that library's meaning on
  either face, since there is no other reading to confuse it with: NumPy's `x.transpose()`,
  `x.cumsum()` without an axis, `x.repeat(2, axis=0)`, `x.sum(0, np.float32)`; torch's
  `x.sum(1, True)`, `x.max(other)`, `x.flatten(1)`, `x.view(2, 3)`. Keywords never clash:
  `dim=`, `keepdim=`, `axis=`, `keepdims=` are accepted on both faces;
- a library's errors for the values given stay that face's errors: NumPy's squeeze of an
  axis of length 2, torch's `dot` of two matrices, torch's `imag` of a real tensor;
- NumPy's in-place methods (`sort`, `put`, `resize`) cannot run on a traced value: on the
  NumPy face they raise, naming the functional spelling.

`x.size` is an int that is also callable on the torch face (`x.size()` is `torch.Size`,
`x.size(0)` an int; on the NumPy face it is NumPy's plain int). `autodiff.<name>` functions
are torch's (`autodiff.max(x, 1)` returns `(values, indices)`); `autodiff.numpy` functions
are NumPy's. `tests/test_two_faces.py` tests every name ndarray and torch.Tensor share from
both faces, against NumPy and against torch.

What stays one way on both faces, on purpose: `x.shape` is a tuple (it compares equal to
`torch.Size`, but prints as a tuple), and `x.dtype` is a NumPy dtype (it compares equal to
`autodiff.float64` and friends, which NumPy accepts as dtypes; see `autodiff/torch_dtypes.py`).

This module also holds torch's `device`, `Generator` and seeding, the `return_types`
named tuples, and the torch-meaning implementations of Tensor's methods that
`autodiff/_tensor_methods.py` installs; `autodiff/torch_functions.py` holds `torch.*`.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import math
import operator
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
import autodiff.scipy.special as _special
from autodiff import torch_dtypes
from autodiff.core import views as _views
from autodiff.core.errors import TracerConversionError
from autodiff.core.graph import name_node
from autodiff.core.primitive import bind as _bind
from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor, face_of
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.numpy import _tensor_methods as _ndarray
from autodiff.ops.at import at as _at
from autodiff.ops.elementwise import stop_gradient
from autodiff.ops.structural import reshape_p as _reshape_p

# =============================================================================================
# torch's types: device, Generator, return types, storages
# =============================================================================================


class device:  # noqa: N801 - torch's name
    """`torch.device`: autodiff computes on the CPU; other devices can be named, not used.

    Example:
        >>> device("cpu"), str(device("cpu:0")), device("cpu") == device("cpu")
        (device(type='cpu'), 'cpu:0', True)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | device = "cpu", index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            type, index = "cuda", type  # (torch reads a bare int as a CUDA ordinal)
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid argument: {type!r}")
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index: {type}")
            type, _, number = type.partition(":")
            index = builtins.int(number)
        self.type = type
        self.index = index

    def __eq__(self, other) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


def check_device(where) -> None:
    """Accept `device=None`/'cpu'/`device('cpu')`; raise clearly for any other device."""
    if where is None:
        return
    d = where if isinstance(where, device) else device(where)
    if d.type != "cpu":
        raise RuntimeError(
            f"autodiff computes on the CPU only: device {str(d)!r} is not available "
            "(use device='cpu' or leave device out)"
        )


class Generator:
    """`torch.Generator`: a seeded random stream, safe to share between threads.

    Every random factory (`rand`, `randn`, `randint`, `randperm`, `*_like`, `normal_`,
    `uniform_`, ...) draws from `default_generator` unless given `generator=`. The draws
    are NumPy's PCG64 stream, not torch's: a seed reproduces autodiff's numbers, not
    torch's.

    Example:
        >>> g = Generator().manual_seed(0)
        >>> a = g.random((2,)); g.manual_seed(0) is g, bool((g.random((2,)) == a).all())
        (True, True)
    """

    _DEFAULT_SEED = 67280421310721  # (torch's default generator's initial seed)

    def __init__(self, device: str | device = "cpu") -> None:  # noqa: F811 - torch's keyword
        check_device(device)
        self.device = CPU
        self._lock = threading.Lock()
        self._seed = self._DEFAULT_SEED
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed) -> Generator:
        """Seed this generator; returns it."""
        seed = operator.index(seed)
        with self._lock:
            self._seed = seed
            self._rng = np.random.Generator(np.random.PCG64(seed & 0xFFFFFFFFFFFFFFFF))
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        seed = builtins.int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> dict:
        with self._lock:
            return dict(self._rng.bit_generator.state)

    def set_state(self, state: dict) -> Generator:
        with self._lock:
            self._rng.bit_generator.state = state
        return self

    # The draws (each under the lock: one stream, any number of threads).
    def random(self, shape) -> np.ndarray:
        with self._lock:
            return self._rng.random(shape)

    def standard_normal(self, shape) -> np.ndarray:
        with self._lock:
            return self._rng.standard_normal(shape)

    def integers(self, low, high, shape) -> np.ndarray:
        with self._lock:
            return self._rng.integers(low, high, shape)

    def permutation(self, n: int) -> np.ndarray:
        with self._lock:
            return self._rng.permutation(n)

    def exponential(self, shape) -> np.ndarray:
        with self._lock:
            return self._rng.standard_exponential(shape)

    def __repr__(self) -> str:
        return f"<autodiff.Generator seed={self._seed}>"


default_generator = Generator()


def rng(generator) -> Any:
    """The stream to draw from: `generator` (a Generator or a NumPy Generator) or the
    default one."""
    if generator is None:
        return default_generator
    if isinstance(generator, (Generator, np.random.Generator)):
        return generator
    raise TypeError(f"generator must be an autodiff.Generator, got {type(generator).__name__}")


def _normal(gen, shape) -> np.ndarray:
    return gen.standard_normal(shape)


def _uniform(gen, shape) -> np.ndarray:
    return gen.random(shape)


def _integers(gen, low, high, shape) -> np.ndarray:
    return gen.integers(low, high, shape)


class _ReturnType(tuple):
    """A torch.return_types named tuple: `values, indices = x.max(1)`, or `.values`."""

    __slots__ = ()
    _name = "return_type"
    _fields = ("values", "indices")

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    def __reduce__(self):
        return (type(self), tuple(self))


def _return_type(name: str) -> type:
    return type(name, (_ReturnType,), {"__slots__": (), "_name": name})


class return_types:  # noqa: N801 - torch's module name
    """torch.return_types: the named tuples of `max(dim)`, `sort`, `topk`, ..."""

    max = _return_type("max")
    min = _return_type("min")
    sort = _return_type("sort")
    topk = _return_type("topk")
    kthvalue = _return_type("kthvalue")
    median = _return_type("median")
    mode = _return_type("mode")
    aminmax = None  # (not provided)


class UntypedStorage:
    """The memory a tensor's data lives in (`x.untyped_storage()`): views of one tensor share
    it, so `x[1:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()`."""

    def __init__(self, array: np.ndarray) -> None:
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        self._array = root

    def data_ptr(self) -> int:
        return self._array.__array_interface__["data"][0]

    def nbytes(self) -> int:
        return self._array.nbytes

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return 1


class TypedStorage(UntypedStorage):
    """`x.storage()`: the storage counted in elements of the tensor's dtype."""

    def __init__(self, array: np.ndarray) -> None:
        super().__init__(array)
        self.dtype = array.dtype

    def size(self) -> int:
        return self._array.nbytes // self.dtype.itemsize

    def element_size(self) -> int:
        return self.dtype.itemsize

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._array)


# =============================================================================================
# argument helpers
# =============================================================================================


def _array(x):
    """The concrete NumPy value of a level-0 Tensor (None for tracers)."""
    if isinstance(x, Tensor):
        if x._trace is not EVAL_TRACE:
            return None
        v = x._value
        return v if type(v) is np.ndarray else np.asarray(v)
    return np.asarray(x)


def _grad_mode() -> bool:
    return state().grad_enabled


def wrap_dim(d, ndim: int) -> int:
    """A dimension index in [0, ndim) (torch's range check and message; a 0-d tensor takes
    -1 and 0)."""
    d = operator.index(d)
    n = builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
        )
    return d % n


def _dims_arg(args: tuple) -> tuple:
    """`f(1, 2)` or `f((1, 2))` or `f([1, 2])`, as a tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        return tuple(args[0])
    if len(args) == 1 and isinstance(args[0], Tensor) and args[0].ndim == 1:
        return tuple(builtins.int(v) for v in args[0].tolist())
    return args


def _reduce_axes(x, dim) -> Any:
    """torch's `dim` (None, an int or a sequence of ints) as autodiff.numpy's `axis`."""
    if dim is None:
        return None
    ndim = x.ndim
    if isinstance(dim, (tuple, list, Size)):
        axes = tuple(wrap_dim(d, ndim) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes} appears multiple times in the list of dims")
        return None if ndim == 0 or not axes else axes
    d = wrap_dim(dim, ndim)
    return None if ndim == 0 else d


def _pick(kwargs: dict, name: str, alias: str, default, value=None):
    """A keyword given under torch's name or NumPy's (not both)."""
    if name in kwargs and alias in kwargs:
        raise TypeError(f"got both {name}= and its alias {alias}=")
    if name in kwargs:
        return kwargs.pop(name)
    if alias in kwargs:
        return kwargs.pop(alias)
    return default if value is None else value


def _alias(kwargs: dict, alias: str, value, default):
    """`value`, or NumPy's spelling `alias=` of it from `kwargs` (not both)."""
    if alias in kwargs:
        if value is not default:
            raise TypeError(f"got a value both for {alias}= and its torch spelling")
        return kwargs.pop(alias)
    return value


def _no_extra(name: str, kwargs: dict) -> None:
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _too_many(name: str, args: tuple, n: int) -> None:
    if len(args) > n:
        raise TypeError(f"{name}() takes at most {n} positional arguments ({len(args)} given)")


def _np_dtype(d):
    return torch_dtypes.to_numpy_dtype(d)


def _cast(x, d):
    """`x` in dtype `d` (None: unchanged)."""
    d = _np_dtype(d)
    if d is None or x.dtype == d:
        return x
    return anp.astype(x, d)


def _value_like(value, x):
    """A scalar (Python number or 0-d Tensor) in `x`'s dtype, for fills."""
    if isinstance(value, Tensor):
        return _cast(value, x.dtype)
    return np.asarray(value, dtype=x.dtype)


def _ambiguous(name: str, numpy_reading: str, torch_reading: str, numpy_fn: str, torch_fn: str):
    raise TypeError(
        f"x.{name}(...) means {numpy_reading} in NumPy but {torch_reading} in torch, and x is a "
        "staged value (inside jit), which does not say which of the two APIs the code is "
        f"written for. Write {numpy_fn} for NumPy's meaning or {torch_fn} for torch's."
    )


def _face_or_guess(self) -> str | None:
    return face_of(self)


# =============================================================================================
# functions: `autodiff.<name>` as `torch.<name>` (the first ones; see torch_functions.py)
# =============================================================================================

exp = anp.exp
log = anp.log
log1p = anp.log1p
expm1 = anp.expm1
sqrt = anp.sqrt
sin = anp.sin
cos = anp.cos
tan = anp.tan
tanh = anp.tanh
sinh = anp.sinh
cosh = anp.cosh
abs = anp.abs  # (torch's names shadow the builtins in this module: `builtins.<name>` for them)
sign = anp.sign
floor = anp.floor
ceil = anp.ceil
trunc = anp.trunc
square = anp.square
reciprocal = anp.reciprocal
matmul = anp.matmul
maximum = anp.maximum
minimum = anp.minimum


def pow(input, exponent):  # noqa: A001 - torch's name
    """`torch.pow(input, exponent)`: `input ** exponent` (either may be a number)."""
    return anp.power(input, exponent)


def where(condition, input=None, other=None):  # noqa: A002
    """`torch.where(condition, input, other)`; `torch.where(condition)`: the indices of the
    nonzero entries, as `nonzero(as_tuple=True)`."""
    if input is None and other is None:
        return torch_nonzero(condition, as_tuple=True)
    return anp.where(condition, input, other)


def where_method(self: Tensor, condition, other) -> Tensor:
    """`Tensor.where(condition, other)`: `where(condition, self, other)`."""
    return anp.where(condition, self, other)


def sigmoid(x):
    """`torch.sigmoid`: 1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + anp.exp(-x))


def relu(x):
    """`torch.relu`: max(x, 0) (derivative 0 at 0, as torch)."""
    return anp.where(x > 0, x, 0.0)


def clamp(x, min=None, max=None):  # noqa: A002 - torch's names
    """`torch.clamp(input, min=None, max=None)`: bounds may be numbers or tensors; the
    derivative is 1 where `min <= x <= max` (torch's)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = x
    if min is not None:
        out = anp.where(
            out < min,
            anp.asarray(min, dtype=x.dtype) if not isinstance(min, Tensor) else _cast(min, x.dtype),
            out,
        )
    if max is not None:
        out = anp.where(
            out > max,
            anp.asarray(max, dtype=x.dtype) if not isinstance(max, Tensor) else _cast(max, x.dtype),
            out,
        )
    return out


def clamp_min(x, min):  # noqa: A002
    """`torch.clamp_min`."""
    return clamp(x, min=min)


def clamp_max(x, max):  # noqa: A002
    """`torch.clamp_max`."""
    return clamp(x, max=max)


def cat(tensors, dim: int = 0, *, axis: int | None = None):
    """`torch.cat(tensors, dim=0)` (also `axis=`)."""
    if axis is not None:
        dim = axis
    tensors = list(tensors)
    # torch skips 1-d empty tensors (a legacy rule: `torch.cat([torch.tensor([]), x])`)
    kept = [t for t in tensors if not (np.shape(t) == (0,))] or tensors[:1]
    ndim = np.ndim(kept[0]) if kept else 1
    return anp.concatenate(kept, axis=wrap_dim(dim, ndim))


def stack(tensors, dim: int = 0, *, axis: int | None = None):
    """`torch.stack(tensors, dim=0)` (also `axis=`)."""
    if axis is not None:
        dim = axis
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return anp.stack(tensors, axis=wrap_dim(dim, np.ndim(tensors[0]) + 1))


def unbind(x, dim: int = 0) -> tuple:
    """`torch.unbind`: the slices along `dim`, as a tuple (one UnbindBackward0 node)."""
    return tuple(anp.unstack(x, axis=wrap_dim(dim, x.ndim)))


def mm(a, b):
    """`torch.mm`: the product of two matrices."""
    if np.ndim(a) != 2 or np.ndim(b) != 2:
        raise RuntimeError(f"self must be a matrix (mm of {np.ndim(a)}-d and {np.ndim(b)}-d)")
    return anp.matmul(a, b)


# ---- reductions (torch's signatures; NumPy's keyword spellings accepted too) ----


def _reduction(name: str, numpy_name: str | None = None, keepdim_ok: bool = True) -> Callable:
    f = getattr(anp, numpy_name or name)

    def reduce(input, dim=None, keepdim: bool = False, *, dtype=None, **kwargs):  # noqa: A002
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        extra = {"dtype": _np_dtype(dtype)} if dtype is not None else {}
        return f(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim), **extra)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"`torch.{name}(input, dim=None, keepdim=False, *, dtype=None)` (also `axis=`, "
        "`keepdims=`)."
    )
    return reduce


sum = _reduction("sum")  # noqa: A001
mean = _reduction("mean")
nansum = _reduction("nansum")
nanmean = _reduction("nanmean")


def prod(input, dim=None, keepdim: bool = False, *, dtype=None, **kwargs):  # noqa: A002
    """`torch.prod(input, dim=None, keepdim=False, *, dtype=None)` (dim: one int)."""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("prod", kwargs)
    extra = {"dtype": _np_dtype(dtype)} if dtype is not None else {}
    return anp.prod(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim), **extra)


def _logical_reduction(name: str) -> Callable:
    f = getattr(anp, name)

    def reduce(input, dim=None, keepdim: bool = False, **kwargs):  # noqa: A002
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        return f(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim))

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"`torch.{name}(input, dim=None, keepdim=False)`: a bool tensor."
    return reduce


all = _logical_reduction("all")  # noqa: A001
any = _logical_reduction("any")  # noqa: A001
amax = _logical_reduction("amax")
amin = _logical_reduction("amin")
amax.__doc__ = "`torch.amax(input, dim=(), keepdim=False)`: ties share the gradient evenly."
amin.__doc__ = "`torch.amin(input, dim=(), keepdim=False)`: ties share the gradient evenly."


def _arg_reduction(name: str) -> Callable:
    f = getattr(anp, name)

    def reduce(input, dim=None, keepdim: bool = False, **kwargs):  # noqa: A002
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        if dim is None:
            out = f(anp.ravel(input))
            return anp.reshape(out, (1,) * np.ndim(input)) if keepdim else out
        if np.ndim(input) == 0:
            wrap_dim(dim, 0)
            return anp.zeros_like(anp.astype(input, np.int64))
        return f(input, axis=wrap_dim(dim, np.ndim(input)), keepdims=builtins.bool(keepdim))

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"`torch.{name}(input, dim=None, keepdim=False)`: int64 indices."
    return reduce


argmax = _arg_reduction("argmax")
argmin = _arg_reduction("argmin")


def _max_min(name: str) -> Callable:
    value_of = anp.max if name == "max" else anp.min
    index_of = anp.argmax if name == "max" else anp.argmin
    binary = anp.maximum if name == "max" else anp.minimum
    result = getattr(return_types, name)

    def reduce(input, dim=None, keepdim: bool = False, *, out=None, **kwargs):  # noqa: A002
        if out is not None:
            raise TypeError(f"{name}(): out= is not supported")
        if isinstance(dim, (Tensor, np.ndarray)):  # torch.max(input, other): elementwise
            _no_extra(name, kwargs)
            return binary(input, dim)
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        if dim is None:
            if np.size(input) == 0:
                raise RuntimeError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            return value_of(input)
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"{name}(): dim must be an int (use amax/amin for several dims)")
        ndim = np.ndim(input)
        d = wrap_dim(dim, ndim)
        if ndim == 0:
            return result(anp.copy(input), anp.zeros_like(anp.astype(input, np.int64)))
        indices = index_of(input, axis=d, keepdims=True)
        # the values through the indices, so the gradient goes to that one element (torch's)
        values = anp.take_along_axis(input, indices, axis=d)
        if not keepdim:
            values, indices = anp.squeeze(values, d), anp.squeeze(indices, d)
        return result(values, indices)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"`torch.{name}`: `{name}(input)` the {name}imum; `{name}(input, dim, keepdim=False)` "
        f"the named tuple (values, indices); `{name}(input, other)` the elementwise {name}imum."
    )
    return reduce


max = _max_min("max")  # noqa: A001
min = _max_min("min")  # noqa: A001


def _var_std(name: str) -> Callable:
    f = anp.var if name == "var" else anp.std

    def reduce(input, dim=None, unbiased=None, keepdim=None, *, correction=None, **kwargs):  # noqa: A002
        if isinstance(dim, builtins.bool):  # the legacy overload var(input, unbiased)
            dim, unbiased = None, dim
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, None)
        if "ddof" in kwargs:
            correction = kwargs.pop("ddof")
        _no_extra(name, kwargs)
        if unbiased is not None and correction is not None:
            raise TypeError(f"{name}(): pass unbiased= or correction=, not both")
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        return f(input, axis=_reduce_axes(input, dim), ddof=ddof, keepdims=builtins.bool(keepdim))

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"`torch.{name}(input, dim=None, unbiased=True, keepdim=False, *, correction=1)`: "
        "unbiased by default (Bessel's correction), unlike NumPy's."
    )
    return reduce


var = _var_std("var")
std = _var_std("std")


def logsumexp(input, dim=None, keepdim: bool = False, **kwargs):  # noqa: A002
    """`torch.logsumexp(input, dim, keepdim=False)` (also `axis=`, `keepdims=`)."""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("logsumexp", kwargs)
    if dim is None:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    return _special.logsumexp(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim))


def _softmax_dim(name: str, input, dim) -> int:
    if dim is None:
        ndim = np.ndim(input)
        warnings.warn(
            f"Implicit dimension choice for {name} has been deprecated. Change the call to "
            "include dim=X as an argument.",
            UserWarning,
            stacklevel=3,
        )
        return 0 if ndim in (0, 1, 3) else 1
    return wrap_dim(dim, np.ndim(input))


def softmax(input, dim=None, dtype=None, **kwargs):  # noqa: A002
    """`torch.softmax(input, dim, dtype=None)`."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("softmax", kwargs)
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        return anp.ones_like(x)
    return _special.softmax(x, axis=_softmax_dim("softmax", x, dim))


def log_softmax(input, dim=None, dtype=None, **kwargs):  # noqa: A002
    """`torch.log_softmax(input, dim, dtype=None)`."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("log_softmax", kwargs)
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        return anp.zeros_like(x)
    return _special.log_softmax(x, axis=_softmax_dim("log_softmax", x, dim))


def cumsum(input, dim=None, *, dtype=None, **kwargs):  # noqa: A002
    """`torch.cumsum(input, dim, *, dtype=None)` (also `axis=`)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("cumsum", kwargs)
    if dim is None:
        raise TypeError('cumsum() missing 1 required positional arguments: "dim"')
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        wrap_dim(dim, 0)
        return anp.copy(x)
    return anp.cumsum(x, axis=wrap_dim(dim, np.ndim(x)))


def cumprod(input, dim=None, *, dtype=None, **kwargs):  # noqa: A002
    """`torch.cumprod(input, dim, *, dtype=None)` (also `axis=`)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("cumprod", kwargs)
    if dim is None:
        raise TypeError('cumprod() missing 1 required positional arguments: "dim"')
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        wrap_dim(dim, 0)
        return anp.copy(x)
    return anp.cumprod(x, axis=wrap_dim(dim, np.ndim(x)))


def _vector_norm(x, p, axis, keepdim: bool):
    a = anp.abs(x)
    if p == 2:
        return (
            anp.linalg.norm(x, axis=axis, keepdims=keepdim)
            if axis is None or isinstance(axis, builtins.int) or len(axis) == 1
            else anp.sqrt(anp.sum(a * a, axis=axis, keepdims=keepdim))
        )
    if p == math.inf:
        return anp.max(a, axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return anp.min(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return anp.sum(anp.astype(a != 0, a.dtype), axis=axis, keepdims=keepdim)
    if p == 1:
        return anp.sum(a, axis=axis, keepdims=keepdim)
    return anp.sum(a**p, axis=axis, keepdims=keepdim) ** (1.0 / p)


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None, **kwargs):  # noqa: A002
    """`torch.norm(input, p='fro', dim=None, keepdim=False, dtype=None)`: a vector norm over
    `dim` (all elements by default) for a number `p`; the Frobenius or nuclear matrix norm
    for `p='fro'` / `'nuc'`."""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("norm", kwargs)
    x = _cast(input, dtype)
    ndim = np.ndim(x)
    if isinstance(dim, builtins.int):
        dim = (dim,)
    axis = None if dim is None else tuple(wrap_dim(d, ndim) for d in dim)
    if axis is not None and ndim == 0:
        axis = None
    if p == "nuc":
        if axis is None:
            axis = (0, 1)
        return anp.linalg.norm(x, ord="nuc", axis=axis, keepdims=builtins.bool(keepdim))
    if p is None or p == "fro":
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported p={p!r}")
    if axis is None and keepdim:
        return anp.reshape(_vector_norm(anp.ravel(x), p, None, False), (1,) * ndim)
    if axis is None:
        return _vector_norm(anp.ravel(x) if ndim != 1 else x, p, None, False)
    return _vector_norm(x, p, axis if len(axis) > 1 else axis[0], builtins.bool(keepdim))


def dist(input, other, p=2):  # noqa: A002
    """`torch.dist(input, other, p=2)`: the p-norm of `input - other`."""
    return norm(anp.subtract(input, other), p)


def sort(input, dim: int = -1, descending: bool = False, stable: bool = False, **kwargs) -> Any:  # noqa: A002
    """`torch.sort(input, dim=-1, descending=False, stable=False)`: (values, indices)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("sort", kwargs)
    indices = argsort(input, dim, descending)
    if np.ndim(input) == 0:
        return return_types.sort(anp.copy(input), indices)
    return return_types.sort(
        anp.take_along_axis(input, indices, axis=wrap_dim(dim, np.ndim(input))), indices
    )


def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False, **kwargs):  # noqa: A002
    """`torch.argsort(input, dim=-1, descending=False, stable=False)` (stable always)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("argsort", kwargs)
    ndim = np.ndim(input)
    d = wrap_dim(dim, ndim)
    if ndim == 0:
        return anp.zeros_like(anp.astype(input, np.int64))
    key = input
    if descending:
        key = anp.astype(input, np.int64) if input.dtype.kind in "bu" else input
        key = -key
        if np.issubdtype(input.dtype, np.floating):  # torch puts NaN first in descending order
            key = anp.where(anp.isnan(input), -np.inf, key)
    return anp.argsort(key, axis=d, kind="stable")


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """`torch.topk(input, k, dim=-1, largest=True, sorted=True)`: (values, indices)."""
    d = wrap_dim(dim, np.ndim(input))
    n = np.shape(input)[d] if np.ndim(input) else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    indices = argsort(input, d, descending=largest)
    indices = _narrow(indices, d, 0, k)
    return return_types.topk(anp.take_along_axis(input, indices, axis=d), indices)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False, **kwargs) -> Any:  # noqa: A002
    """`torch.kthvalue(input, k, dim=-1, keepdim=False)`: the k-th smallest (values, indices)
    (also `axis=`, `keepdims=`)."""
    dim = _alias(kwargs, "axis", dim, -1)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("kthvalue", kwargs)
    d = wrap_dim(dim, np.ndim(input))
    n = np.shape(input)[d] if np.ndim(input) else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    indices = _narrow(argsort(input, d), d, k - 1, 1)
    values = anp.take_along_axis(input, indices, axis=d)
    if not keepdim:
        values, indices = anp.squeeze(values, d), anp.squeeze(indices, d)
    return return_types.kthvalue(values, indices)


def median(input, dim=None, keepdim: bool = False, **kwargs) -> Any:  # noqa: A002
    """`torch.median`: the lower of the two middle values (torch's, not NumPy's mean of
    them); with `dim`, the named tuple (values, indices). (Also `axis=`, `keepdims=`.)"""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("median", kwargs)
    if dim is None:
        flat = anp.ravel(input)
        n = np.shape(flat)[0]
        index = argsort(flat)[(n - 1) // 2]
        return flat[index]
    d = wrap_dim(dim, np.ndim(input))
    n = np.shape(input)[d] if np.ndim(input) else 1
    result = kthvalue(input, (n - 1) // 2 + 1, d, keepdim)
    return return_types.median(*result)


def count_nonzero(input, dim=None, **kwargs):  # noqa: A002
    """`torch.count_nonzero(input, dim=None)` (also `axis=`)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("count_nonzero", kwargs)
    return anp.count_nonzero(input, axis=_reduce_axes(input, dim))


# =============================================================================================
# methods: `t.<name>(...)` as torch's
# =============================================================================================


def view(self: Tensor, *shape) -> Tensor:
    """`Tensor.view(*shape)`: the same data in another shape, without a copy (as torch,
    it raises where the data's layout would need one: use `reshape`); `view(dtype)`
    reinterprets the bytes (no derivative)."""
    if (
        len(shape) == 1
        and not isinstance(shape[0], (builtins.int, np.integer, Tensor))
        and not isinstance(shape[0], (tuple, list, Size))
    ):
        return _view_dtype(self, shape[0])
    shape = _dims_arg(shape)
    value = _array(self)
    if value is not None and value.ndim and not value.flags.c_contiguous:
        target = _infer_shape(shape, value.size)
        probe = value.view()
        try:
            probe.shape = target
        except AttributeError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None
    return _new_view(self, _infer_shape(shape, self.size))


def _new_view(self: Tensor, shape: tuple) -> Tensor:
    """`self` in `shape` as a new tensor (a view of self's memory at level 0, as torch's
    `view`, even for its own shape; autodiff.numpy.reshape returns `self` then)."""
    if isinstance(self, Tensor) and tuple(shape) == self.shape:
        return _bind(_reshape_p, self, shape=tuple(shape), order="C")
    return anp.reshape(self, shape)


def _infer_shape(shape, numel: int) -> tuple:
    shape = tuple(operator.index(n) for n in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(n for n in shape if n != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if n == -1 else n for n in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _view_dtype(self: Tensor, d) -> Tensor:
    np_dtype = _np_dtype(d)
    if np_dtype == self.dtype:
        return anp.reshape(self, self.shape)
    if self._trace is not EVAL_TRACE:
        raise TracerConversionError(
            "view(dtype) reinterprets the bytes of a value, which has no derivative: not "
            "supported on a traced value"
        )
    value = np.ascontiguousarray(self._value)
    if value.ndim == 0 and np_dtype.itemsize != value.dtype.itemsize:
        raise RuntimeError("self.dim() cannot be 0 to view a dtype of a different element size")
    return Tensor._from(value.view(np_dtype))


def view_as(self: Tensor, other) -> Tensor:
    """`Tensor.view_as(other)`: `self.view(other.size())`."""
    return view(self, *np.shape(other))


def reshape(self: Tensor, *shape, order: str = "C") -> Tensor:
    """`reshape(*shape)`, `reshape(shape)` (both faces; NumPy's `order=` too)."""
    shape = _dims_arg(shape)
    if order != "C":
        return anp.reshape(self, shape, order=order)
    return _new_view(self, _infer_shape(shape, self.size) if -1 in shape else shape)


def reshape_as(self: Tensor, other) -> Tensor:
    """`Tensor.reshape_as(other)`."""
    return anp.reshape(self, np.shape(other))


def expand(self: Tensor, *sizes) -> Tensor:
    """`Tensor.expand(*sizes)`: broadcast to `sizes` (-1 keeps a dimension; new leading
    dimensions allowed), without copying."""
    sizes = _dims_arg(sizes)
    shape = self.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of "
            f"sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(shape)})"
        )
    target = []
    for i, n in enumerate(sizes):
        n = operator.index(n)
        if i < lead:
            if n < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({n}) isn't allowed in a leading, "
                    "non-existing dimension 0"
                )
            target.append(n)
            continue
        have = shape[i - lead]
        if n == -1:
            n = have
        elif have != n and have != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shape)}"
            )
        target.append(n)
    target = tuple(target)
    if target == shape:
        return _new_view(self, shape)  # (a view, as torch's: a node of its own)
    return anp.broadcast_to(self, target)


def expand_as(self: Tensor, other) -> Tensor:
    """`Tensor.expand_as(other)`."""
    return expand(self, *np.shape(other))


def _narrow(x, dim: int, start: int, length: int):
    index = [slice(None)] * np.ndim(x)
    index[dim] = slice(start, start + length)
    return x[tuple(index)]


def narrow(self: Tensor, dim: int, start, length: int) -> Tensor:
    """`Tensor.narrow(dim, start, length)`: `length` entries from `start` along `dim` (a view)."""
    ndim = self.ndim
    if ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, ndim)
    size = self.shape[d]
    start = operator.index(start)
    length = operator.index(length)
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _narrow(self, d, start, length)


def select(self: Tensor, dim: int, index: int) -> Tensor:
    """`Tensor.select(dim, index)`: the slice at `index` along `dim` (one dimension fewer)."""
    ndim = self.ndim
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, ndim)
    size = self.shape[d]
    i = operator.index(index)
    if not -size <= i < size:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {list(self.shape)} at "
            f"dimension {d}"
        )
    key = [slice(None)] * ndim
    key[d] = i % size
    return self[tuple(key)]


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple:
    """`Tensor.chunk(chunks, dim=0)`: at most `chunks` pieces of ceil(n / chunks) entries."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    step = builtins.max(-(-n // chunks), 1)
    return split(self, step, d)


def split(self: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """`Tensor.split(split_size, dim=0)`: pieces of `split_size` entries (the last smaller);
    `split([sizes], dim)`: pieces of those sizes, which must add up to the dimension."""
    if self.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if isinstance(split_size_or_sections, (builtins.int, np.integer)):
        step = builtins.int(split_size_or_sections)
        if step < 0 or (step == 0 and n):
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        sizes = [step] * (n // step) + ([n % step] if n % step else []) if step else [0]
    else:
        sizes = [operator.index(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    if len(sizes) == 1:
        return (_narrow(self, d, 0, n),)
    bounds = list(np.cumsum(sizes[:-1]))
    pieces = tuple(anp.split(self, [builtins.int(b) for b in bounds], axis=d))
    if isinstance(split_size_or_sections, (builtins.int, np.integer)):
        name_node(pieces[0], "SplitBackward0")  # (torch's node of a split by size)
        for piece in pieces:
            if getattr(piece, "_view", None) is not None:
                piece._view.op = "SplitBackward0"
    return pieces


def split_with_sizes(self: Tensor, split_sizes, dim: int = 0) -> tuple:
    """`Tensor.split_with_sizes(split_sizes, dim=0)`: pieces of the given sizes along `dim`
    (they must add up to its length)."""
    sizes = [operator.index(n) for n in split_sizes]
    length = self.shape[wrap_dim(dim, self.ndim)]
    if builtins.sum(sizes) != length:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's "
            f"size at dimension {dim}), but got split_sizes={sizes}"
        )
    return split(self, sizes, dim)


def tensor_split(self: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """`Tensor.tensor_split(indices_or_sections, dim=0)`: NumPy's `array_split`."""
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    return tuple(anp.array_split(self, indices_or_sections, axis=wrap_dim(dim, self.ndim)))


def unsqueeze(self: Tensor, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """`Tensor.unsqueeze(dim)`: a new axis of length 1 at `dim` (also `axis=`)."""
    dim = _alias({"axis": axis} if axis is not None else {}, "axis", dim, None)
    if dim is None:
        raise TypeError('unsqueeze() missing 1 required positional arguments: "dim"')
    return anp.expand_dims(self, wrap_dim(dim, self.ndim + 1))


def torch_squeeze(self: Tensor, dim=None) -> Tensor:
    """torch's `squeeze(dim=None)`: drop the given (or every) dimension of length 1; a
    dimension of another length is left alone (NumPy raises)."""
    ndim = self.ndim
    shape = self.shape
    if dim is None:
        return anp.squeeze(self)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = tuple(d for d in {wrap_dim(d, ndim) for d in dims} if ndim and shape[d] == 1)
    if not ndim:
        return anp.reshape(self, ())
    return anp.squeeze(self, axes) if axes else anp.reshape(self, shape)


def permute(self: Tensor, *dims) -> Tensor:
    """`Tensor.permute(*dims)`: the dimensions in the order `dims`."""
    dims = _dims_arg(dims)
    ndim = self.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{ndim} is not equal to len(dims) = {len(dims)}"
        )
    axes = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(axes)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return anp.transpose(self, axes)


def movedim(self: Tensor, source, destination) -> Tensor:
    """`Tensor.movedim(source, destination)` (ints or sequences)."""
    ndim = self.ndim
    wrap = lambda d: (
        tuple(wrap_dim(i, ndim) for i in d) if isinstance(d, (tuple, list)) else wrap_dim(d, ndim)
    )  # noqa: E731
    return anp.moveaxis(self, wrap(source), wrap(destination))


def torch_transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """torch's `transpose(dim0, dim1)`: those two dimensions swapped."""
    ndim = self.ndim
    if ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return anp.reshape(self, ())
    return anp.swapaxes(self, wrap_dim(dim0, ndim), wrap_dim(dim1, ndim))


def t(self: Tensor) -> Tensor:
    """`Tensor.t()`: the transpose of a matrix (a vector or a number as it is)."""
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return anp.transpose(self)


def torch_flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """torch's `flatten(start_dim=0, end_dim=-1)`: those dimensions merged into one."""
    ndim = self.ndim
    if ndim == 0:
        return anp.reshape(self, (1,))
    s, e = wrap_dim(start_dim, ndim), wrap_dim(end_dim, ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = self.shape
    return anp.reshape(self, shape[:s] + (math.prod(shape[s : e + 1]),) + shape[e + 1 :])


def unflatten(self: Tensor, dim: int, sizes) -> Tensor:
    """`Tensor.unflatten(dim, sizes)`: dimension `dim` split into `sizes` (one may be -1)."""
    d = wrap_dim(dim, self.ndim)
    shape = self.shape
    sizes = _infer_shape(tuple(sizes), shape[d])
    return anp.reshape(self, shape[:d] + sizes + shape[d + 1 :])


def as_strided(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """`Tensor.as_strided(size, stride, storage_offset=0)`: the elements at `offset +
    sum(i_k * stride_k)` of the tensor's data in row-major order (its storage when it is
    contiguous). Differentiable exactly, overlapping strides included (the gradient of an
    element read several times is the sum of its reads' gradients)."""
    size = tuple(operator.index(n) for n in size)
    stride = tuple(operator.index(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(size)} and {len(stride)}"
        )
    offset = 0 if storage_offset is None else operator.index(storage_offset)
    index = np.full(size, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        index = index + np.arange(n, dtype=np.int64).reshape(shape) * s
    numel = self.size
    if index.size and (index.min() < 0 or index.max() >= numel):
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} "
            f"require a storage of {builtins.int(index.max()) + 1} elements, but this tensor "
            f"has {numel}"
        )
    out = anp.take(anp.ravel(self), index)
    value = _array(self)
    if value is not None and value.flags.c_contiguous and type(out) is Tensor:
        item = value.itemsize
        strided = np.ndarray(
            size,
            value.dtype,
            buffer=value,
            offset=offset * item if index.size else 0,
            strides=tuple(s * item for s in stride),
        )
        out = _views.as_view_of(out, self, strided, "AsStridedBackward0", _grad_mode())
    return out


def contiguous(self: Tensor, memory_format=None) -> Tensor:
    """`Tensor.contiguous()`: itself when its data are row-major, else a row-major copy."""
    value = _array(self)
    if value is None or value.flags.c_contiguous:
        return self
    out = anp.copy(self)
    if type(out._value) is np.ndarray and not out._value.flags.c_contiguous:
        out._value = np.ascontiguousarray(out._value)  # (a fresh result: nothing else holds it)
    return out


def is_contiguous(self: Tensor, memory_format=None) -> bool:
    """`Tensor.is_contiguous()`: whether the data are row-major (C order) in memory."""
    value = _array(self)
    return True if value is None else builtins.bool(value.flags.c_contiguous)


def clone(self: Tensor, *, memory_format=None) -> Tensor:
    """torch's name for `copy()`: a differentiable copy (CloneBackward0); `memory_format` is
    accepted for torch code and ignored (the copy keeps the layout, as torch's default)."""
    return anp.copy(self)


def index_select(self: Tensor, dim: int, index) -> Tensor:
    """`Tensor.index_select(dim, index)`: the entries at `index` (a vector) along `dim`."""
    if np.ndim(index) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    _check_index_dtype("index_select", index)
    if self.ndim == 0:
        return (
            anp.take(anp.reshape(self, (1,)), anp.reshape(index, (-1,)))[0]
            if np.ndim(index) == 0
            else anp.take(anp.reshape(self, (1,)), index)
        )
    return anp.take(self, anp.reshape(index, (-1,)), axis=wrap_dim(dim, self.ndim))


def _check_index_dtype(name: str, index) -> None:
    kind = np.result_type(index.dtype if isinstance(index, Tensor) else np.asarray(index)).kind
    if kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def masked_select(self: Tensor, mask) -> Tensor:
    """`Tensor.masked_select(mask)`: a vector of the entries where `mask` (broadcast) is True."""
    shape = np.broadcast_shapes(self.shape, np.shape(mask))
    x = anp.broadcast_to(self, shape) if self.shape != shape else self
    m = anp.broadcast_to(mask, shape) if np.shape(mask) != shape else mask
    return x[m]


def masked_fill(self: Tensor, mask, value) -> Tensor:
    """`Tensor.masked_fill(mask, value)`: `value` (a number or a 0-d tensor) where `mask`."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    _check_mask("masked_fill", mask)
    return anp.where(mask, _value_like(value, self), self)


def _check_mask(name: str, mask) -> None:
    dt = mask.dtype if isinstance(mask, Tensor) else np.asarray(mask).dtype
    if dt != np.bool_:
        raise RuntimeError(f"{name}_ only supports boolean masks, but got mask with dtype {dt}")


def masked_scatter(self: Tensor, mask, source) -> Tensor:
    """`Tensor.masked_scatter(mask, source)`: where `mask` is True, `source`'s entries in order."""
    _check_mask("masked_scatter", mask)
    m = np.broadcast_to(np.asarray(_concrete(mask)), self.shape)
    positions = np.cumsum(m.ravel()) - 1
    taken = anp.take(anp.ravel(source), np.where(m.ravel(), positions, 0))
    return anp.where(m, anp.reshape(_cast(taken, self.dtype), self.shape), self)


def _concrete(x):
    return x.primal() if isinstance(x, Tensor) else x


def _full_index(dim: int, index) -> tuple:
    """The index tuple that addresses `out[i_0, ..., index[i], ..., i_n]` for each position of
    `index` (scatter's and gather's addressing)."""
    shape = np.shape(index)
    parts = []
    for k in range(len(shape)):
        if k == dim:
            parts.append(index)
        else:
            view_shape = [1] * len(shape)
            view_shape[k] = shape[k]
            parts.append(np.arange(shape[k]).reshape(view_shape))
    return tuple(parts)


def _check_same_ndim(name: str, self, index) -> None:
    if np.ndim(index) != self.ndim and not (self.ndim == 0 and np.ndim(index) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")


def gather(self: Tensor, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """`Tensor.gather(dim, index)`: `out[i][j] = self[index[i][j]][j]` (dim 0) and likewise."""
    _check_same_ndim("gather", self, index)
    _check_index_dtype("gather", index)
    if self.ndim == 0:
        return anp.reshape(anp.take(anp.reshape(self, (1,)), index), np.shape(index))
    d = wrap_dim(dim, self.ndim)
    ishape = np.shape(index)
    for k, (n, m) in enumerate(zip(ishape, self.shape)):
        if k != d and n > m:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(ishape)} to be "
                f"smaller than self {list(self.shape)} apart from dimension {d}"
            )
    key = tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(ishape))
    x = (
        self[key]
        if builtins.any(n < m for k, (n, m) in enumerate(zip(ishape, self.shape)) if k != d)
        else self
    )
    return anp.take_along_axis(x, index, axis=d)


def take_along_dim(self: Tensor, indices, dim=None) -> Tensor:
    """`Tensor.take_along_dim(indices, dim=None)`: NumPy's take_along_axis (broadcasting)."""
    if dim is None:
        return anp.take_along_axis(anp.ravel(self), anp.ravel(indices), axis=0)
    d = wrap_dim(dim, self.ndim)
    shape = list(
        np.broadcast_shapes(
            *[tuple(s for k, s in enumerate(a) if k != d) for a in (self.shape, np.shape(indices))]
        )
    )
    xs = list(shape)
    xs.insert(d, self.shape[d])
    ins = list(shape)
    ins.insert(d, np.shape(indices)[d])
    return anp.take_along_axis(
        anp.broadcast_to(self, tuple(xs)), anp.broadcast_to(indices, tuple(ins)), axis=d
    )


def _scatter_src(self, index, src):
    """`src` cut to `index`'s shape (or a number broadcast to it), in self's dtype."""
    shape = np.shape(index)
    if isinstance(src, (Tensor, np.ndarray)) and np.ndim(src):
        key = tuple(slice(0, n) for n in shape)
        part = src[key] if np.shape(src) != shape else src
        return _cast(part, self.dtype) if isinstance(part, Tensor) else np.asarray(part, self.dtype)
    return anp.broadcast_to(_value_like(src, self), shape)


def _scatter_update(name: str, self, dim, index, src, how: str):
    _check_same_ndim(name, self, index)
    _check_index_dtype(name, index)
    d = wrap_dim(dim, self.ndim)
    if np.size(index) == 0:
        return anp.copy(self)
    values = _scatter_src(self, index, src)
    if self.ndim == 0:
        key: Any = ()
        values = anp.reshape(values, ())
    else:
        key = _full_index(d, index)
    if how == "set":
        return _write(self, key, values)
    return getattr(_at(self)[key], how)(values)


def _repeats(key: tuple, shape: tuple) -> bool:
    """Whether the index `key` names some position twice (True when it is not concrete)."""
    arrays = []
    for part in key:
        if isinstance(part, slice):
            continue
        if isinstance(part, Tensor):
            if part._trace is not EVAL_TRACE:
                return True
            part = part._value
        arrays.append(np.asarray(part))
    if not arrays:
        return False
    stacked = np.stack([a.ravel() for a in np.broadcast_arrays(*arrays)], axis=1)
    return len(np.unique(stacked, axis=0)) < len(stacked)


def _write(self, key: tuple, values):
    """`self.at[key].set(values)` with torch's derivative for `values` where `key` repeats a
    position: each value gets the gradient of the position it is written to (the adjoint of a
    gather: scatter_add), though only one of the repeated writes shows in the result."""
    if not isinstance(values, Tensor) or not _repeats(key, self.shape):
        return _at(self)[key].set(values)
    added = _at(anp.zeros_like(self))[key].add(values)
    return _at(self)[key].set(stop_gradient(values)) + (added - stop_gradient(added))


_SCATTER_REDUCE = {None: "set", "add": "add", "multiply": "multiply"}


def scatter(self: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """`Tensor.scatter(dim, index, src)` (or `value=`): `out[index[i][j]][j] = src[i][j]`
    (dim 0) and likewise; `reduce='add'`/`'multiply'` combines instead of writing."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing the src (or value) argument")
    if reduce not in _SCATTER_REDUCE:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    return _scatter_update("scatter", self, dim, index, src, _SCATTER_REDUCE[reduce])


def scatter_add(self: Tensor, dim: int, index, src) -> Tensor:
    """`Tensor.scatter_add(dim, index, src)`: repeated indices accumulate."""
    return _scatter_update("scatter_add", self, dim, index, src, "add")


_REDUCE_IDENTITY = {"sum": 0, "prod": 1, "amax": -np.inf, "amin": np.inf, "mean": 0}
_REDUCE_HOW = {"sum": "add", "prod": "multiply", "amax": "max", "amin": "min", "mean": "add"}


def scatter_reduce(
    self: Tensor, dim: int, index, src, reduce: str, *, include_self: bool = True
) -> Tensor:
    """`Tensor.scatter_reduce(dim, index, src, reduce, include_self=True)`: reduce is
    'sum', 'prod', 'mean', 'amax' or 'amin'."""
    if reduce not in _REDUCE_HOW:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got " + str(reduce)
        )
    base = self
    if not include_self:
        identity = _REDUCE_IDENTITY[reduce]
        if self.dtype.kind in "iub" and not np.isfinite(identity):
            info = np.iinfo(self.dtype)
            identity = info.min if identity < 0 else info.max
        base = _scatter_update("scatter_reduce", self, dim, index, identity, "set")
    out = _scatter_update("scatter_reduce", base, dim, index, src, _REDUCE_HOW[reduce])
    if reduce == "mean":  # (the counts: a constant, computed on the concrete index)
        counts = np.full(self.shape, 1 if include_self else 0, np.int64)
        index_value = np.asarray(_concrete(index))
        if self.ndim:
            np.add.at(counts, _full_index(wrap_dim(dim, self.ndim), index_value), 1)
        else:
            counts = counts + index_value.size
        counts = np.maximum(counts, 1)
        out = out / counts if self.dtype.kind in "fc" else anp.floor_divide(out, counts)
        out = _cast(out, self.dtype)
    return out


def _index_key(self, dim: int, index) -> tuple:
    _check_index_dtype("index", index)
    if np.ndim(index) > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    d = wrap_dim(dim, self.ndim)
    return (slice(None),) * d + (
        anp.reshape(index, (-1,)) if isinstance(index, Tensor) else np.reshape(index, (-1,)),
    )


def index_add(self: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    """`Tensor.index_add(dim, index, source, alpha=1)`: `source * alpha` added at `index`
    along `dim` (repeats accumulate)."""
    src = source if alpha == 1 else source * alpha
    return _at(self)[_index_key(self, dim, index)].add(
        _cast(src, self.dtype) if isinstance(src, Tensor) else src
    )


def index_copy(self: Tensor, dim: int, index, source) -> Tensor:
    """`Tensor.index_copy(dim, index, source)`: `source`'s slices written at `index`."""
    return _write(self, _index_key(self, dim, index), source)


def index_fill(self: Tensor, dim: int, index, value) -> Tensor:
    """`Tensor.index_fill(dim, index, value)`: `value` written at `index` along `dim`."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    return _at(self)[_index_key(self, dim, index)].set(_value_like(value, self))


def index_put(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """`Tensor.index_put(indices, values, accumulate=False)`: `self[indices] = values` (or
    `+=` with repeats accumulating), out of place."""
    key = tuple(indices)
    return _at(self)[key].add(values) if accumulate else _write(self, key, values)


def torch_put(self: Tensor, index, source, accumulate: bool = False) -> Tensor:
    """torch's `put(index, source, accumulate=False)`: `source` written at the flat `index`,
    out of place (NumPy's `put` writes in place)."""
    flat = anp.ravel(self)
    key = (anp.reshape(index, (-1,)) if isinstance(index, Tensor) else np.reshape(index, (-1,)),)
    src = anp.reshape(source, (-1,))
    out = _at(flat)[key].add(src) if accumulate else _write(flat, key, src)
    return anp.reshape(out, self.shape)


def torch_nonzero(self: Tensor, *, as_tuple: bool = False) -> Any:
    """torch's `nonzero()`: an (n, ndim) int64 tensor of the nonzero entries' indices;
    `as_tuple=True` gives NumPy's tuple of index vectors."""
    value = np.asarray(_concrete(self))
    found = np.nonzero(value) if value.ndim else np.nonzero(value.reshape(1))
    if as_tuple:
        return tuple(Tensor._from(i.astype(np.int64)) for i in found)
    out = (
        np.stack(found, axis=1).astype(np.int64)
        if value.ndim
        else np.zeros((len(found[0]), 0), np.int64)
    )
    return Tensor._from(out)


def argwhere(self: Tensor) -> Tensor:
    """`Tensor.argwhere()`: `nonzero()`."""
    return torch_nonzero(self)


def flip(self: Tensor, *dims) -> Tensor:
    """`Tensor.flip(dims)`: the order of the entries reversed along `dims`."""
    dims = _dims_arg(dims)
    if not self.ndim:
        return anp.copy(self)
    return anp.flip(self, tuple(wrap_dim(d, self.ndim) for d in dims))


def fliplr(self: Tensor) -> Tensor:
    """`Tensor.fliplr()`."""
    return flip(self, 1)


def flipud(self: Tensor) -> Tensor:
    """`Tensor.flipud()`."""
    return flip(self, 0)


def roll(self: Tensor, shifts, dims=None) -> Tensor:
    """`Tensor.roll(shifts, dims=None)`: entries shifted cyclically (flattened without dims)."""
    if dims is None:
        return anp.reshape(anp.roll(anp.ravel(self), shifts), self.shape)
    if isinstance(dims, (tuple, list)):
        dims = tuple(wrap_dim(d, self.ndim) for d in dims)
        shifts = tuple(shifts)
        if len(dims) != len(shifts):
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
            )
    else:
        dims = wrap_dim(dims, self.ndim)
    return anp.roll(self, shifts, axis=dims)


def rot90(self: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """`Tensor.rot90(k=1, dims=(0, 1))`: rotated by 90 degrees `k` times, from the first
    towards the second of `dims`."""
    d0, d1 = (wrap_dim(d, self.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError("expected rotation dims to be different")
    k %= 4
    if k == 0:
        return anp.copy(self)
    if k == 2:
        return anp.flip(self, (d0, d1))
    if k == 1:
        return anp.swapaxes(anp.flip(self, d1), d0, d1)
    return anp.flip(anp.swapaxes(self, d0, d1), d1)


def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    """`Tensor.tril(diagonal=0)`: the lower triangle of the last two dimensions."""
    if self.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return anp.tril(self, diagonal)


def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    """`Tensor.triu(diagonal=0)`: the upper triangle of the last two dimensions."""
    if self.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return anp.triu(self, diagonal)


def torch_repeat(self: Tensor, *sizes) -> Tensor:
    """torch's `repeat(*sizes)`: the tensor tiled `sizes[k]` times along each dimension
    (NumPy's `repeat` repeats each element)."""
    sizes = _dims_arg(sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    return anp.tile(self, tuple(operator.index(s) for s in sizes))


def tile(self: Tensor, *dims) -> Tensor:
    """`Tensor.tile(dims)`: NumPy's tile (fewer dims than the tensor's: leading 1s)."""
    return anp.tile(self, _dims_arg(dims))


def repeat_interleave(self: Tensor, repeats, dim=None, *, output_size=None) -> Tensor:
    """`Tensor.repeat_interleave(repeats, dim=None)`: each entry repeated (NumPy's repeat)."""
    if isinstance(repeats, Tensor):
        repeats = repeats.primal()
    if dim is None:
        return anp.repeat(anp.ravel(self), repeats)
    return anp.repeat(self, repeats, axis=wrap_dim(dim, self.ndim))


def diag(self: Tensor, diagonal: int = 0) -> Tensor:
    """`Tensor.diag(diagonal=0)`: a vector's diagonal matrix, or a matrix's diagonal."""
    if self.ndim not in (1, 2):
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{self.ndim}D")
    return anp.diag(self, diagonal)


def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """`Tensor.diag_embed(offset=0, dim1=-2, dim2=-1)`: the last dimension as diagonals."""
    m = self.shape[-1]
    n = m + builtins.abs(offset)
    place = np.zeros((m, n, n), dtype=self.dtype)
    rows = np.arange(m) + builtins.max(-offset, 0)
    cols = np.arange(m) + builtins.max(offset, 0)
    place[np.arange(m), rows, cols] = 1
    out = anp.einsum("...i,irc->...rc", self, place)
    ndim = self.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    return anp.moveaxis(out, (ndim - 2, ndim - 1), (d1, d2))


def torch_diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1, **kwargs) -> Tensor:
    """`diagonal(offset=0, dim1=0, dim2=1)` (NumPy's axis1=/axis2= too)."""
    dim1 = kwargs.pop("axis1", dim1)
    dim2 = kwargs.pop("axis2", dim2)
    _no_extra("diagonal", kwargs)
    d1, d2 = wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim)
    out = anp.diagonal(self, offset, d1, d2)
    value = _array(self)
    if value is not None and type(out) is Tensor:  # (a view of self's memory, as torch's)
        out = _views.as_view_of(
            out, self, np.diagonal(value, offset, d1, d2), "DiagonalBackward0", _grad_mode()
        )
    return out


def sum_to_size(self: Tensor, *size) -> Tensor:
    """`Tensor.sum_to_size(*size)`: summed over the dimensions that broadcast to `size`."""
    size = _dims_arg(size)
    shape = self.shape
    if np.broadcast_shapes(tuple(size), shape) != shape:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    lead = len(shape) - len(size)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(size) if n == 1 and shape[lead + k] != 1
    )
    out = anp.sum(self, axis=axes, keepdims=True) if axes else self
    return anp.reshape(out, tuple(size))


# ---- creation, fills, random fills ----


def _new(self: Tensor, value: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._from(value)
    if requires_grad:
        t.requires_grad = True
    return t


def _sizes(size: tuple) -> tuple:
    return tuple(operator.index(n) for n in _dims_arg(size))


def new_zeros(
    self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False, **kw
) -> Tensor:
    """`Tensor.new_zeros(size)`: zeros of this tensor's dtype (or `dtype`)."""
    check_device(device)
    return _new(self, np.zeros(_sizes(size), _np_dtype(dtype) or self.dtype), requires_grad)


def new_ones(
    self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False, **kw
) -> Tensor:
    """`Tensor.new_ones(size)`."""
    check_device(device)
    return _new(self, np.ones(_sizes(size), _np_dtype(dtype) or self.dtype), requires_grad)


def new_empty(
    self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False, **kw
) -> Tensor:
    """`Tensor.new_empty(size)` (zeros here)."""
    return new_zeros(self, *size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_full(
    self: Tensor, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, **kw
) -> Tensor:
    """`Tensor.new_full(size, fill_value)`."""
    check_device(device)
    return _new(
        self, np.full(_sizes((size,)), fill_value, _np_dtype(dtype) or self.dtype), requires_grad
    )


def new_tensor(
    self: Tensor, data, *, dtype=None, device=None, requires_grad: bool = False, **kw
) -> Tensor:
    """`Tensor.new_tensor(data)`: a new leaf copying `data`, in this tensor's dtype by default."""
    check_device(device)
    if isinstance(data, Tensor):
        data = data.primal()
    return _new(self, np.array(data, dtype=_np_dtype(dtype) or self.dtype), requires_grad)


def new(
    self: Tensor, *args, dtype=None, device=None, requires_grad: builtins.bool = False
) -> Tensor:
    """`Tensor.new(...)`, torch's legacy constructor in this tensor's dtype: `new(2, 3)` or
    `new(torch.Size([2, 3]))` a tensor of that shape (zeros here; torch leaves it
    uninitialised), `new(data)` a tensor of `data`, `new()` an empty tensor.

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, dtype=torch.float32)
        >>> x.new(2, 3).shape, x.new([1, 2]).tolist(), x.new([1, 2]).dtype, x.new().shape
        ((2, 3), [1.0, 2.0], dtype('float32'), (0,))
    """
    check_device(device)
    d = _np_dtype(dtype) or self.dtype
    if not args:
        return _new(self, np.zeros((0,), d), requires_grad)
    first = args[0]
    if builtins.all(
        isinstance(a, (builtins.int, np.integer)) and not isinstance(a, builtins.bool) for a in args
    ) or (len(args) == 1 and isinstance(first, Size)):
        return _new(self, np.zeros(_sizes(args), d), requires_grad)
    if len(args) != 1:
        raise TypeError("new(): expected sizes (ints) or one sequence of data")
    if isinstance(first, Tensor):  # (torch's new(tensor) aliases it)
        return _new(self, np.asarray(_concrete(first)), requires_grad)
    return _new(self, np.array(first, dtype=d), requires_grad)


def volatile(self: Tensor) -> builtins.bool:
    """`Tensor.volatile`: False, with torch's warning (volatile was removed; use no_grad)."""
    warnings.warn(
        "volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2
    )
    return False


def in_place(f: Callable) -> Callable:
    """The in-place method `t.<f>_(...)`: `f(t, ...)` written back into `t`."""

    def method(self, *args, **kwargs):
        since = _views.WRITER.clock()  # (f may record several nodes that read self: clamp_)
        return self._inplace_method(f(self, *args, **kwargs), since)

    functools.update_wrapper(method, f)  # (f's signature, for help() and the stubs)
    method.__name__ = method.__qualname__ = f"{f.__name__}_"
    return method


def write_out(name: str, out, result, inputs: tuple):
    """torch's `out=` argument: `result` written into the tensor `out`, which is returned.

    As in torch, an `out=` function does not record a derivative: with grad mode on, an
    input or `out` that requires grad is an error, and a dual tensor (forward AD) or a value
    traced by a function transform is one too. The result is cast to `out`'s dtype (within
    its kind, as torch: a float result does not go into an integer `out`), and a differently
    shaped `out` is resized (with torch's warning when it had elements)."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    values = (*inputs, out)
    if builtins.any(isinstance(v, Tensor) and v._trace is not EVAL_TRACE for v in values):
        raise RuntimeError(
            f"Trying to use forward AD (or another function transform) with {name}_out that "
            "does not support it because it is an out= function: use the result instead."
        )
    if (isinstance(result, Tensor) and result._edge is not None) or (
        out.requires_grad and state().grad_enabled
    ):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    value = np.asarray(_concrete(result))
    if not np.can_cast(value.dtype, out.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {value.dtype.name} can't be cast to the desired output type "
            f"{out.dtype.name}"
        )
    if value.shape != out.shape:
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(value.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=3,
            )
        out._value = value.astype(out.dtype)  # (a resize gives `out` a new buffer, as torch)
        out._vc += 1
        return out
    with _no_grad():
        out._assign_inplace(Tensor._from(value))
    return out


@contextlib.contextmanager
def _no_grad():
    st = state()
    previous, st.grad_enabled = st.grad_enabled, False
    try:
        yield
    finally:
        st.grad_enabled = previous


def add(input, other, *, alpha=1, out=None):  # noqa: A002
    """`torch.add(input, other, *, alpha=1, out=None)`: `input + alpha * other`."""
    result = anp.add(input, other if alpha == 1 else anp.multiply(other, alpha))
    return result if out is None else write_out("add", out, result, (input, other))


def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """`torch.sub(input, other, *, alpha=1, out=None)`: `input - alpha * other`."""
    result = anp.subtract(input, other if alpha == 1 else anp.multiply(other, alpha))
    return result if out is None else write_out("sub", out, result, (input, other))


def mul(input, other, *, out=None):  # noqa: A002
    """`torch.mul(input, other, *, out=None)`."""
    result = anp.multiply(input, other)
    return result if out is None else write_out("mul", out, result, (input, other))


def div(input, other, *, rounding_mode=None, out=None):  # noqa: A002
    """`torch.div(input, other, *, rounding_mode=None, out=None)`: true division, or rounded
    toward zero ('trunc') or down ('floor')."""
    if out is not None:
        return write_out("div", out, div(input, other, rounding_mode=rounding_mode), (input, other))
    if rounding_mode is None:
        return anp.true_divide(input, other)
    if rounding_mode == "floor":
        return anp.floor_divide(input, other)
    if rounding_mode == "trunc":
        q = anp.true_divide(input, other)
        out = anp.trunc(q)
        kind = np.result_type(
            *(a.dtype if isinstance(a, Tensor) else a for a in (input, other))
        ).kind
        return (
            anp.astype(
                out,
                np.result_type(
                    input.dtype if isinstance(input, Tensor) else input,
                    other if not isinstance(other, Tensor) else other.dtype,
                ),
            )
            if kind in "iu"
            else out
        )
    raise RuntimeError(
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def neg(input):  # noqa: A002
    """`torch.neg`."""
    return anp.negative(input)


def rsqrt(input):  # noqa: A002
    """`torch.rsqrt`: 1 / sqrt(x)."""
    return anp.reciprocal(anp.sqrt(input))


def frac(input):  # noqa: A002
    """`torch.frac`: x - trunc(x) (derivative 1)."""
    return input - anp.trunc(input)


def lerp(input, end, weight):  # noqa: A002
    """`torch.lerp(input, end, weight)`: input + weight * (end - input)."""
    return input + weight * (end - input)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """`torch.addcmul(input, tensor1, tensor2, *, value=1)`."""
    return input + value * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """`torch.addcdiv(input, tensor1, tensor2, *, value=1)`."""
    return input + value * tensor1 / tensor2


def float_power(input, exponent):  # noqa: A002
    """`torch.float_power`: the power in double precision."""
    return anp.power(
        _cast(
            anp.asarray(input) if not isinstance(input, Tensor) else input,
            np.complex128 if np.iscomplexobj(_concrete(input)) else np.float64,
        ),
        exponent,
    )


def fmod(input, other):  # noqa: A002
    """`torch.fmod`: C's remainder (the sign of the dividend)."""
    return anp.fmod(input, other)


def remainder(input, other):  # noqa: A002
    """`torch.remainder`: Python's remainder (the sign of the divisor)."""
    return anp.remainder(input, other)


def xlogy(input, other):  # noqa: A002
    """`torch.xlogy`: x * log(y), 0 where x is 0."""
    return _special.xlogy(input, other)


def logit(input, eps=None):  # noqa: A002
    """`torch.logit(input, eps=None)`."""
    if eps is not None:
        input = clamp(input, eps, 1 - eps)
    return _special.logit(input)


def sgn(input):  # noqa: A002
    """`torch.sgn`: x / |x| (0 at 0), the sign of complex numbers too."""
    if (
        np.iscomplexobj(_concrete(input))
        if not isinstance(input, Tensor)
        else input.dtype.kind == "c"
    ):
        a = anp.abs(input)
        return anp.where(a == 0, 0, input / anp.where(a == 0, 1, a))
    return anp.sign(input)


def _binary_method(f: Callable, name: str) -> Callable:
    def method(self, other):
        return f(self, other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}(other)`."
    return method


def _unary(f: Callable, name: str) -> Callable:
    def method(self):
        return f(self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}()`."
    return method


def comparison_in_place(f: Callable, name: str) -> Callable:
    """`t.eq_(other)` and its kind: `t` becomes `f(t, other)` in its own dtype (1 or 0)."""

    def method(self, other):
        since = _views.WRITER.clock()
        return self._inplace_method(anp.astype(f(self, other), self.dtype), since)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}(other)`: the comparison, in place, in this tensor's dtype."
    return method


def add_(self: Tensor, other, alpha=1) -> Tensor:
    """`Tensor.add_`: `self += other * alpha`, in place."""
    if alpha == 1 and self._ufunc_in_place(np.add, other):
        return self
    return self._inplace_method(self + (other if alpha == 1 else other * alpha))


def sub_(self: Tensor, other, alpha=1) -> Tensor:
    """`Tensor.sub_`: `self -= other * alpha`, in place."""
    if alpha == 1 and self._ufunc_in_place(np.subtract, other):
        return self
    return self._inplace_method(self - (other if alpha == 1 else other * alpha))


def mul_(self: Tensor, other) -> Tensor:
    """`Tensor.mul_`: `self *= other`, in place."""
    if self._ufunc_in_place(np.multiply, other):
        return self
    return self._inplace_method(self * other)


def div_(self: Tensor, other, *, rounding_mode=None) -> Tensor:
    """`Tensor.div_`: `self /= other`, in place."""
    if rounding_mode is None and self._ufunc_in_place(np.divide, other):
        return self
    return self._inplace_method(div(self, other, rounding_mode=rounding_mode))


def zero_(self: Tensor) -> Tensor:
    """`Tensor.zero_`: fill with zeros, in place."""
    return self._inplace_method(anp.zeros_like(self))


def fill_(self: Tensor, value) -> Tensor:
    """`Tensor.fill_`: fill with `value` (a number or a 0-d tensor, differentiable), in place."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions."
            )
        return self._inplace_method(anp.broadcast_to(_cast(value, self.dtype), self.shape) * 1)
    return self._inplace_method(anp.full_like(self, value))


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """`Tensor.copy_`: copy `src` (broadcast to this shape) into this tensor, in place."""
    src_dtype = src.dtype if isinstance(src, Tensor) else np.asarray(src).dtype
    value = anp.broadcast_to(src, self.shape) * 1
    if src_dtype != self.dtype:
        if self.dtype.kind not in "fc" and isinstance(value, Tensor) and value._edge is None:
            value = anp.astype(value, self.dtype)
        elif self.dtype.kind in "fc" or not isinstance(value, Tensor):
            value = anp.astype(value, self.dtype)
    return self._inplace_method(value)


def _random_fill(self: Tensor, values: np.ndarray) -> Tensor:
    return self._inplace_method(Tensor._from(values.astype(self.dtype)))


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None, **kw) -> Tensor:
    """`Tensor.uniform_(from=0, to=1)`: fill with uniform samples in [from, to)."""
    a = kw.pop("from", a)
    b = kw.pop("to", b)
    _no_extra("uniform_", kw)
    return _random_fill(self, a + (b - a) * _uniform(rng(generator), self.shape))


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """`Tensor.normal_(mean=0, std=1)`: fill with normal samples."""
    return _random_fill(self, mean + std * _normal(rng(generator), self.shape))


def bernoulli_(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    """`Tensor.bernoulli_(p=0.5)`: fill with 1 with probability p, else 0."""
    prob = np.asarray(_concrete(p))
    return _random_fill(self, (_uniform(rng(generator), self.shape) < prob).astype(np.float64))


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """`Tensor.exponential_(lambd=1)`: fill with exponential samples."""
    return _random_fill(self, rng(generator).exponential(self.shape) / lambd)


def random_(self: Tensor, a=None, b=None, *, generator=None, **kw) -> Tensor:
    """`Tensor.random_(from=0, to=None)`: fill with integers in [from, to) (`random_(to)`:
    [0, to))."""
    a = kw.pop("from", a)
    b = kw.pop("to", b)
    _no_extra("random_", kw)
    if b is None:
        a, b = (
            (0, a)
            if a is not None
            else (
                0,
                2 ** (24 if self.dtype == np.float32 else 53 if self.dtype.kind == "f" else 31),
            )
        )
    return _random_fill(self, _integers(rng(generator), a, b, self.shape))


# ---- conversions and metadata ----


def to(self: Tensor, *args, **kwargs) -> Tensor:
    """`Tensor.to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`, with keywords
    `dtype=`, `device=`, `copy=False`, `non_blocking=` (ignored): itself when nothing
    changes and `copy` is False."""
    dtype = kwargs.pop("dtype", None)
    where = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    _no_extra("to", kwargs)
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, (device, str)) and not (isinstance(a, str) and a.startswith("torch.")):
            where = a
        elif isinstance(a, builtins.bool):
            continue  # (non_blocking, copy positional: accepted)
        elif isinstance(a, builtins.int):
            where = device(a)
        else:
            dtype = a
    check_device(where)
    out = _cast(self, dtype)
    if copy and out is self:
        return anp.copy(self)
    return out


def _conversion(name: str, target) -> Callable:
    def method(self, memory_format=None):
        return _cast(self, target)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}()`: this tensor as {target} (itself if it is one)."
    return method


_TYPE_NAMES = {
    np.dtype(np.float32): "torch.FloatTensor",
    np.dtype(np.float64): "torch.DoubleTensor",
    np.dtype(np.float16): "torch.HalfTensor",
    np.dtype(np.int64): "torch.LongTensor",
    np.dtype(np.int32): "torch.IntTensor",
    np.dtype(np.int16): "torch.ShortTensor",
    np.dtype(np.int8): "torch.CharTensor",
    np.dtype(np.uint8): "torch.ByteTensor",
    np.dtype(np.bool_): "torch.BoolTensor",
    np.dtype(np.complex64): "torch.ComplexFloatTensor",
    np.dtype(np.complex128): "torch.ComplexDoubleTensor",
}
_TYPE_DTYPES = {v: k for k, v in _TYPE_NAMES.items()}


def tensor_type_name(d) -> str:
    """torch's legacy type name of a dtype ('torch.DoubleTensor')."""
    return _TYPE_NAMES.get(np.dtype(d), f"torch.{np.dtype(d).name}Tensor")


def type_(self: Tensor, dtype=None, non_blocking: bool = False, **kwargs) -> Any:
    """`Tensor.type()`: the legacy type name ('torch.DoubleTensor'); `type(dtype)` (a dtype,
    a legacy type or its name): the tensor converted."""
    if dtype is None:
        return tensor_type_name(self.dtype)
    if isinstance(dtype, str):
        if dtype not in _TYPE_DTYPES:
            raise ValueError(f"invalid type: '{dtype}'")
        target = _TYPE_DTYPES[dtype]
    else:
        target = getattr(dtype, "_dtype", None)  # (a legacy type: torch.LongTensor)
        if target is None:
            target = dtype
    return _cast(self, target)


def type_as(self: Tensor, other) -> Tensor:
    """`Tensor.type_as(other)`: this tensor in `other`'s dtype."""
    return _cast(self, other.dtype)


def cpu(self: Tensor, memory_format=None) -> Tensor:
    """`Tensor.cpu()`: itself (autodiff computes on the CPU)."""
    return self


def cuda(self: Tensor, device=None, non_blocking: bool = False, **kwargs) -> Tensor:
    """`Tensor.cuda()`: not available (autodiff computes on the CPU)."""
    check_device("cuda")
    return self


def dim(self: Tensor) -> int:
    """`Tensor.dim()`: the number of dimensions."""
    return self.ndim


def numel(self: Tensor) -> int:
    """`Tensor.numel()`: the number of elements."""
    return builtins.int(self.size)


def element_size(self: Tensor) -> int:
    """`Tensor.element_size()`: bytes per element."""
    return self.dtype.itemsize


def stride(self: Tensor, dim: int | None = None) -> Any:
    """`Tensor.stride(dim=None)`: the steps in elements between neighbours along each dim."""
    value = _array(self)
    if value is None:  # (a tracer: as if contiguous)
        shape = self.shape
        strides = tuple(math.prod(shape[k + 1 :]) for k in range(len(shape)))
    else:
        strides = tuple(s // value.itemsize for s in value.strides)
    if dim is None:
        return strides
    return strides[wrap_dim(dim, len(strides))]


def data_ptr(self: Tensor) -> int:
    """`Tensor.data_ptr()`: the address of the first element (views share memory)."""
    value = self._value if self._trace is EVAL_TRACE else None
    if type(value) is not np.ndarray:
        raise RuntimeError("data_ptr() needs a level-0 tensor holding an array")
    return value.__array_interface__["data"][0] if value.size else 0


def storage_offset(self: Tensor) -> int:
    """`Tensor.storage_offset()`: where this view starts in its storage, in elements."""
    value = _array(self)
    if value is None or type(self._value) is not np.ndarray:
        return 0
    root = UntypedStorage(value)
    return (value.__array_interface__["data"][0] - root.data_ptr()) // value.itemsize


def untyped_storage(self: Tensor) -> UntypedStorage:
    """`Tensor.untyped_storage()`: the memory (shared by views), with `data_ptr()`."""
    value = self._value if self._trace is EVAL_TRACE else None
    if type(value) is not np.ndarray:
        if self._trace is EVAL_TRACE:  # (a NumPy scalar: give it an array of its own)
            self._value = np.asarray(value)
            return UntypedStorage(self._value)
        raise RuntimeError("untyped_storage() needs a level-0 tensor")
    return UntypedStorage(value)


def storage(self: Tensor) -> TypedStorage:
    """`Tensor.storage()`: the storage counted in elements, with `data_ptr()`."""
    untyped_storage(self)
    return TypedStorage(self._value)


def is_floating_point(self: Tensor) -> bool:
    """`Tensor.is_floating_point()`."""
    return self.dtype.kind == "f"


def is_complex(self: Tensor) -> bool:
    """`Tensor.is_complex()`."""
    return self.dtype.kind == "c"


def is_signed(self: Tensor) -> bool:
    """`Tensor.is_signed()`."""
    return self.dtype.kind in "ifc"


def is_same_size(self: Tensor, other) -> bool:
    """`Tensor.is_same_size(other)`."""
    return self.shape == np.shape(other)


def get_device(self: Tensor) -> int:
    """`Tensor.get_device()`: -1 (the CPU)."""
    return -1


def device_of(self: Tensor) -> Any:
    """`x.device`: `device('cpu')` on the torch face; NumPy's `'cpu'` on the NumPy face."""
    return "cpu" if face_of(self) == "numpy" else CPU


def _false(self: Tensor) -> bool:
    return False


def resolve(self: Tensor) -> Tensor:
    """`Tensor.resolve_conj()` / `resolve_neg()`: itself (conjugation is never lazy here)."""
    return self


def is_conj(self: Tensor) -> bool:
    """`Tensor.is_conj()` / `is_neg()`: False (conjugation is never lazy here)."""
    return False


def itemsize(self: Tensor) -> int:
    """`x.itemsize`: bytes per element (NumPy's and torch's)."""
    return self.dtype.itemsize


def nbytes(self: Tensor) -> int:
    """`x.nbytes`: bytes of all elements (NumPy's and torch's)."""
    return self.dtype.itemsize * builtins.int(self.size)


def adjoint(self: Tensor) -> Tensor:
    """`Tensor.adjoint()` / `x.mH`: the conjugate transpose of the last two dimensions."""
    return anp.conj(anp.swapaxes(self, -1, -2))


def equal(self: Tensor, other) -> bool:
    """`Tensor.equal(other)`: same shape and the same values (a Python bool)."""
    a, b = np.asarray(_concrete(self)), np.asarray(_concrete(other))
    return a.shape == b.shape and builtins.bool(np.array_equal(a, b))


def allclose(
    self: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """`Tensor.allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)`."""
    return builtins.bool(
        np.allclose(
            np.asarray(_concrete(self)), np.asarray(_concrete(other)), rtol, atol, equal_nan
        )
    )


def isclose(
    self: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """`Tensor.isclose(other, ...)`: elementwise, a bool tensor."""
    return Tensor._from(
        np.isclose(np.asarray(_concrete(self)), np.asarray(_concrete(other)), rtol, atol, equal_nan)
    )


def nan_to_num(self: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """`Tensor.nan_to_num(nan=0.0, posinf=None, neginf=None)`."""
    return anp.nan_to_num(self, nan=nan, posinf=posinf, neginf=neginf)


def unique(
    self: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim=None,
) -> Any:  # noqa: A002
    """`Tensor.unique(sorted=True, return_inverse=False, return_counts=False, dim=None)`."""
    out = anp.unique(self, return_inverse=return_inverse, return_counts=return_counts, axis=dim)
    if isinstance(out, tuple):
        first, *rest = out
        if return_inverse:
            rest[0] = anp.reshape(rest[0], self.shape) if dim is None else rest[0]
        return (first, *rest)
    return out


# ---- linear algebra ----


def _check_ndim(name: str, what: str, x, n: int) -> None:
    if np.ndim(x) != n:
        raise RuntimeError(f"{name}: Expected {what} to be {n}D, but got {np.ndim(x)}D")


def bmm(self: Tensor, mat2) -> Tensor:
    """`Tensor.bmm(mat2)`: batched matrix products of two 3-d tensors."""
    if self.ndim != 3 or np.ndim(mat2) != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (bmm of {self.ndim}D and {np.ndim(mat2)}D)")
    return anp.matmul(self, mat2)


def mv(self: Tensor, vec) -> Tensor:
    """`Tensor.mv(vec)`: a matrix times a vector."""
    if self.ndim != 2 or np.ndim(vec) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {np.ndim(vec)}")
    return anp.matmul(self, vec)


def torch_dot(self: Tensor, other) -> Tensor:
    """torch's `dot(other)`: the inner product of two vectors (NumPy's dot also multiplies
    matrices)."""
    if self.ndim != 1 or np.ndim(other) != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {self.ndim}D and {np.ndim(other)}D tensors"
        )
    if self.shape != np.shape(other):
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
            f"[{np.shape(other)[0]}] to have the same number of elements, but got "
            f"{self.shape[0]} and {np.shape(other)[0]} elements respectively"
        )
    return anp.dot(self, other)


def vdot(self: Tensor, other) -> Tensor:
    """`Tensor.vdot(other)`: conj(self) . other, for vectors."""
    return anp.vdot(self, other)


def inner(self: Tensor, other) -> Tensor:
    """`Tensor.inner(other)`."""
    return anp.inner(self, other)


def outer(self: Tensor, vec2) -> Tensor:
    """`Tensor.outer(vec2)`: the outer product of two vectors."""
    return anp.outer(self, vec2)


def addmm(self: Tensor, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addmm(mat1, mat2, *, beta=1, alpha=1)`: `beta * self + alpha * mat1 @ mat2`."""
    product = mm(mat1, mat2)
    expand(self, *np.shape(product))  # (torch's check: self broadcasts to the product)
    return _scaled(self, beta) + _scaled(product, alpha)


def _scaled(x, c):
    if c == 0:
        return anp.zeros_like(x)
    return x if c == 1 else x * c


def addmv(self: Tensor, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addmv(mat, vec, *, beta=1, alpha=1)`."""
    return _scaled(self, beta) + _scaled(mv(mat, vec), alpha)


def addr(self: Tensor, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addr(vec1, vec2, *, beta=1, alpha=1)`."""
    return _scaled(self, beta) + _scaled(anp.outer(vec1, vec2), alpha)


def baddbmm(self: Tensor, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.baddbmm(batch1, batch2, *, beta=1, alpha=1)`."""
    return _scaled(self, beta) + _scaled(bmm(batch1, batch2), alpha)


def addbmm(self: Tensor, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addbmm(batch1, batch2, *, beta=1, alpha=1)`: the products summed over the batch."""
    return _scaled(self, beta) + _scaled(anp.sum(bmm(batch1, batch2), axis=0), alpha)


def cross(self: Tensor, other, dim=None) -> Tensor:
    """`Tensor.cross(other, dim=None)`: the cross product along `dim` (the first of size 3)."""
    if dim is None:
        dim = next((k for k, n in enumerate(self.shape) if n == 3), -1)
    d = wrap_dim(dim, self.ndim)
    return anp.cross(self, other, axis=d)


def det(self: Tensor) -> Tensor:
    """`Tensor.det()`."""
    return anp.linalg.det(self)


def inverse(self: Tensor) -> Tensor:
    """`Tensor.inverse()`."""
    return anp.linalg.inv(self)


def pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor:
    """`Tensor.pinverse(rcond=1e-15)`."""
    return anp.linalg.pinv(self, rcond=rcond)


def matrix_power(self: Tensor, n: int) -> Tensor:
    """`Tensor.matrix_power(n)`."""
    return anp.linalg.matrix_power(self, n)


def slogdet(self: Tensor) -> tuple:
    """`Tensor.slogdet()`: (sign, logabsdet)."""
    return tuple(anp.linalg.slogdet(self))


def logdet(self: Tensor) -> Tensor:
    """`Tensor.logdet()`: log(det) (nan for a negative determinant)."""
    sign, logabs = anp.linalg.slogdet(self)
    return anp.where(sign > 0, logabs, anp.where(sign == 0, -np.inf, np.nan))


def cholesky(self: Tensor, upper: bool = False) -> Tensor:
    """`Tensor.cholesky(upper=False)`."""
    lower = anp.linalg.cholesky(self)
    return anp.conj(anp.swapaxes(lower, -1, -2)) if upper else lower


def kron(self: Tensor, other) -> Tensor:
    """`Tensor.kron(other)`."""
    return anp.kron(self, other)


# =============================================================================================
# the methods whose meanings differ between NumPy and torch: one dispatcher each
# =============================================================================================

# NumPy's keyword spellings for torch's, accepted on both faces (keywords never clash).
_NUMPY_KEYWORDS = {"dim": "axis", "keepdim": "keepdims"}


def _numpy_kwargs(kwargs: dict) -> dict:
    if not kwargs or not ("dim" in kwargs or "keepdim" in kwargs):
        return kwargs
    out = {}
    for k, v in kwargs.items():
        name = _NUMPY_KEYWORDS.get(k, k)
        if name in out:
            raise TypeError(f"got both {k}= and {name}=")
        out[name] = v
    return out


# NumPy's keywords torch's reductions do not have: a call with one is NumPy's.
_NUMPY_ONLY = ("out", "initial", "where", "ddof", "kind", "order")


def _torch_call(self, args: tuple, kwargs: dict) -> bool:
    """Whether a call of a shared reduction reads as torch's. Both libraries read the
    reduced axes alike; their second positional argument differs (torch's `keepdim`, a
    bool; NumPy's `dtype` or `out`), so it says which is meant, and so do NumPy's own
    keywords. Otherwise the face decides (a staged value: torch's, which reads alike)."""
    if len(args) >= 2:
        return isinstance(args[1], builtins.bool)
    if kwargs and builtins.any(k in kwargs for k in _NUMPY_ONLY):
        return False
    return face_of(self) != "numpy"


def _shared_reduction(name: str, torch_impl: Callable, numpy_impl: Callable) -> Callable:
    """`x.sum(...)` and its kind: the same meaning in both libraries, positional arguments
    aside (NumPy's second is `dtype` or `out`, torch's `keepdim`)."""

    def method(self, *args, **kwargs):
        if _torch_call(self, args, kwargs):
            return torch_impl(self, *args, **kwargs)
        return numpy_impl(self, *args, **_numpy_kwargs(kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"`x.{name}(...)`: NumPy's `{name}(axis, ...)` and torch's `{name}(dim, keepdim)`, "
        "which agree; `dim=`/`keepdim=` and `axis=`/`keepdims=` on both faces."
    )
    return method


t_sum = _shared_reduction("sum", sum, anp.sum)
t_mean = _shared_reduction("mean", mean, anp.mean)
t_prod = _shared_reduction("prod", prod, anp.prod)
t_all = _shared_reduction("all", all, anp.all)
t_any = _shared_reduction("any", any, anp.any)
t_argmax = _shared_reduction("argmax", argmax, anp.argmax)
t_argmin = _shared_reduction("argmin", argmin, anp.argmin)


def t_argsort(self, *args, **kwargs) -> Tensor:
    """`x.argsort(...)`: NumPy's `argsort(axis=-1, kind=None)` and torch's
    `argsort(dim=-1, descending=False)`, which agree (`descending=` is torch's)."""
    face = face_of(self)
    if "kind" in kwargs or "order" in kwargs or (len(args) >= 2 and isinstance(args[1], str)):
        face = "numpy"  # (NumPy's own arguments)
    elif (
        "descending" in kwargs
        or "stable" in kwargs
        or (len(args) >= 2 and isinstance(args[1], builtins.bool))
    ):
        face = "torch"  # (torch's own)
    if face != "numpy":  # (a staged value: both read the rest alike)
        return argsort(self, *args, **kwargs)
    return anp.argsort(self, *args, **_numpy_kwargs(kwargs))


def t_cumsum(self, *args, **kwargs) -> Tensor:
    """`x.cumsum(dim)`: torch's requires `dim`; NumPy's `cumsum()` runs over the flattened
    array."""
    if _with_dim(self, args, kwargs):
        return cumsum(self, *args, **kwargs)
    return anp.cumsum(self, *args, **_numpy_kwargs(kwargs))


def t_cumprod(self, *args, **kwargs) -> Tensor:
    """`x.cumprod(dim)`: as `cumsum`."""
    if _with_dim(self, args, kwargs):
        return cumprod(self, *args, **kwargs)
    return anp.cumprod(self, *args, **_numpy_kwargs(kwargs))


def _with_dim(self, args: tuple, kwargs: dict) -> bool:
    """A torch-face `cumsum`/`cumprod` call in torch's spelling (with `dim`; without it,
    only NumPy's reading exists: over the flattened array)."""
    if face_of(self) == "numpy" or "out" in kwargs:
        return False
    return builtins.bool(args) or "dim" in kwargs or "axis" in kwargs


def t_transpose(self, *args, **kwargs) -> Tensor:
    """`x.transpose(...)`: torch's `transpose(dim0, dim1)` swaps two dimensions; NumPy's
    `transpose(*axes)` permutes them (reverses them without arguments)."""
    torch_spelling = builtins.bool(kwargs) or (
        len(args) == 2 and builtins.all(isinstance(a, (builtins.int, np.integer)) for a in args)
    )
    face = face_of(self) if torch_spelling else "numpy"  # (no dims, or all: NumPy's only)
    if face is None:
        face = _transpose_reading(self, args, kwargs)
    if face == "torch":
        return torch_transpose(self, *args, **kwargs)
    return _ndarray.transpose(self, *args, **kwargs)


def _transpose_reading(self, args, kwargs) -> str:
    if "dim0" in kwargs or "dim1" in kwargs:
        return "torch"
    if len(args) == 2 and builtins.all(isinstance(a, (builtins.int, np.integer)) for a in args):
        ndim = self.ndim
        if ndim != 2:
            return "torch"  # (NumPy's reading needs as many axes as dimensions)
        if {a % 2 for a in args} == {0, 1} and args[0] % 2 == 0:
            _ambiguous(
                "transpose",
                "the identity permutation",
                "a swap of dims 0 and 1",
                "autodiff.numpy.transpose(x, (0, 1))",
                "autodiff.transpose(x, 0, 1)",
            )
    return "numpy"


def t_var(self, *args, **kwargs) -> Tensor:
    """`x.var(...)`: unbiased in torch (`correction=1`), biased in NumPy (`ddof=0`)."""
    return _var_std_method("var", var, anp.var, self, args, kwargs)


def t_std(self, *args, **kwargs) -> Tensor:
    """`x.std(...)`: unbiased in torch (`correction=1`), biased in NumPy (`ddof=0`)."""
    return _var_std_method("std", std, anp.std, self, args, kwargs)


def _var_std_method(name, torch_impl, numpy_impl, self, args, kwargs):
    face = face_of(self)
    if (len(args) >= 2 and not isinstance(args[1], builtins.bool)) or builtins.any(
        k in kwargs for k in ("out", "where", "mean")
    ):
        face = "numpy"  # (NumPy's positional dtype, out, ...: torch has none of them)
    elif builtins.any(isinstance(a, builtins.bool) for a in args[1:]) or "unbiased" in kwargs:
        face = "torch"  # (torch's positional unbiased / keepdim: NumPy has none)
    if face is None:
        explicit = (
            builtins.any(k in kwargs for k in ("ddof", "correction", "unbiased"))
            or builtins.any(isinstance(a, builtins.bool) for a in args)
            or len(args) >= 4
        )
        if not explicit:
            _ambiguous(
                name,
                "the biased estimate (ddof=0)",
                "the unbiased one (correction=1)",
                f"autodiff.numpy.{name}(x, ...)",
                f"autodiff.{name}(x, ...)",
            )
        face = (
            "torch"
            if (builtins.any(isinstance(a, builtins.bool) for a in args) or "unbiased" in kwargs)
            else "numpy"
        )
    if face == "torch":
        return torch_impl(self, *args, **kwargs)
    return numpy_impl(self, *args, **_numpy_kwargs(kwargs))


def _max_min_method(name: str, torch_impl: Callable, numpy_impl: Callable) -> Callable:
    def method(self, *args, **kwargs) -> Any:
        face = face_of(self)
        if builtins.any(k in kwargs for k in ("out", "initial", "where")) or (
            len(args) >= 2 and not isinstance(args[1], builtins.bool)
        ):
            face = "numpy"  # (NumPy's own arguments: torch has none of them)
        elif (args and isinstance(args[0], (Tensor, np.ndarray))) or (
            len(args) >= 2 and isinstance(args[1], builtins.bool)
        ):
            face = "torch"  # (torch's elementwise form and positional keepdim)
        if face is None:
            reduces_dim = (
                args
                and not isinstance(args[0], (Tensor, np.ndarray, tuple, list))
                and args[0] is not None
            ) or builtins.any(
                kwargs.get(k) is not None and not isinstance(kwargs.get(k), (tuple, list))
                for k in ("dim", "axis")
            )
            if args and isinstance(args[0], (Tensor, np.ndarray)):
                face = "torch"
            elif reduces_dim:
                _ambiguous(
                    name,
                    f"the {name}imum values along the axis",
                    "the named tuple (values, indices)",
                    f"autodiff.numpy.{name}(x, axis)",
                    f"autodiff.{name}(x, dim)",
                )
            else:
                face = "numpy"
        if face == "torch":
            return torch_impl(self, *args, **kwargs)
        return numpy_impl(self, *args, **_numpy_kwargs(kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"`x.{name}(...)`: torch's `{name}(dim)` returns (values, indices) and `{name}(other)` "
        f"the elementwise {name}imum; NumPy's `{name}(axis)` returns the values."
    )
    return method


t_max = _max_min_method("max", max, anp.max)
t_min = _max_min_method("min", min, anp.min)


def t_repeat(self, *args, **kwargs) -> Tensor:
    """`x.repeat(...)`: torch's `repeat(*sizes)` tiles the tensor; NumPy's
    `repeat(repeats, axis=None)` repeats each element."""
    face = face_of(self)
    if "axis" in kwargs or len(_dims_arg(args)) < self.ndim:
        face = "numpy"  # (torch's reading needs a size for every dimension)
    if face is None:
        _ambiguous(
            "repeat",
            "each element repeated",
            "the whole tensor tiled",
            "autodiff.numpy.repeat(x, repeats, axis)",
            "autodiff.tile(x, sizes)",
        )
    if face == "torch":
        return torch_repeat(self, *args, **kwargs)
    return anp.repeat(self, *args, **kwargs)


def t_sort(self, *args, **kwargs) -> Any:
    """`x.sort(...)`: torch's returns (values, indices); NumPy's sorts in place, which a
    traced value cannot do."""
    face = face_of(self)
    if face == "torch":
        return sort(self, *args, **kwargs)
    if face == "numpy":
        raise TypeError(
            "x.sort() sorts a NumPy array in place, which a traced value cannot do: write "
            "x = autodiff.numpy.sort(x) (autodiff.sort(x) is torch's, returning (values, indices))."
        )
    _ambiguous(
        "sort",
        "an in-place sort",
        "(values, indices)",
        "x = autodiff.numpy.sort(x)",
        "autodiff.sort(x)",
    )


def t_squeeze(self, *args, **kwargs) -> Tensor:
    """`x.squeeze(dim)`: a dimension of length other than 1 is left alone in torch and an
    error in NumPy."""
    face = face_of(self)
    if face == "numpy":
        return anp.squeeze(self, *args, **_numpy_kwargs(kwargs))
    dim = args[0] if args else _pick(kwargs, "dim", "axis", None)
    _too_many("squeeze", args, 1)
    _no_extra("squeeze", kwargs)
    return torch_squeeze(self, dim)


def t_flatten(self, *args, **kwargs) -> Tensor:
    """`x.flatten(...)`: torch's `flatten(start_dim=0, end_dim=-1)`, NumPy's
    `flatten(order='C')` (a string): the argument says which; both flatten everything
    without one."""
    if (args and isinstance(args[0], str)) or "order" in kwargs:
        return _ndarray.flatten(self, *args, **kwargs)
    if face_of(self) == "numpy" and not args and not kwargs:
        return _ndarray.flatten(self)
    return torch_flatten(self, *args, **kwargs)


def t_dot(self, other, *args, **kwargs) -> Tensor:
    """`x.dot(other)`: torch's is for two vectors only; NumPy's also multiplies matrices."""
    if face_of(self) == "torch":
        return torch_dot(self, other)
    return anp.dot(self, other, *args, **kwargs)


def t_nonzero(self, *args, **kwargs) -> Any:
    """`x.nonzero()`: torch's is an (n, ndim) tensor (`as_tuple=True`: NumPy's tuple)."""
    face = face_of(self)
    if face is None and not kwargs.get("as_tuple"):
        _ambiguous(
            "nonzero",
            "a tuple of index arrays",
            "an (n, ndim) tensor",
            "autodiff.numpy.nonzero(x)",
            "autodiff.nonzero(x)",
        )
    if face == "numpy":
        return tuple(np.nonzero(np.asarray(_concrete(self))))
    return torch_nonzero(self, *args, **kwargs)


def t_put(self, *args, **kwargs) -> Tensor:
    """`x.put(...)`: torch's returns a new tensor; NumPy's writes in place, which a traced
    value cannot do."""
    face = face_of(self)
    if face == "torch":
        return torch_put(self, *args, **kwargs)
    if face == "numpy":
        raise TypeError(
            "x.put() writes into a NumPy array in place, which a traced value cannot do: "
            "write x = x.at[indices].set(values) (on the flattened array)."
        )
    _ambiguous(
        "put", "an in-place write", "a new tensor", "x.at[...].set(...)", "autodiff.put(x, ...)"
    )


def t_resize(self, *args, **kwargs) -> Tensor:
    """`x.resize(...)`: torch's (deprecated) gives a reshaped tensor of the same number of
    elements; NumPy's resizes the array in place, which a traced value cannot do."""
    face = face_of(self)
    if face == "torch":
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        sizes = _dims_arg(args)
        if math.prod(sizes) != self.size:
            raise RuntimeError(
                "resize(): the number of elements must stay the same (use resize_ for other sizes)"
            )
        return anp.reshape(self, sizes)
    if face == "numpy":
        raise TypeError(
            "x.resize() resizes a NumPy array in place, which a traced value cannot do: write "
            "x = autodiff.numpy.reshape(x, shape) (or numpy.resize's repetition with tile)."
        )
    _ambiguous(
        "resize",
        "an in-place resize",
        "a reshaped tensor",
        "autodiff.numpy.reshape(x, shape)",
        "x.reshape(shape)",
    )


def t_view(self, *args, **kwargs) -> Tensor:
    """`x.view(...)`: torch's `view(*shape)` (a reshape without copy) and `view(dtype)`;
    NumPy's `view(dtype)` (the same: a reinterpretation of the bytes)."""
    if "dtype" in kwargs:
        return _view_dtype(self, kwargs.pop("dtype"))
    _no_extra("view", kwargs)
    return view(self, *args)


def t_real(self) -> Tensor:
    """`x.real`: the real part (a real tensor itself)."""
    return anp.real(self)


def t_imag(self) -> Tensor:
    """`x.imag`: the imaginary part; torch raises for a real tensor where NumPy gives zeros."""
    if self.dtype.kind != "c" and face_of(self) == "torch":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return anp.imag(self)


def t_round(self, *args, **kwargs) -> Tensor:
    """`x.round(decimals=0)` (half to even, in both)."""
    return anp.round(self, *args, **kwargs)


def t_clip(self, *args, **kwargs) -> Tensor:
    """`x.clip(min, max)`: NumPy's and torch's (a_min=/a_max= or min=/max=)."""
    lo = args[0] if len(args) > 0 else kwargs.pop("min", kwargs.pop("a_min", None))
    hi = args[1] if len(args) > 1 else kwargs.pop("max", kwargs.pop("a_max", None))
    _too_many("clip", args, 2)
    _no_extra("clip", kwargs)
    if face_of(self) == "torch":
        return clamp(self, lo, hi)
    return anp.clip(self, lo, hi)


def t_diagonal(self, *args, **kwargs) -> Tensor:
    """`x.diagonal(offset=0, dim1=0, dim2=1)` (NumPy's axis1=/axis2= too)."""
    return torch_diagonal(self, *args, **kwargs)


def t_take(self, indices, *args, **kwargs) -> Tensor:
    """`x.take(indices, axis=None)`: from the flattened tensor (both), along `axis` (NumPy)."""
    return anp.take(self, indices, *args, **kwargs)
