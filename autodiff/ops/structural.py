"""Structural primitives and the batch-axis helpers: the bottom of ops/ (with sparsity and series).

`reshape`, `transpose`, `broadcast_to` and its transpose `sum_to_shape` only move, copy or sum
elements along axes, and every family's rules and batch rules are written with them. The
functions here take parameters NumPy has already checked (shapes as tuples of ints,
integer axes), and skip the op when it would change nothing; the functions with NumPy's
signatures and argument handling are in shape.py, built on these.

Batch rules (vmap) get `(values, dims)` — `dims[i]` is the batch axis of `values[i]` or
None — and return `(out, out_dim)`. The helpers at the end move batch axes, and give the
batch rules of primitives that map elementwise; all are autodiff ops, so they nest.
"""

from __future__ import annotations

import math

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)
from numpy.lib.array_utils import normalize_axis_tuple

from autodiff.core.abstract import ShapedArray, accumulation_dtype, shaped_like
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.ops import series
from autodiff.ops.sparsity import MOVEMENT, accumulation

# (Module-level names: numpy's module __getattr__ keeps CPython from specializing `np.name`
# loads, and these run once per broadcasting operand of a backward pass.)
_HAVE_SHAPE = (np.ndarray, Tensor, np.generic, ShapedArray)
_add_reduce = np.add.reduce


def shape_of(x) -> tuple:
    """Shape of an array, Tensor, abstract value or Python scalar."""
    return x.shape if isinstance(x, _HAVE_SHAPE) else np.shape(x)


def ndim_of(x) -> int:
    """Number of axes of an array, Tensor, abstract value or Python scalar."""
    return len(shape_of(x))


def apply_linear(f, t, *args, **kwargs):
    """`f(t, ...)` for a tangent `t` of a linear op; a symbolic zero (None) stays None."""
    return None if t is None else f(t, *args, **kwargs)


# ---------------------------------------------------------------------------------------------
# broadcast_to and sum_to_shape, each other's transpose (binary rules reduce cotangents with
# sum_to_shape).


def _sum_to_shape_impl(x, shape):
    try:
        x_shape = x.shape  # (np.shape is a dispatched function: microseconds a call)
    except AttributeError:
        x_shape = np.shape(x)
    if x_shape == shape:
        return x
    if not shape:  # the common case of a scalar operand: one reduction over everything
        return _add_reduce(x, axis=None)
    lead = len(x_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and x_shape[i + lead] != 1
    )
    # np.add.reduce is np.sum without its Python-level dispatch (a few microseconds a call).
    out = _add_reduce(x, axis=axes, keepdims=True) if axes else x
    return out.reshape(shape) if lead or out.shape != shape else out


def _sum_to_shape_abstract_eval(x, *, shape):
    if x.shape == shape:
        return x
    return shaped_like(x, shape, accumulation_dtype(x.dtype))  # a sum, as np.add.reduce sums


sum_to_shape_p = Primitive("sum_to_shape")
sum_to_shape_p.saves_inputs = False  # its vjp reads only shapes and dtypes
sum_to_shape_p.saves_output = False
sum_to_shape_p.impl = _sum_to_shape_impl
sum_to_shape_p.sparsity = accumulation(
    lambda out_ids, x, *, shape: np.broadcast_to(out_ids, x.shape)
)
sum_to_shape_p.abstract_eval = _sum_to_shape_abstract_eval
sum_to_shape_p.jvp = lambda primals, tangents, *, out, shape: sum_to_shape(tangents[0], shape)
sum_to_shape_p.vjp = lambda g, x, *, out, shape: (broadcast_to(g, shape_of(x)),)


def _sum_to_shape_batch(values, dims, *, shape):
    x = move_to_front(values[0], dims[0])
    size, per_example = shape_of(x)[0], tuple(shape_of(x)[1:])
    lead = len(per_example) - len(shape)
    x = sum_to_shape(x, (size,) + (1,) * lead + shape)
    return reshape(x, (size,) + shape), 0


