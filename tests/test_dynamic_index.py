"""Traced integer indices: `x[i]`, `x[i:i + 3]`, `take`, `.at[i]` and JAX's dynamic_slice /
dynamic_update_slice with indices that are vmapped or staged, under every transform.

The op table (tests/cases_index.py, the `vmapped-index-*` and `*-data-start` rows) checks
each form against a loop with every derivative check; this file checks what a table row
cannot: per-example gradients of an embedding lookup, compositions of transforms, jit with
staged indices on both backends, JAX's clamping semantics, and the errors.
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.errors import ConcretizationError
from autodiff.kernels._numba import numba_available
from autodiff.ops.at import at

RNG = np.random.default_rng(7)
E = RNG.normal(size=(10, 4))
IDX = np.array([3, 0, 9, 3, -1, 5])
Y = RNG.normal(size=6)


def loss(E, i, y):
    """An embedding lookup, a small nonlinearity and a squared error."""
    e = E[i]
    return (anp.sum(anp.tanh(e) * e) - y) ** 2


def window_loss(E, i, y):
    """A window of three rows starting at i (x[i:i + 3]) and a dynamic slice of two columns."""
    w = E[i : i + 3]
    return (anp.sum(anp.sin(w)) + anp.sum(ad.dynamic_slice(E, (i, i), (2, 2)) ** 2) - y) ** 2


def _loop_grads(f, E, idx, y):
    return np.stack([ad.grad(f)(E, int(i), float(t)) for i, t in zip(idx, y)])


def _hand_grad(E, i, y):
    """The embedding loss's gradient worked out by hand: only row i is nonzero."""
    e = E[i]
    r = np.sum(np.tanh(e) * e) - y
    g = np.zeros_like(E)
    g[i] = 2 * r * (np.tanh(e) + e * (1 - np.tanh(e) ** 2))
    return g


# ------------------------------------------------------------------ per-example gradients


def test_per_example_embedding_gradients_match_a_loop():
    want = np.stack([_hand_grad(E, i, t) for i, t in zip(IDX, Y)])
    np.testing.assert_allclose(_loop_grads(loss, E, IDX, Y), want, rtol=1e-12)
    got = ad.vmap(ad.grad(loss), in_axes=(None, 0, 0))(E, IDX, Y)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("f", [loss, window_loss], ids=["lookup", "window"])
def test_per_example_gradients_under_every_composition(f):
    idx = np.array([0, 4, 7, 2]) if f is window_loss else IDX
    y = Y[: len(idx)]
    want = _loop_grads(f, E, idx, y)
    vg = ad.vmap(ad.grad(f), in_axes=(None, 0, 0))
    np.testing.assert_allclose(vg(E, idx, y), want, rtol=1e-10)
    if f is loss:  # (a slice with a staged start has no static length: see the errors below)
        np.testing.assert_allclose(ad.jit(vg)(E, idx, y), want, rtol=1e-10)
        jg = ad.vmap(ad.jit(ad.grad(f)), in_axes=(None, 0, 0))
        np.testing.assert_allclose(jg(E, idx, y), want, rtol=1e-10)
    summed = ad.grad(lambda E: anp.sum(ad.vmap(f, in_axes=(None, 0, 0))(E, idx, y)))(E)
    np.testing.assert_allclose(summed, want.sum(0), rtol=1e-10)
    jac = ad.jacfwd(lambda E: ad.vmap(f, in_axes=(None, 0, 0))(E, idx, y))(E)
    np.testing.assert_allclose(jac, want, rtol=1e-10)
    rev = ad.jacrev(lambda E: ad.vmap(f, in_axes=(None, 0, 0))(E, idx, y))(E)
    np.testing.assert_allclose(rev, want, rtol=1e-10)


def test_second_order_through_batched_indices():
    """vmap of a Hessian-vector product of the lookup loss: the scatter of the gradient is
    differentiated and batched again."""
    v = RNG.normal(size=E.shape)

    def hvp(E, i, y):
        return ad.jvp(lambda E: ad.grad(loss)(E, i, y), (E,), (v,))[1]

    want = np.stack([hvp(E, int(i), float(t)) for i, t in zip(IDX, Y)])
    np.testing.assert_allclose(ad.vmap(hvp, in_axes=(None, 0, 0))(E, IDX, Y), want, rtol=1e-10)


