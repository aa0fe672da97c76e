"""How `jit` decides when and whether to compile (autodiff/staging/call.py): the default
backend's background tier-up (swapped in atomically, one compile however many threads call,
a failure leaving the NumPy executor), graphs compiled at once when cheap, the compile
budget under every backend, and the eviction of compiled code (autodiff/staging/numba/
cache.py). Waits poll the graph's state; nothing here asserts a time.
"""

import gc
import re
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.kernels._numba import numba_available
from autodiff.staging import call
from autodiff.staging.numba import cache, executor

pytestmark = pytest.mark.skipif(not numba_available(), reason="Numba is not available")

X = np.linspace(-1.0, 1.0, 7)


def loss(x):
    return anp.sum(anp.sin(x) * 1.5 + 0.25 * x * x)


def reference(x):
    return ad.jit(ad.grad(loss), backend="numpy")(x)


@pytest.fixture(autouse=True)
def _tiered(monkeypatch):
    """The default backend as it runs without AUTODIFF_NUMBA_EAGER, whatever the CI sets,
    for a graph too large to compile at once, tiering up at the second call; no compile
    outlives its test."""
    monkeypatch.setattr(call, "numba_eager", lambda: False)
    monkeypatch.setattr(call, "compile_cost_estimate", lambda graph: 1.0)
    monkeypatch.setattr(call, "TIER_UP_FRACTION", 0.0)
    yield
    assert call.wait_for_tier_up(timeout=600.0)


def _wait_for_tier_up(graph, timeout=600.0):
    """Until the background compile has swapped an executor in for `graph`'s `_Tiered`."""
    deadline = time.monotonic() + timeout
    while type(graph.compiled) is call._Tiered:
        assert time.monotonic() < deadline, "the background compile never finished"
        time.sleep(0.01)


def test_background_compile_swaps_in_and_agrees_with_numpy():
    step = ad.jit(ad.grad(loss))
    expected = reference(X)
    np.testing.assert_array_equal(step(X), expected)  # (the NumPy executor)
    graph = step.graph(X)
    assert type(graph.compiled) is call._Tiered
    np.testing.assert_array_equal(step(X), expected)  # (the second call starts the compile)
    _wait_for_tier_up(graph)
    assert graph.numba_failure is None
    assert graph.compiled is not None and type(graph.compiled) is not call._Tiered
    np.testing.assert_allclose(step(X), expected, rtol=1e-13, atol=0)


def test_a_function_called_once_compiles_nothing(monkeypatch):
    compiles = []
    monkeypatch.setattr(call, "compile_backend", lambda g: compiles.append(g))
    step = ad.jit(ad.grad(loss))
    step(X)
    assert compiles == [] and type(step.graph(X).compiled) is call._Tiered


def test_a_function_that_ran_briefly_compiles_nothing(monkeypatch):
    monkeypatch.setattr(call, "TIER_UP_FRACTION", 1e9)  # (its calls never pay for a compile)
    compiles = []
    monkeypatch.setattr(call, "compile_backend", lambda g: compiles.append(g))
    step = ad.jit(ad.grad(loss))
    for _ in range(5):
        step(X)
    assert compiles == [] and type(step.graph(X).compiled) is call._Tiered


def test_the_background_compile_runs_on_private_copies(monkeypatch):
    seen = []
    compile_backend = call.compile_backend

    def spy(graph):
        run = compile_backend(graph)

        def first(*args):
            seen.append(args)
            return run(*args)

        return first

    monkeypatch.setattr(call, "compile_backend", spy)
    x = np.asfortranarray(np.linspace(0.0, 1.0, 12).reshape(3, 4))
    step = ad.jit(ad.grad(lambda x: anp.sum(anp.cos(x) * x)))
    step(x)
    step(x)
    _wait_for_tier_up(step.graph(x))
    (copy,) = seen[0]
    assert copy is not x and not np.shares_memory(copy, x)
    np.testing.assert_array_equal(copy, x)
    assert copy.flags.f_contiguous and not copy.flags.c_contiguous


def test_private_copies_keep_the_layout_numba_compiles_for():
    base = np.arange(24.0).reshape(4, 6)
    strided = base[:, ::2]
    copy = call._private_copy(strided)
    assert not copy.flags.c_contiguous and not copy.flags.f_contiguous
    np.testing.assert_array_equal(copy, strided)
    frozen = base.copy()
    frozen.flags.writeable = False
    assert not call._private_copy(frozen).flags.writeable
    assert call._private_copy(2.5) == 2.5


