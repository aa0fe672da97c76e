"""Linear algebra primitives: inv, solve, triangular solve, adjugate, det, slogdet, cholesky, eigh,
svd, eig, qr, pinv, lstsq and expm, with their rules, and the `numpy.linalg` functions that bind
them.

Every primitive acts on the last two axes and maps over the leading ("stack") axes, with
NumPy's broadcasting between operands, exactly as `numpy.linalg` does; impls are NumPy
(`numpy.linalg` itself where NumPy has the function), so values equal NumPy's, and so do
result dtypes (`linalg_dtype`; `eig` is always complex). The composites built on them (norm,
matrix_power, cond, ...) are in `autodiff/numpy/linalg.py`, SciPy's functions
(solve_triangular, cho_solve, expm, ...) in `autodiff/scipy/linalg.py`; products (matmul,
einsum, ...) in `products.py`.

Derivative rules are the standard ones (Giles 2008, "Collected matrix derivative
results"; Murray 2016 for Cholesky; Townsend 2016 for the SVD; Walter and Lehmann 2018
for QR) written with autodiff ops, so they differentiate again and batch. Complex values
follow the JAX convention: each vjp is the plain transpose of its jvp, under the pairing
`Re sum(g * t)`. Conventions:

- `eigh` (and `svd(hermitian=True)`) differentiate what NumPy computes: LAPACK reads one
  triangle and the real part of the diagonal, so the other triangle gets a zero gradient
  (JAX symmetrizes instead). `cholesky` reads one triangle too, but its derivative treats
  the input as symmetric: a perturbation `dA` acts through `(dA + dA.T) / 2`, and gradients
  are symmetric (as in JAX and PyTorch); for a symmetric function of parameters (a kernel
  matrix, `X @ X.T`) either is exactly the chain rule.
- `eigh`, `svd` and `eig` derivatives need distinct eigenvalues / singular values: the terms
  `1 / (w_j - w_i)` are infinite at a degeneracy (functions invariant under rotations
  of the degenerate subspace, such as `sum(eigvalsh(a))`, are fine through `eigvalsh`;
  `eig`'s derivatives are NaN at an eigenvalue repeated exactly). Rectangular `svd` also
  needs nonzero singular values; `pinv` and `lstsq` need a locally constant rank.
- Singular vectors and the eigenvectors of `eigh` are defined up to a sign (a phase, for
  complex matrices) each: real ones follow LAPACK's signs, which are locally constant;
  complex ones get the derivative with no phase change, meaningful for phase-invariant
  functions. `eig`'s eigenvectors are differentiated through LAPACK's normalization (unit
  norm, largest entry real), so their derivative is that of NumPy's.
- `det`'s first and second derivatives (the adjugate and its derivative, from an SVD that
  inverts nothing) are exact at every matrix, singular ones included; the third and higher
  differentiate the SVD, so need a rank of n - 1 at least. `slogdet`'s derivative is infinite
  or NaN at a singular matrix, where log|det| is -inf, as JAX's.
- Derivatives of `cholesky`, `qr`, `slogdet`, `pinv` and `lstsq` are for real inputs; complex
  inputs get values but a NotImplementedError when differentiated. `inv`, `solve`, `det`,
  the triangular solve and `expm` are holomorphic; `eigh`, `svd` and `eig` take complex
  inputs.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from autodiff.core.abstract import ShapedArray, aval_of, result_aval
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.ops import elementwise as _ew
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape
from autodiff.ops.cumulative import cumprod
from autodiff.ops.elementwise import cotangent_of, stop_gradient, where
from autodiff.ops.products import _array, add_terms, einsum, tangent_in_dtype_of
from autodiff.ops.structural import align_for_broadcast, broadcast_to, move_to_front, shape_of

LinAlgError = np.linalg.LinAlgError

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])

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


inv_p = Primitive("inv")
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
triangular_solve_p.impl = _triangular_solve_impl


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

# ---------------------------------------------------------------------------------------------
# adjugate, det and slogdet. The adjugate adj(A) = det(A) A^-1 is polynomial in A, so it, and
# the derivative of det it gives (d det = tr(adj(A) dA)), exist at singular matrices too. There
# (and near them, where det(A) A^-1 loses its digits) it is computed from the SVD
# A = U diag(s) Vh, which inverts nothing:
#   adj(A) = det(U) det(Vh) Vh^H diag(p) U^H,   p_i = prod_{k != i} s_k,
# and in that basis its derivative is polynomial in s as well: with dP = U^H dA Vh^H and
# Q_ij = prod_{k != i, j} s_k off the diagonal, Q_ii = 0,
#   d adj = det(U) det(Vh) Vh^H (diag(Q diag(dP)) - Q * dP) U^H.


def _mH(x):
    """Conjugate transpose of the last two axes."""
    return _ew.conj_complex(_mT(x))


def _products_but_one(x):
    """`p[..., i]`: the product of the `x[..., k]` for k != i, by no division (zeros welcome)."""
    ones = np.ones(shape_of(x)[:-1] + (1,), dtype_of(x))
    before = cumprod(_shape.concatenate([ones, x], -1), -1)[..., :-1]
    after = cumprod(_shape.concatenate([ones, _shape.flip(x, -1)], -1), -1)[..., :-1]
    return before * _shape.flip(after, -1)


def _adjugate_from_svd(u, s, vh):
    turn = det(u) * det(vh)  # (1 or -1 for real matrices)
    return _cols(_cols(turn)) * (_mH(vh) * _rows(_products_but_one(s))) @ _mH(u)


def _adjugate_derivative(a, x, transpose: bool):
    """The derivative of the adjugate at `a` along `x` (with `transpose`, its transpose applied
    to the cotangent `x`): `turn A M(B x A) B`, `M` the map of dP above (its own transpose)."""
    u, s, vh = _svd_uv(a, False)
    outer, inner = (_ew.conj_complex(u), _ew.conj_complex(vh)) if transpose else (_mH(vh), _mH(u))
    off = ~np.eye(shape_of(s)[-1], dtype=bool)
    q = where(off, _products_but_one(where(off, _rows(s), 1.0)), 0.0)
    y = inner @ x @ outer
    m = _diag_embed(einsum("...ij,...j->...i", q, _diagonal(y))) - q * y
    return _cols(_cols(det(u) * det(vh))) * (outer @ m @ inner)


def _adjugate_impl(a):
    """det(a) inv(a) by LU where `a` is well conditioned (its digits kept, and the faster
    way), from the SVD at the other matrices of the stack."""
    try:
        inv = np.linalg.inv(a)
    except LinAlgError:  # (a singular matrix in the stack: NaNs there)
        inv = _inv_impl(a, nan_if_singular=True)
    norm_1 = lambda m: np.abs(m).sum(-2).max(-1, initial=0.0)  # noqa: E731
    with np.errstate(invalid="ignore", over="ignore"):
        conditioned = norm_1(a) * norm_1(inv) < 1 / math.sqrt(np.finfo(inv.dtype).eps)
    out = np.linalg.det(a)[..., None, None] * inv
    if not np.all(conditioned):
        out[~conditioned] = _adjugate_from_svd(*np.linalg.svd(a[~conditioned]))
    return out


adjugate_p = Primitive("adjugate")
adjugate_p.impl = _adjugate_impl
adjugate_p.jvp = lambda primals, tangents, *, out: (
    None
    if tangents[0] is None
    else tangent_in_dtype_of(_adjugate_derivative(primals[0], tangents[0], False), out)
)
adjugate_p.vjp = lambda g, a, *, out: (cotangent_of(_adjugate_derivative(a, g, True), a),)
adjugate_p.abstract_eval = _square_abstract_eval
adjugate_p.batch = _leading_batch(adjugate_p)


def adjugate(a):
    """The adjugate (classical adjoint) `det(a) inv(a)` of (a stack of) square matrices, at
    singular matrices too: the transpose of the cofactor matrix, the gradient of `det`.

    Example:
        >>> import numpy as np
        >>> adjugate(np.array([[1.0, 2.0], [2.0, 4.0]]))  # (singular: no inverse)
        array([[ 4., -2.],
               [-2.,  1.]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(adjugate_p, a)


def det(a):
    """`numpy.linalg.det`, differentiable at every matrix, singular ones included: its gradient
    is the transposed adjugate (`det(a) inv(a).T` where `a` is invertible), its second
    derivatives the signed minors of order n - 2, exact at any rank. (Third and higher
    derivatives differentiate the SVD: they need distinct singular values, so a rank of n - 1
    at least.)

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(det)(np.array([[2.0, 1.0], [1.0, 3.0]]))
        array([[ 3., -1.],
               [-1.,  2.]])
        >>> ad.grad(det)(np.array([[1.0, 2.0], [2.0, 4.0]]))  # (singular)
        array([[ 4., -2.],
               [-2.,  1.]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(det_p, a)


def _det_tangent(a, da):
    """d det(a) along da: tr(adj(a) da)."""
    return einsum("...ij,...ji->...", adjugate(a), da)


det_p = Primitive("det")
det_p.impl = np.linalg.det
det_p.jvp = lambda primals, tangents, *, out: (
    None if tangents[0] is None else _det_tangent(primals[0], tangents[0])
)
det_p.vjp = lambda g, a, *, out: (_cols(_cols(g)) * _mT(adjugate(a)),)
det_p.batch = _leading_batch(det_p)


def _det_abstract_eval(a):
    _matrix_dims(a.shape)
    return _matrix_aval(a.shape[:-2], a)


det_p.abstract_eval = _det_abstract_eval

# slogdet: d log|det| = d det / det, infinite (or NaN) at a singular matrix, where log|det| is
# -inf, as JAX's: the adjugate's entries divided by zero.
slogdet_p = Primitive("slogdet", multiple_results=True)
slogdet_p.impl = lambda a: tuple(np.linalg.slogdet(a))


def _slogdet_jvp(primals, tangents, *, out):
    (a,), (da,) = primals, tangents
    if da is None:
        return None, None
    _real_only("slogdet", a)
    sign, logabsdet = out
    return None, _det_tangent(a, da) / (sign * _ew.exp(logabsdet))


def _slogdet_vjp(g, a, *, out):
    _real_only("slogdet", a)
    g_logdet = g[1]
    if g_logdet is None:
        return (None,)
    sign, logabsdet = out
    return (_cols(_cols(g_logdet / (sign * _ew.exp(logabsdet)))) * _mT(adjugate(a)),)


slogdet_p.jvp = _slogdet_jvp
slogdet_p.vjp = _slogdet_vjp
slogdet_p.batch = _leading_batch(slogdet_p)


def _slogdet_abstract_eval(a):
    _matrix_dims(a.shape)
    return _matrix_aval(a.shape[:-2], a), _matrix_aval(a.shape[:-2], a, real=True)


slogdet_p.abstract_eval = _slogdet_abstract_eval

# ---------------------------------------------------------------------------------------------
# cholesky (lower): dL = L Phi(L^-1 dA L^-T), Phi = lower triangle with half the diagonal
# (Murray 2016); the gradient is sym(L^-T Phi(L^T gL) L^-1).


def _phi(x):
    """The lower triangle of `x` with half its diagonal."""
    n = shape_of(x)[-1]
    return x * (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(dtype_of(x))


def _cholesky_jvp(primals, tangents, *, out):
    (a,), (da,) = primals, tangents
    if da is None:
        return None
    _real_only("cholesky", a)
    w = triangular_solve(out, _sym(da), lower=True)  # L^-1 dA
    z = _mT(triangular_solve(out, _mT(w), lower=True))  # L^-1 dA L^-T
    return out @ _phi(z)


def _cholesky_vjp(g, a, *, out):
    _real_only("cholesky", a)
    p = _phi(_mT(out) @ g)
    y = triangular_solve(out, p, lower=True, trans=True)  # L^-T P
    s_t = triangular_solve(out, _mT(y), lower=True, trans=True)  # (L^-T P L^-1)^T
    return (_sym(s_t),)


cholesky_p = Primitive("cholesky")
cholesky_p.impl = np.linalg.cholesky
cholesky_p.jvp = _cholesky_jvp
cholesky_p.vjp = _cholesky_vjp
cholesky_p.abstract_eval = _square_abstract_eval
cholesky_p.batch = _leading_batch(cholesky_p)

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


# ---------------------------------------------------------------------------------------------
# eigh of H = R(A): with M = V^H dH V, dw = Re diag(M), dV = V (F * M), F_ij = 1 / (w_j - w_i)
# (real). For complex H each eigenvector is defined up to a phase only: this dV is the one with
# Im diag(V^H dV) = 0, so functions invariant under those phases (|V|, V diag(f(w)) V^H, ...)
# have exact derivatives, not the phases LAPACK picks. The vjp is the transpose: with
# K = diag(gw) + F * (V^T gV), gA = R^T(conj(V) K V^T).
# `vectors=False` is eigvalsh (its own LAPACK call); its rules compute the vectors.

eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.impl = lambda a, *, UPLO, vectors: (
    tuple(np.linalg.eigh(a, UPLO)) if vectors else (np.linalg.eigvalsh(a, UPLO),)
)


def _eigh_jvp(primals, tangents, *, out, UPLO, vectors):
    (a,), (da,) = primals, tangents
    if da is None:
        return (None,) * len(out)
    dh = _read_triangle(da, UPLO == "L")
    if not vectors:
        _, v = bind(eigh_p, a, UPLO=UPLO, vectors=True)
        return (_ew.real(einsum("...ji,...jk,...ki->...i", _ew.conj_complex(v), dh, v)),)
    w, v = out
    m = _mH(v) @ dh @ v
    return _ew.real(_diagonal(m)), tangent_in_dtype_of(v @ (_inverse_gaps(w) * m), v)


def _eigh_vjp(g, a, *, out, UPLO, vectors):
    if not vectors:
        _, v = bind(eigh_p, a, UPLO=UPLO, vectors=True)
        gw, gv = g[0], None
    else:
        (w, v), (gw, gv) = out, g
    if gw is None and gv is None:
        return (None,)
    k = None if gw is None else _diag_embed(gw)
    if gv is not None:
        k = add_terms(k, _inverse_gaps(w) * (_mT(v) @ gv))
    ga = _read_triangle_transpose(_ew.conj_complex(v) @ k @ _mT(v), UPLO == "L")
    return (cotangent_of(ga, a),)


eigh_p.jvp = _eigh_jvp
eigh_p.vjp = _eigh_vjp
eigh_p.batch = _leading_batch(eigh_p)


def _eigh_abstract_eval(a, *, UPLO, vectors):
    _matrix_dims(a.shape)
    w = _matrix_aval(a.shape[:-1], a, real=True)
    return (w, _matrix_aval(a.shape, a)) if vectors else (w,)


eigh_p.abstract_eval = _eigh_abstract_eval

# ---------------------------------------------------------------------------------------------
# svd, reduced (k = min(m, n)): with P = U^H dA V, F_ij = 1 / (s_j^2 - s_i^2) (0 on the diagonal)
# and S = diag(s),
#   ds = Re diag(P),  dU = U (F * (P S + S P^H) + i Im diag(P) / S) [+ (I - U U^H) dA V / S, m > n],
#   dV = V (F * (S P + P^H S)) [+ (I - V V^H) dA^H U / S if n > m],  dVh = dV^H
# (Townsend 2016; the phase term is for complex A, whose singular vectors are defined up to a
# common phase per pair: this is the choice with Im diag(V^H dV) = 0, as JAX's, so functions
# invariant under those phases have exact derivatives). The vjp is its transpose.
#
# full_matrices=True with m != n: U (or Vh) has m - n (n - m) extra columns (rows), an arbitrary
# orthonormal basis of the complement. Their derivative is that of the basis moved as little as
# possible (parallel transport: dU2 = -U1 dU1^H U2, so U2^H dU2 = 0): functions of the extra
# columns that do not depend on the basis chosen (U2 U2^H, |U2^H x|^2) have exact derivatives.
# `compute_uv=False` is its own LAPACK call; its rules compute U and V. `hermitian=True` reads one
# triangle (it is eigh): its rules apply to R(dA).

svd_p = Primitive("svd", multiple_results=True)


def _svd_impl(a, *, full_matrices, compute_uv, hermitian):
    if compute_uv:
        return tuple(np.linalg.svd(a, full_matrices, True, hermitian))
    return (np.linalg.svd(a, compute_uv=False, hermitian=hermitian),)


def _svd_uv(a, hermitian):
    return bind(svd_p, a, full_matrices=False, compute_uv=True, hermitian=hermitian)


def _is_complex(x) -> bool:
    return np.issubdtype(dtype_of(x), np.complexfloating)


def _reciprocal_or_zero(s):
    """1 / s, and 0 where s == 0 (the phase term at a zero singular value, as JAX's)."""
    zero = s == 0
    return where(zero, 0.0, 1.0 / where(zero, 1.0, s))


def _svd_reduced_jvp(u, s, vh, da):
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    v = _mH(vh)
    p = _mH(u) @ da @ v
    s_row, s_col = _rows(s), _cols(s)
    f = _inverse_gaps(s * s)
    ps, sp = p * s_row, s_col * p
    du = u @ (f * (ps + _mH(ps)))
    if _is_complex(p):
        du = du + u * _rows(1j * _ew.imag(_diagonal(p)) * _reciprocal_or_zero(s))
    dv = v @ (f * (sp + _mH(sp)))
    if m > n:
        da_v = da @ v
        du = du + (da_v - u @ (_mH(u) @ da_v)) / s_row
    if n > m:
        da_u = _mH(da) @ u
        dv = dv + (da_u - v @ (vh @ da_u)) / s_row
    return tangent_in_dtype_of(du, u), _ew.real(_diagonal(p)), tangent_in_dtype_of(_mH(dv), vh)


def _svd_reduced_vjp(u, s, vh, gu, gs, gvh):
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    u_conj, vh_conj = _ew.conj_complex(u), _ew.conj_complex(vh)
    s_row, s_col = _rows(s), _cols(s)
    f = _inverse_gaps(s * s)
    inner = None if gs is None else _diag_embed(gs)
    if gu is not None:
        ut_gu = _mT(u) @ gu
        b = f * ut_gu
        inner = add_terms(inner, (b + _mH(b)) * s_row)
        if _is_complex(ut_gu):
            phase = 1j * _ew.imag(_diagonal(ut_gu)) * _reciprocal_or_zero(s)
            inner = add_terms(inner, _diag_embed(phase))
    if gvh is not None:
        c = f * (vh_conj @ _mH(gvh))
        inner = add_terms(inner, s_col * (c + _mH(c)))
    ga = None if inner is None else u_conj @ inner @ vh_conj
    if m > n and gu is not None:
        ga = add_terms(ga, ((gu - u_conj @ (_mT(u) @ gu)) / s_row) @ vh_conj)
    if n > m and gvh is not None:
        ga = add_terms(ga, (u_conj / s_row) @ (gvh - (gvh @ _mT(vh)) @ vh_conj))
    return ga


def _svd_jvp(primals, tangents, *, out, full_matrices, compute_uv, hermitian):
    (a,), (da,) = primals, tangents
    if da is None:
        return (None,) * len(out)
    if hermitian:
        da = _read_triangle(da, True)
    if not compute_uv:
        u, _, vh = _svd_uv(a, hermitian)
        ds = einsum("...ji,...jk,...ik->...i", _ew.conj_complex(u), da, _ew.conj_complex(vh))
        return (_ew.real(ds),)
    u, s, vh = out
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    if not full_matrices or m == n:
        return _svd_reduced_jvp(u, s, vh, da)
    u1, vh1 = u[..., :k], vh[..., :k, :]
    du1, ds, dvh1 = _svd_reduced_jvp(u1, s, vh1, da)
    if m > n:
        du2 = -(u1 @ (_mH(du1) @ u[..., k:]))
        return _shape.concatenate([du1, du2], axis=-1), ds, dvh1
    dvh2 = -((vh[..., k:, :] @ _mH(dvh1)) @ vh1)
    return du1, ds, _shape.concatenate([dvh1, dvh2], axis=-2)


def _svd_vjp(g, a, *, out, full_matrices, compute_uv, hermitian):
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    if compute_uv:
        (u, s, vh), (gu, gs, gvh) = out, g
    else:
        (u, s, vh), gs, gu, gvh = _svd_uv(a, hermitian), g[0], None, None
    u1, vh1 = u[..., :k], vh[..., :k, :]
    if gu is None and gvh is None:  # singular values only: U diag(gs) Vh, conjugated
        ga = None if gs is None else (_ew.conj_complex(u1) * _rows(gs)) @ _ew.conj_complex(vh1)
    else:
        if full_matrices and m > n and gu is not None:
            u2, gu2 = u[..., k:], gu[..., k:]
            gu = gu[..., :k] - _ew.conj_complex(u2) @ _mH(gu2) @ _ew.conj_complex(u1)
        if full_matrices and n > m and gvh is not None:
            vh2, gvh2 = vh[..., k:, :], gvh[..., k:, :]
            gvh = gvh[..., :k, :] - _ew.conj_complex(vh1) @ _mH(gvh2) @ _ew.conj_complex(vh2)
        ga = _svd_reduced_vjp(u1, s, vh1, gu, gs, gvh)
    if ga is not None and hermitian:
        ga = _read_triangle_transpose(ga, True)
    return (cotangent_of(ga, a),)


svd_p.impl = _svd_impl
svd_p.jvp = _svd_jvp
svd_p.vjp = _svd_vjp
svd_p.batch = _leading_batch(svd_p)


def _svd_abstract_eval(a, *, full_matrices, compute_uv, hermitian):
    m, n = _matrix_dims(a.shape, square=hermitian)
    k, stack = min(m, n), a.shape[:-2]
    s = _matrix_aval(stack + (k,), a, real=True)
    if not compute_uv:
        return (s,)
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    return _matrix_aval(stack + (m, u_cols), a), s, _matrix_aval(stack + (vh_rows, n), a)


svd_p.abstract_eval = _svd_abstract_eval

# ---------------------------------------------------------------------------------------------
# eig (general square matrices): eigenvalues w and unit eigenvectors V, always complex (NumPy
# returns real arrays when every eigenvalue of a real matrix is real: a dtype that depends on
# the values, which a staged or batched function cannot have). With P = V^-1 dA V and
# F_ij = 1 / (w_j - w_i) (0 on the diagonal):
#   dw = diag(P),  dV = U + V diag(c),  U = V (F * P),
# where c fixes what the eigenvalue equation leaves free as LAPACK's geev does: each v_j has
# unit norm and its largest entry (index k_j) real, so
#   c_j = -Re(v_j^H u_j) - i Im(u_{k_j j}) / v_{k_j j}
# (as JAX's eig; Giles 2008 for the rest). This is the derivative of the eigenvectors NumPy
# returns, away from ties in |v_j|. The vjp is its transpose. At an eigenvalue repeated exactly
# the derivative does not exist: the eigenvalue's derivative is NaN, and so are the eigenvectors'
# (1 / 0 in F). Near a repetition derivatives are large, as they are.

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])

eig_p = Primitive("eig", multiple_results=True)


def _complex_dtype(dtype) -> np.dtype:
    return np.result_type(linalg_dtype(dtype), np.complex64)


def _eig_impl(a, *, vectors):
    dtype = _complex_dtype(np.asarray(a).dtype)
    if not vectors:
        return (np.linalg.eigvals(a).astype(dtype, copy=False),)
    w, v = np.linalg.eig(a)
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


def _repeated(w):
    """True where an eigenvalue equals another one exactly."""
    off = ~np.eye(shape_of(w)[-1], dtype=bool)
    return _reduce.any(_ew.FUNCTIONS["logical_and"](_cols(w) == _rows(w), off), axis=-1)


def _nan_like(x):
    """NaNs of `x`'s shape and dtype, a constant (no derivative to turn NaN in its turn)."""
    return stop_gradient(x) * np.nan


def _largest_entries(v):
    """The mask of the entry of largest modulus of each column (the first of ties, as geev's)."""
    n = shape_of(v)[-2]
    k = _reduce.argmax(_abs2(v), axis=-2, keepdims=True)
    return k == np.arange(n)[:, None]


def _eig_jvp(primals, tangents, *, out, vectors):
    (a,), (da,) = primals, tangents
    if da is None:
        return (None,) * len(out)
    w, v = out if vectors else bind(eig_p, a, vectors=True)
    da = tangent_in_dtype_of(da, w)
    if not vectors:
        dw = einsum("...ij,...ji->...i", solve(v, da), v)
        return (where(_repeated(w), _nan_like(dw), dw),)
    p = solve(v, da @ v)
    dw = _diagonal(p)
    dw = where(_repeated(w), _nan_like(dw), dw)
    u = v @ (_inverse_gaps(w) * p)
    mask = _largest_entries(v)
    norm_term = _ew.real(_reduce.sum(_ew.conj(v) * u, axis=-2))
    v_k = _ew.real(_reduce.sum(where(mask, v, 0.0), axis=-2))
    phase_term = _ew.imag(_reduce.sum(where(mask, u, 0.0), axis=-2)) / v_k
    return dw, u - v * _rows(norm_term + 1j * phase_term)


def _eig_vjp(g, a, *, out, vectors):
    (w, v), (gw, gv) = (out, g) if vectors else (bind(eig_p, a, vectors=True), (g[0], None))
    if gw is None and gv is None:
        return (None,)
    gp = None
    if gw is not None:  # NaN at a repeated eigenvalue whose derivative is asked for
        asked = _ew.FUNCTIONS["logical_and"](_repeated(w), gw != 0)
        gp = _diag_embed(where(asked, _nan_like(gw), gw))
    if gv is not None:
        t = _reduce.sum(gv * v, axis=-2)
        mask = _largest_entries(v)
        v_k = _ew.real(_reduce.sum(where(mask, v, 0.0), axis=-2))
        gu = gv - _ew.conj(v) * _rows(_ew.real(t)) - 1j * where(mask, _rows(_ew.imag(t) / v_k), 0.0)
        gp = add_terms(gp, _inverse_gaps(w) * (_mT(v) @ gu))
    ga = solve(_mT(v), gp @ _mT(v))
    return (cotangent_of(ga if _is_complex(a) else _ew.real(ga), a),)


eig_p.impl = _eig_impl
eig_p.jvp = _eig_jvp
eig_p.vjp = _eig_vjp
eig_p.batch = _leading_batch(eig_p)


def _eig_abstract_eval(a, *, vectors):
    _matrix_dims(a.shape)
    dtype = _complex_dtype(a.dtype)
    w = result_aval(a.shape[:-1], dtype, a)
    return (w, result_aval(a.shape, dtype, a)) if vectors else (w,)


eig_p.abstract_eval = _eig_abstract_eval

# ---------------------------------------------------------------------------------------------
# qr (reduced). For m >= n, with B = dA R^-1, C = Q^T B and W = tril(C, -1) - tril(C, -1)^T
# (skew): dQ = B - Q (C - W), dR = (C - W) R. For m < n, A = [X | Y] with X square:
# X = Q R_X as above and R = [R_X | Q^T Y].

qr_p = Primitive("qr", multiple_results=True)
qr_p.impl = lambda a, *, complete: tuple(np.linalg.qr(a, "complete" if complete else "reduced"))


def _check_qr_derivative(a, complete: bool) -> tuple:
    _real_only("qr", a)
    m, n = shape_of(a)[-2:]
    if complete and m > n:
        raise NotImplementedError(
            "The derivative of qr with mode='complete' is only defined when m <= n (the extra "
            "columns of Q are not unique): use mode='reduced'"
        )
    return m, n


def _qr_tall_jvp(q, r, da):
    b = _mT(triangular_solve(r, _mT(da), lower=False, trans=True))  # dA R^-1
    c = _mT(q) @ b
    low = _triangle(c, lower=True, strict=True)
    c_w = c - (low - _mT(low))
    return b - q @ c_w, c_w @ r


def _qr_tall_vjp(q, r, gq, gr):
    qt_gq = _mT(q) @ gq
    gr_rt = gr @ _mT(r)
    m = qt_gq - gr_rt
    gc = gr_rt + _triangle(m - _mT(m), lower=True, strict=True)
    gb = gq + q @ (gc - qt_gq)
    return _mT(triangular_solve(r, _mT(gb), lower=False))  # gB R^-T


def _qr_jvp(primals, tangents, *, out, complete):
    (a,), (da,) = primals, tangents
    if da is None:
        return None, None
    m, n = _check_qr_derivative(a, complete)
    q, r = out
    if m >= n:
        return _qr_tall_jvp(q, r, da)
    dq, dr_x = _qr_tall_jvp(q, r[..., :, :m], da[..., :, :m])
    dr_y = _mT(dq) @ a[..., :, m:] + _mT(q) @ da[..., :, m:]
    return dq, _shape.concatenate([dr_x, dr_y], axis=-1)


def _qr_vjp(g, a, *, out, complete):
    m, n = _check_qr_derivative(a, complete)
    q, r = out
    gq, gr = (np.zeros(shape_of(o), dtype_of(o)) if c is None else c for c, o in zip(g, out))
    if m >= n:
        return (_qr_tall_vjp(q, r, gq, gr),)
    gr_y = gr[..., :, m:]
    gx = _qr_tall_vjp(q, r[..., :, :m], gq + a[..., :, m:] @ _mT(gr_y), gr[..., :, :m])
    return (_shape.concatenate([gx, q @ gr_y], axis=-1),)


qr_p.jvp = _qr_jvp
qr_p.vjp = _qr_vjp
qr_p.batch = _leading_batch(qr_p)


def _qr_abstract_eval(a, *, complete):
    m, n = _matrix_dims(a.shape, square=False)
    k = m if complete else min(m, n)
    return _matrix_aval(a.shape[:-2] + (m, k), a), _matrix_aval(a.shape[:-2] + (k, n), a)


qr_p.abstract_eval = _qr_abstract_eval

# ---------------------------------------------------------------------------------------------
# pinv (P = A^+, locally constant rank; Golub and Pereyra 1973):
#   dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P.

pinv_p = Primitive("pinv")
pinv_p.impl = lambda a, *, rcond, hermitian: np.linalg.pinv(a, rcond, hermitian)


def _pinv_jvp(primals, tangents, *, out, rcond, hermitian):
    (a,), (da,) = primals, tangents
    if da is None:
        return None
    _real_only("pinv", a)
    p, da_t = out, _mT(da)
    return (
        -(p @ da @ p)
        + (p @ _mT(p)) @ (da_t - (da_t @ a) @ p)
        + (da_t - p @ (a @ da_t)) @ (_mT(p) @ p)
    )


def _pinv_vjp(g, a, *, out, rcond, hermitian):
    _real_only("pinv", a)
    p, g_t = out, _mT(g)
    return (
        -(_mT(p) @ g @ _mT(p))
        + (g_t - a @ (p @ g_t)) @ (p @ _mT(p))
        + (_mT(p) @ p) @ (g_t - (g_t @ p) @ a),
    )


pinv_p.jvp = _pinv_jvp
pinv_p.vjp = _pinv_vjp
pinv_p.batch = _leading_batch(pinv_p)


def _pinv_abstract_eval(a, *, rcond, hermitian):
    m, n = _matrix_dims(a.shape, square=False)
    shape = a.shape[:-2] + (n, m)
    if m * n == 0:  # NumPy returns an empty array of the input's dtype, computing nothing
        return result_aval(shape, a.dtype, a)
    if hermitian:
        _matrix_dims(a.shape)
    return _matrix_aval(shape, a)


pinv_p.abstract_eval = _pinv_abstract_eval

# ---------------------------------------------------------------------------------------------
# lstsq: x = A^+ b (LAPACK gelsd), with A's singular values s and the rank. The impl maps
# numpy.linalg.lstsq (2-D only) over broadcast stacks. dx = dP b + P db (dP as for pinv);
# s differentiates as svd's singular values; the rank is a constant.


def _lstsq_impl(a, b, *, rcond):
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if math.prod(lead) == 0:  # an empty stack (e.g. a size-0 vmap): no LAPACK call
        x, s, _ = _lstsq_abstract_eval(aval_of(a), aval_of(b), rcond=rcond)
        return np.empty(x.shape, x.dtype), np.empty(s.shape, s.dtype), np.zeros(lead, np.int32)
    a, b = np.broadcast_to(a, lead + a.shape[-2:]), np.broadcast_to(b, lead + b.shape[-2:])
    results = [np.linalg.lstsq(a[i], b[i], rcond=rcond) for i in np.ndindex(lead)]
    x, s, rank = (np.stack([r[k] for r in results]) for k in (0, 3, 2))
    return (
        x.reshape(lead + x.shape[1:]),
        s.reshape(lead + s.shape[1:]),
        rank.astype(np.int32).reshape(lead)[()],
    )


lstsq_p = Primitive("lstsq", multiple_results=True)
lstsq_p.impl = _lstsq_impl


def _lstsq_jvp(primals, tangents, *, out, rcond):
    (a, b), (da, db) = primals, tangents
    x = out[0]
    _real_only("lstsq", x)
    p = bind(pinv_p, a, rcond=rcond, hermitian=False)
    dx = None if db is None else p @ db
    ds = None
    if da is not None:
        da_t = _mT(da)
        y = da_t @ (_mT(p) @ x)
        dx = add_terms(dx, -(p @ (da @ x)) + (p @ _mT(p)) @ (da_t @ (b - a @ x)) + y - p @ (a @ y))
        u, _, vh = _svd_uv(a, False)
        ds = _diagonal(_mT(u) @ da @ _mT(vh))
    return tangent_in_dtype_of(dx, x), ds, None


def _lstsq_vjp(g, a, b, *, out, needs, rcond):
    (gx, gs, _), x = g, out[0]
    _real_only("lstsq", x)
    ga = gb = None
    if gx is not None:
        p = bind(pinv_p, a, rcond=rcond, hermitian=False)
        pt_gx = _mT(p) @ gx
        gb = pt_gx
        if needs[0]:
            gx_t = _mT(gx)
            ga = (
                -(pt_gx @ _mT(x))
                + (b - a @ x) @ ((gx_t @ p) @ _mT(p))
                + (_mT(p) @ x) @ (gx_t - (gx_t @ p) @ a)
            )
    if gs is not None and needs[0]:
        u, _, vh = _svd_uv(a, False)
        ga = add_terms(ga, (u * _rows(gs)) @ vh)
    return cotangent_of(ga, a), cotangent_of(gb, b) if needs[1] else None


lstsq_p.jvp = _lstsq_jvp
lstsq_p.vjp = _lstsq_vjp
lstsq_p.vjp_takes_needs = True
lstsq_p.batch = _broadcast_batch(lstsq_p)


def _lstsq_abstract_eval(a, b, *, rcond):
    m, n = _matrix_dims(a.shape, square=False)
    if b.ndim == 0 or b.shape[max(b.ndim - 2, 0)] != m:
        raise LinAlgError("Incompatible dimensions")
    stack = _stack(a, b)
    x = _matrix_aval(stack + (n,) + b.shape[-1:] if b.ndim > 1 else stack + (n,), a, b)
    s = _matrix_aval(stack + (min(m, n),), a, b, real=True)
    return x, s, ShapedArray(stack, np.int32)


lstsq_p.abstract_eval = _lstsq_abstract_eval

# ---------------------------------------------------------------------------------------------
# expm: scaling and squaring with Pade approximants (Higham 2005), in double precision. Its
# derivative is the Frechet derivative L(A, E), the top-right block of expm([[A, E], [0, A]]);
# the vjp is L(A^T, G) (Najfeld and Havel 1995; Al-Mohy and Higham 2009).

_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (
        17643225600.0,
        8821612800.0,
        2075673600.0,
        302702400.0,
        30270240.0,
        2162160.0,
        110880.0,
        3960.0,
        90.0,
        1.0,
    ),
    13: (
        64764752532480000.0,
        32382376266240000.0,
        7771770303897600.0,
        1187353796428800.0,
        129060195264000.0,
        10559470521600.0,
        670442572800.0,
        33522128640.0,
        1323241920.0,
        40840800.0,
        960960.0,
        16380.0,
        182.0,
        1.0,
    ),
}
# Largest 1-norm for which the degree-m approximant is accurate to double precision.
_THETA = {
    3: 1.495585217958292e-2,
    5: 2.539398330063230e-1,
    7: 9.504178996162932e-1,
    9: 2.097847961257068e0,
    13: 5.371920351148152e0,
}


