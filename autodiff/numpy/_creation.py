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
    """`numpy.zeros_like`: a constant (no derivative flows through it).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> zeros_like(np.ones((2, 2))).tolist()
        [[0.0, 0.0], [0.0, 0.0]]
        >>> ad.grad(lambda x: (x + zeros_like(x)).sum())(np.ones(2))  # only `x` counts
        array([1., 1.])
    """
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.zeros(s if shape is None else shape, dt))


def ones_like(a, dtype=None, shape=None):
    """`numpy.ones_like`: a constant.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(ad.grad(lambda x: (ones_like(x) * x).sum())(2.0))
        1.0
    """
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.ones(s if shape is None else shape, dt))


def empty_like(a, dtype=None, shape=None):
    """`numpy.empty_like` (filled with zeros here: a constant).

    Example:
        >>> import numpy as np
        >>> empty_like(np.ones(3), dtype=np.float32).dtype
        dtype('float32')
    """
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """`numpy.full_like`: a constant.

    Example:
        >>> import numpy as np
        >>> full_like(np.zeros(3), 0.5).tolist()
        [0.5, 0.5, 0.5]
    """
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.full(s if shape is None else shape, fill_value, dt))


def shape(a) -> tuple:
    """`numpy.shape`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> shape(ad.zeros(2, 3)), shape([1, 2])
        ((2, 3), (2,))
    """
    return a.shape if isinstance(a, Tensor) else np.shape(a)


def ndim(a) -> int:
    """`numpy.ndim`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> ndim(ad.zeros(2, 3)), ndim(1.0)
        (2, 0)
    """
    return a.ndim if isinstance(a, Tensor) else np.ndim(a)


def size(a, axis=None) -> int:
    """`numpy.size`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> size(ad.zeros(2, 3)), size(ad.zeros(2, 3), axis=1)
        (6, 3)
    """
    s = shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def iscomplexobj(x) -> bool:
    """`numpy.iscomplexobj`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> iscomplexobj(ad.tensor([1j])), iscomplexobj(ad.tensor([1.0]))
        (True, False)
    """
    return (
        np.issubdtype(x.dtype, np.complexfloating) if isinstance(x, Tensor) else np.iscomplexobj(x)
    )


def isrealobj(x) -> bool:
    """`numpy.isrealobj`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> isrealobj(ad.tensor([1.0])), isrealobj(ad.tensor([1j]))
        (True, False)
    """
    return not iscomplexobj(x)


def result_type(*arrays_and_dtypes):
    """`numpy.result_type`, Tensor-aware.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> result_type(ad.tensor(np.ones(2, np.float32)), np.float64)
        dtype('float64')
    """
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
