"""Matrix decompositions and what is built on them: inv, solve, det, cholesky, eigh, svd, qr, ...

Every function acts on the last two axes and maps over the leading ("stack") axes, with
NumPy's broadcasting between operands, exactly as `numpy.linalg` does. The primitives
are the factorizations and solves (`inv`, `solve`, `det`, `slogdet`, `cholesky`, `eigh`,
`svd`, `qr`, `pinv`, `lstsq`, the triangular solve and `expm`); their impls are NumPy
(`numpy.linalg` itself where NumPy has the function), so values equal NumPy's. `norm`,
`matrix_power`, `cond`, `matrix_rank`, `tensorinv`, `tensorsolve`, `multi_dot` and SciPy's
`cho_solve`, `solve(assume_a=...)` are composites and get every rule for free.

Derivative rules are the standard ones (Giles 2008, "Collected matrix derivative
results"; Murray 2016 for Cholesky; Townsend 2016 for the SVD; Walter and Lehmann 2018
for QR) written with autodiff ops, so they differentiate again and batch. Conventions:

- `cholesky` and `eigh` read one triangle of their input, but their derivatives treat the
  input as symmetric: a perturbation `dA` acts through `(dA + dA.T) / 2`, and gradients
  are symmetric (as in JAX and PyTorch). For a symmetric function of parameters (a
  kernel matrix, `X @ X.T`) this is exactly the chain rule.
- `eigh` and `svd` derivatives need distinct eigenvalues / singular values: the terms
  `1 / (w_j - w_i)` are infinite at a degeneracy (functions invariant under rotations
  of the degenerate subspace, such as `sum(eigvalsh(a))`, are fine through `eigvalsh`).
  Rectangular `svd` also needs nonzero singular values; `pinv` and `lstsq` need a
  locally constant rank.
- Derivatives of `cholesky`, `eigh`, `svd`, `qr`, `slogdet`, `pinv` and `lstsq` are for
  real inputs; complex inputs get values but a NotImplementedError when differentiated.
  `inv`, `solve`, `det`, the triangular solve and `expm` are holomorphic and follow the
  JAX convention for complex values (the vjp is the plain transpose of the jvp).

`FUNCTIONS` holds the `numpy.linalg` names, `SCIPY_LINALG` the `scipy.linalg` ones
(which need no SciPy: every impl is NumPy).
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.ops import elementwise as _ew
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape
from autodiff.ops.batching import align_for_broadcast, move_to_front
from autodiff.ops.broadcast import broadcast_to, shape_of
from autodiff.ops.elementwise import astype, stop_gradient, unbroadcast, where
from autodiff.ops.linalg import dot, einsum

LinAlgError = np.linalg.LinAlgError

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])

# ---------------------------------------------------------------------------------------------
# Matrix helpers, all autodiff ops (they run inside rules on values of any level).


def _array(x):
    return x if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x)


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


def _add(a, b):
    """Sum of two terms where None is zero."""
    return b if a is None else a if b is None else a + b


def _cotangent(ct, x):
    """`ct` summed to `x`'s shape and cast to its dtype; None for integer (constant) inputs."""
    if ct is None or not is_inexact(dtype_of(x)):
        return None
    return unbroadcast(ct, x)


def _tangent(t, out):
    return t if t is None or dtype_of(t) == dtype_of(out) else astype(t, dtype_of(out))


def _real_only(name: str, x) -> None:
    if np.issubdtype(dtype_of(x), np.complexfloating):
        raise NotImplementedError(f"Derivatives of {name} for complex inputs are not implemented")


def _check_matrix(x, square: bool = True) -> tuple:
    shape = shape_of(x)
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
    out = np.empty(a.shape, a.dtype if is_inexact(a.dtype) else np.float64)
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
inv_p.batch = _leading_batch(inv_p)

# ---------------------------------------------------------------------------------------------
# solve(a, b) with b a stack of matrices (..., n, k): dx = A^-1 (db - dA x), gb = A^-T g.

solve_p = Primitive("solve")
solve_p.impl = np.linalg.solve


def _solve_jvp(primals, tangents, *, out):
    (a, _), (da, db) = primals, tangents
    t = db if da is None else -(da @ out) if db is None else db - da @ out
    return None if t is None else _tangent(bind(solve_p, a, t), out)


def _solve_vjp(g, a, b, *, out, needs):
    gb = bind(solve_p, _mT(a), g)
    ga = -(gb @ _mT(out)) if needs[0] else None
    return _cotangent(ga, a), _cotangent(gb, b) if needs[1] else None


