"""Linear solves: inv, solve and triangular_solve, with their rules (the numpy.linalg functions
inv and solve are ops/linalg.py's).

Every primitive acts on the last two axes and maps over the leading ("stack") axes, with
NumPy's broadcasting between operands, as `numpy.linalg` does (see ops/linalg.py for the
conventions of the whole family). All three are holomorphic.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.primitive import Primitive, bind
from autodiff.ops.elementwise import cotangent_of
from autodiff.ops.matrix import (
    LinAlgError,
    _broadcast_batch,
    _leading_batch,
    _matrix_aval,
    _matrix_dims,
    _mT,
    _square_abstract_eval,
    _stack,
    _triangle,
    linalg_dtype,
)
from autodiff.ops.products import tangent_in_dtype_of
from autodiff.ops.sparsity import dense_blocks

# ---------------------------------------------------------------------------------------------
# inv: d(A^-1) = -A^-1 dA A^-1. With `nan_if_singular` (for cond), singular matrices give NaNs
# instead of an error, as NumPy's cond computes them.


def _inv_impl(a, *, nan_if_singular=False):
    if not nan_if_singular:
        return np.linalg.inv(a)
    a = np.asarray(a)
    out = np.empty(a.shape, linalg_dtype(a.dtype))
    for i in np.ndindex(a.shape[:-2]):
        try:
            out[i] = np.linalg.inv(a[i])
        except LinAlgError:
            out[i] = np.nan
    return out


def solve_cores(shapes, **params) -> list:
    """The matrix axes of `a` and `b` in a solve: b is a vector only when 1-D (NumPy 2)."""
    return [2, 1 if len(shapes[1]) == 1 else 2]


inv_p = Primitive("inv")
inv_p.sparsity = dense_blocks()
inv_p.impl = _inv_impl
inv_p.jvp = lambda primals, tangents, *, out, **params: (
    None if tangents[0] is None else -(out @ tangents[0] @ out)
)
inv_p.vjp = lambda g, a, *, out, **params: (-(_mT(out) @ g @ _mT(out)),)
inv_p.abstract_eval = _square_abstract_eval
inv_p.batch = _leading_batch(inv_p)

# ---------------------------------------------------------------------------------------------
# solve(a, b) with b a stack of matrices (..., n, k): dx = A^-1 (db - dA x), gb = A^-T g.

solve_p = Primitive("solve")
solve_p.sparsity = dense_blocks(solve_cores)
solve_p.impl = np.linalg.solve


def _solve_jvp(primals, tangents, *, out):
    (a, _), (da, db) = primals, tangents
    t = db if da is None else -(da @ out) if db is None else db - da @ out
    return None if t is None else tangent_in_dtype_of(bind(solve_p, a, t), out)


def _solve_vjp(g, a, b, *, out, needs):
    gb = bind(solve_p, _mT(a), g)
    ga = -(gb @ _mT(out)) if needs[0] else None
    return cotangent_of(ga, a), cotangent_of(gb, b) if needs[1] else None


solve_p.jvp = _solve_jvp
solve_p.vjp = _solve_vjp
solve_p.vjp_takes_needs = True
solve_p.batch = _broadcast_batch(solve_p)


def _solve_abstract_eval(a, b):
    n = _matrix_dims(a.shape)[0]
    if b.ndim == 1:  # (NumPy 2: a vector only when 1-D)
        if b.shape[0] != n:
            raise ValueError(f"solve: b has {b.shape[0]} rows for a matrix of size {n}")
        return _matrix_aval(a.shape[:-1], a, b)
    if b.ndim == 0 or b.shape[-2] != n:
        raise ValueError(f"solve: b of shape {b.shape} does not fit a matrix of size {n}")
    return _matrix_aval(_stack(a, b) + b.shape[-2:], a, b)


solve_p.abstract_eval = _solve_abstract_eval

# ---------------------------------------------------------------------------------------------
# Triangular solve op(A) x = b, op(A) = A or A.T, reading one triangle of A (unit diagonal
# optionally). The impl is blocked forward substitution: each diagonal block is solved by
# LAPACK's LU solve turned upper triangular (which factors with no row exchange: this is
# back substitution), the rest are matrix products; O(n^2 k) for k right-hand sides.

_TRIANGULAR_BLOCK = 64


def _solve_lower_block(lower, b):
    return np.linalg.solve(lower[..., ::-1, ::-1], b[..., ::-1, :])[..., ::-1, :]


def _triangular_solve_impl(a, b, *, lower, trans, unit_diagonal):
    a = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        i = np.arange(a.shape[-1])
        a[..., i, i] = 1
    if trans:
        a, lower = np.swapaxes(a, -1, -2), not lower
    if not lower:  # reversing rows and columns makes it lower triangular
        return _triangular_solve_impl(
            a[..., ::-1, ::-1], b[..., ::-1, :], lower=True, trans=False, unit_diagonal=False
        )[..., ::-1, :]
    n = a.shape[-1]
    if n <= _TRIANGULAR_BLOCK:
        return _solve_lower_block(a, b)
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = np.empty(lead + b.shape[-2:], linalg_dtype(a.dtype, b.dtype))  # (the small case's dtype)
    for start in range(0, n, _TRIANGULAR_BLOCK):
        stop = min(start + _TRIANGULAR_BLOCK, n)
        rhs = b[..., start:stop, :]
        if start:
            rhs = rhs - a[..., start:stop, :start] @ x[..., :start, :]
        x[..., start:stop, :] = _solve_lower_block(a[..., start:stop, start:stop], rhs)
    return x


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.sparsity = dense_blocks(solve_cores)
triangular_solve_p.impl = _triangular_solve_impl


def _triangular_solve_jvp(primals, tangents, *, out, lower, trans, unit_diagonal):
    (a, _), (da, db) = primals, tangents
    t = db
    if da is not None:
        da = _triangle(da, lower, strict=unit_diagonal)
        da_x = (_mT(da) if trans else da) @ out
        t = -da_x if t is None else t - da_x
    if t is None:
        return None
    return tangent_in_dtype_of(
        triangular_solve(a, t, lower=lower, trans=trans, unit_diagonal=unit_diagonal), out
    )


def _triangular_solve_vjp(g, a, b, *, out, needs, lower, trans, unit_diagonal):
    gb = triangular_solve(a, g, lower=lower, trans=not trans, unit_diagonal=unit_diagonal)
    ga = None
    if needs[0]:
        ga = _triangle(-(out @ _mT(gb)) if trans else -(gb @ _mT(out)), lower, unit_diagonal)
    return cotangent_of(ga, a), cotangent_of(gb, b) if needs[1] else None


triangular_solve_p.jvp = _triangular_solve_jvp
triangular_solve_p.vjp = _triangular_solve_vjp
triangular_solve_p.vjp_takes_needs = True
triangular_solve_p.batch = _broadcast_batch(triangular_solve_p)


def _triangular_solve_abstract_eval(a, b, **params):
    n = _matrix_dims(a.shape)[0]
    if b.ndim < 2 or b.shape[-2] != n:
        raise ValueError(
            f"triangular solve: b of shape {b.shape} does not fit a matrix of size {n}"
        )
    return _matrix_aval(_stack(a, b) + b.shape[-2:], a, b)


triangular_solve_p.abstract_eval = _triangular_solve_abstract_eval


def triangular_solve(a, b, *, lower: bool, trans: bool = False, unit_diagonal: bool = False):
    """`x` with `op(a) @ x = b` (`op(a)` is `a` or, with `trans`, `a.T`), reading the lower or
    upper triangle of `a` only (and taking its diagonal as ones with `unit_diagonal`); `b` is
    a stack of matrices. Differentiable in `a` (its triangle) and `b`.

    Example:
        >>> import numpy as np
        >>> a = np.array([[2.0, 9.0], [1.0, 1.0]])  # (9 is above the diagonal: not read)
        >>> triangular_solve(a, np.array([[2.0], [3.0]]), lower=True)
        array([[1.],
               [2.]])
    """
    return bind(triangular_solve_p, a, b, lower=lower, trans=trans, unit_diagonal=unit_diagonal)
