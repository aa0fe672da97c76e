"""NumPy's indexing functions — getitem, index_set (functional `x[index] = value`), scatter_add,
take, take_along_axis — and JAX's dynamic_slice and dynamic_update_slice.

The functions bind the indexing primitives of ops/gather_scatter.py (getitem, scatter_add,
index_set, and the canonical index they take). `dynamic_slice_p` reads, and
`dynamic_update_slice_p` writes, a block of static size whose start positions are primitive
arguments (clamped so that the block fits); a slice whose bounds are traced (`x[i:i + 3]`
under vmap) becomes a dynamic slice of the block it spans. Under vmap, blocks at per-example
starts become a gather (getitem) and a scatter (index_set) of integer-array indices.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.abstract import shaped_like
from autodiff.core.dtypes import dtype_of
from autodiff.core.errors import ConcretizationError, TracerConversionError
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops import series
from autodiff.ops.elementwise import FUNCTIONS as ELEMENTWISE
from autodiff.ops.elementwise import clip, less, where
from autodiff.ops.gather_scatter import (
    TracedSliceBounds,
    _concrete,
    _dims_used,
    _holds_traced,
    _index_part,
    _traced_array,
    _traced_bound,
    _traced_slice,
    conform_value,
    filled,
    gather,
    getitem_p,
    index_set_p,
    scatter,
    selection_shape,
    split_index,
)
from autodiff.ops.shape import ravel
from autodiff.ops.sparsity import MOVEMENT
from autodiff.ops.structural import batch_size, move_batch_axis, move_to_front, reshape, shape_of

remainder = ELEMENTWISE["remainder"]
maximum = ELEMENTWISE["maximum"]
minimum = ELEMENTWISE["minimum"]


# ---------------------------------------------------------------------------------------------
# Functions.


def scatter_add(values, shape: tuple, index):
    """Zeros of `shape` with `values` added at `x[index]`'s positions (repeats accumulate).

    The transpose of `getitem(x, index)`; `values` has the shape of that result.

    Example:
        >>> import numpy as np
        >>> scatter_add(np.array([1.0, 2.0, 3.0]), (4,), np.array([0, 3, 0]))
        array([4., 0., 0., 2.])
    """
    shape = tuple(shape)
    return scatter(values, shape, *split_index(shape, index))


# The params of `x[i]` for small i, shared (params are never mutated): a node recorded for
# `x[0]` then holds no dict and tuple of its own, objects the cycle collector would track
# until the backward pass (see core/graph.py's Node). Indexed as a list: -1 is the last.
_SMALL_INDEX = 64
_SMALL_INDEX_PARAMS = [{"index": (i,)} for i in range(_SMALL_INDEX)] + [
    {"index": (i,)} for i in range(-_SMALL_INDEX, 0)
]


def getitem(x, index):
    """`x[index]` with NumPy's semantics (basic, integer-array and boolean indices), differentiable.

    Repeated indices accumulate their gradients. Tensors inside `index` are constants;
    integer index arrays may vary under vmap (a per-example gather).

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp, numpy as np
        >>> ad.grad(lambda x: anp.sum(x[np.array([0, 2, 0])]))(np.ones(3))
        array([2., 0., 1.])
        >>> ad.vmap(lambda row, i: row[i])(np.arange(6.0).reshape(2, 3), np.array([2, 0]))
        array([2., 3.])
    """
    if type(index) is int:  # the most common index: one position along the first axis
        if type(x) in TENSOR_TYPES:  # (`bind`'s dispatch, inline: one trace to choose)
            if -_SMALL_INDEX <= index < _SMALL_INDEX:
                params = _SMALL_INDEX_PARAMS[index]
            else:
                params = {"index": (index,)}
            top = x._trace
            if top.alive:
                return top.process(getitem_p, (x,), params)
            return top.process_dead(getitem_p, (x,), params)
        return getitem_p.impl(x, index=(index,))
    try:
        stored, arrays = split_index(shape_of(x), index)
    except TracedSliceBounds:  # x[i:i + 3] for a vmapped or staged i
        starts, sizes, rest = dynamic_parts(x, index)
        return getitem(slice_block(x, starts, sizes), rest)
    return gather(x, stored, arrays)


def index_set(x, index, value):
    """`x[index] = value` as a function: a copy of `x` with `value` written at `index`.

    `value` is cast to `x`'s dtype and broadcast to `x[index]`'s shape. Of repeated
    positions the last write wins, as in NumPy, and only that write gets a gradient; the
    written positions of `x` get none. This is what `Tensor.__setitem__` and
    `x.at[index].set(value)` compute.

    Example:
        >>> import autodiff as ad, numpy as np
        >>> index_set(np.zeros(4), np.array([1, 3, 1]), np.array([5.0, 6.0, 7.0]))
        array([0., 7., 0., 6.])
        >>> ad.grad(lambda v: index_set(np.zeros(3), [0, 0], v).sum())(np.array([1.0, 2.0]))
        array([0., 1.])
    """
    shape = shape_of(x)
    try:
        stored, arrays = split_index(shape, index)
    except TracedSliceBounds:  # x[i:i + 3] = value for a vmapped or staged i
        starts, sizes, rest = dynamic_parts(x, index)
        return update_block(x, index_set(slice_block(x, starts, sizes), rest, value), starts)
    value = conform_value(value, x, selection_shape(shape, stored, arrays))
    return bind(index_set_p, x, value, *arrays, index=stored)


def _check_bounds(indices: ndarray, size: int, axis: int) -> None:
    if indices.size and (indices.min() < -size or indices.max() >= size):
        bad = indices[(indices < -size) | (indices >= size)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")


def _integer_indices(indices):
    """Concrete indices as an integer array; traced ones as they are (checked to be integer)."""
    if _holds_traced(indices):
        return _traced_array(indices)
    arr = np.asarray(_concrete(indices))
    if arr.size == 0 and arr.dtype == np.float64:
        arr = arr.astype(np.intp)
    if not np.issubdtype(arr.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    return arr


def _take_flat(a, indices):
    """`a.ravel()[indices]` (in-bounds `indices`, negative ones from the end)."""
    if not isinstance(indices, ndarray):
        return getitem(ravel(a), indices)
    shape = shape_of(a)
    if not shape:
        a, shape = gather(a, (None,)), (1,)
    size = int(np.prod(shape, dtype=np.int64))
    return gather(a, np.unravel_index(np.where(indices < 0, indices + size, indices), shape))


def take(a, indices, axis=None, out=None, mode="raise"):
    """`numpy.take`: elements of `a` at `indices` along `axis` (the flattened array if None).

    `mode` is "raise", "wrap" or "clip" as in NumPy; repeated indices accumulate gradients.

    Example:
        >>> import numpy as np
        >>> take(np.array([[1.0, 2.0], [3.0, 4.0]]), [3, 0])
        array([4., 1.])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.take does not support out=")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    idx = _integer_indices(indices)
    shape = shape_of(a)
    if axis is None:
        return _take_flat(a, _take_mode(idx, int(np.prod(shape, dtype=np.int64)), mode, 0))
    axis = normalize_axis_index(axis, len(shape))
    idx = _take_mode(idx, shape[axis], mode, axis)
    return getitem(a, (slice(None),) * axis + (idx,))