solve_p.jvp = _solve_jvp
solve_p.vjp = _solve_vjp
solve_p.vjp_takes_needs = True
solve_p.batch = _broadcast_batch(solve_p)

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
    dtype = np.result_type(a, b)
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = np.empty(lead + b.shape[-2:], dtype if is_inexact(dtype) else np.float64)
    for start in range(0, n, _TRIANGULAR_BLOCK):
        stop = min(start + _TRIANGULAR_BLOCK, n)
        rhs = b[..., start:stop, :]
        if start:
            rhs = rhs - a[..., start:stop, :start] @ x[..., :start, :]
        x[..., start:stop, :] = _solve_lower_block(a[..., start:stop, start:stop], rhs)
    return x


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.impl = _triangular_solve_impl


def _triangular_solve(a, b, *, lower: bool, trans: bool = False, unit_diagonal: bool = False):
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
    return _tangent(
        _triangular_solve(a, t, lower=lower, trans=trans, unit_diagonal=unit_diagonal), out
    )


def _triangular_solve_vjp(g, a, b, *, out, needs, lower, trans, unit_diagonal):
    gb = _triangular_solve(a, g, lower=lower, trans=not trans, unit_diagonal=unit_diagonal)
    ga = None
    if needs[0]:
        ga = _triangle(-(out @ _mT(gb)) if trans else -(gb @ _mT(out)), lower, unit_diagonal)
    return _cotangent(ga, a), _cotangent(gb, b) if needs[1] else None


triangular_solve_p.jvp = _triangular_solve_jvp
triangular_solve_p.vjp = _triangular_solve_vjp
triangular_solve_p.vjp_takes_needs = True
triangular_solve_p.batch = _broadcast_batch(triangular_solve_p)

# ---------------------------------------------------------------------------------------------
# det and slogdet: d det = det tr(A^-1 dA), d log|det| = tr(A^-1 dA).

det_p = Primitive("det")
det_p.impl = np.linalg.det
det_p.jvp = lambda primals, tangents, *, out: (
    None if tangents[0] is None else out * _trace(bind(solve_p, primals[0], tangents[0]))
)
det_p.vjp = lambda g, a, *, out: (_cols(_cols(g * out)) * _mT(bind(inv_p, a)),)
det_p.batch = _leading_batch(det_p)

slogdet_p = Primitive("slogdet", multiple_results=True)
slogdet_p.impl = lambda a: tuple(np.linalg.slogdet(a))


def _slogdet_jvp(primals, tangents, *, out):
    (a,), (da,) = primals, tangents
    if da is None:
        return None, None
    _real_only("slogdet", a)
    return None, _trace(bind(solve_p, a, da))


def _slogdet_vjp(g, a, *, out):
    _real_only("slogdet", a)
    g_logdet = g[1]
    if g_logdet is None:
        return (None,)
    return (_cols(_cols(g_logdet)) * _mT(bind(inv_p, a)),)


slogdet_p.jvp = _slogdet_jvp
slogdet_p.vjp = _slogdet_vjp
slogdet_p.batch = _leading_batch(slogdet_p)

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
    w = _triangular_solve(out, _sym(da), lower=True)  # L^-1 dA
    z = _mT(_triangular_solve(out, _mT(w), lower=True))  # L^-1 dA L^-T
    return out @ _phi(z)


def _cholesky_vjp(g, a, *, out):
    _real_only("cholesky", a)
    p = _phi(_mT(out) @ g)
    y = _triangular_solve(out, p, lower=True, trans=True)  # L^-T P
    s_t = _triangular_solve(out, _mT(y), lower=True, trans=True)  # (L^-T P L^-1)^T
    return (_sym(s_t),)


cholesky_p = Primitive("cholesky")
cholesky_p.impl = np.linalg.cholesky
cholesky_p.jvp = _cholesky_jvp
cholesky_p.vjp = _cholesky_vjp
cholesky_p.batch = _leading_batch(cholesky_p)

# ---------------------------------------------------------------------------------------------
# eigh: with M = V^T dA V, dw = diag(M), dV = V (F * M), F_ij = 1 / (w_j - w_i).
# `vectors=False` is eigvalsh (its own LAPACK call); its rules compute the vectors.

eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.impl = lambda a, *, UPLO, vectors: (
    tuple(np.linalg.eigh(a, UPLO)) if vectors else (np.linalg.eigvalsh(a, UPLO),)
)


def _eigh_jvp(primals, tangents, *, out, UPLO, vectors):
    (a,), (da,) = primals, tangents
    if da is None:
        return (None,) * len(out)
    _real_only("eigh", a)
    if not vectors:
        _, v = bind(eigh_p, a, UPLO=UPLO, vectors=True)
        return (einsum("...ji,...jk,...ki->...i", v, da, v),)
    w, v = out
    m = _mT(v) @ _sym(da) @ v
    return _diagonal(m), v @ (_inverse_gaps(w) * m)


def _eigh_vjp(g, a, *, out, UPLO, vectors):
    _real_only("eigh", a)
    if not vectors:
        _, v = bind(eigh_p, a, UPLO=UPLO, vectors=True)
        return ((v * _rows(g[0])) @ _mT(v),)
    (w, v), (gw, gv) = out, g
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:
        inner = _add(inner, _inverse_gaps(w) * (_mT(v) @ gv))
    if inner is None:
        return (None,)
    return (_sym(v @ inner @ _mT(v)),)


