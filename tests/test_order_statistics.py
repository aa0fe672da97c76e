"""Order statistics and the NaN-aware reductions: every quantile method against NumPy's values,
derivatives against JAX at ties, zeros and NaNs (what central differences cannot check), and
NumPy's errors. The op table (tests/cases_reduce.py) checks them away from ties."""

import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.numpy._statistics import METHODS

RNG = np.random.default_rng(7)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


SHAPES_AXES = [((5,), None), ((3, 4), 1), ((2, 3, 4), (0, 2)), ((2, 1, 3), None)]


@pytest.mark.parametrize(
    "dtype, shape, axis",
    [(np.float64, (5,), None), (np.float32, (3, 4), 1), (np.int64, (2, 3, 4), (0, 2))],
)
def test_every_method_is_numpys_bit_for_bit(dtype, shape, axis):
    x = np.round(RNG.standard_normal(shape) * 3).astype(dtype)  # (ties included)
    keepdims = len(shape) == 3
    _same(anp.median(x, axis, keepdims=keepdims), np.median(x, axis, keepdims=keepdims))
    for method in METHODS:
        for q in (0.3, 1, np.array([0.0, 0.5, 0.9])):
            for f, scale in (("quantile", 1), ("nanpercentile", 100)):
                got = getattr(anp, f)(x, q * scale, axis, method=method, keepdims=keepdims)
                want = getattr(np, f)(x, q * scale, axis, method=method, keepdims=keepdims)
                _same(got, want)


@pytest.mark.parametrize("shape, axis", SHAPES_AXES)
def test_nan_aware_forms_are_numpys(shape, axis):
    x = RNG.standard_normal(shape)
    x.flat[RNG.integers(0, x.size, x.size // 3 + 1)] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("nanmedian", "nanmax", "nanmin", "nanvar", "nanstd", "median"):
            for keepdims in (False, True):
                got = getattr(anp, name)(x, axis, keepdims=keepdims)
                _same(got, getattr(np, name)(x, axis, keepdims=keepdims))
        for method in ("linear", "lower", "nearest", "midpoint", "hazen"):
            _same(anp.nanquantile(x, [0.2, 0.7], axis, method=method),
                  np.nanquantile(x, [0.2, 0.7], axis, method=method))  # fmt: skip
            _same(anp.quantile(x, 0.4, axis, method=method),
                  np.quantile(x, 0.4, axis, method=method))  # fmt: skip
    if axis is None:
        _same(anp.nanargmax(x), np.nanargmax(x))
        _same(anp.nanargmin(x), np.nanargmin(x))


# Points where the derivative is a choice: ties, zeros, NaNs. JAX's choice (each sorted
# position's derivative to the element that landed there, the earlier of equals first).
TIE_POINTS = [
    np.array([1.0, 1.0, 1.0]),
    np.array([2.0, 1.0, 2.0, 1.0, 2.0]),
    np.array([0.0, 0.0, 5.0, -1.0, 0.0, 5.0]),
    np.array([[1.0, 2.0, 2.0], [3.0, 3.0, 0.0]]),
]


@pytest.mark.parametrize("x", TIE_POINTS, ids=range(len(TIE_POINTS)))
def test_derivatives_at_ties_are_jaxs(x):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def check(f, jf, what):
        got = ad.grad(lambda a: anp.sum(f(a)))(x)
        want = jax.grad(lambda a: jnp.sum(jf(a)))(x)
        np.testing.assert_allclose(got, want, err_msg=what)

    for axis in (None, x.ndim - 1):
        for name in ("median", "nanmedian", "nanmax", "nanvar"):
            f, jf = getattr(anp, name), getattr(jnp, name)
            check(lambda a: f(a, axis=axis), lambda a: jf(a, axis=axis), f"{name} {axis}")
        for method in ("linear", "lower", "midpoint"):
            for q in (0.0, 0.5, 0.7, 1.0):
                check(
                    lambda a: anp.quantile(a, q, axis, method=method),
                    lambda a: jnp.quantile(a, q, axis=axis, method=method),
                    f"quantile {method} q={q} axis={axis}",
                )
        check(
            lambda a: anp.nanquantile(a, 0.5, axis, method="higher"),
            lambda a: jnp.nanquantile(a, 0.5, axis=axis, method="higher"),
            "nanquantile higher",
        )


def test_nearest_rounds_half_to_even_as_numpy():
    # (JAX rounds a virtual index of k + 0.5 down; NumPy, and so autodiff, to the even one)
    x = np.array([3.0, 1.0, 2.0, 4.0])
    assert anp.quantile(x, 0.5, method="nearest") == np.quantile(x, 0.5, method="nearest") == 3.0
    np.testing.assert_array_equal(
        ad.grad(lambda a: anp.quantile(a, 0.5, method="nearest"))(x), [1.0, 0.0, 0.0, 0.0]
    )


def test_derivatives_with_nans_go_to_the_values_used():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, 4.0, 4.0, 0.5]])
    for name in ("nanmedian", "nanmax", "nanmin", "nanstd", "nanvar"):
        got = ad.grad(lambda a: anp.sum(getattr(anp, name)(a, axis=1)))(x)
        want = jax.grad(lambda a: jnp.sum(getattr(jnp, name)(a, axis=1)))(x)
        np.testing.assert_allclose(got, want, err_msg=name)
    got = ad.grad(lambda a: anp.sum(anp.nanquantile(a, [0.3, 0.8], axis=1)))(x)
    want = jax.grad(lambda a: jnp.sum(jnp.nanquantile(a, jnp.array([0.3, 0.8]), axis=1)))(x)
    np.testing.assert_allclose(got, want)


