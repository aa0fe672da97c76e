"""Linear algebra (numpy.linalg, scipy.linalg): a Gaussian-process likelihood to second order,
eigh/svd gauges and degeneracies, norm at the origin, conventions (symmetric derivatives,
triangles read), NumPy/SciPy semantics (result types, dtypes, errors, lstsq, matrix_rank,
cond), dispatch."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
import autodiff.numpy.linalg as la
import autodiff.scipy.linalg as sla
from autodiff.testing import check_grads, numerical_jvp

rng = np.random.default_rng(0)


def _fd_grad(f, x, eps=1e-5):
    """Central-difference gradient of a scalar function."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _fd_jacobian(f, x, eps=1e-5):
    cols = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


def _symmetric_with_spectrum(w, seed=1):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(w), len(w))))
    return q @ np.diag(w) @ q.T


# ------------------------------------------------------------------ Gaussian-process likelihood

X_TRAIN = np.linspace(-2.0, 2.0, 7)[:, None] + 0.1 * rng.standard_normal((7, 1))
Y_TRAIN = np.sin(2.0 * X_TRAIN[:, 0]) + 0.1 * rng.standard_normal(7)


def _gp_nll(theta, xp=anp, linalg=sla):
    """Negative log marginal likelihood of a GP with an RBF kernel; theta = log(l, s2, noise)."""
    lengthscale, signal, noise = xp.exp(theta[0]), xp.exp(theta[1]), xp.exp(theta[2])
    sq = (X_TRAIN - X_TRAIN.T) ** 2
    k = signal * xp.exp(-0.5 * sq / lengthscale**2) + noise * np.eye(len(Y_TRAIN))
    chol = linalg.cholesky(k, lower=True)
    alpha = linalg.solve_triangular(chol, Y_TRAIN, lower=True)
    log_det = 2.0 * xp.sum(xp.log(xp.diagonal(chol) if xp is np else la.diagonal(chol)))
    return 0.5 * xp.sum(alpha * alpha) + 0.5 * log_det + 0.5 * len(Y_TRAIN) * np.log(2 * np.pi)


THETA = np.array([np.log(0.8), np.log(1.3), np.log(0.05)])


def test_gp_nll_value_matches_numpy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    want = _gp_nll(THETA, np, scipy_linalg)
    assert np.isclose(_gp_nll(THETA), want, rtol=1e-12)


def test_gp_nll_gradient_matches_finite_differences_and_the_closed_form():
    grad = ad.grad(_gp_nll)(THETA)
    np.testing.assert_allclose(grad, _fd_grad(_gp_nll, THETA), rtol=1e-6, atol=1e-8)
    # d nll / d theta = 0.5 tr((K^-1 - alpha alpha^T) dK/dtheta)
    lengthscale, signal, noise = np.exp(THETA)
    sq = (X_TRAIN - X_TRAIN.T) ** 2
    rbf = signal * np.exp(-0.5 * sq / lengthscale**2)
    k = rbf + noise * np.eye(len(Y_TRAIN))
    k_inv = np.linalg.inv(k)
    alpha = k_inv @ Y_TRAIN
    dks = [rbf * sq / lengthscale**2, rbf, noise * np.eye(len(Y_TRAIN))]
    closed = [0.5 * np.trace((k_inv - np.outer(alpha, alpha)) @ dk) for dk in dks]
    np.testing.assert_allclose(grad, closed, rtol=1e-8)


def test_gp_nll_hessian_matches_finite_differences():
    hess = ad.hessian(_gp_nll)(THETA)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-10, atol=1e-10)
    fd = _fd_jacobian(ad.grad(_gp_nll), THETA)
    np.testing.assert_allclose(hess, fd, rtol=1e-6, atol=1e-7)
    # forward-over-reverse and reverse-over-reverse agree
    rev_rev = ad.jacrev(ad.grad(_gp_nll))(THETA)
    np.testing.assert_allclose(rev_rev, hess, rtol=1e-10, atol=1e-12)