eigh_p.jvp = _eigh_jvp
eigh_p.vjp = _eigh_vjp
eigh_p.batch = _leading_batch(eigh_p)

# ---------------------------------------------------------------------------------------------
# svd (reduced, k = min(m, n)): with dP = U^T dA V, D = diag(s), F_ij = 1 / (s_j^2 - s_i^2),
#   ds = diag(dP),  dU = U (F * (dP D + D dP^T)) [+ (I - U U^T) dA V D^-1 if m > n],
#   dV = V (F * (D dP + dP^T D)) [+ (I - V V^T) dA^T U D^-1 if n > m].
# `compute_uv=False` is its own LAPACK call; its rules compute U and V.

svd_p = Primitive("svd", multiple_results=True)


def _svd_impl(a, *, full_matrices, compute_uv, hermitian):
    if compute_uv:
        return tuple(np.linalg.svd(a, full_matrices, True, hermitian))
    return (np.linalg.svd(a, compute_uv=False, hermitian=hermitian),)


def _svd_uv(a, hermitian):
    return bind(svd_p, a, full_matrices=False, compute_uv=True, hermitian=hermitian)


def _check_svd_derivative(a, full_matrices: bool) -> None:
    _real_only("svd", a)
    m, n = shape_of(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(
            "The derivative of svd with full_matrices=True is only defined for square "
            "matrices (the extra singular vectors are not unique): use full_matrices=False"
        )


def _svd_jvp(primals, tangents, *, out, full_matrices, compute_uv, hermitian):
    (a,), (da,) = primals, tangents
    if da is None:
        return (None,) * len(out)
    _check_svd_derivative(a, full_matrices and compute_uv)
    if not compute_uv:
        u, _, vh = _svd_uv(a, hermitian)
        return (_diagonal(_mT(u) @ da @ _mT(vh)),)
    u, s, vh = out
    m, n = shape_of(a)[-2:]
    v = _mT(vh)
    dp = _mT(u) @ da @ v
    s_row, s_col = _rows(s), _cols(s)
    f = _inverse_gaps(s * s)
    du = u @ (f * (dp * s_row + s_col * _mT(dp)))
    dv = v @ (f * (s_col * dp + _mT(dp) * s_row))
    if m > n:
        da_v = da @ v
        du = du + (da_v - u @ (_mT(u) @ da_v)) / s_row
    if n > m:
        da_u = _mT(da) @ u
        dv = dv + (da_u - v @ (vh @ da_u)) / s_row
    return du, _diagonal(dp), _mT(dv)


def _svd_vjp(g, a, *, out, full_matrices, compute_uv, hermitian):
    if not compute_uv or (g[0] is None and g[2] is None):  # singular values only
        _real_only("svd", a)
        k = min(shape_of(a)[-2:])
        u, vh = _svd_uv(a, hermitian)[::2] if not compute_uv else (out[0], out[2])
        return ((u[..., :k] * _rows(g[-2 if compute_uv else 0])) @ vh[..., :k, :],)
    _check_svd_derivative(a, full_matrices)
    (u, s, vh), (gu, gs, gvh) = out, g
    m, n = shape_of(a)[-2:]
    s_row, s_col = _rows(s), _cols(s)
    f = _inverse_gaps(s * s)
    inner = None if gs is None else _diag_embed(gs)
    if gu is not None:
        j = f * (_mT(u) @ gu)
        inner = _add(inner, (j + _mT(j)) * s_row)
    if gvh is not None:
        k = f * (vh @ _mT(gvh))
        inner = _add(inner, s_col * (k + _mT(k)))
    ga = None if inner is None else u @ inner @ vh
    if m > n and gu is not None:
        ga = _add(ga, ((gu - u @ (_mT(u) @ gu)) / s_row) @ vh)
    if n > m and gvh is not None:
        ga = _add(ga, (u / s_row) @ (gvh - (gvh @ _mT(vh)) @ vh))
    return (ga,)


svd_p.impl = _svd_impl
svd_p.jvp = _svd_jvp
svd_p.vjp = _svd_vjp
svd_p.batch = _leading_batch(svd_p)

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
    b = _mT(_triangular_solve(r, _mT(da), lower=False, trans=True))  # dA R^-1
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
    return _mT(_triangular_solve(r, _mT(gb), lower=False))  # gB R^-T


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

# ---------------------------------------------------------------------------------------------
# lstsq: x = A^+ b (LAPACK gelsd), with A's singular values s and the rank. The impl maps
# numpy.linalg.lstsq (2-D only) over broadcast stacks. dx = dP b + P db (dP as for pinv);
# s differentiates as svd's singular values; the rank is a constant.


def _lstsq_impl(a, b, *, rcond):
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = np.broadcast_to(a, lead + a.shape[-2:]), np.broadcast_to(b, lead + b.shape[-2:])
    if math.prod(lead) == 0:  # an empty stack (e.g. a size-0 vmap)
        dt = np.result_type(a, b)
        return (
            np.empty(lead + (a.shape[-1], b.shape[-1]), dt),
            np.empty(lead + (min(a.shape[-2:]),), np.finfo(dt).dtype),
            np.zeros(lead, np.int32),
        )
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
        dx = _add(dx, -(p @ (da @ x)) + (p @ _mT(p)) @ (da_t @ (b - a @ x)) + y - p @ (a @ y))
        u, _, vh = _svd_uv(a, False)
        ds = _diagonal(_mT(u) @ da @ _mT(vh))
    return _tangent(dx, x), ds, None


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
        ga = _add(ga, (u * _rows(gs)) @ vh)
    return _cotangent(ga, a), _cotangent(gb, b) if needs[1] else None


lstsq_p.jvp = _lstsq_jvp
lstsq_p.vjp = _lstsq_vjp
lstsq_p.vjp_takes_needs = True
lstsq_p.batch = _broadcast_batch(lstsq_p)

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
    None if tangents[0] is None else _tangent(_frechet_expm(primals[0], tangents[0]), out)
)
expm_p.vjp = lambda g, a, *, out: (_cotangent(_frechet_expm(_mT(a), g), a),)
expm_p.batch = _leading_batch(expm_p)


