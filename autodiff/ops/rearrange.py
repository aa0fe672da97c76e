"""The primitives that rearrange elements: flip, copy, concatenate and split, stack and unstack,
repeat and segment_sum, each with its rules.

Every primitive here only moves or copies elements, so each is linear: its jvp applies the same
op to the tangent and its vjp is its transpose (the same flip, split <-> concatenate, stack <->
unstack, repeat <-> segment_sum). NumPy's shape functions (ops/shape.py) are built on them.
Batch rules get `dims[i]`, the batch axis of `values[i]` (None: unbatched); axis params are per
example, and the batch axis stays where it is unless a rule says otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.abstract import (
    ShapedArray,
    array_result_type,
    same_aval,
    shape_with_length,
    shaped_like,
)
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import series
from autodiff.ops.elementwise import add, cotangent_of
from autodiff.ops.numpy_forms import cotangents_of, define_numpy, vjp_rules
from autodiff.ops.sparsity import MOVEMENT, accumulation
from autodiff.ops.structural import apply_linear, axis_in_batched, batch_in_front, shape_of

# ---------------------------------------------------------------------------------------------
# flip and copy.


flip_p = Primitive("flip")
flip_p.sparsity = MOVEMENT
flip_p.saves_inputs = False  # its vjp reads only shapes and dtypes
flip_p.saves_output = False
flip_p.impl = lambda x, axis: np.flip(x, axis)
flip_p.abstract_eval = same_aval
flip_p.jvp = lambda primals, tangents, *, out, axis: apply_linear(_flip, tangents[0], axis)
flip_p.vjp = lambda g, x, *, out, axis: (_flip(g, axis),)


def _flip_batch(values, dims, *, axis):
    x, bdim = values[0], dims[0]
    n = len(shape_of(x)) - 1
    axes = range(n) if axis is None else normalize_axis_tuple(axis, n)
    return _flip(x, tuple(axis_in_batched(a, bdim) for a in axes)), bdim


flip_p.batch = _flip_batch
flip_p.taylor = series.linear_rule(flip_p)


def _flip(x, axis):
    return bind(flip_p, x, axis=axis)


copy_p = Primitive("copy")  # the identity, as a fresh array
copy_p.sparsity = MOVEMENT
copy_p.saves_inputs = False  # its vjp reads only shapes and dtypes
copy_p.saves_output = False
copy_p.impl = np.copy
copy_p.abstract_eval = same_aval
copy_p.jvp = lambda primals, tangents, *, out: tangents[0]
copy_p.vjp = lambda g, x, *, out: (g,)
copy_p.batch = lambda values, dims: (bind(copy_p, values[0]), dims[0])
copy_p.taylor = series.linear_rule(copy_p)


# ---------------------------------------------------------------------------------------------
# unstack, concatenate and stack.


def _unstack_impl(x, axis):
    if axis == 0:
        return tuple(x)  # an ndarray iterates over views of its rows
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(x.shape[axis]))


def _unstack_vjp(cts, x, *, out, axis):
    if all(ct is None for ct in cts):
        return (None,)
    shape, dt = shape_of(x), dtype_of(x)
    piece = shape[:axis] + shape[axis + 1 :]
    filled = [np.zeros(piece, dt) if ct is None else ct for ct in cts]
    return (bind(stack_p, *filled, axis=axis, dtype=None, casting="same_kind"),)


unstack_p = Primitive("unstack", multiple_results=True)
unstack_p.sparsity = MOVEMENT
unstack_p.saves_inputs = False  # its vjp reads only shapes and dtypes
unstack_p.impl = _unstack_impl
unstack_p.abstract_eval = lambda x, *, axis: (
    (shaped_like(x, x.shape[:axis] + x.shape[axis + 1 :]),) * x.shape[axis]
)
unstack_p.jvp = lambda primals, tangents, *, out, axis: (
    None if tangents[0] is None else bind(unstack_p, tangents[0], axis=axis)
)
unstack_p.vjp = _unstack_vjp


def _unstack_batch(values, dims, *, axis):
    bdim = dims[0]
    x = values[0]
    n = shape_of(x)[axis_in_batched(axis, bdim)]
    return bind(unstack_p, x, axis=axis_in_batched(axis, bdim)), (bdim - (axis < bdim),) * n


unstack_p.batch = _unstack_batch
unstack_p.taylor = series.linear_rule(unstack_p)


def _unstack(x, axis: int):
    return bind(unstack_p, x, axis=axis)


define_numpy(_unstack, _unstack_impl)


def _joined_dtype(arrays, dtype) -> np.dtype:
    """The dtype of concatenate and stack: `dtype=`, else the arrays' promoted."""
    return np.dtype(dtype) if dtype is not None else array_result_type(*arrays)


