"""NumPy's shape functions, and the shape primitives below them (flip, copy, concatenate and
split, stack and unstack, repeat).

Every primitive here only moves or copies elements, so each is linear: its jvp applies
the same op to the tangent and its vjp is its transpose (the same flip, split <-> concatenate,
stack <-> unstack, repeat <-> segment_sum). reshape and transpose are structural.py's, which
the functions here give NumPy's signatures and argument handling. The rest of NumPy's shape
surface (expand_dims, tile, atleast_2d, array of mixed Tensors and numbers, ...) is
composites of these. Parameters are passed to NumPy as the user gave them where possible, so
invalid ones raise NumPy's own errors; on raw arrays the impls are single NumPy calls, and
reshape, transpose, flip and split return views.
"""

from __future__ import annotations

import operator

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
from autodiff.core.primitive import Primitive, bind, dispatch
from autodiff.core.tensor import Tensor
from autodiff.ops import structural
from autodiff.ops.elementwise import add, astype, cotangent_of, stop_gradient
from autodiff.ops.numpy_forms import cotangents_of, define_numpy, vjp_rules
from autodiff.ops.structural import (
    apply_linear,
    axis_in_batched,
    batch_in_front,
    ndim_of,
    reshape_p,
    shape_of,
    transpose_p,
)

# ---------------------------------------------------------------------------------------------
# Primitives.

flip_p = Primitive("flip")
flip_p.saves_inputs = False  # its vjp reads only shapes and dtypes
flip_p.saves_output = False
flip_p.impl = lambda x, axis: np.flip(x, axis)
flip_p.abstract_eval = same_aval
flip_p.jvp = lambda primals, tangents, *, out, axis: apply_linear(_flip, tangents[0], axis)
flip_p.vjp = lambda g, x, *, out, axis: (_flip(g, axis),)

copy_p = Primitive("copy")  # the identity, as a fresh array
copy_p.saves_inputs = False  # its vjp reads only shapes and dtypes
copy_p.saves_output = False
copy_p.impl = np.copy
copy_p.abstract_eval = same_aval
copy_p.jvp = lambda primals, tangents, *, out: tangents[0]
copy_p.vjp = lambda g, x, *, out: (g,)


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
concatenate_p.saves_inputs = False  # its vjp reads only shapes and dtypes
concatenate_p.saves_output = False
concatenate_p.impl = lambda *arrays, axis, dtype, casting: np.concatenate(
    arrays, axis=axis, dtype=dtype, casting=casting
)
concatenate_p.abstract_eval = _concatenate_abstract_eval
concatenate_p.jvp = _linear_jvp(concatenate_p)
concatenate_p.vjp = _concatenate_vjp


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
split_p.saves_inputs = False  # its vjp reads only shapes and dtypes
split_p.impl = _split_impl
split_p.abstract_eval = _split_abstract_eval
split_p.jvp = lambda primals, tangents, *, out, ranges, axis: (
    (None,) * len(ranges)
    if tangents[0] is None
    else bind(split_p, tangents[0], ranges=ranges, axis=axis)
)
split_p.vjp = _split_vjp


# stack and unstack are each other's transpose: one node for `np.stack([...])` (a concatenate
# of expanded arrays would record one node per array more, and ODE right-hand sides stack).


def _stack_vjp(g, out, *arrays, axis, dtype, casting):
    pieces = _unstack(g, axis)
    dt = g.dtype
    if dt.kind in "fc":  # (each piece has its array's shape: in its dtype, it is its cotangent)
        for a in arrays:
            if a.dtype is not dt:
                return cotangents_of(pieces, arrays)
        return tuple(pieces)
    return cotangents_of(pieces, arrays)


stack_p = Primitive("stack")
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
unstack_p.saves_inputs = False  # its vjp reads only shapes and dtypes
unstack_p.impl = _unstack_impl
unstack_p.abstract_eval = lambda x, *, axis: (
    (shaped_like(x, x.shape[:axis] + x.shape[axis + 1 :]),) * x.shape[axis]
)
unstack_p.jvp = lambda primals, tangents, *, out, axis: (
    None if tangents[0] is None else bind(unstack_p, tangents[0], axis=axis)
)
unstack_p.vjp = _unstack_vjp


def _unstack(x, axis: int):
    return bind(unstack_p, x, axis=axis)


