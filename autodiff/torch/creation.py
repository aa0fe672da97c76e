"""torch-style Tensor factories: `tensor`, `zeros`, `ones`, ... with torch's keywords.

`dtype=` takes torch's dtypes (`autodiff.float32`), NumPy's and Python's types; without it,
floats take the default floating dtype (`autodiff.get_default_dtype()`, float64).
`device=` accepts the CPU only. Random factories draw from the default generator
(`autodiff.manual_seed`) or `generator=`.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from autodiff.core.dtypes import float_kind
from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor
from autodiff.numpy import _creation
from autodiff.torch import dtypes as torch_dtypes
from autodiff.torch._args import _cast, _concrete, _dims_arg, _np_dtype
from autodiff.torch.dtypes import default_complex, default_float, to_numpy_dtype
from autodiff.torch.generator import rng
from autodiff.torch.types import check_device


def _size(size) -> tuple:
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        return tuple(operator.index(n) for n in size[0])
    return tuple(operator.index(n) for n in size)


def _make(value, requires_grad: bool) -> Tensor:
    t = Tensor._from(value)
    if requires_grad:
        t.requires_grad = True
    return t


def _options(dtype, device, layout=None, out=None, **ignored) -> np.dtype | None:
    """The NumPy dtype `dtype` names (None: not given), after checking torch's keywords:
    `device` must be the CPU; `pin_memory`, `memory_format` are accepted and ignored."""
    check_device(device)
    if out is not None:
        raise TypeError("autodiff's factories do not take out=: assign the result instead")
    if layout is not None and repr(layout) != "torch.strided":
        raise RuntimeError(f"autodiff supports the strided layout only, not {layout!r}")
    unknown = set(ignored) - {"pin_memory", "memory_format"}
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
    return to_numpy_dtype(dtype)


def _float(dtype) -> np.dtype:
    return default_float() if dtype is None else dtype


def _inferred(values: np.ndarray, data) -> np.ndarray:
    """Python floats (complex numbers) in the default floating (complex) dtype, as torch."""
    if isinstance(data, (np.ndarray, np.generic)):
        return values
    if values.dtype == np.float64 and default_float() != np.float64:
        return values.astype(default_float())
    if values.dtype == np.complex128 and default_complex() != np.complex128:
        return values.astype(default_complex())
    if values.dtype == np.float64 and values.size == 0 and not isinstance(data, Tensor):
        return values.astype(default_float())
    return values


def _data(data):
    """`data` for NumPy: Tensors (anywhere in nested lists) as their values."""
    if isinstance(data, Tensor):
        return data.primal()
    if isinstance(data, (list, tuple)) and any(isinstance(d, (Tensor, list, tuple)) for d in data):
        return [_data(d) for d in data]
    return data


def _numeric(values: np.ndarray, fname: str) -> np.ndarray:
    """`values`, if they are numbers: a TypeError for strings, None and other objects (which
    NumPy would hold in a string or object array), naming the first such element's type."""
    if float_kind(values.dtype) in "biufc":
        return values
    if values.dtype.kind == "O":
        odd = next((v for v in values.flat if not isinstance(v, (bool, int, float, complex))), None)
        name = type(odd).__name__
    else:
        name = {"U": "str", "S": "bytes"}.get(values.dtype.kind, values.dtype.name)
    raise TypeError(
        f"{fname}(): invalid data type '{name}': a Tensor holds numbers (bool, int, float or "
        "complex), given as a scalar, a (nested) list or tuple of them, or an array"
    )


