"""Statistics: order statistics (median, percentile, quantile and their NaN-aware forms), the
NaN-aware extrema and spreads, covariance and correlation, histograms and counts.

All composites of the other families. An order statistic sorts (a gather through argsort:
the derivative of each sorted position goes to the element that landed there, the earlier
of equal elements first, as in JAX) and interpolates between neighbours as NumPy does, so
values are NumPy's bit for bit; the derivative in `q` is the interpolation's slope for the
continuous methods and 0 for the discrete ones. NaN-aware forms count the valid values of
each slice (the NaNs sort last) and get a zero derivative at the NaNs. Counts (bincount,
digitize, a histogram's counts) are constants; weights and bin edges are differentiable.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.tensor import Tensor
from autodiff.numpy._arguments import concrete_values, no_out
from autodiff.numpy._matrices import diagonal
from autodiff.numpy._sorting import searchsorted, sort
from autodiff.ops import elementwise as ew
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype, stop_gradient, where
from autodiff.ops.index import getitem
from autodiff.ops.products import dot
from autodiff.ops.sorting import scatter_add_along, take_along
from autodiff.ops.structural import broadcast_to, ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value
isnan, floor, ceil, rint, sqrt = (
    ew.FUNCTIONS[n] for n in ("isnan", "floor", "ceil", "rint", "sqrt")
)


def _concrete(x):
    """`x` as a NumPy array when its values are at hand (a raw array), else None."""
    return np.asarray(x) if isinstance(x, (np.ndarray, np.generic, int, float, bool)) else None


def _any_true(mask) -> bool:
    """Whether a boolean mask holds a True, where that is known (False under a transform)."""
    m = _concrete(mask)
    return m is not None and bool(m.any())


def _real_only(a) -> None:
    if np.issubdtype(dtype_of(a), np.complexfloating):
        raise TypeError("a must be an array of real numbers")


def _to_last_axis(a, axis):
    """`a` with the axes `axis` reduces flattened into one last axis (NumPy's `_ureduce`),
    with the kept shape and the shape keepdims=True gives."""
    shape = shape_of(a)
    nd = len(shape)
    if axis is None:
        return shp.reshape(a, (-1,)), (), (1,) * nd
    axes = normalize_axis_tuple(axis, nd)
    kept = [i for i in range(nd) if i not in axes]
    kept_shape = tuple(shape[i] for i in kept)
    x = shp.transpose(a, kept + list(axes)) if kept + list(axes) != list(range(nd)) else a
    x = shp.reshape(x, kept_shape + (math.prod(shape[i] for i in axes),))
    return x, kept_shape, tuple(1 if i in axes else n for i, n in enumerate(shape))


# ---------------------------------------------------------------------------------------------
# Quantiles: NumPy's methods (Hyndman and Fan's nine and four others). A method gives each
# quantile a virtual index into the sorted values: the discrete ones a position, the others
# a position and a fraction gamma to interpolate with towards the next one.

_CONTINUOUS = {  # (alpha, beta) of `_compute_virtual_index`
    "interpolated_inverted_cdf": (0, 1),  # (ints, as NumPy: an integer q stays integer)
    "hazen": (0.5, 0.5),
    "weibull": (0, 0),
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
}
_DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
METHODS = ("averaged_inverted_cdf", "linear", "midpoint", *_CONTINUOUS, *_DISCRETE)


def _to_boundary(index, at_previous):
    """The discrete methods' rounding of a virtual index: floor where `at_previous(gamma,
    index)`, else the next position, never below 0."""
    previous = floor(index)
    gamma = index - previous
    res = astype(where(at_previous(gamma, index), previous, previous + 1), np.intp)
    return where(res < 0, 0, res)


def _discrete_index(method: str, n, q):
    if method == "inverted_cdf":
        return _to_boundary(n * q - 1, lambda gamma, _: gamma == 0)
    if method == "closest_observation":
        return _to_boundary(
            n * q - 1 - 0.5, lambda gamma, index: (gamma == 0) & (floor(index) % 2 == 1)
        )
    rounding = {"lower": floor, "higher": ceil, "nearest": rint}[method]
    return astype(rounding((n - 1) * q), np.intp)


def _virtual_index(method: str, n, q):
    if method == "linear":
        return (n - 1) * q
    if method == "averaged_inverted_cdf":
        return n * q - 1
    if method == "midpoint":
        return 0.5 * (floor((n - 1) * q) + ceil((n - 1) * q))
    alpha, beta = _CONTINUOUS[method]
    return n * q + (alpha + q * (1 - alpha - beta)) - 1


def _gamma(method: str, v, previous):
    """The interpolation fraction, in the virtual index's dtype (NumPy's `_get_gamma`)."""
    if method == "averaged_inverted_cdf":
        return astype(where(v - previous == 0, 0.5, 1.0), dtype_of(v))
    if method == "midpoint":
        return astype(where(v % 1 == 0, 0.0, 0.5), dtype_of(v))
    return v - previous


def _lerp(a, b, t, weak: bool):
    """NumPy's `_lerp`: a + (b - a) t, computed from b's end for t >= 0.5. A `weak` t (a
    Python float in NumPy, from a Python number q) meets the values in their dtype after
    1 - t is computed in double precision."""
    diff = b - a
    u = 1 - t
    if weak:
        dt = np.result_type(dtype_of(diff), 0.0)
        t, u = astype(t, dt), astype(u, dt)
    return where(t >= 0.5, b - diff * u, a + diff * t)


def _check_method(method) -> None:
    if method not in METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {list(METHODS)}")


def _check_q(q, percent: bool) -> None:
    values = _concrete(q)
    if values is not None and values.size and not (values.min() >= 0 and values.max() <= 1):
        if percent:
            raise ValueError("Percentiles must be in the range [0, 100]")
        raise ValueError("Quantiles must be in the range [0, 1]")
    if len(shape_of(q)) > 2:
        raise ValueError("q must be a scalar or 1d")


def _with_nans(result, s, n, nan_aware: bool):
    """Quantiles `result` of the sorted float slices `s` (`n` values each) with NumPy's NaNs."""
    if nan_aware:
        empty = n == 0
        if _any_true(empty):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)
        if _concrete(empty) is None or _any_true(empty):
            result = where(empty, np.nan, result)
        return result
    n_all = shape_of(s)[-1]
    if n_all:
        # a slice holding a NaN has the quantile NaN (NumPy takes its last sorted value)
        last_value = getitem(s, (Ellipsis, slice(n_all - 1, n_all)))
        has_nan = isnan(last_value)
        if _concrete(has_nan) is None or _any_true(has_nan):
            result = where(has_nan, astype(last_value, dtype_of(result)), result)
    return result


def _quantile(a, q, axis, method, keepdims, weak_q: bool, nan_aware: bool):
    """The quantiles `q` (in [0, 1]) of `a` over `axis`: shape q.shape + the reduced shape."""
    _check_method(method)
    x, kept_shape, keep_shape = _to_last_axis(a, axis)
    nd_kept = len(kept_shape)
    q_shape = shape_of(q)
    qv = shp.reshape(q, (1,) * nd_kept + (-1,))  # the quantiles along a last axis
    s = sort(x, axis=-1)
    n_all = shape_of(s)[-1]
    inexact = is_inexact(dtype_of(s))
    if nan_aware and inexact:
        # each slice has its own number of values: the NaNs sort last
        n = red.sum(~isnan(s), axis=-1, keepdims=True)
        q_dtype = dtype_of(qv)
        if is_inexact(q_dtype):  # (as NumPy's 1-d computation with a Python int n)
            n = astype(n, q_dtype)
    else:
        n = n_all
    last = n - 1
    if method in _DISCRETE or (method == "linear" and not is_inexact(dtype_of(qv))):
        if method in _DISCRETE:
            idx = _discrete_index(method, n, qv)
        else:
            idx = astype((n - 1) * qv, np.intp)
        if not isinstance(n, int):  # (no position past a slice's last value)
            idx = where(idx > last, astype(last, np.intp), idx)
        result = take_along(s, broadcast_to(idx, kept_shape + shape_of(qv)[-1:]), -1)
    else:
        v = _virtual_index(method, n, qv)
        above, below = v >= last, v < 0
        previous = where(above, last, where(below, 0, floor(v)))
        following = where(above, last, where(below, 0, previous + 1))
        if is_inexact(dtype_of(v)):
            bad = isnan(v)
            previous, following = where(bad, last, previous), where(bad, last, following)
        gamma = _gamma(method, v, previous)
        shape = kept_shape + shape_of(qv)[-1:]
        lo = take_along(s, broadcast_to(astype(previous, np.intp), shape), -1)
        hi = take_along(s, broadcast_to(astype(following, np.intp), shape), -1)
        result = _lerp(lo, hi, gamma, weak_q)  # (a Python number q keeps a's dtype)
    if inexact:
        result = _with_nans(result, s, n, nan_aware)
    result = shp.moveaxis(result, -1, 0)
    out_shape = q_shape + (keep_shape if keepdims else kept_shape)
    return shp.reshape(result, out_shape)


def _q_operand(q, percent: bool):
    """q as an array (divided by 100 for percentiles), and whether it was a Python number
    (then the result keeps a's dtype: NumPy's weak promotion)."""
    weak = type(q) in (int, float)
    q = np.asarray(q) if weak else _operand(q)
    return (q / 100 if percent else q), weak


def _quantile_fn(name: str, percent: bool, nan_aware: bool):
    def f(
        a,
        q,
        axis=None,
        out=None,
        overwrite_input=False,
        method="linear",
        keepdims=False,
        *,
        weights=None,
    ):
        no_out(name, out)
        if weights is not None:
            raise NotImplementedError(f"autodiff.numpy.{name} does not support weights=")
        a = _operand(a)
        _real_only(a)
        q, weak = _q_operand(q, percent)
        _check_q(q, percent)
        return _quantile(a, q, axis, method, bool(keepdims), weak, nan_aware)

    f.__name__ = f.__qualname__ = name
    what = "percentiles" if percent else "quantiles"
    qs = "[25.0, 50.0]" if percent else "[0.25, 0.5]"
    nan_note = " NaNs are ignored (a zero derivative)." if nan_aware else ""
    x = "np.array([3.0, np.nan, 1.0, 2.0, 4.0])" if nan_aware else "np.array([3.0, 1.0, 2.0, 4.0])"
    f.__doc__ = f"""`numpy.{name}`: the {what} `q` of `a` over `axis`, differentiable in `a` and
    (for the interpolating methods) in `q`; every `method` NumPy has.{nan_note}

    The derivative of each sorted position goes to the element that landed there, the
    earlier of equal elements first (as in JAX).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> anp.{name}({x}, {qs}).tolist()
        [1.75, 2.5]
        >>> ad.grad(lambda a: anp.{name}(a, {qs.split(", ")[1][:-1]}))({x})
        array([0.5, {"0. , " if nan_aware else ""}0. , 0.5, 0. ])
    """
    return f


quantile = _quantile_fn("quantile", percent=False, nan_aware=False)
percentile = _quantile_fn("percentile", percent=True, nan_aware=False)
nanquantile = _quantile_fn("nanquantile", percent=False, nan_aware=True)
nanpercentile = _quantile_fn("nanpercentile", percent=True, nan_aware=True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`numpy.median`, differentiable: the middle value, or the mean of the middle two.

    The derivative of each sorted position goes to the element that landed there, the
    earlier of equal elements first (as in JAX); a slice holding a NaN has the median NaN.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([3.0, 1.0, 2.0, 4.0])
        >>> float(median(x)), ad.grad(median)(x)
        (2.5, array([0.5, 0. , 0.5, 0. ]))
    """
    no_out("median", out)
    a = _operand(a)
    x, kept_shape, keep_shape = _to_last_axis(a, axis)
    n = shape_of(x)[-1]
    s = sort(x, axis=-1)
    middle = slice((n - 1) // 2, n // 2 + 1) if n else slice(0, 0)
    result = red.mean(getitem(s, (Ellipsis, middle)), axis=-1)
    if is_inexact(dtype_of(s)) and n:
        last_value = getitem(s, (Ellipsis, n - 1))
        has_nan = isnan(last_value)
        if _concrete(has_nan) is None or _any_true(has_nan):
            result = where(has_nan, astype(last_value, dtype_of(result)), result)
    return shp.reshape(result, keep_shape) if keepdims else result


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`numpy.nanmedian`: the median of each slice's non-NaN values (NaN for an all-NaN
    slice); the derivative at the NaNs is 0.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([3.0, np.nan, 1.0, 2.0])
        >>> float(nanmedian(x)), ad.grad(nanmedian)(x)
        (2.0, array([0., 0., 0., 1.]))
    """
    no_out("nanmedian", out)
    a = _operand(a)
    if not is_inexact(dtype_of(a)):
        return median(a, axis, keepdims=keepdims)
    x, kept_shape, keep_shape = _to_last_axis(a, axis)
    s = sort(x, axis=-1)
    count = red.sum(~isnan(s), axis=-1, keepdims=True)
    lower = (count - 1) // 2
    idx = shp.concatenate([lower, count // 2], axis=-1)
    idx = where(idx < 0, 0, idx)  # (an all-NaN slice: any position, its median is NaN)
    pair = take_along(s, idx, -1)
    one = getitem(pair, (Ellipsis, 0))
    result = where(getitem(count, (Ellipsis, 0)) % 2 == 1, one, red.mean(pair, axis=-1))
    empty = getitem(count, (Ellipsis, 0)) == 0
    if _any_true(empty):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
    if _concrete(empty) is None or _any_true(empty):
        result = where(empty, np.nan, result)
    return shp.reshape(result, keep_shape) if keepdims else result


# ---------------------------------------------------------------------------------------------
# NaN-aware extrema and spreads.


def _extremum_ignoring_nan(name: str, reduction, fill: float):
    def f(a, axis=None, out=None, keepdims=False, initial=None, where=True):
        no_out(name, out)
        a = _operand(a)
        if not is_inexact(dtype_of(a)):
            return reduction(a, axis, keepdims=keepdims, initial=initial, where=where)
        mask = isnan(a)
        res = reduction(
            ew.where(mask, fill, a), axis, keepdims=keepdims, initial=initial, where=where
        )
        all_nan = red.all(mask, axis, keepdims=keepdims, where=where)
        if initial is not None:  # (then no slice is empty of values)
            all_nan = all_nan & isnan(np.asarray(initial, dtype_of(a)))
        if _any_true(all_nan):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
        if _concrete(all_nan) is None or _any_true(all_nan):
            res = ew.where(all_nan, np.nan, res)
        return res

    f.__name__ = f.__qualname__ = name
    best = "largest" if fill < 0 else "smallest"
    f.__doc__ = f"""`numpy.{name}`: the {best} non-NaN value (NaN for an all-NaN slice),
    differentiable; tied extrema share the derivative evenly, NaNs get none.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([1.0, np.nan, 3.0, -2.0])
        >>> ad.grad({name})(x)
        array([{"0., 0., 1., 0." if fill < 0 else "0., 0., 0., 1."}])
    """
    return f


nanmax = _extremum_ignoring_nan("nanmax", red.amax, -np.inf)
nanmin = _extremum_ignoring_nan("nanmin", red.amin, np.inf)


def _arg_ignoring_nan(name: str, arg, fill: float):
    def f(a, axis=None, out=None, *, keepdims=False):
        no_out(name, out)
        a = _operand(a)
        if is_inexact(dtype_of(a)):
            mask = isnan(a)
            all_nan = red.all(mask, axis)
            if _any_true(all_nan):
                raise ValueError("All-NaN slice encountered")
            a = ew.where(mask, fill, a)
        return arg(a, axis, keepdims=keepdims)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""`numpy.{name}`: the index of the {"largest" if fill < 0 else "smallest"}
    non-NaN value, an integer constant (ValueError for an all-NaN slice).

    Example:
        >>> import numpy as np
        >>> int({name}(np.array([1.0, np.nan, 3.0, -2.0])))
        {2 if fill < 0 else 3}
    """
    return f


nanargmax = _arg_ignoring_nan("nanargmax", red.argmax, -np.inf)
nanargmin = _arg_ignoring_nan("nanargmin", red.argmin, np.inf)


def _nan_variance(a, axis, dtype, ddof, keepdims, where_, mean, correction):
    """numpy.nanvar's computation (for nanvar and nanstd)."""
    if where_ is not True:
        raise NotImplementedError("autodiff.numpy.nanvar does not support where=")
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if dtype is not None and not is_inexact(np.dtype(dtype)):
        raise TypeError("If a is inexact, then dtype must be inexact")
    mask = isnan(a)
    x = ew.where(mask, 0, a)
    count = red.sum(~mask, axis, np.intp, keepdims=True)
    if mean is None:
        total = red.sum(x, axis, dtype, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = astype(total / count, dtype_of(total))  # (NumPy divides in place)
    centered = ew.where(mask, 0, x - mean)
    if np.issubdtype(dtype_of(centered), np.complexfloating):
        squares = ew.real(centered * ew.conj(centered))
    else:
        squares = centered * centered
    total = red.sum(squares, axis, dtype, keepdims=bool(keepdims))
    dof = (count if keepdims else shp.reshape(count, shape_of(total))) - ddof
    bad = dof <= 0
    if _any_true(bad):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = total / dof
    if _concrete(bad) is None or _any_true(bad):
        var = ew.where(bad, np.nan, var)
    return astype(var, dtype_of(total))


def _nan_spread_fn(name: str, plain, of_variance):
    def f(
        a,
        axis=None,
        dtype=None,
        out=None,
        ddof=0,
        keepdims=False,
        *,
        where=True,
        mean=None,
        correction=None,
    ):
        no_out(name, out)
        a = _operand(a)
        if not is_inexact(dtype_of(a)):
            return plain(
                a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction
            )
        return of_variance(_nan_variance(a, axis, dtype, ddof, keepdims, where, mean, correction))

    f.__name__ = f.__qualname__ = name
    return f


nanvar = _nan_spread_fn("nanvar", red.var, lambda v: v)
nanvar.__doc__ = """`numpy.nanvar`: the variance of the non-NaN values, differentiable (0 at
    the NaNs).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([1.0, np.nan, 3.0])
        >>> float(nanvar(x)), ad.grad(nanvar)(x)
        (1.0, array([-1.,  0.,  1.]))
    """
nanstd = _nan_spread_fn("nanstd", red.std, red.sqrt_with_zero_derivative)
nanstd.__doc__ = """`numpy.nanstd`: the standard deviation of the non-NaN values,
    differentiable (0 at the NaNs, and where the spread is 0).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([1.0, np.nan, 3.0])
        >>> float(nanstd(x)), ad.grad(nanstd)(x)
        (1.0, array([-0.5,  0. ,  0.5]))
    """


# ---------------------------------------------------------------------------------------------
# Covariance and correlation, as NumPy computes them.


def _weights_1d(w, name: str, n: int):
    w = astype(_operand(w), np.float64)
    if ndim_of(w) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if shape_of(w)[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if _any_true(w < 0):
        raise ValueError(f"{name} cannot be negative")
    return w


def _variables(m, y, rowvar, dtype):
    """numpy.cov's observations: one variable per row, `y`'s rows after `m`'s."""
    m = _operand(m)
    if ndim_of(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _operand(y)
        if ndim_of(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtypes = [dtype_of(m)] + ([] if y is None else [dtype_of(y)])
        dtype = np.result_type(*dtypes, np.float64)
    X = astype(shp.atleast_2d(m), dtype)
    if not rowvar and ndim_of(m) != 1:
        X = shp.transpose(X)
    if y is not None and shape_of(X)[0] != 0:
        y2 = astype(shp.atleast_2d(y), dtype)
        if not rowvar and shape_of(y2)[0] != 1:
            y2 = shp.transpose(y2)
        X = shp.concatenate((X, y2), axis=0)
    return X


def _observation_weights(fweights, aweights, n: int):
    """numpy.cov's weights: the product of the frequency and the (differentiable) analytic
    weights, or None."""
    w = None
    if fweights is not None:
        fweights = _weights_1d(stop_gradient(_operand(fweights)), "fweights", n)
        fw = _concrete(fweights)
        if fw is not None and not np.all(fw == np.around(fw)):
            raise TypeError("fweights must be integer")
        w = fweights
    if aweights is not None:
        aweights = _weights_1d(aweights, "aweights", n)
        w = aweights if w is None else w * aweights
    return w, aweights


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """`numpy.cov`, differentiable in `m`, `y` and `aweights`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
        >>> cov(x)
        array([[ 1., -1.],
               [-1.,  1.]])
        >>> ad.grad(lambda x: cov(x)[0, 1])(x)
        array([[ 0.5,  0. , -0.5],
               [-0.5,  0. ,  0.5]])
    """
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    X = _variables(m, y, rowvar, dtype)
    if shape_of(X)[0] == 0:
        return np.array([]).reshape(0, 0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    n = shape_of(X)[1]
    w, aweights = _observation_weights(fweights, aweights, n)
    avg, w_sum = red.average(X, axis=1, weights=w, returned=True)
    w_sum = getitem(w_sum, 0)
    if w is None:
        fact = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * red.sum(w * aweights) / w_sum
    known = _concrete(fact)
    if known is not None and known <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = X - shp.expand_dims(avg, 1)
    X_T = shp.transpose(X if w is None else X * w)
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, fact) if known is not None else 1 / fact
    return shp.squeeze(dot(X, ew.conj(X_T)) * scale)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """`numpy.corrcoef`, differentiable (its entries are clipped to [-1, 1], as NumPy's).

    Example:
        >>> import numpy as np
        >>> corrcoef(np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 5.0]])).round(4)
        array([[1.    , 0.9934],
               [0.9934, 1.    ]])
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) == 0:  # one variable: nan if its variance is nan, inf or 0, else 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return c / c
    d = diagonal(c)
    stddev = sqrt(ew.real(d))
    c = c / shp.expand_dims(stddev, 1)
    c = c / shp.expand_dims(stddev, 0)
    if np.issubdtype(dtype_of(c), np.complexfloating):
        return astype(ew.clip(ew.real(c), -1, 1) + 1j * ew.clip(ew.imag(c), -1, 1), dtype_of(c))
    return ew.clip(c, -1, 1)


# ---------------------------------------------------------------------------------------------
# Counts: constants (bincount's weights are summed, differentiably).


def bincount(x, weights=None, minlength=0):
    """`numpy.bincount`: counts (a constant), or the sums of `weights` per bin, differentiable
    in `weights`. The values of `x` must be known (they fix the number of bins).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> bincount(np.array([0, 2, 2]))
        array([1, 0, 2])
        >>> ad.grad(lambda w: bincount(np.array([0, 2, 2]), w)[2])(np.array([1.0, 2.0, 3.0]))
        array([0., 1., 1.])
    """
    values = concrete_values(x, "bincount")
    if weights is None:
        return np.bincount(values, minlength=minlength)
    weights = _operand(weights)
    if not isinstance(weights, Tensor):
        return np.bincount(values, weights, minlength)
    counts = np.bincount(values, minlength=minlength)  # (NumPy's checks of x and minlength)
    if shape_of(weights) != values.shape:
        raise ValueError("The weights and list don't have the same length.")
    if np.issubdtype(dtype_of(weights), np.complexfloating):
        raise TypeError("Cannot cast array data from dtype('complex128') to dtype('float64')")
    w = astype(weights, np.float64)
    return scatter_add_along(w, values.astype(np.intp), 0, (counts.shape[0],))


def digitize(x, bins, right=False):
    """`numpy.digitize`: the bin of each value, an integer constant.

    Example:
        >>> import numpy as np
        >>> digitize(np.array([0.5, 1.5, 3.0]), np.array([1.0, 2.0, 3.0]))
        array([0, 1, 3])
    """
    x, bins = _operand(x), _operand(bins)
    if np.issubdtype(dtype_of(x), np.complexfloating):
        raise TypeError("x may not be complex")
    known = _concrete(bins)
    if known is None and isinstance(bins, Tensor):
        try:
            known = np.asarray(bins.primal())
        except TypeError:
            known = None
    mono = 1
    if known is not None and known.size > 1:
        steps = np.diff(known)
        mono = 1 if np.all(steps >= 0) else (-1 if np.all(steps <= 0) else 0)
        if mono == 0:
            raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if mono == -1:
        return shape_of(bins)[0] - searchsorted(shp.flip(bins, 0), x, side=side)
    return searchsorted(bins, x, side=side)


FUNCTIONS = {
    f.__name__: f
    for f in (
        median,
        nanmedian,
        quantile,
        percentile,
        nanquantile,
        nanpercentile,
        nanmax,
        nanmin,
        nanargmax,
        nanargmin,
        nanvar,
        nanstd,
        cov,
        corrcoef,
        bincount,
        digitize,
    )
}
