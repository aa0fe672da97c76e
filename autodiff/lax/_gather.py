"""`autodiff.lax`'s `gather` and `scatter` family, with XLA's dimension numbers.

Composites over NumPy-style advanced indexing: every slice of a gather (a scatter's update
window) becomes one integer index array per operand dimension, start plus offset, so the
whole operation is one `getitem` (one indexed update) and differentiates and batches as
those do. Out-of-bounds windows follow `mode`: clamped ('clip', and 'promise_in_bounds', gather's
default), or filled / dropped ('fill', scatter's default), as in JAX.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as onp

import autodiff.numpy as anp
from autodiff.ops.at import at
from autodiff.ops.index import getitem


class GatherDimensionNumbers(NamedTuple):
    """How a gather's indices and slices map onto the operand and the result (XLA's)."""

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter's indices and update windows map onto the operand (XLA's)."""

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    """What out-of-bounds indices do: clamp, fill (gather) / drop (scatter), or are promised
    not to occur (clamped here)."""

    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2
    ONE_HOT = 3

    @staticmethod
    def from_any(s):
        """`s` (a mode, its lowercase name, or None: FILL_OR_DROP) as a GatherScatterMode."""
        if isinstance(s, GatherScatterMode):
            return s
        names = {
            "clip": GatherScatterMode.CLIP,
            None: GatherScatterMode.FILL_OR_DROP,
            "fill": GatherScatterMode.FILL_OR_DROP,
            "drop": GatherScatterMode.FILL_OR_DROP,
            "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
        }
        if s not in names:
            raise ValueError(f"Unknown gather mode {s!r}")
        return names[s]


def _starts(shape, indices, sizes, index_map, batching):
    """Per operand dimension, the windows' start (an integer array over the index batch
    shape), and a mask of the windows that lie in bounds."""
    batch_shape = indices.shape[:-1]
    inside = onp.ones(batch_shape, bool)
    starts = []
    for d, (n, size) in enumerate(zip(shape, sizes)):
        if d in index_map:
            start = indices[..., index_map.index(d)].astype(anp.int64)
            inside = anp.logical_and(inside, (start >= 0) & (start <= n - size))
            starts.append(anp.clip(start, 0, n - size))
        elif d in batching[0]:
            axis = batching[1][batching[0].index(d)]
            lifted = [1] * len(batch_shape)
            lifted[axis] = batch_shape[axis]
            starts.append(onp.arange(batch_shape[axis]).reshape(lifted))
        else:
            starts.append(onp.zeros((1,) * len(batch_shape), onp.int64))
    return starts, inside


def _window_index(starts, sizes) -> tuple:
    """Index arrays, one per operand dimension, of shape batch + sizes (broadcast)."""
    r = len(sizes)
    index = []
    for d, (start, size) in enumerate(zip(starts, sizes)):
        lifted = [1] * r
        lifted[d] = size
        index.append(
            anp.reshape(start, anp.shape(start) + (1,) * r) + onp.arange(size).reshape(lifted)
        )
    return tuple(index)


def _fill_value(dtype, fill_value):
    if fill_value is not None:
        return fill_value
    if anp.issubdtype(dtype, anp.inexact):
        return onp.nan
    if anp.issubdtype(dtype, anp.bool_):
        return True
    info = onp.iinfo(dtype)
    return info.min if anp.issubdtype(dtype, anp.signedinteger) else info.max


def gather(
    operand,
    start_indices,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes,
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode=None,
    fill_value=None,
):
    """Slices of `operand` of `slice_sizes`, starting where `start_indices` (its last
    dimension the index vector) says: XLA's gather.

    Example:
        >>> dn = GatherDimensionNumbers((1,), (0,), (0,))  # (offset, collapsed, index map)
        >>> gather(anp.arange(6.0).reshape(3, 2), anp.array([[2], [0]]), dn, (1, 2)).tolist()
        [[4.0, 5.0], [0.0, 1.0]]
    """
    dn = dimension_numbers
    x, indices = anp.asarray(operand), anp.asarray(start_indices)
    sizes = tuple(int(s) for s in slice_sizes)
    if len(sizes) != x.ndim or indices.ndim < 1 or indices.shape[-1] != len(dn.start_index_map):
        raise ValueError(
            f"gather: slice_sizes {sizes} must have operand's rank {x.ndim} and start_indices' "
            f"last dimension the {len(dn.start_index_map)} entries of start_index_map"
        )
    # (lax.gather's default is PROMISE_IN_BOUNDS, unlike scatter's and `from_any`'s)
    mode = GatherScatterMode.from_any("promise_in_bounds" if mode is None else mode)
    batching = (tuple(dn.operand_batching_dims), tuple(dn.start_indices_batching_dims))
    starts, inside = _starts(x.shape, indices, sizes, tuple(dn.start_index_map), batching)
    out = getitem(x, _window_index(starts, sizes))
    nb = indices.ndim - 1
    if mode is GatherScatterMode.FILL_OR_DROP:
        keep = anp.reshape(inside, anp.shape(inside) + (1,) * x.ndim)
        out = anp.where(keep, out, anp.asarray(_fill_value(x.dtype, fill_value), dtype=x.dtype))
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offsets = [d for d in range(x.ndim) if d not in dropped]
    out = anp.reshape(out, out.shape[:nb] + tuple(sizes[d] for d in offsets))
    batch_dims = iter(range(nb))
    order = [
        nb + list(dn.offset_dims).index(p) if p in dn.offset_dims else next(batch_dims)
        for p in range(out.ndim)
    ]
    return anp.transpose(out, order)


