"""Array creation and inspection: constants with respect to differentiation, Tensor-aware."""

from __future__ import annotations

import numpy as np

from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE


def _shape_dtype(a, dtype):
    if isinstance(a, Tensor):
        return a.shape, (a.dtype if dtype is None else np.dtype(dtype))
    a = np.asarray(a)
    return a.shape, (a.dtype if dtype is None else np.dtype(dtype))


def _like(a, value):
    """A constant array of `value` with the shape of `a` (a Tensor stays a Tensor at level 0)."""
    return Tensor(value) if isinstance(a, Tensor) and a._trace is EVAL_TRACE else value


def zeros_like(a, dtype=None, shape=None):
    """`numpy.zeros_like`: a constant (no derivative flows through it)."""
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.zeros(s if shape is None else shape, dt))


def ones_like(a, dtype=None, shape=None):
    """`numpy.ones_like`: a constant."""
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.ones(s if shape is None else shape, dt))


def empty_like(a, dtype=None, shape=None):
    """`numpy.empty_like` (filled with zeros here: a constant)."""
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """`numpy.full_like`: a constant."""
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.full(s if shape is None else shape, fill_value, dt))


def shape(a) -> tuple:
    """`numpy.shape`, Tensor-aware."""
    return a.shape if isinstance(a, Tensor) else np.shape(a)


def ndim(a) -> int:
    """`numpy.ndim`, Tensor-aware."""
    return a.ndim if isinstance(a, Tensor) else np.ndim(a)


def size(a, axis=None) -> int:
    """`numpy.size`, Tensor-aware."""
    s = shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def iscomplexobj(x) -> bool:
    """`numpy.iscomplexobj`, Tensor-aware."""
    return (
        np.issubdtype(x.dtype, np.complexfloating) if isinstance(x, Tensor) else np.iscomplexobj(x)
    )


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def result_type(*arrays_and_dtypes):
    """`numpy.result_type`, Tensor-aware."""
    return np.result_type(*[a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes])


FUNCTIONS = {
    f.__name__: f
    for f in (
        zeros_like,
        ones_like,
        empty_like,
        full_like,
        shape,
        ndim,
        size,
        iscomplexobj,
        isrealobj,
        result_type,
    )
}

# Creation from nothing differentiable: NumPy's own functions, re-exported.
PASSTHROUGH = (
    "zeros",
    "ones",
    "empty",
    "full",
    "eye",
    "identity",
    "arange",
    "linspace",
    "logspace",
    "geomspace",
    "tri",
    "indices",
    "ndarray",
    "dtype",
    "finfo",
    "iinfo",
    "issubdtype",
    "promote_types",
    "can_cast",
    "isscalar",
    "newaxis",
    "pi",
    "e",
    "inf",
    "nan",
    "euler_gamma",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool_",
    "intp",
    "integer",
    "floating",
    "complexfloating",
    "inexact",
    "number",
    "generic",
    "random",
    "errstate",
    "seterr",
    "allclose",
    "isclose",
    "array_equal",
    "broadcast_shapes",
    "ndindex",
    "ndenumerate",
)
