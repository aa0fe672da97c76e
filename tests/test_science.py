"""Scientific examples end to end: a parametrised quantum circuit (complex expm) and sharp edges."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.scipy.linalg import expm

rng = np.random.default_rng(7)


def _hermitian(n):
    a = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    return (a + a.conj().T) / 2


H1, H2, H3 = _hermitian(4), _hermitian(4), _hermitian(4)
PSI0 = np.array([1.0, 0.0, 0.0, 0.0], dtype=complex)


def energy(theta):
    """<psi(theta)| H2 |psi(theta)> with psi = exp(-i (t0 H1 + t1 H3)) psi0: real-valued."""
    generator = -1j * (theta[0] * H1 + theta[1] * H3)
    psi = expm(generator) @ PSI0
    return anp.real(anp.vdot(psi, H2 @ psi))


def test_quantum_expectation_gradient_matches_finite_differences():
    theta = np.array([0.4, -0.7])
    g = ad.grad(energy)(theta)
    h = 1e-6
    fd = [(energy(theta + h * e) - energy(theta - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    assert g.dtype == np.float64
    # Hessian: forward-over-reverse equals differences of the gradient
    hess = ad.hessian(energy)(theta)
    fd2 = np.stack(
        [
            (ad.grad(energy)(theta + h * e) - ad.grad(energy)(theta - h * e)) / (2 * h)
            for e in np.eye(2)
        ]
    )
    np.testing.assert_allclose(hess, fd2, rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------------- sharp edges


def test_nan_through_where_and_the_double_where_fix():
    x = np.array([-1.0, 4.0])
    # The naive form: where selects 0 for x < 0, but sqrt's derivative there is nan, and
    # 0 * nan = nan flows into the gradient.
    naive = ad.grad(lambda x: anp.sum(anp.where(x > 0, anp.sqrt(x), 0.0)))
    with np.errstate(invalid="ignore"):
        assert np.isnan(naive(x)[0])
    # The fix: make the unselected branch's input safe too.
    safe = ad.grad(lambda x: anp.sum(anp.where(x > 0, anp.sqrt(anp.where(x > 0, x, 1.0)), 0.0)))
    np.testing.assert_allclose(safe(x), [0.0, 0.25])


def test_sqrt_and_norm_at_zero():
    with np.errstate(divide="ignore"):
        assert np.isinf(ad.grad(anp.sqrt)(0.0))
    # the 2-norm uses the subgradient 0 at the origin
    np.testing.assert_array_equal(ad.grad(anp.linalg.norm)(np.zeros(3)), np.zeros(3))


def test_abs_at_zero_and_max_ties():
    assert ad.grad(anp.abs)(0.0) == 0.0
    # ties in a max reduction split the gradient evenly
    np.testing.assert_allclose(ad.grad(anp.max)(np.array([1.0, 3.0, 3.0])), [0.0, 0.5, 0.5])
    # elementwise maximum gives each side half on a tie
    assert ad.grad(lambda x: anp.maximum(x, 2.0))(2.0) == 0.5


@pytest.mark.parametrize("f", [anp.floor, anp.ceil, anp.round, anp.sign])
def test_piecewise_constant_functions_have_zero_derivative(f):
    assert ad.grad(lambda x: f(x) * 1.0 + 0.0 * x)(1.3) == 0.0