# ---------------------------------------------------------------------------------------------
# numpy.linalg functions.


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


def det(a):
    """`numpy.linalg.det`, differentiable (the derivative `det(a) inv(a).T` needs `a` invertible).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(det)(np.array([[2.0, 1.0], [1.0, 3.0]]))
        array([[ 3., -1.],
               [-1.,  2.]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(det_p, a)


def slogdet(a):
    """`numpy.linalg.slogdet`: `(sign, logabsdet)`, differentiable in `logabsdet` (real `a`).

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
    """`numpy.linalg.eigh`: `(eigenvalues, eigenvectors)` of a symmetric matrix, differentiable.

    Derivatives treat `a` as symmetric and need distinct eigenvalues: the eigenvector
    derivative has terms `1 / (w_j - w_i)`, infinite (or NaN) at a degeneracy.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: eigh(a).eigenvalues[1])(np.array([[2.0, 1.0], [1.0, 2.0]]))
        array([[0.5, 0.5],
               [0.5, 0.5]])
    """
    a = _array(a)
    _check_matrix(a)
    return EighResult(*bind(eigh_p, a, UPLO=_uplo(UPLO), vectors=True))


def eigvalsh(a, UPLO: str = "L"):
    """`numpy.linalg.eigvalsh`, differentiable (distinct eigenvalues, as for `eigh`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> eigvalsh(a).tolist()
        [1.0, 3.0]
        >>> ad.grad(lambda a: eigvalsh(a)[-1])(a)  # v v^T for the top eigenvector v
        array([[0.5, 0.5],
               [0.5, 0.5]])
    """
    a = _array(a)
    _check_matrix(a)
    return bind(eigh_p, a, UPLO=_uplo(UPLO), vectors=False)[0]


