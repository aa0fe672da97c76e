"""Indexing semantics the op table cannot express: exact NumPy results, errors, dtypes,
duplicate accumulation at scale, Tensor and NumPy dispatch, the scatter kernel's two paths,
per-example (vmapped) index arrays, index_set and the `.at` updates."""

import os
import subprocess
import sys

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth
from autodiff.kernels import _numba, scatter
from autodiff.ops.at import at
from autodiff.ops.gather_scatter import getitem_p, scatter_add_p
from autodiff.ops.index import getitem, scatter_add, take, take_along_axis

RNG = np.random.default_rng(0)
X = np.arange(24.0).reshape(2, 3, 4)


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


def _grad_of_sum(f, x):
    """Gradient of sum(f(x)) (the cotangent of ones)."""
    out, pullback = ad.vjp(f, x)
    return pullback(np.ones_like(out))[0]


def _same(got, want):
    assert type(got) is type(want)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


INDICES = [
    0,
    -1,
    (1, 2, 3),
    (),
    Ellipsis,
    None,
    slice(None, None, -1),
    (Ellipsis, 0, None),
    [1, 0, 1],
    np.array([[1], [0]]),
    (slice(None), [0, 2], [3, 3]),
    ([1, 0], slice(None), 0),
    X > 10,
    (Ellipsis, X[0, 0] > 1),
    (1, np.array([True, False, True])),
    np.True_,
    np.array(1),
    (np.int64(1), np.intp(-1)),
    [],
    ([0, 1], [[0], [2]]),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_on_raw_arrays_equals_numpy_exactly(index):
    _same(getitem(X, index), X[index])


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_gradient_counts_each_selection(index):
    want = np.zeros_like(X)
    np.add.at(want, index, 1.0)
    np.testing.assert_array_equal(_grad_of_sum(lambda x: x[index], X), want)


def test_take_and_take_along_axis_on_raw_arrays_equal_numpy_exactly():
    a = np.arange(12.0).reshape(3, 4)
    for args, kwargs in [
        ((7,), {}),
        (([11, -1],), {}),
        ((1,), {"axis": 1}),
        ((np.array([[0, 2]]),), {"axis": 0}),
        (([9, -9],), {"axis": 1, "mode": "wrap"}),
        (([9, -9],), {"axis": 0, "mode": "clip"}),
        (([],), {}),
    ]:
        _same(take(a, *args, **kwargs), np.take(a, *args, **kwargs))
    _same(take(np.float64(2.0), [0, -1]), np.take(np.float64(2.0), [0, -1]))
    idx = np.array([[3, 0], [1, 1], [2, 0]])
    _same(take_along_axis(a, idx, axis=1), np.take_along_axis(a, idx, axis=1))
    _same(take_along_axis(a, idx[:, :1], -1), np.take_along_axis(a, idx[:, :1], -1))
    _same(
        take_along_axis(a, np.array([11, 0]), None), np.take_along_axis(a, np.array([11, 0]), None)
    )


def test_duplicate_indices_accumulate_at_scale():
    x = RNG.standard_normal(10**5)
    idx = RNG.integers(-(10**5), 10**5, 10**6)
    g = RNG.standard_normal(10**6)
    _, pullback = ad.vjp(lambda x: x[idx], x)
    want = np.bincount(np.where(idx < 0, idx + 10**5, idx), g, minlength=10**5)
    np.testing.assert_allclose(pullback(g)[0], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("numba_on", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_row_gradient_both_paths_preserve_dtype(numba_on, dtype):
    x = np.zeros((300, 64), dtype)
    idx = RNG.integers(0, 300, 2000)  # 128000 values: above KERNEL_MIN_SIZE
    g = RNG.standard_normal((2000, 64)).astype(dtype)
    if np.iscomplexobj(g):
        g = g + 1j * RNG.standard_normal(g.shape).astype(dtype)
    want = np.zeros((300, 64), np.complex128 if np.iscomplexobj(g) else np.float64)
    np.add.at(want, idx, g)
    previous = _numba.set_numba_enabled(numba_on)
    try:
        _, pullback = ad.vjp(lambda x: x[idx], x)
        got = pullback(g)[0]
    finally:
        _numba.set_numba_enabled(previous)
    assert got.dtype == dtype
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128])
@pytest.mark.parametrize(
    "index",
    [slice(1, None, 2), [2, 2, 0], (slice(None), [1, 1]), np.array([True, False, True])],
    ids=repr,
)
def test_small_gradients_preserve_dtype(dtype, index):
    x = (
        (np.arange(6.0) * (1 + 1j if np.dtype(dtype).kind == "c" else 1))
        .astype(dtype)
        .reshape(3, 2)
    )
    out, pullback = ad.vjp(lambda x: x[index] * 2, x)
    assert out.dtype == dtype
    assert pullback(np.ones_like(out))[0].dtype == dtype


@pytest.mark.parametrize("numba_on", [True, False])
def test_scatter_kernel_paths_agree(numba_on):
    rows = RNG.integers(0, 50, 700)
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        values = RNG.standard_normal((700, 5)).astype(dtype)
        want = np.zeros((50, 5), dtype)
        np.add.at(want, rows, values)
        if numba_on:
            got = scatter.scatter_add_rows_numba(rows, values, 50)
        else:
            got = scatter.scatter_add_rows_numpy(rows, values, 50)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-5)
    single = scatter.scatter_add_rows_numpy(rows, np.ones((700, 1), np.float32), 50)
    np.testing.assert_array_equal(single.ravel(), np.bincount(rows, minlength=50))