define_numpy(_unstack, _unstack_impl)
vjp_rules(stack_p, _stack_vjp)


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


# ---------------------------------------------------------------------------------------------
# Batch rules (vmap): `dims[i]` is the batch axis of `values[i]` (None: unbatched). Axis
# params are per example; the batch axis stays where it is unless a rule says otherwise.


def _flip_batch(values, dims, *, axis):
    x, bdim = values[0], dims[0]
    n = len(shape_of(x)) - 1
    axes = range(n) if axis is None else normalize_axis_tuple(axis, n)
    return _flip(x, tuple(axis_in_batched(a, bdim) for a in axes)), bdim


def _concatenate_batch(values, dims, *, axis, dtype, casting):
    front = batch_in_front(values, dims)
    axis = normalize_axis_index(axis, len(shape_of(front[0])) - 1) + 1
    return bind(concatenate_p, *front, axis=axis, dtype=dtype, casting=casting), 0


def _stack_batch(values, dims, *, axis, dtype, casting):
    front = batch_in_front(values, dims)
    return bind(stack_p, *front, axis=axis + 1, dtype=dtype, casting=casting), 0


def _unstack_batch(values, dims, *, axis):
    bdim = dims[0]
    x = values[0]
    n = shape_of(x)[axis_in_batched(axis, bdim)]
    return bind(unstack_p, x, axis=axis_in_batched(axis, bdim)), (bdim - (axis < bdim),) * n


def _split_batch(values, dims, *, ranges, axis):
    bdim = dims[0]
    pieces = bind(split_p, values[0], ranges=ranges, axis=axis_in_batched(axis, bdim))
    return pieces, (bdim,) * len(ranges)


flip_p.batch = _flip_batch
copy_p.batch = lambda values, dims: (bind(copy_p, values[0]), dims[0])
concatenate_p.batch = _concatenate_batch
split_p.batch = _split_batch
stack_p.batch = _stack_batch
unstack_p.batch = _unstack_batch
repeat_p.batch = lambda values, dims, *, repeats, axis: (
    _repeat(values[0], repeats, axis_in_batched(axis, dims[0])),
    dims[0],
)
segment_sum_p.batch = lambda values, dims, *, counts, axis: (
    _segment_sum(values[0], counts, axis_in_batched(axis, dims[0])),
    dims[0],
)


# ---------------------------------------------------------------------------------------------
# Internal helpers used by rules and composites (parameters already normalized).


def _concatenate(arrays, axis: int):
    return bind(concatenate_p, *arrays, axis=axis, dtype=None, casting="same_kind")


def _flip(x, axis):
    return bind(flip_p, x, axis=axis)


def _repeat(x, repeats, axis: int):
    return bind(repeat_p, x, repeats=repeats, axis=axis)


def _segment_sum(x, counts: tuple, axis: int):
    return bind(segment_sum_p, x, counts=counts, axis=axis)


def _holds_tensor(obj) -> bool:
    """Is `obj` a Tensor, or a (nested) list or tuple with a Tensor inside?"""
    if isinstance(obj, Tensor):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_holds_tensor(o) for o in obj)
    return False


def _operand(a):
    """An array argument: Tensors, ndarrays and NumPy scalars as they are, the rest as arrays
    (a list or tuple holding Tensors becomes one differentiable value)."""
    if isinstance(a, (Tensor, ndarray, np.generic)):
        return a
    if isinstance(a, (list, tuple)) and _holds_tensor(a):
        return array(a)
    return np.asarray(a)


def _memory_order(a: Tensor) -> str:
    """ "C" or "F": the layout of a Tensor's concrete value (for NumPy's order="A"/"K")."""
    try:
        p = np.asarray(a.primal())
    except TypeError:  # a vmapped value has no single layout
        return "C"
    return "F" if p.flags.f_contiguous and not p.flags.c_contiguous else "C"