def _uplo(UPLO) -> str:
    UPLO = str(UPLO).upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """`numpy.linalg.svd`: `(U, S, Vh)`, or `S` with `compute_uv=False`; differentiable.

    Derivatives need distinct singular values (and nonzero ones for non-square `a`).
    With `full_matrices=True` (NumPy's default) and a non-square `a`, U or Vh has extra
    arbitrary columns: reverse mode differentiates `S` only and forward mode raises
    NotImplementedError (use `full_matrices=False`).

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


def svdvals(x, /):
    """`numpy.linalg.svdvals`: the singular values, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[3.0, 0.0], [0.0, -2.0]])
        >>> np.round(svdvals(a), 4)
        array([3., 2.])
        >>> ad.grad(lambda a: svdvals(a).sum())(a)  # the nuclear norm's gradient
        array([[ 1.,  0.],
               [ 0., -1.]])
    """
    return svd(x, compute_uv=False)


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


def _abs2(x):
    """`|x|**2`, elementwise."""
    if np.issubdtype(dtype_of(x), np.complexfloating):
        return _ew.real(x) ** 2 + _ew.imag(x) ** 2
    return x * x


def _safe_sqrt(s):
    """`sqrt(s)` for `s >= 0` whose derivative is 0 (not inf or NaN) where `s == 0`."""
    zero = s == 0
    return where(zero, 0.0, _ew.sqrt(where(zero, 1.0, s)))


def _vector_norm(x, ord, axes: tuple, keepdims: bool):
    absolute = _ew.FUNCTIONS["absolute"]
    if ord == np.inf:
        return _reduce.max(absolute(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return _reduce.min(absolute(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        real = np.finfo(dtype_of(x)).dtype
        return _reduce.sum(astype(x != 0, real), axis=axes, keepdims=keepdims)
    if ord == 1:
        return _reduce.sum(absolute(x), axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        return _safe_sqrt(_reduce.sum(_abs2(x), axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    total = _reduce.sum(absolute(x) ** ord, axis=axes, keepdims=keepdims)
    zero = total == 0  # the p-norm's subgradient 0 at the origin, as for the 2-norm
    return where(zero, 0.0, where(zero, 1.0, total) ** (1.0 / ord))


def _matrix_norm(x, ord, row: int, col: int):
    absolute = _ew.FUNCTIONS["absolute"]
    if ord in (2, -2, "nuc"):
        s = svd(_shape.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        reduce = {2: _reduce.max, -2: _reduce.min, "nuc": _reduce.sum}[ord]
        return reduce(s, axis=-1)
    if ord in (1, -1):
        reduce = _reduce.max if ord == 1 else _reduce.min
        return reduce(_reduce.sum(absolute(x), axis=row), axis=col - (col > row))
    if ord in (np.inf, -np.inf):
        reduce = _reduce.max if ord == np.inf else _reduce.min
        return reduce(_reduce.sum(absolute(x), axis=col), axis=row - (row > col))
    if ord in (None, "fro", "f"):
        return _safe_sqrt(_reduce.sum(_abs2(x), axis=(row, col)))
    raise ValueError("Invalid norm order for matrices.")


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """`numpy.linalg.norm`: vector norms (any `ord`) and matrix norms (None, "fro", "nuc",
    inf, -inf, 1, -1, 2, -2), differentiable.

    At the origin the 2-norm (and "fro", and the p-norms) has the subgradient 0, not NaN.
    The max/min norms share the derivative between tied entries; 2, -2 and "nuc" go
    through the SVD (distinct singular values).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(norm)(np.array([3.0, 4.0])), ad.grad(norm)(np.zeros(2))
        (array([0.6, 0.8]), array([0., 0.]))
    """
    x = _array(x)
    if not is_inexact(dtype_of(x)):
        x = astype(x, np.float64)
    nd = len(shape_of(x))
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            ret = _safe_sqrt(_reduce.sum(_abs2(x)))
            return _shape.reshape(ret, (1,) * nd) if keepdims else ret
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        return _vector_norm(x, ord, (normalize_axis_index(axis[0], nd),), keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = (normalize_axis_index(a, nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    ret = _matrix_norm(x, ord, row, col)
    if keepdims:
        shape = [1 if i in (row, col) else s for i, s in enumerate(shape_of(x))]
        ret = _shape.reshape(ret, tuple(shape))
    return ret


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """`numpy.linalg.vector_norm`: several axes form one vector; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([[3.0, 0.0], [0.0, 4.0]])
        >>> float(vector_norm(x)), vector_norm(x, axis=0).tolist()
        (5.0, [3.0, 4.0])
        >>> ad.grad(vector_norm)(x)  # x / |x|
        array([[0.6, 0. ],
               [0. , 0.8]])
    """
    x = _array(x)
    shape = list(shape_of(x))
    if axis is None:
        y, y_axis = _shape.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, len(shape))
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        y = _shape.reshape(
            _shape.transpose(x, axes + rest),
            (int(np.prod([shape[i] for i in axes], dtype=int)), *[shape[i] for i in rest]),
        )
        y_axis = 0
    else:
        y, y_axis = x, axis
    ret = norm(y, ord=ord, axis=y_axis)
    if keepdims:
        axes = normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape))
        ret = _shape.reshape(ret, tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return ret


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """`numpy.linalg.matrix_norm`: the norm over the last two axes; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[3.0, 0.0], [0.0, 4.0]])
        >>> float(matrix_norm(a)), float(matrix_norm(a, ord=1))
        (5.0, 4.0)
        >>> ad.grad(matrix_norm)(a)  # a / |a|_F
        array([[0.6, 0. ],
               [0. , 0.8]])
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def matrix_power(a, n: int):
    """`numpy.linalg.matrix_power` by repeated squaring (negative powers through `inv`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: matrix_power(a, 3).sum())(np.eye(2))
        array([[3., 3.],
               [3., 3.]])
    """
    a = _array(a)
    _check_matrix(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:  # a constant: the identity, with `a`'s shape and dtype
        return np.broadcast_to(np.eye(shape_of(a)[-1], dtype=dtype_of(a)), shape_of(a)).copy()
    if n < 0:
        a, n = inv(a), -n
    if n <= 3:
        result = a
        for _ in range(n - 1):
            result = result @ a
        return result
    z = result = None
    while n > 0:  # NumPy's order of products, so that values match
        z = a if z is None else z @ z
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else result @ z
    return result


def cond(x, p=None):
    """`numpy.linalg.cond`, differentiable (2-norm conditions through the SVD).

    Example:
        >>> import numpy as np
        >>> float(cond(np.array([[2.0, 0.0], [0.0, 0.5]])))
        4.0
    """
    x = _array(x)
    _check_matrix(x, square=p not in (None, 2, -2))
    if 0 in shape_of(x)[-2:]:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        with np.errstate(all="ignore"):
            r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        inv_x = bind(inv_p, x, nan_if_singular=True)
        r = norm(x, p, axis=(-2, -1)) * norm(inv_x, p, axis=(-2, -1))
    # NaN (0 / 0 from a singular matrix) means infinite, unless x itself has NaNs.
    nan_from_x = _reduce.any(_ew.isnan(x), axis=(-2, -1))
    return where(_ew.isnan(r) & ~nan_from_x, np.inf, r)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):
    """`numpy.linalg.matrix_rank`: an integer constant.

    Example:
        >>> import numpy as np
        >>> int(matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]]))), int(matrix_rank(np.eye(3)))
        (1, 3)
    """
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = _array(A)
    if len(shape_of(A)) < 2:
        return int(not bool(_concrete(_reduce.all(A == 0))))
    s = stop_gradient(svd(A, compute_uv=False, hermitian=hermitian))
    if tol is None:
        if rtol is None:
            rtol = max(shape_of(A)[-2:]) * float(np.finfo(dtype_of(s)).eps)
        else:
            rtol = _cols(_array(rtol))
        tol = _reduce.max(s, axis=-1, keepdims=True) * rtol
    else:
        tol = _cols(_array(tol))
    return _reduce.count_nonzero(s > tol, axis=-1)