def _take_mode(idx, size: int, mode: str, axis: int):
    if mode == "wrap":
        return remainder(idx, size) if size else idx
    if mode == "clip":
        return clip(idx, 0, size - 1) if size else idx
    if isinstance(idx, ndarray):
        _check_bounds(idx, size, axis)
    return idx


def take_along_axis(arr, indices, axis=-1):
    """`numpy.take_along_axis`: `arr` gathered with `indices` along `axis` (broadcasting the rest).

    `indices` may vary under vmap (per-example gathers, e.g. the label's log-probability).

    Example:
        >>> import numpy as np
        >>> x = np.array([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
        >>> take_along_axis(x, np.array([[1], [0]]), axis=1)
        array([[30.],
               [60.]])
    """
    idx = _integer_indices(indices)
    shape = shape_of(arr)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        if isinstance(idx, ndarray):
            _check_bounds(idx, int(np.prod(shape, dtype=np.int64)), 0)
        return _take_flat(arr, idx)
    ndim = len(shape)
    if idx.ndim != ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis_index(axis, ndim)
    index = tuple(
        idx if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))
        for d, n in enumerate(shape)
    )
    return getitem(arr, index)


# ---------------------------------------------------------------------------------------------
# Dynamic slices: a block of static size at start positions that may be traced (JAX's
# lax.dynamic_slice and lax.dynamic_update_slice). Each start is a 0-d integer operand, one
# per axis, clamped so that the block fits (XLA's semantics: `min(max(s, 0), n - size)`);
# the public functions read negative starts from the end first, as JAX does.