def _concatenate_abstract_eval(*arrays, axis, dtype, casting):
    first = arrays[0]
    axis = normalize_axis_index(axis, first.ndim)
    for a in arrays:
        if shape_with_length(a.shape, axis, 0) != shape_with_length(first.shape, axis, 0):
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match "
                f"exactly, but shapes {first.shape} and {a.shape} differ"
            )
    length = sum(a.shape[axis] for a in arrays)
    return ShapedArray(shape_with_length(first.shape, axis, length), _joined_dtype(arrays, dtype))


def _concatenate_vjp(g, *arrays, out, axis, dtype, casting):
    axis = normalize_axis_index(axis, len(shape_of(out)))
    if len(arrays) == 1:
        return (cotangent_of(g, arrays[0]),)
    ranges, start = [], 0
    for a in arrays:
        stop = start + shape_of(a)[axis]
        ranges.append((start, stop))
        start = stop
    return cotangents_of(bind(split_p, g, ranges=tuple(ranges), axis=axis), arrays)


concatenate_p = Primitive("concatenate")
concatenate_p.sparsity = MOVEMENT
concatenate_p.saves_inputs = False  # its vjp reads only shapes and dtypes
concatenate_p.saves_output = False
concatenate_p.impl = lambda *arrays, axis, dtype, casting: np.concatenate(
    arrays, axis=axis, dtype=dtype, casting=casting
)
concatenate_p.abstract_eval = _concatenate_abstract_eval
concatenate_p.vjp = _concatenate_vjp


def _concatenate_batch(values, dims, *, axis, dtype, casting):
    front = batch_in_front(values, dims)
    axis = normalize_axis_index(axis, len(shape_of(front[0])) - 1) + 1
    return bind(concatenate_p, *front, axis=axis, dtype=dtype, casting=casting), 0


concatenate_p.batch = _concatenate_batch


def _linear_jvp(p):
    """The jvp of concatenate or stack, linear in every operand: the op on the tangents, with
    symbolic zeros as zeros in the output dtype (which promote exactly like the primals)."""

    def jvp(primals, tangents, *, out, **params):
        if all(t is None for t in tangents):
            return None
        dt = dtype_of(out)
        filled = [np.zeros(shape_of(x), dt) if t is None else t for x, t in zip(primals, tangents)]
        return bind(p, *filled, **params)

    return jvp


concatenate_p.jvp = _linear_jvp(concatenate_p)
concatenate_p.taylor = series.linear_rule(concatenate_p)


def _concatenate(arrays, axis: int):
    return bind(concatenate_p, *arrays, axis=axis, dtype=None, casting="same_kind")


# stack and unstack are each other's transpose: one node for `np.stack([...])` (a concatenate
# of expanded arrays would record one node per array more, and ODE right-hand sides stack).


def _stack_vjp(g, out, *arrays, axis, dtype, casting):
    pieces = _unstack(g, axis)
    dt = g.dtype
    if is_inexact(dt):  # (each piece has its array's shape: in its dtype, it is its cotangent)
        for a in arrays:
            if a.dtype is not dt:
                return cotangents_of(pieces, arrays)
        return tuple(pieces)
    return cotangents_of(pieces, arrays)


