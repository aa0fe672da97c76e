"""What the compiled backend runs for a staged graph (staging/call.py's `compiled_form`,
staging/numba/executor.py's passes): custom-rule calls inlined, loop bodies' constants and
shape-() constants made compilable, boolean reductions lowered. Each case is compared with
the NumPy executor (values) and checked to run wholly compiled (no NumPy step for its
loops).
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging import call
from autodiff.staging.ir import sub_graphs
from autodiff.staging.numba.executor import (
    kind_of,
    scalar_consts_inlined,
    sub_graph_consts_lifted,
)


@ad.custom_vjp
def clipped_square(x):
    return x * x


clipped_square.defvjp(lambda x: (x * x, x), lambda x, g: (anp.clip(2.0 * x * g, -1.0, 1.0),))


def _numpy_steps(graph) -> list:
    """The loops of what the backend compiles for `graph` (sub-graphs included) that run in
    NumPy (as compile_numba prepares the compiled form)."""
    found, stack = [], [sub_graph_consts_lifted(scalar_consts_inlined(call.compiled_form(graph)))]
    while stack:
        g = stack.pop()
        for eqn in g.equations:
            if eqn.prim.name in ("scan", "while") and kind_of(eqn) is None:
                found.append(eqn.prim.name)
            stack.extend(sub_graphs(eqn.params))
    return found


def _both(f, *args):
    compiled = ad.jit(f, backend="numba")
    got = compiled(*args)
    want = ad.jit(f, backend="numpy")(*args)
    return compiled, got, want


def test_custom_vjp_inside_a_loop_is_compiled():
    def f(x):
        return ad.fori_loop(0, 5, lambda i, c: clipped_square(c) * 0.5 + 0.1, x)

    x = np.linspace(-1.0, 1.0, 7)
    compiled, got, want = _both(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    graph = compiled.graph(x)
    assert not any(e.prim.name == "custom_vjp_call" for e in call.compiled_form(graph).equations)
    assert graph.compiled.numba_segments == 0 and graph.numba_failure is None
    # the custom rule still defines the derivative (the graph only evaluates)
    g = ad.jit(ad.grad(lambda x: anp.sum(clipped_square(x) * 3.0)), backend="numba")(x)
    np.testing.assert_allclose(g, np.clip(2.0 * x * 3.0, -1.0, 1.0), rtol=1e-15)


def test_custom_jvp_call_is_inlined():
    @ad.custom_jvp
    def softplus(x):
        return anp.log1p(anp.exp(x))

    softplus.defjvps(lambda t, ans, x: t / (1.0 + anp.exp(-x)))
    x = np.linspace(-3.0, 3.0, 9)
    compiled, got, want = _both(lambda x: softplus(x) * 2.0, x)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    form = call.compiled_form(compiled.graph(x))
    assert [e.prim.name for e in form.equations].count("custom_jvp_call") == 0


def test_loop_bodies_closing_over_arrays_compile():
    table = np.array([0.5, 0.25, 0.125])
    weights = np.array([1.0, -1.0, 2.0])

    def f(x):
        def body(carry):
            k, y = carry
            return k + 1, y * table + weights

        return ad.while_loop(lambda c: c[0] < 4, body, (0, x))[1]

    x = np.array([1.0, 2.0, 3.0])
    compiled, got, want = _both(f, x)
    np.testing.assert_array_equal(got, want)
    assert _numpy_steps(compiled.graph(x)) == []


def test_scalar_constants_are_literals_not_arguments():
    coefficients = [np.float64(1.0 / k) for k in range(1, 60)]

    def f(x):
        total = x
        for c in coefficients:
            total = total * x + c
        return total

    x = np.float64(0.3)
    compiled, got, want = _both(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    source = compiled.graph(x).compiled.source
    header = next(line for line in source.splitlines() if line.startswith("def segment"))
    assert header.count(",") < 5, header  # (x and the result: not 59 constants)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_boolean_reductions_compile(axis):
    x = np.array([[1.0, np.nan, 0.0], [2.0, 3.0, -1.0]])

    def f(x):
        return anp.all(x, axis=axis), anp.any(x > 2.5, axis=axis), anp.all(x != 0, axis=axis)

    compiled, got, want = _both(f, x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.bool_
    assert compiled.graph(x).compiled.numba_segments == 0


def test_odeint_adjoint_gradient_runs_compiled():
    from autodiff.scipy.integrate import odeint

    def rhs(y, t, a):
        return anp.stack([a * y[0] - y[0] * y[1], -3.0 * y[1] + y[0] * y[1]])

    ts, y0 = np.linspace(0.0, 2.0, 12), np.array([1.0, 1.0])

    def loss(y0, a):
        return anp.sum(odeint(rhs, y0, ts, args=(a,)) ** 2)

    grad = ad.jit(ad.grad(loss, argnums=(0, 1)), backend="numba")
    got = grad(y0, 1.5)
    want = ad.grad(loss, argnums=(0, 1))(y0, 1.5)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
    assert _numpy_steps(grad.graph(y0, 1.5)) == []
