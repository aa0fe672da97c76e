"""Rerolling (staging/reroll.py): runs of repeated blocks of a staged graph made scans, the
values bitwise those of the unrolled graph on the NumPy executor, and through the compiler."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.kernels._numba import numba_available
from autodiff.staging import reroll as rr
from autodiff.staging.call import compiled_form, run_graph
from autodiff.staging.ir import sub_graphs
from benchmarks.workloads import ODE, lorenz_loss

STEPS = 30  # (the ode workload's loss at fewer steps: the same graph, shorter)


def _scans(graph) -> list:
    return [e for e in graph.equations if e.prim.name == "scan"]


def _rerolled(fun, *args):
    """The graph of `fun` (as jit optimizes it), and the graph rerolled, whatever its size."""
    graph = ad.jit(fun, backend="numpy").graph(*args)
    return graph, rr.reroll(graph, min_equations=0)


def _same_bits(graph, small, *args) -> None:
    for a, b in zip(run_graph(graph, *args), run_graph(small, *args)):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.array_equal(a, b)


@pytest.fixture(scope="module")
def ode():
    p, state = ODE.make_inputs(quick=False)
    return p, state


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradient"])
def test_ode_graph_rerolled(ode, gradient):
    p, state = ode

    def loss(p):
        return lorenz_loss(anp, p, state, steps=STEPS)

    graph, small = _rerolled(ad.grad(loss) if gradient else loss, p)
    assert len(graph.equations) > 10 * len(small.equations)
    scans = _scans(small)
    assert len(scans) == (2 if gradient else 1)
    if gradient:  # (the backward pass reads the forward steps' values last first)
        assert scans[1].params["reverse"] and scans[1].params["n_xs"] > 0
    _same_bits(graph, small, p)


@pytest.mark.skipif(not numba_available(), reason="needs Numba (and llvmlite)")
def test_ode_gradient_compiled(ode):
    p, state = ode
    grad = ad.grad(lambda p: lorenz_loss(anp, p, state, steps=STEPS))
    compiled = ad.jit(grad, backend="numba")
    expected = ad.jit(grad, backend="numpy")(p)
    np.testing.assert_allclose(compiled(p), expected, rtol=1e-13)
    graph = compiled.graph(p)
    assert graph.numba_failure is None
    assert compiled_form(graph) is compiled_form(graph)  # (once per graph)
    assert compiled_form(graph).count_equations() * 10 < graph.count_equations()


def _chain(x, w):
    """Carries (y, z), consts (w, x), ys (every step's u, read after the loop), a prologue
    and an epilogue."""
    y, z = anp.sin(x), x * 2.0
    us = []
    for _ in range(24):
        u = anp.tanh(y * w) + z
        z = z * 0.5 - u
        y = y + u * x
        us.append(u)
    return anp.sum(anp.stack(us) * 3.0) + anp.cos(y) @ z


def test_chain_with_carries_consts_and_ys():
    x, w = np.linspace(-1, 1, 5), np.linspace(0.5, 1.5, 5)
    graph, small = _rerolled(_chain, x, w)
    (scan,) = _scans(small)
    assert scan.params["length"] >= 20 and scan.params["n_carry"] >= 2
    assert len(scan.inputs) > scan.params["n_carry"]  # (consts)
    assert len(scan.outputs) > scan.params["n_carry"]  # (ys)
    assert small.equations[0].prim.name != "scan" and small.equations[-1].prim.name != "scan"
    _same_bits(graph, small, x, w)


def _steps(x, odd_step=None, flip_step=None):
    y = x
    for k in range(40):
        a = x[1] if k == odd_step else x[0]  # (a getitem's param differs)
        y = anp.tanh(a * y) if k == flip_step else anp.tanh(y * a)  # (the wiring differs)
        y = y * 0.5 + a
    return y


@pytest.mark.parametrize("odd_step, flip_step", [(20, None), (None, 20)], ids=["param", "wiring"])
def test_near_repeats_stay_apart(odd_step, flip_step):
    x = np.linspace(0.1, 1.0, 6).reshape(2, 3)
    graph, small = _rerolled(lambda x: _steps(x, odd_step, flip_step), x)
    scans = _scans(small)
    assert scans and sum(s.params["length"] for s in scans) < 40  # (the odd step unrolled)
    bodies = [e for s in scans for e in s.params["body"].equations]
    if odd_step is not None:
        assert all(e.params.get("index") != (1,) for e in bodies)
        assert any(e.params.get("index") == (1,) for e in small.equations)
    _same_bits(graph, small, x)


def test_shapes_differ():
    def f(a, b):
        out = []
        for x in [a] * 12 + [b] * 12:
            for _ in range(3):
                x = anp.sin(x) * 0.5 + x
            out.append(anp.sum(x))
        return anp.stack(out)

    a, b = np.linspace(0, 1, 3), np.linspace(0, 1, 4)
    graph, small = _rerolled(f, a, b)
    for scan in _scans(small):
        shapes = {v.aval.shape for e in scan.params["body"].equations for v in e.outputs}
        assert (3,) not in shapes or (4,) not in shapes
    _same_bits(graph, small, a, b)


def test_no_run_no_change():
    graph = ad.make_graph(lambda x: anp.sin(x) + anp.cos(x) * x)(np.zeros(3))
    assert rr.reroll(graph, min_equations=0) is graph


def test_reverse_residual_read():
    def loss(x):
        for _ in range(30):
            x = anp.sin(x) * anp.cos(x) + x * 0.25
        return anp.sum(x * x)

    x = np.linspace(-1, 1, 7)
    graph, small = _rerolled(ad.grad(loss), x)
    scans = _scans(small)
    backward = [s for s in scans if s.params["reverse"]]
    assert backward and backward[0].params["n_xs"] > 0
    _same_bits(graph, small, x)


def _elementwise(x, w):
    for _ in range(20):
        x = anp.tanh(x * w) + 0.1 * x
    return anp.sum(x**2)


def _matmul(x, w):
    for _ in range(20):
        x = anp.tanh(x @ w) * 0.5 + x
    return anp.sum(x**2)


def _reductions(x, w):
    for _ in range(20):
        x = x - anp.mean(x * w, axis=0, keepdims=True) + anp.max(x, axis=1, keepdims=True) * 0.1
    return anp.sum(x**2)


def _indexing(x, w):
    for _ in range(20):
        x = anp.concatenate([x[1:] * w[:-1], x[:1]]) + 0.25 * x
    return anp.sum(x**2)


@pytest.mark.skipif(not numba_available(), reason="needs Numba (and llvmlite)")
@pytest.mark.parametrize("loss", [_elementwise, _matmul, _reductions, _indexing])
def test_compiled_small_loops(loss, monkeypatch):
    monkeypatch.setattr(rr, "MIN_EQUATIONS", 0)
    rng = np.random.default_rng(0)
    shape = (4, 4)
    x, w = rng.standard_normal(shape) * 0.5, rng.standard_normal(shape) * 0.5
    grad = ad.grad(loss)
    expected = ad.jit(grad, backend="numpy")(x, w)
    compiled = ad.jit(grad, backend="numba")
    np.testing.assert_allclose(compiled(x, w), expected, rtol=1e-12, atol=1e-14)
    graph = compiled.graph(x, w)
    assert graph.numba_failure is None
    small = compiled_form(graph)
    assert _scans(small), loss.__name__
    assert all(sub_graphs(s.params) for s in _scans(small))
