"""Reductions: NumPy-exact values and dtypes, axis errors, ties, zeros in prod, dispatch, methods."""

import numpy as np
import pytest
from numpy.exceptions import AxisError

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.tensor import Tensor
from autodiff.core.trace import new_trace
from autodiff.forward_ad import jvp
from autodiff.ops import reduce
from autodiff.reverse.graph import ReverseTrace

X = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])

# ---- values and types equal NumPy's on raw inputs ------------------------------------------

RAW_CALLS = [
    ("sum", (X,), {}),
    ("sum", (np.array(2.5),), {}),
    ("sum", (3.0,), {}),
    ("sum", ([1, 2, 3],), {}),
    ("sum", (np.array([True, False, True]),), {}),
    ("sum", (np.arange(6, dtype=np.int32).reshape(2, 3),), {"axis": 0}),
    ("sum", (np.arange(6, dtype=np.uint8),), {}),
    ("sum", (X.astype(np.float32),), {"dtype": np.float64}),
    ("sum", (np.arange(4),), {"dtype": np.float32}),
    ("sum", (X,), {"axis": ()}),
    ("sum", (X,), {"axis": (1, 0), "keepdims": True}),
    ("sum", (X,), {"initial": 1.0, "where": X > 0}),
    ("sum", (X.astype(np.complex128) * 1j,), {"axis": 1}),
    ("mean", (np.arange(6).reshape(2, 3),), {"axis": 1}),
    ("mean", (np.array([True, False]),), {}),
    ("mean", (X.astype(np.float32),), {}),
    ("mean", (X.astype(np.float16),), {"axis": 0}),
    ("mean", (X,), {"dtype": np.float32}),
    ("mean", (X,), {"where": X > 0, "axis": 1}),
    ("prod", (np.arange(1, 7).reshape(2, 3),), {"axis": -1}),
    ("prod", (X.astype(np.float32),), {"keepdims": True}),
    ("max", (X,), {}),
    ("max", (np.arange(6).reshape(3, 2),), {"axis": 0}),
    ("amin", (X.astype(np.float32),), {"axis": (0, 1), "keepdims": True}),
    ("ptp", (X,), {"axis": 1}),
    ("var", (X,), {}),
    ("var", (np.arange(5),), {"ddof": 1}),
    ("var", (X.astype(np.float32),), {"axis": 0, "keepdims": True}),
    ("var", (X + 1j * X[::-1],), {"axis": 1}),
    ("std", (np.arange(5),), {}),
    ("std", (X.astype(np.float32),), {"axis": -1, "ddof": 1}),
    ("average", (X,), {"axis": 1, "weights": np.array([1.0, 2.0, 3.0])}),
    ("average", (np.arange(6).reshape(2, 3),), {"axis": 0, "returned": True}),
    ("argmax", (X,), {}),
    ("argmax", (X,), {"axis": -1, "keepdims": True}),
    ("argmin", (X,), {"axis": 0}),
    ("all", (X,), {}),
    ("all", (X > 0,), {"axis": 1, "keepdims": True}),
    ("all", (X > 0,), {"where": X > 0.2}),
    ("any", (X > 3,), {"axis": (0,)}),
    ("any", (X > 3,), {"where": X < 3}),
    ("count_nonzero", (X > 0,), {}),
    ("count_nonzero", (np.array([[0, 1], [2, 0]]),), {"axis": 0, "keepdims": True}),
]


@pytest.mark.parametrize("name, args, kwargs", RAW_CALLS, ids=[c[0] for c in RAW_CALLS])
def test_raw_values_equal_numpy(name, args, kwargs):
    got = getattr(anp, name)(*args, **kwargs)
    want = getattr(np, name)(*args, **kwargs)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert type(g) is type(w)
        assert np.shape(g) == np.shape(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


# ---- argument checking ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std", "all"])
def test_out_of_range_axis_is_numpy_axis_error(name):
    with pytest.raises(AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        getattr(anp, name)(X, axis=2)
    with pytest.raises(AxisError):
        getattr(anp, name)(X, axis=(0, -3))


def test_axis_errors_match_numpy():
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        anp.sum(X, axis=(1, -1))
    with pytest.raises(TypeError):
        anp.sum(X, axis=1.0)
    with pytest.raises(TypeError):
        anp.argmax(X, axis=(0, 1))
    with pytest.raises(AxisError):
        anp.argmax(X, axis=-3)
    with pytest.raises(AxisError):
        anp.sum(np.array(1.0), axis=0)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "var", "std", "argmax", "any"])
def test_out_argument_is_unsupported(name):
    with pytest.raises(TypeError, match="out="):
        getattr(anp, name)(X, out=np.empty(()))


