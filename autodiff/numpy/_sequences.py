"""Functions of sequences: differences, interpolation, 1-D correlation and convolution."""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.abstract import shape_with_length
from autodiff.core.dtypes import dtype_of
from autodiff.numpy._arguments import at_axis
from autodiff.numpy._sorting import argsort, searchsorted
from autodiff.ops import elementwise as ew
from autodiff.ops import shape as shp
from autodiff.ops.correlate import correlate_1d
from autodiff.ops.elementwise import astype, where
from autodiff.ops.index import getitem
from autodiff.ops.sorting import take_along
from autodiff.ops.structural import broadcast_to, ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value
# (elementwise.FUNCTIONS has every elementwise function; its module names only those it calls)
not_equal = ew.FUNCTIONS["not_equal"]


class _NoValue:
    """The default of diff's `prepend` and `append` (None is a value there, as in NumPy)."""

    def __repr__(self):
        return "<no value>"


_NO_VALUE = _NoValue()


def _with_ends(a, axis: int, prepend, append):
    """`a` joined along `axis` with diff's `prepend` and `append` (a scalar fills one slice)."""
    combined = []
    for extra in (prepend, None, append):
        if extra is None:
            combined.append(a)
        elif extra is not _NO_VALUE:
            extra = _operand(extra)
            if ndim_of(extra) == 0:
                extra = broadcast_to(extra, shape_with_length(shape_of(a), axis, 1))
            combined.append(extra)
    return shp.concatenate(combined, axis) if len(combined) > 1 else a


def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    """`numpy.diff`, differentiable (in `prepend` and `append` too).

    Example:
        >>> import numpy as np
        >>> diff(np.array([1.0, 4.0, 9.0, 16.0]), 2)
        array([2., 2.])
    """
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = _operand(a)
    nd = ndim_of(a)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, nd)
    a = _with_ends(a, axis, prepend, append)
    upper, lower = at_axis(axis, slice(1, None)), at_axis(axis, slice(None, -1))
    for _ in range(n):
        if dtype_of(a) == np.bool_:
            a = not_equal(getitem(a, upper), getitem(a, lower))
        else:
            a = getitem(a, upper) - getitem(a, lower)
    return a


def _interp_part(x, xp, fp, lval, rval, complex_slope: bool, at_nan):
    """One real interpolation, with NumPy's arithmetic and edge rules (see numpy's arr_interp);
    `at_nan` is the value at NaN x (x itself, or 0.0 for an imaginary part)."""
    n = shape_of(xp)[0]
    first, last = getitem(fp, 0), getitem(fp, n - 1)
    lval = first if lval is None else lval
    rval = last if rval is None else rval
    if n == 1:  # NaN x gets fp[0] here, as in NumPy
        x0 = getitem(xp, 0)
        return where(x < x0, lval, where(x > x0, rval, first))
    shape = shape_of(x)
    j = searchsorted(xp, x, side="right") - 1  # xp[j] <= x < xp[j + 1]
    jc = shp.ravel(ew.clip(j, 0, n - 2))

    def knot(arr, idx):
        return shp.reshape(take_along(arr, idx, 0), shape)

    xj, xj1, fj, fj1 = knot(xp, jc), knot(xp, jc + 1), knot(fp, jc), knot(fp, jc + 1)
    if complex_slope:  # NumPy's complex interp multiplies by the reciprocal of the spacing
        slope = (fj1 - fj) * (1.0 / (xj1 - xj))
    else:
        slope = (fj1 - fj) / (xj1 - xj)
    res = slope * (x - xj) + fj
    bad = ew.isnan(res)
    # A NaN from infinities: try from the right end, then equal ends, then an exact knot.
    other = slope * (x - xj1) + fj1
    other = where(ew.isnan(other) & (fj == fj1), fj, other)
    res = where(bad, where(x == xj, fj, other), res)
    res = where(j == n - 1, last, res)
    res = where(x > getitem(xp, n - 1), rval, res)
    res = where(j == -1, lval, res)
    return where(ew.isnan(x), at_nan, res)


