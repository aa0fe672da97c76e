"""The backward engine: one iterative walk used by every reverse-mode entry point.

1. Plan the pass (reverse/plan.py): the nodes reachable from the roots, optionally pruned
   to those from which a target is reached, with their dependency counts.
2. Run nodes in decreasing sequence number. Every consumer of a node has a larger number,
   so a node's summed cotangent is complete when it runs; among ready nodes this is also
   the highest-sequence-number-first order of PyTorch.
3. Per node: its vjp rule (`apply_rule`), then its input cotangents go to the nodes of its
   input edges, summed with what is there (reverse/accumulate.py).

What a pass does besides this walk — where leaves' gradients go, hooks, checks — is its
`PassHooks`, called at fixed points (see there). The default is the functional transforms'
pass: leaves' cotangents are read at the end and returned. The torch face's pass
(autograd/_pass.py) adds torch's semantics: hooks, retain_grad, AccumulateGrad, anomaly
mode, saved-tensor checks and its complex convention.

Rules see raw arrays, or Tensors/lower-level tracers when the pass must itself
be recorded (a functional transform nested in another, or a torch pass that creates a
graph). On raw arrays a primitive's NumPy form of its rule runs (`Primitive.fast.vjp`), which
may pass lazy cotangents on (kernels/fused.py); the arrays a pass alone holds go back to the
pool of recycled memory (core/buffers.py).

`reference_backward_pass` is the same computation in its plainest form (HIPS autograd's
loop: no fast rules, no memory recycling, no hooks); `use_reference_engine()` makes every
functional pass take it, and the tests run the op table through both.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

# (numpy's module-level __getattr__ keeps CPython from specializing `np.name` loads, so each
# is a full lookup: the per-node code uses this name.)
from numpy import ndarray

from autodiff.core.dtypes import SCALARS
from autodiff.core.graph import (
    KEEPS_SHAPES,
    MANY,
    ONE,
    RELEASED,
    Node,
    edge_node,
    edge_pair,
    keep_shapes,
)
from autodiff.core.primitive import NO_PARAMS
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.kernels import fused
from autodiff.kernels.fused import Lazy
from autodiff.ops.elementwise import add
from autodiff.reverse.accumulate import RELEASED_MESSAGE, recycle, route, route_one, seed
from autodiff.reverse.plan import Plan, collect, node_needs

# A node whose cotangent has this many elements or more has its arrays recycled after it ran
# (the cotangent and the residuals only this pass holds, core/buffers.py), and its cotangent
# sums go into recycled memory.
RECYCLE_MIN_SIZE = 1 << 12


class _EngineChoice(threading.local):
    def __init__(self):
        self.reference = False


_choice = _EngineChoice()


@contextmanager
def use_reference_engine(enabled: bool = True):
    """Run this thread's functional backward passes (grad, vjp, jacrev, ...) with
    `reference_backward_pass` inside the block (torch-style passes, with their hooks and
    sinks, always take the full engine).

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> with use_reference_engine():
        ...     float(ad.grad(lambda x: anp.sin(x) * x)(0.0))
        0.0
    """
    saved = _choice.reference
    _choice.reference = enabled
    try:
        yield
    finally:
        _choice.reference = saved


# ---------------------------------------------------------------------------------------------
# One node: its rule.


def apply_rule(node, ct, walk: Walk):
    """The input cotangents of `node` for its output cotangent `ct`: its primitive's NumPy rule
    when the cotangent and residuals are plain NumPy values (nothing records the pass),
    else its vjp rule (`vjp_of`). A node the face recorded has its saved values checked
    first (`PassHooks.check_saved`)."""
    walk.current = node
    if node.out is None:  # (released with its primals)
        raise RuntimeError(RELEASED_MESSAGE)
    if node.versions is not None:
        walk.hooks.check_saved(node)
    fast = node.prim.fast
    if fast.vjp is None or not node.raw or type(ct) in TENSOR_TYPES:
        return vjp_of(node, ct, walk.plan.kept)
    if type(ct) is Lazy or (type(ct) is ndarray and ct.size >= fused.FUSE_MIN_SIZE):
        if fast.fused_vjp is not None:
            return _numpy_rule(node, fast.fused_vjp, ct, walk.plan.kept)
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
    # (a smaller cotangent, and so output, is never fused: the fused rule would take the
    # NumPy one after its checks)
    return _numpy_rule(node, fast.vjp, ct, walk.plan.kept)


def _numpy_rule(node, rule, ct, kept):
    """`rule` (a NumPy form of the node's vjp rule) on `ct` and the node's residuals."""
    params = node.params
    if node.prim.vjp_takes_needs:
        needs = node_needs(node.parents, kept)
        return rule(ct, node.out, *node.primals, needs=needs, **params)
    p1 = node.p1  # (positional calls from the slots: no tuple of arguments, see Node)
    if params is not NO_PARAMS:
        if p1 is ONE:
            return rule(ct, node.out, node.x0, **params)
        return rule(ct, node.out, *node.primals, **params)
    if p1 is ONE:
        return rule(ct, node.out, node.x0)
    if p1 is MANY:
        return rule(ct, node.out, *node.x0)
    return rule(ct, node.out, node.x0, node.x1)


def vjp_of(node, ct, kept=None, primals=None, out=None):
    """`node`'s vjp rule (the one that differentiates again) applied to `ct` and its residuals
    (`primals` and `out`, or the node's own)."""
    if type(ct) is Lazy:
        ct = fused.evaluate(ct, 1)
    prim = node.prim
    if primals is None:
        primals, out = node.primals, node.out
    rule = prim.vjp or prim.rule("vjp")
    if prim.vjp_takes_needs:
        return rule(ct, *primals, out=out, needs=node_needs(node.parents, kept), **node.params)
    return rule(ct, *primals, out=out, **node.params)


# ---------------------------------------------------------------------------------------------
# The pass: its state, its hooks, the walk.


class Walk:
    """One backward pass's state, shared by the engine and the pass's hooks: the pending
    cotangents (`cts`: node -> cotangent, a list of them for a node of several outputs), the
    nodes whose pending cotangent is a sum this pass made (`owned`, see
    reverse/accumulate.py), the `plan`, whether the graph is kept (`retain`), the node
    running (`current`: set where user code may run and ask) and the leaves' cotangents read
    by the default hooks (`results`)."""

    __slots__ = ("cts", "owned", "plan", "retain", "hooks", "current", "results")

    def __init__(self, cts: dict, hooks: PassHooks, retain: bool, plan: Plan):
        self.cts = cts
        self.owned: set = set()
        self.plan = plan
        self.retain = retain
        self.hooks = hooks
        self.current = None
        self.results: dict = {}


class PassHooks:
    """What a backward pass does besides the functional walk: the engine calls these at fixed
    points, in this order.

    - `targets()` (a pruned pass only, before the plan): `(captured, executed)`, the sets of
      nodes whose gradient the pass captures and those it must run; nodes from which
      neither is reached are left out, and a captured node that reaches no other target
      does not run (`Plan.ends`).
    - `begin(walk, roots)`: the plan is made (`walk.plan.order`: the nodes the pass may
      run), no node has run.
    - `node(walk, node)`: an interior node the engine does not run itself (every one when
      `every_node` is true, else those with `node.extra` or several outputs), when its turn
      comes. It pops the node's cotangent from `walk.cts` (None: none reached it), routes
      its input cotangents (`accumulate.route`) and releases its residuals unless
      `walk.retain`.
    - `check_saved(node)`: before the rule of a node the face recorded (`node.versions` is
      not None) runs in the engine: may raise on a saved value changed since.
    - `leaf(walk, node)`: a leaf node (`prim is None`), which pops its cotangent from
      `walk.cts`. With `leaves_when_ready`, as soon as its last consumer has run (a leaf
      that is a root: first); else after every interior node, in sequence order.
    - `finish()`: every node has run; `end()`: the pass ends, normally or not.

    The defaults are the functional transforms' pass: the engine's rules, and each leaf's
    cotangent stored in `walk.results`, which `backward_pass` returns.
    """

    __slots__ = ()
    every_node = False
    leaves_when_ready = False

    def targets(self) -> tuple[set, set]:
        return set(), set()

    def begin(self, walk: Walk, roots: list) -> None:
        pass

    def node(self, walk: Walk, node) -> None:
        ct = walk.cts.pop(node, None)
        if ct is not None:
            walk.current = node
            if type(ct) is Lazy:  # (here, where `ct` is the one reference: see fused.evaluate)
                ct = fused.evaluate(ct, 1)
            if node.primals is None:
                raise RuntimeError(RELEASED_MESSAGE)
            if node.prim.multiple_results and all(g is None for g in ct):
                in_cts = ()  # (no gradient: the rule gives none)
            else:
                in_cts = vjp_of(node, ct, walk.plan.kept)
            parents = node.parents
            if not walk.retain:
                node.release()
            route(walk.cts, walk.owned, parents, in_cts, False)
        elif not walk.retain:
            node.release()

    def check_saved(self, node) -> None:
        pass

    def leaf(self, walk: Walk, node) -> None:
        ct = walk.cts.pop(node, None)
        if ct is not None:
            walk.results[node] = fused.evaluate(ct, 1) if type(ct) is Lazy else ct

    def finish(self) -> None:
        pass

    def end(self) -> None:
        pass


FUNCTIONAL = PassHooks()


def backward_pass(
    roots,
    root_cts,
    *,
    retain_graph: bool = False,
    hooks: PassHooks | None = None,
    prune: bool = False,
    order: list | None = None,
) -> dict:
    """Propagate cotangents from `roots` (a list of edges, see graph.edge_pair); returns
    `walk.results`.

    Without `hooks` (the functional transforms' use), that is a dict mapping each reached leaf
    node to its summed cotangent; they pass their trace's `order`, every node in increasing
    sequence number, which spares the graph walk. With `hooks`, the pass does what they say
    (see `PassHooks`), and `prune` keeps only the nodes from which one of their `targets`
    is reached.
    """
    if hooks is None:
        if _choice.reference:
            return reference_backward_pass(roots, root_cts, retain_graph=retain_graph)
        hooks = FUNCTIONAL
    roots = [edge_pair(edge) for edge in roots]
    cts = seed(roots, root_cts)
    plan = Plan(roots, order, hooks, prune)
    walk = Walk(cts, hooks, retain_graph, plan)
    try:
        hooks.begin(walk, roots)
        leaves = [node for node in plan.order if node.prim is None]
        if hooks.leaves_when_ready:  # (leaves that are roots themselves run first)
            leaves = [node for node in leaves if node not in plan.deps]
            for node in leaves:
                hooks.leaf(walk, node)
        _walk(plan, walk)
        if not hooks.leaves_when_ready:
            for node in leaves:
                hooks.leaf(walk, node)
        hooks.finish()
    finally:
        hooks.end()
    return walk.results


def _walk(plan: Plan, walk: Walk) -> None:  # noqa: C901 (the hot loop: its common case inline)
    """Run every node of `plan` that receives a cotangent, consumers first: the common node (one
    output, no `extra`) here, with `apply_rule`'s and `route_one`'s commonest cases unrolled
    (this runs once per node of every pass), the others through the pass's `node`."""
    cts, deps, owned, retain, hooks = walk.cts, plan.deps, walk.owned, walk.retain, walk.hooks
    pop, get, plain_pass = cts.pop, cts.get, not hooks.every_node
    for node in reversed(plan.order):
        prim = node.prim
        if prim is None:
            continue
        if not (plain_pass and node.extra is None and not prim.multiple_results):
            hooks.node(walk, node)
            if deps:
                _count_down(walk, node)
            continue
        ct = pop(node, None)
        if ct is not None:
            p1 = node.p1  # (Node.parents, inline: see Node for its slots)
            parents = (node.p0,) if p1 is ONE else node.p0 if p1 is MANY else (node.p0, p1)
            rule, large = prim.fast.vjp, False
            if (  # the commonest case: a small cotangent, a NumPy rule (apply_rule's)
                ((type(ct) is ndarray and ct.size < RECYCLE_MIN_SIZE) or type(ct) in SCALARS)
                and (rule is not None and node.raw and node.versions is None)
                and (node.out is not None and node.params is NO_PARAMS)
                and not prim.vjp_takes_needs
            ):
                if p1 is ONE:  # (positional calls from the slots: no tuple)
                    in_cts = rule(ct, node.out, node.x0)
                elif p1 is MANY:
                    in_cts = rule(ct, node.out, *node.x0)
                else:
                    in_cts = rule(ct, node.out, node.x0, node.x1)
            else:
                in_cts = apply_rule(node, ct, walk)
                large = node.raw and (
                    type(ct) is Lazy or (type(ct) is ndarray and ct.size >= RECYCLE_MIN_SIZE)
                )
            for edge, in_ct in zip(parents, in_cts):  # (route_one's commonest cases)
                if edge is None or in_ct is None:
                    continue
                if type(edge) is tuple:  # (the torch face's `(node, index)`)
                    target = edge[0].prim
                    if target is not None and target.multiple_results:
                        route_one(cts, owned, edge, in_ct, large)
                        continue
                    edge = edge[0]  # (one output: its node is where its cotangent goes)
                if (prev := get(edge)) is None:  # (a node of one output, nothing pending)
                    cts[edge] = in_ct
                elif type(prev) is type(in_ct) and type(prev) in SCALARS:  # (a parameter's)
                    cts[edge] = prev + in_ct
                else:
                    route_one(cts, owned, edge, in_ct, large)
            in_cts = in_ct = prev = None  # (no stale reference may keep an array from recycling)
            if large and not retain:
                recycle(node, ct)
            ct = None
        if not retain:  # (node.release(), inline for a functional node and `_release`'s first)
            if node.versions is None or (
                (prim.saves_inputs or prim.saves_output) and type(node) is Node
            ):
                node.x0 = RELEASED
                node.x1 = node.out = None
            else:
                _release(node, prim)
        if deps:
            _count_down(walk, node)


def _release(node, prim) -> None:
    """`node.release()` for a node the face recorded, with its commonest cases first."""
    if (prim.saves_inputs or prim.saves_output) and type(node) is Node:
        node.x0 = RELEASED
        node.x1 = node.out = None
    elif type(node) is Node and KEEPS_SHAPES.get(prim):
        keep_shapes(node)  # (torch's saves no tensor)
    else:
        node.release()


def _count_down(walk: Walk, node) -> None:
    """One consumer of each of `node`'s parents has run: a leaf whose last one it was runs."""
    deps = walk.plan.deps
    p1 = node.p1  # (Node.parents, inline)
    for edge in (node.p0,) if p1 is ONE else node.p0 if p1 is MANY else (node.p0, p1):
        if edge is None:
            continue
        parent = edge[0] if type(edge) is tuple else edge
        left = deps.get(parent, 0) - 1  # pruned parents have no count and never run
        deps[parent] = left
        if left == 0 and parent.prim is None:
            walk.hooks.leaf(walk, parent)


# ---------------------------------------------------------------------------------------------
# The reference engine.


def reference_backward_pass(roots, root_cts, *, retain_graph: bool = False) -> dict:
    """`backward_pass` in its plainest form, for functional transforms: every node's vjp rule,
    consumers first, cotangents summed with `add`; returns each reached leaf's cotangent."""
    cts: dict = {}
    for edge, ct in zip(roots, root_cts):
        if ct is not None:
            _send(cts, edge_pair(edge), ct)
    order, _ = collect([edge_node(e) for e in roots], count=False)
    leaves = {}
    for node in reversed(order):
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if node.prim is None:
            leaves[node] = ct
            continue
        if node.primals is None:
            raise RuntimeError(RELEASED_MESSAGE)
        for edge, in_ct in zip(node.parents, _reference_rule(node, ct)):
            if edge is not None and in_ct is not None:
                _send(cts, edge_pair(edge), in_ct)
        if not retain_graph:
            node.release()
    return leaves


def _reference_rule(node, ct):
    params = dict(node.params)
    if node.prim.vjp_takes_needs:
        params["needs"] = node_needs(node.parents, None)
    return node.prim.rule("vjp")(ct, *node.primals, out=node.out, **params)


def _send(cts: dict, edge: tuple, ct) -> None:
    node, index = edge
    if node.prim is not None and node.prim.multiple_results:
        if node not in cts:
            if node.out is None:
                raise RuntimeError(RELEASED_MESSAGE)
            cts[node] = [None] * len(node.out)
        slots = cts[node]
        slots[index] = ct if slots[index] is None else add(slots[index], ct)
    else:
        cts[node] = ct if node not in cts else add(cts[node], ct)


__all__ = [
    "PassHooks",
    "Walk",
    "apply_rule",
    "backward_pass",
    "reference_backward_pass",
    "use_reference_engine",
    "vjp_of",
]