def tensorinv(a, ind: int = 2):
    """`numpy.linalg.tensorinv`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = 2.0 * np.eye(4).reshape(4, 2, 2)
        >>> tensorinv(a, ind=1).shape
        (2, 2, 4)
        >>> g = ad.grad(lambda a: tensorinv(a, ind=1).sum())(a)  # -inv^T 1 1^T inv^T
        >>> g.reshape(4, 4)[0]
        array([-0.25, -0.25, -0.25, -0.25])
    """
    a = _array(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = shape_of(a)
    inv_shape = shape[ind:] + shape[:ind]
    rows = int(np.prod(shape[ind:], dtype=int))
    return _shape.reshape(inv(_shape.reshape(a, (rows, -1))), inv_shape)


def tensorsolve(a, b, axes=None):
    """`numpy.linalg.tensorsolve`, differentiable in `a` and `b`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b = 2.0 * np.eye(4).reshape(2, 2, 2, 2), np.array([[2.0, 4.0], [6.0, 8.0]])
        >>> tensorsolve(a, b).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
        >>> ad.grad(lambda b: tensorsolve(a, b).sum())(b)
        array([[0.5, 0.5],
               [0.5, 0.5]])
    """
    a, b = _array(a), _array(b)
    nd = len(shape_of(a))
    if axes is not None:
        order = list(range(nd))
        for k in axes:
            order.remove(k)
            order.insert(nd, k)
        a = _shape.transpose(a, order)
    old_shape = shape_of(a)[-(nd - len(shape_of(b))) :]
    size = int(np.prod(old_shape, dtype=int))
    if int(np.prod(shape_of(a), dtype=int)) != size**2:
        raise LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
            "prod(a.shape[:b.ndim])"
        )
    x = solve(_shape.reshape(a, (size, size)), _shape.ravel(b))
    return _shape.reshape(x, old_shape)