def _scatter(operand, scatter_indices, updates, dn: ScatterDimensionNumbers, mode, update):
    x, indices, updates = anp.asarray(operand), anp.asarray(scatter_indices), anp.asarray(updates)
    nb = indices.ndim - 1
    inserted = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window = [d for d in range(x.ndim) if d not in inserted]
    window_dims = tuple(dn.update_window_dims)
    if len(window_dims) != len(window) or updates.ndim != nb + len(window):
        raise ValueError(
            f"scatter: updates of shape {updates.shape} do not match the dimension numbers {dn}"
        )
    scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
    updates = anp.transpose(updates, scatter_dims + list(window_dims))
    sizes = [1] * x.ndim
    for i, d in enumerate(window):
        sizes[d] = updates.shape[nb + i]
    updates = anp.reshape(updates, updates.shape[:nb] + tuple(sizes))
    batching = (tuple(dn.operand_batching_dims), tuple(dn.scatter_indices_batching_dims))
    index_map = tuple(dn.scatter_dims_to_operand_dims)
    starts, inside = _starts(x.shape, indices, sizes, index_map, batching)
    if GatherScatterMode.from_any(mode) is not GatherScatterMode.FILL_OR_DROP:
        return update(at(x)[_window_index(starts, sizes)], updates)
    # Dropped windows land in a margin past the end, cut off afterwards.
    margin = anp.pad(x, [(0, s) for s in sizes])
    starts = [
        anp.where(inside, s, n) if d in index_map else s
        for d, (s, n) in enumerate(zip(starts, x.shape))
    ]
    out = update(at(margin)[_window_index(starts, sizes)], updates)
    return out[tuple(slice(0, n) for n in x.shape)]


def scatter(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """`operand` with windows overwritten by `updates` at `scatter_indices` (XLA's scatter;
    of overlapping writes, one wins).

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))  # (window dims, inserted, index map)
        >>> scatter(anp.zeros(3), anp.array([[2]]), anp.array([5.0]), dn).tolist()
        [0.0, 0.0, 5.0]
    """
    return _scatter(
        operand, scatter_indices, updates, dimension_numbers, mode, lambda r, u: r.set(u)
    )


def scatter_add(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """`operand` with `updates` added into windows at `scatter_indices` (repeats accumulate).

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))  # (window dims, inserted, index map)
        >>> scatter_add(anp.zeros(3), anp.array([[2], [2]]), anp.array([5.0, 1.0]), dn).tolist()
        [0.0, 0.0, 6.0]
    """
    return _scatter(
        operand, scatter_indices, updates, dimension_numbers, mode, lambda r, u: r.add(u)
    )


def scatter_sub(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """`operand` with `updates` subtracted from windows at `scatter_indices`.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))  # (window dims, inserted, index map)
        >>> scatter_sub(anp.zeros(2), anp.array([[1]]), anp.array([5.0]), dn).tolist()
        [0.0, -5.0]
    """
    return _scatter(
        operand, scatter_indices, updates, dimension_numbers, mode, lambda r, u: r.add(-u)
    )


def scatter_mul(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """`operand` with windows at `scatter_indices` multiplied by `updates`.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))  # (window dims, inserted, index map)
        >>> scatter_mul(anp.ones(2), anp.array([[1]]), anp.array([5.0]), dn).tolist()
        [1.0, 5.0]
    """
    return _scatter(
        operand, scatter_indices, updates, dimension_numbers, mode, lambda r, u: r.multiply(u)
    )


def scatter_min(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """`operand` with windows at `scatter_indices` lowered to `updates` where smaller.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))  # (window dims, inserted, index map)
        >>> scatter_min(anp.ones(2), anp.array([[1]]), anp.array([-5.0]), dn).tolist()
        [1.0, -5.0]
    """
    return _scatter(
        operand, scatter_indices, updates, dimension_numbers, mode, lambda r, u: r.min(u)
    )


def scatter_max(
    operand,
    scatter_indices,
    updates,
    dimension_numbers,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """`operand` with windows at `scatter_indices` raised to `updates` where larger.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))  # (window dims, inserted, index map)
        >>> scatter_max(anp.ones(2), anp.array([[1]]), anp.array([5.0]), dn).tolist()
        [1.0, 5.0]
    """
    return _scatter(
        operand, scatter_indices, updates, dimension_numbers, mode, lambda r, u: r.max(u)
    )
