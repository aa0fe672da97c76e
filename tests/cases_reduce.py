"""Op table: reductions over every axis form (None, int, negative int, tuple) with and without keepdims."""

import numpy as np
from optable import OpCase, arr, distinct, pos

import autodiff.numpy as anp

# (shape, axis) pairs covering each axis form; every pair is run with keepdims False and True.
AXES = [
    ((), None),
    ((5,), None),
    ((5,), 0),
    ((5,), -1),
    ((3, 4), None),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -1),
    ((3, 4), (0, 1)),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), (-1, 0)),
    ((2, 3, 4), (1,)),
]

# name, sampler: max-like functions get distinct values so differences never straddle a tie.
FUNCTIONS = {
    "sum": arr,
    "mean": arr,
    "prod": pos,
    "max": distinct,
    "min": distinct,
    "amax": distinct,
    "amin": distinct,
    "ptp": distinct,
    "var": arr,
    "std": arr,
}


def _case(name, sample, shape, axis, keepdims):
    f, ref = getattr(anp, name), getattr(np, name)
    return OpCase(
        f"{name}{shape}-axis{axis}-keepdims{keepdims}",
        lambda x: f(x, axis=axis, keepdims=keepdims),
        (sample(*shape),),
        ref=lambda x: ref(x, axis=axis, keepdims=keepdims),
    )


CASES = []
for name, sample in FUNCTIONS.items():
    for shape, axis in AXES:
        if name == "std" and shape == ():
            continue  # the std of one element is 0, where sqrt has no derivative
        for keepdims in (False, True):
            CASES.append(_case(name, sample, shape, axis, keepdims))