def test_torch_face_tensors_with_vmapped_indices():
    """A Tensor that requires grad, indexed per example inside vmap, records one graph."""
    table = ad.tensor(E, requires_grad=True)
    out = ad.vmap(lambda i: anp.sum(table[i : i + 2] ** 2))(np.array([0, 3, 8]))
    out.sum().backward()
    want = np.zeros_like(E)
    for i in (0, 3, 8):
        want[i : i + 2] += 2 * E[i : i + 2]
    np.testing.assert_allclose(table.grad, want)


# ------------------------------------------------------------------ jit with staged indices

BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_staged_indices_under_jit(backend):
    x = RNG.normal(size=(6, 5))
    cases = [
        (lambda x, i: anp.sin(x[i]) * 2.0, lambda x, i: np.sin(x[i]) * 2.0),
        (lambda x, i: x[:, i] * x[i, i], lambda x, i: x[:, i] * x[i, i]),
        (lambda x, i: anp.take(x, i), lambda x, i: np.take(x, i)),
        (lambda x, i: at(x)[i].add(1.0) * x, lambda x, i: _added(x, i) * x),
        (
            lambda x, i: ad.dynamic_slice(x, (i, i - 1), (3, 2)),
            lambda x, i: _block(x, (i, i - 1), (3, 2)),
        ),
        (
            lambda x, i: ad.dynamic_update_slice(x, x[:2, :2] * 3.0, (i, -2)),
            lambda x, i: _updated(x, x[:2, :2] * 3.0, (i, -2)),
        ),
    ]
    for fun, ref in cases:
        jitted = ad.jit(fun, backend=backend)
        for i in (0, 2, 4, -1):
            np.testing.assert_allclose(jitted(x, i), ref(x, i), rtol=1e-13)
        grad = ad.jit(ad.grad(lambda x, i: anp.sum(fun(x, i) ** 2)), backend=backend)
        want = ad.grad(lambda x: anp.sum(fun(x, 2) ** 2))(x)
        np.testing.assert_allclose(grad(x, 2), want, rtol=1e-12)
        if backend == "numba":
            assert grad.graph(x, 2).numba_failure is None


def _added(x, i):
    out = x.copy()
    out[i] += 1.0
    return out


def _clamped(start, n, size):
    return min(max(start + n if start < 0 else start, 0), n - size)


def _block(x, starts, sizes):
    return x[
        tuple(
            slice(_clamped(s, n, k), _clamped(s, n, k) + k)
            for s, n, k in zip(starts, x.shape, sizes)
        )
    ]


def _updated(x, u, starts):
    out = x.copy()
    index = tuple(
        slice(_clamped(s, n, k), _clamped(s, n, k) + k) for s, n, k in zip(starts, x.shape, u.shape)
    )
    out[index] = u
    return out


def test_jit_stages_dynamic_slices_as_one_equation():
    graph = ad.make_graph(lambda x, i: ad.dynamic_slice(x, (i, 0), (2, 5)))(np.ones((6, 5)), 1)
    names = [eqn.prim.name for eqn in graph.equations]
    assert names.count("dynamic_slice") == 1
    graph = ad.make_graph(lambda x, i: ad.dynamic_slice(x, (1, 0), (2, 5)))(np.ones((6, 5)), 1)
    assert "dynamic_slice" not in [eqn.prim.name for eqn in graph.equations]  # (concrete: basic)


# ------------------------------------------------------------------ semantics