sum_to_shape_p.batch = _sum_to_shape_batch
sum_to_shape_p.taylor = series.linear_rule(sum_to_shape_p)


def _broadcast_to_abstract_eval(x, *, shape):
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to shape {shape}")
    return shaped_like(x, shape)


broadcast_to_p = Primitive("broadcast_to")
broadcast_to_p.saves_inputs = False  # its vjp reads only shapes and dtypes
broadcast_to_p.saves_output = False


def _broadcast_to_impl(x, shape: tuple):
    """`np.broadcast_to(x, shape)`: for a C-contiguous array of numbers, the same read-only
    view made directly (NumPy's builds an iterator to check the shapes: in a small backward
    pass, every sum's gradient is one of these)."""
    if (
        type(x) is not ndarray
        or x.dtype.kind not in _VIEWABLE_KINDS
        or not x.flags.c_contiguous
        or len(shape) < x.ndim
    ):
        return np.broadcast_to(x, shape)
    lead = len(shape) - x.ndim
    strides = [0] * lead
    for have, want, stride in zip(x.shape, shape[lead:], x.strides):
        if have == want and have > 0:
            strides.append(stride)
        elif have == 1 and want > 0:
            strides.append(0)
        else:  # (NumPy's error, or its strides for an empty result)
            return np.broadcast_to(x, shape)
    if lead and min(shape[:lead]) <= 0:
        return np.broadcast_to(x, shape)
    view = ndarray(shape, x.dtype, x, 0, tuple(strides))
    view.flags.writeable = False
    return view


# (dtypes whose arrays export their memory as a buffer: `_broadcast_to_impl`'s fast path)
_VIEWABLE_KINDS = frozenset("biufc")
broadcast_to_p.impl = _broadcast_to_impl
broadcast_to_p.sparsity = MOVEMENT
broadcast_to_p.abstract_eval = _broadcast_to_abstract_eval
broadcast_to_p.jvp = lambda primals, tangents, *, out, shape: broadcast_to(tangents[0], shape)
broadcast_to_p.vjp = lambda g, x, *, out, shape: (sum_to_shape(g, shape_of(x)),)


def _broadcast_to_batch(values, dims, *, shape):
    x = move_to_front(values[0], dims[0])
    size, per_example = shape_of(x)[0], tuple(shape_of(x)[1:])
    x = reshape(x, (size,) + (1,) * (len(shape) - len(per_example)) + per_example)
    return broadcast_to(x, (size,) + shape), 0


broadcast_to_p.batch = _broadcast_to_batch
broadcast_to_p.taylor = series.linear_rule(broadcast_to_p)


# ---------------------------------------------------------------------------------------------
# reshape and transpose: linear, each transposed by itself (reshape back, the inverse
# permutation). On raw arrays their impls return views.