stack_p = Primitive("stack")
stack_p.sparsity = MOVEMENT
stack_p.saves_inputs = False  # its vjp reads only dtypes
stack_p.saves_output = False


def _stack_impl(*arrays, axis, dtype, casting):
    """`np.stack`; along the first axis, arrays of one shape and dtype are concatenated and
    the result reshaped (the same array, without np.stack's Python-level checks: ~2 us
    against ~6 us for three small arrays, and ODE right-hand sides stack at every step)."""
    first = arrays[0]
    if axis == 0 and dtype is None and type(first) is ndarray and first.ndim:
        shape, dt = first.shape, first.dtype
        for a in arrays:  # (a loop, not all() over a generator: this runs once per stack)
            if not (type(a) is ndarray and a.shape == shape and a.dtype == dt):
                break
        else:
            return np.concatenate(arrays, casting=casting).reshape((len(arrays), *shape))
    return np.stack(arrays, axis=axis, dtype=dtype, casting=casting)


def _stack_abstract_eval(*arrays, axis, dtype, casting):
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, len(shape) + 1)
    return ShapedArray(shape[:axis] + (len(arrays),) + shape[axis:], _joined_dtype(arrays, dtype))


stack_p.impl = _stack_impl
stack_p.abstract_eval = _stack_abstract_eval
stack_p.jvp = _linear_jvp(stack_p)


def _stack_batch(values, dims, *, axis, dtype, casting):
    front = batch_in_front(values, dims)
    return bind(stack_p, *front, axis=axis + 1, dtype=dtype, casting=casting), 0


stack_p.batch = _stack_batch
stack_p.taylor = series.linear_rule(stack_p)
vjp_rules(stack_p, _stack_vjp)


# ---------------------------------------------------------------------------------------------
# split.


def _split_impl(x, ranges, axis):
    lead = (slice(None),) * axis
    return tuple(x[lead + (slice(start, stop),)] for start, stop in ranges)


def _split_abstract_eval(x, *, ranges, axis):
    n = x.shape[axis]
    lengths = (len(range(*slice(start, stop).indices(n))) for start, stop in ranges)
    return tuple(shaped_like(x, shape_with_length(x.shape, axis, k)) for k in lengths)


def _tiles(ranges, n: int) -> bool:
    """Do the non-empty ranges cover [0, n) in order, without overlap?"""
    pos = 0
    for start, stop in ranges:
        if stop > start:
            if start != pos:
                return False
            pos = stop
    return pos == n


def _split_vjp(cts, x, *, out, ranges, axis):
    shape = shape_of(x)
    dt = dtype_of(x)

    def zeros(length):
        return np.zeros(shape[:axis] + (length,) + shape[axis + 1 :], dt)

    n = shape[axis]
    if _tiles(ranges, n):  # the transpose of a partition is concatenation
        parts = [
            zeros(stop - start) if ct is None else ct
            for ct, (start, stop) in zip(cts, ranges)
            if stop > start
        ]
        if not parts:
            return (None,)
        return (parts[0] if len(parts) == 1 else _concatenate(parts, axis),)
    total = None  # overlapping or partial pieces: pad each back into place and add
    for ct, (start, stop) in zip(cts, ranges):
        if ct is not None and stop > start:
            padded = _concatenate([zeros(start), ct, zeros(n - stop)], axis)
            total = padded if total is None else add(total, padded)
    return (total,)


split_p = Primitive("split", multiple_results=True)
split_p.sparsity = MOVEMENT
split_p.saves_inputs = False  # its vjp reads only shapes and dtypes
split_p.impl = _split_impl
split_p.abstract_eval = _split_abstract_eval
split_p.jvp = lambda primals, tangents, *, out, ranges, axis: (
    (None,) * len(ranges)
    if tangents[0] is None
    else bind(split_p, tangents[0], ranges=ranges, axis=axis)
)
split_p.vjp = _split_vjp


def _split_batch(values, dims, *, ranges, axis):
    bdim = dims[0]
    pieces = bind(split_p, values[0], ranges=ranges, axis=axis_in_batched(axis, bdim))
    return pieces, (bdim,) * len(ranges)


