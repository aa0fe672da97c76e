"""The indexing primitives getitem (a gather), scatter_add and index_set, with their rules, and
the canonical index they take.

`getitem_p` applies a NumPy index; `scatter_add_p` adds values of the indexed shape into
zeros at the indexed positions (repeats accumulate): each is the other's transpose.
`index_set_p` writes values at the indexed positions (of repeated positions, the last
write wins, as in NumPy). The index lives in the `index` param and is a constant: a
Tensor in it is read as its concrete value and never differentiated. An integer array
that has no single value — it varies under vmap, or is a tracer of any transform — is
instead passed as a primitive argument, marked `ARG` in `index`; such an index is kept
in canonical form (one entry per dimension, no Ellipsis, boolean masks as their
`nonzero()` arrays), which is what its batch rules rely on. The functions users call
(getitem, index_set, take, ...) are ops/index.py's.
"""

from __future__ import annotations

import math

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)

from autodiff.core.abstract import same_aval, shaped_like
from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.kernels.scatter import scatter_add_rows
from autodiff.ops import series
from autodiff.ops.elementwise import astype, equal, where
from autodiff.ops.numpy_forms import define_numpy, vjp_rules
from autodiff.ops.shape import stack
from autodiff.ops.sparsity import MOVEMENT, accumulation
from autodiff.ops.structural import (
    batch_size,
    broadcast_to,
    move_batch_axis,
    move_to_front,
    reshape,
    shape_of,
)

_BASIC_TYPES = (int, np.integer, slice, type(Ellipsis), type(None))


# ---------------------------------------------------------------------------------------------
# Concrete indices.


def _concrete(part):
    """Tensors (at any level) become their values; nested sequences become lists."""
    if isinstance(part, Tensor):
        return part.primal()
    if isinstance(part, (list, tuple)):
        return [_concrete(p) for p in part]
    return part


def _index_part(part):
    if isinstance(part, _BASIC_TYPES) or type(part) is ndarray:
        return part
    if isinstance(part, Tensor):
        try:
            return np.asarray(part.primal())
        except TypeError as e:  # a boolean mask under vmap
            raise TypeError(
                "A boolean mask that varies under vmap selects a different number of elements "
                "in each example: use anp.where(mask, x, 0) instead."
            ) from e
    if isinstance(part, (list, tuple)):
        arr = np.asarray(_concrete(part))
        # NumPy reads an empty list as an empty integer index (np.asarray([]) is float64).
        return arr.astype(np.intp) if arr.size == 0 and arr.dtype == np.float64 else arr
    return part


def _is_basic(index: tuple) -> bool:
    """Only ints, slices, Ellipsis and None: the result is a view, no position repeats."""
    return all(isinstance(p, _BASIC_TYPES) and not isinstance(p, bool) for p in index)


def _dims_used(part) -> int:
    """How many dimensions of the indexed array one (non-Ellipsis) index entry consumes."""
    if part is None or isinstance(part, (bool, np.bool_)):
        return 0
    if isinstance(part, ndarray) and part.dtype == np.bool_:
        return part.ndim
    return 1


def _is_full_slice(part) -> bool:
    return (
        isinstance(part, slice) and part.start is None and part.stop is None and part.step is None
    )


def _is_nonnegative_integer_array(part) -> bool:
    return (
        isinstance(part, ndarray)
        and part.dtype.kind in "iu"
        and (part.size == 0 or part.min() >= 0)
    )


def _row_positions(shape: tuple, index: tuple) -> tuple[ndarray, int]:
    """The rows `index` selects in the C-ordered `(rows, inner)` view of an array of `shape`.

    `inner` is the size of the trailing dimensions that `index` takes whole; the result
    of `x[index]` is then `rows.shape + those dimensions`, row by row.
    """
    ndim = len(shape)
    parts = list(index)
    ellipsis_dims = ndim - sum(_dims_used(p) for p in parts if p is not Ellipsis)
    trailing = 0 if any(p is Ellipsis for p in parts) else ellipsis_dims
    while parts and (parts[-1] is Ellipsis or _is_full_slice(parts[-1])):
        trailing += ellipsis_dims if parts.pop() is Ellipsis else 1
    lead = shape[: ndim - trailing]
    inner = int(np.prod(shape[ndim - trailing :], dtype=np.int64))
    if len(parts) == 1 and _is_nonnegative_integer_array(parts[0]):
        return parts[0].astype(np.intp, copy=False), inner  # x[rows, ...]: rows as they are
    rows = np.arange(int(np.prod(lead, dtype=np.int64)), dtype=np.intp).reshape(lead)
    return rows[tuple(parts)], inner