def test_dynamic_slice_clamps_as_jax_documents():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ad.dynamic_slice(x, (1, 1), (2, 3)), [[5, 6, 7], [9, 10, 11]])
    np.testing.assert_array_equal(ad.dynamic_slice(x, (1, 1), (2, 4)), x[1:3])
    np.testing.assert_array_equal(
        ad.dynamic_update_slice(np.zeros(6), np.ones(3), (5,)), [0, 0, 0, 1, 1, 1]
    )
    np.testing.assert_array_equal(ad.dynamic_slice_in_dim(np.arange(5.0), 4, 3), [2, 3, 4])
    np.testing.assert_array_equal(ad.dynamic_index_in_dim(x, 1, axis=1, keepdims=False), x[:, 1])
    np.testing.assert_array_equal(ad.dynamic_index_in_dim(x, -1), x[-1:])
    u = np.ones((2, 3))
    want = np.zeros((4, 4))
    want[1:3, :3] = 1.0
    np.testing.assert_array_equal(ad.dynamic_update_slice_in_dim(np.zeros((4, 4)), u, 1, 0), want)
    want = np.zeros((3, 4))
    want[:, 2] = [1.0, 2.0, 3.0]
    got = ad.dynamic_update_index_in_dim(np.zeros((3, 4)), np.array([1.0, 2.0, 3.0]), 2, 1)
    np.testing.assert_array_equal(got, want)


def test_dynamic_slices_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    lax = jax.lax
    x = RNG.normal(size=(5, 6))
    starts = np.array([-7, -6, -1, 0, 2, 4, 5, 9])
    for sizes in [(2, 3), (5, 1), (0, 6)]:
        for i in starts:
            for j in starts[::3]:
                want = np.asarray(lax.dynamic_slice(x, (i, j), sizes))
                np.testing.assert_array_equal(ad.dynamic_slice(x, (i, j), sizes), want)
                u = RNG.normal(size=sizes)
                want = np.asarray(lax.dynamic_update_slice(x, u, (i, j)))
                np.testing.assert_array_equal(ad.dynamic_update_slice(x, u, (i, j)), want)
        # The same starts vmapped (batched starts: a gather and a scatter) and staged.
        i, j = np.repeat(starts, 3), np.tile(starts[:3], len(starts))
        want = jax.vmap(lambda i, j: lax.dynamic_slice(x, (i, j), sizes))(i, j)
        got = ad.vmap(lambda i, j: ad.dynamic_slice(x, (i, j), sizes))(i, j)
        np.testing.assert_array_equal(got, np.asarray(want))
        got = ad.jit(ad.vmap(lambda i, j: ad.dynamic_slice(x, (i, j), sizes)))(i, j)
        np.testing.assert_array_equal(got, np.asarray(want))
        us = RNG.normal(size=(len(i), *sizes))
        want = jax.vmap(lambda u, i, j: lax.dynamic_update_slice(x, u, (i, j)))(us, i, j)
        got = ad.vmap(lambda u, i, j: ad.dynamic_update_slice(x, u, (i, j)))(us, i, j)
        np.testing.assert_array_equal(got, np.asarray(want))
    # Gradients, JAX's too.
    f = lambda x, i: jax.numpy.sum(lax.dynamic_slice(x, (i, 2), (3, 3)) ** 3)
    g = lambda x, i: anp.sum(ad.dynamic_slice(x, (i, 2), (3, 3)) ** 3)
    for i in (-1, 0, 4):
        np.testing.assert_allclose(ad.grad(g)(x, i), np.asarray(jax.grad(f)(x, i)), rtol=1e-13)
    want = jax.vmap(jax.grad(f), in_axes=(None, 0))(x, starts)
    got = ad.vmap(ad.grad(g), in_axes=(None, 0))(x, starts)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-13)


def test_slices_with_vmapped_bounds_follow_numpy():
    x = ad.tensor(RNG.normal(size=(7, 3)))
    raw = x.numpy()
    for fun in (
        lambda i: x[i : i + 2],
        lambda i: x[i : i + 3, 1:],
        lambda i: x[-i - 1 : -i + 5 : 3],
        lambda i: x[i + 4 : i : -2, ::-1],
        lambda i: x[..., i : i + 1],
        lambda i: x[i : i + 2, None, i % 3],
    ):
        starts = np.array([0, 1, 2])
        want = np.stack([np.asarray(fun(int(i))) for i in starts])
        np.testing.assert_array_equal(ad.vmap(fun)(starts), want)
        np.testing.assert_array_equal(np.asarray(fun(1)), np.asarray(fun(np.int64(1))))
    assert raw.shape == (7, 3)