def _clamp_start(start, n: int, size: int):
    """A start clamped into [0, n - size]: a Python int for a concrete one, else traced."""
    if isinstance(start, Tensor):
        return clip(start, 0, n - size)
    return min(max(int(start), 0), n - size)


def _block(starts, sizes) -> tuple:
    return tuple(slice(s, s + k) for s, k in zip(starts, sizes))


def _batched_block(size: int, shape: tuple, sizes: tuple, starts, dims, batched_x: bool) -> tuple:
    """The index of a batch of blocks (one per example, some starts batched) as integer
    arrays: `x[index]` has shape `(size, *sizes)` for `x` of per-example `shape`, its batch
    axis first when `batched_x`."""
    ndim = len(shape)
    index = []
    if batched_x:
        index.append(np.arange(size).reshape((size,) + (1,) * ndim))
    for k, (s, d, n, m) in enumerate(zip(starts, dims, shape, sizes)):
        s = _clamp_start(s, n, m) if d is None else clip(move_to_front(s, d), 0, n - m)
        lead = (size,) if d is not None else (1,)
        offsets = np.arange(m).reshape((1,) * (k + 1) + (m,) + (1,) * (ndim - k - 1))
        index.append(reshape(s, lead + (1,) * ndim) + offsets if d is not None else s + offsets)
    return tuple(index)


def _dynamic_slice_impl(x, *starts, sizes):
    x = x if type(x) is ndarray else np.asarray(x)
    return x[_block([_clamp_start(s, n, k) for s, n, k in zip(starts, x.shape, sizes)], sizes)]


def _check_starts(x, starts, what: str) -> None:
    if len(starts) != x.ndim:
        raise ValueError(
            f"{what}: the number of start indices ({len(starts)}) must match the number of "
            f"operand dimensions ({x.ndim}, shape {x.shape})"
        )
    for s in starts:
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"{what}: start indices must be integer scalars, got {s}")


def _dynamic_slice_abstract_eval(x, *starts, sizes):
    _check_starts(x, starts, "dynamic_slice")
    if len(sizes) != x.ndim or any(not 0 <= k <= n for k, n in zip(sizes, x.shape)):
        raise TypeError(
            f"dynamic_slice: slice_sizes {sizes} must have one size per dimension of the "
            f"operand, each between 0 and that dimension's size (shape {x.shape})"
        )
    return shaped_like(x, tuple(sizes))


def _dynamic_slice_vjp(g, x, *starts, out, sizes):
    zeros = filled(shape_of(x), 0, dtype_of(g))
    return (bind(dynamic_update_slice_p, zeros, g, *starts),) + (None,) * len(starts)


def _dynamic_slice_batch(values, dims, *, sizes):
    x, starts = values[0], values[1:]
    size = batch_size(values, dims)
    if all(d is None for d in dims[1:]):  # one block for every example: sliced at once
        x = move_batch_axis(x, dims[0], 0, size)
        return bind(dynamic_slice_p, x, 0, *starts, sizes=(size, *sizes)), 0
    # Blocks at each example's own position: a gather of the block's elements.
    batched_x = dims[0] is not None
    if batched_x:
        x = move_to_front(x, dims[0])
    shape = shape_of(x)[1:] if batched_x else shape_of(x)
    index = _batched_block(size, shape, sizes, starts, dims[1:], batched_x)
    return getitem(x, index), 0


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.sparsity = MOVEMENT
dynamic_slice_p.saves_inputs = False  # its vjp reads the starts and the operand's shape only
dynamic_slice_p.saves_output = False
dynamic_slice_p.impl = _dynamic_slice_impl
dynamic_slice_p.abstract_eval = _dynamic_slice_abstract_eval
dynamic_slice_p.jvp = lambda primals, tangents, *, out, sizes: (
    None if tangents[0] is None else bind(dynamic_slice_p, tangents[0], *primals[1:], sizes=sizes)
)
dynamic_slice_p.vjp = _dynamic_slice_vjp
dynamic_slice_p.batch = _dynamic_slice_batch
dynamic_slice_p.taylor = series.linear_rule(dynamic_slice_p)