def _shape_param(shape) -> tuple:
    """A shape (or axes) argument as a tuple of ints, with NumPy's errors."""
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(s) for s in shape)
    try:
        return (operator.index(shape),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(
            f"expected a sequence of integers or a single integer, got '{shape}'"
        ) from None


# ---------------------------------------------------------------------------------------------
# The functions. NumPy names and signatures; `autodiff.numpy` re-exports them.


def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None):
    """`numpy.reshape`, differentiable (`-1` infers a dimension; order "C", "F" or "A").

    Example:
        >>> import numpy as np
        >>> reshape(np.arange(6.0), (2, -1))
        array([[0., 1., 2.],
               [3., 4., 5.]])
    """
    if shape is None:
        shape = newshape
    elif newshape is not None:
        raise TypeError("You cannot specify 'newshape' and 'shape' arguments at the same time.")
    if shape is None:
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    a = _operand(a)
    shape = _shape_param(shape)
    if not isinstance(a, Tensor):
        if copy is not None:
            return np.reshape(a, shape, order=order, copy=copy)
        return bind(reshape_p, a, shape=shape, order=order)
    if order == "A":
        order = _memory_order(a)
    elif order not in ("C", "F"):
        np.reshape(np.empty(0), 0, order=order)  # NumPy's error for "K" and invalid orders
    if shape == a.shape:
        return bind(copy_p, a) if copy else a
    return bind(reshape_p, a, shape=shape, order=order)