def multi_dot(arrays, *, out=None):
    """`numpy.linalg.multi_dot`: the chain of `dot`s in NumPy's cheapest order; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones(4)
        >>> multi_dot([a, b, c]).tolist()
        [12.0, 12.0]
        >>> ad.grad(lambda c: multi_dot([a, b, c]).sum())(c)
        array([6., 6., 6., 6.])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.linalg.multi_dot does not support out")
    arrays = [_array(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1])
    first, last = len(shape_of(arrays[0])), len(shape_of(arrays[-1]))
    if first == 1:
        arrays[0] = _shape.reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = _shape.reshape(arrays[-1], (-1, 1))
    for x in arrays:
        if len(shape_of(x)) != 2:
            raise LinAlgError(
                f"{len(shape_of(x))}-dimensional array given. Array must be two-dimensional"
            )
    split = _chain_order([shape_of(x) for x in arrays])

    def product(i, j):
        if i == j:
            return arrays[i]
        return dot(product(i, split[i][j]), product(split[i][j] + 1, j))

    result = product(0, len(arrays) - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    return _shape.ravel(result) if first == 1 or last == 1 else result


def _chain_order(shapes) -> list:
    """`split[i][j]`: where the optimal product of matrices i..j splits (NumPy's algorithm)."""
    n = len(shapes)
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0.0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = np.inf
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + float(p[i] * p[k + 1] * p[j + 1])
                if q < cost[i][j]:
                    cost[i][j] = q
                    split[i][j] = k
    return split


def matrix_transpose(x, /):
    """`numpy.linalg.matrix_transpose`: swaps the last two axes; differentiable.

    Example:
        >>> import numpy as np
        >>> matrix_transpose(np.zeros((5, 2, 3))).shape
        (5, 3, 2)
    """
    x = _array(x)
    _check_matrix(x, square=False)
    return _mT(x)


def _offset_square(x, offset: int):
    """The square block of the last two axes whose main diagonal is `x`'s `offset` diagonal."""
    _check_matrix(x, square=False)
    x = x[..., :, offset:] if offset >= 0 else x[..., -offset:, :]
    k = min(shape_of(x)[-2:])
    return x[..., :k, :k]


def diagonal(x, /, *, offset: int = 0):
    """`numpy.linalg.diagonal`: the `offset` diagonal of the last two axes; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.arange(6.0).reshape(2, 3)
        >>> diagonal(a).tolist(), diagonal(a, offset=1).tolist()
        ([0.0, 4.0], [1.0, 5.0])
        >>> ad.grad(lambda a: diagonal(a, offset=1).sum())(a)
        array([[0., 1., 0.],
               [0., 0., 1.]])
    """
    return _diagonal(_offset_square(_array(x), operator.index(offset)))


def trace(x, /, *, offset: int = 0, dtype=None):
    """`numpy.linalg.trace`: sums the `offset` diagonal of the last two axes; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.arange(6.0).reshape(2, 3)
        >>> float(trace(a)), float(trace(a, offset=1))
        (4.0, 6.0)
        >>> ad.grad(trace)(a)
        array([[1., 0., 0.],
               [0., 1., 0.]])
    """
    x = _array(x)
    if dtype is not None:
        x = astype(x, dtype)
    return _trace(_offset_square(x, operator.index(offset)))


FUNCTIONS = {
    f.__name__: f
    for f in (
        inv,
        solve,
        det,
        slogdet,
        cholesky,
        eigh,
        eigvalsh,
        svd,
        svdvals,
        qr,
        pinv,
        lstsq,
        norm,
        vector_norm,
        matrix_norm,
        matrix_power,
        cond,
        matrix_rank,
        tensorinv,
        tensorsolve,
        multi_dot,
        matrix_transpose,
        diagonal,
        trace,
    )
}


# ---------------------------------------------------------------------------------------------
# scipy.linalg functions (NumPy impls: SciPy is not needed).

_TRANS = {
    0: False,
    "N": False,
    "n": False,
    1: True,
    "T": True,
    "t": True,
    2: "C",
    "C": "C",
    "c": "C",
}


def solve_triangular(
    a,
    b,
    trans=0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
):
    """`scipy.linalg.solve_triangular`: `x` with `op(a) @ x = b`, reading one triangle of `a`.

    `trans` is 0/'N' (a), 1/'T' (a.T) or 2/'C' (a.conj().T); `b` is a vector when 1-D,
    else a stack of matrices. Differentiable in `a` (its triangle) and `b`.

    Example:
        >>> import numpy as np
        >>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
        array([1., 2.])
    """
    a, b = _array(a), _array(b)
    n = _check_matrix(a)[0]
    if trans not in _TRANS:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', not {trans!r}")
    trans = _TRANS[trans]
    if trans == "C":
        a, trans = (_ew.conj(a) if np.iscomplexobj(a) else a), True
    vector = len(shape_of(b)) == 1
    if shape_of(b)[-2 + vector] != n:
        raise ValueError(f"shapes of a {shape_of(a)} and b {shape_of(b)} are incompatible")
    x = _triangular_solve(
        a,
        _cols(b) if vector else b,
        lower=bool(lower),
        trans=trans,
        unit_diagonal=bool(unit_diagonal),
    )
    return x[..., 0] if vector else x


def scipy_cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`scipy.linalg.cholesky`: upper factor `U` (`a = U.T @ U`) by default, else lower.

    Reads the upper (lower) triangle of `a`; derivatives as for `numpy.linalg.cholesky`.

    Example:
        >>> import numpy as np
        >>> scipy_cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]))
        array([[2., 1.],
               [0., 2.]])
    """
    a = _array(a)
    _check_matrix(a)
    if lower:
        return bind(cholesky_p, a)
    conj = _ew.conj if np.iscomplexobj(a) else (lambda x: x)
    return _mT(conj(bind(cholesky_p, conj(_mT(a)))))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`scipy.linalg.cho_factor`: `(c, lower)` for `cho_solve`.

    Unlike SciPy, the triangle of `c` not holding the factor is zero (SciPy leaves
    arbitrary values there); `cho_solve` reads only the factor either way.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b = np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([1.0, 2.0])
        >>> c, lower = cho_factor(a)
        >>> np.round(c, 4), lower
        (array([[2.    , 1.    ],
               [0.    , 1.4142]]), False)
        >>> np.round(cho_solve((c, lower), b), 4)
        array([-0.125,  0.75 ])
        >>> np.round(ad.grad(lambda a: cho_solve(cho_factor(a), b).sum())(a), 4)
        array([[ 0.0156, -0.0313],
               [-0.0313, -0.1875]])
    """
    return scipy_cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """`scipy.linalg.cho_solve`: solve `a x = b` from `cho_factor(a)`; differentiable.

    Example:
        >>> import numpy as np
        >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
        >>> cho_solve(cho_factor(a), np.array([6.0, 7.0]))
        array([1., 1.])
    """
    c, lower = c_and_lower
    first = solve_triangular(c, b, trans=0 if lower else 2, lower=lower)
    return solve_triangular(c, first, trans=2 if lower else 0, lower=lower)