def test_numba_is_lazy_and_can_be_disabled():
    code = (
        "import sys, numpy as np, autodiff as ad\n"
        "from autodiff.kernels import _numba, scatter\n"
        "assert 'numba' not in sys.modules\n"
        "_, f = ad.vjp(lambda x: x[np.zeros(10**5, int)], np.ones((3, 4)))\n"
        "assert f(np.ones((10**5, 4)))[0][0, 0] == 10**5\n"
        "print(_numba.numba_enabled(), 'numba' in sys.modules)\n"
    )
    env = dict(os.environ, AUTODIFF_DISABLE_NUMBA="1")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_cache_dir_falls_back_when_package_is_read_only(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(_numba.os, "access", lambda path, mode: False)
    path = _numba._fallback_cache_dir()
    assert path == str(tmp_path / "autodiff" / "numba") and os.path.isdir(path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert _numba._fallback_cache_dir() is None


def test_second_order_through_scatter():
    # f(x) = sum(x[idx] ** 3): Hessian diag 6 x_i * count_i.
    idx = np.array([0, 2, 2, 2])
    x = np.array([0.5, -1.0, 2.0])
    f = lambda x: anp.sum(x[idx] ** 3)
    hess_diag = ad.grad(lambda x: anp.sum(ad.grad(f)(x)))(x)
    np.testing.assert_allclose(hess_diag, 6 * x * np.array([1, 0, 3]))
    _, hvp = ad.jvp(ad.grad(f), (x,), (np.ones(3),))
    np.testing.assert_allclose(hvp, 6 * x * np.array([1, 0, 3]))


def test_jvp_rules_and_symbolic_zeros():
    index = (np.array([1, 1]),)
    x, t = np.arange(3.0), np.array([1.0, 10.0, 100.0])
    out = getitem(x, index)
    np.testing.assert_array_equal(getitem_p.jvp((x,), (t,), out=out, index=index), [10.0, 10.0])
    assert getitem_p.jvp((x,), (None,), out=out, index=index) is None
    s = scatter_add(out, (3,), index)
    np.testing.assert_array_equal(
        scatter_add_p.jvp((out,), (np.ones(2),), out=s, shape=(3,), index=index), [0.0, 2.0, 0.0]
    )
    assert scatter_add_p.jvp((out,), (None,), out=s, shape=(3,), index=index) is None
    _, t_out = ad.jvp(lambda x: x[[2, 2, 0]], (x,), (t,))
    np.testing.assert_array_equal(t_out, [100.0, 100.0, 1.0])


def test_tensor_indices_are_constants():
    x = ad.tensor(np.arange(6.0))
    np.testing.assert_array_equal(x[ad.tensor([5, 0])].numpy(), [5.0, 0.0])
    np.testing.assert_array_equal(x[[ad.tensor(1), 2]].numpy(), [1.0, 2.0])
    # An index computed from a tracer (a comparison of the differentiated input).
    g = ad.grad(lambda x: anp.sum(x[x > 2.5] ** 2))(np.arange(6.0))
    np.testing.assert_array_equal(g, [0, 0, 0, 6, 8, 10])


def test_numpy_dispatch_and_tensor_methods():
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[1], [3], [0]])
    g = ad.grad(lambda a: np.sum(np.take_along_axis(a, idx, 1) * np.take(a, [0, 0])))(a)
    want = np.zeros_like(a)
    np.add.at(want, (np.arange(3)[:, None], idx), 2 * a.flat[0])
    want.flat[0] += 2 * np.take_along_axis(a, idx, 1).sum()
    np.testing.assert_allclose(g, want)
    t = ad.tensor(a)
    np.testing.assert_array_equal(t.take([1, 5]).numpy(), a.take([1, 5]))
    np.testing.assert_array_equal(t.take([1], axis=1).numpy(), a.take([1], axis=1))
    np.testing.assert_array_equal(t[1:, [0, 0]].numpy(), a[1:, [0, 0]])