x34 = arr(3, 4)
w34 = pos(3, 4)
ties = np.array([[1.0, 1.0, -0.5], [0.2, -1.0, 0.2]])
CASES += [
    # default arguments, positional axis, ddof, dtype, where, initial
    OpCase("sum-default", anp.sum, (x34,), ref=np.sum),
    OpCase("sum-positional-axis", lambda x: anp.sum(x, 1), (x34,), ref=lambda x: np.sum(x, 1)),
    OpCase(
        "sum-dtype-float64",
        lambda x: anp.sum(x, axis=0, dtype=np.float64),
        (x34,),
        ref=lambda x: np.sum(x, axis=0, dtype=np.float64),
    ),
    OpCase(
        "sum-where",
        lambda x: anp.sum(x, axis=1, where=x34 > 0),
        (x34,),
        ref=lambda x: np.sum(x, axis=1, where=x34 > 0),
    ),
    OpCase(
        "sum-initial",
        lambda x: anp.sum(x, initial=2.0),
        (x34,),
        ref=lambda x: np.sum(x, initial=2.0),
    ),
    OpCase(
        "sum-of-products",
        lambda x, y: anp.sum(x * y, axis=-1),
        (x34, arr(4)),
        ref=lambda x, y: np.sum(x * y, axis=-1),
    ),
    OpCase("mean-default", anp.mean, (x34,), ref=np.mean),
    OpCase(
        "mean-where",
        lambda x: anp.mean(x, axis=0, where=x34 > -1),
        (x34,),
        ref=lambda x: np.mean(x, axis=0, where=x34 > -1),
    ),
    OpCase("prod-default", anp.prod, (pos(2, 3),), ref=np.prod),
    OpCase(
        "prod-signs", lambda x: anp.prod(x, axis=1), (arr(3, 4),), ref=lambda x: np.prod(x, axis=1)
    ),
    OpCase(
        "prod-one-zero",
        lambda x: anp.prod(x, axis=1),
        (np.array([[2.0, 0.0, -1.5], [0.5, 1.5, 3.0]]),),
        ref=lambda x: np.prod(x, axis=1),
    ),
    OpCase(
        "prod-two-zeros",
        lambda x: anp.prod(x, axis=0),
        (np.array([[0.0, 2.0], [0.0, 1.5], [1.5, 0.5]]),),
        ref=lambda x: np.prod(x, axis=0),
        order=1,
    ),
    OpCase(
        "prod-where-initial",
        lambda x: anp.prod(x, axis=1, where=x34 > 0, initial=0.5),
        (pos(3, 4),),
        ref=lambda x: np.prod(x, axis=1, where=x34 > 0, initial=0.5),
    ),
    OpCase("max-default", anp.max, (distinct(3, 4),), ref=np.max),
    OpCase("min-default", anp.min, (distinct(3, 4),), ref=np.min),
    # two-way ties: the even split is what central differences see (order 1: kinks at order 2)
    OpCase(
        "max-ties", lambda x: anp.max(x, axis=1), (ties,), ref=lambda x: np.max(x, axis=1), order=1
    ),
    OpCase(
        "min-ties", lambda x: anp.min(x, axis=1), (-ties,), ref=lambda x: np.min(x, axis=1), order=1
    ),
    OpCase(
        "var-ddof1",
        lambda x: anp.var(x, axis=0, ddof=1),
        (x34,),
        ref=lambda x: np.var(x, axis=0, ddof=1),
    ),
    OpCase(
        "var-correction",
        lambda x: anp.var(x, correction=1),
        (x34,),
        ref=lambda x: np.var(x, correction=1),
    ),
    OpCase(
        "var-given-mean",
        lambda x, m: anp.var(x, axis=1, mean=m),
        (x34, arr(3, 1)),
        ref=lambda x, m: np.var(x, axis=1, mean=m),
    ),
    OpCase(
        "std-ddof1-keepdims",
        lambda x: anp.std(x, axis=(0, 1), ddof=1, keepdims=True),
        (x34,),
        ref=lambda x: np.std(x, axis=(0, 1), ddof=1, keepdims=True),
    ),
    OpCase("average", anp.average, (x34,), ref=np.average),
    OpCase(
        "average-weights",
        lambda x, w: anp.average(x, axis=0, weights=w),
        (x34, w34),
        ref=lambda x, w: np.average(x, axis=0, weights=w),
    ),
    OpCase(
        "average-weights-1d",
        lambda x, w: anp.average(x, axis=1, weights=w),
        (x34, pos(4)),
        ref=lambda x, w: np.average(x, axis=1, weights=w),
    ),
    OpCase(
        "average-returned",
        lambda x, w: anp.average(x, axis=-1, weights=w, returned=True),
        (x34, w34),
        ref=lambda x, w: np.average(x, axis=-1, weights=w, returned=True),
    ),
    # operators and methods mixed with reductions
    OpCase(
        "softmax-like",
        lambda x: (
            anp.exp(x - anp.max(x, axis=1, keepdims=True))
            / anp.sum(anp.exp(x - anp.max(x, axis=1, keepdims=True)), axis=1, keepdims=True)
        ),
        (distinct(3, 4),),
        ref=lambda x: (
            np.exp(x - x.max(1, keepdims=True))
            / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)
        ),
    ),
    OpCase(
        "normalize",
        lambda x: (x - anp.mean(x, 0)) / anp.std(x, 0),
        (x34,),
        ref=lambda x: (x - np.mean(x, 0)) / np.std(x, 0),
    ),
]

# ------------------------------------------------------------------ order statistics and NaNs
# (own generator: the shared stream, and so later files' arguments, stay as they were)
_RNG = np.random.default_rng(28)


def _distinct(*shape):
    """Values at least 0.3 apart (no tie within a difference step of any sort position)."""
    n = int(np.prod(shape))
    return (_RNG.permutation(n) * 0.3 - 0.15 * n + _RNG.uniform(-0.05, 0.05, n)).reshape(shape)


def _with_nans(x, at):
    x = x.copy()
    x[at] = np.nan
    return x


def _order_case(name, f, *args, **kwargs):
    return OpCase(name, lambda *xs: f(anp, *xs), args, ref=lambda *xs: f(np, *xs), **kwargs)


