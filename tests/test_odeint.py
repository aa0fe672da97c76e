"""autodiff.scipy.integrate.odeint: values (SciPy, closed forms), the adjoint method's
derivatives (closed forms, discretise-then-differentiate, jax.experimental.ode), transforms
(jit, vmap, grad, jacrev, jvp), SciPy's keywords, and memory that does not grow with the steps."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.scipy.integrate import odeint
from autodiff.staging.call import wait_for_tier_up
from autodiff.testing import check_grads

si = pytest.importorskip("scipy.integrate")
sla = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(36)
P = np.array([1.0, 0.4, 0.8, 0.3])  # Lotka-Volterra rates
Y0 = np.array([1.0, 0.5])


def lotka_volterra(y, t, p):
    prey, predators = y[0], y[1]
    return anp.stack(
        [p[0] * prey - p[1] * prey * predators, -p[2] * predators + p[3] * prey * predators]
    )


def lotka_volterra_np(y, t, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])


def forced(y, t, k):  # (depends on t: the times' derivatives see it)
    return -k * y + anp.sin(t)


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


# --------------------------------------------------------------------------------- values


@pytest.mark.parametrize("adjoint", [True, False])
def test_values_match_scipy(adjoint):
    ts = np.linspace(0.0, 5.0, 11)
    want = si.odeint(lotka_volterra_np, Y0, ts, (P,), rtol=1e-12, atol=1e-12)
    got = odeint(lotka_volterra, Y0, ts, (P,), adjoint=adjoint)
    assert got.shape == (11, 2) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_decreasing_and_repeated_times_and_tfirst():
    ts = np.array([0.0, 0.5, 0.5, 1.5, 2.0])
    want = si.odeint(lambda y, t, k: -k * y + np.sin(t), Y0, ts, (0.5,), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(odeint(forced, Y0, ts, (0.5,)), want, atol=1e-7)
    back = odeint(forced, want[-1], ts[::-1], (0.5,))
    np.testing.assert_allclose(back, want[::-1], atol=1e-7)
    first = odeint(lambda t, y, k: forced(y, t, k), Y0, ts, (0.5,), tfirst=True)
    np.testing.assert_allclose(first, want, atol=1e-7)


def test_linear_system_closed_form():
    a = np.array([[-0.5, 1.0], [-1.0, -0.3]])
    ts = np.linspace(0.0, 3.0, 7)
    got = odeint(lambda y, t: a @ y, Y0, ts)
    want = np.stack([sla.expm(a * t) @ Y0 for t in ts])
    np.testing.assert_allclose(got, want, atol=1e-7)


def test_state_of_any_shape_and_integer_inputs():
    y0 = np.arange(6).reshape(2, 3)  # (integers: integrated as float64)
    got = odeint(lambda y, t: -y, y0, [0, 1])
    assert got.shape == (2, 2, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got[1], y0 * np.exp(-1.0), rtol=1e-7)


@pytest.mark.parametrize("adjoint", [True, False])
def test_one_time_lists_and_python_control_flow(adjoint):
    y0 = np.array([1.0, 0.0])
    start = ad.grad(lambda y: anp.sum(odeint(lambda y, t: -y, y, [0.5], adjoint=adjoint)))(y0)
    np.testing.assert_array_equal(start, [1.0, 1.0])

    def as_list(y, t, k):  # (SciPy's examples return lists)
        return [-k * y[0], y[0] - y[1]]

    ys = odeint(as_list, y0, [0.0, 1.0], (2.0,), adjoint=adjoint)
    np.testing.assert_allclose(ys[1], [np.exp(-2.0), np.exp(-1.0) - np.exp(-2.0)], rtol=1e-7)

    def piecewise(y, t):  # (Python control flow on t: eager code, differentiated as it runs)
        return -y if t < 0.5 else -2.0 * y

    ys = odeint(piecewise, y0, [0.0, 1.0], adjoint=adjoint)
    np.testing.assert_allclose(ys[1], [np.exp(-1.5), 0.0], rtol=1e-5)
    if adjoint:
        with pytest.raises(TypeError, match="adjoint=False"):
            ad.grad(lambda y: odeint(piecewise, y, [0.0, 1.0])[1, 0])(y0)
    else:
        g = ad.grad(lambda y: odeint(piecewise, y, [0.0, 1.0], adjoint=False)[1, 0])(y0)
        np.testing.assert_allclose(g, [np.exp(-1.5), 0.0], rtol=1e-5)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-7)])
def test_float32_stays_float32(dtype, tol):
    ts = np.linspace(0.0, 2.0, 5).astype(dtype)
    y0 = Y0.astype(dtype)
    got = odeint(forced, y0, ts, (dtype(0.5),), rtol=tol / 10, atol=tol / 10)
    assert got.dtype == dtype
    want = si.odeint(lambda y, t, k: -k * y + np.sin(t), Y0, ts, (0.5,), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, want, atol=tol)
    g = ad.grad(lambda k: anp.sum(odeint(forced, y0, ts, (k,), rtol=tol / 10, atol=tol / 10)))
    assert g(dtype(0.5)).dtype == dtype
    np.testing.assert_allclose(ad.jit(g)(dtype(0.5)), g(dtype(0.5)), rtol=10 * tol)
    batched = ad.vmap(g)(np.array([0.5, 0.6], dtype))
    assert batched.dtype == dtype
    np.testing.assert_allclose(batched[1], g(dtype(0.6)), rtol=10 * tol)


# ------------------------------------------------------------------- adjoint derivatives


def test_adjoint_closed_form_decay():
    """y = y0 exp(-k (t - t0)): derivatives in y0, k and every time."""
    ts, k, y0 = np.array([0.2, 0.7, 1.5, 2.0]), 0.8, np.array([1.5])
    weights = np.array([0.3, -1.0, 2.0, 0.5])

    def loss(y0, ts, k):
        return anp.sum(weights * odeint(lambda y, t, k: -k * y, y0, ts, (k,))[:, 0])

    g_y0, g_ts, g_k = ad.grad(loss, argnums=(0, 1, 2))(y0, ts, k)
    decay = np.exp(-k * (ts - ts[0]))
    np.testing.assert_allclose(g_y0, [np.sum(weights * decay)], rtol=1e-7)
    np.testing.assert_allclose(g_k, -np.sum(weights * (ts - ts[0]) * decay) * y0[0], rtol=1e-7)
    want_ts = weights * -k * y0[0] * decay
    want_ts[0] = -np.sum(want_ts[1:])  # (moving the start shifts every later value)
    np.testing.assert_allclose(g_ts, want_ts, rtol=1e-6, atol=1e-9)


def test_adjoint_matrix_closed_form():
    a = np.array([[-0.5, 1.0], [-1.0, -0.3]])
    ts, g = np.array([0.0, 1.0, 2.5]), RNG.standard_normal((3, 2))
    got = ad.grad(lambda y0: anp.sum(g * odeint(lambda y, t: a @ y, y0, ts)))(Y0)
    want = sum(sla.expm(a * t).T @ gi for t, gi in zip(ts, g))
    np.testing.assert_allclose(got, want, atol=1e-7)


def _lv_loss(adjoint):
    def loss(y0, ts, p):
        return anp.sum(odeint(lotka_volterra, y0, ts, (p,), adjoint=adjoint) ** 2)

    return loss


def test_adjoint_matches_discretise_then_differentiate():
    ts = np.linspace(0.0, 5.0, 11)
    adjoint = ad.grad(_lv_loss(True), argnums=(0, 1, 2))(Y0, ts, P)
    discrete = ad.grad(_lv_loss(False), argnums=(0, 1, 2))(Y0, ts, P)
    for a, d in zip(adjoint, discrete):
        np.testing.assert_allclose(a, d, rtol=2e-5, atol=1e-4)


def test_matches_jax_values_and_gradients(jax):
    from jax.experimental.ode import odeint as jax_odeint

    jnp = jax.numpy

    def jax_lv(y, t, p):
        return jnp.stack([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])

    ts = np.linspace(0.0, 5.0, 11)
    np.testing.assert_allclose(
        odeint(lotka_volterra, Y0, ts, (P,)), jax_odeint(jax_lv, Y0, ts, P), atol=1e-6
    )
    ours = ad.grad(_lv_loss(True), argnums=(0, 1, 2))(Y0, ts, P)
    theirs = jax.grad(lambda y, t, p: jnp.sum(jax_odeint(jax_lv, y, t, p) ** 2), (0, 1, 2))(
        Y0, ts, P
    )
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_checkpoints_make_a_dissipative_systems_adjoint_accurate():
    """Lorenz's system contracts strongly forward, so y recomputed backwards over a long
    interval drifts (as in JAX's adjoint); checkpoints bound the drift to a sub-interval."""

    def lorenz(y, t, p):
        s, r, b = p[0], p[1], p[2]
        return anp.stack([s * (y[1] - y[0]), y[0] * (r - y[2]) - y[1], y[0] * y[1] - b * y[2]])

    y0, p, ts = np.ones(3), np.array([10.0, 28.0, 8 / 3]), np.array([0.0, 1.0, 2.0])

    def loss(adjoint, checkpoints=1):
        return lambda y0, ts, p: anp.sum(
            odeint(lorenz, y0, ts, (p,), adjoint=adjoint, checkpoints=checkpoints)[-1]
        )

    want = ad.grad(loss(False), argnums=(0, 1, 2))(y0, ts, p)
    got = ad.grad(loss(True, 10), argnums=(0, 1, 2))(y0, ts, p)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    ys, info = odeint(lorenz, y0, ts, (p,), checkpoints=4, full_output=True)
    np.testing.assert_allclose(ys, odeint(lorenz, y0, ts, (p,)), rtol=1e-6, atol=1e-6)
    assert info["nst"].shape == (2,) and np.all(info["tcur"] >= ts[1:])


def test_closed_over_values_get_derivatives():
    ts = np.linspace(0.0, 2.0, 5)

    def loss(k):
        return anp.sum(odeint(lambda y, t: -k * y, Y0, ts))

    want = -np.sum(ts * np.exp(-0.7 * ts)) * Y0.sum()
    np.testing.assert_allclose(ad.grad(loss)(0.7), want, rtol=1e-7)
    np.testing.assert_allclose(ad.jit(ad.grad(loss))(0.7), want, rtol=1e-7)


def test_second_order_through_the_adjoint():
    """d2/dk2 of y(2) for y' = -k y + sin t, y(0) = 1: the adjoint of the adjoint."""
    ts = np.array([0.0, 2.0])

    def y_end(k):
        return odeint(forced, np.array([1.0]), ts, (k,), rtol=1e-11, atol=1e-11)[1, 0]

    def exact(k):
        quad = si.quad(lambda s: np.exp(-k * (2.0 - s)) * np.sin(s), 0.0, 2.0, epsabs=1e-14)[0]
        return np.exp(-2.0 * k) + quad

    h = 1e-3
    want = (exact(0.5 + h) - 2 * exact(0.5) + exact(0.5 - h)) / h**2
    np.testing.assert_allclose(ad.grad(ad.grad(y_end))(0.5), want, rtol=1e-5)


def test_check_grads_both_methods():
    ts = np.linspace(0.1, 0.6, 4)
    for adjoint in (True, False):
        check_grads(
            lambda y, t, k: odeint(forced, y, t, (k,), adjoint=adjoint), (Y0, ts, 0.5), order=1
        )


# ---------------------------------------------------------------------------- transforms


@pytest.mark.parametrize("adjoint", [True, False])
def test_jit_values(adjoint):
    ts = np.linspace(0.0, 5.0, 11)
    f = ad.jit(lambda y0, ts, p: odeint(lotka_volterra, y0, ts, (p,), adjoint=adjoint))
    np.testing.assert_allclose(f(Y0, ts, P), odeint(lotka_volterra, Y0, ts, (P,)), atol=1e-12)
    np.testing.assert_allclose(
        f(Y0 * 1.1, ts, P), odeint(lotka_volterra, Y0 * 1.1, ts, (P,)), atol=1e-12
    )


def test_jit_of_grad_and_grad_of_jit():
    ts = np.linspace(0.0, 5.0, 11)
    want = ad.grad(_lv_loss(True), argnums=(0, 1, 2))(Y0, ts, P)
    for got in (
        ad.jit(ad.grad(_lv_loss(True), argnums=(0, 1, 2)))(Y0, ts, P),
        ad.grad(ad.jit(_lv_loss(True)), argnums=(0, 1, 2))(Y0, ts, P),
    ):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_jit_of_grad_without_adjoint_raises_while_loops_error():
    f = ad.jit(ad.grad(_lv_loss(False), argnums=2))
    with pytest.raises(ValueError, match="while_loop"):
        f(Y0, np.linspace(0.0, 1.0, 3), P)


@pytest.mark.parametrize("adjoint", [True, False])
def test_vmap_matches_a_loop(adjoint):
    ts = np.linspace(0.0, 3.0, 7)
    ps = P + 0.05 * RNG.standard_normal((3, 4))
    batched = ad.vmap(lambda p: odeint(lotka_volterra, Y0, ts, (p,), adjoint=adjoint))(ps)
    looped = np.stack([odeint(lotka_volterra, Y0, ts, (p,)) for p in ps])
    np.testing.assert_allclose(batched, looped, atol=1e-12)


def test_vmap_of_grad_and_jit_of_vmap():
    ts = np.linspace(0.0, 3.0, 7)
    ps = P + 0.05 * RNG.standard_normal((3, 4))
    grad_p = ad.grad(_lv_loss(True), argnums=2)
    looped = np.stack([grad_p(Y0, ts, p) for p in ps])
    batched = ad.vmap(grad_p, in_axes=(None, None, 0))(Y0, ts, ps)
    np.testing.assert_allclose(batched, looped, rtol=1e-6, atol=1e-6)
    jitted = ad.jit(ad.vmap(grad_p, in_axes=(None, None, 0)))(Y0, ts, ps)
    np.testing.assert_allclose(jitted, looped, rtol=1e-6, atol=1e-6)


def test_jacrev_and_forward_mode():
    ts = np.linspace(0.0, 2.0, 5)
    jac = ad.jacrev(lambda y0: odeint(forced, y0, ts, (0.5,)))(Y0)
    assert jac.shape == (5, 2, 2)
    np.testing.assert_allclose(jac[:, 0, 0], np.exp(-0.5 * ts), rtol=1e-7)
    np.testing.assert_allclose(jac[:, 0, 1], 0.0, atol=1e-12)
    fwd = ad.jacfwd(lambda k: odeint(forced, Y0, ts, (k,), adjoint=False))(0.5)
    rev = ad.jacrev(lambda k: odeint(forced, Y0, ts, (k,)))(0.5)
    np.testing.assert_allclose(fwd, rev, rtol=1e-6, atol=1e-8)


def test_forward_mode_of_the_adjoint_raises():
    with pytest.raises(TypeError, match="adjoint=False"):
        ad.jvp(lambda k: odeint(forced, Y0, [0.0, 1.0], (k,)), (0.5,), (1.0,))


# ------------------------------------------------------------------------------ keywords


@pytest.mark.parametrize(
    "keywords, error, match",
    [
        ({"adjiont": True}, TypeError, "unexpected keyword argument 'adjiont'"),
        ({"adjoint": 1}, TypeError, "adjoint must be True or False"),
        ({"checkpoints": 2.0}, TypeError, "checkpoints must be an int"),
        ({"checkpoints": 0}, ValueError, "checkpoints must be at least 1"),
        ({"Dfun": lambda y, t, k: -k}, ValueError, "Dfun=.*LSODA"),
        ({"col_deriv": 1}, ValueError, "col_deriv"),
        ({"ml": 1, "mu": 1}, ValueError, "ml=1"),
        ({"mxordn": 5}, ValueError, "mxordn"),
        ({"tcrit": [0.5]}, ValueError, "tcrit"),
        ({"rtol": -1.0}, ValueError, "rtol"),
        ({"atol": np.ones(3)}, ValueError, "atol of shape"),
        ({"hmax": -0.1}, ValueError, "hmax"),
        ({"mxstep": 2.5}, ValueError, "mxstep"),
    ],
)
def test_keywords_rejected(keywords, error, match):
    with pytest.raises(error, match=match):
        odeint(forced, Y0, [0.0, 1.0], (0.5,), **keywords)


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        odeint(None, Y0, [0.0, 1.0])
    with pytest.raises(TypeError, match="real systems"):
        odeint(lambda y, t: -y, Y0 + 1j, [0.0, 1.0])
    with pytest.raises(ValueError, match="monotonically"):
        odeint(lambda y, t: -y, Y0, [0.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="1-d"):
        odeint(lambda y, t: -y, Y0, [[0.0, 1.0]])
    with pytest.raises(ValueError, match="returned shape"):
        odeint(lambda y, t: y[:1], Y0, [0.0, 1.0])
    with pytest.raises(TypeError, match="concrete"):
        ad.grad(lambda r: anp.sum(odeint(lambda y, t: -y, Y0, [0.0, 1.0], rtol=r)))(1e-6)


def test_keywords_with_a_meaning():
    ts = np.linspace(0.0, 2.0, 5)
    want = odeint(forced, Y0, ts, (0.5,))
    quiet = odeint(forced, Y0, ts, (0.5,), printmessg=1, ixpr=1, mxhnil=2, Dfun=None, mxords=5)
    np.testing.assert_array_equal(quiet, want)
    ys, info = odeint(forced, Y0, ts, (0.5,), hmax=0.05, h0=1e-3, full_output=True)
    np.testing.assert_allclose(ys, want, atol=1e-8)
    assert np.all(info["hu"] <= 0.05 + 1e-15) and np.all(info["tcur"] >= ts[1:])
    assert np.all(np.diff(info["nst"]) > 0) and info["nst"][-1] >= 40
    assert np.all(info["nfe"] >= 6 * info["nst"]) and info["message"] == "Integration successful."
    per_component = odeint(forced, Y0, ts, (0.5,), rtol=[1e-10, 1e-4], atol=[1e-10, 1e-4])
    np.testing.assert_allclose(per_component[:, 0], want[:, 0], atol=1e-9)


def test_too_few_steps_give_nan_and_say_so():
    ys, info = odeint(forced, Y0, np.linspace(0.0, 2.0, 5), (0.5,), mxstep=3, full_output=True)
    assert np.isnan(ys[1]).all() and np.isfinite(ys[0]).all()
    assert info["message"].startswith("Excess work done")
    ys, info = odeint(forced, Y0, [0.0, 2.0], (0.5,), h0=0.5, hmin=0.4, full_output=True)
    assert np.isnan(ys[1]).all() and info["message"].startswith("Excess work done")
    loose = odeint(forced, Y0, [0.0, 2.0], (0.5,), h0=0.5, hmin=0.4, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(loose, odeint(forced, Y0, [0.0, 2.0], (0.5,)), atol=5e-2)


# -------------------------------------------------------------------------------- memory


def _peak_bytes(adjoint: bool, hmax: float) -> int:
    y0 = np.linspace(1.0, 2.0, 100)

    def loss(k):
        return anp.sum(odeint(forced, y0, [0.0, 1.0], (k,), hmax=hmax, adjoint=adjoint)[-1])

    for _ in range(3):  # (untraced: what the first calls set up once is not counted, nor a
        ad.grad(loss)(0.5)  # compile in the background, which tracemalloc would see)
    wait_for_tier_up(60)
    tracemalloc.start()
    try:
        ad.grad(loss)(0.5)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_adjoint_memory_does_not_grow_with_the_steps():
    few, many = 1 / 10, 1 / 100  # (hmax forces the number of steps: about 10 and 100)
    adjoint_few, adjoint_many = _peak_bytes(True, few), _peak_bytes(True, many)
    discrete_few, discrete_many = _peak_bytes(False, few), _peak_bytes(False, many)
    assert adjoint_many < 1.5 * adjoint_few, (adjoint_few, adjoint_many)
    # (the contrast, in what ten times the steps add: fixed costs cancel)
    grown = discrete_many - discrete_few, adjoint_many - adjoint_few
    assert grown[0] > 5 * max(grown[1], 100_000), (discrete_few, discrete_many, grown)
