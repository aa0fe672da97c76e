"""Op table: linear algebra (numpy.linalg: inv, solve, det, cholesky, eigh, eig, svd, qr, pinv,
lstsq, norm, vecdot, ...; scipy.linalg: solve_triangular, cho_solve, expm, ...).

Domains keep central differences valid: well-conditioned matrices (diagonally shifted),
symmetric positive definite ones built inside the function (`_spd`), symmetric inputs
formed inside the function for eigh (and raw ones), distinct eigenvalues and singular values, full-rank least squares. Eigenvectors and
singular vectors are only defined up to sign, so they enter through gauge-invariant
functions (matrix functions `V f(w) V.T`, squared projections `(V.T x)**2`); eigh's raw
non-symmetric input is differentiated as NumPy reads it (one triangle). Complex cases build
their matrices from two real arguments and return real and imaginary parts; complex
eigenvectors and singular vectors (defined up to a phase) enter through |v|^2 and
`V f(w) V^H`; eig's eigenvectors (LAPACK's normalization) enter as they are.
"""

from functools import partial

import numpy as np
from optable import OpCase, arr

import autodiff.numpy.linalg as la
import autodiff.scipy.linalg as sla

try:
    import scipy.linalg as scipy_linalg
except ImportError:  # SciPy is only a reference for values
    scipy_linalg = None

CASES = []


def _T(x):
    return np.swapaxes(x, -1, -2)  # dispatches to autodiff.numpy on tracers


def _well(*shape, shift=4.0):
    """Random matrices made well conditioned by a diagonal shift."""
    return arr(*shape) + shift * np.eye(shape[-1])


def _spd(x):
    """A symmetric positive definite matrix from any square `x` (works on tracers and arrays)."""
    return x @ _T(x) + 3.0 * np.eye(np.shape(x)[-1])


def _sym(x):
    return (x + _T(x)) * 0.5


def _distinct_sym(n, batch=(), rng=None):
    """Symmetric matrices with well-separated eigenvalues."""
    q, _ = np.linalg.qr(np.random.default_rng(n).standard_normal(batch + (n, n)))
    w = np.arange(n, dtype=float) * 1.5 - 1.0
    return q @ (w[:, None] * _T(q)) + 0.05 * arr(*batch, n, n, rng=rng)


_SINGULAR_RNG = np.random.default_rng(28)  # (the shared stream stays as it was)


def _low_rank(n, rank):
    """A random n x n matrix of the given rank."""
    return arr(n, rank, rng=_SINGULAR_RNG) @ arr(rank, n, rng=_SINGULAR_RNG)


def _both(name, fun, ref, args, **kw):
    """A case whose function and reference differ only in the linalg module used."""
    CASES.append(OpCase(name, partial(fun, la), args, ref=partial(ref, np.linalg), **kw))


def _same(name, fun, args, **kw):
    _both(name, fun, fun, args, **kw)


# inv, solve, det, slogdet
for shape in [(3, 3), (2, 3, 3), (1, 1)]:
    _same(f"inv{shape}", lambda m, a: m.inv(a), (_well(*shape),))
for sa, sb in [
    ((3, 3), (3,)),
    ((3, 3), (3, 2)),
    ((2, 3, 3), (3, 2)),
    ((3, 3), (2, 3, 1)),
    ((2, 3, 3), (3,)),
]:
    _same(f"solve{sa}{sb}", lambda m, a, b: m.solve(a, b), (_well(*sa), arr(*sb)))
for shape in [(3, 3), (2, 3, 3)]:
    _same(f"det{shape}", lambda m, a: m.det(a), (arr(*shape),))
# det at singular matrices: its derivatives are the adjugate's, polynomial at every rank
_SINGULAR = {
    "rank1of2": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "rank2of3": _low_rank(3, 2),
    "rank1of3": _low_rank(3, 1),
    "zeros3": np.zeros((3, 3)),
    "rank3of4_first_pivot_zero": np.diag([0.0, 1.0, 2.0, 3.0]) + np.triu(_low_rank(4, 4), 1),
    "rank2of4(2,4,4)": np.stack([_low_rank(4, 2), _low_rank(4, 3)]),
}
for name, a in _SINGULAR.items():
    _same(f"det_{name}", lambda m, a: m.det(a), (a,))