# ---------------------------------------------------------------------------------------------
# Traced index arrays: primitive arguments, marked ARG in a canonical index.


class _Arg:
    """The mark of an index entry whose integer array is a primitive argument."""

    __slots__ = ()

    def __repr__(self):
        return "ARG"

    def __reduce__(self):
        return "ARG"  # copies and pickles stay the one instance


ARG = _Arg()


def fill_index(index: tuple, arrays) -> tuple:
    """`index` with its ARG marks replaced, in order, by `arrays`."""
    if not arrays:
        return index
    it = iter(arrays)
    return tuple(next(it) if isinstance(p, _Arg) else p for p in index)


def _holds_traced(part) -> bool:
    """An integer Tensor that is not a concrete level-0 value (or a list holding one)."""
    if isinstance(part, Tensor):
        return part._trace is not EVAL_TRACE and part.dtype != np.bool_
    if isinstance(part, (list, tuple)):
        return any(_holds_traced(p) for p in part)
    return False


def _traced_array(part):
    """A traced index array (a list holding traced entries is stacked), checked to be integer."""
    if isinstance(part, (list, tuple)):
        part = stack([_traced_array(p) if _holds_traced(p) else np.asarray(p) for p in part])
    if not np.issubdtype(dtype_of(part), np.integer):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer "
            "or boolean arrays are valid indices"
        )
    return part


class TracedSliceBounds(IndexError):
    """An index holds a slice with traced bounds (`x[i:i + 3]` under vmap or jit), which a
    stored index cannot: `split_index` raises it, and its callers take the path of dynamic
    slices (`dynamic_parts`) instead."""


def _check_slice(part: slice) -> None:
    if _traced_slice(part):
        raise TracedSliceBounds(
            "a slice with traced bounds selects its elements at run time: index a Tensor "
            "with it (x[i:i + 3]), or use autodiff.dynamic_slice"
        )


def split_index(shape: tuple, index) -> tuple[tuple, tuple]:
    """`index` (into an array of `shape`) as `(stored index, index-array arguments)`.

    Without traced arrays, the stored index is `index` as a tuple with concrete NumPy arrays
    and there are no arguments; with them, it is canonical and marks their places with ARG.
    A slice with traced bounds raises `TracedSliceBounds`.
    """
    parts = index if isinstance(index, tuple) else (index,)
    stored = []
    for p in parts:
        if type(p) is slice:  # (bounds that are Tensors: checked, inline, for every index)
            if (
                type(p.start) in TENSOR_TYPES
                or type(p.stop) in TENSOR_TYPES
                or type(p.step) in TENSOR_TYPES
            ):
                _check_slice(p)
        elif isinstance(p, (Tensor, list, tuple)) and _holds_traced(p):
            break
        stored.append(_index_part(p))
    else:
        return tuple(stored), ()
    entries, arrays = [], []
    for p in parts:
        if type(p) is slice:
            _check_slice(p)
        if _holds_traced(p):
            entries.append(ARG)
            arrays.append(_traced_array(p))
        else:
            entries.append(_index_part(p))
    return _canonical(entries, shape), tuple(arrays)


def _canonical(entries: list, shape: tuple) -> tuple:
    """One entry per dimension of `shape` (Ellipsis expanded), boolean masks as integer arrays."""
    ndim = len(shape)
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_dims_used(e) for e in entries if e is not Ellipsis)
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    at = next((i for i, e in enumerate(entries) if e is Ellipsis), len(entries))
    entries = entries[:at] + [slice(None)] * (ndim - used) + entries[at + 1 :]
    out, dim = [], 0
    for e in entries:
        if isinstance(e, (bool, np.bool_)) or (isinstance(e, ndarray) and e.dtype == np.bool_):
            if np.ndim(e) == 0:
                raise NotImplementedError(
                    "a 0-d boolean index together with a traced index array is not supported"
                )
            if e.shape != shape[dim : dim + e.ndim]:
                raise IndexError(
                    f"boolean index of shape {e.shape} does not match the indexed dimensions "
                    f"{shape[dim : dim + e.ndim]}"
                )
            out.extend(np.nonzero(e))
            dim += e.ndim
        else:
            out.append(e)
            dim += e is not None
    return tuple(out)


def _advanced(index: tuple) -> list[int]:
    """Positions of a canonical index's array (and integer) entries."""
    return [k for k, p in enumerate(index) if p is not None and not isinstance(p, slice)]


