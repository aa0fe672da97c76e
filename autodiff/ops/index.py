"""Indexing: getitem (basic, advanced and boolean indices), take, take_along_axis, scatter_add.

`getitem_p` applies a NumPy index; `scatter_add_p` adds values of the indexed shape into
zeros at the indexed positions (duplicate indices accumulate). Both are linear and each
is the other's transpose, so gradients of any order work. Indices are constants: a
Tensor inside an index is read as its concrete value and never differentiated.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.kernels.scatter import scatter_add_rows
from autodiff.ops.broadcast import shape_of

_BASIC_TYPES = (int, np.integer, slice, type(Ellipsis), type(None))


def _concrete(part):
    """Tensors (at any level) become their values; nested sequences become lists."""
    if isinstance(part, Tensor):
        return part.primal()
    if isinstance(part, (list, tuple)):
        return [_concrete(p) for p in part]
    return part


def _index_part(part):
    if isinstance(part, Tensor):
        return np.asarray(part.primal())
    if isinstance(part, (list, tuple)):
        arr = np.asarray(_concrete(part))
        # NumPy reads an empty list as an empty integer index (np.asarray([]) is float64).
        return arr.astype(np.intp) if arr.size == 0 and arr.dtype == np.float64 else arr
    return part


def normalize_index(index) -> tuple:
    """`index` as a tuple whose arrays are concrete NumPy arrays (the form getitem_p stores)."""
    parts = index if isinstance(index, tuple) else (index,)
    return tuple(_index_part(p) for p in parts)


def _is_basic(index: tuple) -> bool:
    """Only ints, slices, Ellipsis and None: the result is a view, no position repeats."""
    return all(isinstance(p, _BASIC_TYPES) and not isinstance(p, bool) for p in index)


def _dims_used(part) -> int:
    """How many dimensions of the indexed array one (non-Ellipsis) index entry consumes."""
    if part is None or isinstance(part, (bool, np.bool_)):
        return 0
    if isinstance(part, np.ndarray) and part.dtype == np.bool_:
        return part.ndim
    return 1


def _is_full_slice(part) -> bool:
    return (
        isinstance(part, slice) and part.start is None and part.stop is None and part.step is None
    )


def _is_nonnegative_integer_array(part) -> bool:
    return (
        isinstance(part, np.ndarray)
        and part.dtype.kind in "iu"
        and (part.size == 0 or part.min() >= 0)
    )


def _row_positions(shape: tuple, index: tuple) -> tuple[np.ndarray, int]:
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


def _scatter_add_impl(values, *, shape, index):
    values = np.asarray(values)
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0 or _is_basic(index):
        out = np.zeros(shape, values.dtype)
        out[index] = values  # a basic index selects each position at most once
        return out
    rows, inner = _row_positions(shape, index)
    rows = rows.ravel()
    summed = scatter_add_rows(rows, values.reshape(rows.size, inner), size // inner)
    return summed.reshape(shape)


getitem_p = Primitive("getitem")
getitem_p.node_name = "IndexBackward0"
getitem_p.impl = lambda x, *, index: x[index]
getitem_p.jvp = lambda primals, tangents, *, out, index: (
    None if tangents[0] is None else _getitem(tangents[0], index)
)
getitem_p.vjp = lambda g, x, *, out, index: (scatter_add(g, shape_of(x), index),)

scatter_add_p = Primitive("scatter_add")
scatter_add_p.impl = _scatter_add_impl
scatter_add_p.jvp = lambda primals, tangents, *, out, shape, index: (
    None if tangents[0] is None else scatter_add(tangents[0], shape, index)
)
scatter_add_p.vjp = lambda g, values, *, out, shape, index: (_getitem(g, index),)


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
        if isinstance(p, np.ndarray):
            ones = (1,) * p.ndim
            return np.ones(ones, bool) if p.dtype == np.bool_ else np.zeros(ones, int)
        return 0 if isinstance(p, (int, np.integer)) else p

    batch = np.arange(2).reshape((2,) + (1,) * ndim)
    return batch[(slice(None),) + tuple(probe(p) for p in index)].shape.index(2)


def _moveaxis(x, source: int, dest: int):
    from autodiff.ops.shape import FUNCTIONS as shape_ops  # lazily, as in ops.batching

    return x if source == dest else shape_ops["moveaxis"](x, source, dest)


def _getitem_batch(values, dims, *, index):
    x = _moveaxis(values[0], dims[0], 0)
    return _getitem(x, (slice(None),) + index), _batched_axis(index, len(shape_of(x)) - 1)


def _scatter_add_batch(values, dims, *, shape, index):
    dest = _batched_axis(index, len(shape))
    v = _moveaxis(values[0], dims[0], dest)
    size = shape_of(v)[dest]
    return scatter_add(v, (size,) + tuple(shape), (slice(None),) + index), 0


getitem_p.batch = _getitem_batch
scatter_add_p.batch = _scatter_add_batch


def _getitem(x, index: tuple):
    return bind(getitem_p, x, index=index)


def scatter_add(values, shape: tuple, index):
    """Zeros of `shape` with `values` added at `x[index]`'s positions (repeats accumulate).

    The transpose of `getitem(x, index)`; `values` has the shape of that result.

    Example:
        >>> import numpy as np
        >>> scatter_add(np.array([1.0, 2.0, 3.0]), (4,), np.array([0, 3, 0]))
        array([4., 0., 0., 2.])
    """
    return bind(scatter_add_p, values, shape=tuple(shape), index=normalize_index(index))


def getitem(x, index):
    """`x[index]` with NumPy's semantics (basic, integer-array and boolean indices), differentiable.

    Repeated indices accumulate their gradients. Tensors inside `index` are constants.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp, numpy as np
        >>> ad.grad(lambda x: anp.sum(x[np.array([0, 2, 0])]))(np.ones(3))
        array([2., 0., 1.])
    """
    return _getitem(x, normalize_index(index))


def _check_bounds(indices: np.ndarray, size: int, axis: int) -> None:
    if indices.size and (indices.min() < -size or indices.max() >= size):
        bad = indices[(indices < -size) | (indices >= size)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")


def _integer_indices(indices) -> np.ndarray:
    arr = np.asarray(_concrete(indices))
    if arr.size == 0 and arr.dtype == np.float64:
        arr = arr.astype(np.intp)
    if not np.issubdtype(arr.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    return arr


def _take_flat(a, indices: np.ndarray):
    """`a.ravel()[indices]` as one getitem (in-bounds `indices`, negative ones from the end)."""
    shape = shape_of(a)
    if not shape:
        a, shape = _getitem(a, (None,)), (1,)
    size = int(np.prod(shape, dtype=np.int64))
    return _getitem(a, np.unravel_index(np.where(indices < 0, indices + size, indices), shape))


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
    return _getitem(a, (slice(None),) * axis + (idx,))


def _take_mode(idx: np.ndarray, size: int, mode: str, axis: int) -> np.ndarray:
    if mode == "wrap":
        return np.mod(idx, size) if size else idx
    if mode == "clip":
        return np.clip(idx, 0, size - 1) if size else idx
    _check_bounds(idx, size, axis)
    return idx


def take_along_axis(arr, indices, axis=-1):
    """`numpy.take_along_axis`: `arr` gathered with `indices` along `axis` (broadcasting the rest).

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
    return _getitem(arr, index)


FUNCTIONS = {
    "getitem": getitem,
    "take": take,
    "take_along_axis": take_along_axis,
}
