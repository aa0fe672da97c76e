"""Matrices as the linalg primitives see them: transposes, diagonals and triangles (written
with autodiff ops, so they run inside rules at any level), the triangle numpy.linalg reads,
result dtypes and abstract values, and the batch rules of NumPy's stacked matrix functions.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import ShapedArray, result_aval
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import bind
from autodiff.core.tensor import Tensor
from autodiff.ops import elementwise as _ew
from autodiff.ops import shape as _shape
from autodiff.ops.elementwise import where
from autodiff.ops.products import einsum
from autodiff.ops.structural import align_for_broadcast, move_to_front, shape_of

LinAlgError = np.linalg.LinAlgError
# ---------------------------------------------------------------------------------------------
# Matrix helpers, all autodiff ops (they run inside rules on values of any level).


def _mT(x):
    """Transpose of the last two axes."""
    return _shape.swapaxes(x, -1, -2)


def _rows(v):
    """`v[..., None, :]`: scales columns when multiplied into a matrix (`X @ diag(v)`)."""
    return _shape.expand_dims(v, -2)


def _cols(v):
    """`v[..., :, None]`: scales rows (`diag(v) @ X`)."""
    return _shape.expand_dims(v, -1)


def _diagonal(x):
    return einsum("...ii->...i", x)


def _trace(x):
    return einsum("...ii->...", x)


def _diag_embed(v):
    """A stack of diagonal matrices with diagonals `v`."""
    return _cols(v) * np.eye(shape_of(v)[-1], dtype=dtype_of(v))


def _sym(x):
    return (x + _mT(x)) * 0.5


def _abs2(x):
    """`|x|**2`, elementwise."""
    if np.issubdtype(dtype_of(x), np.complexfloating):
        return _ew.real(x) ** 2 + _ew.imag(x) ** 2
    return x * x


def _triangle(x, lower: bool, strict: bool = False):
    """The lower (upper) triangle of the last two axes, the rest zero."""
    n, m = shape_of(x)[-2:]
    ones = np.ones((n, m), dtype=bool)
    mask = np.tril(ones, -strict) if lower else np.triu(ones, int(strict))
    return where(mask, x, 0.0)


def _inverse_gaps(w):
    """`F[..., i, j] = 1 / (w_j - w_i)` off the diagonal, 0 on it (inf where w_i == w_j)."""
    off = ~np.eye(shape_of(w)[-1], dtype=bool)
    gaps = _rows(w) - _cols(w)
    return where(off, 1.0 / where(off, gaps, 1.0), 0.0)


def _real_only(name: str, x) -> None:
    if np.issubdtype(dtype_of(x), np.complexfloating):
        raise NotImplementedError(f"Derivatives of {name} for complex inputs are not implemented")


def _check_matrix(x, square: bool = True) -> tuple:
    """The last two dims of `x`, or numpy.linalg's LinAlgError (too few dims, not square)."""
    return _matrix_dims(shape_of(x), square)


def _matrix_dims(shape: tuple, square: bool = True) -> tuple:
    """`_check_matrix` for a shape."""
    if len(shape) < 2:
        raise LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    if square and shape[-1] != shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return shape[-2:]


def _concrete(x):
    """The concrete value of `x`, or None inside vmap (where one value does not exist)."""
    if not isinstance(x, Tensor):
        return x
    try:
        return x.primal()
    except TypeError:
        return None


def _mH(x):
    """Conjugate transpose of the last two axes."""
    return _ew.conj_complex(_mT(x))


# ---------------------------------------------------------------------------------------------
# Result dtypes and abstract values. numpy.linalg computes in single precision when every
# operand is float32 or complex64, else in double (integers and bools included), complex when
# any operand is; it refuses float16 and long double.

_LINALG_DOUBLE = {
    np.dtype(np.float32): False,
    np.dtype(np.complex64): False,
    np.dtype(np.float64): True,
    np.dtype(np.complex128): True,
}


def linalg_dtype(*dtypes) -> np.dtype:
    """The dtype of numpy.linalg's results for operands of `dtypes` (TypeError where NumPy
    refuses one).

    Example:
        >>> linalg_dtype(np.float32), linalg_dtype(np.int8), linalg_dtype(np.float32, np.complex128)
        (dtype('float32'), dtype('float64'), dtype('complex128'))
    """
    double = complex_ = False
    for dtype in map(np.dtype, dtypes):
        if is_inexact(dtype):
            if dtype not in _LINALG_DOUBLE:
                raise TypeError(f"array type {dtype.name} is unsupported in linalg")
            double |= _LINALG_DOUBLE[dtype]
            complex_ |= dtype.kind == "c"
        else:
            double = True
    if complex_:
        return np.dtype(np.complex128 if double else np.complex64)
    return np.dtype(np.float64 if double else np.float32)


def _real_dtype(dtype) -> np.dtype:
    """The dtype of the real part of `dtype` (singular values, eigenvalues, log|det|)."""
    return np.finfo(dtype).dtype


def _stack(*avals: ShapedArray) -> tuple:
    """The broadcast leading ("stack") dims of matrix operands."""
    return np.broadcast_shapes(*(a.shape[:-2] for a in avals))


def _matrix_aval(shape: tuple, a: ShapedArray, *others: ShapedArray, real: bool = False):
    """The aval of a numpy.linalg result of `shape` computed from `a` (and `others`)."""
    dtype = linalg_dtype(a.dtype, *(o.dtype for o in others))
    return result_aval(shape, _real_dtype(dtype) if real else dtype, a, *others)


def _square_abstract_eval(a, **params):
    """The abstract_eval of a map from square matrices to matrices of their shape."""
    _matrix_dims(a.shape)
    return _matrix_aval(a.shape, a)


# ---------------------------------------------------------------------------------------------
# Batch rules: the impls map over leading axes (NumPy's stacks), so the batch axis becomes one.


def _leading_batch(prim):
    """One operand: the batch axis stays where it is unless it is a matrix axis."""

    def rule(values, dims, **params):
        (x,), (d,) = values, dims
        if d >= len(shape_of(x)) - 2:
            x, d = move_to_front(x, d), 0
        out = bind(prim, x, **params)
        return out, ((d,) * len(out) if prim.multiple_results else d)

    return rule


def _broadcast_batch(prim):
    """Several operands with broadcast stacks: batch axes first, lined up by 1-axes."""

    def rule(values, dims, **params):
        out = bind(prim, *align_for_broadcast(values, dims), **params)
        return out, ((0,) * len(out) if prim.multiple_results else 0)

    return rule


# ---------------------------------------------------------------------------------------------
# The Hermitian matrix numpy.linalg reads from one triangle (eigh, eigvalsh, svd(hermitian=True)):
# LAPACK reads the strict lower (upper) triangle and the real part of the diagonal, and takes
# the rest as their conjugate transpose. This map R is real-linear, so the derivative of what
# NumPy computes at A is the Hermitian rule applied to R(dA): the other triangle (and the
# imaginary part of the diagonal) gets a zero gradient.


def _read_triangle(x, lower: bool):
    """R(x): the Hermitian matrix LAPACK reads from `x`'s lower (upper) triangle."""
    strict = _triangle(x, lower, strict=True)
    return strict + _mH(strict) + _diag_embed(_ew.real(_diagonal(x)))


def _read_triangle_transpose(x, lower: bool):
    """The transpose of `_read_triangle` (under the pairing Re sum(g * t)): a cotangent of the
    Hermitian matrix, folded into the triangle read."""
    return _triangle(x + _mH(x), lower, strict=True) + _diag_embed(_ew.real(_diagonal(x)))
