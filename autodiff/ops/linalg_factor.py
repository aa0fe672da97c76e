"""Factorizations: cholesky, eigh, svd, eig and qr, and the matrix exponential expm, with their
rules (the numpy.linalg functions that bind them are ops/linalg.py's, which also states the
conventions of their derivatives).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import result_aval
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import elementwise as _ew
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape
from autodiff.ops.elementwise import cotangent_of, stop_gradient, where
from autodiff.ops.linalg_solve import solve_p, triangular_solve
from autodiff.ops.matrix import (
    _abs2,
    _cols,
    _diag_embed,
    _diagonal,
    _inverse_gaps,
    _leading_batch,
    _matrix_aval,
    _matrix_dims,
    _mH,
    _mT,
    _read_triangle,
    _read_triangle_transpose,
    _real_only,
    _rows,
    _square_abstract_eval,
    _triangle,
    linalg_dtype,
)
from autodiff.ops.products import add_terms, einsum, tangent_in_dtype_of
from autodiff.ops.sparsity import dense_blocks
from autodiff.ops.structural import broadcast_to, shape_of

# ---------------------------------------------------------------------------------------------
# cholesky (lower): dL = L Phi(L^-1 dA L^-H), Phi = lower triangle with half the diagonal
# (Murray 2016), dA taken Hermitian; the gradient, its transpose (JAX's convention for
# complex values: the plain transpose, no conjugate), is herm(L^-T Phi(L^T gL) conj(L)^-1).


def _phi(x):
    """The lower triangle of `x` with half its diagonal."""
    n = shape_of(x)[-1]
    return x * (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(dtype_of(x))


def _herm(x):
    """(x + x^H) / 2: the Hermitian (for real values, symmetric) part."""
    return (x + _mH(x)) * 0.5


def _cholesky_jvp(primals, tangents, *, out):
    (da,) = tangents
    if da is None:
        return None
    w = triangular_solve(out, _herm(da), lower=True)  # L^-1 dA
    z = triangular_solve(out, _mH(w), lower=True)  # L^-1 dA L^-H (dA Hermitian)
    return out @ _phi(z)


def _cholesky_vjp(g, a, *, out):
    p = _phi(_mT(out) @ g)
    y = triangular_solve(out, p, lower=True, trans=True)  # L^-T P
    s = _mT(triangular_solve(_ew.conj_complex(out), _mT(y), lower=True, trans=True))
    return (_herm(s),)  # (s = L^-T P conj(L)^-1)


cholesky_p = Primitive("cholesky")
cholesky_p.sparsity = dense_blocks()
cholesky_p.impl = np.linalg.cholesky
cholesky_p.jvp = _cholesky_jvp
cholesky_p.vjp = _cholesky_vjp
cholesky_p.abstract_eval = _square_abstract_eval
cholesky_p.batch = _leading_batch(cholesky_p)

# ---------------------------------------------------------------------------------------------
# eigh of H = R(A): with M = V^H dH V, dw = Re diag(M), dV = V (F * M), F_ij = 1 / (w_j - w_i)
# (real). For complex H each eigenvector is defined up to a phase only: this dV is the one with
# Im diag(V^H dV) = 0, so functions invariant under those phases (|V|, V diag(f(w)) V^H, ...)
# have exact derivatives, not the phases LAPACK picks. The vjp is the transpose: with
# K = diag(gw) + F * (V^T gV), gA = R^T(conj(V) K V^T).
# `vectors=False` is eigvalsh (its own LAPACK call); its rules compute the vectors.

eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.sparsity = dense_blocks()
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


def _svd_impl(a, *, full_matrices, compute_uv, hermitian):
    if compute_uv:
        return tuple(np.linalg.svd(a, full_matrices, True, hermitian))
    return (np.linalg.svd(a, compute_uv=False, hermitian=hermitian),)


svd_p = Primitive("svd", multiple_results=True)
svd_p.sparsity = dense_blocks()


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


def _solve(a, b):
    """`solve` for stacks of square matrices `a` and of matrices `b`: the primitive itself."""
    return bind(solve_p, a, b)


def _complex_dtype(dtype) -> np.dtype:
    return np.result_type(linalg_dtype(dtype), np.complex64)


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
        dw = einsum("...ij,...ji->...i", _solve(v, da), v)
        return (where(_repeated(w), _nan_like(dw), dw),)
    p = _solve(v, da @ v)
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
    ga = _solve(_mT(v), gp @ _mT(v))
    return (cotangent_of(ga if _is_complex(a) else _ew.real(ga), a),)


def _eig_impl(a, *, vectors):
    dtype = _complex_dtype(np.asarray(a).dtype)
    if not vectors:
        return (np.linalg.eigvals(a).astype(dtype, copy=False),)
    w, v = np.linalg.eig(a)
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


eig_p = Primitive("eig", multiple_results=True)
eig_p.sparsity = dense_blocks()


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


qr_p = Primitive("qr", multiple_results=True)
qr_p.sparsity = dense_blocks()


qr_p.impl = lambda a, *, complete: tuple(np.linalg.qr(a, "complete" if complete else "reduced"))


qr_p.jvp = _qr_jvp
qr_p.vjp = _qr_vjp
qr_p.batch = _leading_batch(qr_p)


def _qr_abstract_eval(a, *, complete):
    m, n = _matrix_dims(a.shape, square=False)
    k = m if complete else min(m, n)
    return _matrix_aval(a.shape[:-2] + (m, k), a), _matrix_aval(a.shape[:-2] + (k, n), a)


qr_p.abstract_eval = _qr_abstract_eval

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
expm_p.sparsity = dense_blocks()
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