def test_two_threads_calling_during_tier_up_compile_once(monkeypatch):
    compiles = []
    compile_backend = call.compile_backend

    def counted(graph):
        compiles.append(graph)
        return compile_backend(graph)

    monkeypatch.setattr(call, "compile_backend", counted)
    step = ad.jit(ad.grad(lambda x: anp.sum(anp.tanh(x) * x)))
    expected = ad.jit(ad.grad(lambda x: anp.sum(anp.tanh(x) * x)), backend="numpy")(X)
    start = threading.Barrier(2)
    results: list = []
    errors: list = []

    def work():
        try:
            start.wait()
            for _ in range(200):
                results.append(step(X))
        except Exception as error:  # (reported below, not lost in the thread)
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    graph = step.graph(X)
    _wait_for_tier_up(graph)
    results.append(step(X))
    assert len(compiles) == 1 and graph.numba_failure is None
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-13, atol=0)


def test_a_failing_compile_falls_back_silently(monkeypatch):
    def broken(graph):
        def run(*args):
            raise RuntimeError("no such luck")

        return run

    monkeypatch.setattr(call, "compile_backend", broken)
    step = ad.jit(ad.grad(loss))
    step(X)
    step(X)
    graph = step.graph(X)
    _wait_for_tier_up(graph)
    assert "no such luck" in graph.numba_failure
    np.testing.assert_array_equal(step(X), reference(X))


def test_a_compile_that_cannot_start_falls_back_too(monkeypatch):
    def broken(graph):
        raise ValueError("cannot lower")

    monkeypatch.setattr(call, "compile_backend", broken)
    step = ad.jit(ad.grad(loss))
    step(X)
    step(X)
    graph = step.graph(X)
    _wait_for_tier_up(graph)
    assert "cannot lower" in graph.numba_failure
    np.testing.assert_array_equal(step(X), reference(X))


def test_the_background_compile_restores_the_switch_interval_and_the_gc():
    interval, frozen = sys.getswitchinterval(), gc.get_freeze_count()
    step = ad.jit(ad.grad(lambda x: anp.sum(anp.exp(-x * x))))
    step(X)
    step(X)
    _wait_for_tier_up(step.graph(X))
    deadline = time.monotonic() + 60  # (the job's end follows the swap)
    while call._quietly.froze or sys.getswitchinterval() != interval:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert gc.get_freeze_count() == frozen


def test_graphs_cheap_to_compile_compile_at_the_first_call(monkeypatch):
    monkeypatch.setattr(call, "compile_cost_estimate", lambda graph: 0.01)
    step = ad.jit(ad.grad(loss))
    np.testing.assert_allclose(step(X), reference(X), rtol=1e-13, atol=0)
    graph = step.graph(X)
    assert graph.numba_failure is None
    assert type(graph.compiled) not in (call._Tiered, call._FirstCall)


def test_graphs_dear_to_compile_tier_up(monkeypatch):
    monkeypatch.setattr(call, "compile_cost_estimate", lambda graph: 0.06)
    step = ad.jit(ad.grad(loss))
    step(X)
    assert type(step.graph(X).compiled) is call._Tiered


def test_eager_compiles_at_the_first_call(monkeypatch):
    monkeypatch.setattr(call, "numba_eager", lambda: True)
    step = ad.jit(ad.grad(loss))
    step(X)
    graph = step.graph(X)
    assert graph.numba_failure is None
    assert type(graph.compiled) not in (call._Tiered, call._FirstCall)


@pytest.fixture
def numba_only(monkeypatch):
    """The Numba path alone (AUTODIFF_LLVM=0): its budget, its module cache."""
    previous = executor.set_llvm_enabled(False)
    yield
    executor.set_llvm_enabled(previous)