def _dynamic_update_slice_impl(x, update, *starts):
    out = np.array(x, copy=True)
    update = update if type(update) is ndarray else np.asarray(update)
    sizes = update.shape
    out[_block([_clamp_start(s, n, k) for s, n, k in zip(starts, out.shape, sizes)], sizes)] = (
        update
    )
    return out


def _dynamic_update_slice_abstract_eval(x, update, *starts):
    _check_starts(x, starts, "dynamic_update_slice")
    if update.ndim != x.ndim or any(k > n for k, n in zip(update.shape, x.shape)):
        raise TypeError(
            f"dynamic_update_slice: the update's shape {update.shape} must have the operand's "
            f"rank and fit in its shape {x.shape}"
        )
    if update.dtype != x.dtype:
        raise TypeError(
            "dynamic_update_slice: the update and the operand must have the same dtype, got "
            f"{update.dtype} and {x.dtype}"
        )
    return x


def _dynamic_update_slice_jvp(primals, tangents, *, out):
    x, update, *starts = primals
    tx, tu = tangents[:2]
    if tx is None and tu is None:
        return None
    tx = filled(shape_of(x), 0, dtype_of(out)) if tx is None else tx
    tu = filled(shape_of(update), 0, dtype_of(out)) if tu is None else tu
    return bind(dynamic_update_slice_p, tx, tu, *starts)


def _dynamic_update_slice_vjp(g, x, update, *starts, out):
    sizes = shape_of(update)
    ct_x = bind(dynamic_update_slice_p, g, filled(sizes, 0, dtype_of(g)), *starts)
    ct_update = bind(dynamic_slice_p, g, *starts, sizes=sizes)
    return (ct_x, ct_update) + (None,) * len(starts)


def _dynamic_update_slice_batch(values, dims):
    x, update, starts = values[0], values[1], values[2:]
    size = batch_size(values, dims)
    x = move_batch_axis(x, dims[0], 0, size)
    update = move_batch_axis(update, dims[1], 0, size)
    if all(d is None for d in dims[2:]):
        return bind(dynamic_update_slice_p, x, update, 0, *starts), 0
    # Blocks at each example's own position: a scatter (no position is written twice).
    sizes = shape_of(update)[1:]
    index = _batched_block(size, shape_of(x)[1:], sizes, starts, dims[2:], True)
    return index_set(x, index, update), 0


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.sparsity = MOVEMENT
dynamic_update_slice_p.saves_inputs = False  # its vjp reads the starts and the shapes only
dynamic_update_slice_p.saves_output = False
dynamic_update_slice_p.impl = _dynamic_update_slice_impl
dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_abstract_eval
dynamic_update_slice_p.jvp = _dynamic_update_slice_jvp
dynamic_update_slice_p.vjp = _dynamic_update_slice_vjp
dynamic_update_slice_p.batch = _dynamic_update_slice_batch
dynamic_update_slice_p.taylor = series.linear_rule(dynamic_update_slice_p)


def _is_concrete(value) -> bool:
    return not isinstance(value, Tensor) or value._trace is EVAL_TRACE


