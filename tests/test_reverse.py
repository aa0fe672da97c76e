"""Reverse-mode transforms: grad, value_and_grad, vjp — semantics, higher order, errors, big graphs."""

import collections

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


def test_grad_scalar_and_vector():
    assert ad.grad(lambda x: x * x)(3.0) == 6.0
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(ad.grad(lambda x: anp.sum(anp.sin(x)))(x), np.cos(x))


def test_nested_grad_to_order_four_matches_analytic():
    # d^k/dx^k sin = sin(x + k pi / 2)
    f = anp.sin
    for k in range(1, 5):
        f = ad.grad(f)
        assert np.isclose(f(0.7), np.sin(0.7 + k * np.pi / 2))
    # tanh: 4th derivative  16 t (1-t^2)(2 - 3 t^2) ... check against central differences of the 3rd
    d3 = ad.grad(ad.grad(ad.grad(anp.tanh)))
    d4 = ad.grad(d3)(0.3)
    h = 1e-4
    assert np.isclose(d4, (d3(0.3 + h) - d3(0.3 - h)) / (2 * h), rtol=1e-6)


def test_polynomial_derivatives_exact():
    p = lambda x: 3.0 * x**4 - 2.0 * x**3 + x - 5.0
    d = [p]
    for _ in range(5):
        d.append(ad.grad(d[-1]))
    x = 1.3
    assert np.isclose(d[1](x), 12 * x**3 - 6 * x**2 + 1)
    assert np.isclose(d[2](x), 36 * x**2 - 12 * x)
    assert np.isclose(d[3](x), 72 * x - 12)
    assert np.isclose(d[4](x), 72.0)
    assert d[5](x) == 0.0


def test_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1
    f = lambda x: x * ad.grad(lambda y: x + y)(2.0)
    assert ad.grad(f)(1.0) == 1.0
    # d/dx [ x * d/dy (x * y) ]|_{y=2} = d/dx x^2 = 2x
    g = lambda x: x * ad.grad(lambda y: x * y)(2.0)
    assert ad.grad(g)(3.0) == 6.0


def test_closure_over_outer_tracer():
    def outer(a):
        inner = lambda b: anp.sin(a * b)
        return ad.grad(inner)(2.0)  # = a cos(2a)

    a = 0.4
    expected = np.cos(2 * a) - 2 * a * np.sin(2 * a)
    assert np.isclose(ad.grad(outer)(a), expected)


def test_argnums_and_pytrees():
    def f(params, x):
        return anp.sum(params["w"] * x) + params["b"][0] * params["b"][1]

    params = {"w": np.array([1.0, 2.0]), "b": (3.0, np.array(4.0))}
    x = np.array([5.0, 6.0])
    g = ad.grad(f)(params, x)
    assert set(g) == {"w", "b"}
    np.testing.assert_allclose(g["w"], x)
    assert isinstance(g["b"], tuple) and np.isclose(g["b"][0], 4.0) and np.isclose(g["b"][1], 3.0)
    gp, gx = ad.grad(f, argnums=(0, 1))(params, x)
    np.testing.assert_allclose(gx, params["w"])
    assert ad.grad(f, argnums=-1)(params, x).shape == (2,)


def test_namedtuple_and_list_inputs():
    P = collections.namedtuple("P", "a b")
    g = ad.grad(lambda p: p.a * p.b[0] * p.b[1])(P(2.0, [3.0, 4.0]))
    assert isinstance(g, P) and isinstance(g.b, list)
    assert np.allclose([g.a, g.b[0], g.b[1]], [12.0, 8.0, 6.0])


def test_has_aux_and_value_and_grad():
    def f(x):
        y = anp.sum(x**2)
        return y, {"y": y, "double": 2 * x}

    (v, aux), g = ad.value_and_grad(f, has_aux=True)(np.array([1.0, 2.0]))
    assert v == 5.0 and aux["y"] == 5.0
    assert type(aux["double"]) is np.ndarray  # aux is returned as plain values
    np.testing.assert_allclose(g, [2.0, 4.0])
    g2, aux2 = ad.grad(f, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g2, [2.0, 4.0])