def test_gp_nll_through_numpy_linalg_and_cho_solve():
    def nll(theta):
        lengthscale, signal, noise = anp.exp(theta[0]), anp.exp(theta[1]), anp.exp(theta[2])
        sq = (X_TRAIN - X_TRAIN.T) ** 2
        k = signal * anp.exp(-0.5 * sq / lengthscale**2) + noise * np.eye(len(Y_TRAIN))
        alpha = sla.cho_solve(sla.cho_factor(k, lower=True), Y_TRAIN)
        return 0.5 * anp.sum(Y_TRAIN * alpha) + 0.5 * la.slogdet(k).logabsdet

    offset = 0.5 * len(Y_TRAIN) * np.log(2 * np.pi)
    assert np.isclose(nll(THETA) + offset, _gp_nll(THETA), rtol=1e-10)
    np.testing.assert_allclose(ad.grad(nll)(THETA), ad.grad(_gp_nll)(THETA), rtol=1e-8)
    np.testing.assert_allclose(ad.hessian(nll)(THETA), ad.hessian(_gp_nll)(THETA), rtol=1e-7)
    check_grads(nll, (THETA,), order=2, modes=("fwd", "rev"))


def test_gp_nll_batched_over_hyperparameters():
    thetas = THETA + 0.1 * rng.standard_normal((4, 3))
    got = ad.vmap(ad.grad(_gp_nll))(thetas)
    np.testing.assert_allclose(got, np.stack([ad.grad(_gp_nll)(t) for t in thetas]), rtol=1e-12)


# ------------------------------------------------------------------ eigh and svd: gauges, degeneracy


def test_eigh_gradient_of_weighted_eigenvalues_is_folded_into_the_triangle_read():
    a = _symmetric_with_spectrum(np.array([-1.0, 0.5, 2.0, 3.5]))
    c = np.array([1.0, -2.0, 0.5, 3.0])
    w, v = np.linalg.eigh(a)
    sym_grad = v @ np.diag(c) @ v.T  # the gradient as a function of symmetric matrices
    for uplo, fold in (("L", np.tril), ("U", np.triu)):
        grad = ad.grad(lambda a: anp.sum(c * la.eigvalsh(a, uplo)))(a)
        want = fold(2 * sym_grad) - np.diag(np.diag(sym_grad))  # off-diagonal pairs folded
        np.testing.assert_allclose(grad, want, rtol=1e-10, atol=1e-12)
        # what NumPy computes reads one triangle: the other one has no influence
        fd = _fd_grad(lambda x: float(np.sum(c * np.linalg.eigvalsh(x, uplo))), a)
        np.testing.assert_allclose(grad, fd, atol=1e-7)
        grad_eigh = ad.grad(lambda a: anp.sum(c * la.eigh(a, uplo)[0]))(a)
        np.testing.assert_allclose(grad_eigh, grad, atol=1e-12)
        # a matrix built symmetric gets the symmetric chain rule
        np.testing.assert_allclose(
            ad.grad(lambda a: anp.sum(c * la.eigvalsh((a + a.T) / 2, uplo)))(a),
            sym_grad,
            atol=1e-12,
        )


def test_eigh_of_a_non_symmetric_matrix_differentiates_what_numpy_computes():
    a = rng.standard_normal((4, 4))
    x = rng.standard_normal(4)
    for uplo in "LU":

        def f(a, xp, uplo=uplo):
            w, v = xp.linalg.eigh(a, uplo)
            return xp.sum(w**3) + xp.sum(v * np.arange(4.0)) + xp.sum((v.T @ x) ** 2 * w)

        grad = ad.grad(lambda a: f(a, anp))(a)
        np.testing.assert_allclose(grad, _fd_grad(lambda a: f(a, np), a), rtol=1e-6, atol=1e-8)
        other = np.triu(np.ones((4, 4)), 1) if uplo == "L" else np.tril(np.ones((4, 4)), -1)
        assert np.all(grad[other == 1] == 0)