@pytest.mark.parametrize(
    "f",
    [
        lambda x: getitem(x, 5),
        lambda x: getitem(x, np.array([0, -6])),
        lambda x: getitem(x, (0, 0, 0)),
        lambda x: getitem(x, np.array([True, False])),
        lambda x: getitem(x, np.array([1.0])),
        lambda x: take(x, [1, 9], axis=1),
        lambda x: take(x, 15),
        lambda x: take_along_axis(x, np.array([[0], [7]]), 1),
    ],
)
def test_out_of_bounds_and_bad_indices_raise_index_error(f):
    x = np.ones((3, 5))
    with pytest.raises(IndexError):
        f(x)
    with pytest.raises(IndexError):
        ad.vjp(f, x)
    assert trace_stack_depth() == 1


def test_argument_errors():
    x = np.ones((3, 4))
    with pytest.raises(NotImplementedError, match="out="):
        take(x, [0], out=np.empty(1))
    with pytest.raises(ValueError, match="clipmode"):
        take(x, [0], mode="nearest")
    with pytest.raises(IndexError, match="integer array"):
        take_along_axis(x, np.ones((3, 1)), 1)
    with pytest.raises(ValueError, match="same number of dimensions"):
        take_along_axis(x, np.zeros(3, int), 1)
    with pytest.raises(ValueError, match="single dimension"):
        take_along_axis(x, np.zeros((3, 1), int), None)
    with pytest.raises(np.exceptions.AxisError):
        take(x, [0], axis=2)


@pytest.mark.parametrize(
    "index",
    [
        (np.array([0, 2, 0]), slice(None), np.array([3, 1, 3])),
        ([1, 0], None, [1, 1]),
        (0, slice(None), [1, 1]),
        (Ellipsis, np.array([True, False, True, True])),
        slice(None, 1),
    ],
    ids=repr,
)
def test_vmap_and_jacobians_of_indexing(index):
    xs = RNG.standard_normal((5, 3, 2, 4))
    f = lambda x: x[index] * x[index]
    for axis in (0, 2):
        got = ad.vmap(f, in_axes=axis)(np.moveaxis(xs, 0, axis))
        np.testing.assert_allclose(got, np.stack([f(x) for x in xs]))
    x = xs[0]
    jac = ad.jacrev(f)(x)
    np.testing.assert_allclose(jac, ad.jacfwd(f)(x), atol=1e-12)
    want = np.zeros(f(x).shape + x.shape)
    out_positions = np.arange(x.size).reshape(x.shape)[index]
    for out_pos, in_pos in np.ndenumerate(out_positions):
        want[out_pos + np.unravel_index(in_pos, x.shape)] = 2 * x.flat[in_pos]
    np.testing.assert_allclose(jac, want)


# ------------------------------------------------------------------ per-example (vmapped) indices

