"""The backward engine: one iterative walk used by every reverse-mode entry point.

1. Collect the nodes reachable from the roots (an explicit stack, no recursion).
2. Order them by decreasing sequence number: a node runs only after every node
   that consumes its output has run, so its cotangent is complete (fan-in summed).
3. Optionally prune nodes that cannot reach any target (`targets`).
4. Run each node's vjp rule on its summed cotangent and route the results to its
   parents; leaves (`prim is None`) collect their cotangent in the result.
"""
from __future__ import annotations

from operator import attrgetter

from autodiff.ops.elementwise import add

RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

_by_seq = attrgetter("seq")


def _reachable(roots) -> list:
    """All nodes reachable from `roots`, sorted by increasing sequence number."""
    seen = set()
    order = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        for edge in node.parents:
            if edge is not None and edge[0] not in seen:
                stack.append(edge[0])
    order.sort(key=_by_seq)
    return order


def _prune(order: list, targets) -> list:
    """Keep only the nodes from which some target can be reached (order is parents-first)."""
    useful = set()
    for node in order:
        if node in targets or any(e is not None and e[0] in useful for e in node.parents):
            useful.add(node)
    return [n for n in order if n in useful]


def _accumulate(cts: dict, node, index: int, ct) -> None:
    prim = node.prim
    if prim is not None and prim.multiple_results:
        slots = cts.get(node)
        if slots is None:
            slots = cts[node] = [None] * len(node.out)
        slots[index] = ct if slots[index] is None else add(slots[index], ct)
    else:
        prev = cts.get(node)
        cts[node] = ct if prev is None else add(prev, ct)


def backward_pass(roots, root_cts, *, retain_graph: bool = False, targets=None) -> dict:
    """Propagate cotangents from `roots` (a list of `(node, index)` edges) to the leaves.

    Returns a dict mapping each reached leaf node (and each node in `targets`) to
    its summed cotangent. Node rules see raw arrays or lower-level tracers, so the
    pass is itself recorded by any enclosing transform.
    """
    cts: dict = {}
    for (node, index), ct in zip(roots, root_cts):
        if ct is not None:
            _accumulate(cts, node, index, ct)
    order = _reachable([edge[0] for edge in roots])
    if targets is not None:
        order = _prune(order, targets)
    results = {}
    for node in reversed(order):
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if targets is not None and node in targets:
            results[node] = ct
        prim = node.prim
        if prim is None:
            results[node] = ct
            continue
        if node.primals is None:
            raise RuntimeError(RELEASED_MESSAGE)
        rule = prim.vjp or prim.rule("vjp")
        in_cts = rule(ct, *node.primals, out=node.out, **node.params)
        if not retain_graph:
            node.release()
        for edge, in_ct in zip(node.parents, in_cts):
            if edge is not None and in_ct is not None:
                _accumulate(cts, edge[0], edge[1], in_ct)
    return results


__all__ = ["RELEASED_MESSAGE", "backward_pass"]