def test_eigh_projection_gradient_matches_finite_differences():
    a = _symmetric_with_spectrum(np.array([-2.0, 0.0, 1.0, 4.0]))
    x = rng.standard_normal(4)

    def f(a, xp):
        w, v = xp.linalg.eigh((a + a.T) / 2)
        return xp.sum(w * (v.T @ x) ** 2 * np.arange(1.0, 5.0))

    np.testing.assert_allclose(
        ad.grad(lambda a: f(a, anp))(a), _fd_grad(lambda a: f(a, np), a), rtol=1e-6, atol=1e-8
    )


def test_eigh_degenerate_eigenvalues_give_nonfinite_vector_derivatives():
    x = np.array([1.0, 2.0, 3.0])

    def f(a):
        return anp.sum((la.eigh(a).eigenvectors.T @ x) ** 2 * np.arange(3.0))

    with np.errstate(divide="ignore", invalid="ignore"):
        g = ad.grad(f)(np.diag([1.0, 1.0, 3.0]))  # exactly degenerate
        assert not np.all(np.isfinite(g))
        near = _symmetric_with_spectrum(np.array([1.0, 1.0, 3.0]))  # equal up to rounding
        assert np.abs(ad.grad(f)((near + near.T) / 2)).max() > 1e8
    # eigenvalues alone are fine at a degeneracy of a rotation-invariant function
    g = ad.grad(lambda a: anp.sum(la.eigvalsh(a)))(np.diag([1.0, 1.0, 3.0]))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)


def test_svd_projection_gradient_matches_finite_differences():
    for shape in [(4, 3), (3, 5), (3, 3)]:
        a = rng.standard_normal(shape)
        x, y = rng.standard_normal(shape[0]), rng.standard_normal(shape[1])

        def f(a, xp):
            u, s, vh = xp.linalg.svd(a, full_matrices=False)
            return xp.sum(s * (u.T @ x) ** 2) + xp.sum(s**2 * (vh @ y) ** 2)

        np.testing.assert_allclose(
            ad.grad(lambda a: f(a, anp))(a), _fd_grad(lambda a: f(a, np), a), rtol=1e-6, atol=1e-8
        )


def test_singular_value_gradient_is_outer_product_of_singular_vectors():
    a = rng.standard_normal((4, 3))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    jac = ad.jacrev(lambda a: la.svd(a, compute_uv=False))(a)
    np.testing.assert_allclose(jac, np.einsum("ik,kj->kij", u, vh), atol=1e-12)
    np.testing.assert_allclose(ad.grad(lambda a: la.norm(a, "nuc"))(a), u @ vh, atol=1e-12)


def test_svd_full_matrices_values_and_derivatives_of_the_extra_columns():
    a = rng.standard_normal((4, 2))
    u, s, vh = la.svd(a)
    want = np.linalg.svd(a)
    assert u.shape == (4, 4) and vh.shape == (2, 2)
    for got, ref in zip((u, s, vh), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)
    x = rng.standard_normal(4)

    def invariant(a, xp):  # the extra columns through what does not depend on their basis
        u, s, vh = xp.linalg.svd(a)
        u1, u2 = u[:, :2], u[:, 2:]
        return xp.sum((u2.T @ x) ** 2) + xp.sum(u1 * np.arange(8.0).reshape(4, 2)) + s[0]

    np.testing.assert_allclose(
        ad.grad(lambda a: invariant(a, anp))(a), _fd_grad(lambda a: invariant(a, np), a), atol=1e-8
    )
    for shape in [(4, 2), (2, 4)]:
        b = rng.standard_normal(shape)
        k = min(shape)

        def projections(b, k=k):
            u, _, vh = la.svd(b)
            return u[:, k:] @ u[:, k:].T, vh[k:].T @ vh[k:]

        check_grads(projections, (b,), order=2, modes=("fwd", "rev"))
        # the extra columns move as little as possible: U2^T dU2 = 0
        u, s, vh = la.svd(b)
        du, _, dvh = ad.jvp(la.svd, (b,), (rng.standard_normal(shape),))[1]
        np.testing.assert_allclose(u[:, k:].T @ du[:, k:], 0.0, atol=1e-12)
        np.testing.assert_allclose(dvh[k:] @ vh[k:].T, 0.0, atol=1e-12)
    # reverse mode differentiates the singular values alone as ever
    u, _, vh = np.linalg.svd(a)
    np.testing.assert_allclose(
        ad.grad(lambda a: la.svd(a)[1][0])(a), np.outer(u[:, 0], vh[0]), atol=1e-12
    )
    sq = rng.standard_normal((3, 3))
    check_grads(lambda a: la.svd(a)[0] @ la.svd(a)[2], (sq,), order=1, modes=("fwd", "rev"))


