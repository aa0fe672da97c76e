"""The vmap transform: map a function over an axis of its inputs with batch rules, not a loop."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

import numpy as np

from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import new_trace
from autodiff.ops.shape import FUNCTIONS as shape_ops
from autodiff.ops.structural import shape_of
from autodiff.vmap.trace import BatchTrace, BatchTracer, move_batch_axis


def _prefix_leaves(prefix, tree, what: str) -> list:
    """Broadcast a pytree prefix (`in_axes`/`out_axes`) to the leaves of `tree`."""
    if prefix is None or isinstance(prefix, (int, np.integer)):
        return [prefix] * len(tree_flatten(tree)[0])
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(prefix) != len(tree):
            raise ValueError(
                f"vmap {what} specification must be a tree prefix of the corresponding value, got "
                f"a {type(prefix).__name__} of length {len(prefix)} for a value with {len(tree)} "
                "entries."
            )
        return [ax for p, t in zip(prefix, tree) for ax in _prefix_leaves(p, t, what)]
    if isinstance(prefix, dict) and isinstance(tree, dict):
        if set(prefix) != set(tree):
            raise ValueError(
                f"vmap {what} specification keys {sorted(prefix)} do not match the value's keys "
                f"{sorted(tree)}."
            )
        return [
            ax for k in sorted(tree, key=str) for ax in _prefix_leaves(prefix[k], tree[k], what)
        ]
    leaves_p, def_p = tree_flatten(prefix)
    leaves_t, def_t = tree_flatten(tree)
    if def_p != def_t:
        raise ValueError(
            f"vmap {what} specification must be a tree prefix of the corresponding value, got "
            f"{def_p} for {def_t}."
        )
    return leaves_p


def vmap(
    fun: Callable,
    in_axes=0,
    out_axes=0,
    axis_size: int | None = None,
    chunk_size: int | None = None,
) -> Callable:
    """Vectorise `fun` over an axis of its arguments.

    Arguments:
        fun: a function of arrays / pytrees of arrays.
        in_axes: for each positional argument, the axis to map (an int, negative allowed) or
            None to broadcast it; an int applies to all; any pytree prefix of the arguments.
        out_axes: where the mapped axis goes in each output (int, None for outputs that do
            not depend on the mapped inputs, or a pytree prefix).
        axis_size: the mapped size, needed only when no argument is mapped.
        chunk_size: process the batch in chunks of this size to bound memory.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> dot = ad.vmap(lambda row, w: anp.sum(row * w), in_axes=(0, None))
        >>> dot(np.ones((3, 2)), np.array([1.0, 2.0]))
        array([3., 3., 3.])
    """

    @wraps(fun)
    def vmapped(*args):
        if isinstance(in_axes, list):
            axes_spec = tuple(in_axes)
        else:
            axes_spec = in_axes
        if isinstance(axes_spec, tuple) and len(axes_spec) != len(args):
            raise ValueError(
                f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                f"positional arguments passed to the function, but got "
                f"len(in_axes)={len(axes_spec)}, "
                f"len(args)={len(args)}"
            )
        leaves, treedef = tree_flatten(args)
        axes = _prefix_leaves(axes_spec, args, "in_axes")
        leaves = [
            x if isinstance(x, (Tensor, np.ndarray)) or ax is None else np.asarray(x)
            for x, ax in zip(leaves, axes)
        ]
        norm_axes = []
        sizes = []
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                norm_axes.append(None)
                continue
            nd = len(shape_of(x))
            if not -nd <= ax < nd:
                raise ValueError(
                    f"vmap was requested to map its argument along axis {ax}, which implies that "
                    f"its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is only {nd} "
                    f"(its shape is {tuple(shape_of(x))}) for {_describe_leaf(args, i)}."
                )
            norm_axes.append(ax % nd)
            sizes.append((_describe_leaf(args, i), ax, shape_of(x)[ax % nd]))
        size = _common_size(sizes, axis_size)
        if chunk_size is not None and size > chunk_size:
            chunks = (
                vmapped_once(
                    _slice_leaves(leaves, norm_axes, start, chunk_size),
                    treedef,
                    norm_axes,
                    min(chunk_size, size - start),
                )
                for start in range(0, size, chunk_size)
            )
            return _join_chunks(chunks, out_axes, size)
        return vmapped_once(leaves, treedef, norm_axes, size)

    def vmapped_once(leaves, treedef, norm_axes, size):
        with new_trace(BatchTrace, size) as trace:
            wrapped = [
                x if ax is None else BatchTracer(x, trace, ax) for x, ax in zip(leaves, norm_axes)
            ]
            out = fun(*tree_unflatten(treedef, wrapped))
        out_leaves, out_def = tree_flatten(out)
        o_axes = _prefix_leaves(out_axes, out, "out_axes")
        results = []
        for o, ax in zip(out_leaves, o_axes):
            batched = isinstance(o, BatchTracer) and o._trace is trace
            if ax is None:
                if batched:
                    raise ValueError(
                        "vmap has mapped output but out_axes is None: an output that depends on a "
                        "mapped input must have an out_axes."
                    )
                results.append(o)
                continue
            value = (
                o._value
                if batched
                else (o if isinstance(o, (Tensor, np.ndarray)) else np.asarray(o))
            )
            ndim = len(shape_of(value)) + (0 if batched else 1)
            if not -ndim <= ax < ndim:
                raise ValueError(
                    f"vmap out_axes={ax} is out of range for an output of rank {ndim - 1}."
                )
            results.append(move_batch_axis(value, o._bdim if batched else None, ax % ndim, size))
        return tree_unflatten(out_def, results)

    return vmapped


def _describe_leaf(args, leaf_index: int) -> str:
    """'argument 1' or 'argument 1 (leaf 2 of its pytree)' for a flat leaf index."""
    for pos, arg in enumerate(args):
        n = len(tree_flatten(arg)[0])
        if leaf_index < n:
            simple = n == 1 and tree_flatten(arg)[0][0] is arg
            return (
                f"argument {pos}" if simple else f"argument {pos} (leaf {leaf_index} of its pytree)"
            )
        leaf_index -= n
    return f"leaf {leaf_index}"


def _common_size(sizes, axis_size):
    if not sizes:
        if axis_size is None:
            raise ValueError(
                "vmap must have at least one non-None value in in_axes, or axis_size set."
            )
        return axis_size
    distinct = {s for _, _, s in sizes}
    if axis_size is not None:
        distinct.add(axis_size)
    if len(distinct) > 1:
        lines = "\n".join(f"  {name} has size {s} along axis {ax}" for name, ax, s in sizes)
        extra = f"\n  axis_size is {axis_size}" if axis_size is not None else ""
        raise ValueError(f"vmap got inconsistent sizes for the mapped axes:\n{lines}{extra}")
    return distinct.pop()


def _slice_leaves(leaves, axes, start: int, length: int) -> list:
    return [
        x if ax is None else x[(slice(None),) * ax + (slice(start, start + length),)]
        for x, ax in zip(leaves, axes)
    ]


def _join_chunks(chunks, out_axes, size: int):
    """Join per-chunk outputs along each output's mapped axis.

    Concrete arrays are copied into one preallocated result as each chunk arrives, so
    peak memory is the result plus one chunk; traced outputs are concatenated.
    """
    out_def = axes = None
    joined: list = []
    offset = 0
    for chunk in chunks:
        flat, treedef = tree_flatten(chunk)
        if out_def is None:
            out_def = treedef
            axes = [
                None if a is None else a % len(shape_of(f))
                for a, f in zip(_prefix_leaves(out_axes, chunk, "out_axes"), flat)
            ]
            joined = [_new_result(f, a, size) for f, a in zip(flat, axes)]
        length = None
        for j, (piece, ax) in enumerate(zip(flat, axes)):
            if ax is None:
                continue
            length = shape_of(piece)[ax]
            if isinstance(joined[j], np.ndarray) and isinstance(piece, np.ndarray):
                joined[j][(slice(None),) * ax + (slice(offset, offset + length),)] = piece
            else:
                if isinstance(joined[j], np.ndarray):  # a traced chunk after concrete ones
                    joined[j] = [joined[j][(slice(None),) * ax + (slice(0, offset),)]]
                joined[j].append(piece)
        offset += length or 0
    results = []
    for value, ax in zip(joined, axes):
        if isinstance(value, list):
            value = shape_ops["concatenate"](value, axis=ax)
        results.append(value)
    return tree_unflatten(out_def, results)


def _new_result(first, axis, size):
    """A preallocated array for a concrete mapped output, or a list collecting traced ones."""
    if axis is None:
        return first
    if type(first) is np.ndarray:
        shape = list(first.shape)
        shape[axis] = size
        return np.empty(shape, first.dtype)
    return []