def _block_position(index: tuple) -> int:
    """Where a canonical index's broadcast array dimensions go in the result: in place of the
    arrays when they are adjacent, else first (NumPy's rule)."""
    adv = _advanced(index)
    return adv[0] if adv == list(range(adv[0], adv[0] + len(adv))) else 0


def _first_indexed_axis(index: tuple) -> int:
    """The dimension of the indexed array that a canonical index's first array indexes."""
    return sum(p is not None for p in index[: _advanced(index)[0]])


def _entry_shapes(index: tuple, arrays, dims=None) -> list[tuple]:
    """Per-example shapes of a canonical index's array entries (`dims`: the arrays' batch axes)."""
    dims = dims or (None,) * len(arrays)
    found = iter(zip(arrays, dims))
    shapes = []
    for k in _advanced(index):
        if isinstance(index[k], _Arg):
            a, d = next(found)
            s = shape_of(a)
            shapes.append(s if d is None else s[:d] + s[d + 1 :])
        else:
            shapes.append(np.shape(index[k]))
    return shapes


def filled(shape: tuple, value, dtype) -> ndarray:
    """A read-only array of `shape` holding `value` everywhere, in no memory (zero strides)."""
    out = ndarray(shape, dtype, np.full(1, value, dtype), 0, (0,) * len(shape))
    out.flags.writeable = False
    return out


_PROBE = np.zeros(1, np.int8)
_zeros = np.zeros


def selection_shape(shape: tuple, index: tuple, arrays=()) -> tuple:
    """The shape of `x[index]` for an `x` of `shape` (a stored index and its arguments)."""
    if not arrays:  # index a zero-stride probe of that shape
        return ndarray(shape, np.int8, _PROBE, 0, (0,) * len(shape))[index].shape
    try:
        block = np.broadcast_shapes(*_entry_shapes(index, arrays))
    except ValueError as e:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together") from e
    dims, dim = [], 0
    for p in index:
        if p is None:
            dims.append(1)
        elif isinstance(p, slice):
            dims.append(len(range(*p.indices(shape[dim]))))
        dim += p is not None
    at = _block_position(index)
    return tuple(dims[:at]) + block + tuple(dims[at:])


def conform_value(value, x, shape: tuple):
    """`value` cast to `x`'s dtype and broadcast to `shape`, as NumPy item assignment does."""
    dtype = dtype_of(x)
    if not isinstance(value, Tensor):  # a constant: plain NumPy
        value = np.asarray(value)
        value = value if value.dtype == dtype else value.astype(dtype)
    else:
        value = astype(value, dtype)
    vshape = shape_of(value)
    extra = max(len(vshape) - len(shape), 0)
    if any(n != 1 for n in vshape[:extra]) or any(
        v not in (1, n) for v, n in zip(vshape[::-1], shape[::-1])
    ):
        raise ValueError(f"could not broadcast input array from shape {vshape} into shape {shape}")
    if extra:
        value = reshape(value, vshape[extra:])
    return value if vshape == shape else broadcast_to(value, shape)


def _traced_bound(bound) -> bool:
    return isinstance(bound, Tensor) and bound._trace is not EVAL_TRACE


def _traced_slice(part: slice) -> bool:
    return _traced_bound(part.start) or _traced_bound(part.stop) or _traced_bound(part.step)


# ---------------------------------------------------------------------------------------------
# Batch rules' index bookkeeping: where the batch axis goes, and the index that keeps it.


def _batched_axis(index: tuple, ndim: int) -> int:
    """Where axis 0 of a batch `xs` of rank-`ndim` arrays lands in `xs[(slice(None),) + index]`.

    It is 0 unless the advanced indices are separated, which moves their broadcast axes
    first; a probe of size-1 axes (and a batch of 2) finds it under every NumPy rule.
    """

    def probe(p):
        if isinstance(p, slice):
            return slice(None)
        if isinstance(p, (bool, np.bool_)):
            return True
        if isinstance(p, ndarray):
            ones = (1,) * p.ndim
            return np.ones(ones, bool) if p.dtype == np.bool_ else np.zeros(ones, int)
        return 0 if isinstance(p, (int, np.integer)) else p

    batch = np.arange(2).reshape((2,) + (1,) * ndim)
    return batch[(slice(None),) + tuple(probe(p) for p in index)].shape.index(2)