_same("slogdet", lambda m, a: m.slogdet(a), (_well(3, 3) * np.array([1.0, -1.0, 1.0]),))
_same("slogdet_logabsdet(2,3,3)", lambda m, a: m.slogdet(a).logabsdet, (_well(2, 3, 3),))

# cholesky: of a matrix built symmetric positive definite, or of a symmetrized input
for shape in [(3, 3), (2, 3, 3)]:
    _same(f"cholesky_spd{shape}", lambda m, x: m.cholesky(_spd(x)), (arr(*shape),))
_same("cholesky_sym", lambda m, a: m.cholesky(_sym(a)), (_spd(arr(3, 3)),))
_same("cholesky_upper", lambda m, x: m.cholesky(_spd(x), upper=True), (arr(3, 3),))

# eigh: eigenvalues, and eigenvectors through gauge-invariant functions
_same("eigvalsh", lambda m, a: m.eigvalsh(_sym(a)), (_distinct_sym(4),))
_same("eigvalsh_U(2,3,3)", lambda m, a: m.eigvalsh(_sym(a), UPLO="U"), (_distinct_sym(3, (2,)),))
_same("eigh_values", lambda m, a: m.eigh(_sym(a))[0], (_distinct_sym(3),))


def _eigh_matrix_function(m, a):
    w, v = m.eigh(_sym(a))
    return (v * np.tanh(w)[..., None, :]) @ _T(v)


def _eigh_projection(m, a, x):
    w, v = m.eigh(_sym(a))
    return w, (_T(v) @ x) ** 2


_same("eigh_matrix_function", _eigh_matrix_function, (_distinct_sym(3),))
_same("eigh_matrix_function(2,3,3)", _eigh_matrix_function, (_distinct_sym(3, (2,)),))
_same("eigh_projection", _eigh_projection, (_distinct_sym(4), arr(4)))


# svd: singular values, and vectors through gauge-invariant functions
for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 2)]:
    _same(f"svdvals{shape}", lambda m, a: m.svd(a, compute_uv=False), (arr(*shape),))


def _svd_reconstruct(m, a, full_matrices=False):
    u, s, vh = m.svd(a, full_matrices=full_matrices)
    return (u * np.tanh(s)[..., None, :]) @ vh


def _svd_projections(m, a, x, y):
    u, s, vh = m.svd(a, full_matrices=False)
    return s, (_T(u) @ x) ** 2, (vh @ y) ** 2


for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 2)]:
    _same(f"svd_reconstruct{shape}", _svd_reconstruct, (arr(*shape),))
_same("svd_full_square", partial(_svd_reconstruct, full_matrices=True), (arr(3, 3),))
_same("svd_projections(4,3)", _svd_projections, (arr(4, 3), arr(4), arr(3)))
_same("svd_projections(2,4)", _svd_projections, (arr(2, 4), arr(2), arr(4)))


_RNG = np.random.default_rng(2028)  # (the rows below leave the shared stream as it was)


def _arr(*shape):
    return arr(*shape, rng=_RNG)


# Complex inputs are built inside the function from two real arguments (`x + 1j * y`: complex128
# from float64, complex64 from float32), and complex results leave as real and imaginary parts.
def _complex(x, y):
    return x + 1j * y


def _parts(*zs):
    return tuple(p for z in zs for p in (np.real(z), np.imag(z)))


def _H(x):
    return np.conj(_T(x))


def _complex_case(name, fun, args, **kw):
    _same(name, lambda m, x, y, *rest: fun(m, _complex(x, y), *rest), args, **kw)


# eigh reads one triangle, as NumPy: the raw (non-symmetric) input, its derivative that of
# what NumPy computes (real eigenvectors: LAPACK's signs are locally constant)
_same("eigh_lower_triangle", lambda m, a: tuple(m.eigh(a)), (_arr(4, 4),))
_same("eigh_upper_triangle(2,3,3)", lambda m, a: tuple(m.eigh(a, "U")), (_arr(2, 3, 3),))
_same("eigvalsh_upper_triangle", lambda m, a: m.eigvalsh(a, UPLO="U"), (_arr(3, 3),))