def test_qr_complete_tall_is_not_differentiable():
    a = rng.standard_normal((4, 2))
    q, r = la.qr(a, mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 2)
    with pytest.raises(NotImplementedError, match="mode='reduced'"):
        ad.grad(lambda a: anp.sum(la.qr(a, mode="complete").Q))(a)
    with pytest.raises(NotImplementedError, match="raw"):
        la.qr(a, mode="raw")


# ------------------------------------------------------------------ det at singular matrices

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def test_det_derivatives_at_a_singular_matrix_are_the_adjugates():
    adjugate_t = np.array([[4.0, -2.0], [-2.0, 1.0]])  # (JAX's gradient)
    np.testing.assert_allclose(ad.grad(la.det)(SINGULAR), adjugate_t, atol=1e-15)
    assert np.isclose(ad.jvp(la.det, (SINGULAR,), (np.eye(2),))[1], 5.0, rtol=1e-14)  # tr(adj)
    want = np.array([[0, 0, 0, 1], [0, 0, -1, 0], [0, -1, 0, 0], [1, 0, 0, 0]]).reshape(2, 2, 2, 2)
    np.testing.assert_allclose(ad.hessian(la.det)(SINGULAR), want, atol=1e-15)
    t = ad.tensor(SINGULAR, requires_grad=True)
    la.det(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), adjugate_t, atol=1e-15)


def test_det_hessian_at_rank_two_of_four_is_the_signed_minors():
    a = np.diag([0.0, 0.0, 2.0, 3.0])  # d2 det / da_00 da_11 = 6: not zero (rank n - 2)
    h = ad.hessian(la.det)(a)
    assert h[0, 0, 1, 1] == h[1, 1, 0, 0] == 6.0 and h[0, 1, 1, 0] == -6.0
    assert np.count_nonzero(h) == 4
    np.testing.assert_array_equal(ad.grad(la.det)(a), np.zeros((4, 4)))


def test_slogdet_derivative_at_a_singular_matrix_is_infinite_as_jaxs():
    with np.errstate(divide="ignore"):
        g = ad.grad(lambda a: la.slogdet(a).logabsdet)(SINGULAR)
        t = ad.jvp(lambda a: la.slogdet(a).logabsdet, (SINGULAR,), (np.eye(2),))[1]
    np.testing.assert_array_equal(g, [[np.inf, -np.inf], [-np.inf, np.inf]])
    assert t == np.inf


# ------------------------------------------------------------------ norm at the origin


@pytest.mark.parametrize(
    "ord_, axis", [(None, None), (2, None), (3, None), ("fro", (0, 1)), (None, 1), (2, 0), (1.5, 1)]
)
def test_norm_has_subgradient_zero_at_the_origin(ord_, axis):
    shape = (3,) if axis is None and ord_ not in ("fro",) else (2, 3)
    x = np.zeros(shape)

    def f(x):
        return anp.sum(la.norm(x, ord_, axis))

    assert f(x) == 0.0
    np.testing.assert_array_equal(ad.grad(f)(x), np.zeros(shape))
    np.testing.assert_array_equal(ad.jvp(f, (x,), (np.ones(shape),))[1], 0.0)
    if ord_ != 1.5:  # |x|**1.5 has an infinite second derivative at 0
        np.testing.assert_array_equal(ad.hessian(f)(x), 0.0)


