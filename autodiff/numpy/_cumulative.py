"""Cumulative sums and products, and the NaN-aware functions: nancumsum, nancumprod, nansum,
nanprod, nanmean, nan_to_num. NaNs replaced by a constant get a zero derivative.
"""

from __future__ import annotations

import warnings

import numpy as np

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import bind
from autodiff.numpy._arguments import flat_axis, no_out
from autodiff.ops import elementwise as ew
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.cumulative import cumprod_p, cumsum_p
from autodiff.ops.elementwise import astype, stop_gradient, where
from autodiff.ops.index import getitem
from autodiff.ops.structural import ndim_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value
# (elementwise.FUNCTIONS has every elementwise function; its module names only those it calls)
isinf, isfinite = (ew.FUNCTIONS[name] for name in ("isinf", "isfinite"))


def _accumulate_as(a, dtype):
    """(input, impl dtype) for a cumulative op: a float `dtype` is a (differentiable) cast before
    it; an integer or bool `dtype` makes the result a constant computed in that dtype."""
    if dtype is None:
        return a, None
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return astype(a, dtype), None
    return stop_gradient(a), dtype


def cumsum(a, axis=None, dtype=None, out=None):
    """`numpy.cumsum`, differentiable (its transpose is the reversed cumulative sum).

    Example:
        >>> import numpy as np
        >>> cumsum(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        array([[1., 3.],
               [3., 7.]])
    """
    no_out("cumsum", out)
    a, axis = flat_axis(_operand(a), axis)
    a, dtype = _accumulate_as(a, dtype)
    return bind(cumsum_p, a, axis=axis, reverse=False, dtype=dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """`numpy.cumprod`, differentiable; the derivative never divides by x, so it is exact
    where x has zeros.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda x: cumprod(x)[-1])(np.array([2.0, 0.0, 3.0]))
        array([0., 6., 0.])
    """
    no_out("cumprod", out)
    a, axis = flat_axis(_operand(a), axis)
    a, dtype = _accumulate_as(a, dtype)
    return bind(cumprod_p, a, axis=axis, dtype=dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """`numpy.nancumsum`: NaNs count as 0 (and get a zero derivative).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([1.0, np.nan, 2.0])
        >>> nancumsum(x).tolist(), ad.grad(lambda x: nancumsum(x).sum())(x)
        ([1.0, 1.0, 3.0], array([3., 0., 1.]))
    """
    return cumsum(_replace_nan(_operand(a), 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """`numpy.nancumprod`: NaNs count as 1 (and get a zero derivative).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([2.0, np.nan, 3.0])
        >>> nancumprod(x).tolist(), ad.grad(lambda x: nancumprod(x)[-1])(x)
        ([2.0, 2.0, 6.0], array([3., 0., 2.]))
    """
    return cumprod(_replace_nan(_operand(a), 1), axis, dtype, out)


# ---------------------------------------------------------------------------------------------
# NaN handling.


def _replace_nan(a, value):
    """`a` with NaNs replaced by `value` (a constant: the derivative there is 0)."""
    if not is_inexact(dtype_of(a)):
        return a
    return where(ew.isnan(a), value, a)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """`numpy.nan_to_num`, differentiable: 1 at finite entries, 0 where a value was replaced.

    Example:
        >>> import numpy as np
        >>> nan_to_num(np.array([np.nan, 1.0, -np.inf]), neginf=-5.0)
        array([ 0.,  1., -5.])
    """
    x = _operand(x)
    dt = dtype_of(x)
    if not is_inexact(dt):
        return shp.copy(x) if copy else x
    real_dt = np.finfo(dt).dtype
    fill_nan = real_dt.type(nan)
    fill_pos = real_dt.type(np.finfo(real_dt).max if posinf is None else posinf)
    fill_neg = real_dt.type(np.finfo(real_dt).min if neginf is None else neginf)

    def fix(d):
        inf, neg = isinf(d), ew.signbit(d)
        d = where(ew.isnan(d), fill_nan, d)
        d = where(inf & ~neg, fill_pos, d)
        return where(inf & neg, fill_neg, d)

    if np.issubdtype(dt, np.complexfloating):
        fixed = fix(ew.real(x)) + 1j * fix(ew.imag(x))
        out = where(isfinite(x), x, astype(fixed, dt))
    else:
        out = fix(x)
    return getitem(out, ()) if ndim_of(out) == 0 else out


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """`numpy.nansum`: NaNs count as 0; their derivative is 0.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(nansum)(np.array([1.0, np.nan, 3.0]))
        array([1., 0., 1.])
    """
    a = _replace_nan(_operand(a), 0)
    return red.sum(a, axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """`numpy.nanprod`: NaNs count as 1; their derivative is 0.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([2.0, np.nan, 3.0])
        >>> float(nanprod(x)), ad.grad(nanprod)(x)
        (6.0, array([3., 0., 2.]))
    """
    a = _replace_nan(_operand(a), 1)
    return red.prod(a, axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """`numpy.nanmean`: the mean of the non-NaN entries; the derivative at NaNs is 0.

    Example:
        >>> import numpy as np
        >>> nanmean(np.array([[1.0, np.nan], [2.0, 4.0]]), axis=1)
        array([1., 3.])
    """
    no_out("nanmean", out)
    a = _operand(a)
    if not is_inexact(dtype_of(a)):
        return red.mean(a, axis, dtype, keepdims=keepdims, where=where)
    if dtype is not None and not is_inexact(np.dtype(dtype)):
        raise TypeError("If a is inexact, then dtype must be inexact")
    mask = ew.isnan(a)
    count = red.sum(~mask, axis, np.intp, None, keepdims, where=where)
    total = red.sum(ew.where(mask, 0, a), axis, dtype, None, keepdims, where=where)
    if isinstance(count, (np.ndarray, np.generic)) and np.any(count == 0):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return astype(total / count, dtype_of(total))


FUNCTIONS = {
    f.__name__: f
    for f in (
        cumsum,
        cumprod,
        nancumsum,
        nancumprod,
        nan_to_num,
        nansum,
        nanprod,
        nanmean,
    )
}