def _pade(a, m: int):
    c = _PADE[m]
    eye = np.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    if m == 13:
        a4 = a2 @ a2
        a6 = a4 @ a2
        u = a @ (
            a6 @ (c[13] * a6 + c[11] * a4 + c[9] * a2)
            + c[7] * a6
            + c[5] * a4
            + c[3] * a2
            + c[1] * eye
        )
        v = (
            a6 @ (c[12] * a6 + c[10] * a4 + c[8] * a2)
            + c[6] * a6
            + c[4] * a4
            + c[2] * a2
            + c[0] * eye
        )
    else:
        power, u, v = eye, c[1] * eye, c[0] * eye
        for j in range(1, m // 2 + 1):
            power = power @ a2
            u = u + c[2 * j + 1] * power
            v = v + c[2 * j] * power
        u = a @ u
    return np.linalg.solve(v - u, v + u)


def _expm_matrix(a):
    norm1 = np.abs(a).sum(axis=0).max(initial=0.0)
    if not np.isfinite(norm1):
        return np.full_like(a, np.nan)
    for m in (3, 5, 7, 9):
        if norm1 <= _THETA[m]:
            return _pade(a, m)
    squarings = max(0, int(np.ceil(np.log2(norm1 / _THETA[13]))))
    x = _pade(a / 2.0**squarings, 13)
    for _ in range(squarings):
        x = x @ x
    return x


def _expm_impl(a):
    a = np.asarray(a)
    out_dtype = a.dtype if is_inexact(a.dtype) else np.dtype(np.float64)
    work = a.astype(np.promote_types(out_dtype, np.float64))
    out = np.empty_like(work)
    for i in np.ndindex(work.shape[:-2]):
        out[i] = _expm_matrix(work[i])
    return out.astype(out_dtype, copy=False)


def _frechet_expm(a, e):
    """L(a, e): the derivative of expm at `a` in the direction `e`."""
    n = shape_of(a)[-1]
    lead = np.broadcast_shapes(shape_of(a)[:-2], shape_of(e)[:-2])
    dtype = np.result_type(dtype_of(a), dtype_of(e))
    a = broadcast_to(a, lead + (n, n))
    top = _shape.concatenate([a, broadcast_to(e, lead + (n, n))], axis=-1)
    bottom = _shape.concatenate([np.zeros(lead + (n, n), dtype), a], axis=-1)
    block = bind(expm_p, _shape.concatenate([top, bottom], axis=-2))
    return block[..., :n, n:]


expm_p = Primitive("expm")
expm_p.impl = _expm_impl
expm_p.jvp = lambda primals, tangents, *, out: (
    None
    if tangents[0] is None
    else tangent_in_dtype_of(_frechet_expm(primals[0], tangents[0]), out)
)
expm_p.vjp = lambda g, a, *, out: (cotangent_of(_frechet_expm(_mT(a), g), a),)
expm_p.batch = _leading_batch(expm_p)


def _expm_abstract_eval(a):
    _matrix_dims(a.shape)
    dtype = a.dtype if is_inexact(a.dtype) else np.dtype(np.float64)
    linalg_dtype(np.promote_types(dtype, np.float64))  # (the dtype it computes in: supported?)
    return result_aval(a.shape, dtype, a)


expm_p.abstract_eval = _expm_abstract_eval


# ---------------------------------------------------------------------------------------------
# The numpy.linalg functions of these primitives (the composites are in autodiff/numpy/linalg.py).


def inv(a):
    """`numpy.linalg.inv`, differentiable (stacks of matrices too).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: inv(a).sum())(np.array([[2.0, 0.0], [0.0, 4.0]]))
        array([[-0.25  , -0.125 ],
               [-0.125 , -0.0625]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(inv_p, a)


def solve(a, b):
    """`numpy.linalg.solve`, differentiable in `a` and `b`: `b` is a vector only when 1-D.

    Example:
        >>> import numpy as np
        >>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0]))
        array([1. , 0.5])
    """
    a, b = _array(a), _array(b)
    _check_matrix(a)
    if len(shape_of(b)) == 1:
        return bind(solve_p, a, _cols(b))[..., 0]
    return bind(solve_p, a, b)


def slogdet(a):
    """`numpy.linalg.slogdet`: `(sign, logabsdet)`, differentiable in `logabsdet` (real `a`).

    At a singular matrix (`logabsdet` is -inf) the derivative is infinite, or NaN where the
    adjugate is zero, as JAX's.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: slogdet(a).logabsdet)(np.array([[2.0, 1.0], [1.0, 3.0]]))
        array([[ 0.6, -0.2],
               [-0.2,  0.4]])
    """
    a = _array(a)
    _check_matrix(a)
    return SlogdetResult(*bind(slogdet_p, a))


def cholesky(a, /, *, upper: bool = False):
    """`numpy.linalg.cholesky`: `L` with `a = L @ L.T` (or `U = L.T` with `upper=True`).

    Reads the lower triangle of `a`; derivatives treat `a` as symmetric (a perturbation
    `dA` acts as `(dA + dA.T) / 2`, gradients are symmetric).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: cholesky(a)[1, 1])(np.array([[4.0, 2.0], [2.0, 5.0]]))
        array([[ 0.0625, -0.125 ],
               [-0.125 ,  0.25  ]])
    """
    a = _array(a)
    _check_matrix(a)
    lower = bind(cholesky_p, a)
    if not upper:
        return lower
    upper_factor = _mT(lower)
    return _ew.conj(upper_factor) if np.iscomplexobj(upper_factor) else upper_factor


def eigh(a, UPLO: str = "L"):
    """`numpy.linalg.eigh`: `(eigenvalues, eigenvectors)` of a symmetric (Hermitian) matrix,
    differentiable, real or complex.

    Like NumPy, it reads the lower triangle of `a` (the upper one with `UPLO="U"`) and the real
    part of its diagonal; the derivative is that of what it computes, so the other triangle (and
    the diagonal's imaginary part) gets a zero gradient, and the gradient of a symmetric `a` is
    triangular. (JAX symmetrizes the input, `(a + a^H) / 2`: its values differ from NumPy's for
    a non-symmetric `a`, and its gradients are symmetric. The two agree on every function of a
    matrix built symmetric, such as `x @ x.T`.) Derivatives need distinct eigenvalues: the
    eigenvector derivative has terms `1 / (w_j - w_i)`, infinite (or NaN) at a degeneracy.
    Complex eigenvectors are defined up to a phase each: only functions that do not depend on
    those phases (`abs(v)`, `v @ diag(f(w)) @ v^H`, ...) have meaningful derivatives.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: eigh(a).eigenvalues[1])(np.array([[2.0, 1.0], [1.0, 2.0]]))
        array([[0.5, 0. ],
               [1. , 0.5]])
    """
    a = _array(a)
    _check_matrix(a)
    return EighResult(*bind(eigh_p, a, UPLO=_uplo(UPLO), vectors=True))


def eigvalsh(a, UPLO: str = "L"):
    """`numpy.linalg.eigvalsh`, differentiable: reads one triangle, as `eigh` (whose notes
    apply).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> eigvalsh(a).tolist()
        [1.0, 3.0]
        >>> ad.grad(lambda a: eigvalsh(a, UPLO="U")[-1])(a)  # v v^T, folded into the upper triangle
        array([[0.5, 1. ],
               [0. , 0.5]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(eigh_p, a, UPLO=_uplo(UPLO), vectors=False)[0]


def eig(a):
    """`numpy.linalg.eig`: `(eigenvalues, eigenvectors)` of a general square matrix,
    differentiable (distinct eigenvalues).

    Results are always complex, as JAX's: NumPy returns real arrays when every eigenvalue of a
    real `a` is real, a dtype that depends on the values (take `.real` for those). The
    eigenvectors are NumPy's (unit norm, largest entry real) and so are their derivatives. At
    an eigenvalue repeated exactly the derivatives are NaN (they do not exist there); near one
    they are large.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[2.0, 1.0], [0.0, 3.0]])
        >>> eig(a).eigenvalues
        array([2.+0.j, 3.+0.j])
        >>> ad.grad(lambda a: eig(a).eigenvalues[1].real)(a)  # u v^T / (u^T v), left u, right v
        array([[0., 1.],
               [0., 1.]])
    """
    a = _array(a)
    _check_matrix(a)
    return EigResult(*bind(eig_p, a, vectors=True))


def eigvals(a):
    """`numpy.linalg.eigvals`, differentiable (distinct eigenvalues): always complex, as `eig`
    (whose notes apply).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> eigvals(np.array([[0.0, 1.0], [-1.0, 0.0]]))
        array([0.+1.j, 0.-1.j])
        >>> ad.grad(lambda a: eigvals(a).real.sum())(np.array([[2.0, 1.0], [0.0, 3.0]]))
        array([[1., 0.],
               [0., 1.]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(eig_p, a, vectors=False)[0]


def _uplo(UPLO) -> str:
    UPLO = str(UPLO).upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """`numpy.linalg.svd`: `(U, S, Vh)`, or `S` with `compute_uv=False`; differentiable, real
    or complex.

    Derivatives need distinct singular values (and nonzero ones for non-square `a`). Singular
    vectors are defined up to a sign (a phase, for complex `a`) per pair: real ones follow
    NumPy's, complex ones are meaningful through phase-invariant functions only (`abs(U)`,
    `U @ diag(f(S)) @ Vh`, ...). With `full_matrices=True` (NumPy's default) and a non-square
    `a`, U or Vh has extra columns (rows), an arbitrary basis of the complement: their
    derivative moves that basis as little as possible, which is exact for the functions that
    do not depend on the basis chosen (`U2 @ U2^H`). `hermitian=True` reads the lower triangle
    of `a`, as NumPy (and `eigh`) does.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: svd(a, compute_uv=False)[0])(np.array([[3.0, 0.0], [0.0, 1.0]]))
        array([[1., 0.],
               [0., 0.]])
    """
    a = _array(a)
    _check_matrix(a, square=False)
    out = bind(
        svd_p,
        a,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        hermitian=bool(hermitian),
    )
    return SVDResult(*out) if compute_uv else out[0]


def qr(a, mode: str = "reduced"):
    """`numpy.linalg.qr` for modes "reduced", "complete" and "r", differentiable.

    With mode "complete" and more rows than columns, Q's extra columns are arbitrary:
    values only, a NotImplementedError when differentiated.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: qr(a).R[0, 0])(np.array([[3.0, 1.0], [4.0, 2.0]]))
        array([[-0.6,  0. ],
               [-0.8,  0. ]])
    """
    a = _array(a)
    _check_matrix(a, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"autodiff.numpy.linalg.qr does not support mode={mode!r}")
    q, r = bind(qr_p, a, complete=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


class _NoValue:
    def __repr__(self):
        return "<no value>"


_NO_VALUE = _NoValue()


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=_NO_VALUE):
    """`numpy.linalg.pinv`, differentiable where the rank is locally constant.

    Example:
        >>> import numpy as np
        >>> pinv(np.array([[2.0, 0.0], [0.0, 0.0]]))
        array([[0.5, 0. ],
               [0. , 0. ]])
    """
    a = _array(a)
    m, n = _check_matrix(a, square=False)
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(m, n) * float(np.finfo(dtype_of(a)).eps)
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if np.ndim(rcond) != 0:
        raise NotImplementedError("autodiff.numpy.linalg.pinv supports a scalar rcond only")
    return bind(pinv_p, a, rcond=float(rcond), hermitian=bool(hermitian))


def lstsq(a, b, rcond=None):
    """`numpy.linalg.lstsq`: `(x, residuals, rank, s)`, differentiable in `x`, `residuals`, `s`.

    `x` is differentiable in `a` and `b` where the rank is locally constant. `residuals`
    are computed from `x` as `sum(abs(b - a @ x)**2, axis=0)`, so they equal NumPy's up to
    rounding; inside `vmap` (where the rank is per example) they are returned whenever
    `a` has more rows than columns.

    Example:
        >>> import numpy as np
        >>> x, res, rank, s = lstsq(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
        ...                         np.array([1.0, 2.0, 3.0]))
        >>> x, res, int(rank)
        (array([1., 2.]), array([9.]), 2)
    """
    a, b = _array(a), _array(b)
    vector = len(shape_of(b)) == 1
    if len(shape_of(a)) != 2 or len(shape_of(b)) not in (1, 2):
        raise LinAlgError(
            f"{max(len(shape_of(a)), len(shape_of(b)))}-dimensional array given. Array must be "
            "two-dimensional"
        )
    m, n = shape_of(a)
    if shape_of(b)[0] != m:
        raise LinAlgError("Incompatible dimensions")
    dtype = np.result_type(dtype_of(a), dtype_of(b))
    if rcond is None:
        rcond = float(np.finfo(np.promote_types(dtype, np.float64)).eps) * max(m, n)
    b2 = _shape.reshape(b, (m, 1)) if vector else b
    x, s, rank = bind(lstsq_p, a, b2, rcond=float(rcond))
    rank = stop_gradient(rank)
    real = np.finfo(np.promote_types(dtype, np.float32)).dtype
    concrete_rank = _concrete(rank)
    if m > n and (concrete_rank is None or int(concrete_rank) == n):
        residuals = _reduce.sum(_abs2(b2 - a @ x), axis=0)
    else:
        residuals = np.empty((0,), real)
    if vector:
        x = _shape.reshape(x, (n,))
    return LstsqResult(x, residuals, rank, s)