def test_norm_away_from_zero_and_rows_at_zero():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    g = ad.grad(lambda x: anp.sum(la.norm(x, axis=1)))(x)
    np.testing.assert_allclose(g, [[0.6, 0.8], [0.0, 0.0]])
    g = ad.grad(lambda x: la.norm(x, np.inf))(np.array([1.0, -3.0, 2.0]))
    np.testing.assert_allclose(g, [0.0, -1.0, 0.0])


def test_norm_semantics_match_numpy():
    x = rng.standard_normal((2, 3, 4))
    for args in [(None, None, True), (0, 1, False), (2, (0, 1), True), ("nuc", (2, 1), False)]:
        np.testing.assert_allclose(la.norm(x, *args), np.linalg.norm(x, *args), rtol=1e-12)
    assert la.norm(np.arange(4)).dtype == np.linalg.norm(np.arange(4)).dtype
    assert la.norm(x.astype(np.float32), 2, 1).dtype == np.float32
    for bad in [("fro", 1), ("nuc", None)]:
        with pytest.raises(ValueError):
            la.norm(x if bad[1] is None else x[0, 0], *bad)
    with pytest.raises(ValueError, match="Invalid norm order for matrices"):
        la.norm(x[0], 3)


# ------------------------------------------------------------------ conventions


def test_cholesky_derivative_treats_the_input_as_symmetric():
    a = _symmetric_with_spectrum(np.array([1.0, 2.0, 4.0]))
    g = ad.grad(lambda a: anp.sum(la.cholesky(a) * np.arange(9.0).reshape(3, 3)))(a)
    np.testing.assert_allclose(g, g.T, atol=1e-12)
    d = rng.standard_normal((3, 3))
    t = ad.jvp(la.cholesky, (a,), (d,))[1]
    np.testing.assert_allclose(t, ad.jvp(la.cholesky, (a,), ((d + d.T) / 2,))[1], atol=1e-12)
    # along a symmetric direction it is the derivative of the values
    sym = (d + d.T) / 2
    np.testing.assert_allclose(
        t, numerical_jvp(np.linalg.cholesky, (a,), (sym,), 1e-6)[0], atol=1e-7
    )


def test_triangular_solve_reads_one_triangle():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = rng.standard_normal((3, 3)) + 4 * np.eye(3)
    b = rng.standard_normal(3)
    for lower in (True, False):
        for unit in (True, False):
            x = sla.solve_triangular(a, b, lower=lower, unit_diagonal=unit)
            want = scipy_linalg.solve_triangular(a, b, lower=lower, unit_diagonal=unit)
            np.testing.assert_allclose(x, want, rtol=1e-12)
            g = ad.grad(
                lambda a: anp.sum(sla.solve_triangular(a, b, lower=lower, unit_diagonal=unit))
            )(a)
            mask = np.tril(np.ones((3, 3)), -unit) if lower else np.triu(np.ones((3, 3)), unit)
            assert np.all(g[mask == 0] == 0) and np.all(g[mask == 1] != 0)


@pytest.mark.parametrize(
    "trans, lower, unit", [(0, True, False), (1, True, True), (0, False, True), ("C", False, False)]
)
def test_blocked_triangular_solve_matches_scipy(trans, lower, unit):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    n = 150  # several blocks
    a = rng.standard_normal((2, n, n)) / np.sqrt(n) + (2 + 1j) * np.eye(n)
    b = rng.standard_normal((n, 3))
    got = sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    for g, m in zip(got, a):
        want = scipy_linalg.solve_triangular(m, b, trans=trans, lower=lower, unit_diagonal=unit)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    got_1d = sla.solve_triangular(a[0].real, b[:, 0], trans=trans, lower=lower)
    want_1d = scipy_linalg.solve_triangular(a[0].real, b[:, 0], trans=trans, lower=lower)
    np.testing.assert_allclose(got_1d, want_1d, rtol=1e-12)
    assert got_1d.dtype == np.float64


