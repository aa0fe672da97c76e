"""Array functions: cumulative ops, sorting, padding and rolling, diagonals, kron and cross,
differences and interpolation, NaN-aware sums, 1-D convolution, grids and polynomials.

Most functions are composites of the other families (getitem, concatenate, where, ...).
The primitives here are the ones those cannot express:

- `cumsum_p`, linear; its transpose is the reversed cumsum.
- `cumprod_p`, whose rules run `linear_recurrence_p` (`h[k] = a[k] h[k-1] + b[k]`) in
  both directions: they never divide by x, so the derivative is right where x has zeros.
- `argsort_p` and `searchsorted_p`: integer results, constants under every transform.
- `gather_p` / `scatter_add_along_p`: `take_along_axis` with an index *operand*, and its
  transpose. Indices computed from traced values (argsort, searchsorted) stay traced, so
  `sort = gather(a, argsort(a))` and interp's knot lookup work under vmap too; sort's
  gradient is scattered back through the permutation.
- `correlate_p`: NumPy's 1-D correlation without the conjugation (so bilinear); its
  transposes are correlations again.
- `unique_p`: `np.unique` on concrete values (a constant; no vmap, its shape depends on data).

On raw arrays every function returns what NumPy returns (values, shape, dtype).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.abstract import (
    ShapedArray,
    accumulation_dtype,
    array_result_type,
    shape_with_length,
    shaped_like,
)
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.errors import ConcretizationError
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.kernels.scatter import scatter_add_rows
from autodiff.ops import elementwise as ew
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype, cotangent_of, stop_gradient, where
from autodiff.ops.index import getitem, index_set, scatter_add
from autodiff.ops.products import einsum
from autodiff.ops.structural import (
    apply_linear,
    axis_in_batched,
    batch_in_front,
    batch_size,
    broadcast_to,
    move_batch_axis,
    move_to_front,
    ndim_of,
    shape_of,
)

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value
# (elementwise.FUNCTIONS has every elementwise function; its module names only those it calls)
not_equal, isinf, isfinite = (ew.FUNCTIONS[name] for name in ("not_equal", "isinf", "isfinite"))


def concrete_values(x, name: str) -> np.ndarray:
    """The values of `x` as a NumPy array, for a function whose result's shape or type
    depends on them (`name`): ConcretizationError where they are not known (under vmap or
    jit)."""
    if not isinstance(x, Tensor):
        return np.asarray(x)
    try:
        return np.asarray(x.primal())
    except TypeError:
        raise ConcretizationError(
            f"autodiff.numpy.{name}: its result's shape or type depends on the values of its "
            "argument, which are not known here (under vmap or jit); compute it outside "
            "the transform."
        ) from None


def _at(axis: int, part) -> tuple:
    """An index applying `part` along `axis` (all of every earlier axis)."""
    return (slice(None),) * axis + (part,)


def _no_out(name: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"autodiff.numpy.{name} does not support out=")


def _axis_batch_rule(p):
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
cumsum_p.saves_inputs = False  # its vjp reads only shapes and dtypes
cumsum_p.saves_output = False
cumsum_p.impl = _cumsum_impl
cumsum_p.abstract_eval = _cumulative_abstract_eval
cumsum_p.jvp = lambda primals, tangents, *, out, axis, reverse, dtype: apply_linear(
    _cumsum, tangents[0], axis, reverse
)
cumsum_p.vjp = lambda g, x, *, out, axis, reverse, dtype: (_cumsum(g, axis, not reverse),)
cumsum_p.batch = _axis_batch_rule(cumsum_p)


def _cumsum(x, axis: int, reverse: bool = False):
    return bind(cumsum_p, x, axis=axis, reverse=reverse, dtype=None)


# ---------------------------------------------------------------------------------------------
# The first-order linear recurrence h[k] = a[k] h[k-1] + b[k] (h[-1] = 0), or, with
# `reverse`, h[k] = a[k] h[k+1] + b[k] (h[n] = 0). Linear in b; its transpose in b is the
# recurrence the other way with the coefficients shifted by one. cumprod's rules are
# recurrences, which is how they avoid dividing by x.


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


def linear_recurrence(a, b, axis: int, reverse: bool = False):
    """`h[k] = a[k] * h[k-1] + b[k]` along `axis` from h[-1] = 0 (from the end if `reverse`).

    Example:
        >>> import numpy as np
        >>> linear_recurrence(np.array([0.0, 2.0, 3.0]), np.array([1.0, 0.0, 1.0]), 0)
        array([1., 2., 7.])
    """
    return bind(linear_recurrence_p, a, b, axis=axis, reverse=reverse)


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
linear_recurrence_p.impl = _linear_recurrence_impl
linear_recurrence_p.abstract_eval = lambda a, b, *, axis, reverse: ShapedArray(
    np.broadcast_shapes(a.shape, b.shape), array_result_type(a, b)
)
linear_recurrence_p.jvp = _linear_recurrence_jvp
linear_recurrence_p.vjp = _linear_recurrence_vjp
linear_recurrence_p.vjp_takes_needs = True
linear_recurrence_p.batch = _linear_recurrence_batch

# ---------------------------------------------------------------------------------------------
# cumprod. y[k] = x[k] y[k-1], so dy[k] = x[k] dy[k-1] + dx[k] y[k-1]: a forward recurrence
# driven by dx * (the exclusive cumprod); its transpose runs backwards with x shifted by one.


def _exclusive(y, axis: int):
    """y[k-1] along `axis`, 1 at the start: the product of the factors before each one."""
    return _step(y, axis, 1, forward=True)


cumprod_p = Primitive("cumprod")
cumprod_p.impl = lambda x, *, axis, dtype: np.cumprod(x, axis, dtype)
cumprod_p.abstract_eval = _cumulative_abstract_eval
cumprod_p.jvp = lambda primals, tangents, *, out, axis, dtype: apply_linear(
    lambda t: linear_recurrence(primals[0], t * _exclusive(out, axis), axis), tangents[0]
)
cumprod_p.vjp = lambda g, x, *, out, axis, dtype: (
    _exclusive(out, axis) * linear_recurrence(_step(x, axis, 0, forward=False), g, axis, True),
)
cumprod_p.batch = _axis_batch_rule(cumprod_p)

# ---------------------------------------------------------------------------------------------
# Sorting and searching: integer results (constants), and gathers through them.

argsort_p = Primitive("argsort", differentiable=False)
argsort_p.impl = lambda x, *, axis, kind, stable: np.argsort(x, axis, kind=kind, stable=stable)
argsort_p.abstract_eval = lambda x, *, axis, kind, stable: ShapedArray(x.shape, np.intp)
argsort_p.batch = _axis_batch_rule(argsort_p)


def _searchsorted_impl(a, v, *, side, batch_dims):
    if batch_dims == 0:
        return np.searchsorted(a, v, side)
    # a: batch + (n,), v: batch + rest; one search per example
    a = np.asarray(a)
    rows = a.reshape(-1, a.shape[-1])
    if rows.shape[0] == 0:  # an empty batch
        return np.empty(np.shape(v), np.intp)
    keys = np.reshape(v, (rows.shape[0], -1))
    out = np.empty(keys.shape, np.intp)
    for i in range(rows.shape[0]):
        out[i] = np.searchsorted(rows[i], keys[i], side)
    return out.reshape(np.shape(v))


def _searchsorted_batch(values, dims, *, side, batch_dims):
    (a, v), (da, dv) = values, dims
    if da is None and batch_dims == 0:  # one sorted array for every example
        return bind(searchsorted_p, a, v, side=side, batch_dims=0), dv
    a, v = batch_in_front(values, dims)
    return bind(searchsorted_p, a, v, side=side, batch_dims=batch_dims + 1), 0


searchsorted_p = Primitive("searchsorted", differentiable=False)
searchsorted_p.impl = _searchsorted_impl
searchsorted_p.abstract_eval = lambda a, v, *, side, batch_dims: ShapedArray(v.shape, np.intp)
searchsorted_p.batch = _searchsorted_batch


def _gather(x, idx, axis: int):
    """`take_along_axis(x, idx, axis)`; `idx` may be traced (by vmap), its size-1 axes broadcast."""
    return bind(gather_p, x, idx, axis=normalize_axis_index(axis, ndim_of(x)))


def _scatter_add_along(values, idx, axis: int, shape: tuple):
    """Zeros of `shape` plus `values` at the positions `_gather` reads (repeats accumulate)."""
    return bind(scatter_add_along_p, values, idx, axis=axis, shape=tuple(shape))


def _scatter_add_along_impl(values, idx, *, axis, shape):
    values = np.asarray(values)
    idx = np.broadcast_to(idx, values.shape)
    if idx.size and idx.min() < 0:
        idx = np.where(idx < 0, idx + shape[axis], idx)
    # flat C-order positions: idx along `axis`, each element's own coordinate elsewhere
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    flat = idx * strides[axis]
    for d, n in enumerate(values.shape):
        if d != axis:
            flat = flat + (np.arange(n) * strides[d]).reshape((n,) + (1,) * (values.ndim - d - 1))
    out = scatter_add_rows(flat.ravel(), values.reshape(-1, 1), math.prod(shape))
    return out.reshape(shape)


def _gather_abstract_eval(x, idx, *, axis):
    if idx.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    # idx's length along `axis`; the other axes broadcast (np.take_along_axis's fancy index)
    others = np.broadcast_shapes(
        shape_with_length(x.shape, axis, 1), shape_with_length(idx.shape, axis, 1)
    )
    return shaped_like(x, shape_with_length(others, axis, idx.shape[axis]))


def _index_front(idx, bdim):
    """An index operand with its batch axis first, or a size-1 first axis (it broadcasts)."""
    if bdim is not None:
        return move_to_front(idx, bdim)
    return shp.reshape(idx, (1,) + shape_of(idx))


def _gather_batch(values, dims, *, axis):
    x = move_batch_axis(values[0], dims[0], 0, batch_size(values, dims))
    return _gather(x, _index_front(values[1], dims[1]), axis + 1), 0


def _scatter_add_along_batch(values, dims, *, axis, shape):
    size = batch_size(values, dims)
    v = move_batch_axis(values[0], dims[0], 0, size)
    idx = _index_front(values[1], dims[1])
    return _scatter_add_along(v, idx, axis + 1, (size,) + shape), 0


gather_p = Primitive("gather")
gather_p.impl = lambda x, idx, *, axis: np.take_along_axis(x, idx, axis)
gather_p.abstract_eval = _gather_abstract_eval
gather_p.jvp = lambda primals, tangents, *, out, axis: apply_linear(
    _gather, tangents[0], primals[1], axis
)
gather_p.vjp = lambda g, x, idx, *, out, axis: (
    _scatter_add_along(g, idx, axis, shape_of(x)),
    None,
)
gather_p.batch = _gather_batch

scatter_add_along_p = Primitive("scatter_add_along")
scatter_add_along_p.impl = _scatter_add_along_impl
scatter_add_along_p.abstract_eval = lambda values, idx, *, axis, shape: shaped_like(values, shape)
scatter_add_along_p.jvp = lambda primals, tangents, *, out, axis, shape: apply_linear(
    _scatter_add_along, tangents[0], primals[1], axis, shape
)
scatter_add_along_p.vjp = lambda g, values, idx, *, out, axis, shape: (_gather(g, idx, axis), None)
scatter_add_along_p.batch = _scatter_add_along_batch


def _unique_impl(ar, **params):
    out = np.unique(ar, **params)
    return out if isinstance(out, tuple) else (out,)


def _unique_batch(values, dims, **params):
    raise NotImplementedError(
        "autodiff.numpy.unique cannot be vmapped: the size of its result depends on the values"
    )


def _unique_abstract_eval(ar, **params):
    raise ConcretizationError(
        "unique has no abstract evaluation: how many values its result holds depends on the "
        "values of its input, which are not known here (only their shape and dtype). Call "
        "autodiff.numpy.unique outside the staged function and pass its result in."
    )


unique_p = Primitive("unique", multiple_results=True, differentiable=False)
unique_p.impl = _unique_impl
unique_p.abstract_eval = _unique_abstract_eval
unique_p.batch = _unique_batch

# ---------------------------------------------------------------------------------------------
# 1-D correlation without conjugation: out[k] = sum_j a[k + j - (m-1)] w[j] in "full" mode;
# "same" and "valid" are windows of it. Bilinear, and each transpose is a full correlation.


def _correlate_window(n: int, m: int, mode: str) -> tuple[int, int]:
    """(start, length) of NumPy's `mode` result inside the full correlation of lengths n, m."""
    full = n + m - 1
    if mode == "full":
        return 0, full
    if mode == "same":
        length = max(n, m)
        return ((full - length) // 2 if n >= m else (full - length + 1) // 2), length
    return min(n, m) - 1, max(n, m) - min(n, m) + 1


def _correlate_impl(a, w, *, mode):
    return np.correlate(a, np.conj(w) if np.iscomplexobj(w) else w, mode)


def _correlate(a, w, mode: str):
    return bind(correlate_p, a, w, mode=mode)


def _correlate_jvp(primals, tangents, *, out, mode):
    a, w = primals
    ta, tw = tangents
    d_a = apply_linear(_correlate, ta, w, mode)
    d_w = None if tw is None else _correlate(a, tw, mode)
    return d_w if d_a is None else d_a if d_w is None else d_a + d_w


def _correlate_vjp(g, a, w, *, out, mode, needs=(True, True)):
    n, m = shape_of(a)[0], shape_of(w)[0]
    start, length = _correlate_window(n, m, mode)
    full = n + m - 1
    if length != full:  # the full-mode cotangent: zeros outside the window
        dt = dtype_of(g)
        g = shp.concatenate([np.zeros(start, dt), g, np.zeros(full - start - length, dt)], 0)
    ct_a = ct_w = None
    if needs[0]:  # a full convolution of g with w, at a's positions
        ct_a = getitem(_correlate(g, shp.flip(w, 0), "full"), slice(m - 1, m - 1 + n))
    if needs[1]:
        ct_w = getitem(_correlate(a, g, "full"), slice(n - 1, n - 1 + m))
    return tuple(cotangent_of(ct, x) for ct, x in ((ct_a, a), (ct_w, w)))


def _correlate_batch(values, dims, *, mode):
    # Every example at once: windows of the zero-padded `a`, contracted with `w`.
    a, w = batch_in_front(values, dims)
    (size, n), m = shape_of(a), shape_of(w)[1]
    zeros = np.zeros((size, m - 1), dtype_of(a))
    padded = shp.concatenate([zeros, a, zeros], 1)
    windows = getitem(padded, (slice(None), np.arange(n + m - 1)[:, None] + np.arange(m)))
    full = einsum("bkj,bj->bk", windows, w)
    start, length = _correlate_window(n, m, mode)
    return getitem(full, (slice(None), slice(start, start + length))), 0


correlate_p = Primitive("correlate")
correlate_p.impl = _correlate_impl
correlate_p.abstract_eval = lambda a, w, *, mode: ShapedArray(
    (_correlate_window(a.shape[0], w.shape[0], mode)[1],), array_result_type(a, w)
)
correlate_p.jvp = _correlate_jvp
correlate_p.vjp = _correlate_vjp
correlate_p.vjp_takes_needs = True
correlate_p.batch = _correlate_batch

# ---------------------------------------------------------------------------------------------
# Cumulative functions.


def _accumulate_as(a, dtype):
    """(input, impl dtype) for a cumulative op: a float `dtype` is a (differentiable) cast before
    it; an integer or bool `dtype` makes the result a constant computed in that dtype."""
    if dtype is None:
        return a, None
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return astype(a, dtype), None
    return stop_gradient(a), dtype


def _flat_axis(a, axis, scalar_as_vector: bool = True):
    """`(a, axis)` with axis=None meaning the flattened array, and the axis normalized.

    NumPy's cumulative functions and argsort read a 0-d array as a 1-d one; sort does not.
    """
    if axis is None:
        return shp.ravel(a), 0
    if scalar_as_vector and ndim_of(a) == 0:
        a = shp.ravel(a)
    return a, normalize_axis_index(axis, ndim_of(a))


def cumsum(a, axis=None, dtype=None, out=None):
    """`numpy.cumsum`, differentiable (its transpose is the reversed cumulative sum).

    Example:
        >>> import numpy as np
        >>> cumsum(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        array([[1., 3.],
               [3., 7.]])
    """
    _no_out("cumsum", out)
    a, axis = _flat_axis(_operand(a), axis)
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
    _no_out("cumprod", out)
    a, axis = _flat_axis(_operand(a), axis)
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
# Sorting and searching.


def _check_sort_kind(kind, stable) -> None:
    np.sort(np.empty(0), kind=kind, stable=stable)  # NumPy's errors for an invalid kind


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`numpy.sort`, differentiable in the values: the gradient of each sorted position goes
    back to the element that landed there.

    Equal values get the gradient of the sorted position they occupy in a stable sort (the
    earlier element the earlier position), whatever `kind` and `stable` say: those only
    choose NumPy's algorithm, and the sorted values are the same for all of them.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda x: sort(x)[0] + 2.0 * sort(x)[2])(np.array([3.0, 1.0, 2.0]))
        array([2., 1., 0.])
    """
    if order is not None:
        raise NotImplementedError("autodiff.numpy.sort does not support order= (structured arrays)")
    a, axis = _flat_axis(_operand(a), axis, scalar_as_vector=False)
    if not isinstance(a, Tensor):
        return np.sort(a, axis, kind=kind, stable=stable)
    _check_sort_kind(kind, stable)
    return _gather(a, bind(argsort_p, a, axis=axis, kind="stable", stable=None), axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`numpy.argsort`: integer indices, a constant.

    Example:
        >>> import numpy as np
        >>> argsort(np.array([3.0, 1.0, 2.0])).tolist()
        [1, 2, 0]
    """
    if order is not None:
        raise NotImplementedError(
            "autodiff.numpy.argsort does not support order= (structured arrays)"
        )
    a, axis = _flat_axis(_operand(a), axis)
    return bind(argsort_p, a, axis=axis, kind=kind, stable=stable)


def searchsorted(a, v, side="left", sorter=None):
    """`numpy.searchsorted`: integer indices, a constant (vmappable in `a` and `v`).

    Example:
        >>> import numpy as np
        >>> searchsorted(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5]))
        array([1, 0])
    """
    a, v = _operand(a), _operand(v)
    if sorter is not None:
        a = _gather(a, _operand(sorter), 0)
    return bind(searchsorted_p, a, v, side=side, batch_dims=0)


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,
):  # noqa: A002 - NumPy's name
    """`numpy.unique` of the concrete values: constants (not differentiable, not vmappable).

    Example:
        >>> import numpy as np
        >>> unique(np.array([3.0, 1.0, 3.0]))
        array([1., 3.])
    """
    out = bind(
        unique_p,
        _operand(ar),
        return_index=bool(return_index),
        return_inverse=bool(return_inverse),
        return_counts=bool(return_counts),
        axis=axis,
        equal_nan=bool(equal_nan),
        sorted=bool(sorted),
    )
    return out[0] if len(out) == 1 else tuple(out)