def test_unused_input_gets_zeros_and_constant_output():
    g = ad.grad(lambda x, y: x * 2.0, argnums=(0, 1))(1.0, np.ones(3))
    assert g[0] == 2.0 and np.array_equal(g[1], np.zeros(3))
    assert ad.grad(lambda x: 3.0)(np.ones(2)).tolist() == [0.0, 0.0]


def test_float32_stays_float32():
    x = np.linspace(0.1, 1, 5, dtype=np.float32)
    g = ad.grad(lambda x: anp.sum(anp.exp(x) * 2.0 + x**2 / 3.0))(x)
    assert g.dtype == np.float32
    g2 = ad.grad(lambda x: anp.sum(x * np.float64(2.0)))(x)  # promotes forward, cast back
    assert g2.dtype == np.float32


def test_vjp_multiple_calls_and_pytree_outputs():
    x = np.array([1.0, 2.0])
    out, pull = ad.vjp(lambda x, y: {"a": x * y, "b": anp.sin(x)}, x, 3.0)
    np.testing.assert_allclose(out["a"], x * 3.0)
    ct = {"a": np.ones(2), "b": np.array([0.0, 1.0])}
    gx, gy = pull(ct)
    np.testing.assert_allclose(gx, [3.0, 3.0 + np.cos(2.0)])
    assert np.isclose(gy, 3.0)
    gx2, _ = pull(ct)
    np.testing.assert_allclose(gx, gx2)


def test_vjp_has_aux():
    out, pull, aux = ad.vjp(lambda x: (x * 2.0, x + 1.0), np.ones(2), has_aux=True)
    np.testing.assert_allclose(aux, [2.0, 2.0])
    np.testing.assert_allclose(pull(np.ones(2))[0], [2.0, 2.0])


def test_plain_numpy_calls_dispatch_on_tracers():
    def f(x):
        return np.sum(np.sin(x) * np.exp(x)) + np.add(x, 1.0)[0]

    x = np.array([0.1, 0.2])
    expected = np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x) + np.array([1.0, 0.0])
    np.testing.assert_allclose(ad.grad(f)(x), expected)


def test_unsupported_numpy_function_raises_naming_it():
    window = np.lib.stride_tricks.sliding_window_view
    with pytest.raises(NotImplementedError, match="numpy.lib.stride_tricks.sliding_window_view"):
        ad.grad(lambda x: window(x, 2).sum())(np.ones(4))
    with pytest.raises(NotImplementedError, match="numpy.frexp"):
        ad.grad(lambda x: np.frexp(x)[0].sum())(np.ones(4))
    with pytest.raises(NotImplementedError, match="numpy.add.reduce"):
        ad.grad(lambda x: np.add.reduce(x))(np.ones(4))


def test_control_flow_on_concrete_values():
    def f(x):
        return x * x if x > 0 else -x

    assert ad.grad(f)(2.0) == 4.0 and ad.grad(f)(-2.0) == -1.0


# ----------------------------------------------------------------------------------- errors


def test_error_non_scalar_output():
    with pytest.raises(
        TypeError,
        match=r"Gradient only defined for scalar-output functions. Output had shape: \(3,\)",
    ):
        ad.grad(lambda x: x * 2.0)(np.ones(3))


def test_error_integer_input():
    def f(x, n):
        return anp.sum(x * n) if not isinstance(x, dict) else anp.sum(x["a"] * n)

    with pytest.raises(
        TypeError, match="grad requires real- or complex-valued inputs .* but got int64"
    ):
        ad.grad(lambda x: x * 2.0)(np.arange(3))
    with pytest.raises(TypeError, match="but got int64. Argument 1 of f has dtype int64"):
        ad.grad(f, argnums=(0, 1))(2.0, 3)
    with pytest.raises(TypeError, match="Argument 0 of f has a leaf of dtype bool: use allow_int"):
        ad.grad(f)({"a": np.ones(2), "b": np.array(True)}, 3)
    g = ad.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert g[0] == 3.0 and g[1].dtype == ad.float0 and g[1].shape == ()  # (as JAX)


ARGNUMS_TRANSFORMS = [ad.grad, ad.value_and_grad, ad.jacrev, ad.jacfwd, ad.hessian]


