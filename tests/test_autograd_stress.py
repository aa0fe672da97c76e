"""The imperative autograd under load: concurrent backward passes, very long graphs, memory.

Each test stays well under ten seconds; none asserts a wall-clock time.
"""

import gc
import sys
import threading
import tracemalloc
import weakref

import numpy as np

import autodiff as ad
import autodiff.numpy as anp
from autodiff import autograd
from autodiff.core.primitive import Primitive, bind


def test_concurrent_backward_on_separate_graphs():
    n_threads, n_steps = 4, 200
    start = threading.Barrier(n_threads)
    results, errors = {}, []

    def work(k):
        try:
            start.wait(5)
            x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
            scale = float(k + 1)
            for _ in range(n_steps):
                y = anp.sin(x * scale) * x
                y.sum().backward()
                (g,) = autograd.grad((x * x * scale).sum(), x)
                assert g.tolist() == [2.0 * scale * v for v in (1.0, 2.0, 3.0)]
            results[k] = x.grad.detach().numpy()
        except Exception as exc:  # reported below, with the thread's number
            errors.append((k, exc))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    x = np.array([1.0, 2.0, 3.0])
    for k in range(n_threads):
        s = k + 1.0
        expected = n_steps * (s * x * np.cos(s * x) + np.sin(s * x))
        np.testing.assert_allclose(results[k], expected, rtol=1e-12)


def test_concurrent_backward_into_shared_leaves_loses_nothing():
    # Hogwild-style: separate graphs, one shared parameter; .grad accumulation is atomic.
    n_threads, n_steps = 4, 300
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    start = threading.Barrier(n_threads)
    errors = []

    def work():
        try:
            start.wait(5)
            for _ in range(n_steps):
                (x * 3).sum().backward()
        except Exception as exc:
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert x.grad.tolist() == [3.0 * n_threads * n_steps] * 2


def test_concurrent_backward_with_hooks_and_grad_modes():
    # Each thread toggles its own grad mode and hooks; none sees the other's state.
    errors = []
    start = threading.Barrier(2)

    def hooked():
        try:
            start.wait(5)
            for _ in range(300):
                x = ad.tensor([2.0], requires_grad=True)
                y = x * x
                y.register_hook(lambda g: g * 10)
                y.sum().backward()
                assert x.grad.tolist() == [40.0]
        except Exception as exc:
            errors.append(exc)

    def toggling():
        try:
            start.wait(5)
            for _ in range(300):
                x = ad.tensor([2.0], requires_grad=True)
                with ad.no_grad():
                    assert not (x * x).requires_grad
                y = x * x
                assert y.requires_grad
                y.sum().backward()
                assert x.grad.tolist() == [4.0]
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hooked), threading.Thread(target=toggling)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _identity_primitive():
    # A trivial primitive keeps the million-node graph cheap to build: this test is about
    # the engine (no recursion, freeing by reference counting), not about op rules.
    ident_p = Primitive("chain_identity")
    ident_p.impl = lambda x: x
    ident_p.vjp = lambda ct, x, *, out: (ct,)
    return ident_p


def test_backward_over_a_million_node_chain_without_recursion():
    ident_p = _identity_primitive()
    limit = sys.getrecursionlimit()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the graph must be freed by reference counting alone
    try:
        x = ad.tensor(1.5, requires_grad=True)
        y = x * 2.0
        for _ in range(10**6):
            y = bind(ident_p, y)
        head = weakref.ref(y.grad_fn)
        tail = weakref.ref(x * 1.0)  # a dead result: its node must be gone as well
        sys.setrecursionlimit(200)  # any recursion over the chain would fail
        y.backward()
        sys.setrecursionlimit(limit)
        assert x.grad.item() == 2.0
        assert head() is not None  # the structure stays while y is alive
        del y
        assert head() is None  # ... and is freed, without the cycle collector, once y dies
        assert tail() is None
    finally:
        sys.setrecursionlimit(limit)
        if gc_was_enabled:
            gc.enable()


def test_graph_is_freed_when_the_output_dies():
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        x = ad.tensor([1.0, 2.0], requires_grad=True)
        y = anp.tanh(x * x + 1.0).sum()
        nodes = []
        stack = [y.grad_fn]
        while stack:
            node = stack.pop()
            nodes.append(weakref.ref(node))
            stack.extend(n for n, _ in node.next_functions if n is not None)
        y.backward()
        del y, node, stack
        # Only x's AccumulateGrad may survive (x holds it); every op node is gone.
        alive = list({id(r()): r() for r in nodes if r() is not None}.values())
        assert [n.name() for n in alive] == ["torch::autograd::AccumulateGrad"]
        assert alive[0].variable is x
    finally:
        if gc_was_enabled:
            gc.enable()


def test_retained_graph_is_freed_too():
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        x = ad.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x * x).sum()
        (g,) = autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        node = weakref.ref(y.grad_fn)
        grad_node = weakref.ref(g.grad_fn)
        del y, g
        x.grad = None
        assert node() is None and grad_node() is None
    finally:
        if gc_was_enabled:
            gc.enable()


def test_manual_sgd_training_keeps_memory_flat():
    rng = np.random.default_rng(0)
    inputs = ad.tensor(rng.standard_normal((128, 8)))
    targets = ad.tensor(rng.standard_normal((128, 1)))
    w1 = ad.tensor(rng.standard_normal((8, 64)) * 0.3, requires_grad=True)
    b1 = ad.zeros(64, requires_grad=True)
    w2 = ad.tensor(rng.standard_normal((64, 1)) * 0.1, requires_grad=True)
    b2 = ad.zeros(1, requires_grad=True)
    params = [w1, b1, w2, b2]

    def step():
        hidden = anp.tanh(inputs @ w1 + b1)
        loss = ((hidden @ w2 + b2 - targets) ** 2).mean()
        loss.backward()
        with ad.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
        return loss.item()

    gc_was_enabled = gc.isenabled()
    gc.disable()  # no reference cycles may be needed to free a step's graph
    tracemalloc.start()
    try:
        losses = []
        for i in range(1, 1001):
            if i in (1, 991):
                tracemalloc.reset_peak()
            losses.append(step())
            if i == 10:
                current_10, peak_10 = tracemalloc.get_traced_memory()
        current_1000, peak_1000 = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        if gc_was_enabled:
            gc.enable()
    assert losses[-1] < 0.5 * losses[0]  # it did train
    # A step's graph is ~0.4 MB; leaking it would add hundreds of MB over 1000 steps.
    assert peak_1000 < 1.5 * peak_10
    assert current_1000 - current_10 < 256 * 1024
