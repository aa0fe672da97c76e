"""`torch.*` functions, so that `import autodiff as torch` runs torch scripts unchanged.

Each is torch's function with torch's signature and meaning (`dim=`, `keepdim=`; NumPy's
`axis=`, `keepdims=` are accepted too), written with autodiff.numpy, so it differentiates,
batches and stages like any other operation. `autodiff/__init__.py` re-exports them (not
in `__all__`: `sum`, `max`, `all`, ... would shadow Python's builtins in a star import).
Tensor methods of the same names are in `autodiff/torch_compat.py`; the factories in
`autodiff/factories.py`; the dtype constants in `autodiff/torch_dtypes.py`.
"""

from __future__ import annotations

import builtins
import io
import math
import os
import pickle
from typing import Any

import numpy as np

import autodiff.numpy as anp
import autodiff.scipy.special as _special
from autodiff import torch_compat as _tc
from autodiff import torch_dtypes
from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.factories import _make
from autodiff.torch_compat import (  # noqa: F401 - re-exported: `autodiff.<name>`
    Generator,
    _cast,
    _concrete,
    add,
    addcdiv,
    addcmul,
    amax,
    amin,
    argmax,
    argmin,
    argsort,
    cat,
    clamp,
    clamp_max,
    clamp_min,
    count_nonzero,
    cumprod,
    cumsum,
    default_generator,
    dist,
    div,
    float_power,
    fmod,
    frac,
    kthvalue,
    lerp,
    log_softmax,
    logit,
    logsumexp,
    median,
    mm,
    mul,
    nanmean,
    nansum,
    neg,
    norm,
    remainder,
    return_types,
    rsqrt,
    sgn,
    softmax,
    sort,
    stack,
    sub,
    topk,
    unbind,
    where,
    xlogy,
)

# ---- torch's other types and constants ----
Size = Size
device = _tc.device
dtype = torch_dtypes.dtype
get_default_dtype = torch_dtypes.get_default_dtype
set_default_dtype = torch_dtypes.set_default_dtype


class _Marker:
    """A named constant torch code passes along (`torch.strided`, `torch.contiguous_format`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"


strided = _Marker("strided")
contiguous_format = _Marker("contiguous_format")
preserve_format = _Marker("preserve_format")
channels_last = _Marker("channels_last")


def finfo(type=None):  # noqa: A002 - torch's name
    """`torch.finfo(dtype=default)`: NumPy's finfo of that dtype (eps, tiny, max, ...)."""
    d = torch_dtypes.to_numpy_dtype(type) if type is not None else torch_dtypes.default_float()
    return np.finfo(d)


def iinfo(type):  # noqa: A002
    """`torch.iinfo(dtype)`: NumPy's iinfo of that dtype."""
    return np.iinfo(torch_dtypes.to_numpy_dtype(type))


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """torch's promotion of two dtypes: NumPy's, except that an integer (or bool) meeting a
    floating or complex dtype gives that dtype (NumPy widens: int32 with float32 is float64)."""
    a_float, b_float = a.kind in "fc", b.kind in "fc"
    if a_float != b_float:
        return a if a_float else b
    return np.promote_types(a, b)


def promote_types(type1, type2) -> torch_dtypes.dtype:
    """`torch.promote_types(type1, type2)` (torch's rules: int32 with float32 is float32)."""
    a, b = torch_dtypes.to_numpy_dtype(type1), torch_dtypes.to_numpy_dtype(type2)
    return torch_dtypes.dtype_of_torch(_promote(a, b))


def result_type(tensor1, tensor2) -> torch_dtypes.dtype:
    """`torch.result_type(tensor1, tensor2)`: a Python number takes the tensor's dtype
    within its kind (torch's rule); two tensors promote as `promote_types`."""
    dtypes = [t.dtype for t in (tensor1, tensor2) if isinstance(t, Tensor)]
    scalars = [t for t in (tensor1, tensor2) if not isinstance(t, Tensor)]
    if not dtypes:
        return torch_dtypes.dtype_of_torch(np.result_type(*scalars))
    out = dtypes[0] if len(dtypes) == 1 else _promote(*dtypes)
    for scalar in scalars:  # (NEP 50: a Python number is weak, as in torch)
        out = np.result_type(np.zeros((), out), scalar)
    return torch_dtypes.dtype_of_torch(out)