@pytest.mark.parametrize("transform", ARGNUMS_TRANSFORMS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("argnums", [(0, 0), (1, 0, 1), (0, -2), [1, 1]])
def test_repeated_argnums_raise(transform, argnums):
    with pytest.raises(ValueError, match="argnums must not contain duplicates") as info:
        transform(lambda x, y: x * y, argnums=argnums)(2.0, 3.0)
    assert f"argnums={argnums!r}" in str(info.value)


@pytest.mark.parametrize("transform", ARGNUMS_TRANSFORMS, ids=lambda t: t.__name__)
def test_argnums_of_a_wrong_type_raise(transform):
    f = lambda x, y: x * y
    for argnums in [0.0, (0, 1.0), None, (True,)]:
        with pytest.raises(TypeError, match="argnums must be an int or a sequence of ints"):
            transform(f, argnums=argnums)(2.0, 3.0)
    np.testing.assert_allclose(
        transform(f, argnums=np.int64(1))(2.0, 3.0), transform(f, 1)(2.0, 3.0)
    )


def test_error_unknown_argnums():
    with pytest.raises(TypeError, match="argnums=3 requires at least 4 positional arguments"):
        ad.grad(lambda x: x, argnums=3)(1.0)
    with pytest.raises(TypeError, match="argnums"):
        ad.grad(lambda x, y: x * y, argnums=(0, 5))(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int"):
        ad.grad(lambda x: x, argnums="0")(1.0)


def test_error_mismatched_pytree_cotangent():
    _, pull = ad.vjp(lambda x: (x, x * 2.0), np.ones(2))
    with pytest.raises(ValueError, match="unexpected tree structure"):
        pull([np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="unexpected JAX type .*Shape of cotangent"):
        pull((np.ones(3), np.ones(2)))


def test_error_has_aux_without_pair():
    with pytest.raises(TypeError, match="has_aux=True requires"):
        ad.grad(lambda x: x * 2.0, has_aux=True)(1.0)


def test_error_inside_function_leaves_stack_clean():
    def bad(x):
        ad.grad(lambda y: y * x)(1.0)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        ad.grad(bad)(1.0)
    assert trace_stack_depth() == 1


def test_escaped_tracer_raises():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    ad.grad(f)(1.0)
    with pytest.raises(ad.EscapedTracerError, match="finished ReverseTrace"):
        anp.sin(leaked[0])
    with pytest.raises(ad.TracerConversionError):
        ad.grad(lambda x: np.asarray(x).sum() * x)(1.0)


# ------------------------------------------------------------------------------- big graphs


def test_long_chain_has_no_recursion_limit():
    def f(x):
        for _ in range(100_000):
            x = x * 1.0000001
        return x

    assert np.isclose(ad.grad(f)(1.0), 1.0000001**100_000)


def test_wide_fan_in_sums_cotangents():
    def f(x):
        return anp.sum(anp.stack([x * float(i) for i in range(200)]))

    np.testing.assert_allclose(ad.grad(f)(np.ones(3)), np.full(3, sum(range(200))))


def test_nodes_of_one_and_two_inputs_read_as_tuples_and_release_their_residuals():
    """A node keeps the edges and residuals of one or two inputs in slots, not tuples (see
    core/graph.py's Node); `parents` and `primals` read them as tuples for every arity,
    and a backward pass that does not retain the graph releases them (running one again
    then raises), keeping the structure."""
    from autodiff.core.graph import MANY, ONE, RELEASED, edge_node
    from autodiff.reverse.engine import backward_pass
    from autodiff.reverse.graph import ReverseTrace

    trace = ReverseTrace(1)
    x0 = np.array([0.5, 2.0])
    x = trace.new_leaf(x0)
    leaf = edge_node(x._edge)
    y = trace.process(ad.ops.elementwise.multiply_p, (x, 3.0), {})
    z = trace.process(ad.ops.elementwise.sin_p, (y,), {})
    w = trace.process(
        ad.ops.rearrange.stack_p, (z, y, x), {"axis": 0, "dtype": None, "casting": "same_kind"}
    )
    mul, sin, stack = (edge_node(t._edge) for t in (y, z, w))
    assert (mul.p1, sin.p1, stack.p1, leaf.p1) == (None, ONE, MANY, MANY)
    assert mul.parents == (leaf, None) and mul.next_functions == ((leaf, 0), (None, 0))
    assert sin.parents == (mul,) and sin.name() == "SinBackward0"
    assert stack.parents == (sin, mul, leaf) and leaf.parents == () and leaf.primals == ()
    assert mul.primals[0] is x0 and mul.primals[1] == 3.0
    assert sin.primals[0] is y._value and len(stack.primals) == 3

    def run(retain):
        return backward_pass(
            [w._edge], [np.ones((3, 2))], retain_graph=retain, order=list(trace.nodes)
        )[leaf]

    want = 3.0 * np.cos(3.0 * x0) + 3.0 + 1.0
    np.testing.assert_allclose(run(True), want)
    assert None not in (mul.primals, sin.primals, stack.primals)
    np.testing.assert_allclose(run(False), want)
    assert mul.primals is None and sin.primals is None and stack.primals is None
    assert mul.x0 is RELEASED and mul.x1 is None and mul.out is None
    assert mul.parents == (leaf, None) and sin.parents == (mul,)  # (the structure stays)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        run(False)
    # The setters, as Node.release and buffers.release_node use them:
    mul.primals, sin.primals, stack.primals = (x0, 2.0), [x0], [x0, x0, x0]
    assert (mul.x0, mul.x1, sin.x0, stack.x0) == (x0, 2.0, x0, (x0, x0, x0))
    for node in (mul, sin, stack):
        node.release()
        assert node.primals is None and node.out is None


def test_x_int_shares_its_params():
    """`x[i]` for small i records the same params dict every time (no dict per node), with
    NumPy's meaning for negative indices."""
    from autodiff.core.graph import edge_node

    seen = []

    def f(x):
        for i in (0, 1, -1, -3, 0, 70, -70):
            seen.append(edge_node(x[i]._edge).params)
        return x[-1] * x[2] + x[70] * x[-70]

    x = np.arange(1.0, 101.0)
    g = ad.grad(f)(x)
    want = np.zeros(100)
    want[99], want[2] = x[2], x[99]
    want[70], want[30] = x[30], x[70]
    np.testing.assert_array_equal(g, want)
    assert [p["index"] for p in seen] == [(0,), (1,), (-1,), (-3,), (0,), (70,), (-70,)]
    assert seen[0] is seen[4] and seen[5] is not seen[0]


# ------------------------------------------------------------------------------ NumPy rules


_MATMUL_OPERANDS = {
    "matrices": ((5, 3), (3, 4), np.float64, np.float64),
    "float32": ((5, 3), (3, 4), np.float32, np.float32),
    "mixed dtypes": ((5, 3), (3, 4), np.float32, np.float64),
    "complex": ((5, 3), (3, 4), np.complex128, np.complex128),
    "matrix-vector": ((5, 3), (3,), np.float64, np.float64),
    "batched": ((2, 5, 3), (3, 4), np.float64, np.float64),
}


@pytest.mark.parametrize("name", list(_MATMUL_OPERANDS))
def test_matmul_rule_computes_no_product_for_a_constant_operand(name, monkeypatch):
    """matmul's vjp rule gives cotangents in the input dtypes, the same whichever operands are
    asked for, and computes no product for a constant operand."""
    from autodiff.ops import products

    a_shape, b_shape, a_dt, b_dt = _MATMUL_OPERANDS[name]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(a_dt)
    b = rng.standard_normal(b_shape).astype(b_dt)
    if np.iscomplexobj(a):
        a = a + 1j * rng.standard_normal(a_shape)
        b = b + 1j * rng.standard_normal(b_shape)
    f = lambda a, b: anp.sum(anp.abs(anp.tanh(a @ b)) ** 2)
    both = ad.grad(f, (0, 1))(a, b)
    calls = []  # the products, forward and backward
    real = products.matmul_p.impl
    monkeypatch.setattr(products.matmul_p, "impl", lambda x, y: calls.append(1) or real(x, y))
    gb = ad.grad(f, 1)(a, b)
    if name in ("matrices", "float32"):
        assert len(calls) == 2  # the forward product and one backward product: none for `a`
    for got, want in [(ad.grad(f, 0)(a, b), both[0]), (gb, both[1])]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_recycling_never_writes_into_arrays_the_caller_holds(monkeypatch):
    """Seeds, inputs, residuals and cotangents shared between parents are never recycled."""
    from autodiff.core import buffers
    from autodiff.reverse import engine

    monkeypatch.setattr(engine, "RECYCLE_MIN_SIZE", 0)
    monkeypatch.setattr(buffers, "POOL_MIN_BYTES", 1)
    x = np.linspace(-1.0, 1.0, 64)
    seed = np.linspace(1.0, 2.0, 64)
    keep = x.copy(), seed.copy()
    out, pullback = ad.vjp(lambda x: anp.exp(-x) * anp.sin(x) + x, x)
    first = pullback(seed)
    second = pullback(seed)  # residuals intact: the same result again
    np.testing.assert_array_equal(x, keep[0])
    np.testing.assert_array_equal(seed, keep[1])
    np.testing.assert_array_equal(first[0], second[0])
    want = seed * (-np.exp(-x) * np.sin(x) + np.exp(-x) * np.cos(x) + 1)
    np.testing.assert_allclose(first[0], want, rtol=1e-14)


# ------------------------------------------------------------------------------ recycled memory


def test_large_gradients_recycle_their_memory():
    """The arrays a large gradient's backward pass alone holds are pooled, and the next call's
    recorded ops write into them: the same result, and the caller's arrays never pooled."""
    from autodiff.core import buffers

    if not buffers.EXACT_REFCOUNTS:
        pytest.skip("no exact reference counts: nothing is recycled")
    n = buffers.POOL_MIN_BYTES // 8
    x = np.random.default_rng(0).standard_normal(n)
    keep = x.copy()
    f = lambda x: anp.sum(anp.tanh(x) * anp.exp(-x * x) + anp.log1p(x * x))
    buffers.clear()
    try:
        first = ad.grad(f)(x)
        pooled = buffers.pooled_bytes()
        assert pooled >= 3 * x.nbytes  # (at least the residuals: tanh, exp, x * x)
        arrays = [a for stack in buffers._pool.free.values() for a in stack]
        assert all(a is not x and a is not first for a in arrays)
        assert len({id(a) for a in arrays}) == len(arrays)
        second = ad.grad(f)(x)
        np.testing.assert_array_equal(first, second)
        assert second is not first and not np.shares_memory(first, second)
        np.testing.assert_array_equal(x, keep)
        assert buffers.pooled_bytes() <= pooled + x.nbytes
    finally:
        buffers.clear()
    assert buffers.pooled_bytes() == 0


def test_retained_graphs_and_held_results_are_not_recycled():
    """A graph kept for another backward pass keeps its residuals, and an intermediate array
    the caller still holds is never pooled (nor written into by a later call)."""
    from autodiff.core import buffers

    n = buffers.POOL_MIN_BYTES // 8
    x0 = np.linspace(-1.0, 1.0, n)
    buffers.clear()
    try:
        x = ad.tensor(x0, requires_grad=True)
        e = anp.exp(x * x)
        held = e.detach().numpy()
        keep = held.copy()
        (e * 2.0).sum().backward(retain_graph=True)
        assert buffers.pooled_bytes() == 0
        first = x.grad.numpy().copy()
        x.grad = None
        (e * 2.0).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), first)
        arrays = [a for stack in buffers._pool.free.values() for a in stack]
        assert all(not np.shares_memory(a, held) and not np.shares_memory(a, x0) for a in arrays)
        for _ in range(2):  # later calls may use the pool: `held` stays as it was
            ad.grad(lambda x: anp.sum(anp.exp(x * x) * 2.0))(x0)
        np.testing.assert_array_equal(held, keep)
    finally:
        buffers.clear()


def test_forward_temporaries_are_recycled_unless_held():
    """Medium arrays no node keeps (shape-only residuals: the product before a bias is added,
    the sum before a tanh) are recycled when the gradient's trace ends, and matrix products
    write into recycled memory; an intermediate the function returns (aux) never is."""
    from autodiff.core import buffers

    if not buffers.EXACT_REFCOUNTS:
        pytest.skip("no exact reference counts: nothing is recycled")
    rng = np.random.default_rng(1)
    rows = buffers.POOL_MIN_BYTES // (8 * 64) + 1
    x, w, b = rng.standard_normal((rows, 32)), rng.standard_normal((32, 64)), np.ones(64)

    def f(w, b):
        pre = x @ w + b  # (add keeps stand-ins: `x @ w` and `pre` die in the forward pass)
        return anp.sum(anp.tanh(pre) ** 2), pre

    buffers.clear()
    try:
        (value, pre), grads = ad.value_and_grad(f, argnums=(0, 1), has_aux=True)(w, b)
        keep = np.array(pre, copy=True)
        arrays = [a for stack in buffers._pool.free.values() for a in stack]
        # (the backward pass pools two such cotangents; the trace's end adds at least x @ w)
        assert sum(a.shape == (rows, 64) for a in arrays) >= 3
        assert all(not np.shares_memory(a, pre) for a in arrays)
        for _ in range(3):
            (value2, _), grads2 = ad.value_and_grad(f, argnums=(0, 1), has_aux=True)(w, b)
            assert value2 == value
            for g, g2 in zip(grads, grads2):
                np.testing.assert_array_equal(g, g2)
        np.testing.assert_array_equal(pre, keep)
    finally:
        buffers.clear()


def test_recycled_memory_keeps_layouts_and_results(monkeypatch):
    """Fortran-ordered, broadcast and transposed operands: results with the pool on are bitwise
    those with it off (an op writes into recycled memory only where NumPy's result would be
    C-ordered too, so reductions sum in the same order)."""
    from autodiff.core import buffers

    rng = np.random.default_rng(5)
    n = 1 << 9  # 512 x 512 float64: 2 MiB
    xf = np.asfortranarray(rng.standard_normal((n, n)))
    xc = np.ascontiguousarray(xf)
    row = rng.standard_normal(n)

    def f(x):
        y = anp.exp(x * 0.1) * x + anp.sin(x) * row
        y = y + anp.tanh(x.T @ y * 1e-3) @ x  # (products of transposed operands)
        return anp.sum(anp.sum(y * y, axis=0) * anp.tanh(anp.sum(y, axis=1)))

    gradient = ad.grad(f)
    monkeypatch.setattr(buffers, "POOL_MAX_BYTES", 0)  # nothing is pooled
    buffers.clear()
    want = [gradient(x) for x in (xf, xc)]
    monkeypatch.undo()
    try:
        for _ in range(3):
            for x, w in zip((xf, xc), want):
                got = gradient(x)
                np.testing.assert_array_equal(got, w)
                assert got.flags.c_contiguous == w.flags.c_contiguous
        assert buffers.pooled_bytes() > 0
    finally:
        buffers.clear()


def test_recycled_memory_is_per_thread():
    """Each thread has its own pool: what one thread's gradient released, another's ops never
    write into."""
    import threading

    from autodiff.core import buffers

    n = buffers.POOL_MIN_BYTES // 8
    x = np.linspace(-1.0, 1.0, n)
    f = lambda x: anp.sum(anp.sin(x) * anp.cos(x))
    want = ad.grad(f)(x)
    seen = []

    def worker():
        for _ in range(3):
            seen.append(ad.grad(f)(x))
        seen.append(buffers.pooled_bytes())
        buffers.clear()

    buffers.clear()
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert buffers.pooled_bytes() == 0  # (this thread's pool: untouched by the workers)
    for got in seen:
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, want)


def test_recycling_with_list_and_scalar_operands(monkeypatch):
    """Donating rules handle operands that are lists, NumPy scalars or other dtypes."""
    from autodiff.reverse import engine

    x = np.linspace(0.1, 1.0, 5)
    rows = [1.0, 2.0, 3.0, 4.0, 5.0]
    fs = [
        lambda x: anp.sum(anp.multiply(rows, anp.exp(x)) * 2.0),
        lambda x: anp.sum(anp.multiply(anp.exp(x), rows) * 2.0),
        lambda x: anp.sum(anp.divide(rows, anp.exp(x)) * 2.0),
        lambda x: anp.sum(anp.multiply(np.float32(3.0), anp.exp(x)) * 2.0),
        lambda x: anp.sum(anp.multiply(np.arange(5), anp.sin(x)) * 2.0),
    ]
    want = [ad.grad(f)(x) for f in fs]
    monkeypatch.setattr(engine, "RECYCLE_MIN_SIZE", 0)
    for f, w in zip(fs, want):
        got = ad.grad(f)(x)
        np.testing.assert_array_equal(got, w)
        assert got.dtype == w.dtype