def ravel(a, order: str = "C"):
    """`numpy.ravel`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ravel(np.arange(4.0).reshape(2, 2)).tolist()
        [0.0, 1.0, 2.0, 3.0]
        >>> ad.grad(lambda a: ravel(a)[1])(np.zeros((2, 2)))
        array([[0., 1.],
               [0., 0.]])
    """
    a = _operand(a)
    if not isinstance(a, Tensor):
        return np.ravel(a, order)
    if order in ("A", "K"):
        order = _memory_order(a)
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """`numpy.transpose`, differentiable (a view on raw arrays).

    Example:
        >>> import numpy as np
        >>> transpose(np.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    a = _operand(a)
    if axes is not None:
        axes = _shape_param(axes)
    if isinstance(a, Tensor) and (axes is None and a.ndim < 2 or axes == tuple(range(a.ndim))):
        return a
    return bind(transpose_p, a, axes=axes)


def swapaxes(a, axis1: int, axis2: int):
    """`numpy.swapaxes`, differentiable.

    Example:
        >>> import numpy as np
        >>> swapaxes(np.zeros((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    a = _operand(a)
    n = ndim_of(a)
    i = normalize_axis_index(axis1, n, "axis1")
    j = normalize_axis_index(axis2, n, "axis2")
    perm = list(range(n))
    perm[i], perm[j] = j, i
    return structural.transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """`numpy.moveaxis`, differentiable.

    Example:
        >>> import numpy as np
        >>> moveaxis(np.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    return structural.moveaxis(_operand(a), source, destination)


def expand_dims(a, axis):
    """`numpy.expand_dims` (an int or a tuple of axes), differentiable.

    Example:
        >>> import numpy as np
        >>> expand_dims(np.zeros((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    return structural.expand_dims(_operand(a), axis)


def squeeze(a, axis=None):
    """`numpy.squeeze`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> squeeze(np.zeros((1, 3, 1))).shape
        (3,)
        >>> ad.grad(lambda a: squeeze(a)[0])(np.zeros((1, 2)))
        array([[1., 0.]])
    """
    a = _operand(a)
    shape = shape_of(a)
    if axis is None:
        return structural.reshape(a, tuple(s for s in shape if s != 1))
    axes = normalize_axis_tuple(axis, len(shape))
    if any(shape[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return structural.reshape(a, tuple(s for i, s in enumerate(shape) if i not in axes))


def broadcast_to(array, shape, subok: bool = False):
    """`numpy.broadcast_to`, differentiable (its transpose sums back).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> broadcast_to(np.array([1.0, 2.0]), (3, 2)).shape
        (3, 2)
        >>> ad.grad(lambda v: broadcast_to(v, (3, 2)).sum())(np.array([1.0, 2.0]))  # 3 copies
        array([3., 3.])
    """
    return structural.broadcast_to(_operand(array), shape)


def broadcast_arrays(*args, subok: bool = False) -> tuple:
    """`numpy.broadcast_arrays`, differentiable.

    Example:
        >>> import numpy as np
        >>> [a.shape for a in broadcast_arrays(np.zeros((2, 1)), np.zeros(3))]
        [(2, 3), (2, 3)]
    """
    arrays = [_operand(a) for a in args]
    shape = np.broadcast_shapes(*(shape_of(a) for a in arrays))
    return tuple(structural.broadcast_to(a, shape) for a in arrays)


def _result_dtype(dtype, arrays: list) -> tuple:
    """`(dtype, arrays)` for concatenate and stack's `dtype=`: an integer result carries no
    derivative, so its inputs become constants."""
    if dtype is None:
        return None, arrays
    dtype = np.dtype(dtype)
    if not is_inexact(dtype):
        arrays = [stop_gradient(a) if isinstance(a, Tensor) else a for a in arrays]
    return dtype, arrays


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting: str = "same_kind"):
    """`numpy.concatenate` (`axis=None` flattens first), differentiable in every array.

    Example:
        >>> import numpy as np
        >>> concatenate([np.zeros(2), np.ones(1)])
        array([0., 0., 1.])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.concatenate does not support out=")
    arrays = [_operand(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    dtype, arrays = _result_dtype(dtype, arrays)
    return bind(concatenate_p, *arrays, axis=operator.index(axis), dtype=dtype, casting=casting)


def stack(arrays, axis: int = 0, out=None, *, dtype=None, casting: str = "same_kind"):
    """`numpy.stack`, differentiable.

    Example:
        >>> import numpy as np
        >>> stack([np.zeros(3), np.ones(3)], axis=1).shape
        (3, 2)
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.stack does not support out=")
    arrays = [_operand(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shape = shape_of(arrays[0])
    for a in arrays:
        if shape_of(a) != shape:
            raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, len(shape) + 1)
    if dtype is not None:
        dtype, arrays = _result_dtype(dtype, arrays)
    return dispatch(stack_p, tuple(arrays), {"axis": axis, "dtype": dtype, "casting": casting})


def unstack(x, /, *, axis: int = 0):
    """`numpy.unstack`: the arrays along `axis`, as a tuple; differentiable (its transpose
    is `stack`).

    Example:
        >>> import numpy as np
        >>> [a.tolist() for a in unstack(np.arange(4.0).reshape(2, 2), axis=1)]
        [[0.0, 2.0], [1.0, 3.0]]
    """
    x = _operand(x)
    shape = shape_of(x)
    if not shape:
        raise ValueError("Input array must be at least 1-d.")
    return bind(unstack_p, x, axis=normalize_axis_index(axis, len(shape)))


def hstack(tup, *, dtype=None, casting: str = "same_kind"):
    """`numpy.hstack`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> hstack([np.array([1.0]), np.array([2.0, 3.0])]).tolist()
        [1.0, 2.0, 3.0]
        >>> ad.grad(lambda a, b: hstack([a, 2.0 * b]).sum(), argnums=(0, 1))(np.ones(1), np.ones(2))
        (array([1.]), array([2., 2.]))
    """
    arrays = [_atleast_1d(a) for a in tup]
    axis = 0 if arrays and ndim_of(arrays[0]) == 1 else 1
    return concatenate(arrays, axis, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting: str = "same_kind"):
    """`numpy.vstack`, differentiable.

    Example:
        >>> import numpy as np
        >>> vstack([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    return concatenate([_atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def dstack(tup):
    """`numpy.dstack`, differentiable.

    Example:
        >>> import numpy as np
        >>> dstack([np.zeros((2, 3)), np.ones((2, 3))]).shape
        (2, 3, 2)
    """
    return concatenate([_atleast_3d(a) for a in tup], 2)


def column_stack(tup):
    """`numpy.column_stack`, differentiable.

    Example:
        >>> import numpy as np
        >>> column_stack([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).tolist()
        [[1.0, 3.0], [2.0, 4.0]]
    """
    arrays = []
    for v in tup:
        a = _operand(v)
        arrays.append(structural.reshape(a, (a.size, 1)) if a.ndim < 2 else a)
    return concatenate(arrays, 1)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """`numpy.array_split`, differentiable (the pieces are views on raw arrays).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> [p.tolist() for p in array_split(np.arange(5.0), 2)]
        [[0.0, 1.0, 2.0], [3.0, 4.0]]
        >>> ad.grad(lambda x: array_split(x, 2)[1].sum())(np.zeros(5))
        array([0., 0., 0., 1., 1.])
    """
    ary = _operand(ary)
    n = ary.shape[axis]
    axis = normalize_axis_index(axis, ary.ndim)
    try:
        bounds = [0, *indices_or_sections, n]
    except TypeError:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extra = divmod(n, sections)
        bounds = np.cumsum([0] + [each + 1] * extra + [each] * (sections - extra)).tolist()
    ranges = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        start, stop, _ = slice(lo, hi).indices(n)
        ranges.append((start, max(start, stop)))
    return list(bind(split_p, ary, ranges=tuple(ranges), axis=axis))


def split(ary, indices_or_sections, axis: int = 0) -> list:
    """`numpy.split`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.tolist() for p in split(np.arange(5.0), [2])]
        [[0.0, 1.0], [2.0, 3.0, 4.0]]
    """
    ary = _operand(ary)
    try:
        len(indices_or_sections)
    except TypeError:
        if ary.shape[axis] % indices_or_sections:
            raise ValueError("array split does not result in an equal division") from None
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections) -> list:
    """`numpy.hsplit`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.shape for p in hsplit(np.zeros((2, 4)), 2)]
        [(2, 2), (2, 2)]
    """
    ary = _operand(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections) -> list:
    """`numpy.vsplit`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.shape for p in vsplit(np.zeros((4, 2)), [1])]
        [(1, 2), (3, 2)]
    """
    ary = _operand(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    """`numpy.dsplit`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.shape for p in dsplit(np.zeros((1, 2, 4)), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    ary = _operand(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def tile(A, reps):
    """`numpy.tile`, differentiable (a broadcast, whose transpose sums the copies).

    Example:
        >>> import numpy as np
        >>> tile(np.array([1.0, 2.0]), (2, 2))
        array([[1., 2., 1., 2.],
               [1., 2., 1., 2.]])
    """
    A = _operand(A)
    if not isinstance(A, Tensor):
        return np.tile(A, reps)
    try:
        reps = tuple(operator.index(r) for r in reps)
    except TypeError:
        reps = (operator.index(reps),)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    shape = A.shape
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    if all(r == 1 for r in reps):
        return structural.reshape(A, shape)
    # (s0, s1) -> (1, s0, 1, s1) -> broadcast (r0, s0, r1, s1) -> (r0 * s0, r1 * s1)
    x = structural.reshape(A, tuple(d for s in shape for d in (1, s)))
    x = structural.broadcast_to(x, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return structural.reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    """`numpy.repeat` (int or per-element repeats), differentiable (its transpose sums runs).

    Example:
        >>> import numpy as np
        >>> repeat(np.array([1.0, 2.0]), [1, 2])
        array([1., 2., 2.])
    """
    a = _operand(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    else:
        axis = normalize_axis_index(axis, ndim_of(a))
    r = np.asarray(repeats.primal() if isinstance(repeats, Tensor) else repeats)
    repeats = r.item() if r.ndim == 0 else tuple(r.tolist())
    return _repeat(a, repeats, axis)


def flip(m, axis=None):
    """`numpy.flip`, differentiable (a view on raw arrays).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> flip(np.array([1.0, 2.0, 3.0])).tolist()
        [3.0, 2.0, 1.0]
        >>> ad.grad(lambda x: flip(x)[0])(np.zeros(3))  # the last element
        array([0., 0., 1.])
    """
    m = _operand(m)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        axis = tuple(axis)
    return _flip(m, axis)


def _flip_axis_fn(name: str, axis: int, flipped: list):
    """numpy.fliplr (`axis` 1) or numpy.flipud (0): `flip(m, axis)`, with NumPy's error when
    `m` has no such axis."""

    def f(m):
        m = _operand(m)
        if ndim_of(m) <= axis:
            raise ValueError(f"Input must be >= {axis + 1}-d.")
        return flip(m, axis)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""`numpy.{name}`, differentiable.

    Example:
        >>> import numpy as np
        >>> {name}(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
        {flipped}
    """
    return f


fliplr = _flip_axis_fn("fliplr", 1, [[2.0, 1.0], [4.0, 3.0]])
flipud = _flip_axis_fn("flipud", 0, [[3.0, 4.0], [1.0, 2.0]])


def _atleast_1d(a):
    a = _operand(a)
    return structural.reshape(a, (1,)) if a.ndim == 0 else a


def _atleast_2d(a):
    a = _operand(a)
    return structural.reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a


def _atleast_3d(a):
    a = _operand(a)
    if a.ndim == 0:
        return structural.reshape(a, (1, 1, 1))
    if a.ndim == 1:
        return structural.reshape(a, (1,) + a.shape + (1,))
    if a.ndim == 2:
        return structural.reshape(a, a.shape + (1,))
    return a


def _one_or_tuple(results: tuple):
    return results[0] if len(results) == 1 else results


def atleast_1d(*arys):
    """`numpy.atleast_1d`, differentiable.

    Example:
        >>> import numpy as np
        >>> atleast_1d(np.float64(1.0)).shape, [a.shape for a in atleast_1d(1.0, np.ones(2))]
        ((1,), [(1,), (2,)])
    """
    return _one_or_tuple(tuple(_atleast_1d(a) for a in arys))


def atleast_2d(*arys):
    """`numpy.atleast_2d`, differentiable.

    Example:
        >>> import numpy as np
        >>> atleast_2d(np.ones(3)).shape
        (1, 3)
    """
    return _one_or_tuple(tuple(_atleast_2d(a) for a in arys))


def atleast_3d(*arys):
    """`numpy.atleast_3d`, differentiable.

    Example:
        >>> import numpy as np
        >>> atleast_3d(np.ones(3)).shape, atleast_3d(np.ones((2, 3))).shape
        ((1, 3, 1), (2, 3, 1))
    """
    return _one_or_tuple(tuple(_atleast_3d(a) for a in arys))


def copy(a, order: str = "K", subok: bool = False):
    """`numpy.copy`, differentiable (the identity on values).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(ad.grad(lambda x: copy(x) * x)(3.0))
        6.0
    """
    a = _operand(a)
    if not isinstance(a, Tensor):
        return np.copy(a, order=order, subok=subok)
    return bind(copy_p, a)


def _build(obj):
    """A nested list or tuple holding Tensors and numbers, stacked into one differentiable value."""
    if isinstance(obj, Tensor):
        return obj
    if not (isinstance(obj, (list, tuple)) and _holds_tensor(obj)):
        return np.asarray(obj)
    parts = [_build(o) for o in obj]
    shapes = {shape_of(p) for p in parts}
    if len(shapes) > 1:
        raise ValueError(
            "setting an array element with a sequence. The requested array has an "
            f"inhomogeneous shape: its elements have shapes {sorted(shapes)}."
        )
    return stack(parts)


def array(
    object,
    dtype=None,
    *,
    copy: bool = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
    like=None,
):
    """`numpy.array`; nested lists may mix Tensors and numbers, and stay differentiable.

    Without a Tensor inside, this is `numpy.array` itself.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> ad.grad(lambda x: anp.sum(anp.array([x[0], 2.0 * x[1], 1.0])))(anp.array([3.0, 4.0]))
        array([1., 2.])
    """
    if not _holds_tensor(object):
        return np.array(
            object, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, like=like
        )
    out = _build(object)
    if dtype is not None:
        out = astype(out, dtype)
    if copy and out is object:
        out = bind(copy_p, out)
    if out.ndim < ndmin:
        out = structural.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """`numpy.asarray`; a Tensor is returned as it is (cast if `dtype` is given).

    Example:
        >>> asarray([1.0, 2.0])
        array([1., 2.])
    """
    if isinstance(a, Tensor):
        out = a if dtype is None else astype(a, dtype)
        return bind(copy_p, out) if copy and out is a else out
    if _holds_tensor(a):
        return array(a, dtype=dtype)
    return np.asarray(a, dtype=dtype, order=order, device=device, copy=copy, like=like)


def rot90(m, k=1, axes=(0, 1)):
    """`numpy.rot90`: `m` rotated by 90 degrees `k` times in the plane of `axes`,
    differentiable.

    Example:
        >>> import numpy as np
        >>> rot90(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([[2., 4.],
               [1., 3.]])
    """
    m = _operand(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = ndim_of(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    axes_list = list(range(nd))
    axes_list[axes[0]], axes_list[axes[1]] = axes_list[axes[1]], axes_list[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), axes_list)
    return flip(transpose(m, axes_list), axes[1])


def rollaxis(a, axis, start=0):
    """`numpy.rollaxis`: axis `axis` moved to position `start`, differentiable.

    Example:
        >>> import numpy as np
        >>> rollaxis(np.ones((3, 4, 5)), 2).shape
        (5, 3, 4)
    """
    a = _operand(a)
    n = ndim_of(a)
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not (0 <= start < n + 1):
        raise np.exceptions.AxisError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in"
        )
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(a, axes)


def matrix_transpose(x, /):
    """`numpy.matrix_transpose`: the last two axes swapped, differentiable.

    Example:
        >>> import numpy as np
        >>> matrix_transpose(np.ones((2, 3, 4))).shape
        (2, 4, 3)
    """
    x = _operand(x)
    if ndim_of(x) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {ndim_of(x)}")
    return swapaxes(x, -1, -2)


def append(arr, values, axis=None):
    """`numpy.append`: `values` after `arr` (both flattened if `axis` is None),
    differentiable in both.

    Example:
        >>> import numpy as np
        >>> append(np.array([1.0, 2.0]), [[3.0], [4.0]])
        array([1., 2., 3., 4.])
    """
    arr, values = _operand(arr), _operand(values)
    if axis is None:
        if ndim_of(arr) != 1:
            arr = ravel(arr)
        values = ravel(values)
        axis = ndim_of(arr) - 1
    return concatenate((arr, values), axis=axis)


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """`numpy.asanyarray`: `asarray` (autodiff has no array subclasses).

    Example:
        >>> asanyarray([1.0, 2.0])
        array([1., 2.])
    """
    return asarray(a, dtype, order, device=device, copy=copy, like=like)


def ascontiguousarray(a, dtype=None, *, like=None):
    """`numpy.ascontiguousarray`: `asarray`, at least 1-d (as NumPy).

    Example:
        >>> ascontiguousarray(3.0)
        array([3.])
    """
    out = asarray(a, dtype)
    return structural.reshape(out, (1,)) if ndim_of(out) == 0 else out


def asfortranarray(a, dtype=None, *, like=None):
    """`numpy.asfortranarray`: `asarray`, at least 1-d (the memory layout is NumPy's concern).

    Example:
        >>> asfortranarray(3.0)
        array([3.])
    """
    if not isinstance(a, Tensor) and not _holds_tensor(a):
        return np.asfortranarray(a, dtype)
    return ascontiguousarray(a, dtype)


def require(a, dtype=None, requirements=None, *, like=None):
    """`numpy.require`: `asarray` (the flags are NumPy's concern).

    Example:
        >>> require([1.0], "float32").dtype
        dtype('float32')
    """
    if not isinstance(a, Tensor) and not _holds_tensor(a):
        return np.require(a, dtype, requirements)
    return asarray(a, dtype)


def asarray_chkfinite(a, dtype=None, order=None):
    """`numpy.asarray_chkfinite`: `asarray`, with a ValueError if a value is inf or NaN
    (where the values are known).

    Example:
        >>> asarray_chkfinite([1.0, 2.0])
        array([1., 2.])
    """
    out = asarray(a, dtype, order)
    try:
        values = np.asarray(out.primal() if isinstance(out, Tensor) else out)
    except TypeError:  # (under vmap or jit: no values to check)
        return out
    if values.dtype.char in np.typecodes["AllFloat"] and not np.isfinite(values).all():
        raise ValueError("array must not contain infs or NaNs")
    return out


FUNCTIONS = {
    f.__name__: f
    for f in (
        reshape,
        ravel,
        transpose,
        swapaxes,
        moveaxis,
        expand_dims,
        squeeze,
        broadcast_to,
        broadcast_arrays,
        concatenate,
        stack,
        unstack,
        hstack,
        vstack,
        dstack,
        column_stack,
        split,
        array_split,
        hsplit,
        vsplit,
        dsplit,
        tile,
        repeat,
        flip,
        fliplr,
        flipud,
        atleast_1d,
        atleast_2d,
        atleast_3d,
        copy,
        array,
        asarray,
        rot90,
        rollaxis,
        matrix_transpose,
        append,
        asanyarray,
        ascontiguousarray,
        asfortranarray,
        require,
        asarray_chkfinite,
    )
}
FUNCTIONS.update({"concat": concatenate, "permute_dims": transpose})