def _eigh_complex(m, a, uplo="L"):
    w, v = m.eigh(a, uplo)  # phases of v are arbitrary: |v|^2 and V f(w) V^H are not
    return (w, np.abs(v) ** 2, *_parts((v * np.tanh(w)[..., None, :]) @ _H(v)))


_complex_case("eigh_complex", _eigh_complex, (_arr(3, 3), _arr(3, 3)))
_complex_case(
    "eigh_complex_U(2,3,3)", partial(_eigh_complex, uplo="U"), (_arr(2, 3, 3), _arr(2, 3, 3))
)
_complex_case("eigvalsh_complex", lambda m, a: m.eigvalsh(a), (_arr(4, 4), _arr(4, 4)))


# svd of complex matrices: singular values and phase-invariant functions of the vectors
def _svd_complex(m, a, full_matrices=False):
    u, s, vh = m.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u1, vh1, u2, vh2 = u[..., :k], vh[..., :k, :], u[..., k:], vh[..., k:, :]
    recon = (u1 * np.tanh(s)[..., None, :]) @ vh1
    extra = _parts(u2 @ _H(u2), _H(vh2) @ vh2) if full_matrices else ()
    return (s, np.abs(u1) ** 2, np.abs(vh1) ** 2, *_parts(recon), *extra)


for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 2)]:
    _complex_case(f"svd_complex{shape}", _svd_complex, (_arr(*shape), _arr(*shape)))
for shape in [(3, 2), (2, 3)]:
    _complex_case(
        f"svd_complex_full{shape}",
        partial(_svd_complex, full_matrices=True),
        (_arr(*shape), _arr(*shape)),
    )
    _same(f"svd_full{shape}", partial(_svd_complex, full_matrices=True), (_arr(*shape),))
_complex_case("svdvals_complex(2,3,4)", lambda m, a: m.svdvals(a), (_arr(2, 3, 4), _arr(2, 3, 4)))
_same("svd_hermitian", lambda m, a: m.svd(a, hermitian=True)[1], (_distinct_sym(3, rng=_RNG),))
for ord_ in ("nuc", 2, -2):
    _complex_case(
        f"norm_complex[{ord_}]", lambda m, a, o=ord_: m.norm(a, o), (_arr(3, 4), _arr(3, 4))
    )
_complex_case(
    "norm_complex[nuc,(0,2)]",
    lambda m, a: m.norm(a, "nuc", axis=(0, 2), keepdims=True),
    (_arr(3, 2, 4), _arr(3, 2, 4)),
)


# eig, eigvals: always complex (NumPy's real results for real eigenvalues cast to complex)
def _complex_of(x):
    return np.asarray(x).astype(np.result_type(x, np.complex64), copy=False)


def _eig(m, a):
    w, v = m.eig(a)
    if m is np.linalg:
        w, v = _complex_of(w), _complex_of(v)
    return _parts(w, v)


def _eigvals(m, a):
    w = m.eigvals(a)
    return _parts(_complex_of(w) if m is np.linalg else w)


_same("eig", _eig, (_arr(4, 4),))  # two complex eigenvalues, two real
_same("eig_real_spectrum", _eig, (_distinct_sym(3, rng=_RNG) + 0.3 * _arr(3, 3),))
_complex_case("eig_complex(2,3,3)", _eig, (_arr(2, 3, 3), _arr(2, 3, 3)))
_same("eigvals(2,3,3)", _eigvals, (_arr(2, 3, 3),))
_complex_case("eigvals_complex", _eigvals, (_arr(3, 3), _arr(3, 3)))

# the array-API names of numpy.linalg
_same("vecdot", lambda m, a, b: m.vecdot(a, b, axis=0), (_arr(3, 2), _arr(3, 1)))
_complex_case(
    "vecdot_complex", lambda m, a, b: _parts(m.vecdot(a, b)), (_arr(2, 3), _arr(2, 3), _arr(3))
)
_same("linalg_cross", lambda m, a, b: m.cross(a, b, axis=0), (_arr(3, 2), _arr(3, 2)))
_same("linalg_outer", lambda m, a, b: m.outer(a, b), (_arr(3), _arr(2)))