def test_unsupported_arguments_raise():
    with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
        anp.min(X, where=X > 0)  # (NumPy's error: the masked-out elements need a value)
    with pytest.raises(NotImplementedError, match="where="):
        anp.var(X, where=X > 0)
    with pytest.raises(ValueError, match="ddof and correction"):
        anp.std(X, ddof=1, correction=1)


# ---- derivatives: ties, zeros, constants ---------------------------------------------------


def test_max_ties_share_the_gradient_evenly():
    x = np.array([[3.0, 1.0, 3.0, 3.0], [0.0, 2.0, -1.0, 2.0]])
    g = ad.grad(lambda x: anp.sum(anp.max(x, axis=1) * np.array([3.0, 1.0])))(x)
    np.testing.assert_allclose(g, [[1.0, 0.0, 1.0, 1.0], [0.0, 0.5, 0.0, 0.5]])
    g = ad.grad(lambda x: anp.min(x))(np.array([1.0, 1.0]))
    np.testing.assert_allclose(g, [0.5, 0.5])


def test_max_with_nan_sends_the_gradient_to_the_nans():
    g = ad.grad(lambda x: anp.max(x))(np.array([1.0, np.nan, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])


def test_max_second_derivative_is_zero():
    h = ad.grad(lambda x: ad.grad(lambda y: anp.max(y) ** 2)(x)[1])(np.array([1.0, 4.0, 2.0]))
    np.testing.assert_allclose(h, [0.0, 2.0, 0.0])


@pytest.mark.parametrize(
    "x, want",
    [
        ([2.0, 0.0, 3.0], [0.0, 6.0, 0.0]),
        ([0.0, 0.0, 3.0], [0.0, 0.0, 0.0]),
        ([0.0], [1.0]),
        ([2.0, -4.0, 0.5], [-2.0, 1.0, -8.0]),
    ],
)
def test_prod_gradient_with_zeros_is_finite_and_exact(x, want):
    with np.errstate(all="raise"):
        g = ad.grad(lambda x: anp.prod(x))(np.array(x))
    np.testing.assert_array_equal(g, want)


def test_prod_hessian_with_one_zero():
    x = np.array([2.0, 0.0, 3.0])
    hess = np.array([ad.grad(lambda x: ad.grad(anp.prod)(x)[i])(x) for i in range(3)])
    np.testing.assert_allclose(hess, [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]])


def test_prod_jvp_with_zeros():
    x = np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 0.0]])
    _, t = jvp(lambda x: anp.prod(x, axis=1), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, [6.0, 2.0])


def test_std_of_constant_has_zero_gradient_as_torch():
    # (the minimum of the spread, and std of one value is constant: torch and HIPS autograd
    # give 0 too; JAX gives NaN)
    np.testing.assert_array_equal(ad.grad(lambda x: anp.std(x))(np.ones(3)), np.zeros(3))


def test_max_and_min_take_initial_and_where():
    np.testing.assert_array_equal(anp.max(X, initial=0.0), np.max(X, initial=0.0))
    mask = X > 0
    got = anp.min(X, axis=0, where=mask, initial=5.0)
    np.testing.assert_array_equal(got, np.min(X, axis=0, where=mask, initial=5.0))
    g = ad.grad(lambda x: anp.sum(anp.max(x, axis=1, where=mask, initial=-9.0)))(X)
    assert np.all(g[~mask] == 0)


def test_var_of_int_input_is_float64():
    assert anp.var(np.arange(4)).dtype == np.float64


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std", "ptp"])
def test_float32_stays_float32(name):
    x = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=np.float32)
    f = getattr(anp, name)
    out, g = ad.value_and_grad(lambda x: anp.sum(f(x, axis=0) ** 2))(x)
    assert out.dtype == np.float32 and g.dtype == np.float32
    _, t = jvp(lambda x: f(x, axis=1), (x,), (np.ones_like(x),))
    assert t.dtype == np.float32


def test_zero_dimensional_inputs():
    assert float(ad.grad(lambda x: anp.sum(x))(2.0)) == 1.0
    assert float(ad.grad(lambda x: anp.prod(x, axis=None, keepdims=True))(2.0)) == 1.0
    assert float(ad.grad(lambda x: anp.max(x) + anp.mean(x))(2.0)) == 2.0


def test_nondifferentiable_reductions_are_constants():
    def f(x):
        i = anp.argmax(x, axis=1)
        assert not isinstance(i, Tensor) and i.dtype == np.intp
        assert anp.all(x > -10) and anp.any(x > 3) and anp.count_nonzero(x > 0) == 4
        return anp.sum(x) * anp.count_nonzero(x > 0)

    np.testing.assert_allclose(ad.grad(f)(X), np.full(X.shape, 4.0))


# ---- the rules directly: efficiency of the common case -------------------------------------