_B = 4
_RNG = np.random.default_rng(1)  # its own stream: the tests above keep their random data
_XS = _RNG.standard_normal((_B, 3, 4, 5))
_IS = _RNG.integers(-3, 3, (_B, 2))  # valid along every axis of a (3, 4, 5) example
_IS[0] = [1, 1]  # a repeated position

BUILDERS = {
    "first-axis": lambda i: i,
    "middle-axis": lambda i: (slice(None), i),
    "ellipsis": lambda i: (Ellipsis, i),
    "separated": lambda i: (i, slice(1, None), i),
    "newaxis": lambda i: (None, i, None),
    "int-and-array": lambda i: (1, slice(None), i),
    "mask-and-array": lambda i: (np.array([True, False, True]), i),
    "static-array": lambda i: (slice(None), i, np.array([[4], [0], [0]])),
    "two-traced": lambda i: (i, i[::-1], 0),
    "scalar-index": lambda i: (slice(None), i[0]),
    "list": lambda i: [i[0], 1, i[1]],
    "newaxis-between": lambda i: (i, None, i),
    "ellipsis-mask": lambda i: (i, Ellipsis, np.array([True, False, True, False, False])),
}


def _loop_np(f, *batched):
    return np.stack([np.asarray(f(*xs)) for xs in zip(*batched)])


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS)
def test_vmap_of_traced_index_gathers_matches_loop(build):
    f = lambda x, i: x[build(i)]
    want = _loop_np(lambda x, i: x[build(i)], _XS, _IS)
    xs = ad.tensor(_XS)  # a Tensor, so that x[...] dispatches to autodiff when x is unbatched
    np.testing.assert_array_equal(ad.vmap(f)(xs, _IS), want)
    got = ad.vmap(f, in_axes=(3, 1))(np.moveaxis(_XS, 0, 3), _IS.T)
    np.testing.assert_array_equal(got, want)
    shared = _loop_np(lambda i: _XS[0][build(i)], _IS)
    np.testing.assert_array_equal(ad.vmap(f, in_axes=(None, 0))(ad.tensor(_XS[0]), _IS), shared)
    fixed = _loop_np(lambda x: x[build(_IS[1])], _XS)
    np.testing.assert_array_equal(ad.vmap(f, in_axes=(0, None))(_XS, _IS[1]), fixed)
    assert trace_stack_depth() == 1


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS)
def test_vmap_of_grad_and_jacrev_through_traced_index_gathers(build):
    loss = lambda x, i: anp.sum(anp.sin(x[build(i)]) * x[build(i)])
    got = ad.vmap(ad.grad(loss))(_XS, _IS)
    np.testing.assert_allclose(got, _loop_np(ad.grad(loss), _XS, _IS), rtol=1e-12)
    jac = ad.vmap(ad.jacrev(lambda x, i: x[build(i)]))(_XS, _IS)
    want = _loop_np(lambda x, i: ad.jacrev(lambda x: x[build(i)])(x), _XS, _IS)
    np.testing.assert_array_equal(jac, want)
    np.testing.assert_array_equal(ad.vmap(ad.jacfwd(lambda x, i: x[build(i)]))(_XS, _IS), want)


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS)
def test_vmap_of_traced_index_set_matches_loop_with_gradients(build):
    values = np.stack([_RNG.standard_normal(x[build(i)].shape) for x, i in zip(_XS, _IS)])

    def ref(x, i, v):
        out = x.copy()
        out[build(i)] = v
        return out

    f = lambda x, i, v: anp.index_set(x, build(i), v)
    np.testing.assert_array_equal(ad.vmap(f)(_XS, _IS, values), _loop_np(ref, _XS, _IS, values))
    shared = ad.vmap(f, in_axes=(None, 0, 0))(_XS[0], _IS, values)
    np.testing.assert_array_equal(shared, _loop_np(lambda i, v: ref(_XS[0], i, v), _IS, values))
    loss = lambda x, i, v: anp.sum(anp.index_set(x, build(i), v * v) ** 2)
    grads = ad.vmap(ad.grad(loss, argnums=(0, 2)))(_XS, _IS, values)
    want = [
        np.stack(g)
        for g in zip(*[ad.grad(loss, argnums=(0, 2))(*a) for a in zip(_XS, _IS, values)])
    ]
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_per_example_cross_entropy_gradients():
    logits = _RNG.standard_normal((6, 5))
    labels = np.array([0, 4, 4, 2, 1, 0])

    def loss(z, y):
        return anp.log(anp.sum(anp.exp(z))) - z[y]

    got = ad.vmap(ad.grad(loss))(logits, labels)
    softmax = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(got, softmax - np.eye(5)[labels], rtol=1e-12)
    along = lambda z, y: anp.log(anp.sum(anp.exp(z))) - anp.take_along_axis(z, y[None], 0)[0]
    np.testing.assert_allclose(ad.vmap(ad.grad(along))(logits, labels), got, rtol=1e-12)
    per_example = ad.vmap(ad.grad(lambda w, x, y: loss(x @ w, y)), in_axes=(None, 0, 0))
    w, xs = _RNG.standard_normal((3, 5)), _RNG.standard_normal((6, 3))
    want = np.stack([ad.grad(lambda w: loss(x @ w, y))(w) for x, y in zip(xs, labels)])
    np.testing.assert_allclose(per_example(w, xs, labels), want, rtol=1e-12)