# qr: Q and R are smooth functions of a full-rank matrix (LAPACK's signs are locally constant)
for name, a in [
    ("qr(3,3)", _well(3, 3)),
    ("qr(4,2)", _well(4, 4)[:, :2]),
    ("qr(2,4)", _well(4, 4)[:2]),
    ("qr(2,4,3)", _well(2, 4, 4)[..., :3]),
]:
    _same(name, lambda m, a: tuple(m.qr(a)), (a,))
_same("qr_r", lambda m, a: m.qr(a, mode="r"), (_well(4, 4)[:, :3],))
_same("qr_complete_wide", lambda m, a: tuple(m.qr(a, mode="complete")), (_well(3, 3)[:2],))

# pinv, lstsq (full rank)
for shape in [(3, 2), (2, 3), (3, 3)]:
    _same(f"pinv{shape}", lambda m, a: m.pinv(a), (_well(3, 3)[: shape[0], : shape[1]],))


def _lstsq(m, a, b):
    x, residuals, _, s = m.lstsq(a, b)
    return x, residuals, s


for sa, sb in [((4, 2), (4,)), ((4, 2), (4, 3)), ((2, 4), (2,)), ((3, 3), (3, 2))]:
    _same(f"lstsq{sa}{sb}", _lstsq, (_well(4, 4)[: sa[0], : sa[1]], arr(*sb)))

# norm: vector and matrix orders, axes, keepdims
for ord_, shape, axis, keepdims in [
    (None, (5,), None, False),
    (None, (2, 3), None, True),
    (None, (2, 3, 4), None, False),
    (2, (5,), None, False),
    (1, (5,), None, False),
    (np.inf, (5,), None, False),
    (-np.inf, (5,), None, False),
    (3, (5,), None, False),
    (0.5, (5,), None, False),
    (None, (3, 4), 1, False),
    (2, (3, 4), 0, True),
    (3, (2, 3, 4), -1, True),
    ("fro", (3, 4), None, False),
    ("nuc", (3, 4), None, False),
    (2, (3, 4), None, False),
    (-2, (3, 4), None, False),
    (1, (3, 4), None, False),
    (-1, (3, 4), None, False),
    (np.inf, (3, 4), None, False),
    (-np.inf, (3, 4), None, False),
    ("fro", (2, 3, 4), (0, 2), False),
    (2, (2, 3, 4), (2, 0), True),
    (np.inf, (2, 3, 4), (1, 2), True),
]:
    _same(
        f"norm[{ord_},{axis},{keepdims}]{shape}",
        lambda m, x, o=ord_, ax=axis, k=keepdims: m.norm(x, o, ax, k),
        (arr(*shape),),
    )
_same(
    "vector_norm", lambda m, x: m.vector_norm(x, axis=(0, 2), keepdims=True, ord=3), (arr(2, 3, 4),)
)
_same("matrix_norm", lambda m, x: m.matrix_norm(x, ord="nuc"), (arr(2, 3, 4),))

# matrix_power, cond, tensorinv, tensorsolve, multi_dot
for n in [0, 1, 2, 3, 5, 6, -1, -3]:
    _same(
        f"matrix_power[{n}]", lambda m, a, n=n: m.matrix_power(a, n), (_well(3, 3, shift=1.5) / 2,)
    )
_same("matrix_power[4](2,3,3)", lambda m, a: m.matrix_power(a, 4), (arr(2, 3, 3) / 2,))
for p in [None, 2, -2, "fro", 1, np.inf]:
    _same(f"cond[{p}]", lambda m, a, p=p: m.cond(a, p), (_well(3, 3),))
_same("tensorinv", lambda m, a: m.tensorinv(a, ind=1), (_well(6, 6).reshape(6, 2, 3),))
_same("tensorsolve", lambda m, a, b: m.tensorsolve(a, b), (_well(6, 6).reshape(2, 3, 6), arr(2, 3)))
_same(
    "multi_dot",
    lambda m, a, b, c, d: m.multi_dot([a, b, c, d]),
    (
        arr(
            4,
        ),
        arr(4, 5),
        arr(5, 2),
        arr(2, 3),
    ),
)
_same("matrix_transpose", lambda m, a: m.matrix_transpose(a), (arr(2, 3, 4),))
_same("diagonal", lambda m, a: m.diagonal(a, offset=1), (arr(2, 3, 4),))
_same("trace", lambda m, a: m.trace(a, offset=-1), (arr(2, 4, 3),))