def can_cast(from_, to) -> bool:
    """`torch.can_cast(from_, to)`: same-kind casting."""
    return builtins.bool(
        np.can_cast(
            torch_dtypes.to_numpy_dtype(from_), torch_dtypes.to_numpy_dtype(to), "same_kind"
        )
    )


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


# ---- random state ----


def manual_seed(seed) -> Generator:
    """`torch.manual_seed(seed)`: seed the default generator that every random factory uses
    (process-wide, as torch's; draws are thread-safe). Returns it.

    Example:
        >>> import autodiff as torch
        >>> a = torch.manual_seed(0) and torch.rand(3)
        >>> b = torch.manual_seed(0) and torch.rand(3)
        >>> bool((a == b).all())
        True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """`torch.seed()`: seed the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """`torch.initial_seed()`: the default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> dict:
    """`torch.get_rng_state()`: the default generator's state (a dict here)."""
    return default_generator.get_state()


def set_rng_state(new_state: dict) -> None:
    """`torch.set_rng_state(state)`: restore a state `get_rng_state` returned."""
    default_generator.set_state(new_state)


# ---- predicates and sizes ----


def is_tensor(obj) -> bool:
    """`torch.is_tensor(obj)`: whether `obj` is a Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:  # noqa: A002
    """`torch.is_floating_point(input)`."""
    return input.dtype.kind == "f"


def is_complex(input) -> bool:  # noqa: A002
    """`torch.is_complex(input)`."""
    return input.dtype.kind == "c"


def is_nonzero(input) -> bool:  # noqa: A002
    """`torch.is_nonzero(input)`: the truth of a one-element tensor."""
    if np.size(_concrete(input)) != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(np.asarray(_concrete(input)).reshape(()))


def numel(input) -> int:  # noqa: A002
    """`torch.numel(input)`: the number of elements."""
    return builtins.int(np.size(input) if not isinstance(input, Tensor) else input.size)


def allclose(
    input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:  # noqa: A002
    """`torch.allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)`."""
    return _tc.allclose(input, other, rtol, atol, equal_nan)


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):  # noqa: A002
    """`torch.isclose(input, other, ...)`: a bool tensor."""
    return _tc.isclose(input, other, rtol, atol, equal_nan)


def equal(input, other) -> bool:  # noqa: A002
    """`torch.equal(input, other)`: same shape and values."""
    return _tc.equal(input, other)


# ---- statistics ----


def var_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None, **kwargs):  # noqa: A002
    """`torch.var_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=1)`:
    (var, mean)."""
    return _stat_mean(_tc.var, input, dim, unbiased, keepdim, correction, kwargs)


def std_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None, **kwargs):  # noqa: A002
    """`torch.std_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=1)`:
    (std, mean)."""
    return _stat_mean(_tc.std, input, dim, unbiased, keepdim, correction, kwargs)


def _stat_mean(f, input, dim, unbiased, keepdim, correction, kwargs) -> tuple:  # noqa: A002
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    spread = f(input, dim, unbiased, keepdim, correction=correction, **dict(kwargs))
    kwargs = {k: v for k, v in kwargs.items() if k != "ddof"}
    return spread, _tc.mean(input, dim, builtins.bool(keepdim), **kwargs)


var = _tc.var
std = _tc.std
sum = _tc.sum  # noqa: A001
mean = _tc.mean
prod = _tc.prod
all = _tc.all  # noqa: A001
any = _tc.any  # noqa: A001
max = _tc.max  # noqa: A001
min = _tc.min  # noqa: A001


# ---- complex numbers ----


def complex(real, imag):  # noqa: A001
    """`torch.complex(real, imag)`: real + i imag (both float tensors of one dtype)."""
    for part in (real, imag):
        if not isinstance(part, Tensor) or part.dtype.kind != "f":
            raise RuntimeError("Expected both inputs to be Half, Float or Double tensors")
    if real.dtype != imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {real.dtype} but got scalar type {imag.dtype} for "
            "second argument"
        )
    return anp.add(
        real, anp.multiply(imag, np.array(1j, dtype=np.result_type(real.dtype, np.complex64)))
    )


def real(input):  # noqa: A002
    """`torch.real(input)`."""
    return anp.real(input)


def imag(input):  # noqa: A002
    """`torch.imag(input)`: the imaginary part of a complex tensor."""
    if input.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return anp.imag(input)


def conj(input):  # noqa: A002
    """`torch.conj(input)`."""
    return anp.conj(input)


def angle(input):  # noqa: A002
    """`torch.angle(input)`."""
    return (
        anp.angle(input) if hasattr(anp, "angle") else anp.arctan2(anp.imag(input), anp.real(input))
    )


def polar(abs, angle):  # noqa: A002
    """`torch.polar(abs, angle)`: abs * (cos(angle) + i sin(angle))."""
    return complex(abs * anp.cos(angle), abs * anp.sin(angle))


def view_as_real(input):  # noqa: A002
    """`torch.view_as_real(input)`: a complex tensor as (..., 2) real and imaginary parts."""
    if input.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return anp.stack([anp.real(input), anp.imag(input)], axis=-1)


def view_as_complex(input):  # noqa: A002
    """`torch.view_as_complex(input)`: a (..., 2) float tensor as complex numbers."""
    if input.dtype.kind != "f" or not input.ndim or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return complex(input[..., 0], input[..., 1])


# ---- random factories (the default generator; `generator=` for another) ----


def _float_dtype(dtype) -> np.dtype:
    d = torch_dtypes.to_numpy_dtype(dtype)
    return torch_dtypes.default_float() if d is None else d


def rand_like(input, *, dtype=None, device=None, requires_grad: bool = False, generator=None, **kw):  # noqa: A002
    """`torch.rand_like(input)`: uniform samples of `input`'s shape and dtype."""
    _tc.check_device(device)
    d = torch_dtypes.to_numpy_dtype(dtype) or input.dtype
    return _make(_tc.rng(generator).random(np.shape(input)).astype(d), requires_grad)