@pytest.mark.parametrize("backend", ["numba", None])
@pytest.mark.parametrize("path", ["llvm", "numba"])
def test_a_graph_over_the_budget_warns_and_runs_on_numpy(monkeypatch, backend, path):
    if path == "numba":
        monkeypatch.setattr(call, "_llvm_compiles", lambda graph: False)
        budget = "over the Numba backend's compile budget (4 equations, 2 per segment)"
    else:
        budget = "over the LLVM backend's compile budget (2 equations)"
    monkeypatch.setattr(call, "BUDGET_EQUATIONS", 4)  # (the gradient's graph has 5)
    monkeypatch.setattr(call, "BUDGET_SEGMENT_EQUATIONS", 2)
    monkeypatch.setattr(call, "LLVM_BUDGET_EQUATIONS", 2)
    compiles = []
    monkeypatch.setattr(call, "compile_backend", lambda g: compiles.append(g))
    step = ad.jit(ad.grad(loss), backend=backend)
    with pytest.warns(RuntimeWarning, match=re.escape(budget)):
        result = step(X)
    np.testing.assert_array_equal(result, reference(X))
    graph = step.graph(X)
    assert budget in graph.numba_failure
    step(X)
    step(X)
    assert compiles == [] and type(graph.compiled) is not call._Tiered


def test_the_budget_counts_the_largest_segment(monkeypatch):
    monkeypatch.setattr(call, "_llvm_compiles", lambda graph: False)  # (Numba's budget)

    def split(x):  # (cumsum runs in NumPy: two segments)
        y = anp.sin(x) * 2.0 + x
        return anp.cos(anp.cumsum(y)) * 3.0 - y

    graph = ad.jit(split).graph(X)
    total = graph.count_equations()
    largest = call._largest_segment(graph)
    assert 0 < largest < total - 1
    monkeypatch.setattr(call, "BUDGET_EQUATIONS", total)
    monkeypatch.setattr(call, "BUDGET_SEGMENT_EQUATIONS", largest)
    assert call.over_budget(graph) is None
    monkeypatch.setattr(call, "BUDGET_SEGMENT_EQUATIONS", largest - 1)
    assert f"{largest:,} in its largest compiled segment" in call.over_budget(graph)
    monkeypatch.setattr(call, "BUDGET_SEGMENT_EQUATIONS", largest)
    monkeypatch.setattr(call, "BUDGET_EQUATIONS", total - 1)
    assert call.over_budget(graph) is not None


def test_compiled_code_is_evicted_and_reloaded(monkeypatch, numba_only):
    monkeypatch.setattr(cache, "MAX_MODULES", 2)
    monkeypatch.setattr(cache, "_modules", {})
    monkeypatch.setattr(call, "MAX_RESIDENT", 2)
    scale = ad.jit(lambda x, k: anp.sin(x) * k, static_argnums=1, backend="numba")
    names = []
    for k in (1.5, 2.5, 3.5, 4.5):
        np.testing.assert_allclose(scale(X, k), np.sin(X) * k, rtol=1e-15)
        names.append(next(reversed(cache._modules.values())).__name__)
    assert len(set(names)) == 4 and len(cache._modules) == 2
    assert names[0] not in sys.modules and names[1] not in sys.modules
    assert names[3] in sys.modules
    first = scale.graph(X, 1.5)
    assert first.compiled is None  # (its compiled code dropped: compiled again when called)
    np.testing.assert_allclose(scale(X, 1.5), np.sin(X) * 1.5, rtol=1e-15)
    assert first.compiled is not None and first.numba_failure is None
    assert names[0] in sys.modules and len(cache._modules) == 2


def test_llvm_code_is_released_when_evicted(monkeypatch):
    monkeypatch.setattr(call, "MAX_RESIDENT", 2)
    scale = ad.jit(lambda x, k: anp.sin(x) * k, static_argnums=1, backend="numba")
    engines = []
    for k in (1.5, 2.5, 3.5):
        np.testing.assert_allclose(scale(X, k), np.sin(X) * k, rtol=1e-15)
        driver = scale.graph(X, k).compiled
        assert driver.llvm_segments == 1 and driver.numba_segments == 0
        engines.append(weakref.ref(driver.llvm_code[0]))
    first = scale.graph(X, 1.5)
    assert first.compiled is None  # (evicted: its engine freed with its last reference)
    gc.collect()
    assert engines[0]() is None and engines[2]() is not None
    np.testing.assert_allclose(scale(X, 1.5), np.sin(X) * 1.5, rtol=1e-15)
    assert first.compiled is not None and first.numba_failure is None