def _batch_index(index: tuple, arrays, dims, size: int, batched_x: bool) -> tuple[tuple, tuple]:
    """A canonical `index` and its arguments, applied example by example to a batch.

    Batched arrays get their batch axis first, ahead of the broadcast of all the index
    arrays. A batched indexed array, its batch axis at `_first_indexed_axis(index)`, is
    indexed there by one more array, an arange over the batch, placed just before the
    others: NumPy's placement of the broadcast block is unchanged, so the result has the
    per-example layout with the batch axis at `_block_position(index)`.
    """
    rank = max(len(s) for s in _entry_shapes(index, arrays, dims))
    moved = []
    for a, d in zip(arrays, dims):
        if d is not None:
            a = move_to_front(a, d)
            s = shape_of(a)
            a = reshape(a, s[:1] + (1,) * (rank + 1 - len(s)) + s[1:])
        moved.append(a)
    if batched_x:
        k = _advanced(index)[0]
        index = index[:k] + (np.arange(size).reshape((size,) + (1,) * rank),) + index[k:]
    return index, tuple(moved)


# ---------------------------------------------------------------------------------------------
# Primitives. Index arrays that are arguments come last and get no cotangent.


def gather(x, index: tuple, arrays=()):
    """`x[index]` for a stored index (as `split_index` gives it) and its array arguments."""
    return bind(getitem_p, x, *arrays, index=index)


def scatter(values, shape: tuple, index: tuple, arrays=()):
    """`scatter_add` for a stored index (as `split_index` gives it) and its array arguments."""
    return bind(scatter_add_p, values, *arrays, shape=tuple(shape), index=index)


