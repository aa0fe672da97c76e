"""Cumulative primitives: cumsum, cumprod, and the linear recurrence cumprod's rules run.

- `cumsum_p`, linear; its transpose is the reversed cumsum.
- `cumprod_p`, whose rules run `linear_recurrence_p` (`h[k] = a[k] h[k-1] + b[k]`) in
  both directions: they never divide by x, so the derivative is right where x has zeros.

`cumsum` and `cumprod` here take one axis (as `lax.cumsum`); `autodiff.numpy`'s forms
(flattening, `dtype=`) bind the same primitives.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.abstract import ShapedArray, accumulation_dtype, array_result_type, shaped_like
from autodiff.core.dtypes import dtype_of, in_float32
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import series
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import cotangent_of
from autodiff.ops.index import getitem
from autodiff.ops.sparsity import prefix
from autodiff.ops.structural import apply_linear, axis_in_batched, batch_in_front, ndim_of, shape_of


def axis_batch_rule(p):
    """Batch rule of a one-operand primitive acting along `axis`: the batch axis stays put."""

    def rule(values, dims, *, axis, **params):
        return bind(p, values[0], axis=axis_in_batched(axis, dims[0]), **params), dims[0]

    return rule


def _cumulative_abstract_eval(x, *, axis, dtype, reverse=False):
    """abstract_eval of cumsum and cumprod: x's shape, in `dtype` or NumPy's accumulation dtype."""
    return shaped_like(x, x.shape, accumulation_dtype(x.dtype) if dtype is None else dtype)


# ---------------------------------------------------------------------------------------------
# cumsum: linear; the transpose of a cumulative sum is the cumulative sum taken backwards.


def _cumsum_impl(x, *, axis, reverse, dtype):
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis, dtype), axis)
    return np.cumsum(x, axis, dtype)


cumsum_p = Primitive("cumsum")
cumsum_p.sparsity = prefix(lambda params: params["axis"], lambda params: params["reverse"])
cumsum_p.saves_inputs = False  # its vjp reads only shapes and dtypes
cumsum_p.saves_output = False
cumsum_p.impl = in_float32(_cumsum_impl)
cumsum_p.abstract_eval = _cumulative_abstract_eval
cumsum_p.jvp = lambda primals, tangents, *, out, axis, reverse, dtype: apply_linear(
    cumsum, tangents[0], axis, reverse
)
cumsum_p.vjp = lambda g, x, *, out, axis, reverse, dtype: (cumsum(g, axis, not reverse),)
cumsum_p.batch = axis_batch_rule(cumsum_p)
cumsum_p.taylor = series.linear_rule(cumsum_p)


# ---------------------------------------------------------------------------------------------
# cumprod. y[k] = x[k] y[k-1], so dy[k] = x[k] dy[k-1] + dx[k] y[k-1]: a forward recurrence
# driven by dx * (the exclusive cumprod); its transpose runs backwards with x shifted by one.


def _exclusive(y, axis: int):
    """y[k-1] along `axis`, 1 at the start: the product of the factors before each one."""
    return _step(y, axis, 1, forward=True)


cumprod_p = Primitive("cumprod")
cumprod_p.sparsity = prefix(lambda params: params["axis"], linear=False)
cumprod_p.impl = in_float32(lambda x, *, axis, dtype: np.cumprod(x, axis, dtype))
cumprod_p.abstract_eval = _cumulative_abstract_eval
cumprod_p.jvp = lambda primals, tangents, *, out, axis, dtype: apply_linear(
    lambda t: linear_recurrence(primals[0], t * _exclusive(out, axis), axis), tangents[0]
)
cumprod_p.vjp = lambda g, x, *, out, axis, dtype: (
    _exclusive(out, axis) * linear_recurrence(_step(x, axis, 0, forward=False), g, axis, True),
)
cumprod_p.batch = axis_batch_rule(cumprod_p)


def cumsum(x, axis: int, reverse: bool = False):
    """The cumulative sum of `x` along `axis` (a non-negative axis), from the end if `reverse`.

    Example:
        >>> import numpy as np
        >>> cumsum(np.array([1.0, 2.0, 3.0]), 0, reverse=True)
        array([6., 5., 3.])
    """
    return bind(cumsum_p, x, axis=axis, reverse=reverse, dtype=None)


def cumprod(x, axis: int):
    """The cumulative product of `x` along `axis`; its derivative never divides by x.

    Example:
        >>> import numpy as np
        >>> cumprod(np.array([[1.0, 2.0], [3.0, 4.0]]), -1)
        array([[ 1.,  2.],
               [ 3., 12.]])
    """
    return bind(cumprod_p, x, axis=normalize_axis_index(axis, ndim_of(x)), dtype=None)


# ---------------------------------------------------------------------------------------------
# The first-order linear recurrence h[k] = a[k] h[k-1] + b[k] (h[-1] = 0), or, with
# `reverse`, h[k] = a[k] h[k+1] + b[k] (h[n] = 0). Linear in b; its transpose in b is the
# recurrence the other way with the coefficients shifted by one. cumprod's rules are
# recurrences, which is how they avoid dividing by x.


def _at(axis: int, part) -> tuple:
    """An index applying `part` along `axis` (all of every earlier axis)."""
    return (slice(None),) * axis + (part,)


def _step(x, axis: int, fill, forward: bool):
    """`x` moved one place along `axis`: forward gives out[k] = x[k-1], else out[k] = x[k+1];
    the vacated end holds `fill`."""
    shape = list(shape_of(x))
    if shape[axis] == 0:
        return x
    shape[axis] = 1
    edge = np.full(shape, fill, dtype_of(x))
    if forward:
        return shp.concatenate([edge, getitem(x, _at(axis, slice(None, -1)))], axis)
    return shp.concatenate([getitem(x, _at(axis, slice(1, None))), edge], axis)


def _linear_recurrence_impl(a, b, *, axis, reverse):
    a, b = np.broadcast_arrays(a, b)
    dtype = np.result_type(a, b)
    a_k, b_k = np.moveaxis(a, axis, 0), np.moveaxis(b, axis, 0)
    out = np.empty(b_k.shape, dtype)
    h = np.zeros(b_k.shape[1:], dtype)
    n = b_k.shape[0]
    for k in range(n - 1, -1, -1) if reverse else range(n):
        h = a_k[k] * h + b_k[k]
        out[k] = h
    return np.moveaxis(out, 0, axis)


def _linear_recurrence_jvp(primals, tangents, *, out, axis, reverse):
    a, _ = primals
    ta, tb = tangents
    if ta is None and tb is None:
        return None
    rhs = tb
    if ta is not None:  # d(a[k] h[k-1]) = da[k] h[k-1] + a[k] dh[k-1]
        term = ta * _step(out, axis, 0, forward=not reverse)
        rhs = term if rhs is None else rhs + term
    return linear_recurrence(a, rhs, axis, reverse)


def _linear_recurrence_vjp(g, a, b, *, out, axis, reverse, needs=(True, True)):
    c = linear_recurrence(_step(a, axis, 0, forward=reverse), g, axis, not reverse)
    ct_a = cotangent_of(c * _step(out, axis, 0, forward=not reverse), a) if needs[0] else None
    return ct_a, cotangent_of(c, b)


def _linear_recurrence_batch(values, dims, *, axis, reverse):
    a, b = batch_in_front(values, dims)
    return linear_recurrence(a, b, axis + 1, reverse), 0


linear_recurrence_p = Primitive("linear_recurrence")
linear_recurrence_p.sparsity = prefix(
    lambda params: params["axis"], lambda params: params["reverse"], linear=False
)
linear_recurrence_p.impl = _linear_recurrence_impl
linear_recurrence_p.abstract_eval = lambda a, b, *, axis, reverse: ShapedArray(
    np.broadcast_shapes(a.shape, b.shape), array_result_type(a, b)
)
linear_recurrence_p.jvp = _linear_recurrence_jvp
linear_recurrence_p.vjp = _linear_recurrence_vjp
linear_recurrence_p.vjp_takes_needs = True
linear_recurrence_p.batch = _linear_recurrence_batch


def linear_recurrence(a, b, axis: int, reverse: bool = False):
    """`h[k] = a[k] * h[k-1] + b[k]` along `axis` from h[-1] = 0 (from the end if `reverse`).

    Example:
        >>> import numpy as np
        >>> linear_recurrence(np.array([0.0, 2.0, 3.0]), np.array([1.0, 0.0, 1.0]), 0)
        array([1., 2., 7.])
    """
    return bind(linear_recurrence_p, a, b, axis=axis, reverse=reverse)