def _resolve_inferred(shape: tuple, size: int) -> tuple:
    """`shape` with its -1 replaced by the inferred length (so empty batches reshape too)."""
    if -1 not in shape:
        return shape
    known = math.prod(n for n in shape if n != -1)
    return tuple(size // known if n == -1 and known else n for n in shape)


def _reshaped(shape: tuple, size: int) -> tuple:
    """`shape` with its -1 inferred for `size` elements (NumPy's error if it does not fit)."""
    out = _resolve_inferred(shape, size)
    if shape.count(-1) > 1 or any(n < 0 for n in out) or math.prod(out) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return out


reshape_p = Primitive("reshape")
reshape_p.saves_inputs = False  # its vjp reads only shapes and dtypes
reshape_p.saves_output = False
reshape_p.sparsity = MOVEMENT
reshape_p.impl = lambda x, shape, order: (  # the ndarray method skips np.reshape's dispatch
    x.reshape(shape, order=order) if type(x) is ndarray else np.reshape(x, shape, order=order)
)
reshape_p.abstract_eval = lambda x, *, shape, order: shaped_like(x, _reshaped(tuple(shape), x.size))
reshape_p.jvp = lambda primals, tangents, *, out, shape, order: apply_linear(
    reshape, tangents[0], shape_of(out), order
)
reshape_p.vjp = lambda g, x, *, out, shape, order: (reshape(g, shape_of(x), order),)


def _reshape_batch(values, dims, *, shape, order):
    x = move_to_front(values[0], dims[0])
    shape = _resolve_inferred(shape, math.prod(shape_of(x)[1:]))
    if order == "F":  # F order runs the last axis slowest: each example stays one block there
        x = moveaxis(x, 0, -1)
        return bind(reshape_p, x, shape=shape + (shape_of(x)[-1],), order=order), len(shape)
    return bind(reshape_p, x, shape=(shape_of(x)[0],) + shape, order=order), 0


reshape_p.batch = _reshape_batch
reshape_p.taylor = series.linear_rule(reshape_p)


def _transpose_abstract_eval(x, *, axes):
    perm = range(x.ndim)[::-1] if axes is None else normalize_axis_tuple(axes, x.ndim)
    if len(perm) != x.ndim:
        raise ValueError("axes don't match array")
    return shaped_like(x, tuple(x.shape[a] for a in perm))


def _inverse_axes(axes, ndim: int):
    if axes is None:  # reversing the axes is its own inverse
        return None
    inverse = [0] * ndim  # (a permutation's inverse, without np.argsort's array round trip)
    for i, axis in enumerate(normalize_axis_tuple(axes, ndim)):
        inverse[axis] = i
    return tuple(inverse)


transpose_p = Primitive("transpose")
transpose_p.sparsity = MOVEMENT
transpose_p.saves_inputs = False  # its vjp reads only shapes and dtypes
transpose_p.saves_output = False
transpose_p.impl = lambda x, axes: (
    x.transpose(axes) if type(x) is ndarray else np.transpose(x, axes)
)
transpose_p.abstract_eval = _transpose_abstract_eval
transpose_p.jvp = lambda primals, tangents, *, out, axes: apply_linear(transpose, tangents[0], axes)
transpose_p.taylor = series.linear_rule(transpose_p)
transpose_p.vjp = lambda g, x, *, out, axes: (transpose(g, _inverse_axes(axes, ndim_of(x))),)


def _transpose_batch(values, dims, *, axes):
    x, bdim = values[0], dims[0]
    n = ndim_of(x) - 1
    perm = range(n)[::-1] if axes is None else normalize_axis_tuple(axes, n)
    return bind(transpose_p, x, axes=(bdim,) + tuple(axis_in_batched(a, bdim) for a in perm)), 0


transpose_p.batch = _transpose_batch


# ---------------------------------------------------------------------------------------------
# The functions, on checked parameters.


def broadcast_to(x, shape):
    """`x` broadcast to `shape` (an int or a sequence of ints); its transpose is `sum_to_shape`.

    Example:
        >>> broadcast_to(np.array([1.0, 2.0]), (2, 2))
        array([[1., 2.],
               [1., 2.]])
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
    if shape_of(x) == shape:
        return x
    return bind(broadcast_to_p, x, shape=shape)


def sum_to_shape(x, shape):
    """Sum `x` over the axes that broadcasting added or stretched, so that it has `shape`.

    Example:
        >>> sum_to_shape(np.ones((3, 2)), (1, 2))
        array([[3., 3.]])
    """
    shape = tuple(shape)
    if shape_of(x) == shape:
        return x
    return bind(sum_to_shape_p, x, shape=shape)


def reshape(x, shape: tuple, order: str = "C"):
    """`x` in `shape` (a tuple of ints, one of them -1 to infer), read in `order` "C" or "F".

    Example:
        >>> reshape(np.arange(4.0), (2, -1))
        array([[0., 1.],
               [2., 3.]])
    """
    if shape_of(x) == shape:
        return x
    return bind(reshape_p, x, shape=shape, order=order)


def transpose(x, axes):
    """`x` with its axes permuted by `axes` (a sequence of ints; None reverses them).

    Example:
        >>> transpose(np.zeros((2, 3, 4)), [2, 0, 1]).shape
        (4, 2, 3)
    """
    if axes is not None:
        axes = tuple(axes)
        if axes == tuple(range(len(axes))):
            return x
    return bind(transpose_p, x, axes=axes)


def matrix_transpose(x):
    """`x` with its last two axes swapped.

    Example:
        >>> matrix_transpose(np.zeros((5, 2, 3))).shape
        (5, 3, 2)
    """
    n = ndim_of(x)
    return bind(transpose_p, x, axes=(*range(n - 2), n - 1, n - 2))


def moveaxis(x, source, destination):
    """`numpy.moveaxis` on `x`: axes `source` (an int or a sequence; negative ones count from
    the end) moved to `destination`, the others kept in order.

    Example:
        >>> moveaxis(np.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    n = ndim_of(x)
    source = normalize_axis_tuple(source, n, "source")
    destination = normalize_axis_tuple(destination, n, "destination")
    if len(source) != len(destination):
        raise ValueError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    perm = [None] * n
    for s, d in zip(source, destination):
        perm[d] = s
    rest = iter(i for i in range(n) if i not in source)
    return transpose(x, tuple(next(rest) if p is None else p for p in perm))


def expand_dims(x, axis):
    """`numpy.expand_dims` on `x`: new axes of length 1 at `axis` (an int or a tuple of them;
    negative ones count from the end of the result).

    Example:
        >>> expand_dims(np.zeros((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    shape = shape_of(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = len(axes) + len(shape)
    axes = normalize_axis_tuple(axes, out_ndim)
    dims = iter(shape)
    return reshape(x, tuple(1 if i in axes else next(dims) for i in range(out_ndim)))


# ---------------------------------------------------------------------------------------------
# Batch axes.


def axis_in_batched(axis: int, bdim: int) -> int:
    """A per-example axis (non-negative) as an axis of the value batched along `bdim`."""
    return axis + (axis >= bdim)


def batch_size(values, dims) -> int:
    """The length of the batch axis (of the first batched value)."""
    for v, d in zip(values, dims):
        if d is not None:
            return shape_of(v)[d]
    raise ValueError("no batched argument")


def move_to_front(x, bdim: int):
    """`x` with its batch axis first."""
    if bdim == 0:
        return x
    return moveaxis(x, bdim, 0)


def move_batch_axis(x, bdim: int | None, dest: int, size: int):
    """`x` with its batch axis at `dest`; an unbatched `x` is broadcast along a new axis there."""
    if bdim is None:
        x = expand_dims(x, dest)
        shape = list(shape_of(x))
        shape[dest] = size
        return broadcast_to(x, tuple(shape))
    if bdim == dest:
        return x
    return moveaxis(x, bdim, dest)


def batch_in_front(values, dims) -> list:
    """Every value with its batch axis first (unbatched ones broadcast along a new one)."""
    size = batch_size(values, dims)
    return [move_batch_axis(v, d, 0, size) for v, d in zip(values, dims)]


def align_for_broadcast(values, dims):
    """Batched values with the batch axis first and padded with 1-axes, so NumPy broadcasting
    of per-example shapes stays right-aligned; unbatched values are returned as they are."""
    ranks = [ndim_of(v) - (d is not None) for v, d in zip(values, dims)]
    rank = max(ranks)
    out = []
    for v, d, k in zip(values, dims, ranks):
        if d is None:
            out.append(v)
            continue
        v = move_to_front(v, d)
        if k < rank:
            s = shape_of(v)
            v = reshape(v, (s[0],) + (1,) * (rank - k) + tuple(s[1:]))
        out.append(v)
    return out


def unary_batch_rule(prim):
    """For primitives acting elementwise on one operand: the batch axis stays where it is."""

    def rule(values, dims, **params):
        return bind(prim, *values, **params), dims[0]

    return rule


def broadcasting_batch_rule(prim):
    """For n-ary elementwise primitives with NumPy broadcasting."""

    def rule(values, dims, **params):
        if len(values) == 1:
            return bind(prim, *values, **params), dims[0]
        return bind(prim, *align_for_broadcast(values, dims), **params), 0

    return rule