def _scatter_numpy(values, shape: tuple, index: tuple, arrays=()):
    """`scatter` on NumPy values: scatter_add's impl."""
    if not arrays and len(index) == 1 and type(index[0]) is int:  # x[i]: the commonest index
        out = _zeros(shape, values.dtype if type(values) is ndarray else np.asarray(values).dtype)
        out[index] = values
        return out
    index = fill_index(index, arrays)
    values = np.asarray(values)
    size = math.prod(shape)
    if size == 0 or _is_basic(index):
        out = np.zeros(shape, values.dtype)
        out[index] = values  # a basic index selects each position at most once
        return out
    rows, inner = _row_positions(shape, index)
    rows = rows.ravel()
    summed = scatter_add_rows(rows, values.reshape(rows.size, inner), size // inner)
    return summed.reshape(shape)


define_numpy(scatter, _scatter_numpy)


scatter_add_p = Primitive("scatter_add")
scatter_add_p.sparsity = accumulation(
    lambda out_ids, values, *arrays, shape, index: out_ids[fill_index(index, arrays)]
)
scatter_add_p.saves_inputs = False  # its vjp reads only shapes and dtypes
scatter_add_p.saves_output = False
scatter_add_p.impl = lambda values, *arrays, shape, index: _scatter_numpy(
    values, shape, index, arrays
)
scatter_add_p.abstract_eval = lambda values, *arrays, shape, index: shaped_like(values, shape)
scatter_add_p.jvp = lambda primals, tangents, *, out, shape, index: (
    None if tangents[0] is None else scatter(tangents[0], shape, index, primals[1:])
)
scatter_add_p.vjp = lambda g, values, *arrays, out, shape, index: (
    (gather(g, index, arrays),) + (None,) * len(arrays)
)


def _scatter_add_batch(values, dims, *, shape, index):
    v, arrays = values[0], values[1:]
    size = batch_size(values, dims)
    if not arrays:
        v = move_batch_axis(v, dims[0], _batched_axis(index, len(shape)), size)
        return scatter(v, (size,) + shape, (slice(None),) + index), 0
    index_b, arrays = _batch_index(index, arrays, dims[1:], size, True)
    v = move_batch_axis(v, dims[0], _block_position(index), size)
    axis = _first_indexed_axis(index)
    return scatter(v, shape[:axis] + (size,) + shape[axis:], index_b, arrays), axis


scatter_add_p.batch = _scatter_add_batch
scatter_add_p.taylor = series.linear_rule(scatter_add_p)


getitem_p = Primitive("getitem")
getitem_p.sparsity = MOVEMENT
getitem_p.saves_inputs = False  # its vjp reads only shapes and dtypes
getitem_p.saves_output = False
getitem_p.impl = lambda x, *arrays, index: x[fill_index(index, arrays) if arrays else index]
getitem_p.abstract_eval = lambda x, *arrays, index: shaped_like(
    x, selection_shape(x.shape, index, arrays)
)
getitem_p.jvp = lambda primals, tangents, *, out, index: (
    None if tangents[0] is None else gather(tangents[0], index, primals[1:])
)


def _getitem_batch(values, dims, *, index):
    x, arrays = values[0], values[1:]
    size = batch_size(values, dims)
    if not arrays:
        x = move_batch_axis(x, dims[0], 0, size)
        return gather(x, (slice(None),) + index), _batched_axis(index, len(shape_of(x)) - 1)
    # An unbatched x (a table read per example) is not broadcast: only the arrays carry the batch.
    index_b, arrays = _batch_index(index, arrays, dims[1:], size, dims[0] is not None)
    if dims[0] is not None:
        x = move_batch_axis(x, dims[0], _first_indexed_axis(index), size)
    return gather(x, index_b, arrays), _block_position(index)


getitem_p.batch = _getitem_batch
getitem_p.taylor = series.linear_rule(getitem_p)


def _getitem_vjp(g, out, x, *arrays, index):
    ct = scatter(g, shape_of(x), index, arrays)
    return (ct,) + (None,) * len(arrays) if arrays else (ct,)


vjp_rules(getitem_p, _getitem_vjp)


def _index_set_impl(x, value, *arrays, index):
    out = np.array(x, copy=True)
    out[fill_index(index, arrays)] = value
    return out


def _index_set_jvp(primals, tangents, *, out, index):
    x, value, *arrays = primals
    tx, tv = tangents[:2]
    if tx is None and tv is None:
        return None
    tx = filled(shape_of(x), 0, dtype_of(out)) if tx is None else tx
    tv = filled(shape_of(value), 0, dtype_of(out)) if tv is None else tv
    return bind(index_set_p, tx, tv, *arrays, index=index)


def _index_set_vjp(g, x, value, *arrays, out, index):
    # `value` has the shape of x[index]; of repeated positions only the write that landed
    # gets a cotangent, and the written positions of x get none.
    ct_x = bind(index_set_p, g, filled(shape_of(value), 0, dtype_of(g)), *arrays, index=index)
    ct_value = gather(g, index, arrays)
    landed = _landed_writes(shape_of(x), index, arrays, shape_of(value))
    if landed is not None:
        ct_value = where(landed, ct_value, 0.0)
    return (ct_x, ct_value) + (None,) * len(arrays)


def _landed_writes(shape: tuple, index: tuple, arrays, selected: tuple):
    """Which elements of `x[index]` index_set keeps (of repeated positions the last one, as
    NumPy does), found by writing their order; None when it keeps them all."""
    if not arrays and _is_basic(index):
        return None
    order = np.arange(int(np.prod(selected, dtype=np.int64)), dtype=np.intp).reshape(selected)
    written = bind(index_set_p, filled(shape, 0, np.intp), order, *arrays, index=index)
    landed = equal(gather(written, index, arrays), order)
    return None if isinstance(landed, ndarray) and landed.all() else landed


index_set_p = Primitive("index_set")
index_set_p.sparsity = MOVEMENT
index_set_p.impl = _index_set_impl
# Its rule reads the shapes of x and value and the index arrays only (as torch's index_put_,
# which saves neither): a write into x after `x[i] = v` does not invalidate the graph.
index_set_p.saves_inputs = False
index_set_p.saves_output = False
index_set_p.abstract_eval = same_aval  # (a copy of x, written into)
index_set_p.jvp = _index_set_jvp
index_set_p.vjp = _index_set_vjp


def update_batch_rule(prim: Primitive):
    """The batch rule of an indexed update `prim(x, value, *index_arrays, index=...)`, whose
    `value` has the shape of `x[index]`."""

    def rule(values, dims, *, index):
        x, value, arrays = values[0], values[1], values[2:]
        size = batch_size(values, dims)
        if arrays:
            index_b, arrays = _batch_index(index, arrays, dims[2:], size, True)
            x_axis, value_axis = _first_indexed_axis(index), _block_position(index)
        else:
            ndim = len(shape_of(x)) - (dims[0] is not None)
            index_b, x_axis, value_axis = (slice(None),) + index, 0, _batched_axis(index, ndim)
        x = move_batch_axis(x, dims[0], x_axis, size)
        value = move_batch_axis(value, dims[1], value_axis, size)
        return bind(prim, x, value, *arrays, index=index_b), x_axis

    return rule


index_set_p.batch = update_batch_rule(index_set_p)
index_set_p.taylor = series.linear_rule(index_set_p)
