"""Shared batch rules (vmap) for primitives that map elementwise or keep their operand's layout.

A batch rule gets `(values, dims)` — `dims[i]` is the batch axis of `values[i]` or
None — and returns `(out, out_dim)`. Rules use autodiff ops so they nest.
"""

from __future__ import annotations

from autodiff.core.primitive import bind
from autodiff.ops.broadcast import shape_of


def move_to_front(x, bdim: int):
    """`x` with its batch axis first."""
    if bdim == 0:
        return x
    from autodiff.ops.shape import FUNCTIONS as shape_ops

    return shape_ops["moveaxis"](x, bdim, 0)


def move_batch_axis(x, bdim: int | None, dest: int, size: int):
    """`x` with its batch axis at `dest`; an unbatched `x` is broadcast along a new axis there."""
    from autodiff.ops.broadcast import broadcast_to
    from autodiff.ops.shape import FUNCTIONS as shape_ops

    if bdim is None:
        x = shape_ops["expand_dims"](x, dest)
        shape = list(shape_of(x))
        shape[dest] = size
        return broadcast_to(x, tuple(shape))
    if bdim == dest:
        return x
    return shape_ops["moveaxis"](x, bdim, dest)


def batch_size(values, dims) -> int:
    for v, d in zip(values, dims):
        if d is not None:
            return shape_of(v)[d]
    raise ValueError("no batched argument")


def align_for_broadcast(values, dims):
    """Batched values with the batch axis first and padded with 1-axes, so NumPy broadcasting
    of per-example shapes stays right-aligned; unbatched values are returned as they are."""
    from autodiff.ops.shape import FUNCTIONS as shape_ops

    ranks = [len(shape_of(v)) - (d is not None) for v, d in zip(values, dims)]
    rank = max(ranks)
    out = []
    for v, d, k in zip(values, dims, ranks):
        if d is None:
            out.append(v)
            continue
        v = move_to_front(v, d)
        if k < rank:
            s = shape_of(v)
            v = shape_ops["reshape"](v, (s[0],) + (1,) * (rank - k) + tuple(s[1:]))
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
