"""jit and make_graph: signatures and the cache, compositions with every transform both ways,
custom rules inside, the torch face, the passes, the two executors, and errors."""

import functools

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.errors import ConcretizationError, EscapedTracerError
from autodiff.core.trace import trace_stack_depth
from autodiff.staging import call
from autodiff.staging.executor import compile_graph, interpret_graph

rng = np.random.default_rng(0)
X = rng.uniform(0.5, 1.5, size=4)
W = rng.standard_normal((4, 3))


def f(x):
    return anp.sum(anp.tanh(x @ W) ** 2) + anp.sum(anp.sin(x) * x)


# ------------------------------------------------------------------ signatures and caching


def test_values_and_dtypes_match_eager():
    for x in (X, X.astype(np.float32)):
        got, want = ad.jit(f)(x), f(x)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_python_scalars_are_weakly_typed():
    g = ad.jit(lambda x, c: x * c)
    out = g(np.ones(2, np.float32), 2.0)
    assert out.dtype == np.float32
    g(np.ones(2, np.float32), 3.0)
    assert g.traces == 1  # (a float's value is not part of the signature)
    g(np.ones(2, np.float32), 3)  # an int is another type
    assert g.traces == 2


def test_one_trace_per_signature():
    calls = []

    def h(x):
        calls.append(1)  # (Python runs at staging only)
        return x * 2.0

    g = ad.jit(h)
    for _ in range(3):
        g(np.ones(3))
    g(np.ones(4))
    g(np.ones(3, np.float32))
    g(np.ones(3))
    assert len(calls) == g.traces == 3


def test_static_arguments():
    g = ad.jit(lambda x, n, *, scale: x**n * scale, static_argnums=1, static_argnames="scale")
    assert g(np.float64(2.0), 3, scale=2.0) == 16.0
    assert g(np.float64(2.0), 2, scale=2.0) == 8.0
    assert g.traces == 2
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        ad.jit(lambda x, n: x, static_argnums=1)(1.0, [1, 2])
    assert trace_stack_depth() == 1


def test_pytrees_in_and_out_and_keyword_arguments():
    def h(params, x, *, bias):
        return {"y": params["w"] @ x + bias, "norms": (anp.sum(x * x), None)}

    params = {"w": W.T}
    got = ad.jit(h)(params, X, bias=1.0)
    want = h(params, X, bias=1.0)
    np.testing.assert_allclose(got["y"], want["y"])
    assert got["norms"][1] is None


def test_cache_is_bounded(monkeypatch):
    from autodiff.staging import api

    monkeypatch.setattr(api, "CACHE_SIZE", 3)
    g = ad.jit(lambda x: x + 1.0)
    for n in range(1, 6):
        g(np.ones(n))
    assert len(g._cache) == 3
    g(np.ones(1))  # (evicted: staged again)
    assert g.traces == 6


def test_call_overhead_path_returns_the_same():
    ident = ad.jit(lambda x: x)
    a = np.arange(3.0)
    assert ident(a) is a and ident(a) is a


# ------------------------------------------------------------------ compositions


def test_jit_of_every_transform():
    v = rng.standard_normal(4)
    cases = [
        (ad.grad(f), (X,)),
        (lambda x: ad.value_and_grad(f)(x), (X,)),
        (lambda x: ad.vjp(f, x)[1](1.0), (X,)),
        (lambda x: ad.jvp(f, (x,), (v,)), (X,)),
        (ad.vmap(f), (np.stack([X, 2 * X]),)),
        (ad.jacfwd(lambda x: anp.sin(x) * x), (X,)),
        (ad.jacrev(lambda x: anp.sin(x) * x), (X,)),
        (ad.hessian(f), (X,)),
        (lambda x: ad.hvp(f, (x,), (v,)), (X,)),
        (lambda x: ad.linearize(f, x)[1](v), (X,)),
    ]
    for fun, args in cases:
        got, want = ad.jit(fun)(*args), fun(*args)
        for g, w in zip(ad.tree_leaves(got), ad.tree_leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_every_transform_of_jit():
    v = rng.standard_normal(4)
    jf = ad.jit(f)
    np.testing.assert_allclose(ad.grad(jf)(X), ad.grad(f)(X), rtol=1e-12)
    np.testing.assert_allclose(ad.jvp(jf, (X,), (v,))[1], ad.jvp(f, (X,), (v,))[1], rtol=1e-12)
    batch = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(ad.vmap(jf)(batch), ad.vmap(f)(batch), rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(jf)(X), ad.hessian(f)(X), rtol=1e-10)
    np.testing.assert_allclose(ad.jit(ad.jit(f))(X), f(X), rtol=1e-12)
    np.testing.assert_allclose(ad.vmap(ad.grad(jf))(batch), ad.vmap(ad.grad(f))(batch), rtol=1e-12)


def test_third_order_with_custom_rules_inside():
    @ad.custom_jvp
    def softplus(x):
        return anp.log1p(anp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1.0 + anp.exp(-p[0]))))

    @ad.custom_vjp
    def scaled(x):
        return x * 2.0

    scaled.defvjp(lambda x: (x * 2.0, None), lambda _, g: (g * 2.0,))
    block = ad.checkpoint(lambda x: anp.sin(x) * x)

    def h(x):
        return softplus(block(x)) * anp.cos(x) + scaled(x) ** 2

    g3 = ad.grad(ad.grad(ad.grad(h)))
    np.testing.assert_allclose(ad.jit(g3)(0.7), g3(0.7), rtol=1e-10)
    np.testing.assert_allclose(ad.grad(ad.grad(ad.jit(ad.grad(h))))(0.7), g3(0.7), rtol=1e-10)
    np.testing.assert_allclose(ad.jit(ad.grad(softplus))(100.0), 1.0)