def _start_list(start_indices, ndim: int, what: str) -> list:
    """The start indices as a list of scalars (a 1-d array is split), checked."""
    if isinstance(start_indices, (Tensor, ndarray)):
        if len(shape_of(start_indices)) != 1:
            raise ValueError(
                f"{what}: start indices must be a sequence of scalars or a 1-d array, got "
                f"shape {shape_of(start_indices)}"
            )
        if _is_concrete(start_indices):
            starts = list(np.asarray(_concrete(start_indices)))
        else:
            starts = [getitem(start_indices, k) for k in range(shape_of(start_indices)[0])]
    else:
        starts = list(start_indices)
    if len(starts) != ndim:
        raise ValueError(
            f"Length of slice indices must match number of operand dimensions ({len(starts)} vs "
            f"{ndim})"
        )
    for s in starts:
        if len(shape_of(s)) or not np.issubdtype(dtype_of(s), np.integer):
            raise TypeError(f"{what}: start indices must be integer scalars, got {s!r}")
    return starts


def _from_end(start, n: int, allow_negative: bool):
    """A start read from the end when negative (JAX's allow_negative_indices)."""
    if _is_concrete(start):
        start = int(_concrete(start))
        return start + n if start < 0 and allow_negative else start
    if not allow_negative or dtype_of(start).kind == "u":
        return start
    return where(less(start, 0), start + n, start)