def tensor(data, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A new leaf Tensor holding a copy of `data` (Python floats in the default floating
    dtype, float64; NumPy arrays keep theirs).

    Example:
        >>> t = tensor([1.0, 2.0], requires_grad=True)
        >>> t.requires_grad, t.is_leaf, t.shape
        (True, True, (2,))
    """
    np_dtype = _options(None if dtype is None else dtype, device, **kwargs)
    values = _numeric(np.array(_data(data), dtype=np_dtype), "tensor")
    if np_dtype is None:
        values = _inferred(values, data)
    return _make(values, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a Tensor, sharing memory with a NumPy array when possible.

    Example:
        >>> import numpy as np
        >>> a = np.zeros(2)
        >>> t = as_tensor(a); a[0] = 1.0  # shares memory with `a`
        >>> t
        tensor([1., 0.])
    """
    np_dtype = _options(dtype, device)
    if isinstance(data, Tensor):
        return data if np_dtype is None or data.dtype == np_dtype else data.astype(np_dtype)
    values = _numeric(np.asarray(_data(data), dtype=np_dtype), "as_tensor")
    if np_dtype is None:
        values = _inferred(values, data)
    return Tensor._from(values)


def from_numpy(array: np.ndarray) -> Tensor:
    """A Tensor sharing memory with `array`.

    Example:
        >>> import numpy as np
        >>> a = np.zeros(2)
        >>> t = from_numpy(a); a[1] = 5.0
        >>> t
        tensor([0., 5.])
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return Tensor._from(array)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A Tensor of zeros: `zeros(2, 3)` or `zeros((2, 3))` (default dtype float64).

    Example:
        >>> zeros(2, 3).shape, zeros((2, 3)).shape
        ((2, 3), (2, 3))
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    return _make(np.zeros(_size(size), np_dtype), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A Tensor of ones.

    Example:
        >>> x = ones(2, requires_grad=True)
        >>> (x * 3).sum().backward(); x.grad
        tensor([3., 3.])
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    return _make(np.ones(_size(size), np_dtype), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """An uninitialised Tensor (zeros here).

    Example:
        >>> empty(2, 2).shape
        (2, 2)
    """
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad, **kwargs)


def full(
    size, fill_value, dtype=None, device=None, requires_grad: bool = False, **kwargs
) -> Tensor:
    """A Tensor filled with `fill_value` (its dtype: int64 for an int, bool for a bool, the
    default floating dtype for a float).

    Example:
        >>> full((2,), 7.0), full((2,), 7).dtype
        (tensor([7., 7.]), torch.int64)
    """
    np_dtype = _options(dtype, device, **kwargs)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if np_dtype is None:
        np_dtype = _inferred(_numeric(np.asarray(fill_value), "full"), fill_value).dtype
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return _make(np.full(shape, fill_value, np_dtype), requires_grad)


def zeros_like(t, dtype=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A Tensor of zeros with the shape (and, by default, dtype) of `t`.

    Example:
        >>> zeros_like(ones(2, 2))
        tensor([[0., 0.],
                [0., 0.]])
    """
    np_dtype = _options(dtype, kwargs.pop("device", None), **kwargs)
    return _make(np.zeros(np.shape(t), np_dtype or _dtype_of(t)), requires_grad)


def ones_like(t, dtype=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A Tensor of ones with the shape (and, by default, dtype) of `t`.

    Example:
        >>> ones_like(zeros(3), requires_grad=True)
        tensor([1., 1., 1.], requires_grad=True)
    """
    np_dtype = _options(dtype, kwargs.pop("device", None), **kwargs)
    return _make(np.ones(np.shape(t), np_dtype or _dtype_of(t)), requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A Tensor of `fill_value` with the shape (and, by default, dtype) of `t`.

    Example:
        >>> full_like(zeros(2), 0.5)
        tensor([0.5, 0.5])
    """
    np_dtype = _options(dtype, kwargs.pop("device", None), **kwargs)
    return _make(np.full(np.shape(t), fill_value, np_dtype or _dtype_of(t)), requires_grad)


def empty_like(t, dtype=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """An uninitialised Tensor like `t` (zeros here)."""
    return zeros_like(t, dtype, requires_grad, **kwargs)


def _dtype_of(t) -> np.dtype:
    return t.dtype if isinstance(t, Tensor) else np.asarray(t).dtype


def arange(
    start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False, **kwargs
) -> Tensor:
    """`torch.arange`: integers unless a bound is a float (then the default floating dtype)
    or `dtype` is given.

    Example:
        >>> arange(3), arange(0, 1, 0.25)
        (tensor([0, 1, 2]), tensor([0.  , 0.25, 0.5 , 0.75]))
    """
    np_dtype = _options(dtype, device, **kwargs)
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    values = (
        np.arange(start, end, step, dtype=np_dtype)
        if end is not None
        else np.arange(start, dtype=np_dtype)
    )
    if np_dtype is None and values.dtype.kind == "f":
        values = values.astype(default_float())
    return _make(values, requires_grad)


def linspace(
    start, end, steps: int, dtype=None, device=None, requires_grad: bool = False, **kwargs
) -> Tensor:
    """`torch.linspace`: `steps` evenly spaced values from `start` to `end`; differentiable in
    a `start` or `end` that carries a derivative (unless `requires_grad` asks for a new leaf).

    Example:
        >>> linspace(0, 1, 5)
        tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
        >>> a = tensor(1.0, requires_grad=True)
        >>> linspace(a, 3.0, 5).sum().backward(); a.grad
        tensor(2.5)
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    values = _creation.linspace(start, end, steps, dtype=np_dtype)
    if isinstance(values, Tensor) and not requires_grad:
        return values
    return _make(values.primal() if isinstance(values, Tensor) else values, requires_grad)


def logspace(
    start,
    end,
    steps: int,
    base: float = 10.0,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    **kwargs,
) -> Tensor:
    """`torch.logspace`: `base ** linspace(start, end, steps)`.

    Example:
        >>> logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    return _make(np.logspace(start, end, steps, base=base).astype(np_dtype), requires_grad)


def eye(
    n: int, m: int | None = None, dtype=None, device=None, requires_grad: bool = False, **kwargs
) -> Tensor:
    """`torch.eye`: an `n` x `m` (default square) identity matrix.

    Example:
        >>> eye(2, 3)
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    return _make(np.eye(n, m, dtype=np_dtype), requires_grad)


def rand(
    *size, dtype=None, device=None, requires_grad: bool = False, generator=None, **kwargs
) -> Tensor:
    """Uniform [0, 1) samples, from the default generator (`manual_seed`) or `generator`.

    Example:
        >>> import autodiff as ad
        >>> t = rand(2, 3, generator=ad.Generator().manual_seed(0))
        >>> t.shape, bool(((t >= 0) & (t < 1)).all())
        ((2, 3), True)
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    return _make(rng(generator).random(_size(size)).astype(np_dtype), requires_grad)


def randn(
    *size, dtype=None, device=None, requires_grad: bool = False, generator=None, **kwargs
) -> Tensor:
    """Standard normal samples, from the default generator (`manual_seed`) or `generator`.

    Example:
        >>> import autodiff as ad
        >>> randn(2, 3, generator=ad.Generator().manual_seed(0)).shape
        (2, 3)
    """
    np_dtype = _float(_options(dtype, device, **kwargs))
    return _make(rng(generator).standard_normal(_size(size)).astype(np_dtype), requires_grad)


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
        ((2, 3), [1.0, 2.0], torch.float32, (0,))
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


class _LegacyTensorType(type):
    """`torch.FloatTensor` and its kind: constructors, and `isinstance(x, torch.FloatTensor)`."""

    _dtype: np.dtype

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls._dtype

    def __call__(cls, *args, **kwargs):
        if kwargs.pop("device", None) not in (None, "cpu"):
            raise RuntimeError("autodiff computes on the CPU only")
        if kwargs:
            raise TypeError(f"{cls.__name__}() got unexpected keyword arguments {sorted(kwargs)}")
        if not args:
            return Tensor._from(np.zeros((0,), cls._dtype))
        if builtins.all(isinstance(a, (builtins.int, np.integer)) for a in args) or (
            len(args) == 1 and isinstance(args[0], Size)
        ):
            shape = tuple(args[0]) if isinstance(args[0], Size) else args
            return Tensor._from(np.zeros(shape, cls._dtype))  # (torch's are uninitialised)
        if len(args) != 1:
            raise TypeError(f"{cls.__name__}(): expected sizes or one sequence of data")
        data = args[0]
        if isinstance(data, Tensor):
            return _cast(data, cls._dtype)
        return Tensor._from(np.array(data, dtype=cls._dtype))


def _legacy(name: str, np_dtype) -> type:
    return _LegacyTensorType(
        name,
        (),
        {
            "_dtype": np.dtype(np_dtype),
            "dtype": torch_dtypes.dtype_of_torch(np_dtype),
            "__doc__": f"`torch.{name}`: a {np.dtype(np_dtype).name} tensor constructor.",
        },
    )


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
HalfTensor = _legacy("HalfTensor", np.float16)
LongTensor = _legacy("LongTensor", np.int64)
IntTensor = _legacy("IntTensor", np.int32)
ShortTensor = _legacy("ShortTensor", np.int16)
CharTensor = _legacy("CharTensor", np.int8)
ByteTensor = _legacy("ByteTensor", np.uint8)
BoolTensor = _legacy("BoolTensor", np.bool_)


__all__ = [
    "arange",
    "as_tensor",
    "empty",
    "empty_like",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "linspace",
    "logspace",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "tensor",
    "zeros",
    "zeros_like",
]
