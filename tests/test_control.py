"""Structured control flow (autodiff/control/): cond, switch, while_loop, fori_loop, scan —
eagerly, staged (jit), under every transform; derivatives against central differences in
both modes to order 2, vmap against a Python loop, errors."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.control import cond, fori_loop, scan, switch, while_loop
from autodiff.core.trace import trace_stack_depth
from autodiff.staging.api import jit
from autodiff.testing import check_grads

rng = np.random.default_rng(0)
X = rng.uniform(0.5, 1.5, size=3)


def f_cond(x):
    return cond(anp.sum(x) > 1.0, lambda x: anp.sin(x) * x, lambda x: anp.cos(x) + 1.0, x)


def f_cond_closure(x):
    y = x * 2.0  # (the branches close over an enclosing value: it becomes an operand)
    return cond(x[0] > 0, lambda x: y * anp.exp(x), lambda x: x - y, x)


def f_switch(x):
    branches = [lambda x: x**2, lambda x: anp.tanh(x), lambda x: anp.sin(x) * 3.0]
    return switch(anp.astype(anp.sum(x) * 0.7, np.int32), branches, x)


def f_scan(x):
    def step(c, xi):
        c = anp.sin(c) * xi + c * 0.5
        return c, c * xi

    carry, ys = scan(step, x[0], x)
    return anp.sum(ys) + carry


def f_scan_reverse(x):
    carry, ys = scan(lambda c, xi: (c * xi + 1.0, anp.exp(c) * xi), x[1], x, reverse=True)
    return ys * carry


def f_scan_pytree(x):
    def step(c, xs):
        a, b = c
        u, v = xs["u"], xs["v"]
        return (a * u + b, anp.tanh(b + v)), {"s": a * b}

    (a, b), ys = scan(step, (x[0], x[1]), {"u": x, "v": x * x})
    return a + b + anp.sum(ys["s"])


def f_scan_closure(x):
    w = anp.cos(x)  # (closed over by the body: a constant of the scan, differentiated)
    carry, _ = scan(lambda c, i: (c * w + anp.sin(c), None), x, None, length=3)
    return carry


def f_fori(x):
    return fori_loop(0, 4, lambda i, v: anp.sin(v) * x + i, x)


def f_nested(x):
    def outer(c, xi):
        inner = fori_loop(0, 2, lambda i, v: v * xi + c, c)
        return cond(inner[0] > 0, lambda v: v * 0.5, lambda v: -v, inner), xi

    return scan(outer, x * 0.1, x)[0]


DIFFERENTIABLE = [
    f_cond,
    f_cond_closure,
    f_switch,
    f_scan,
    f_scan_reverse,
    f_scan_pytree,
    f_scan_closure,
    f_fori,
    f_nested,
]


def _python(f):
    """The same function, its control flow run by Python (a reference)."""
    return f


@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_derivatives_match_central_differences(f, staged):
    fun = jit(f) if staged else f
    check_grads(fun, (X,), order=2, modes=("fwd", "rev"))
    assert trace_stack_depth() == 1


@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
def test_values_agree_eager_transformed_and_staged(f):
    want = f(X)
    np.testing.assert_allclose(jit(f)(X), want, rtol=1e-13)
    # Under a transform the primitives run (an identity transform: a vmap of one).
    np.testing.assert_allclose(ad.vmap(f)(X[None])[0], want, rtol=1e-13)
    g = ad.grad(lambda x: anp.sum(f(x)))
    np.testing.assert_allclose(jit(g)(X), g(X), rtol=1e-12)


@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_vmap_matches_a_loop(f, staged):
    batch = np.stack([X * s for s in (0.3, 1.0, 1.7, -0.4)])
    fun = jit(ad.vmap(f)) if staged else ad.vmap(f)
    got = fun(batch)
    want = np.stack([f(b) for b in batch])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
def test_per_example_gradients_match_a_loop(f):
    batch = np.stack([X * s for s in (0.3, 1.0, -0.4)])
    g = ad.grad(lambda x: anp.sum(f(x)))
    np.testing.assert_allclose(
        ad.vmap(g)(batch), np.stack([g(b) for b in batch]), rtol=1e-11, atol=1e-13
    )


def test_while_loop_forward_mode_and_vmap():
    def f(x):
        return while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, anp.sin(c[1]) * x), (0, x))[1]

    check_grads(f, (X,), order=2, modes=("fwd",))
    check_grads(jit(f), (X,), order=1, modes=("fwd",))

    # A batched condition: each member stops on its own.
    def g(x):
        return while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)

    xs = np.array([0.3, 1.0, 4.0, 20.0])
    np.testing.assert_array_equal(ad.vmap(g)(xs), [g(x) for x in xs])
    np.testing.assert_array_equal(jit(ad.vmap(g))(xs), [g(x) for x in xs])


def test_reverse_mode_through_while_loop_raises():
    f = lambda x: while_loop(lambda v: v < 10.0, lambda v: v * x, 1.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        ad.grad(f)(2.0)
    assert trace_stack_depth() == 1
    # fori_loop with staged bounds is a while_loop: the same error
    h = lambda x, n: fori_loop(0, n, lambda i, v: v * x, 1.0)
    with pytest.raises(ValueError, match="fori_loop with static"):
        jit(ad.grad(h))(2.0, 3)


def test_eager_control_flow_is_python():
    calls = []
    out = cond(True, lambda x: calls.append("t") or x + 1, lambda x: calls.append("f") or x, 1.0)
    assert out == 2.0 and calls == ["t"]
    assert switch(7, [lambda: 0, lambda: 1]) == 1  # (clamped)
    assert while_loop(lambda c: c < 3, lambda c: c + 1, 0) == 3
    assert fori_loop(1, 4, lambda i, v: v + i, 0) == 6
    carry, ys = scan(lambda c, x: (c + x, c * x), 1.0, np.arange(3.0))
    assert carry == 4.0 and ys.tolist() == [0.0, 1.0, 4.0]
    carry, ys = scan(lambda c, x: (c, {"a": x * 2.0}), 0.0, np.zeros((0, 2)))
    assert ys["a"].shape == (0, 2)


def test_torch_face_backward_through_control_flow():
    x = ad.tensor(X, requires_grad=True)
    for f in (f_cond, f_scan, f_fori):
        x.grad = None
        anp.sum(jit(f)(x)).backward()
        np.testing.assert_allclose(x.grad.numpy(), ad.grad(lambda v: anp.sum(f(v)))(X), rtol=1e-12)


def test_errors():
    with pytest.raises(TypeError, match="same structure and types"):
        jit(lambda x: cond(x > 0, lambda x: x, lambda x: (x, x), x))(1.0)
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        cond(np.array([True, False]), lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="carry input and carry output must have equal types"):
        jit(lambda x: while_loop(lambda c: c < 1, lambda c: c * 1.5, np.int64(1)))(1.0)
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        jit(lambda x: while_loop(lambda c: c, lambda c: c, x))(np.ones(2))
    with pytest.raises(ValueError, match="disagrees with leading axis sizes"):
        scan(lambda c, x: (c, x), 0.0, np.zeros(3), length=4)
    assert trace_stack_depth() == 1


def test_staged_graph_holds_one_equation_per_loop():
    g = jit(ad.grad(lambda x: anp.sum(f_fori(x)))).graph(X)
    names = [e.prim.name for e in g.equations]
    assert names.count("scan") == 2  # the forward (saving residuals) and the backward scan
    assert g.count_equations() < 40