def _starts(operand, start_indices, allow_negative, what: str) -> tuple[tuple, list]:
    shape = shape_of(operand)
    starts = _start_list(start_indices, len(shape), what)
    allow = [allow_negative] * len(shape) if isinstance(allow_negative, bool) else allow_negative
    if len(allow) != len(shape):
        raise ValueError(
            f"{what}: allow_negative_indices must be a bool or one per dimension ({len(shape)})"
        )
    return shape, [_from_end(s, n, a) for s, n, a in zip(starts, shape, allow)]


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The block of `operand` of shape `slice_sizes` starting at `start_indices` (JAX's
    `lax.dynamic_slice`): the starts may be traced (vmapped, staged by `jit`), the sizes are
    static.

    Each start is read from the end when negative (with `allow_negative_indices`), then
    clamped so that the block fits: a block that would run past the end ends there.

    Arguments:
        operand: the array to slice.
        start_indices: one integer scalar per dimension (a sequence, or a 1-d array).
        slice_sizes: the block's shape: one Python int per dimension.
        allow_negative_indices: a bool, or one per dimension.

    Returns:
        The block, of shape `slice_sizes`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.arange(12.0).reshape(3, 4)
        >>> ad.dynamic_slice(x, (1, 1), (2, 2))
        array([[ 5.,  6.],
               [ 9., 10.]])
        >>> ad.dynamic_slice(x, (1, 3), (2, 2))  # clamped: the block ends at the last column
        array([[ 6.,  7.],
               [10., 11.]])
        >>> ad.vmap(lambda i: ad.dynamic_slice(x[0], (i,), (2,)))(np.array([0, 2]))
        array([[0., 1.],
               [2., 3.]])
    """
    shape, starts = _starts(operand, start_indices, allow_negative_indices, "dynamic_slice")
    sizes = tuple(operator.index(k) for k in slice_sizes)
    if len(sizes) != len(shape) or any(not 0 <= k <= n for k, n in zip(sizes, shape)):
        raise TypeError(
            f"slice_sizes must be less than or equal to operand shape, got slice_sizes {sizes} "
            f"for operand shape {shape}"
        )
    return slice_block(operand, starts, sizes)


def slice_block(x, starts, sizes: tuple):
    """`dynamic_slice` of starts already read from the end: basic slicing where every start
    is concrete, else the primitive."""
    if all(_is_concrete(s) for s in starts):
        shape = shape_of(x)
        clamped = [_clamp_start(_concrete(s), n, k) for s, n, k in zip(starts, shape, sizes)]
        return getitem(x, _block(clamped, sizes))
    return bind(dynamic_slice_p, x, *starts, sizes=tuple(sizes))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """A copy of `operand` with `update` written as the block starting at `start_indices`
    (JAX's `lax.dynamic_update_slice`); the starts may be traced, and are read from the end
    when negative and clamped so that the block fits, as in `dynamic_slice`.

    Arguments:
        operand: the array to update (it is not changed).
        update: the block, of `operand`'s rank and dtype (a Python number is cast).
        start_indices: one integer scalar per dimension (a sequence, or a 1-d array).
        allow_negative_indices: a bool, or one per dimension.

    Returns:
        The updated copy.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.dynamic_update_slice(np.zeros(5), np.ones(2), (4,))  # clamped to fit
        array([0., 0., 0., 1., 1.])
    """
    shape, starts = _starts(operand, start_indices, allow_negative_indices, "dynamic_update_slice")
    if isinstance(update, (int, float, complex)):
        update = np.asarray(update, dtype_of(operand))
    ushape = shape_of(update)
    if len(ushape) != len(shape) or any(k > n for k, n in zip(ushape, shape)):
        raise TypeError(
            "dynamic_update_slice update shape must be smaller than operand shape, got update "
            f"shape {ushape} for operand shape {shape}"
        )
    if dtype_of(update) != dtype_of(operand):
        raise TypeError(
            "dynamic_update_slice update and operand dtypes must match, got "
            f"{dtype_of(update)} and {dtype_of(operand)}"
        )
    return update_block(operand, update, starts)


def update_block(x, update, starts):
    """`dynamic_update_slice` of starts already read from the end: an index_set where every
    start is concrete, else the primitive."""
    if all(_is_concrete(s) for s in starts):
        shape, sizes = shape_of(x), shape_of(update)
        clamped = [_clamp_start(_concrete(s), n, k) for s, n, k in zip(starts, shape, sizes)]
        return index_set(x, _block(clamped, sizes), update)
    return bind(dynamic_update_slice_p, x, update, *starts)


def dynamic_slice_in_dim(
    operand, start_index, slice_size: int, axis: int = 0, *, allow_negative_indices=True
):
    """`dynamic_slice` along one axis: `operand[..., start:start + slice_size]` at `axis`,
    the start traced or not, clamped to fit (JAX's `lax.dynamic_slice_in_dim`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.dynamic_slice_in_dim(np.arange(5.0), 4, 3)
        array([2., 3., 4.])
    """
    shape = shape_of(operand)
    axis = normalize_axis_index(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    allow = [False] * len(shape)
    allow[axis] = allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(
    operand, index, axis: int = 0, keepdims: bool = True, *, allow_negative_indices=True
):
    """`operand[..., index]` at `axis` for a traced `index` (clamped into range), keeping the
    axis (of size 1) unless `keepdims=False` (JAX's `lax.dynamic_index_in_dim`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.dynamic_index_in_dim(np.arange(6.0).reshape(2, 3), 2, axis=1, keepdims=False)
        array([2., 5.])
    """
    out = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    if keepdims:
        return out
    shape = shape_of(out)
    axis = normalize_axis_index(axis, len(shape))
    return reshape(out, shape[:axis] + shape[axis + 1 :])


def dynamic_update_slice_in_dim(
    operand, update, start_index, axis: int, *, allow_negative_indices=True
):
    """`dynamic_update_slice` along one axis: `update` written at `start_index` of `axis`
    (clamped to fit), from 0 along the others (JAX's `lax.dynamic_update_slice_in_dim`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.dynamic_update_slice_in_dim(np.zeros((3, 2)), np.ones((1, 2)), 1, axis=0)
        array([[0., 0.],
               [1., 1.],
               [0., 0.]])
    """
    shape = shape_of(operand)
    axis = normalize_axis_index(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    allow = [False] * len(shape)
    allow[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *, allow_negative_indices=True):
    """`operand` with `update` written at position `index` of `axis` (traced or not, clamped
    into range); `update` has `operand`'s shape without that axis, or with it of size 1
    (JAX's `lax.dynamic_update_index_in_dim`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.dynamic_update_index_in_dim(np.zeros((2, 3)), np.ones(2), 2, axis=1)
        array([[0., 0., 1.],
               [0., 0., 1.]])
    """
    shape = shape_of(operand)
    axis = normalize_axis_index(axis, len(shape))
    if isinstance(update, (int, float, complex)):
        update = np.asarray(update, dtype_of(operand))
    ushape = shape_of(update)
    if len(ushape) == len(shape) - 1:
        update = reshape(update, ushape[:axis] + (1,) + ushape[axis:])
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


# ---------------------------------------------------------------------------------------------
# Slices with traced bounds (`x[i:i + 3]` for a vmapped or staged `i`): a dynamic slice of the
# block the slice spans, then the rest of the index, static, on that block.


def _every_value(value, what: str):
    """Every value a traced integer takes: its value, or under vmap one per example (as an
    array holding them all). Staged (jit) values have none: ConcretizationError."""
    while _traced_bound(value):
        try:
            return np.asarray(value.primal())
        except ConcretizationError as e:
            raise ConcretizationError(
                f"A slice with a staged {what} (x[i:i + 3] under jit) has a length known only "
                "at run time. Use autodiff.dynamic_slice(x, (i,), (3,)) (JAX's "
                "lax.dynamic_slice: the size is static, the start may be staged), or mark the "
                f"bound static. ({e})"
            ) from e
        except TracerConversionError:  # a vmapped value: every example is in its batch
            value = value._value
    return np.asarray(value.primal() if isinstance(value, Tensor) else value)


def _one_value(value, what: str) -> int:
    """The value a traced integer takes in every example (IndexError if they differ)."""
    values = np.unique(_every_value(value, what))
    if values.size != 1:
        raise IndexError(
            f"A slice's {what} differs across the vmapped examples ({values.tolist()}): use "
            "a static one."
        )
    return int(values[0])


def _one_length(lengths) -> int:
    lengths = np.unique(lengths)
    if lengths.size != 1:
        raise IndexError(
            f"x[start:stop:step] under vmap selects a different number of elements in each "
            f"example ({lengths.tolist()}): each example's result must have one shape. Use "
            "autodiff.dynamic_slice, whose size is static (it clamps the start so that the "
            "block fits), or anp.where."
        )
    return int(lengths[0])


def _slice_block(part: slice, n: int):
    """For a slice with traced bounds along an axis of size `n`: (the first position of the
    block it spans, the block's size, the static slice selecting its elements in the block)."""
    if part.step is None:
        step = 1
    elif _traced_bound(part.step):
        step = _one_value(part.step, "step")
    else:
        step = operator.index(part.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lo, hi = (0, n) if step > 0 else (-1, n - 1)  # NumPy's bounds for a start or stop

    def adjusted(bound, default):
        if bound is None:
            return default
        if not _traced_bound(bound):
            bound = operator.index(bound)
            return max(bound + n, lo) if bound < 0 else min(bound, hi)
        return where(less(bound, 0), maximum(bound + n, lo), minimum(bound, hi))

    start = adjusted(part.start, 0 if step > 0 else n - 1)
    stop = adjusted(part.stop, n if step > 0 else -1)
    span = stop - start if step > 0 else start - stop
    lengths = np.maximum(0, -(-_every_value(span, "start or stop") // abs(step)))  # (ceiling)
    length = _one_length(lengths)
    width = (length - 1) * abs(step) + 1 if length else 0
    if not length:
        first = 0
    elif step > 0:
        first = start
    else:
        first = start - (length - 1) * abs(step)
    return first, width, slice(None, None, step) if step != 1 else slice(None)


def dynamic_parts(x, index) -> tuple[list, tuple, tuple]:
    """For an index with traced slice bounds: `(starts, sizes, rest)` such that `x[index]` is
    `slice_block(x, starts, sizes)[rest]` (the rest of the index static where it was)."""
    shape = shape_of(x)
    ndim = len(shape)
    parts = list(index) if type(index) is tuple else [index]
    parts = [p if type(p) is slice or _holds_traced(p) else _index_part(p) for p in parts]
    used = [_dims_used(p) for p in parts if p is not Ellipsis]
    if sum(used) > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {sum(used)} were indexed"
        )
    starts, sizes, rest, axis = [0] * ndim, list(shape), [], 0
    for p in parts:
        if p is Ellipsis:
            axis += ndim - sum(used)
        elif type(p) is slice and _traced_slice(p):
            starts[axis], sizes[axis], p = _slice_block(p, shape[axis])
            axis += 1
        else:
            axis += _dims_used(p)
        rest.append(p)
    return starts, tuple(sizes), tuple(rest)


FUNCTIONS = {f.__name__: f for f in (getitem, index_set, take, take_along_axis)}