split_p.batch = _split_batch
split_p.taylor = series.linear_rule(split_p)


# ---------------------------------------------------------------------------------------------
# repeat and segment_sum, its transpose.


def _repeat_counts(repeats, n: int) -> tuple:
    """Per-element repeat counts along an axis of length n, exactly as np.repeat reads `repeats`."""
    if isinstance(repeats, int):
        return (repeats,) * n
    return tuple(np.bincount(np.repeat(np.arange(n), repeats), minlength=n).tolist())


def _segment_sum_impl(x, counts, axis):
    x = np.asarray(x)
    shape = x.shape
    n = len(counts)
    if n and counts.count(counts[0]) == n:  # equal runs: a reshape and one sum
        runs = shape[:axis] + (n, counts[0]) + shape[axis + 1 :]
        return x.reshape(runs).sum(axis=axis + 1, dtype=x.dtype)  # (as reduceat: x's dtype)
    sums = np.zeros(shape[:axis] + (n,) + shape[axis + 1 :], x.dtype)
    nonempty = np.asarray(counts) > 0
    if nonempty.any():  # reduceat over the non-empty runs only: their starts strictly increase
        starts = np.cumsum((0,) + counts[:-1])[nonempty]
        sums[(slice(None),) * axis + (nonempty,)] = np.add.reduceat(x, starts, axis=axis)
    return sums


def _repeat_abstract_eval(x, *, repeats, axis):
    shape = x.shape if axis is not None else (x.size,)  # (axis None: the flattened array)
    axis = 0 if axis is None else axis
    length = sum(_repeat_counts(repeats, shape[axis]))
    return shaped_like(x, shape_with_length(shape, axis, length))


repeat_p = Primitive("repeat")
repeat_p.sparsity = MOVEMENT
repeat_p.saves_inputs = False  # its vjp reads only shapes and dtypes
repeat_p.saves_output = False
repeat_p.impl = lambda x, repeats, axis: np.repeat(x, repeats, axis)
repeat_p.abstract_eval = _repeat_abstract_eval
repeat_p.jvp = lambda primals, tangents, *, out, repeats, axis: apply_linear(
    _repeat, tangents[0], repeats, axis
)
repeat_p.vjp = lambda g, x, *, out, repeats, axis: (
    _segment_sum(g, _repeat_counts(repeats, shape_of(x)[axis]), axis),
)


segment_sum_p = Primitive("segment_sum")  # the transpose of repeat: sums consecutive runs
segment_sum_p.sparsity = accumulation(
    lambda out_ids, x, *, counts, axis: np.repeat(out_ids, counts, axis)
)
segment_sum_p.saves_inputs = False  # its vjp reads only shapes and dtypes
segment_sum_p.saves_output = False
segment_sum_p.impl = _segment_sum_impl
segment_sum_p.abstract_eval = lambda x, *, counts, axis: shaped_like(
    x, shape_with_length(x.shape, axis, len(counts))
)
segment_sum_p.jvp = lambda primals, tangents, *, out, counts, axis: apply_linear(
    _segment_sum, tangents[0], counts, axis
)
segment_sum_p.vjp = lambda g, x, *, out, counts, axis: (_repeat(g, counts, axis),)


repeat_p.batch = lambda values, dims, *, repeats, axis: (
    _repeat(values[0], repeats, axis_in_batched(axis, dims[0])),
    dims[0],
)
repeat_p.taylor = series.linear_rule(repeat_p)
segment_sum_p.batch = lambda values, dims, *, counts, axis: (
    _segment_sum(values[0], counts, axis_in_batched(axis, dims[0])),
    dims[0],
)
segment_sum_p.taylor = series.linear_rule(segment_sum_p)


def _repeat(x, repeats, axis: int):
    return bind(repeat_p, x, repeats=repeats, axis=axis)


def _segment_sum(x, counts: tuple, axis: int):
    return bind(segment_sum_p, x, counts=counts, axis=axis)
