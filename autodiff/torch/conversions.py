"""Tensor's conversions and metadata on the torch face: `to`, `type`, `cpu`, `dim`,
`stride`, storages, `is_floating_point`, `equal`, ..."""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import float_kind, is_bfloat16
from autodiff.core.tensor import Tensor, face_of
from autodiff.core.trace import EVAL_TRACE
from autodiff.torch._args import _array, _cast, _concrete, _no_extra, _np_dtype, wrap_dim
from autodiff.torch.types import (
    CPU,
    META,
    MetaArray,
    TypedStorage,
    UntypedStorage,
    check_device,
    device,
    is_meta_device,
    meta_array,
)


def volatile(self: Tensor) -> builtins.bool:
    """`Tensor.volatile`: False, with torch's warning (volatile was removed; use no_grad)."""
    warnings.warn(
        "volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2
    )
    return False


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
    if is_meta_device(where):
        return Tensor._from(meta_array(self.shape, _np_dtype(dtype) or self.dtype))
    if type(self._value) is MetaArray:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
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
    if is_bfloat16(d):
        return "torch.BFloat16Tensor"
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
    return float_kind(self.dtype) == "f"


def is_complex(self: Tensor) -> bool:
    """`Tensor.is_complex()`."""
    return self.dtype.kind == "c"


def is_signed(self: Tensor) -> bool:
    """`Tensor.is_signed()`."""
    return float_kind(self.dtype) in "ifc"


def is_same_size(self: Tensor, other) -> bool:
    """`Tensor.is_same_size(other)`."""
    return self.shape == np.shape(other)


def get_device(self: Tensor) -> int:
    """`Tensor.get_device()`: -1 (the CPU)."""
    return -1


def device_of(self: Tensor) -> Any:
    """`x.device`: `device('cpu')` on the torch face (`device('meta')` for a shape-only
    tensor); NumPy's `'cpu'` on the NumPy face."""
    if type(self._value) is MetaArray:
        return META
    return "cpu" if face_of(self) == "numpy" else CPU


def is_meta(self: Tensor) -> bool:
    """`x.is_meta`: whether `x` is on the 'meta' device (a shape and a dtype, no data)."""
    return type(self._value) is MetaArray


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
