"""The matrix products with jax.numpy's `precision=` and `preferred_element_type=` keywords
(dot, matmul, einsum, inner, vdot, tensordot), over the ops' NumPy-signature functions.

`precision` is checked and has no effect: NumPy computes float32 and float64 products at
their full precision on the CPU. `preferred_element_type` is the dtype of the result: the
operands are converted to it first where that loses nothing (an accumulation at least as
wide as JAX's), the result afterwards otherwise.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.ops import products
from autodiff.ops.elementwise import astype

# lax.Precision's names (and its enum's members, whose `name` is one of them).
_PRECISIONS = frozenset(
    ("default", "high", "highest", "fastest", "bfloat16", "tensorfloat32", "float32")
)


def _check_precision(precision) -> None:
    if precision is None:
        return
    pair = precision if isinstance(precision, (tuple, list)) else (precision,)
    if len(pair) not in (1, 2):
        raise ValueError(f"precision argument must be a single value or a pair, got {precision!r}")
    for p in pair:
        name = getattr(p, "name", p)
        if p is not None and (not isinstance(name, str) or name.lower() not in _PRECISIONS):
            raise ValueError(
                f"precision argument must be None, a lax.Precision value or one of "
                f"{sorted(_PRECISIONS)} (or a pair of them), got {p!r}"
            )


def _product(fun, operands: list, precision, preferred_element_type, **kwargs):
    _check_precision(precision)
    if preferred_element_type is None:
        return fun(*operands, **kwargs)
    dtype = np.dtype(preferred_element_type)
    if all(np.can_cast(dtype_of(x), dtype) for x in operands if not isinstance(x, str)):
        operands = [x if isinstance(x, str) else astype(x, dtype) for x in operands]
        return fun(*operands, **kwargs)
    return astype(fun(*operands, **kwargs), dtype)


def dot(a, b, out=None, *, precision=None, preferred_element_type=None):
    """`numpy.dot` with jax.numpy's keywords (see the module docstring).

    Example:
        >>> import numpy as np
        >>> dot(np.array([1, 2]), np.array([3, 4]), preferred_element_type=np.float32)
        np.float32(11.0)
    """
    return _product(products.dot, [a, b], precision, preferred_element_type, out=out)


def matmul(x1, x2, /, out=None, *, precision=None, preferred_element_type=None, **kwargs):
    """`numpy.matmul` with jax.numpy's keywords (see the module docstring).

    Example:
        >>> import numpy as np
        >>> matmul(np.eye(2), np.ones(2), precision="highest")
        array([1., 1.])
    """
    return _product(products.matmul, [x1, x2], precision, preferred_element_type, out=out, **kwargs)


def einsum(*operands, precision=None, preferred_element_type=None, **kwargs):
    """`numpy.einsum` with jax.numpy's keywords (see the module docstring).

    Example:
        >>> import numpy as np
        >>> einsum("i,i", np.ones(3), np.ones(3), precision=("high", "high"))
        np.float64(3.0)
    """
    if operands and not isinstance(operands[0], str) and preferred_element_type is not None:
        _check_precision(precision)  # (the sublist form: operands between the sublists)
        return astype(products.einsum(*operands, **kwargs), np.dtype(preferred_element_type))
    return _product(products.einsum, list(operands), precision, preferred_element_type, **kwargs)


def inner(a, b, /, *, precision=None, preferred_element_type=None):
    """`numpy.inner` with jax.numpy's keywords (see the module docstring).

    Example:
        >>> import numpy as np
        >>> inner(np.ones(2), np.ones(2), precision=None)
        np.float64(2.0)
    """
    return _product(products.inner, [a, b], precision, preferred_element_type)


def vdot(a, b, /, *, precision=None, preferred_element_type=None):
    """`numpy.vdot` with jax.numpy's keywords (see the module docstring).

    Example:
        >>> import numpy as np
        >>> vdot(np.ones(2), np.ones(2), precision="default")
        np.float64(2.0)
    """
    return _product(products.vdot, [a, b], precision, preferred_element_type)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """`numpy.tensordot` with jax.numpy's keywords (see the module docstring).

    Example:
        >>> import numpy as np
        >>> tensordot(np.ones((2, 3)), np.ones(3), axes=1, precision="highest")
        array([3., 3.])
    """
    return _product(products.tensordot, [a, b], precision, preferred_element_type, axes=axes)


FUNCTIONS = {f.__name__: f for f in (dot, matmul, einsum, inner, vdot, tensordot)}