def randn_like(
    input, *, dtype=None, device=None, requires_grad: bool = False, generator=None, **kw
):  # noqa: A002
    """`torch.randn_like(input)`: standard normal samples of `input`'s shape and dtype."""
    _tc.check_device(device)
    d = torch_dtypes.to_numpy_dtype(dtype) or input.dtype
    return _make(_tc.rng(generator).standard_normal(np.shape(input)).astype(d), requires_grad)


def randint(
    *args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False, **kw
):
    """`torch.randint(low=0, high, size)` (or `randint(high, size)`): int64 samples in
    [low, high)."""
    _tc.check_device(device)
    low = kw.pop("low", None)
    high = kw.pop("high", None)
    if kw:
        raise TypeError(f"randint() got unexpected keyword arguments {sorted(kw)}")
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list, Size)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    if high is None or size is None:
        raise TypeError("randint() needs high and size: randint(low=0, high, size)")
    low = 0 if low is None else low
    d = torch_dtypes.to_numpy_dtype(dtype) or np.dtype(np.int64)
    return _make(_tc.rng(generator).integers(low, high, tuple(size)).astype(d), requires_grad)


def randint_like(
    input, low=0, high=None, *, dtype=None, device=None, requires_grad: bool = False, generator=None
):  # noqa: A002
    """`torch.randint_like(input, low=0, high)`: integers in [low, high) of `input`'s shape."""
    _tc.check_device(device)
    if high is None:
        low, high = 0, low
    d = torch_dtypes.to_numpy_dtype(dtype) or input.dtype
    return _make(_tc.rng(generator).integers(low, high, np.shape(input)).astype(d), requires_grad)


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False, **kw):
    """`torch.randperm(n)`: a random permutation of 0..n-1 (int64)."""
    _tc.check_device(device)
    d = torch_dtypes.to_numpy_dtype(dtype) or np.dtype(np.int64)
    return _make(_tc.rng(generator).permutation(n).astype(d), requires_grad)


def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
):
    """`torch.normal(mean, std, size=None)`: normal samples; `mean` and `std` may be tensors
    (the shape is theirs, broadcast) or numbers (then `size` is the shape)."""
    _tc.check_device(device)
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if tensors:
        shape = np.broadcast_shapes(*(np.shape(v) for v in (mean, std)))
        d = np.result_type(*(t.dtype for t in tensors))
    else:
        if size is None:
            raise TypeError("normal(): size is required when mean and std are numbers")
        shape = tuple(size)
        d = _float_dtype(dtype)
    noise = _tc.rng(generator).standard_normal(shape).astype(d)
    m, s = (np.asarray(_concrete(v)) for v in (mean, std))
    return _make((m + s * noise).astype(d), requires_grad)