def _from_triangle(a, lower: bool, hermitian: bool):
    """The symmetric (Hermitian) matrix whose lower (upper) triangle is that of `a`."""
    strict = _triangle(a, lower, strict=True)
    mirrored = _mT(_ew.conj(strict) if hermitian and np.iscomplexobj(a) else strict)
    diag = _triangle(_triangle(a, True), False)
    return strict + diag + mirrored


_ASSUME = {
    None: "gen",
    "gen": "gen",
    "general": "gen",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
    "pos": "pos",
    "positive definite": "pos",
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper triangular": "upper",
    "lower triangular": "lower",
}


def _assumption(assume_a) -> str:
    if assume_a not in _ASSUME:
        raise NotImplementedError(f"autodiff.scipy.linalg does not support assume_a={assume_a!r}")
    return _ASSUME[assume_a]


def scipy_solve(
    a,
    b,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    assume_a=None,
    transposed: bool = False,
):
    """`scipy.linalg.solve`, differentiable; `assume_a` selects which entries of `a` are read.

    "sym"/"her"/"pos" read one triangle (`lower`), "diagonal"/"tridiagonal" the (tri)diagonal,
    "upper triangular"/"lower triangular" a triangle; "banded" is not supported.

    Example:
        >>> import numpy as np
        >>> scipy_solve(np.array([[4.0, 2.0], [2.0, 5.0]]), np.array([6.0, 7.0]), assume_a="pos")
        array([1., 1.])
    """
    a, b = _array(a), _array(b)
    _check_matrix(a)
    kind = _assumption(assume_a)
    if transposed:
        if np.iscomplexobj(a):
            raise NotImplementedError("scipy.linalg.solve(transposed=True) is real-only")
        a = _mT(a)
    if kind in ("upper", "lower"):
        return solve_triangular(a, b, lower=kind == "lower")
    if kind in ("sym", "her", "pos"):  # one triangle is read, in derivatives too
        a = _from_triangle(a, lower, kind != "sym")
        if kind == "pos":
            return cho_solve(cho_factor(a, lower=lower), b)
    elif kind == "diagonal":
        a = _triangle(_triangle(a, True), False)
    elif kind == "tridiagonal":
        n = shape_of(a)[-1]
        a = where(np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1, a, 0.0)
    return solve(a, b)


def scipy_inv(
    a, overwrite_a: bool = False, check_finite: bool = True, *, assume_a=None, lower: bool = False
):
    """`scipy.linalg.inv`, differentiable; `assume_a` as for `solve` (reads those entries).

    Example:
        >>> import numpy as np
        >>> scipy_inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    a = _array(a)
    n = _check_matrix(a)[0]
    kind = _assumption(assume_a)
    if kind == "gen":
        return inv(a)
    return scipy_solve(
        a, broadcast_to(np.eye(n, dtype=dtype_of(a)), shape_of(a)), lower=lower, assume_a=assume_a
    )


def scipy_det(a, overwrite_a: bool = False, check_finite: bool = True):
    """`scipy.linalg.det`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
        >>> round(float(scipy_det(a)), 4)
        5.0
        >>> np.round(ad.grad(scipy_det)(a), 4)  # det(a) inv(a)^T
        array([[ 3., -1.],
               [-1.,  2.]])
    """
    return det(a)


def expm(A):
    """`scipy.linalg.expm`: the matrix exponential (stacks too), differentiable to any order.

    Computed by scaling and squaring with Pade approximants in double precision (float32
    inputs give float32 results, rounded from double; SciPy computes those in float32); its
    derivative is the Frechet derivative, the top-right block of the exponential of
    `[[A, E], [0, A]]`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> expm(np.zeros((2, 2)))
        array([[1., 0.],
               [0., 1.]])
        >>> ad.grad(lambda a: expm(a)[0, 0])(np.zeros((2, 2)))
        array([[1., 0.],
               [0., 0.]])
    """
    A = _array(A)
    _check_matrix(A)
    return bind(expm_p, A)


SCIPY_LINALG = {
    "solve_triangular": solve_triangular,
    "cholesky": scipy_cholesky,
    "cho_factor": cho_factor,
    "cho_solve": cho_solve,
    "solve": scipy_solve,
    "inv": scipy_inv,
    "det": scipy_det,
    "expm": expm,
}