def test_derivative_in_q_is_the_interpolation_slope():
    x = np.array([3.0, 1.0, 2.0, 6.0])  # sorted: 1 2 3 6
    # q = 0.5: between 2 and 3, virtual index 1.5, slope (n - 1)(3 - 2)
    assert float(ad.grad(lambda q: anp.quantile(x, q))(0.5)) == pytest.approx(3.0)
    assert float(ad.grad(lambda q: anp.percentile(x, q))(90.0)) == pytest.approx(0.09)
    assert float(ad.grad(lambda q: anp.quantile(x, q, method="lower"))(0.5)) == 0.0
    assert float(ad.grad(lambda q: anp.quantile(x, q, method="midpoint"))(0.5)) == 0.0


def test_std_and_nanstd_have_zero_derivative_at_zero_spread():
    for f in (anp.std, anp.nanstd):
        np.testing.assert_array_equal(ad.grad(f)(np.array([2.0, 2.0, 2.0])), np.zeros(3))
        assert float(ad.grad(f)(3.5)) == 0.0
    torch = pytest.importorskip("torch")
    t = torch.tensor([2.0, 2.0, 2.0], dtype=torch.float64, requires_grad=True)
    t.std(correction=0).backward()
    np.testing.assert_array_equal(ad.grad(anp.std)(np.array([2.0, 2.0, 2.0])), t.grad.numpy())


def test_all_nan_slices_and_warnings_as_numpy():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    for name in ("nanmedian", "nanmax", "nanmin"):
        with pytest.warns(RuntimeWarning, match="All-NaN slice"):
            got = getattr(anp, name)(x, axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(got, getattr(np, name)(x, axis=1))
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        anp.nanargmax(x, axis=1)
    # a NaN derivative nowhere: the all-NaN slice's result is a constant NaN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = ad.grad(lambda a: anp.nansum(anp.nanmax(a, axis=1)))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.0], [1.0, 0.0]])


def test_errors_are_numpys():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        anp.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        anp.percentile(x, -1)
    with pytest.raises(ValueError, match="is not a valid method"):
        anp.quantile(x, 0.5, method="cubic")
    with pytest.raises(TypeError, match="a must be an array of real numbers"):
        anp.quantile(x + 1j, 0.5)
    with pytest.raises(NotImplementedError, match="weights="):
        anp.quantile(x, 0.5, method="inverted_cdf", weights=np.ones(4))


def test_order_statistics_under_vmap_jit_and_lists():
    x = RNG.standard_normal((3, 5))
    np.testing.assert_allclose(ad.vmap(anp.median)(x), np.median(x, axis=1))
    np.testing.assert_allclose(
        ad.vmap(lambda r: anp.nanquantile(r, 0.3))(x), np.nanquantile(x, 0.3, axis=1)
    )
    np.testing.assert_allclose(ad.jit(lambda a: anp.percentile(a, 40.0, axis=0))(x),
                               np.percentile(x, 40.0, axis=0))  # fmt: skip
    a, b = 2.0, 3.0
    g = ad.grad(lambda u, v: anp.median([u, v, 10.0]), argnums=(0, 1))(a, b)
    assert g == (0.0, 1.0)


def test_dispatch_from_plain_numpy():
    t = ad.tensor([3.0, 1.0, 2.0], requires_grad=True)
    np.median(t).backward()
    np.testing.assert_array_equal(t.grad.numpy(), [0.0, 0.0, 1.0])
    assert float(np.nanpercentile(ad.tensor([1.0, np.nan, 3.0]), 50)) == 2.0