def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    """`torch.bernoulli(input)`: 1 with probability `input` (elementwise), else 0."""
    prob = np.asarray(_concrete(input)) if p is None else np.full(np.shape(input), p)
    draws = _tc.rng(generator).random(np.shape(input)) < prob
    return Tensor._from(draws.astype(input.dtype))


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):  # noqa: A002
    """`torch.multinomial(input, num_samples, replacement=False)`: category indices drawn
    with probabilities proportional to each row of `input`."""
    weights = np.asarray(_concrete(input), dtype=np.float64)
    rows = weights.reshape(-1, weights.shape[-1])
    gen = _tc.rng(generator)
    out = np.empty((rows.shape[0], num_samples), np.int64)
    for r, w in enumerate(rows):
        p = w / w.sum()
        if replacement:
            u = gen.random((num_samples,))
            out[r] = np.minimum(np.searchsorted(np.cumsum(p), u, side="right"), len(p) - 1)
        else:
            if num_samples > np.count_nonzero(p):
                raise RuntimeError(
                    "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
                )
            keys = np.log(gen.random((len(p),))) / np.where(p > 0, p, np.nan)
            keys = np.where(p > 0, keys, -np.inf)
            out[r] = np.argsort(-keys, kind="stable")[:num_samples]
    return Tensor._from(out.reshape(weights.shape[:-1] + (num_samples,)))


# ---- shape and indexing (torch's argument orders) ----

narrow = _tc.narrow
select = _tc.select
chunk = _tc.chunk
tensor_split = _tc.tensor_split
unsqueeze = _tc.unsqueeze
squeeze = _tc.torch_squeeze
movedim = _tc.movedim
moveaxis = _tc.movedim
transpose = _tc.torch_transpose
swapaxes = _tc.torch_transpose
swapdims = _tc.torch_transpose
t = _tc.t
flatten = _tc.torch_flatten
unflatten = _tc.unflatten
gather = _tc.gather
scatter = _tc.scatter
scatter_add = _tc.scatter_add
scatter_reduce = _tc.scatter_reduce
index_select = _tc.index_select
index_add = _tc.index_add
index_copy = _tc.index_copy
index_fill = _tc.index_fill
index_put = _tc.index_put
masked_select = _tc.masked_select
masked_fill = _tc.masked_fill
masked_scatter = _tc.masked_scatter
take_along_dim = _tc.take_along_dim
flip = _tc.flip
fliplr = _tc.fliplr
flipud = _tc.flipud
roll = _tc.roll
rot90 = _tc.rot90
tril = _tc.tril
triu = _tc.triu
repeat_interleave = _tc.repeat_interleave
tile = _tc.tile
diag = _tc.diag
diag_embed = _tc.diag_embed
diagonal = _tc.torch_diagonal
nonzero = _tc.torch_nonzero
argwhere = _tc.argwhere
as_strided = _tc.as_strided
clip = clamp
concat = cat
concatenate = cat
unique = _tc.unique
sum_to_size = _tc.sum_to_size