def _part(value, name: str):
    """The real or imaginary part of a complex fill value (None stays None)."""
    return None if value is None else getattr(complex(value), name)


def interp(x, xp, fp, left=None, right=None, period=None):
    """`numpy.interp`, differentiable in `x`, `xp` and `fp` (float64/complex128 results, as NumPy).

    The derivative in `x` at a knot is the slope of the segment to its right; it is 0
    outside [xp[0], xp[-1]].

    Example:
        >>> import numpy as np, autodiff as ad
        >>> xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
        >>> interp(np.array([0.5, 2.0]), xp, fp)
        array([1. , 2.5])
        >>> float(ad.grad(lambda x: interp(x, xp, fp))(2.0))
        0.5
    """
    x, xp, fp = _operand(x), _operand(xp), _operand(fp)
    is_complex = np.issubdtype(dtype_of(fp), np.complexfloating)
    out_dtype = np.complex128 if is_complex else np.float64
    x, xp, fp = astype(x, np.float64), astype(xp, np.float64), astype(fp, out_dtype)
    if ndim_of(xp) != 1 or ndim_of(fp) != 1:
        raise ValueError(
            "object too deep for desired array"
            if max(ndim_of(xp), ndim_of(fp)) > 1
            else "object of too small depth for desired array"
        )
    if shape_of(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    if shape_of(fp)[0] != shape_of(xp)[0]:
        raise ValueError("fp and xp are not of the same length.")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        x, xp = x % period, xp % period
        order = argsort(xp)
        xp, fp = take_along(xp, order, 0), take_along(fp, order, 0)
        xp = shp.concatenate(
            [getitem(xp, slice(-1, None)) - period, xp, getitem(xp, slice(0, 1)) + period]
        )
        fp = shp.concatenate([getitem(fp, slice(-1, None)), fp, getitem(fp, slice(0, 1))])
    if not is_complex:
        res = _interp_part(
            x,
            xp,
            fp,
            None if left is None else float(left),
            None if right is None else float(right),
            False,
            x,
        )
    else:
        re = _interp_part(x, xp, ew.real(fp), _part(left, "real"), _part(right, "real"), True, x)
        im = _interp_part(x, xp, ew.imag(fp), _part(left, "imag"), _part(right, "imag"), True, 0.0)
        res = re + 1j * im
    return getitem(res, ()) if ndim_of(res) == 0 else res


# ---------------------------------------------------------------------------------------------
# 1-D convolution and correlation.

_CONV_MODES = {0: "valid", 1: "same", 2: "full", "valid": "valid", "same": "same", "full": "full"}


def _conv_mode(mode) -> str:
    try:
        return _CONV_MODES[mode]
    except (KeyError, TypeError):
        np.correlate(np.ones(1), np.ones(1), mode)  # NumPy's error for an invalid mode
        raise  # (NumPy accepted it: a mode this function does not know)


def correlate(a, v, mode="valid"):
    """`numpy.correlate` (complex `v` is conjugated, as NumPy), differentiable in both.

    Example:
        >>> import numpy as np
        >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), "same")
        array([2. , 3.5, 3. ])
    """
    a, v = _operand(a), _operand(v)
    if np.issubdtype(dtype_of(v), np.complexfloating):
        v = ew.conj(v)
    return correlate_1d(a, v, _conv_mode(mode))


def convolve(a, v, mode="full"):
    """`numpy.convolve`, differentiable in both.

    Example:
        >>> import numpy as np
        >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
        array([0. , 1. , 2.5, 4. , 1.5])
    """
    a, v = shp.atleast_1d(_operand(a)), shp.atleast_1d(_operand(v))
    if shape_of(a)[0] == 0:
        raise ValueError("a cannot be empty")
    if shape_of(v)[0] == 0:
        raise ValueError("v cannot be empty")
    if shape_of(v)[0] > shape_of(a)[0]:
        a, v = v, a
    return correlate_1d(a, shp.flip(v, 0), _conv_mode(mode))


FUNCTIONS = {
    f.__name__: f
    for f in (
        diff,
        interp,
        correlate,
        convolve,
    )
}
