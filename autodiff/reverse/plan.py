"""Which nodes a backward pass runs, and in which order: the graph walk's plan.

`collect` finds the nodes reachable from the roots (an explicit stack, no recursion) and
counts, for each, the edges from reachable consumers into it; `prune` keeps the nodes from
which a target is reached. The pass runs them in decreasing sequence number: every
consumer of a node has a larger number, so a node's summed cotangent is complete when it
runs.
"""

from __future__ import annotations

from operator import attrgetter

from autodiff.core.graph import MANY, ONE, edge_node

_by_seq = attrgetter("seq")


def collect(roots, count: bool = True) -> tuple[list, dict]:
    """Reachable nodes sorted by increasing sequence number, and (with `count`) their
    dependency counts."""
    seen = set()
    add_seen = seen.add
    order = []
    deps: dict = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        add_seen(node)
        order.append(node)
        p1 = node.p1  # (Node.parents, read from its slots: once per node of every pass)
        for edge in (node.p0,) if p1 is ONE else node.p0 if p1 is MANY else (node.p0, p1):
            if edge is not None:
                parent = edge[0] if type(edge) is tuple else edge
                if count:
                    deps[parent] = deps.get(parent, 0) + 1
                if parent not in seen:
                    stack.append(parent)
    order.sort(key=_by_seq)
    return order, deps


def prune_plan(order: list, targets, capture_only) -> tuple[list, dict, set, set]:
    """Keep the nodes from which a target can be reached (a list in `order`'s order, and a
    set); count dependencies among them.

    Also returns the `capture_only` targets from which no other target can be reached:
    as in torch's autograd.grad, such a node is not executed (its gradient is only
    captured), so its node hooks and vjp rule do not run and its residuals are kept.
    """
    useful = set()
    ends = set()
    kept = []
    deps: dict = {}
    for node in order:  # parents first
        reaches = False
        p1 = node.p1  # (Node.parents, as in `collect`)
        for e in (node.p0,) if p1 is ONE else node.p0 if p1 is MANY else (node.p0, p1):
            if e is None:
                continue
            parent = e[0] if type(e) is tuple else e
            if parent in useful:
                reaches = True
                deps[parent] = deps.get(parent, 0) + 1
        if reaches:
            useful.add(node)
            kept.append(node)
        elif node in targets:
            useful.add(node)
            kept.append(node)
            if node in capture_only:
                ends.add(node)
    return kept, deps, ends, useful


class Plan:
    """The nodes a pass runs (`order`, increasing sequence numbers), their dependency counts
    (`deps`: empty when leaves are read at the end), the captured-only targets (`ends`) and,
    after pruning, the set of nodes that run (`kept`; None when not pruned). Made from the
    pass's `roots` (edges), or a functional trace's `order`, and its hooks
    (reverse/engine.py's `PassHooks`: do leaves run when ready, what a pruned pass
    targets)."""

    __slots__ = ("order", "deps", "ends", "kept")

    def __init__(self, roots, order, hooks, prune: bool):
        self.ends = frozenset()
        self.kept = None
        if order is not None:  # a functional trace's tape: all its nodes, in sequence order
            self.order, self.deps = order, {}
        else:
            # Leaves read at the end need no counts (a pruned pass counts dependencies among
            # the nodes it keeps).
            count = hooks.leaves_when_ready and not prune
            self.order, self.deps = collect([e[0] for e in roots], count=count)
        if prune:
            captured, executed = hooks.targets()
            self.order, self.deps, self.ends, self.kept = prune_plan(
                self.order, captured | executed, captured - executed
            )


def node_needs(parents: tuple, kept: set | None = None) -> tuple:
    """Which of a node's inputs need a cotangent (a rule's `needs`): those with an edge into a
    node the pass runs. As with torch's `should_compute_output`, a branch that
    autograd.grad(inputs=...) pruned gets no cotangent at all (for a matmul: one product
    less)."""
    if kept is None:
        return tuple([edge is not None for edge in parents])
    return tuple([edge is not None and edge_node(edge) in kept for edge in parents])


__all__ = ["Plan", "collect", "node_needs", "prune_plan"]
