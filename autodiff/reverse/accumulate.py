"""Cotangent accumulation: adding the cotangents a node receives, and recycling their memory.

Every contribution to a node's cotangent comes here (`route`, `route_one`), whatever its kind:
a NumPy array or scalar, a lazy cotangent (kernels/fused.py: their sum stays lazy when it
fits), a Tensor or tracer of a recorded pass (`add`). A sum the pass made itself is seen by
no one else until its node runs, so later contributions are added into it in place
(`owned`); large sums go into recycled memory (core/buffers.py), and `recycle` hands back
what a node's run left that only the pass held. The engine's hot loop inlines the commonest
cases of `route_one` (reverse/engine.py's `_walk`). `RELEASED_MESSAGE` is the error of a pass
that reaches a node whose residuals an earlier pass released (torch's wording, kept for
every pass).
"""

from __future__ import annotations

# (numpy's module-level __getattr__ keeps CPython from specializing `np.name` loads: these run
# once per cotangent.)
from numpy import add as _np_add
from numpy import ndarray

from autodiff.core import buffers
from autodiff.core.dtypes import SCALARS
from autodiff.core.graph import MANY, ONE, RELEASED
from autodiff.kernels import fused
from autodiff.kernels.fused import Lazy
from autodiff.ops.elementwise import add

RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def route(cts: dict, owned: set, parents: tuple, in_cts, large: bool) -> None:
    """Send each input cotangent to the node of its edge (see `route_one`)."""
    for edge, in_ct in zip(parents, in_cts):
        if edge is not None and in_ct is not None:
            route_one(cts, owned, edge, in_ct, large)


def route_one(cts: dict, owned: set, edge, ct, large: bool) -> None:
    """Add the cotangent `ct` to what the node of `edge` has pending in `cts`.

    `owned`: the nodes whose pending cotangent is an array this pass made (later
    contributions of its shape and dtype are added into it); `large`: sums go into recycled
    memory.

    Example:
        >>> import numpy as np
        >>> from autodiff.core.graph import Node
        >>> node, cts, owned = Node(), {}, set()
        >>> route_one(cts, owned, node, np.ones(2), False)
        >>> route_one(cts, owned, node, np.ones(2), False)
        >>> cts[node], node in owned
        (array([2., 2.]), True)
    """
    if type(edge) is tuple:  # (see graph.edge_pair)
        parent = edge[0]
        pprim = parent.prim
        if pprim is not None and pprim.multiple_results:
            _add_to_output(cts, parent, edge[1], ct)
            return
    else:  # a functional trace's node of one output
        parent = edge
    prev = cts.get(parent)
    if prev is None:
        cts[parent] = ct
    elif parent in owned and _same_array_kind(prev, ct):
        _np_add(prev, ct, out=prev)
    elif type(prev) is ndarray and type(ct) is ndarray and not large:  # (`add_cotangents`'s)
        cts[parent] = _np_add(prev, ct)
        owned.add(parent)
    else:
        total = add_cotangents(prev, ct, large)
        cts[parent] = total
        if type(total) is ndarray:
            owned.add(parent)


def add_cotangents(total, ct, large: bool = False):
    """`total + ct` for two cotangents of one node, as cheaply as their kinds allow (a new
    value: neither is written).

    Example:
        >>> import numpy as np
        >>> add_cotangents(np.ones(2), np.full(2, 2.0))
        array([3., 3.])
    """
    if type(total) is ndarray and type(ct) is ndarray:
        return buffers.ufunc_into(_np_add, (total, ct)) if large else _np_add(total, ct)
    if type(total) is Lazy or type(ct) is Lazy:
        lazy_sum = fused.accumulate(total, ct)
        if lazy_sum is None:  # (they do not fit together)
            return add(fused.materialize(total), fused.materialize(ct))
        return lazy_sum
    if type(total) is type(ct) and type(total) in SCALARS:
        return total + ct  # (NumPy scalars: a parameter's)
    return add(total, ct)


def _same_array_kind(a, b) -> bool:
    return type(a) is ndarray and type(b) is ndarray and a.shape == b.shape and a.dtype == b.dtype


def _add_to_output(cts: dict, node, index: int, ct) -> None:
    """Add `ct` to output `index` of a node of several outputs (its cotangents: a list)."""
    slots = cts.get(node)
    if slots is None:
        if node.out is None:  # released by an earlier backward pass
            raise RuntimeError(RELEASED_MESSAGE)
        slots = cts[node] = [None] * len(node.out)
    ct = fused.materialize(ct)
    slots[index] = ct if slots[index] is None else add(slots[index], ct)


def seed(roots: list, root_cts) -> dict:
    """The pending cotangents of a pass: the seeds `root_cts`, at their edges `roots`."""
    cts: dict = {}
    owned: set = set()
    for edge, ct in zip(roots, root_cts):
        if ct is not None:
            route_one(cts, owned, edge, ct, False)
    return cts


def recycle(node, ct) -> None:
    """Pool the large arrays only the pass holds once `node` ran: its cotangent `ct` and its
    residuals (none of which may be large enough to pool: then nothing is called)."""
    least = buffers.POOL_MIN_BYTES
    if type(ct) is ndarray and ct.nbytes >= least:
        buffers.give_if_unshared(ct, 2)  # (`ct`, and the caller's)
    ct = None
    out, x0, p1 = node.out, node.x0, node.p1  # (Node.primals, read from its slots)
    residuals = (
        () if x0 is RELEASED else (x0,) if p1 is ONE else x0 if p1 is MANY else (x0, node.x1)
    )
    large = type(out) is ndarray and out.nbytes >= least
    for r in residuals:
        large = large or (type(r) is ndarray and r.nbytes >= least)
    out = x0 = r = residuals = None  # (no reference of this frame may keep one from the pool)
    if large and not node.keeps_shapes():
        buffers.release_node(node)


__all__ = ["RELEASED_MESSAGE", "add_cotangents", "recycle", "route", "route_one", "seed"]