def test_table_gradient_of_a_vmapped_gather_is_not_broadcast_per_example():
    labels = np.array([0, 2, 2, 4, 2])
    table = _RNG.standard_normal((5, 3))
    g = ad.grad(lambda w: anp.sum(ad.vmap(lambda y: w[y] * w[y])(labels)))(table)
    np.testing.assert_allclose(g, 2 * table * np.bincount(labels, minlength=5)[:, None])
    w = ad.tensor(table, requires_grad=True)
    ad.vmap(lambda y: w[y])(labels).sum().backward()  # the torch-style graph, through vmap
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], np.bincount(labels, minlength=5))
    jac = ad.jacrev(lambda w: ad.vmap(lambda y: w[y, 1])(labels))(table)
    want = np.zeros((5, 5, 3))
    want[np.arange(5), labels, 1] = 1.0
    np.testing.assert_array_equal(jac, want)


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_vmap_of_take_with_traced_indices(mode):
    idx = np.array([[-1, 7], [2, 2], [0, -9], [4, 1]]) if mode != "raise" else _IS
    for axis in (1, None):
        f = lambda x, i: anp.take(x, i, axis=axis, mode=mode)
        want = _loop_np(lambda x, i: np.take(x, i, axis=axis, mode=mode), _XS, idx)
        np.testing.assert_array_equal(ad.vmap(f)(_XS, idx), want)
    along = lambda x, i: anp.take_along_axis(x, i[:, None, None], 0)
    want = _loop_np(lambda x, i: np.take_along_axis(x, i[:, None, None], 0), _XS, _IS)
    np.testing.assert_array_equal(ad.vmap(along)(_XS, _IS), want)
    flat = lambda x, i: anp.take_along_axis(x, i * 7, None)
    np.testing.assert_array_equal(
        ad.vmap(flat)(_XS, _IS), _loop_np(lambda x, i: np.take_along_axis(x, i * 7, None), _XS, _IS)
    )


def test_nested_vmap_of_traced_indices():
    xs = _RNG.standard_normal((2, 3, 5))
    idx = _RNG.integers(0, 5, (2, 3, 4))
    got = ad.vmap(ad.vmap(lambda x, i: x[i]))(xs, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(xs, idx, 2))
    inner = ad.vmap(lambda x, i: x[i], in_axes=(None, 0))
    got = ad.vmap(inner, in_axes=(0, 1))(xs[:, 0], np.moveaxis(idx, 1, 0))
    np.testing.assert_array_equal(got, np.stack([xs[b, 0][idx[b]] for b in range(2)]))


def test_traced_index_errors():
    xs = np.ones((2, 3))
    with pytest.raises(IndexError, match="integer"):
        ad.vmap(lambda x, i: x[i])(xs, np.array([1.0, 2.0]))
    with pytest.raises(IndexError):
        ad.vmap(lambda x, i: x[i])(xs, np.array([1, 5]))
    with pytest.raises(IndexError, match="too many indices"):
        ad.vmap(lambda x, i: x[i, 0, 0])(xs, np.array([1, 2]))
    with pytest.raises(TypeError, match="where"):
        ad.vmap(lambda x: x[x > 0])(xs)
    with pytest.raises(NotImplementedError, match="0-d boolean"):
        ad.vmap(lambda x, i: x[i, True])(xs, np.array([1, 2]))
    assert trace_stack_depth() == 1


