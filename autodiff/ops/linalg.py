"""Linear algebra: the `numpy.linalg` functions, and the primitives adjugate, det, slogdet, pinv
and lstsq with their rules. The other primitives are the solves (inv, solve, triangular solve:
ops/linalg_solve.py) and the factorizations (cholesky, eigh, svd, eig, qr, and expm:
ops/linalg_factor.py), on the matrix pieces of ops/matrix.py; the conventions below are the
whole family's.

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
  the input as symmetric (Hermitian): a perturbation `dA` acts through `(dA + dA^H) / 2`,
  and gradients are symmetric (as in JAX and PyTorch); for a symmetric function of
  parameters (a kernel matrix, `X @ X.T`) either is exactly the chain rule.
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
- Derivatives of `qr`, `slogdet`, `pinv` and `lstsq` are for real inputs; complex
  inputs get values but a NotImplementedError when differentiated. `inv`, `solve`, `det`,
  the triangular solve and `expm` are holomorphic; `cholesky`, `eigh`, `svd` and `eig` take
  complex inputs.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from autodiff.core.abstract import ShapedArray, aval_of, result_aval
from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import elementwise as _ew
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape
from autodiff.ops.cumulative import cumprod
from autodiff.ops.elementwise import cotangent_of, stop_gradient, where
from autodiff.ops.linalg_factor import _svd_uv, cholesky_p, eig_p, eigh_p, qr_p, svd_p
from autodiff.ops.linalg_solve import _inv_impl, inv_p, solve_cores, solve_p
from autodiff.ops.matrix import (
    LinAlgError,
    _abs2,
    _broadcast_batch,
    _check_matrix,
    _cols,
    _concrete,
    _diag_embed,
    _diagonal,
    _leading_batch,
    _matrix_aval,
    _matrix_dims,
    _mH,
    _mT,
    _real_only,
    _rows,
    _square_abstract_eval,
    _stack,
)
from autodiff.ops.products import _array, add_terms, einsum, tangent_in_dtype_of
from autodiff.ops.sparsity import dense_blocks
from autodiff.ops.structural import shape_of

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
# ---------------------------------------------------------------------------------------------
# adjugate, det and slogdet. The adjugate adj(A) = det(A) A^-1 is polynomial in A, so it, and
# the derivative of det it gives (d det = tr(adj(A) dA)), exist at singular matrices too. There
# (and near them, where det(A) A^-1 loses its digits) it is computed from the SVD
# A = U diag(s) Vh, which inverts nothing:
#   adj(A) = det(U) det(Vh) Vh^H diag(p) U^H,   p_i = prod_{k != i} s_k,
# and in that basis its derivative is polynomial in s as well: with dP = U^H dA Vh^H and
# Q_ij = prod_{k != i, j} s_k off the diagonal, Q_ii = 0,
#   d adj = det(U) det(Vh) Vh^H (diag(Q diag(dP)) - Q * dP) U^H.


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
    norm_1 = lambda m: np.abs(m).sum(-2).max(-1, initial=0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        conditioned = norm_1(a) * norm_1(inv) < 1 / math.sqrt(np.finfo(inv.dtype).eps)
    out = np.linalg.det(a)[..., None, None] * inv
    if not np.all(conditioned):
        out[~conditioned] = _adjugate_from_svd(*np.linalg.svd(a[~conditioned]))
    return out


adjugate_p = Primitive("adjugate")
adjugate_p.sparsity = dense_blocks()
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
det_p.sparsity = dense_blocks()
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
slogdet_p.sparsity = dense_blocks()
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
# pinv (P = A^+, locally constant rank; Golub and Pereyra 1973):
#   dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P.

pinv_p = Primitive("pinv")
pinv_p.sparsity = dense_blocks()
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


lstsq_p = Primitive("lstsq", multiple_results=True)
lstsq_p.sparsity = dense_blocks(solve_cores)


lstsq_p.impl = _lstsq_impl


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
    real `a` is real, a dtype that depends on the values (take ``.real`` for those). The
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