d5, d34, d234 = _distinct(5), _distinct(3, 4), _distinct(2, 3, 4)
n34 = _with_nans(_distinct(3, 4), (np.array([0, 1, 1]), np.array([2, 0, 3])))
Q = np.array([0.1, 0.5, 0.85])
CASES += [
    _order_case("median", lambda m, x: m.median(x), d5),
    _order_case("median-even-axis1", lambda m, x: m.median(x, axis=1), d34),
    _order_case("median-axes-keepdims", lambda m, x: m.median(x, (0, 2), keepdims=True), d234),
    _order_case("quantile-linear", lambda m, x: m.quantile(x, 0.3, axis=0), d34),
    _order_case("quantile-q-array", lambda m, x: m.quantile(x, Q, axis=-1, keepdims=True), d34),
    _order_case("quantile-lower", lambda m, x: m.quantile(x, Q, method="lower"), d34),
    _order_case("quantile-higher", lambda m, x: m.quantile(x, Q, axis=1, method="higher"), d34),
    _order_case("quantile-nearest", lambda m, x: m.quantile(x, 0.4, method="nearest"), d5),
    _order_case("quantile-midpoint", lambda m, x: m.quantile(x, Q, axis=0, method="midpoint"), d34),
    _order_case("quantile-hazen", lambda m, x: m.quantile(x, Q, method="hazen"), d234),
    _order_case("quantile-weibull", lambda m, x: m.quantile(x, 0.7, 1, method="weibull"), d34),
    _order_case("quantile-inverted-cdf", lambda m, x: m.quantile(x, Q, method="inverted_cdf"), d5),
    _order_case(
        "quantile-median-unbiased", lambda m, x: m.quantile(x, Q, 2, method="median_unbiased"), d234
    ),
    _order_case("quantile-in-q", lambda m, q: m.quantile(d34, q, axis=1), np.array([0.2, 0.65])),
    _order_case("percentile", lambda m, x: m.percentile(x, [20.0, 75.0], axis=0), d34),
    _order_case("percentile-in-q", lambda m, q: m.percentile(d5, q), np.array(40.0)),
    _order_case("nanmedian", lambda m, x: m.nanmedian(x, axis=1), n34),
    _order_case("nanmedian-flat", lambda m, x: m.nanmedian(x), n34),
    _order_case("nanquantile", lambda m, x: m.nanquantile(x, Q, axis=1), n34),
    _order_case("nanpercentile", lambda m, x: m.nanpercentile(x, 30.0, axis=0), n34),
    _order_case("nanquantile-lower", lambda m, x: m.nanquantile(x, Q, 1, method="lower"), n34),
    _order_case("nanmax", lambda m, x: m.nanmax(x, axis=1), n34),
    _order_case("nanmin-keepdims", lambda m, x: m.nanmin(x, axis=0, keepdims=True), n34),
    _order_case("nanmax-flat", lambda m, x: m.nanmax(x), n34),
    _order_case("nanvar", lambda m, x: m.nanvar(x, axis=1), n34),
    _order_case("nanvar-ddof", lambda m, x: m.nanvar(x, axis=0, ddof=1, keepdims=True), n34),
    _order_case("nanstd", lambda m, x: m.nanstd(x), n34),
    _order_case("std-of-list", lambda m, x, y: m.std([x, y, x * y]), _distinct(), _distinct()),
    _order_case("mean-of-list", lambda m, x, y: m.mean([x, 2.0 * y]), _distinct(3), _distinct(3)),
    _order_case("max-initial", lambda m, x: m.max(x, axis=0, initial=0.1), d34),
    _order_case("cov", lambda m, x: m.cov(x), _RNG.normal(size=(3, 5))),
    _order_case(
        "cov-y-rowvar",
        lambda m, x, y: m.cov(x, y, rowvar=False),
        _RNG.normal(size=(5, 2)),
        _RNG.normal(size=(5, 1)),
    ),
    _order_case(
        "cov-aweights",
        lambda m, x, w: m.cov(x, aweights=w, ddof=1),
        _RNG.normal(size=(2, 5)),
        _RNG.uniform(0.5, 2.0, 5),
    ),
    _order_case("corrcoef", lambda m, x: m.corrcoef(x), _RNG.normal(size=(3, 6))),
    _order_case(
        "bincount-weights", lambda m, w: m.bincount(np.array([0, 2, 2, 4]), w), _RNG.normal(size=4)
    ),
]
