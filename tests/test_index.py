"""Indexing semantics the op table cannot express: exact NumPy results, errors, dtypes,
duplicate accumulation at scale, Tensor and NumPy dispatch, the scatter kernel's two paths."""
import os
import subprocess
import sys

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth
from autodiff.kernels import _numba, scatter
from autodiff.ops.index import getitem, getitem_p, scatter_add, scatter_add_p, take, take_along_axis

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
    0, -1, (1, 2, 3), (), Ellipsis, None, slice(None, None, -1), (Ellipsis, 0, None),
    [1, 0, 1], np.array([[1], [0]]), (slice(None), [0, 2], [3, 3]), ([1, 0], slice(None), 0),
    X > 10, (Ellipsis, X[0, 0] > 1), (1, np.array([True, False, True])), np.True_, np.array(1),
    (np.int64(1), np.intp(-1)), [], ([0, 1], [[0], [2]]),
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
        ((7,), {}), (([11, -1],), {}), ((1,), {"axis": 1}), ((np.array([[0, 2]]),), {"axis": 0}),
        (([9, -9],), {"axis": 1, "mode": "wrap"}), (([9, -9],), {"axis": 0, "mode": "clip"}),
        (([],), {}),
    ]:
        _same(take(a, *args, **kwargs), np.take(a, *args, **kwargs))
    _same(take(np.float64(2.0), [0, -1]), np.take(np.float64(2.0), [0, -1]))
    idx = np.array([[3, 0], [1, 1], [2, 0]])
    _same(take_along_axis(a, idx, axis=1), np.take_along_axis(a, idx, axis=1))
    _same(take_along_axis(a, idx[:, :1], -1), np.take_along_axis(a, idx[:, :1], -1))
    _same(take_along_axis(a, np.array([11, 0]), None), np.take_along_axis(a, np.array([11, 0]), None))


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
    "index", [slice(1, None, 2), [2, 2, 0], (slice(None), [1, 1]), np.array([True, False, True])],
    ids=repr,
)
def test_small_gradients_preserve_dtype(dtype, index):
    x = (np.arange(6.0) * (1 + 1j if np.dtype(dtype).kind == "c" else 1)).astype(dtype).reshape(3, 2)
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
    [(np.array([0, 2, 0]), slice(None), np.array([3, 1, 3])), ([1, 0], None, [1, 1]),
     (0, slice(None), [1, 1]), (Ellipsis, np.array([True, False, True, True])), slice(None, 1)],
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
