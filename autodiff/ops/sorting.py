"""Sorting and gathering primitives: argsort, searchsorted, a gather along an axis with an
index operand and its transpose, unique.

- `argsort_p` and `searchsorted_p`: integer results, constants under every transform.
- `gather_p` / `scatter_add_along_p`: `take_along_axis` with an index *operand*, and its
  transpose. Indices computed from traced values (argsort, searchsorted) stay traced, so
  `sort = gather(a, argsort(a))` and interp's knot lookup work under vmap too; sort's
  gradient is scattered back through the permutation.
- `unique_p`: `np.unique` on concrete values (a constant; no vmap, its shape depends on data).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.abstract import ShapedArray, shape_with_length, shaped_like
from autodiff.core.errors import ConcretizationError
from autodiff.core.primitive import Primitive, bind
from autodiff.kernels.scatter import scatter_add_rows
from autodiff.ops import series
from autodiff.ops import shape as shp
from autodiff.ops.cumulative import axis_batch_rule
from autodiff.ops.sparsity import MOVEMENT, accumulation
from autodiff.ops.structural import (
    apply_linear,
    batch_in_front,
    batch_size,
    move_batch_axis,
    move_to_front,
    ndim_of,
    shape_of,
)

argsort_p = Primitive("argsort", differentiable=False)
argsort_p.impl = lambda x, *, axis, kind, stable: np.argsort(x, axis, kind=kind, stable=stable)
argsort_p.abstract_eval = lambda x, *, axis, kind, stable: ShapedArray(x.shape, np.intp)
argsort_p.batch = axis_batch_rule(argsort_p)


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
    return take_along(x, _index_front(values[1], dims[1]), axis + 1), 0


gather_p = Primitive("gather")
gather_p.sparsity = MOVEMENT
gather_p.impl = lambda x, idx, *, axis: np.take_along_axis(x, idx, axis)
gather_p.abstract_eval = _gather_abstract_eval
gather_p.jvp = lambda primals, tangents, *, out, axis: apply_linear(
    take_along, tangents[0], primals[1], axis
)
gather_p.vjp = lambda g, x, idx, *, out, axis: (
    scatter_add_along(g, idx, axis, shape_of(x)),
    None,
)
gather_p.batch = _gather_batch
gather_p.taylor = series.linear_rule(gather_p)


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


def _scatter_add_along_batch(values, dims, *, axis, shape):
    size = batch_size(values, dims)
    v = move_batch_axis(values[0], dims[0], 0, size)
    idx = _index_front(values[1], dims[1])
    return scatter_add_along(v, idx, axis + 1, (size,) + shape), 0


def _scatter_along_targets(out_ids, values, idx, *, axis, shape):
    """For each element of values, the id of the output element it adds into."""
    kept = tuple(slice(0, n) if d != axis else slice(None) for d, n in enumerate(values.shape))
    idx = np.broadcast_to(idx, values.shape) % shape[axis]
    return np.take_along_axis(out_ids[kept], idx, axis)


scatter_add_along_p = Primitive("scatter_add_along")
scatter_add_along_p.sparsity = accumulation(_scatter_along_targets)
scatter_add_along_p.impl = _scatter_add_along_impl
scatter_add_along_p.abstract_eval = lambda values, idx, *, axis, shape: shaped_like(values, shape)
scatter_add_along_p.jvp = lambda primals, tangents, *, out, axis, shape: apply_linear(
    scatter_add_along, tangents[0], primals[1], axis, shape
)
scatter_add_along_p.vjp = lambda g, values, idx, *, out, axis, shape: (
    take_along(g, idx, axis),
    None,
)
scatter_add_along_p.batch = _scatter_add_along_batch
scatter_add_along_p.taylor = series.linear_rule(scatter_add_along_p)


def take_along(x, idx, axis: int):
    """`take_along_axis(x, idx, axis)`; `idx` may be traced (by vmap), its size-1 axes broadcast."""
    return bind(gather_p, x, idx, axis=normalize_axis_index(axis, ndim_of(x)))


def scatter_add_along(values, idx, axis: int, shape: tuple):
    """Zeros of `shape` plus `values` at the positions `take_along` reads (repeats accumulate)."""
    return bind(scatter_add_along_p, values, idx, axis=axis, shape=tuple(shape))


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