def test_perturbation_confusion_through_jit():
    def outer(x):
        return x * ad.grad(ad.jit(lambda y: x + y))(1.0)

    assert ad.grad(outer)(2.0) == 1.0
    assert ad.jit(ad.grad(outer))(2.0) == 1.0


def test_closures_over_enclosing_tracers():
    def h(x):
        inner = ad.jit(lambda y: anp.sin(x) * y)  # (x: a tracer of the enclosing grad)
        return inner(3.0) + inner(x)

    np.testing.assert_allclose(
        ad.grad(h)(0.4), ad.grad(lambda x: anp.sin(x) * 3.0 + anp.sin(x) * x)(0.4)
    )


# ------------------------------------------------------------------ the torch face


def test_backward_through_a_jitted_function():
    x = ad.tensor(X, requires_grad=True)
    w = ad.tensor(W, requires_grad=True)

    def loss(x):
        return anp.sum(anp.tanh(x @ w) ** 2)  # (w: a Tensor the function closes over)

    out = ad.jit(loss)(x)
    out.backward()
    want_x = ad.grad(lambda x: anp.sum(anp.tanh(x @ W) ** 2))(X)
    want_w = ad.grad(lambda w: anp.sum(anp.tanh(X @ w) ** 2))(W)
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), want_w, rtol=1e-12)
    assert out.grad_fn.name() == "JitCallBackward0"
    with ad.no_grad():
        w -= 0.1 * w.grad  # (the closed-over Tensor is read at each call)
    np.testing.assert_allclose(
        ad.jit(loss)(x).detach().numpy(), anp.sum(np.tanh(X @ w.detach().numpy()) ** 2)
    )


# ------------------------------------------------------------------ graphs, passes, executors


def test_make_graph_lists_what_the_function_does():
    text = str(ad.make_graph(lambda x, y: anp.sin(x) * y)(np.zeros(3), 2.0))
    assert "sin a" in text and "multiply" in text and "~f64[]" in text


def test_passes():
    def h(x):
        a = anp.sin(x)
        b = anp.sin(x)  # (common subexpression)
        unused = anp.exp(x) * 3.0  # noqa: F841  (dead)
        c = np.array([1.0, 2.0]) * 2.0  # (constant)
        return (a + b) * 1.0 + c

    graph = ad.jit(h).graph(np.zeros(2))
    names = [e.prim.name for e in graph.equations]
    assert names.count("sin") == 1 and "exp" not in names
    assert names.count("multiply") == 0  # x * 1 dropped, the constant folded
    np.testing.assert_allclose(ad.jit(h)(X[:2]), h(X[:2]))


def test_x_plus_zero_keeps_the_sign_of_zero():
    g = ad.jit(lambda x: x + 0.0)
    assert np.signbit(g(np.array([-0.0]))[0]) == np.signbit(np.array([-0.0]) + 0.0)[0]
    assert len(ad.jit(lambda x: x - 0.0).graph(np.zeros(1)).equations) == 0


def test_staged_gradient_is_about_as_long_as_a_hand_written_one():
    from benchmarks.workloads import chain_gradient, chain_loss

    x = rng.standard_normal(8)
    staged = ad.jit(ad.grad(lambda x: chain_loss(anp, x))).graph(x).count_equations()
    by_hand = functools.partial(chain_gradient, xp=anp)
    assert staged <= 1.2 * ad.jit(by_hand).graph(x).count_equations()


def test_interpreter_and_compiled_executor_agree():
    graph = ad.jit(ad.hessian(f)).graph(X)
    np.testing.assert_array_equal(interpret_graph(graph)(X)[0], compile_graph(graph)(X)[0])


def test_large_graphs_are_interpreted_until_compiling_pays(monkeypatch):
    monkeypatch.setattr(call, "COMPILE_AT_ONCE", 5)
    monkeypatch.setattr(call, "COMPILE_AFTER_CALLS", 3)
    g = ad.jit(ad.grad(f), backend="numpy")
    results = [g(X) for _ in range(5)]
    graph = g.graph(X)
    assert graph.interpreted is not None and graph.compiled is not None
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


# ------------------------------------------------------------------ errors


def test_value_dependent_python_control_flow_raises():
    def relu(x, y):
        return x if anp.sum(y) > 0 else -x

    with pytest.raises(ConcretizationError, match=r"'relu'.*depends on y.*static_argnums"):
        ad.jit(relu)(1.0, np.ones(2))
    for convert in (float, int, bool, lambda v: np.asarray(v), lambda v: [0, 1][v]):
        with pytest.raises(ConcretizationError):
            ad.jit(lambda v: convert(v))(np.float64(1.0))
    with pytest.raises(ConcretizationError):
        ad.jit(ad.grad(lambda v: v if v > 0 else -v))(1.0)
    assert trace_stack_depth() == 1


def test_non_array_arguments_raise():
    with pytest.raises(TypeError, match="not a valid array type for jit"):
        ad.jit(lambda s: s)("text")
    with pytest.raises(TypeError, match="not a valid array type"):
        ad.jit(lambda x: "text")(1.0)


def test_leaked_staged_values_raise():
    leaked = []
    ad.jit(lambda x: leaked.append(x) or x * 2.0)(1.0)
    with pytest.raises(EscapedTracerError):
        anp.sin(leaked[0])
    assert trace_stack_depth() == 1


def test_shapes_that_depend_on_values_raise():
    with pytest.raises(ConcretizationError, match="unique"):
        ad.jit(anp.unique)(np.array([1.0, 1.0, 2.0]))
    assert trace_stack_depth() == 1
