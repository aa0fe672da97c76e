"""The tracer layer: pytrees, Tensor, bind and the level stack."""

import collections
import threading

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core import Primitive, bind, tree_flatten, tree_map, tree_unflatten
from autodiff.core.trace import current_level, trace_stack_depth


def test_pytree_roundtrip_of_nested_containers():
    P = collections.namedtuple("P", "a b")
    tree = {"z": [1, (2, None)], "a": P(3, {"k": 4})}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [3, 4, 1, 2]
    assert tree_unflatten(treedef, leaves) == tree
    assert tree_map(lambda v: v * 10, tree)["a"].b["k"] == 40


def test_pytree_registered_class():
    class Box:
        def __init__(self, v):
            self.v = v

    ad.register_pytree_node(Box, lambda b: ([b.v], None), lambda _, c: Box(*c))
    g = ad.grad(lambda b: b.v * b.v)(Box(3.0))
    assert isinstance(g, Box) and g.v == 6.0


def test_pytree_unflatten_checks_leaf_count():
    _, treedef = tree_flatten((1, 2))
    with pytest.raises(ValueError, match="has 2 leaves, got 3"):
        tree_unflatten(treedef, [1, 2, 3])


def test_bind_fast_path_returns_raw_numpy():
    out = anp.sin(np.array([0.0, 1.0]))
    assert type(out) is np.ndarray
    assert np.array_equal(anp.add(np.ones(2, np.float32), 1.0), np.full(2, 2.0, np.float32))
    assert anp.add(np.ones(2, np.float32), 1.0).dtype == np.float32


def test_level0_tensor_quacks_like_an_ndarray():
    t = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.ndim == 2 and t.size == 4 and t.dtype == np.float64
    u = (t * 2 + 1) ** 2 - t / 2
    assert isinstance(u, ad.Tensor)
    np.testing.assert_allclose(u.numpy(), (t.numpy() * 2 + 1) ** 2 - t.numpy() / 2)
    v = np.sin(t)  # ufunc protocol
    assert isinstance(v, ad.Tensor)
    assert np.asarray(t).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert (t > 2).tolist() == [[False, False], [True, True]]
    assert float(t[1, 1]) == 4.0 and len(t) == 2 and t[0, 0].item() == 1.0
    assert "tensor(" in repr(t)


def test_missing_rule_has_clear_error():
    p = Primitive("mystery")
    p.impl = lambda x: x
    with pytest.raises(
        NotImplementedError, match="Reverse-mode \\(vjp\\) rule for 'mystery' is not implemented"
    ):
        p.rule("vjp")
    with pytest.raises(NotImplementedError, match="Forward-mode \\(jvp\\) rule for 'mystery'"):
        p.rule("jvp")
    with pytest.raises(NotImplementedError, match="Batching \\(vmap\\) rule for 'mystery'"):
        p.rule("batch")


def test_primitive_without_vjp_raises_in_grad():
    p = Primitive("novjp")
    p.impl = lambda x: x * 2.0
    with pytest.raises(NotImplementedError, match="Reverse-mode \\(vjp\\) rule for 'novjp'"):
        ad.grad(lambda x: bind(p, x))(1.0)
    assert trace_stack_depth() == 1


def test_levels_inside_nested_transforms():
    seen = []

    def inner(y):
        seen.append(current_level())
        return y * 2.0

    def outer(x):
        seen.append(current_level())
        return ad.grad(inner)(x) * x

    ad.grad(outer)(1.0)
    assert seen == [1, 2] and current_level() == 0


def test_level_stack_is_thread_local():
    results = {}
    barrier = threading.Barrier(2)

    def work(name, scale):
        def f(x):
            barrier.wait(timeout=10)  # both threads are inside a transform at once
            return anp.sum(anp.sin(x) * scale)

        results[name] = (ad.grad(f)(np.arange(3.0)), trace_stack_depth())

    threads = [threading.Thread(target=work, args=(n, s)) for n, s in (("a", 1.0), ("b", 2.0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(results["a"][0], np.cos(np.arange(3.0)))
    np.testing.assert_allclose(results["b"][0], 2 * np.cos(np.arange(3.0)))
    assert results["a"][1] == results["b"][1] == 1


def test_grad_accepts_and_returns_tensors():
    g = ad.grad(lambda t: anp.sum(t * t))(ad.tensor([1.0, 2.0]))
    assert isinstance(g, ad.Tensor)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_transforms_create_no_reference_cycles():
    """Graphs and tracers are freed by reference counting alone (DESIGN section 4)."""
    import gc

    x = np.linspace(-1, 1, 20)
    f = lambda x: anp.tanh(x) * x[::-1] + anp.sum(x) * 0.001

    def run():
        _, pull = ad.vjp(f, x)
        pull(np.ones(20))
        ad.grad(lambda x: anp.sum(f(x)))(x)
        ad.jacfwd(f)(x)
        ad.jacrev(f, chunk_size=7)(x)
        ad.hessian(lambda x: anp.sum(f(x)))(x[:5])
        ad.vmap(f)(np.ones((3, 20)))
        t = ad.tensor(x, requires_grad=True)
        anp.sum(f(t)).backward()

    run()  # (first uses compile rule forms once: module-level caches, not per-call garbage)
    gc.collect()
    gc.disable()
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        run()
        gc.collect()
        leaked = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert leaked == [], leaked


_SCALAR_OPERANDS = [
    np.float64(1.5),
    np.float32(2.5),
    np.complex128(1 + 2j),
    np.complex64(1 - 1j),
    np.float64(0.0),
    np.float32(-0.0),
    np.float64(np.inf),
    np.float32(3e38),
    np.float64(np.nan),
    2.0,
    3,
    0,
    10**30,
]


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_scalar_math_gives_the_ufunc_result(name):
    """Arithmetic on NumPy float scalars takes NumPy's scalar math (Primitive.scalar_impl),
    raw and while recorded: the ufunc's value, type and floating-point errors."""
    ufunc = getattr(np, name)
    f = getattr(anp, name)
    with np.errstate(all="ignore"):
        for x in _SCALAR_OPERANDS:
            for y in _SCALAR_OPERANDS:
                if type(x) in (int, float) and type(y) in (int, float):
                    continue
                try:
                    want = ufunc(x, y)
                except OverflowError:  # (a Python int too large for the scalar's type)
                    with pytest.raises(OverflowError):
                        f(x, y)
                    continue
                got = f(x, y)
                assert type(got) is type(want)
                assert np.array(got).tobytes() == np.array(want).tobytes(), (x, y)
                if np.iscomplexobj(got) or not np.isfinite(want):
                    continue
                if isinstance(x, np.generic):  # recorded (a Python number would be float64)
                    # (a * 1.0 is a NumPy scalar: the ufunc's result for a 0-d array)
                    value = ad.value_and_grad(lambda a: f(a * 1.0, y))(x)[0]
                    assert np.array(value).tobytes() == np.array(want).tobytes(), (x, y)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            anp.divide(np.float64(1.0), np.float64(0.0))
        with pytest.raises(FloatingPointError):
            ad.grad(lambda a: anp.divide(a * 1.0, np.float64(0.0)))(np.float64(1.0))