def test_updating_a_slice_with_vmapped_bounds():
    def f(x, i):
        return at(x)[i : i + 2].set(anp.sin(x[i : i + 2]))

    xs = RNG.normal(size=(3, 5, 2))
    starts = np.array([0, 3, 1])
    want = np.stack([f(ad.tensor(x), int(i)).numpy() for x, i in zip(xs, starts)])
    np.testing.assert_allclose(ad.vmap(f)(xs, starts), want)
    grads = ad.vmap(ad.grad(lambda x, i: anp.sum(f(x, i) ** 2)))(xs, starts)
    for g, x, i in zip(grads, xs, starts):
        np.testing.assert_allclose(g, ad.grad(lambda x: anp.sum(f(x, int(i)) ** 2))(x))


def test_jax_batching_test_patterns():
    """The patterns of JAX's batching_test.py (testDynamicSlice, testDynamicUpdateSlice,
    testIssue3883, testIndexAddBatchedIndexesOnly), with Tensors where JAX has jax.Arrays."""
    x = ad.tensor(np.arange(30.0).reshape(10, 3))
    np.testing.assert_array_equal(ad.vmap(lambda x, i: x[i], in_axes=(0, None))(x, 1), x[:, 1])
    idx = np.array([0, 1, 2, 1, 0] * 2)
    got = ad.vmap(lambda x, i: x[i], in_axes=(0, 0))(x, idx)
    np.testing.assert_array_equal(got, x.numpy()[np.arange(10), idx])
    x3 = ad.tensor(np.arange(3.0))
    np.testing.assert_array_equal(ad.vmap(lambda x, i: x[i], in_axes=(None, 0))(x3, idx), idx)

    x, y = RNG.normal(size=(10, 3)), RNG.normal(size=10)
    got = ad.vmap(lambda x, y, i: ad.dynamic_update_index_in_dim(x, y, i, axis=0),
                  in_axes=(0, 0, None))(x, y, 1)  # fmt: skip
    want = x.copy()
    want[:, 1] = y
    np.testing.assert_array_equal(got, want)
    x = RNG.normal(size=3)
    got = ad.vmap(lambda x, y, i: ad.dynamic_update_index_in_dim(x, y, i, axis=0),
                  in_axes=(None, 0, 0))(x, y, idx)  # fmt: skip
    want = np.broadcast_to(x, (10, 3)).copy()
    want[np.arange(10), idx] = y
    np.testing.assert_array_equal(got, want)

    xs = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ad.vmap(lambda x: ad.dynamic_slice(x, [], []))(xs), xs)
    got = ad.vmap(lambda x: ad.dynamic_update_slice(x, 7.0, []))(xs)
    np.testing.assert_array_equal(got, np.full(4, 7.0))

    got = ad.vmap(lambda i: ad.tensor(np.zeros(10)).at[i].add(1.0))(np.arange(10))
    np.testing.assert_array_equal(got, np.eye(10))


# ------------------------------------------------------------------ errors


def test_errors():
    x = ad.tensor(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="different number of elements in each example"):
        ad.vmap(lambda i: x[i:])(np.array([0, 1]))
    with pytest.raises(ConcretizationError, match="dynamic_slice"):
        ad.jit(lambda i: x[i : i + 2])(1)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        ad.vmap(lambda i: x[i : i + 2 : 0])(np.array([0, 1]))
    with pytest.raises(TypeError, match="slice_sizes must be less than or equal to operand shape"):
        ad.dynamic_slice(x, (0, 0), (4, 1))
    with pytest.raises(ValueError, match="Length of slice indices must match"):
        ad.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(TypeError, match="integer scalars"):
        ad.dynamic_slice(x, (0.5, 0), (1, 1))
    with pytest.raises(TypeError, match="dtypes must match"):
        ad.dynamic_update_slice(x, np.ones((1, 1), np.float32), (0, 0))
    with pytest.raises(TypeError, match="update shape must be smaller"):
        ad.dynamic_update_slice(x, np.ones((4, 1)), (0, 0))
    with pytest.raises(IndexError, match="out of bounds"):  # NumPy's bounds for x[i]
        ad.vmap(lambda i: x[i])(np.array([0, 3]))