def test_full_sum_is_one_node_and_its_vjp_one_broadcast():
    with new_trace(ReverseTrace) as trace:
        node = anp.sum(trace.new_leaf(X))._edge
        assert node.prim is reduce.reduce_sum_p and node.parents[0].prim is None
        g = trace.new_leaf(np.array(1.0))
        (ct,) = reduce.reduce_sum_p.vjp(g, X, out=None, **node.params)
    assert ct.shape == X.shape and ct._edge.prim.name == "broadcast_to"
    assert ct._edge.parents[0].prim is None


def test_expand_reduced_is_the_transpose_of_reduce_sum():
    x = np.arange(24.0).reshape(2, 3, 4)
    g = np.arange(3.0)
    y = reduce.expand_reduced(g, (0, 2), False, x.shape)
    assert y.shape == x.shape
    # <sum(x), g> == <x, expand(g)>
    assert np.isclose(np.sum(np.sum(x, axis=(0, 2)) * g), np.sum(x * y))
    out, back = ad.vjp(lambda g: reduce.expand_reduced(g, (0, 2), False, x.shape), g)
    np.testing.assert_allclose(back(x)[0], np.sum(x, axis=(0, 2)))


# ---- NumPy dispatch and Tensor methods -----------------------------------------------------


def test_plain_numpy_reductions_dispatch_on_tracers():
    def f(x):
        return (
            np.sum(x, axis=0, keepdims=True).sum()
            + np.mean(x) * np.max(x, 1).sum()
            + np.var(x, ddof=1)
            + np.std(x, axis=-1).sum()
            + np.prod(x)
            + np.amin(x)
            + np.ptp(x, axis=0).sum()
            + np.average(x)
            + float(np.argmax(x))
        )

    def f_ref(x):
        return (
            x.sum()
            + x.mean() * x.max(1).sum()
            + x.var(ddof=1)
            + x.std(-1).sum()
            + x.prod()
            + x.min()
            + np.ptp(x, 0).sum()
            + x.mean()
            + float(np.argmax(x))
        )

    g = ad.grad(f)(X)
    eps = 1e-6
    num = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = eps
        num[i] = (f_ref(X + e) - f_ref(X - e)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-6)


def test_tensor_methods():
    t = ad.tensor(X)
    np.testing.assert_array_equal(t.sum(axis=0).numpy(), X.sum(axis=0))
    assert t.max().item() == X.max()
    # (a Tensor is torch's: min with an axis gives (values, indices), std is unbiased)
    assert t.min(axis=1, keepdims=True).values.shape == (2, 1)
    assert np.isclose(t.mean().item(), X.mean())
    assert np.isclose(t.var(ddof=1).item(), X.var(ddof=1))
    assert np.isclose(t.std().item(), X.std(ddof=1))
    assert np.isclose(t.prod().item(), X.prod())
    assert int(t.argmax()) == X.argmax()
    assert bool(t.all()) and not bool((t > 5).any())
    g = ad.grad(lambda x: x.sum() + x.max(axis=0).sum())(X)
    np.testing.assert_allclose(g, [[2.0, 1.0, 2.0], [1.0, 2.0, 1.0]])


# ---- vmap of the non-differentiable reductions (the table covers the differentiable ones) --

Y = np.arange(24.0).reshape(2, 3, 4) % 7


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_vmap_arg_reductions(name, axis, keepdims, in_axis):
    f = lambda x: getattr(anp, name)(x, axis=axis, keepdims=keepdims)
    want = np.stack(
        [
            getattr(np, name)(np.take(Y, i, in_axis), axis=axis, keepdims=keepdims)
            for i in range(Y.shape[in_axis])
        ]
    )
    np.testing.assert_array_equal(ad.vmap(f, in_axes=in_axis)(Y), want)


@pytest.mark.parametrize("name", ["all", "any", "count_nonzero"])
@pytest.mark.parametrize("axis", [None, 1, (0, -1)])
@pytest.mark.parametrize("in_axis", [0, 2])
def test_vmap_logical_reductions(name, axis, in_axis):
    f = lambda x: getattr(anp, name)(x > 3, axis=axis, keepdims=False)
    want = np.stack(
        [getattr(np, name)(np.take(Y, i, in_axis) > 3, axis=axis) for i in range(Y.shape[in_axis])]
    )
    np.testing.assert_array_equal(ad.vmap(f, in_axes=in_axis)(Y), want)


def test_per_example_gradients_of_max_with_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    g = ad.vmap(ad.grad(lambda r: anp.max(r)))(x)
    np.testing.assert_allclose(g, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    g = ad.vmap(ad.grad(lambda r: anp.prod(r)))(np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]]))
    np.testing.assert_allclose(g, [[0.0, 6.0, 0.0], [8.0, 4.0, 2.0]])