# ---------------------------------------------------------------------------------------------
# Padding and rolling.

_PAD_KWARGS = {
    "empty": (),
    "edge": (),
    "wrap": (),
    "constant": ("constant_values",),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "minimum": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def _as_pairs(x, ndim: int, as_index: bool = False) -> list:
    """NumPy's reading of a pad argument: one (before, after) pair per axis."""
    if x is None:
        return [(None, None)] * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return [(x[0].item(), x[0].item())] * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return [(x[0].item(), x[1].item())] * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return [tuple(p) for p in np.broadcast_to(x, (ndim, 2)).tolist()]


def _pad_widths(pad_width, ndim: int) -> list:
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            seq[axis] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = seq
    pad_width = np.asarray(pad_width)
    if pad_width.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    return _as_pairs(pad_width, ndim, as_index=True)


def _axis_block(x, axis: int, length: int) -> tuple:
    return shape_with_length(shape_of(x), axis, length)


def _pad_with(x, axis: int, before, after):
    """`x` with the arrays `before` and `after` (of the right shapes) around it on `axis`."""
    return shp.concatenate([before, x, after], axis)


def _pad_reflect_odd(x, axis: int, before: int, after: int, include_edge: bool):
    """NumPy's iterative odd reflection: each chunk is 2 * edge - (the reflected values)."""
    n = shape_of(x)[axis]
    offset = 1 if include_edge else 0
    while before > 0 or after > 0:
        cur = shape_of(x)[axis]
        period = cur // n * n if include_edge else (cur - 1) // (n - 1) * (n - 1)
        left = right = None
        if before > 0:
            c = min(period, before)
            start = 1 - offset
            chunk = shp.flip(getitem(x, _at(axis, slice(start, start + c))), axis)
            left = 2 * getitem(x, _at(axis, slice(0, 1))) - chunk
            before -= c
        if after > 0:
            c = min(period, after)
            stop = cur - 1 + offset
            chunk = shp.flip(getitem(x, _at(axis, slice(stop - c, stop))), axis)
            right = 2 * getitem(x, _at(axis, slice(cur - 1, cur))) - chunk
            after -= c
        x = shp.concatenate([p for p in (left, x, right) if p is not None], axis)
    return x


def _pad_stat(x, axis: int, before: int, after: int, lengths, mode: str):
    n = shape_of(x)[axis]
    left_len, right_len = (n if s is None or n < s else s for s in lengths)
    if (left_len == 0 or right_len == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")
    func = {"maximum": red.amax, "minimum": red.amin, "mean": red.mean}[mode]
    dt = dtype_of(x)

    def stat(lo, hi):
        s = func(getitem(x, _at(axis, slice(lo, hi))), axis=axis, keepdims=True)
        if mode == "mean" and not is_inexact(dt):  # NumPy rounds into integer arrays
            s = astype(ew.round(s), dt)
        return s

    left = stat(0, left_len)
    right = left if left_len == right_len == n else stat(n - right_len, n)
    return _pad_with(
        x,
        axis,
        broadcast_to(left, _axis_block(x, axis, before)),
        broadcast_to(right, _axis_block(x, axis, after)),
    )


def _check_pad_mode(mode, kwargs: dict) -> None:
    """NumPy's errors for a mode or keyword it does not know; ours for the modes not supported."""
    if callable(mode):
        raise NotImplementedError("autodiff.numpy.pad does not support a function as mode")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode in ("linear_ramp", "median"):
        raise NotImplementedError(f"autodiff.numpy.pad does not support mode '{mode}'")


def _pad_constant(x, widths: list, constant_values):
    """`x` padded with constants, axis by axis."""
    dt = dtype_of(x)
    values = _as_pairs(constant_values, len(widths))
    for axis, (before, after), (v_before, v_after) in zip(range(len(widths)), widths, values):
        if before or after:
            x = _pad_with(
                x,
                axis,
                np.full(_axis_block(x, axis, before), v_before, dt),
                np.full(_axis_block(x, axis, after), v_after, dt),
            )
    return x


def _pad_empty(shape: tuple, widths: list, dtype):
    """A non-constant padding of an empty array: zeros, where no empty axis is extended (only
    constant padding can extend one)."""
    for axis, pair in enumerate(widths):
        if shape[axis] == 0 and any(pair):
            raise ValueError(
                f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
            )
    return np.zeros(tuple(n + b + a for n, (b, a) in zip(shape, widths)), dtype)


def _pad_selection(x, widths: list, mode: str, reflect_type: str):
    """The modes that repeat elements of `x` ("edge", "wrap", "reflect", "symmetric"): one
    gather per axis, of the positions NumPy's own padding of the positions selects; odd
    reflections are computed from the edge."""
    odd = mode in ("reflect", "symmetric") and reflect_type == "odd"
    shape = shape_of(x)
    for axis, (before, after) in enumerate(widths):
        n = shape[axis]
        if not (before or after):
            continue
        if odd and n > 1:
            x = _pad_reflect_odd(x, axis, before, after, mode == "symmetric")
        else:
            x = getitem(x, _at(axis, np.pad(np.arange(n), (before, after), mode=mode)))
    return x


def pad(array, pad_width, mode="constant", **kwargs):
    """`numpy.pad`, differentiable in `array`.

    Modes "constant", "edge", "wrap", "reflect" and "symmetric" (both `reflect_type`s),
    "maximum", "minimum" and "mean" (with `stat_length`), and "empty" (zeros); not
    "linear_ramp", "median" or a function. `constant_values` are constants.
    Selection modes are one gather per axis, so the gradient of a repeated element is the
    sum over its copies.

    Example:
        >>> import numpy as np
        >>> pad(np.array([1.0, 2.0, 3.0]), (2, 1), mode="reflect")
        array([3., 2., 1., 2., 3., 2.])
    """
    array = _operand(array)
    if not isinstance(array, Tensor):
        array = np.array(array)  # NumPy's result is always a fresh array
    shape = shape_of(array)
    widths = _pad_widths(pad_width, len(shape))
    _check_pad_mode(mode, kwargs)
    if mode in ("constant", "empty"):  # NumPy leaves "empty" padding undefined: zeros here
        return _pad_constant(array, widths, kwargs.get("constant_values", 0))
    if math.prod(shape) == 0:
        return _pad_empty(shape, widths, dtype_of(array))
    if mode in ("maximum", "minimum", "mean"):
        lengths = _as_pairs(kwargs.get("stat_length"), len(shape), as_index=True)
        for axis, (before, after) in enumerate(widths):
            array = _pad_stat(array, axis, before, after, lengths[axis], mode)
        return array
    return _pad_selection(array, widths, mode, kwargs.get("reflect_type", "even"))


def roll(a, shift, axis=None):
    """`numpy.roll`, differentiable.

    Example:
        >>> import numpy as np
        >>> roll(np.arange(5.0), 2)
        array([3., 4., 0., 1., 2.])
    """
    a = _operand(a)
    if axis is None:
        return shp.reshape(roll(shp.ravel(a), shift, 0), shape_of(a))
    shape = shape_of(a)
    axes = normalize_axis_tuple(axis, len(shape), allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(len(shape)), 0)
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    out = a
    for ax, offset in shifts.items():
        n = shape[ax]
        offset %= n or 1
        if offset:
            head, tail = shp.array_split(out, [n - offset], axis=ax)
            out = shp.concatenate([tail, head], ax)
    return shp.copy(out) if out is a else out


# ---------------------------------------------------------------------------------------------
# Diagonals and triangles.


def diagonal(a, offset=0, axis1=0, axis2=1):
    """`numpy.diagonal`, differentiable (its transpose scatters back onto the diagonal).

    Example:
        >>> import numpy as np
        >>> diagonal(np.arange(9.0).reshape(3, 3), 1)
        array([1., 5.])
    """
    a = _operand(a)
    ndim = ndim_of(a)
    if ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i = normalize_axis_index(axis1, ndim, "axis1")
    j = normalize_axis_index(axis2, ndim, "axis2")
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    x = shp.moveaxis(a, (i, j), (-2, -1))
    rows, cols = shape_of(x)[-2:]
    r0, c0 = max(-offset, 0), max(offset, 0)
    d = np.arange(max(0, min(rows - r0, cols - c0)))
    return getitem(x, (Ellipsis, d + r0, d + c0))


def diag(v, k=0):
    """`numpy.diag`: the `k`-th diagonal of a matrix, or a matrix with `v` on it; differentiable.

    Example:
        >>> import numpy as np
        >>> diag(np.array([1.0, 2.0]), 1)
        array([[0., 1., 0.],
               [0., 0., 2.],
               [0., 0., 0.]])
    """
    v = _operand(v)
    s = shape_of(v)
    if len(s) == 1:
        n = s[0] + abs(k)
        i = np.arange(s[0])
        return scatter_add(v, (n, n), (i, i + k) if k >= 0 else (i - k, i))
    if len(s) == 2:
        return diagonal(v, k)
    raise ValueError("Input must be 1- or 2-d.")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """`numpy.trace`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.arange(4.0).reshape(2, 2)
        >>> float(trace(a)), ad.grad(trace)(a)
        (3.0, array([[1., 0.],
               [0., 1.]]))
    """
    _no_out("trace", out)
    return red.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def triu(m, k=0):
    """`numpy.triu`: zeros below the `k`-th diagonal (of the last two axes), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> triu(np.ones((2, 2))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
        >>> ad.grad(lambda a: triu(a, 1).sum())(np.ones((2, 2)))
        array([[0., 1.],
               [0., 0.]])
    """
    m = _operand(m)
    mask = np.tri(*shape_of(m)[-2:], k=k - 1, dtype=bool)
    return where(mask, np.zeros(1, dtype_of(m)), m)


def tril(m, k=0):
    """`numpy.tril`: zeros above the `k`-th diagonal (of the last two axes), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> tril(np.ones((2, 2))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
        >>> ad.grad(lambda a: tril(a, -1).sum())(np.ones((2, 2)))
        array([[0., 0.],
               [1., 0.]])
    """
    m = _operand(m)
    mask = np.tri(*shape_of(m)[-2:], k=k, dtype=bool)
    return where(mask, m, np.zeros(1, dtype_of(m)))


# ---------------------------------------------------------------------------------------------
# Products of arrays.


def kron(a, b):
    """`numpy.kron`, differentiable in both (a broadcast product, reshaped).

    Example:
        >>> import numpy as np
        >>> kron(np.array([1.0, 10.0]), np.array([1.0, 2.0]))
        array([ 1.,  2., 10., 20.])
    """
    a, b = _operand(a), _operand(b)
    nda, ndb = ndim_of(a), ndim_of(b)
    if nda < ndb:  # NumPy reads `a` with ndmin=b.ndim
        a = shp.reshape(a, (1,) * (ndb - nda) + shape_of(a))
        nda = ndb
    if nda == 0 or ndb == 0:
        return a * b
    a_shape = shape_of(a)
    b_shape = (1,) * (nda - ndb) + shape_of(b)
    a2 = shp.reshape(a, tuple(d for s in a_shape for d in (s, 1)))
    b2 = shp.reshape(b, tuple(d for s in b_shape for d in (1, s)))
    return shp.reshape(a2 * b2, tuple(p * q for p, q in zip(a_shape, b_shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """`numpy.cross` of 3-vectors (2-vectors as NumPy, with its DeprecationWarning), differentiable.

    Example:
        >>> import numpy as np
        >>> cross(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _operand(a), _operand(b)
    if ndim_of(a) < 1 or ndim_of(b) < 1:
        raise ValueError("At least one array has zero dimension")
    a = shp.moveaxis(a, normalize_axis_index(axisa, ndim_of(a), msg_prefix="axisa"), -1)
    b = shp.moveaxis(b, normalize_axis_index(axisb, ndim_of(b), msg_prefix="axisb"), -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional "
            "vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=2,
        )
    shape = np.broadcast_shapes(shape_of(a)[:-1], shape_of(b)[:-1])
    if na == 3 or nb == 3:
        axisc = normalize_axis_index(axisc, len(shape) + 1, msg_prefix="axisc")
    dtype = np.promote_types(dtype_of(a), dtype_of(b))
    a, b = astype(a, dtype), astype(b, dtype)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        z = a0 * b1 - a1 * b0
        return np.asarray(z) if isinstance(z, np.generic) else z  # NumPy gives a 0-d array
    if na == 2:
        b2 = b[..., 2]
        parts = (a1 * b2, ew.negative(a0 * b2), a0 * b1 - a1 * b0)
    elif nb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        parts = (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
    else:
        a2 = a[..., 2]
        parts = (ew.negative(a2 * b1), a2 * b0, a0 * b1 - a1 * b0)
    cp = shp.stack([broadcast_to(p, shape) for p in parts], axis=-1)
    return shp.moveaxis(cp, -1, axisc)


# ---------------------------------------------------------------------------------------------
# Differences and interpolation.


class _NoValue:
    """The default of diff's `prepend` and `append` (None is a value there, as in NumPy)."""

    def __repr__(self):
        return "<no value>"


_NO_VALUE = _NoValue()


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
    combined = []
    for extra in (prepend, None, append):
        if extra is None:
            combined.append(a)
        elif extra is not _NO_VALUE:
            extra = _operand(extra)
            if ndim_of(extra) == 0:
                extra = broadcast_to(extra, _axis_block(a, axis, 1))
            combined.append(extra)
    if len(combined) > 1:
        a = shp.concatenate(combined, axis)
    upper, lower = _at(axis, slice(1, None)), _at(axis, slice(None, -1))
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
        return shp.reshape(_gather(arr, idx, 0), shape)

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
        xp, fp = _gather(xp, order, 0), _gather(fp, order, 0)
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
    _no_out("nanmean", out)
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
    return _correlate(a, v, _conv_mode(mode))


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
    return _correlate(a, shp.flip(v, 0), _conv_mode(mode))


# ---------------------------------------------------------------------------------------------
# Grids and polynomials.


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """`numpy.meshgrid`, differentiable in the coordinate vectors.

    Example:
        >>> import numpy as np
        >>> [g.tolist() for g in meshgrid(np.array([1.0, 2.0]), np.array([3.0]))]
        [[[1.0, 2.0]], [[3.0, 3.0]]]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [shp.reshape(_operand(x), s0[:i] + (-1,) + s0[i + 1 :]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = shp.reshape(output[0], (1, -1) + s0[2:])
        output[1] = shp.reshape(output[1], (-1, 1) + s0[2:])
    if not sparse:
        output = list(shp.broadcast_arrays(*output))
    if copy:
        output = [shp.copy(x) for x in output]
    return tuple(output)


def vander(x, N=None, increasing=False):
    """`numpy.vander`, differentiable (columns are cumulative products, as NumPy computes them).

    Example:
        >>> import numpy as np
        >>> vander(np.array([2.0, 3.0]), 3)
        array([[4., 2., 1.],
               [9., 3., 1.]])
    """
    x = _operand(x)
    if ndim_of(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = shape_of(x)[0]
    if N is None:
        N = n
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = np.promote_types(dtype_of(x), int)
    x = astype(x, dtype)
    columns = [np.ones((n, min(N, 1)), dtype)]
    if N > 1:
        columns.append(cumprod(broadcast_to(shp.reshape(x, (n, 1)), (n, N - 1)), axis=1))
    v = shp.concatenate(columns, 1) if len(columns) > 1 else columns[0]
    return v if increasing else shp.flip(v, 1)


def polyval(p, x):
    """`numpy.polyval` (Horner's scheme, as NumPy), differentiable in `p` and `x`.

    Example:
        >>> import numpy as np
        >>> polyval(np.array([1.0, 0.0, -1.0]), np.array([2.0, 3.0]))
        array([3., 8.])
    """
    p, x = _operand(p), _operand(x)
    if ndim_of(p) == 0:
        raise TypeError("iteration over a 0-d array")
    y = np.zeros(shape_of(x), dtype_of(x))
    for i in range(shape_of(p)[0]):
        y = y * x + getitem(p, i)
    return y


# ---------------------------------------------------------------------------------------------
# Rearrangements NumPy computes from positions alone: NumPy lays out the element ids and
# the result gathers the values from them (one differentiable take).


def _ids(shape: tuple, start: int = 0) -> np.ndarray:
    return np.arange(start, start + math.prod(shape), dtype=np.intp).reshape(shape)


def _gathered(sources: list, layout: np.ndarray):
    """The elements of `sources` (flattened and joined) at the ids of `layout`."""
    flat = [shp.ravel(s) for s in sources]
    joined = flat[0] if len(flat) == 1 else shp.concatenate(flat)
    return getitem(joined, layout)


def insert(arr, obj, values, axis=None):
    """`numpy.insert`: `values` inserted before the positions `obj`, differentiable in `arr`
    and `values` (cast to `arr`'s dtype, as NumPy).

    Example:
        >>> import numpy as np
        >>> insert(np.array([1.0, 2.0, 3.0]), 1, 9.0)
        array([1., 9., 2., 3.])
    """
    arr, values = _operand(arr), astype(_operand(values), dtype_of(_operand(arr)))
    shape, vshape = shape_of(arr), shape_of(values)
    size = math.prod(shape)
    vids = _ids(vshape, size)
    layout = np.insert(_ids(shape), obj, vids, axis)
    return _gathered([arr, values], layout)


def delete(arr, obj, axis=None):
    """`numpy.delete`: `arr` without the entries `obj` (along `axis`), differentiable.

    Example:
        >>> import numpy as np
        >>> delete(np.array([1.0, 2.0, 3.0]), [0, 2])
        array([2.])
    """
    arr = _operand(arr)
    return _gathered([arr], np.delete(_ids(shape_of(arr)), obj, axis))


def resize(a, new_shape):
    """`numpy.resize`: `a` repeated (flattened, in order) to fill `new_shape`, differentiable.

    Example:
        >>> import numpy as np
        >>> resize(np.array([1.0, 2.0, 3.0]), (2, 2))
        array([[1., 2.],
               [3., 1.]])
    """
    a = _operand(a)
    layout = np.resize(_ids(shape_of(a)), new_shape)
    if layout.size == 0:
        return np.zeros(layout.shape, dtype_of(a))
    return _gathered([a], layout)


def _block_leaves(arrays, leaves: list):
    """numpy.block's nested lists with each array replaced by its ids (`leaves` collects them)."""
    if isinstance(arrays, list):
        return [_block_leaves(a, leaves) for a in arrays]
    if isinstance(arrays, tuple):
        raise TypeError(
            f"{arrays!r} is a tuple. Only lists can be used to arrange blocks, and np.block does "
            "not allow implicit conversion from tuple to ndarray."
        )
    leaf = _operand(arrays)
    start = sum(math.prod(shape_of(x)) for x in leaves)
    leaves.append(leaf)
    return _ids(shape_of(leaf), start)


def block(arrays):
    """`numpy.block`: an array assembled from nested lists of blocks, differentiable.

    Example:
        >>> import numpy as np
        >>> block([[np.eye(2), np.zeros((2, 1))], [np.ones((1, 2)), 5.0 * np.ones((1, 1))]])
        array([[1., 0., 0.],
               [0., 1., 0.],
               [1., 1., 5.]])
    """
    leaves: list = []
    ids = _block_leaves(arrays, leaves)
    dtype = np.result_type(*(dtype_of(x) for x in leaves)) if leaves else np.float64
    layout = np.block(ids)
    return _gathered([astype(x, dtype) for x in leaves], layout)


def diagflat(v, k=0):
    """`numpy.diagflat`: the flattened `v` on the `k`-th diagonal, differentiable.

    Example:
        >>> import numpy as np
        >>> diagflat(np.array([[1.0, 2.0]]))
        array([[1., 0.],
               [0., 2.]])
    """
    return diag(shp.ravel(_operand(v)), k)


def select(condlist, choicelist, default=0):
    """`numpy.select`: from each position, the choice of the first true condition (else
    `default`), differentiable in the choices and `default`.

    Example:
        >>> import numpy as np
        >>> x = np.arange(4.0)
        >>> select([x < 1, x > 2], [x, x**2], -1.0)
        array([ 0., -1., -1.,  9.])
    """
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(choicelist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [_operand(c) for c in choicelist]
    default = default if isinstance(default, (int, float, complex)) else _operand(default)
    dtype = np.result_type(*(dtype_of(c) for c in choices), default)
    conds = [_operand(c) for c in condlist]
    for i, c in enumerate(conds):
        if dtype_of(c) != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = (
        astype(default, dtype)
        if not isinstance(default, (int, float, complex))
        else (np.asarray(default, dtype))
    )
    for cond, choice in zip(reversed(conds), reversed(choices)):
        result = where(cond, astype(choice, dtype), result)
    shape = np.broadcast_shapes(*(shape_of(x) for x in [*conds, *choices, result]))
    return broadcast_to(result, shape) if shape_of(result) != shape else result


def choose(a, choices, out=None, mode="raise"):
    """`numpy.choose`: from each position, the element of the choice `a` names there,
    differentiable in the choices (`a` is an integer constant).

    Example:
        >>> import numpy as np
        >>> choose(np.array([0, 1, 0]), [np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])])
        array([ 1., 20.,  3.])
    """
    _no_out("choose", out)
    a = _operand(a)
    choices = [
        _operand(c)
        for c in (
            choices if isinstance(choices, (list, tuple)) else list(shp.unstack(_operand(choices)))
        )
    ]
    n = len(choices)
    if mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = ew.clip(a, 0, n - 1)
    else:
        known = a if not isinstance(a, Tensor) else None
        if known is not None and known.size and (known.min() < 0 or known.max() >= n):
            raise ValueError("invalid entry in choice array")
    shape = np.broadcast_shapes(shape_of(a), *(shape_of(c) for c in choices))
    dtype = np.result_type(*(dtype_of(c) for c in choices))
    stacked = shp.stack([broadcast_to(astype(c, dtype), shape) for c in choices])
    idx = shp.expand_dims(broadcast_to(astype(a, np.intp), shape), 0)
    return shp.squeeze(_gather(stacked, idx, 0), 0)


def piecewise(x, condlist, funclist, *args, **kw):
    """`numpy.piecewise`: each function applied where its condition holds (the last one,
    given one function more than conditions, where none does); differentiable in `x` and
    in what the functions compute. The functions see only their elements, as in NumPy.

    Example:
        >>> import numpy as np
        >>> piecewise(np.array([-2.0, 3.0]), [np.array([True, False])], [lambda v: -v, 1.0])
        array([2., 1.])
    """
    x = _operand(x)
    n2 = len(funclist)
    if (
        isinstance(condlist, (bool, np.bool_))
        or not isinstance(condlist, (list, tuple))
        and (ndim_of(condlist) == 0)
    ):
        condlist = [condlist]
    conds = [np.asarray(concrete_values(c, "piecewise"), bool) for c in condlist]
    n = len(conds)
    if n == n2 - 1:
        conds.append(~np.any(conds, axis=0))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = np.zeros(shape_of(x), dtype_of(x))
    for cond, func in zip(conds, funclist):
        cond = np.broadcast_to(cond, shape_of(x))
        if not callable(func):
            y = index_set(y, cond, func)
        elif cond.any():
            y = index_set(y, cond, func(getitem(x, cond), *args, **kw))
    return y


def compress(condition, a, axis=None, out=None):
    """`numpy.compress`: the slices of `a` along `axis` where `condition` holds (whose values
    decide the shape), differentiable in `a`.

    Example:
        >>> import numpy as np
        >>> compress([False, True, True], np.array([1.0, 2.0, 3.0]))
        array([2., 3.])
    """
    _no_out("compress", out)
    a = _operand(a)
    keep = np.flatnonzero(concrete_values(condition, "compress"))
    if axis is None:
        return getitem(shp.ravel(a), keep)
    axis = normalize_axis_index(axis, ndim_of(a))
    return getitem(a, _at(axis, keep))


def extract(condition, arr):
    """`numpy.extract`: the elements of the flattened `arr` where the flattened `condition`
    holds, differentiable in `arr`.

    Example:
        >>> import numpy as np
        >>> x = np.arange(4.0)
        >>> extract(np.array([True, False, True, False]), x)
        array([0., 2.])
    """
    keep = np.flatnonzero(concrete_values(condition, "extract"))
    return getitem(shp.ravel(_operand(arr)), keep)


def _kth_checked(kth, n: int) -> None:
    kth = np.asarray(kth)
    if kth.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if kth.size and (kth.max() >= n or kth.min() < -n):
        raise ValueError(f"kth(={int(kth.max())}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.partition`, differentiable: the kth elements are where a sort would put them,
    smaller ones before and larger ones after. Here every element is in sorted order (a
    valid partition; NumPy leaves the order within the parts unspecified).

    Example:
        >>> import numpy as np
        >>> partition(np.array([3.0, 4.0, 2.0, 1.0]), 2)[2]
        np.float64(3.0)
    """
    if order is not None:
        raise NotImplementedError("autodiff.numpy.partition does not support order=")
    a, axis = _flat_axis(_operand(a), axis, scalar_as_vector=False)
    _kth_checked(kth, shape_of(a)[axis])
    return sort(a, axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.argpartition`: the indices that partition `a` (here those of a stable sort),
    an integer constant.

    Example:
        >>> import numpy as np
        >>> int(argpartition(np.array([3.0, 4.0, 2.0, 1.0]), 2)[2])
        0
    """
    if order is not None:
        raise NotImplementedError("autodiff.numpy.argpartition does not support order=")
    a = _operand(a)
    if axis is not None:
        _kth_checked(kth, shape_of(a)[normalize_axis_index(axis, max(ndim_of(a), 1))])
    return argsort(a, axis, kind="stable")


def sort_complex(a):
    """`numpy.sort_complex`: sorted by real part, then imaginary part, as complex values;
    differentiable.

    Example:
        >>> import numpy as np
        >>> sort_complex(np.array([1.0 + 2j, 1.0 - 1j, 0.5 + 0j]))
        array([0.5+0.j, 1. -1.j, 1. +2.j])
    """
    a = _operand(a)
    out = sort(a)
    if not np.issubdtype(dtype_of(out), np.complexfloating):
        kind = np.dtype(dtype_of(out)).char
        target = "F" if kind in "bhBH" else ("G" if kind == "g" else "D")
        out = astype(out, np.dtype(target))
    return out


def lexsort(keys, axis=-1):
    """`numpy.lexsort`: the indices sorting by the last key, then the one before, ...; an
    integer constant (vmappable: a chain of stable argsorts).

    Example:
        >>> import numpy as np
        >>> lexsort((np.array([1.0, 0.0, 1.0]), np.array([2.0, 1.0, 1.0])))
        array([1, 2, 0])
    """
    keys = [
        _operand(k)
        for k in (keys if isinstance(keys, (list, tuple)) else list(shp.unstack(_operand(keys))))
    ]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = np.broadcast_shapes(*(shape_of(k) for k in keys))
    axis = normalize_axis_index(axis, len(shape)) if shape else 0
    keys = [broadcast_to(k, shape) for k in keys]
    order = None
    for key in keys:
        sorted_key = key if order is None else _gather(key, order, axis)
        step = bind(argsort_p, sorted_key, axis=axis, kind="stable", stable=None)
        order = step if order is None else _gather(order, step, axis)
    return order


def trim_zeros(filt, trim="fb", axis=None):
    """`numpy.trim_zeros`: `filt` without its leading and/or trailing zeros along `axis`
    (all axes if None; which its values decide), differentiable.

    Example:
        >>> import numpy as np
        >>> trim_zeros(np.array([0.0, 1.0, 2.0, 0.0]))
        array([1., 2.])
    """
    filt = _operand(filt)
    if not isinstance(filt, Tensor):
        return np.trim_zeros(filt, trim, axis)
    values = concrete_values(filt, "trim_zeros")
    nd = values.ndim
    trimmed = np.trim_zeros(values, trim, axis)  # (NumPy's checks, and the result's shape)
    axes = range(nd) if axis is None else normalize_axis_tuple(axis, nd)
    index = [slice(None)] * nd
    for d in axes:
        others = tuple(j for j in range(nd) if j != d)
        hit = np.flatnonzero(np.any(values != 0, axis=others) if others else values != 0)
        start = int(hit[0]) if hit.size and "f" in trim.lower() else 0
        index[d] = slice(start, start + trimmed.shape[d])
    return getitem(filt, tuple(index))


def nonzero(a):
    """`numpy.nonzero`: the indices of the nonzero elements (integer constants, whose number
    the values decide).

    Example:
        >>> import numpy as np
        >>> nonzero(np.array([0.0, 1.5, 0.0, 2.0]))
        (array([1, 3]),)
    """
    return np.nonzero(concrete_values(_operand(a), "nonzero"))


def flatnonzero(a):
    """`numpy.flatnonzero`: the indices of the nonzero elements of the flattened array.

    Example:
        >>> import numpy as np
        >>> flatnonzero(np.array([[0.0, 1.0], [2.0, 0.0]]))
        array([1, 2])
    """
    return np.flatnonzero(concrete_values(_operand(a), "flatnonzero"))


def argwhere(a):
    """`numpy.argwhere`: the indices of the nonzero elements, one row each.

    Example:
        >>> import numpy as np
        >>> argwhere(np.array([[0.0, 1.0], [2.0, 0.0]]))
        array([[0, 1],
               [1, 0]])
    """
    return np.argwhere(concrete_values(_operand(a), "argwhere"))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """`numpy.isin`: whether each element equals one of `test_elements` (a boolean
    constant; vmappable, by comparing every pair).

    Example:
        >>> import numpy as np
        >>> isin(np.array([1.0, 2.0, 3.0]), [2.0, 5.0]).tolist()
        [False, True, False]
    """
    element, tests = _operand(element), shp.ravel(_operand(test_elements))
    pairs = shp.expand_dims(element, -1) == tests
    found = red.any(pairs, axis=-1)
    return ~found if invert else found


def _indices_from(name: str, indices):
    def f(arr, k=0):
        shape = shape_of(_operand(arr))
        if len(shape) != 2:
            raise ValueError("input array must be 2-d")
        return indices(shape[-2], k=k, m=shape[-1])

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""`numpy.{name}`: the indices for an array of `arr`'s shape (constants).

    Example:
        >>> import numpy as np
        >>> [i.tolist() for i in {name}(np.ones((2, 2)))]
        {[i.tolist() for i in indices(2, k=0, m=2)]}
    """
    return f


tril_indices_from = _indices_from("tril_indices_from", np.tril_indices)
triu_indices_from = _indices_from("triu_indices_from", np.triu_indices)


def diag_indices_from(arr):
    """`numpy.diag_indices_from`: the indices of the main diagonal (constants).

    Example:
        >>> import numpy as np
        >>> diag_indices_from(np.ones((2, 2)))
        (array([0, 1]), array([0, 1]))
    """
    shape = shape_of(_operand(arr))
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


def unique_values(x):
    """`numpy.unique_values`: the distinct values (a constant).

    Example:
        >>> import numpy as np
        >>> unique_values(np.array([2.0, 1.0, 2.0]))
        array([1., 2.])
    """
    return np.unique_values(concrete_values(_operand(x), "unique_values"))


def unique_counts(x):
    """`numpy.unique_counts`: the distinct values and their counts (constants).

    Example:
        >>> import numpy as np
        >>> unique_counts(np.array([2.0, 1.0, 2.0])).counts
        array([1, 2])
    """
    return np.unique_counts(concrete_values(_operand(x), "unique_counts"))


def unique_inverse(x):
    """`numpy.unique_inverse`: the distinct values and where each element's is (constants).

    Example:
        >>> import numpy as np
        >>> unique_inverse(np.array([2.0, 1.0, 2.0])).inverse_indices
        array([1, 0, 1])
    """
    return np.unique_inverse(concrete_values(_operand(x), "unique_inverse"))


def unique_all(x):
    """`numpy.unique_all`: values, indices, inverse indices and counts (constants).

    Example:
        >>> import numpy as np
        >>> unique_all(np.array([2.0, 1.0, 2.0])).indices
        array([1, 0])
    """
    return np.unique_all(concrete_values(_operand(x), "unique_all"))


# ---------------------------------------------------------------------------------------------
# Functions applied along axes.


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`numpy.apply_along_axis`: `func1d` of each 1-d slice along `axis`, its results
    stacked where that axis was (differentiable through `func1d`; one call per slice).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> apply_along_axis(lambda v: anp.sum(v ** 2), 1, np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([ 5., 25.])
    """
    arr = _operand(arr)
    nd = ndim_of(arr)
    axis = normalize_axis_index(axis, nd)
    moved = shp.moveaxis(arr, axis, -1)
    outer = shape_of(moved)[:-1]
    if math.prod(outer) == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    rows = shp.reshape(moved, (-1, shape_of(moved)[-1]))
    results = [
        _operand(func1d(getitem(rows, i), *args, **kwargs)) for i in range(shape_of(rows)[0])
    ]
    out = shp.stack(results)
    res_shape = shape_of(out)[1:]
    out = shp.reshape(out, outer + res_shape)
    # the function's axes go where `axis` was
    n_res = len(res_shape)
    order = (
        list(range(axis))
        + list(range(len(outer), len(outer) + n_res))
        + list(range(axis, len(outer)))
    )
    return shp.transpose(out, order) if order != list(range(len(order))) else out


def apply_over_axes(func, a, axes):
    """`numpy.apply_over_axes`: `func(a, axis)` for each axis in turn, keeping the reduced
    axes (differentiable through `func`).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> apply_over_axes(anp.sum, np.arange(6.0).reshape(2, 3), [0, 1])
        array([[15.]])
    """
    val = _operand(a)
    n = ndim_of(val)
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if ndim_of(res) == ndim_of(val):
            val = res
        else:
            res = shp.expand_dims(res, axis)
            if ndim_of(res) == ndim_of(val):
                val = res
            else:
                raise ValueError("function is not returning an array of the correct shape")
    return val


# ---------------------------------------------------------------------------------------------
# The array API's vector products (NumPy 2's gufuncs).


def vecdot(x1, x2, /, *, axis=-1):
    """`numpy.vecdot`: sum(conj(x1) * x2) along `axis` (broadcasting the rest), differentiable.

    Example:
        >>> import numpy as np
        >>> vecdot(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
        array([3., 7.])
    """
    x1, x2 = _operand(x1), _operand(x2)
    return red.sum(ew.conj(x1) * x2, axis=axis)


def matvec(x1, x2, /):
    """`numpy.matvec`: matrix times vector over the last axes (broadcasting), differentiable.

    Example:
        >>> import numpy as np
        >>> matvec(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
        array([3., 7.])
    """
    x1, x2 = _operand(x1), _operand(x2)
    return einsum("...ij,...j->...i", x1, x2)


def vecmat(x1, x2, /):
    """`numpy.vecmat`: conj(vector) times matrix over the last axes (broadcasting).

    Example:
        >>> import numpy as np
        >>> vecmat(np.array([1.0, 1.0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([4., 6.])
    """
    x1, x2 = _operand(x1), _operand(x2)
    return einsum("...j,...ji->...i", ew.conj(x1), x2)


FUNCTIONS = {
    f.__name__: f
    for f in (
        cumsum,
        cumprod,
        nancumsum,
        nancumprod,
        sort,
        argsort,
        searchsorted,
        unique,
        pad,
        roll,
        diagonal,
        diag,
        trace,
        triu,
        tril,
        kron,
        cross,
        diff,
        interp,
        nan_to_num,
        nansum,
        nanprod,
        nanmean,
        correlate,
        convolve,
        meshgrid,
        vander,
        polyval,
        insert,
        delete,
        resize,
        block,
        diagflat,
        select,
        choose,
        piecewise,
        compress,
        extract,
        partition,
        argpartition,
        sort_complex,
        lexsort,
        trim_zeros,
        nonzero,
        flatnonzero,
        argwhere,
        isin,
        tril_indices_from,
        triu_indices_from,
        diag_indices_from,
        unique_values,
        unique_counts,
        unique_inverse,
        unique_all,
        apply_along_axis,
        apply_over_axes,
        vecdot,
        matvec,
        vecmat,
    )
}