def split(tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """`torch.split(tensor, split_size_or_sections, dim=0)`: torch's sizes, not NumPy's
    indices."""
    return _tc.split(tensor, split_size_or_sections, dim)


def reshape(input, shape):  # noqa: A002
    """`torch.reshape(input, shape)`."""
    return (
        _tc.reshape(input, *shape)
        if isinstance(shape, (tuple, list, Size))
        else _tc.reshape(input, shape)
    )


def permute(input, dims):  # noqa: A002
    """`torch.permute(input, dims)`."""
    return _tc.permute(input, *dims)


def take(input, index):  # noqa: A002
    """`torch.take(input, index)`: entries of the flattened input."""
    return anp.take(anp.ravel(input), index)


def trace(input):  # noqa: A002
    """`torch.trace(input)`: the sum of a matrix's diagonal."""
    if np.ndim(input) != 2:
        raise RuntimeError("trace: expected a matrix")
    return anp.trace(input)


def broadcast_tensors(*tensors) -> tuple:
    """`torch.broadcast_tensors(*tensors)`."""
    return tuple(anp.broadcast_arrays(*tensors))


def broadcast_to(input, size):  # noqa: A002
    """`torch.broadcast_to(input, size)` (-1 keeps a dimension, as `expand`)."""
    return _tc.expand(input, *size)


def broadcast_shapes(*shapes) -> Size:
    """`torch.broadcast_shapes(*shapes)`."""
    return Size(
        np.broadcast_shapes(
            *(tuple(s) if not isinstance(s, builtins.int) else (s,) for s in shapes)
        )
    )


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """`torch.meshgrid(*tensors, indexing='ij')` (torch's default is 'ij', NumPy's 'xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(anp.meshgrid(*tensors, indexing=indexing or "ij"))


def atleast_1d(*tensors):
    """`torch.atleast_1d`."""
    return anp.atleast_1d(*tensors)


def atleast_2d(*tensors):
    """`torch.atleast_2d`."""
    return anp.atleast_2d(*tensors)


def atleast_3d(*tensors):
    """`torch.atleast_3d`."""
    return anp.atleast_3d(*tensors)


def hstack(tensors):
    """`torch.hstack(tensors)`."""
    return anp.hstack(list(tensors))


def vstack(tensors):
    """`torch.vstack(tensors)`."""
    return anp.vstack(list(tensors))


def dstack(tensors):
    """`torch.dstack(tensors)`."""
    return anp.dstack(list(tensors))


def column_stack(tensors):
    """`torch.column_stack(tensors)`."""
    return anp.column_stack(list(tensors))


def searchsorted(
    sorted_sequence, input, *, right: bool = False, side: str | None = None, out_int32: bool = False
):  # noqa: A002
    """`torch.searchsorted(sorted_sequence, values, right=False)` (int64 indices)."""
    side = side or ("right" if right else "left")
    seq = np.asarray(_concrete(sorted_sequence))
    values = np.asarray(_concrete(input))
    if seq.ndim <= 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        out = np.stack(
            [
                np.searchsorted(s, v, side=side)
                for s, v in zip(
                    seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
                )
            ]
        ).reshape(values.shape)
    return Tensor._from(out.astype(np.int32 if out_int32 else np.int64))


# ---- products ----

matmul = anp.matmul
mm = mm
bmm = _tc.bmm
mv = _tc.mv
dot = _tc.torch_dot
vdot = _tc.vdot
inner = _tc.inner
outer = _tc.outer
ger = _tc.outer
addmm = _tc.addmm
addmv = _tc.addmv
addr = _tc.addr
baddbmm = _tc.baddbmm
addbmm = _tc.addbmm
cross = _tc.cross
det = _tc.det
inverse = _tc.inverse
pinverse = _tc.pinverse
logdet = _tc.logdet
slogdet = _tc.slogdet
kron = _tc.kron
matrix_power = _tc.matrix_power
cholesky = _tc.cholesky


def einsum(equation: str, *operands):
    """`torch.einsum(equation, *operands)` (or a list of operands)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return anp.einsum(equation, *operands)


def tensordot(a, b, dims=2):
    """`torch.tensordot(a, b, dims=2)`: dims an int or two lists of dims."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    return anp.tensordot(a, b, axes=dims)


def chain_matmul(*matrices):
    """`torch.chain_matmul(*matrices)`."""
    out = matrices[0]
    for m in matrices[1:]:
        out = anp.matmul(out, m)
    return out


def cdist(x1, x2, p: float = 2.0):
    """`torch.cdist(x1, x2, p=2)`: the p-norm distances between the rows of x1 and x2."""
    diff = anp.expand_dims(x1, -2) - anp.expand_dims(x2, -3)
    return _tc.norm(diff, p, dim=-1)


# ---- elementwise (torch's names) ----

absolute = anp.abs
negative = anp.negative
true_divide = anp.true_divide
divide = div
multiply = mul
subtract = sub
floor_divide = anp.floor_divide
atan2 = anp.arctan2
arctan2 = anp.arctan2
hypot = anp.hypot
fmax = anp.fmax
fmin = anp.fmin
exp2 = anp.exp2
log2 = anp.log2
log10 = anp.log10
asin = arcsin = anp.arcsin
acos = arccos = anp.arccos
atan = arctan = anp.arctan
asinh = arcsinh = anp.arcsinh
acosh = arccosh = anp.arccosh
atanh = arctanh = anp.arctanh
round = anp.round  # noqa: A001
erf = _special.erf
erfc = _special.erfc
erfinv = _special.erfinv
lgamma = _special.gammaln
digamma = _special.digamma
polygamma = _special.polygamma
signbit = anp.signbit
isnan = anp.isnan
isinf = anp.isinf
isfinite = anp.isfinite
logical_and = anp.logical_and
logical_or = anp.logical_or
logical_xor = anp.logical_xor
logical_not = anp.logical_not
eq = anp.equal
ne = anp.not_equal
lt = anp.less
le = anp.less_equal
gt = anp.greater
ge = anp.greater_equal
greater = anp.greater
greater_equal = anp.greater_equal
less = anp.less
less_equal = anp.less_equal
not_equal = anp.not_equal
logaddexp = anp.logaddexp
logaddexp2 = anp.logaddexp2


def deg2rad(input):  # noqa: A002
    """`torch.deg2rad`."""
    return input * (np.pi / 180.0)


def rad2deg(input):  # noqa: A002
    """`torch.rad2deg`."""
    return input * (180.0 / np.pi)


def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):  # noqa: A002
    """`torch.nan_to_num(input, nan=0.0, posinf=None, neginf=None)`."""
    return anp.nan_to_num(input, nan=nan, posinf=posinf, neginf=neginf)


def positive(input):  # noqa: A002
    """`torch.positive(input)`: `input` itself."""
    return input


# ---- torch's numeric constants ----

inf = math.inf
nan = math.nan
e = math.e
pi = math.pi


# ---- devices autodiff does not compute on: torch.cuda, torch.mps, torch.xpu, torch.backends ----


class _Accelerator:
    """`torch.cuda` (and `torch.mps`, `torch.xpu`): a device autodiff does not compute on.

    The availability queries answer as torch does on a machine without that device, so the
    common `device = "cuda" if torch.cuda.is_available() else "cpu"` picks the CPU; seeding
    it does nothing (there is no device to seed, as in torch without one); anything that
    needs the device raises.

    Example:
        >>> import autodiff as torch
        >>> torch.cuda.is_available(), torch.cuda.device_count(), torch.backends.mps.is_available()
        (False, 0, False)
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def is_available(self) -> builtins.bool:
        """False: autodiff computes on the CPU only."""
        return False

    def device_count(self) -> builtins.int:
        """0."""
        return 0

    def is_bf16_supported(self, *args, **kwargs) -> builtins.bool:
        """False."""
        return False

    def is_initialized(self) -> builtins.bool:
        """False."""
        return False

    def manual_seed(self, seed) -> None:
        """Nothing to seed: there is no such device (torch ignores it too)."""

    manual_seed_all = manual_seed

    def _unavailable(self, *args, **kwargs):
        raise RuntimeError(
            f"torch.{self._name} is not available: autodiff computes on the CPU only "
            f"(check torch.{self._name}.is_available() first)"
        )

    current_device = synchronize = get_device_name = set_device = empty_cache = _unavailable

    def __repr__(self) -> str:
        return f"<autodiff stand-in for torch.{self._name} (not available)>"


cuda = _Accelerator("cuda")
mps = _Accelerator("mps")
xpu = _Accelerator("xpu")


class _Backend:
    """One of `torch.backends.*`: not available; its flags can be set (they change nothing)."""

    def __init__(self, name: str, **flags) -> None:
        self._name = name
        self.__dict__.update(flags)

    def is_available(self) -> builtins.bool:
        """False: autodiff computes with NumPy on the CPU."""
        return False

    def is_built(self) -> builtins.bool:
        """False."""
        return False

    def __repr__(self) -> str:
        return f"<autodiff stand-in for torch.backends.{self._name} (not available)>"


class _Backends:
    """`torch.backends`: `mps`, `cuda`, `cudnn`, `mkldnn` report unavailable; flags such as
    `torch.backends.cudnn.deterministic = True` are accepted and have no effect."""

    def __init__(self) -> None:
        self.mps = _Backend("mps")
        self.cuda = _Backend("cuda", matmul=_Backend("cuda.matmul", allow_tf32=False))
        self.cudnn = _Backend(
            "cudnn", enabled=True, benchmark=False, deterministic=False, allow_tf32=True
        )
        self.mkldnn = _Backend("mkldnn", enabled=False)


backends = _Backends()


# ---- functions without a derivative (as in torch and JAX) ----


def nextafter(input, other):  # noqa: A002
    """`torch.nextafter(input, other)`: the next floating-point value after `input` towards
    `other`, elementwise. It has no derivative (nor in torch or JAX): given a value that
    carries one (a tensor that requires grad, or a traced value), it raises
    NotImplementedError (torch raises when the backward pass reaches it).

    Example:
        >>> import autodiff as torch
        >>> bool(torch.nextafter(torch.tensor([1.0]), torch.tensor([2.0])) > 1.0)
        True
    """
    for x in (input, other):
        if isinstance(x, Tensor) and (
            x._trace is not EVAL_TRACE or (x.requires_grad and state().grad_enabled)
        ):
            raise NotImplementedError(
                "the derivative for 'nextafter' is not implemented (use it on values that "
                "do not require grad, e.g. under torch.no_grad() or on x.detach())."
            )
    return Tensor._from(np.nextafter(_tc._array(input), _tc._array(other)))


def igamma(input, other):  # noqa: A002
    """`torch.igamma(input, other)`: the regularized lower incomplete gamma function
    P(input, other) (scipy.special.gammainc), differentiable in both arguments."""
    return _special.gammainc(input, other)


def igammac(input, other):  # noqa: A002
    """`torch.igammac(input, other)`: the regularized upper incomplete gamma function
    Q(input, other) = 1 - P(input, other) (scipy.special.gammaincc)."""
    return _special.gammaincc(input, other)


def resolve_conj(input):  # noqa: A002
    """`torch.resolve_conj(input)`: `input` itself (conjugation is never lazy here)."""
    return input


def resolve_neg(input):  # noqa: A002
    """`torch.resolve_neg(input)`: `input` itself (negation is never lazy here)."""
    return input


def is_conj(input) -> builtins.bool:  # noqa: A002
    """`torch.is_conj(input)`: False (conjugation is never lazy here)."""
    return False


def is_neg(input) -> builtins.bool:  # noqa: A002
    """`torch.is_neg(input)`: False (negation is never lazy here)."""
    return False


split_with_sizes = _tc.split_with_sizes


# ---- save and load ----


def _rebuild_tensor(value, requires_grad: bool, grad=None) -> Tensor:
    t = Tensor._from(value)
    if requires_grad:
        t.requires_grad = True
    if grad is not None:
        t._grad = Tensor._from(grad)
    return t


class _TensorPickler(pickle.Pickler):
    """Pickles every Tensor (anywhere in the object) as its value and `requires_grad`: no
    graph, no hooks, as `torch.save`."""

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            if obj._trace is not EVAL_TRACE:
                raise pickle.PicklingError(
                    f"Cannot save a {type(obj).__name__}: a traced value inside a function "
                    "transform has no value of its own to save."
                )
            value = np.array(obj._value)
            if type(obj) is not Tensor:  # (nn.Parameter and other subclasses)
                return NotImplemented
            return (_rebuild_tensor, (value, obj._requires_grad))
        return NotImplemented


def save(obj, f, pickle_module=None, pickle_protocol: int = 2, **kwargs) -> None:
    """`torch.save(obj, f)`: pickle `obj` (tensors, dicts and lists of them, any picklable
    object holding them) to a path or a binary file.

    Example:
        >>> import io, autodiff as torch
        >>> buffer = io.BytesIO()
        >>> torch.save({"w": torch.ones(2, requires_grad=True)}, buffer); _ = buffer.seek(0)
        >>> torch.load(buffer)["w"]
        tensor([1., 1.], requires_grad=True)
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            _TensorPickler(handle, protocol=pickle_protocol).dump(obj)
        return
    _TensorPickler(f, protocol=pickle_protocol).dump(obj)


def load(
    f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, **kwargs
) -> Any:
    """`torch.load(f, map_location=None)`: what `save` wrote (`map_location` may name the
    CPU only)."""
    if (
        map_location is not None
        and not callable(map_location)
        and not isinstance(map_location, dict)
    ):
        _tc.check_device(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return pickle.load(handle)
    if isinstance(f, (bytes, bytearray)):
        return pickle.load(io.BytesIO(f))
    return pickle.load(f)