def test_complex_holomorphic_functions():
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    np.testing.assert_allclose(la.inv(a), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(la.solve(a, b), np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(la.det(a), np.linalg.det(a), rtol=1e-12)
    # JAX convention: the jvp of a holomorphic function is J @ t with complex J
    d = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    t = ad.jvp(la.det, (a,), (d,))[1]
    eps = 1e-6
    np.testing.assert_allclose(
        t, (np.linalg.det(a + eps * d) - np.linalg.det(a - eps * d)) / (2 * eps), rtol=1e-6
    )
    with pytest.raises(NotImplementedError, match="complex"):
        ad.grad(lambda a: anp.real(anp.sum(la.qr(a)[1])))(a)


# ------------------------------------------------------------------ NumPy / SciPy semantics


def test_result_types_dtypes_and_float32_gradients():
    a32 = (rng.standard_normal((3, 3)) + 4 * np.eye(3)).astype(np.float32)
    spd = a32 @ a32.T
    for name, got, want in [
        ("eigh", la.eigh(spd), np.linalg.eigh(spd)),
        ("svd", la.svd(a32), np.linalg.svd(a32)),
        ("qr", la.qr(a32), np.linalg.qr(a32)),
        ("slogdet", la.slogdet(a32), np.linalg.slogdet(a32)),
    ]:
        assert type(got).__name__ == type(want).__name__ and got._fields == want._fields, name
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype, name
    for f in (
        la.inv,
        la.cholesky,
        lambda a: la.eigh(a)[1],
        lambda a: la.svd(a)[0],
        la.pinv,
        lambda a: la.qr(a)[1],
        la.det,
        lambda a: la.slogdet(a)[1],
        sla.expm,
    ):
        out, pullback = ad.vjp(f, spd)
        (g,) = pullback(np.ones_like(out))
        assert out.dtype == g.dtype == np.float32
    assert la.inv(np.eye(2, dtype=int)).dtype == np.float64
    assert sla.expm(np.eye(2, dtype=np.float32)).dtype == np.float32


def test_scipy_values():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = rng.standard_normal((3, 3))
    for x in (a, a.astype(np.float32)):
        rtol = 1e-5 if x.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(sla.inv(x), scipy_linalg.inv(x), rtol=rtol)
        np.testing.assert_allclose(sla.det(x), scipy_linalg.det(x), rtol=rtol)
    spd = a @ a.T + np.eye(3)
    c, lower = sla.cho_factor(spd)
    c_ref, lower_ref = scipy_linalg.cho_factor(spd)
    assert lower == lower_ref
    np.testing.assert_allclose(np.triu(c), np.triu(c_ref), rtol=1e-12)
    assert np.all(np.tril(c, -1) == 0)


@pytest.mark.parametrize("scale", [1e-3, 0.1, 1.0, 10.0, 50.0])
def test_expm_matches_scipy_and_its_frechet_derivative(scale):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = scale * rng.standard_normal((4, 4))
    e = rng.standard_normal((4, 4))
    want, frechet = scipy_linalg.expm_frechet(a, e)
    np.testing.assert_allclose(sla.expm(a), want, rtol=1e-11, atol=1e-13 * np.abs(want).max())
    _, t = ad.jvp(sla.expm, (a,), (e,))
    np.testing.assert_allclose(t, frechet, rtol=1e-8, atol=1e-11 * np.abs(frechet).max())
    g = rng.standard_normal((4, 4))
    (ct,) = ad.vjp(sla.expm, a)[1](g)
    assert np.isclose(np.sum(ct * e), np.sum(g * frechet), rtol=1e-8)


def test_expm_complex_and_stacks():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(sla.expm(a), np.stack([scipy_linalg.expm(m) for m in a]), rtol=1e-11)
    assert np.all(np.isnan(sla.expm(np.full((2, 2), np.nan))))
    assert sla.expm(np.zeros((0, 0))).shape == (0, 0)


def test_lstsq_matches_numpy_and_rank_deficient_problems():
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((5, 2))
    for got, want in zip(la.lstsq(a, b), np.linalg.lstsq(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    deficient = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    x, res, rank, s = la.lstsq(deficient, np.array([1.0, 2.0, 3.0]))
    assert rank == 1 and res.shape == (0,)
    np.testing.assert_allclose(x, [0.75, 0.75])
    # the minimum-norm solution differentiates like pinv(a) @ b
    bb = rng.standard_normal(5)
    np.testing.assert_allclose(
        ad.grad(lambda a: anp.sum(la.lstsq(a, bb)[0] ** 2))(a),
        ad.grad(lambda a: anp.sum((la.pinv(a) @ bb) ** 2))(a),
        rtol=1e-8,
    )
    with pytest.raises(la.LinAlgError, match="Incompatible dimensions"):
        la.lstsq(a, b[:4])


def test_matrix_rank_and_cond():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert la.matrix_rank(a) == np.linalg.matrix_rank(a) == 1
    stack = np.stack([a, np.eye(2), np.zeros((2, 2))])
    np.testing.assert_array_equal(la.matrix_rank(stack), np.linalg.matrix_rank(stack))
    np.testing.assert_array_equal(ad.vmap(la.matrix_rank)(stack), [1, 2, 0])
    assert la.matrix_rank(np.array([0.0, 1.0])) == 1
    for p in (None, 1, "fro", -2):
        np.testing.assert_allclose(la.cond(stack[:2], p), np.linalg.cond(stack[:2], p))
    assert np.isnan(la.cond(np.array([[np.nan, 0.0], [0.0, 1.0]]), 1))  # NaN input: NaN, not inf


def test_errors_follow_numpy():
    with pytest.raises(la.LinAlgError, match="square"):
        la.inv(np.ones((2, 3)))
    with pytest.raises(la.LinAlgError, match="at least two-dimensional"):
        la.det(np.ones(3))
    with pytest.raises(la.LinAlgError):
        la.cholesky(-np.eye(2))
    with pytest.raises(ValueError, match="incompatible"):
        sla.solve_triangular(np.eye(3), np.ones(2))
    with pytest.raises(NotImplementedError, match="banded"):
        sla.solve(np.eye(2), np.ones(2), assume_a="banded")
    with pytest.raises(TypeError, match="integer"):
        la.matrix_power(np.eye(2), 1.5)


# ------------------------------------------------------------------ transforms and dispatch


def test_plain_numpy_linalg_dispatches_on_tensors_and_tracers():
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    g = ad.grad(lambda a: np.linalg.det(a) + np.linalg.norm(np.linalg.inv(a)))(a)
    want = ad.grad(lambda a: la.det(a) + la.norm(la.inv(a)))(a)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    t = ad.tensor(a, requires_grad=True)
    np.linalg.slogdet(t).logabsdet.backward()
    np.testing.assert_allclose(t.grad.numpy(), np.linalg.inv(a).T, rtol=1e-12)


def test_vmap_with_batch_axis_in_the_middle_and_per_example_jacobians():
    a = rng.standard_normal((3, 4, 3)) + 3 * np.eye(3)[:, None, :]  # batch axis 1
    got = ad.vmap(la.inv, in_axes=1)(a)
    np.testing.assert_allclose(got, np.linalg.inv(np.moveaxis(a, 1, 0)), rtol=1e-12)
    w, v = ad.vmap(lambda m: tuple(la.eigh(m @ m.T)), in_axes=1, out_axes=(0, 2))(a)
    assert w.shape == (4, 3) and v.shape == (3, 3, 4)
    jac = ad.vmap(ad.jacrev(lambda m: la.slogdet(m).logabsdet), in_axes=1)(a)
    np.testing.assert_allclose(
        jac, np.swapaxes(np.linalg.inv(np.moveaxis(a, 1, 0)), -1, -2), rtol=1e-10
    )


def test_matrix_power_negative_and_zero():
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    for n in (-3, -1, 0, 7):
        np.testing.assert_allclose(la.matrix_power(a, n), np.linalg.matrix_power(a, n), rtol=1e-12)
    np.testing.assert_array_equal(ad.grad(lambda a: anp.sum(la.matrix_power(a, 0)))(a), 0.0)