# ------------------------------------------------------------------------------------- index_set

SET_INDICES = [
    0,
    -1,
    (1, 2, 3),
    (),
    Ellipsis,
    slice(None, None, -1),
    (Ellipsis, 0, None),
    [1, 0, 1],
    np.array([[1], [0]]),
    (slice(None), [0, 2, 0], [3, 3, 1]),
    ([1, 0], slice(None), 0),
    X > 10,
    (1, np.array([True, False, True])),
    np.array(1),
    [],
]


@pytest.mark.parametrize("index", SET_INDICES, ids=repr)
def test_index_set_on_raw_arrays_equals_numpy_exactly(index):
    for value in (-1.0, np.arange(4.0), np.float32(2.5), 7):
        want = X.copy()
        try:
            want[index] = value
        except ValueError:
            with pytest.raises(ValueError, match="broadcast"):
                anp.index_set(X, index, value)
            continue
        _same(anp.index_set(X, index, value), want)
    value = _RNG.standard_normal(X[index].shape)
    want = X.copy()
    want[index] = value
    _same(anp.index_set(X, index, value), want)


def test_index_set_repeated_positions_last_write_wins_and_gets_the_gradient():
    idx = np.array([2, 0, 2, 2, 0])
    got = anp.index_set(np.zeros(3), idx, np.arange(1.0, 6.0))
    np.testing.assert_array_equal(got, [5.0, 0.0, 4.0])
    g = ad.grad(lambda v: anp.sum(anp.index_set(np.zeros(3), idx, v) * [1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g(np.arange(1.0, 6.0)), [0, 0, 0, 100, 1])
    gx = ad.grad(lambda x: anp.sum(anp.index_set(x, idx, 0.0)))(np.ones(3))
    np.testing.assert_array_equal(gx, [0, 1, 0])
    rows = ad.grad(lambda v: anp.sum(anp.index_set(np.zeros((3, 2)), [1, 1], v)))(np.ones(2))
    np.testing.assert_array_equal(rows, [1, 1])  # one value broadcast to both writes: counted once


def test_index_set_casts_to_x_dtype_and_value_gradients_keep_their_dtype():
    x = np.zeros(3, np.float32)
    out = anp.index_set(x, 1, np.float64(1.0 / 3.0))
    assert out.dtype == np.float32 and out[1] == np.float32(1.0 / 3.0)
    g = ad.grad(lambda v: anp.sum(anp.index_set(x, [0, 2], v)))(np.array([1.0, 2.0]))
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [1, 1])
    ints = anp.index_set(np.arange(4), [1, 3], np.array([2.7, -1.2]))
    _same(ints, np.array([0, 2, 2, -1]))
    with pytest.raises(ValueError, match="could not broadcast"):
        anp.index_set(np.zeros((3, 4)), 0, np.ones(3))
    with pytest.raises(IndexError):
        anp.index_set(np.zeros(3), 3, 1.0)


def test_index_set_jvp_and_symbolic_zeros():
    idx = np.array([1, 1])
    x, v = np.zeros(3), np.array([1.0, 2.0])
    _, t = ad.jvp(
        lambda x, v: anp.index_set(x, idx, v), (x, v), (np.ones(3), np.array([10.0, 20.0]))
    )
    np.testing.assert_array_equal(t, [1.0, 20.0, 1.0])
    _, t = ad.jvp(lambda v: anp.index_set(x, idx, v), (v,), (np.array([10.0, 20.0]),))
    np.testing.assert_array_equal(t, [0.0, 20.0, 0.0])
    _, t = ad.jvp(lambda x: anp.index_set(x, idx, v), (x,), (np.ones(3),))
    np.testing.assert_array_equal(t, [1.0, 0.0, 1.0])


def test_tensor_setitem_uses_index_set():
    t = ad.tensor(np.zeros(4))
    t[[1, 1, 3]] = np.array([2.0, 3.0, 4.0])
    np.testing.assert_array_equal(t.numpy(), [0.0, 3.0, 0.0, 4.0])
    w = ad.tensor(np.ones(3), requires_grad=True)
    y = w * 2
    y[0] = w[1] * 5
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 7.0, 2.0])
    with pytest.raises(TypeError, match=r"\.at\[index\]\.set"):
        ad.grad(lambda x: (x.__setitem__(0, 1.0), anp.sum(x))[1])(np.ones(3))