# scipy.linalg: solve_triangular, cholesky, cho_factor/cho_solve, solve, inv, det, expm
def _scipy_case(name, fun, args, in_double=False, **kw):
    """A case against SciPy's function; `in_double`: SciPy's answer in float64, rounded to the
    arguments' dtype (where SciPy's single-precision solvers round differently from ours, as
    accurate against the float64 answer but not bitwise close to each other)."""
    ref = None if scipy_linalg is None else partial(fun, scipy_linalg)
    if ref is not None and in_double:
        ref = partial(_in_double, ref)
    CASES.append(OpCase(name, partial(fun, sla), args, ref=ref, **kw))


def _in_double(ref, *args):
    return ref(*(a.astype(np.float64) for a in args)).astype(np.result_type(*args))


for trans, lower, unit, sb in [
    (0, True, False, (3,)),
    (0, False, False, (3, 2)),
    (1, True, False, (3, 2)),
    ("T", False, True, (3,)),
    (2, True, True, (3, 1)),
]:
    _scipy_case(
        f"solve_triangular[{trans},{lower},{unit}]{sb}",
        lambda m, a, b, t=trans, lo=lower, u=unit: m.solve_triangular(
            a, b, trans=t, lower=lo, unit_diagonal=u
        ),
        (_well(3, 3), arr(*sb)),
    )
CASES.append(
    OpCase(  # stacks (SciPy's batching reads a 2-D b as one right-hand side matrix)
        "solve_triangular(2,3,3)(3,2)",
        lambda a, b: sla.solve_triangular(a, b, lower=True),
        (_well(2, 3, 3), arr(3, 2)),
    )
)
_scipy_case("scipy_cholesky_upper", lambda m, x: m.cholesky(_spd(x)), (arr(3, 3),))
_scipy_case("scipy_cholesky_lower", lambda m, x: m.cholesky(_spd(x), lower=True), (arr(3, 3),))
for lower in (False, True):
    _scipy_case(
        f"cho_solve[{lower}]",
        lambda m, x, b, lo=lower: m.cho_solve(m.cho_factor(_spd(x), lower=lo), b),
        (arr(3, 3), arr(3, 2)),
    )
for assume_a in (None, "sym", "pos", "diagonal", "tridiagonal", "lower triangular"):
    _scipy_case(
        f"scipy_solve[{assume_a}]",
        lambda m, a, b, k=assume_a: m.solve(a, b, assume_a=k),
        (_well(3, 3), arr(3)),
        in_double=True,
    )
_scipy_case(
    "scipy_solve_transposed",
    lambda m, a, b: m.solve(a, b, transposed=True),
    (_well(3, 3), arr(3, 2)),
)
# SciPy's own inv and det round differently in float32: NumPy's are the reference (test_linalg.py
# compares with SciPy's at a float32 tolerance).
CASES.append(OpCase("scipy_inv", sla.inv, (_well(3, 3),), ref=np.linalg.inv))
CASES.append(OpCase("scipy_det", sla.det, (arr(3, 3),), ref=np.linalg.det))
_scipy_case("scipy_inv_pos", lambda m, x: m.inv(_spd(x), assume_a="pos"), (arr(3, 3),))
_scipy_case(
    "scipy_solve_pos_lower",
    lambda m, x, b: m.solve(_spd(x), b, assume_a="pos", lower=True),
    (arr(3, 3), arr(3)),
)
# expm: a small norm (a low Pade degree), a large one (scaling and squaring), a stack. It works
# in double precision (SciPy's float32 expm rounds in float32): the reference does the same.
for name, a in [("expm_small", arr(3, 3) / 20), ("expm", arr(3, 3)), ("expm(2,3,3)", arr(2, 3, 3))]:
    CASES.append(
        OpCase(
            name,
            sla.expm,
            (a,),
            ref=None
            if scipy_linalg is None
            else (lambda a: scipy_linalg.expm(a.astype(np.float64)).astype(a.dtype)),
        )
    )