# ------------------------------------------------------------------------------------------- .at


def test_at_methods_equal_numpy_and_leave_x_unchanged():
    x = np.arange(5.0)
    t = ad.tensor(x)
    idx = np.array([1, 3, 1])
    v = np.array([10.0, -1.0, 0.5])
    for method, ufunc in [
        ("add", np.add),
        ("multiply", np.multiply),
        ("min", np.minimum),
        ("max", np.maximum),
    ]:
        want = x.copy()
        ufunc.at(want, idx, v)
        _same(getattr(at(x)[idx], method)(v), want)
        np.testing.assert_array_equal(getattr(at(t)[idx], method)(v).numpy(), want)
    _same(at(x)[idx].set(v), anp.index_set(x, idx, v))
    _same(at(x)[1:].get(), x[1:])
    np.testing.assert_array_equal(t.numpy(), x)
    _same(at(np.arange(4))[[0, 0]].add(2), np.array([4, 1, 2, 3]))
    _same(at(np.ones(2, np.float32))[0].multiply(3.0), np.array([3.0, 1.0], np.float32))
    assert "at" not in anp.FUNCTIONS and anp.FUNCTIONS["index_set"] is anp.index_set


def test_at_options():
    x = np.zeros(3)
    _same(at(x)[0].set(1.0, indices_are_sorted=True, unique_indices=True), np.array([1.0, 0, 0]))
    _same(at(x)[0].add(1.0, mode="promise_in_bounds"), np.array([1.0, 0, 0]))
    with pytest.raises(NotImplementedError, match="mode="):
        at(x)[5].set(1.0, mode="drop")
    with pytest.raises(NotImplementedError, match="fill_value"):
        at(x)[5].get(mode="fill", fill_value=0.0)
    with pytest.raises(IndexError):
        at(x)[5].add(1.0)


def test_at_multiply_gradients_with_zeros_among_repeats():
    idx = np.array([0, 0, 0, 2])
    f = lambda x, v: anp.sum(at(x)[idx].multiply(v) * np.array([1.0, 10.0, 100.0]))
    x = np.array([2.0, 3.0, 5.0])
    for v, grad_v in [
        (np.array([0.5, 3.0, -1.0, 4.0]), [-6.0, -1.0, 3.0, 500.0]),  # products of the others * 2
        (np.array([0.0, 3.0, -1.0, 4.0]), [-6.0, 0.0, 0.0, 500.0]),  # one zero
        (np.array([0.0, 3.0, 0.0, 4.0]), [0.0, 0.0, 0.0, 500.0]),  # two zeros
    ]:
        gx, gv = ad.grad(f, argnums=(0, 1))(x, v)
        np.testing.assert_allclose(gv, grad_v)
        np.testing.assert_allclose(gx, [np.prod(v[:3]), 10.0, 100.0 * v[3]])


def test_at_min_max_ties_share_the_gradient():
    x = np.array([1.0, 5.0])
    g = ad.grad(lambda x, v: anp.sum(at(x)[[0, 0, 1]].min(v)), argnums=(0, 1))
    gx, gv = g(x, np.array([1.0, 3.0, 5.0]))
    np.testing.assert_allclose(gx, [0.5, 0.5])
    np.testing.assert_allclose(gv, [0.5, 0.0, 0.5])
    gx, gv = ad.grad(lambda x, v: anp.sum(at(x)[[0, 0]].max(v)), argnums=(0, 1))(
        x, np.array([4.0, 4.0])
    )
    np.testing.assert_allclose(gx, [0.0, 1.0])
    np.testing.assert_allclose(gv, [0.5, 0.5])
