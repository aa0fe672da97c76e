"""The backward engine: one iterative walk used by every reverse-mode entry point.

1. Collect the nodes reachable from the roots (an explicit stack, no recursion)
   and count, for each node, the edges from reachable consumers into it.
2. Optionally prune nodes from which no target can be reached.
3. Run nodes in decreasing sequence number. Every consumer of a node has a
   larger number, so a node's summed cotangent is complete when it runs; among
   ready nodes this is also the highest-sequence-number-first order of PyTorch.
   Leaf nodes (`prim is None`, torch's AccumulateGrad) run as soon as their
   last consumer has, as in PyTorch.
4. Per node: its vjp rule (`apply_rule`), then its input cotangents go to the nodes of its
   input edges, summed with what is there (`route`). A node with hooks, or in a pass with
   sinks on interior nodes, anomaly mode or `create_graph`, runs through `_Runner.node`,
   which adds, in PyTorch's order: tensor pre-hooks, node pre-hooks, retain_grad, capture
   (autograd.grad inputs), the rule, node post-hooks.

Rules see raw arrays, or Tensors/lower-level tracers when the pass must itself
be recorded (create_graph, or a functional transform nested in another). On raw arrays a
primitive's NumPy form of its rule runs (`Primitive.fast.vjp`), which may pass lazy
cotangents on (kernels/fused.py); the arrays a pass alone holds go back to the pool of
recycled memory (core/buffers.py).

Cotangents inside the engine follow the rules' bilinear convention. In a torch-style
pass every gradient a user sees (hooks, retain_grad, `.grad`, autograd.grad results)
is its conjugate, PyTorch's convention for complex tensors (`conj_complex`: a no-op
for real dtypes); the seeds are conjugated on entry by autograd.backward/grad.

`reference_backward_pass` is the same computation in its plainest form (HIPS autograd's
loop: no fast rules, no memory recycling, no hooks); `use_reference_engine()` makes every
functional pass take it, and the tests run the op table through both.
"""

from __future__ import annotations

import re
import sys
import threading
import warnings
import weakref
from contextlib import contextmanager
from operator import attrgetter

import numpy as np

# (numpy's module-level __getattr__ keeps CPython from specializing `np.name` loads, so each
# is a full lookup: the per-node code uses these names.)
from numpy import add as _np_add
from numpy import ndarray

from autodiff.core import buffers
from autodiff.core.dtypes import SCALARS
from autodiff.core.graph import (
    KEEPS_SHAPES,
    MANY,
    ONE,
    RELEASED,
    SAME_DTYPE,
    Node,
    Packed,
    edge_node,
    edge_pair,
    keep_shapes,
)
from autodiff.core.primitive import NO_PARAMS
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import state
from autodiff.kernels import fused
from autodiff.kernels.fused import Lazy
from autodiff.ops.elementwise import add, conj_complex, divide_p, multiply_p
from autodiff.ops.products import dot_p, matmul_p

RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

_by_seq = attrgetter("seq")
# A node whose cotangent has this many elements or more has its arrays recycled after it ran
# (the cotangent and the residuals only this pass holds, core/buffers.py), and its cotangent
# sums go into recycled memory.
RECYCLE_MIN_SIZE = 1 << 12
# Accumulation into `.grad` is atomic, as torch's AccumulateGrad (one lock: it is held only
# for the read-add-write of a leaf's gradient).
_GRAD_LOCK = threading.Lock()


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
# The graph walk: which nodes run, in which order, and when a leaf is ready.


def _collect(roots, count: bool = True) -> tuple[list, dict]:
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
        for edge in node.parents:
            if edge is not None:
                parent = edge[0] if type(edge) is tuple else edge
                if count:
                    deps[parent] = deps.get(parent, 0) + 1
                if parent not in seen:
                    stack.append(parent)
    order.sort(key=_by_seq)
    return order, deps


def _prune(order: list, targets, capture_only) -> tuple[list, dict, set, set]:
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
        for e in node.parents:
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


class _Plan:
    """The nodes a pass runs (`order`, increasing sequence numbers), their dependency counts
    (`deps`: empty when leaves are read at the end), the captured-only targets (`ends`) and,
    after pruning, the set of nodes that run (`kept`; None when not pruned)."""

    __slots__ = ("order", "deps", "ends", "kept")

    def __init__(self, roots, order, sinks, prune):
        self.ends = frozenset()
        self.kept = None
        if order is not None:  # a functional trace's tape: all its nodes, in sequence order
            self.order, self.deps = order, {}
        else:
            # Functional transforms (no sinks) collect leaves' cotangents at the end: no
            # counts. (A pruned pass counts dependencies among the nodes it keeps.)
            count = sinks is not None and not prune
            self.order, self.deps = _collect([e[0] for e in roots], count=count)
        if prune and sinks is not None:
            captured = {e[0] for e in sinks.capture}
            executed = {e[0] for e in sinks.accumulate_into} | {e[0] for e in sinks.targets}
            self.order, self.deps, self.ends, self.kept = _prune(
                self.order, captured | executed, captured - executed
            )


def node_needs(parents: tuple, kept: set | None = None) -> tuple:
    """Which of a node's inputs need a cotangent (a rule's `needs`): those with an edge into a
    node the pass runs. As with torch's `should_compute_output`, a branch that
    autograd.grad(inputs=...) pruned gets no cotangent at all (for a matmul: one product
    less)."""
    if kept is None:
        return tuple(edge is not None for edge in parents)
    return tuple(edge is not None and edge_node(edge) in kept for edge in parents)


# ---------------------------------------------------------------------------------------------
# One node: its rule, and where its input cotangents go.


def apply_rule(node, ct, kept=None):
    """The input cotangents of `node` for its output cotangent `ct`: its primitive's NumPy rule
    when the cotangent and residuals are plain NumPy values (nothing records the pass),
    else its vjp rule."""
    prim = node.prim
    out = node.out
    if out is None:  # (released with its primals)
        raise RuntimeError(RELEASED_MESSAGE)
    if node.versions is not None:
        check_versions(node)
    rule = prim.fast.vjp
    if rule is not None and node.raw and type(ct) not in TENSOR_TYPES:
        if type(ct) is Lazy or (type(ct) is ndarray and ct.size >= RECYCLE_MIN_SIZE):
            if prim.fast.fused_vjp is not None:
                rule = prim.fast.fused_vjp
            elif type(ct) is Lazy:
                ct = fused.evaluate(ct, 1)
        params = node.params
        if prim.vjp_takes_needs:
            return rule(ct, out, *node.primals, needs=node_needs(node.parents, kept), **params)
        if params is not NO_PARAMS:
            return rule(ct, out, *node.primals, **params)
        p1 = node.p1  # (positional calls from the slots: no tuple of arguments, see Node)
        if p1 is ONE:
            return rule(ct, out, node.x0)
        if p1 is MANY:
            return rule(ct, out, *node.x0)
        return rule(ct, out, node.x0, node.x1)
    if type(ct) is Lazy:
        ct = fused.evaluate(ct, 1)
    rule = prim.vjp or prim.rule("vjp")
    if prim.vjp_takes_needs:
        return rule(ct, *node.primals, out=out, needs=node_needs(node.parents, kept), **node.params)
    return rule(ct, *node.primals, out=out, **node.params)


def route(cts: dict, owned: set, parents: tuple, in_cts, large: bool) -> None:
    """Send each input cotangent to the node of its edge (see `route_one`)."""
    for edge, in_ct in zip(parents, in_cts):
        if edge is not None and in_ct is not None:
            route_one(cts, owned, edge, in_ct, large)


def route_one(cts: dict, owned: set, edge, ct, large: bool) -> None:
    """Add the cotangent `ct` to what the node of `edge` has pending.

    A sum this pass made is seen by no one else until its node runs, so later contributions
    of its shape and dtype are added into it (`owned`); `large` sums go into recycled memory.
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
    elif type(prev) is ndarray and type(ct) is ndarray and not large:  # (`_sum`, inline)
        cts[parent] = _np_add(prev, ct)
        owned.add(parent)
    else:
        total = _sum(prev, ct, large)
        cts[parent] = total
        if type(total) is ndarray:
            owned.add(parent)


def _same_array_kind(a, b) -> bool:
    return type(a) is ndarray and type(b) is ndarray and a.shape == b.shape and a.dtype == b.dtype


def _sum(total, ct, large: bool):
    """`total + ct` for two cotangents of one node, as cheaply as their kinds allow."""
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


def _add_to_output(cts: dict, node, index: int, ct) -> None:
    """Add `ct` to output `index` of a node of several outputs (its cotangents: a list)."""
    slots = cts.get(node)
    if slots is None:
        if node.out is None:  # released by an earlier backward pass
            raise RuntimeError(RELEASED_MESSAGE)
        slots = cts[node] = [None] * len(node.out)
    ct = fused.materialize(ct)
    slots[index] = ct if slots[index] is None else add(slots[index], ct)


def _seed(roots: list, root_cts) -> dict:
    """The pending cotangents of a pass: the seeds, at their edges."""
    cts: dict = {}
    owned: set = set()
    for edge, ct in zip(roots, root_cts):
        if ct is not None:
            route_one(cts, owned, edge, ct, False)
    return cts


# ---------------------------------------------------------------------------------------------
# The pass.


def backward_pass(
    roots,
    root_cts,
    *,
    retain_graph: bool = False,
    create_graph: bool | None = None,
    sinks: Sinks | None = None,
    prune: bool = False,
    order: list | None = None,
) -> dict:
    """Propagate cotangents from `roots` (a list of edges, see graph.edge_pair).

    Without `sinks`, returns a dict mapping each reached leaf node to its summed
    cotangent (the functional transforms' use; they pass their trace's `order`, every
    node in increasing sequence number, which spares the graph walk); leaves are read at
    the end. With `sinks`, gradients are captured into `sinks.captured` (keyed by edge)
    and/or accumulated into `.grad`, leaves running as soon as they are ready.
    `create_graph` (torch API only) sets grad mode for the pass and makes rules
    run on Tensors so that the pass is recorded; `None` leaves grad mode alone.
    """
    if sinks is None and _choice.reference:
        return reference_backward_pass(roots, root_cts, retain_graph=retain_graph)
    roots = [edge_pair(edge) for edge in roots]
    cts = _seed(roots, root_cts)
    plan = _Plan(roots, order, sinks, prune)
    st = state()
    grad_enabled = st.grad_enabled
    if create_graph is not None:
        st.grad_enabled = create_graph
    run = _Runner(cts, sinks, retain_graph, bool(create_graph), plan)
    try:
        if sinks is not None:  # a torch-style pass: its hooks may ask which nodes it runs
            sinks.begin(plan, run, roots)
        run.leaves_first()
        _walk(plan, run)
        if sinks is None:  # (functional transforms read their leaves at the end)
            for node in plan.order:
                if node.prim is None:
                    run.leaf(node)
        else:
            sinks.finish()
    finally:
        st.grad_enabled = grad_enabled
        if sinks is not None:
            sinks.end()
    return run.results


def _walk(plan: _Plan, run: _Runner) -> None:  # noqa: C901 (the hot loop: see below)
    """Run every node of `plan` that receives a cotangent, consumers first.

    The common node (no hooks, no sinks, one output, a pass nobody records) runs here,
    the others through `run.node`. This loop runs once per node of every backward pass, so
    its commonest case is unrolled: a small array cotangent for a primitive's NumPy rule
    without params, called positionally from the node's slots (`apply_rule` in full), sent to
    parents of one output that have nothing pending yet or a plain sum (`route_one` in
    full). Written as those calls, the gradients take more instructions (callgrind, per
    call): ode 284.4M against 255.1M (+11%), chain +14%, scalar4 +11%.
    """
    cts, deps, kept = run.cts, plan.deps, plan.kept
    retain = run.retain
    plain_pass = not (run.anomaly or run.sink_nodes or run.create_graph)
    pop, get = cts.pop, cts.get
    owned = run.owned
    for node in reversed(plan.order):
        prim = node.prim
        if prim is None:
            continue
        if not (plain_pass and node.extra is None and not prim.multiple_results):
            run.node(node)
        else:
            ct = pop(node, None)
            if ct is not None:
                p1 = node.p1  # (Node.parents, inline: see Node for its slots)
                parents = (node.p0,) if p1 is ONE else node.p0 if p1 is MANY else (node.p0, p1)
                rule = prim.fast.vjp
                large = False
                if (  # the commonest case: a small cotangent, a NumPy rule (apply_rule's)
                    ((type(ct) is ndarray and ct.size < RECYCLE_MIN_SIZE) or type(ct) in SCALARS)
                    and rule is not None
                    and node.raw
                    and node.versions is None
                    and node.out is not None
                    and not prim.vjp_takes_needs
                ):
                    params = node.params
                    if params is NO_PARAMS:  # (positional calls from the slots: no tuple)
                        if p1 is ONE:
                            in_cts = rule(ct, node.out, node.x0)
                        elif p1 is MANY:
                            in_cts = rule(ct, node.out, *node.x0)
                        else:
                            in_cts = rule(ct, node.out, node.x0, node.x1)
                    elif p1 is ONE:
                        in_cts = rule(ct, node.out, node.x0, **params)
                    elif p1 is MANY:
                        in_cts = rule(ct, node.out, *node.x0, **params)
                    else:
                        in_cts = rule(ct, node.out, node.x0, node.x1, **params)
                else:
                    run.current = node  # (a custom Function's backward may ask which node runs)
                    in_cts = apply_rule(node, ct, kept)
                    large = node.raw and (
                        type(ct) is Lazy or (type(ct) is ndarray and ct.size >= RECYCLE_MIN_SIZE)
                    )
                for edge, in_ct in zip(parents, in_cts):  # (route_one's commonest cases)
                    if edge is None or in_ct is None:
                        continue
                    if type(edge) is not tuple:  # (a node of one output)
                        prev = get(edge)
                        if prev is None:
                            cts[edge] = in_ct
                            continue
                        kind = type(prev)
                        if kind is type(in_ct) and not large:
                            if kind in SCALARS:  # (NumPy scalars: a parameter's)
                                cts[edge] = prev + in_ct
                                continue
                            if kind is ndarray:
                                if (  # (both arrays here: `_same_array_kind`, inline)
                                    edge in owned
                                    and prev.shape == in_ct.shape
                                    and prev.dtype == in_ct.dtype
                                ):
                                    _np_add(prev, in_ct, out=prev)
                                else:
                                    cts[edge] = _np_add(prev, in_ct)
                                    owned.add(edge)
                                continue
                    route_one(cts, owned, edge, in_ct, large)
                prev = None
                in_cts = in_ct = None  # (no stale reference may keep an array from recycling)
                if large and not retain:
                    _recycle(node, ct)
                ct = None
            if not retain:
                if node.versions is None or (
                    (prim.saves_inputs or prim.saves_output) and type(node) is Node
                ):
                    node.x0 = RELEASED  # (node.release(), inline)
                    node.x1 = node.out = None
                elif type(node) is Node and KEEPS_SHAPES.get(prim):
                    keep_shapes(node)  # (node.release(), inline: torch's saves no tensor)
                else:
                    node.release()
        if deps:
            run.count_down(node)


def _recycle(node, ct) -> None:
    """Pool the large arrays only this pass holds: a node's cotangent and its residuals."""
    buffers.give_if_unshared(ct, 2)  # (`ct`, and the caller's)
    ct = None
    if not node.keeps_shapes():
        buffers.release_node(node)


def reference_backward_pass(roots, root_cts, *, retain_graph: bool = False) -> dict:
    """`backward_pass` in its plainest form, for functional transforms: every node's vjp rule,
    consumers first, cotangents summed with `add`; returns each reached leaf's cotangent."""
    cts: dict = {}
    for edge, ct in zip(roots, root_cts):
        if ct is not None:
            _send(cts, edge_pair(edge), ct)
    order, _ = _collect([edge_node(e) for e in roots], count=False)
    leaves = {}
    for node in reversed(order):
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if node.prim is None:
            leaves[node] = ct
            continue
        primals = node.primals
        if primals is None:
            raise RuntimeError(RELEASED_MESSAGE)
        params = dict(node.params)
        if node.prim.vjp_takes_needs:
            params["needs"] = node_needs(node.parents, None)
        in_cts = node.prim.rule("vjp")(ct, *primals, out=node.out, **params)
        for edge, in_ct in zip(node.parents, in_cts):
            if edge is not None and in_ct is not None:
                _send(cts, edge_pair(edge), in_ct)
        if not retain_graph:
            node.release()
    return leaves


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


class Sinks:
    """A torch-style pass: where gradients go besides the graph — captured edges
    (autograd.grad) and tensors whose `.grad` accumulates (backward) — and the torch face's
    settings for it (anomaly mode: check rules' results for nan, report the forward call of
    a rule that fails). The torch face (autograd/_backward.py) tells the pass's hooks which
    pass runs through `begin` and `end`."""

    __slots__ = (
        "capture",
        "accumulate_all_leaves",
        "accumulate_into",
        "captured",
        "targets",
        "anomaly",
        "check_nan",
    )

    def __init__(
        self,
        capture=(),
        accumulate_all_leaves=False,
        accumulate_into=None,
        targets=(),
        anomaly: bool = False,
        check_nan: bool = True,
    ):
        self.capture = set(capture)  # edges (node, index)
        self.accumulate_all_leaves = accumulate_all_leaves
        self.accumulate_into = accumulate_into or {}  # edge -> tensor
        self.captured: dict = {}
        self.targets = set(targets)  # edges whose nodes the pass must run (backward inputs)
        self.anomaly = anomaly
        self.check_nan = check_nan

    def sequence_number(self) -> int | None:
        """The sequence number of the latest node the torch face recorded (anomaly mode links
        the nodes a rule records to the node whose rule it is); None: not known."""
        return None

    def begin(self, plan: _Plan, run: _Runner, roots: list) -> None:
        """The pass starts: `plan.order` holds the nodes it may run, `run` runs them (its
        `current`: the node running), from the edges `roots`."""

    def finish(self) -> None:
        """Every node of the pass has run (it ends normally; `end` follows)."""

    def end(self) -> None:
        """The pass ends (normally or not)."""


class _Runner:
    """Executes single nodes for `backward_pass` (hooks, rules, sinks)."""

    __slots__ = (
        "cts",
        "sinks",
        "retain",
        "create_graph",
        "anomaly",
        "results",
        "plan",
        "sink_nodes",
        "owned",
        "current",
    )

    def __init__(self, cts, sinks, retain, create_graph, plan: _Plan):
        self.cts = cts
        self.sinks = sinks
        self.retain = retain
        self.create_graph = create_graph
        self.anomaly = sinks is not None and sinks.anomaly
        self.results = {} if sinks is None else sinks.captured
        self.plan = plan
        self.owned: set = set()  # nodes whose pending cotangent is a sum this pass made
        # The node running (set where user code may run and ask: hooks, saved-tensor unpack
        # hooks, custom Functions' backward; torch._C._current_autograd_node).
        self.current = None
        # The interior nodes whose outputs are sinks (captured, or accumulated into `.grad`):
        # none in a plain backward() nor in autograd.grad with respect to leaves, whose
        # passes then skip the per-node sink bookkeeping.
        self.sink_nodes = (
            frozenset()
            if sinks is None
            else {
                e[0]
                for edges in (sinks.capture, sinks.accumulate_into)
                for e in edges
                if e[0].prim is not None
            }
        )

    def leaves_first(self) -> None:
        """Leaves that are roots themselves (x.backward() on a leaf) run before anything."""
        if self.sinks is not None:
            for node in self.plan.order:
                if node.prim is None and node not in self.plan.deps:
                    self.leaf(node)

    def count_down(self, node) -> None:
        """One consumer of each of `node`'s parents has run: a leaf whose last one it was runs."""
        deps = self.plan.deps
        for edge in node.parents:
            if edge is None:
                continue
            parent = edge[0] if type(edge) is tuple else edge
            left = deps.get(parent, 0) - 1  # pruned parents have no count and never run
            deps[parent] = left
            if left == 0 and parent.prim is None:
                self.leaf(parent)

    # ---- leaves ----
    def leaf(self, node) -> None:
        ct = self.cts.pop(node, None)
        extra = node.extra
        if ct is None and (extra is None or self.sinks is None or not _has_hooks(extra)):
            return
        # (With no gradient, a torch-style pass still runs the leaf's hooks, with None: torch
        # runs every node its pass reaches.)
        self.current = node
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
        if extra is not None:
            ct = self._tensor_pre_hooks(node, [ct])[0]
        sinks = self.sinks
        if sinks is None:
            self.results[node] = ct
            return
        edge = (node, 0)
        if edge in sinks.capture and ct is not None:
            sinks.captured[edge] = conj_complex(ct)
        tensor = self._accumulating_tensor(node, edge)
        if tensor is None and not sinks.accumulate_all_leaves:
            # autograd.grad only captures: torch does not execute the AccumulateGrad node,
            # so its node pre- and post-hooks do not run.
            return
        if extra is not None and extra.pre_hooks:
            ct = self._node_pre_hooks(node, [ct])[0]
        if tensor is not None and ct is not None:
            self._accumulate_leaf(tensor, ct, extra)
        if extra is not None and extra.post_hooks:
            # AccumulateGrad has no inputs: torch passes grad_inputs=() and the gradient
            # as grad_outputs.
            for hook in list(extra.post_hooks):
                hook((), (_as_tensor(conj_complex(ct)),))

    def _accumulating_tensor(self, node, edge):
        """The tensor whose `.grad` a leaf's gradient goes to in this pass, if any."""
        sinks = self.sinks
        if edge in sinks.accumulate_into:
            return sinks.accumulate_into[edge]
        extra = node.extra
        if sinks.accumulate_all_leaves and extra is not None and extra.variable is not None:
            return extra.variable()
        return None

    def _accumulate_leaf(self, tensor, ct, extra) -> None:
        grad = conj_complex(ct)
        # An array of this pass that nothing else holds (not a hook, not another cotangent)
        # becomes the first `.grad` itself, as torch's AccumulateGrad steals such a gradient,
        # instead of being copied.
        owned = (
            type(grad) is ndarray
            and not (extra is not None and extra.post_hooks)
            and buffers.unshared(grad, 3 if grad is ct else 1)  # (`grad`; `ct` here and in leaf)
        )
        accumulate_grad(tensor, grad, self.create_graph, owned)
        grad = None
        if extra is not None and extra.post_accumulate_hooks:
            for hook in list(extra.post_accumulate_hooks):
                if hook(tensor) is not None:
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")

    # ---- interior nodes ----
    def node(self, node) -> None:
        multi = node.prim.multiple_results
        ct = self.cts.pop(node, None)
        extra = node.extra
        if ct is None:
            if (
                extra is None
                or self.sinks is None
                or not _has_hooks(extra)
                or node.out is None  # (released: nothing to run)
            ):
                if not self.retain:
                    node.release()
                return
            # A torch-style pass runs every node it reaches, also one no gradient reached:
            # its hooks see None (and a pre-hook may give it gradients after all).
            ct = [None] * len(node.out) if multi else None
        self.current = node
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
        if extra is not None or node in self.sink_nodes:
            ct = self._before_rule(node, ct if multi else [ct])
            if ct is None:  # captured only: not executed, residuals kept
                return
            ct = ct if multi else ct[0]
        if node.primals is None:
            raise RuntimeError(RELEASED_MESSAGE)
        parents = node.parents
        had_post_hooks = extra is not None and bool(extra.post_hooks)
        if ct is None or (multi and all(g is None for g in ct)):
            in_cts = (None,) * len(parents)  # (no gradient: the rule gives none)
        else:
            in_cts = self._run_rule(node, ct)
        extra = node.extra  # (an unpack hook may have registered hooks: they run, as torch's)
        if extra is not None and extra.post_hooks:
            # Post-hooks registered while the node ran (by a saved tensor's unpack hook) see
            # no grad_outputs, as torch's, which moved them into the node by then.
            grad_outputs = (ct if multi else [ct]) if had_post_hooks else ()
            in_cts = self._post_hooks(node, in_cts, grad_outputs)
        if not self.retain:
            node.release()
        route(self.cts, self.owned, parents, in_cts, False)

    def _before_rule(self, node, grads: list) -> list | None:
        """Tensor hooks, sinks and node pre-hooks on a node's output cotangents; None when the
        node is a captured-only target (it does not run)."""
        extra = node.extra
        if extra is not None:
            grads = self._tensor_pre_hooks(node, grads)
        if node in self.sink_nodes:
            self._sink_outputs(node, grads)
            if node in self.plan.ends:
                return None
        if extra is not None and extra.pre_hooks:
            grads = self._node_pre_hooks(node, grads)
        return grads

    def _run_rule(self, node, ct):
        """The node's vjp rule on its residuals; in anomaly mode, checked for nan, the nodes it
        records linked to it, and an error reported with the forward call's traceback."""
        prim = node.prim
        rule = prim.vjp or prim.rule("vjp")
        anomaly = self.anomaly
        try:
            primals, out = node_residuals(node, self.create_graph, anomaly)
            if anomaly:
                before = self.sinks.sequence_number()
            if prim.vjp_takes_needs:
                needs = node_needs(node.parents, self.plan.kept)
                in_cts = rule(ct, *primals, out=out, needs=needs, **node.params)
            else:
                in_cts = rule(ct, *primals, out=out, **node.params)
            if anomaly:
                if before is not None and self.create_graph:
                    _link_anomaly_parent(node, in_cts, before)
                if self.sinks.check_nan:
                    _check_nan(node, in_cts)  # inside: a nan error also gets the forward trace
        except Exception:
            if anomaly:
                _warn_anomaly(node)
            raise
        return in_cts

    def _tensor_pre_hooks(self, node, grads: list) -> list:
        """Tensor hooks, then retain_grad (which sees their result), as torch runs them."""
        extra = node.extra
        if extra.tensor_pre_hooks:
            grads = list(grads)
            for index, hooks in extra.tensor_pre_hooks.items():
                for hook in list(hooks):  # (also on None, no gradient: torch's hooks see None)
                    grads[index] = self._tensor_hook(hook, grads[index])
        if extra.retains:
            for index, ref in extra.retains.items():
                tensor = ref()
                if tensor is not None and grads[index] is not None:
                    accumulate_grad(tensor, conj_complex(grads[index]), self.create_graph)
        return grads

    def _tensor_hook(self, hook, grad):
        new = hook(_as_tensor(conj_complex(grad)))
        if new is None:
            return grad
        if grad is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if np.shape(new) != np.shape(grad):
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
        return conj_complex(self._unwrap(new))

    def _node_pre_hooks(self, node, grads: list) -> list:
        """Node pre-hooks: after the tensor hooks and retain_grad, before the node runs."""
        for hook in list(node.extra.pre_hooks):
            new = hook(tuple(_as_tensor(conj_complex(g)) for g in grads))
            if new is not None:
                _check_hook_count(hook, new, grads)
                grads = [conj_complex(self._unwrap(g)) for g in new]
        return grads

    def _post_hooks(self, node, in_cts, grad_outputs):
        # Inputs that need no gradient show None, as in torch (rules may compute one anyway).
        in_cts = tuple(None if e is None else g for e, g in zip(node.parents, in_cts))
        for hook in list(node.extra.post_hooks):
            new = hook(
                tuple(_as_tensor(conj_complex(g)) for g in in_cts),
                tuple(_as_tensor(conj_complex(g)) for g in grad_outputs),
            )
            if new is not None:
                _check_hook_count(hook, new, in_cts)
                in_cts = tuple(conj_complex(self._unwrap(g)) for g in new)
        return in_cts

    def _sink_outputs(self, node, grads) -> None:
        sinks = self.sinks
        for index, g in enumerate(grads):
            edge = (node, index)
            if edge in sinks.capture:
                sinks.captured[edge] = conj_complex(g)
            tensor = sinks.accumulate_into.get(edge)
            if tensor is not None and g is not None:
                accumulate_grad(tensor, conj_complex(g), self.create_graph)

    def _unwrap(self, g):
        if isinstance(g, Tensor) and not self.create_graph and g._trace is not None:
            return g._value if g._edge is None and not g._requires_grad else g.detach()._value
        return g


def _has_hooks(extra) -> bool:
    """Whether a node has hooks that run even when no gradient reaches it."""
    return bool(extra.tensor_pre_hooks or extra.pre_hooks or extra.post_hooks)


def node_residuals(node, create: bool, anomaly: bool = False) -> tuple:
    """`(primals, out)`: a node's rule arguments from its saved values (unpacked, version
    checked); with `create`, a level-0 node's as Tensors linked to the graph they had, so that
    the rule is recorded (`create_graph`). Raises torch's error once they were freed (and,
    in `anomaly` mode, its error on a saved value changed in place with anomaly mode's hint)."""
    primals, out = node.primals, node.out
    if primals is None or out is None:
        raise RuntimeError(RELEASED_MESSAGE)
    if node.versions is None:  # functional-trace node: residuals are lower-level values
        return primals, out
    check_versions(node, anomaly=anomaly)
    if isinstance(out, Packed):  # a saved output (see record)
        out = _unpack(out)
        out = out._value if isinstance(out, Tensor) else out
    elif type(out) is tuple and any(isinstance(o, Packed) for o in out):
        out = tuple(_saved_input(o, None, False) for o in out)
    values = [_saved_input(p, edge, create) for p, edge in zip(primals, node.parents)]
    if create:
        if node.prim.multiple_results:
            out = tuple(Tensor._from(o, (node, i)) for i, o in enumerate(out))
        else:
            out = Tensor._from(out, (node, 0))
        dual = node.extra.dual if node.extra is not None else None
        if dual is not None and dual[0].alive:
            values, out = _dual_residuals(dual, values, out, node.prim.multiple_results)
    return values, out


def _unpack(packed: Packed):
    """A saved value's unpack hook applied (torch's check: it gives a Tensor; here a NumPy
    array, a Tensor's value, is accepted too)."""
    value = packed.unpack(packed.packed)
    if type(value) is ndarray:
        return Tensor._from(value)
    if not isinstance(value, Tensor):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
            f"{type(value).__name__}"
        )
    return value


def _saved_input(p, edge, create: bool):
    """A level-0 node's saved input as its rule reads it: unpacked (saved_tensors_hooks), and
    linked to the graph it had (as torch puts back a saved variable's grad_fn) when the pass
    is recorded."""
    if isinstance(p, Packed):
        # The unpack hook's value, with the graph the saved input had: a pack hook runs with
        # grad mode off.
        p = _unpack(p)._value
    if create and edge is not None:
        p = Tensor._from(p, edge_pair(edge))
    return p


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", repr(hook))


def _check_hook_count(hook, new, old) -> None:
    """A node hook must return one gradient per slot (torch's check; no silent truncation)."""
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(new)}, but expected {len(old)})"
        )


def _dual_residuals(dual, values, out, multi):
    """Residuals of a node recorded under a live dual level, with their tangents attached."""
    trace, args, t_out = dual
    values = [a if isinstance(a, Tensor) and a._trace is trace else v for a, v in zip(args, values)]
    if multi:
        out = tuple(trace.dual_value(o, t) for o, t in zip(out, t_out))
    else:
        out = trace.dual_value(out, t_out)
    return values, out


def _as_tensor(g):
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._from(np.asarray(g))


def accumulate_grad(tensor, ct, create_graph: bool, owned: bool = False) -> None:
    """torch's AccumulateGrad: the first gradient is stored, later ones are added in place.
    `owned`: `ct` is an array nothing else refers to, which the first `.grad` may take."""
    if isinstance(ct, Tensor) and not create_graph:
        ct = ct._value
    if not isinstance(ct, Tensor):
        ct = np.asarray(ct)
        if ct.shape != tensor.shape:
            ct = np.broadcast_to(ct, tensor.shape)
            owned = False  # (a read-only view: the first `.grad` is a copy)
    want = grad_dtype_of(tensor)
    if want is not None and ct.dtype != want:  # (torch casts to the leaf's grad_dtype)
        ct = ct.astype(want)
        owned = True
    with _GRAD_LOCK:  # backward passes in several threads may share leaves
        _accumulate_grad_locked(tensor, ct, create_graph, owned)


def grad_dtype_of(tensor):
    """The dtype `tensor`'s `.grad` takes (torch's `grad_dtype`): its own unless set on its
    gradient accumulator (a NumPy dtype, or None: any)."""
    node = tensor._accumulator
    extra = node.extra if node is not None and tensor._edge is None else None
    want = extra.grad_dtype if extra is not None else SAME_DTYPE
    return tensor.dtype if want is SAME_DTYPE else want


def _accumulate_grad_locked(tensor, ct, create_graph: bool, owned: bool = False) -> None:
    current = tensor._grad
    if current is None:
        if not isinstance(ct, Tensor):
            ct = Tensor._from(ct if owned else np.array(ct, copy=True))
        tensor._grad = ct
    elif create_graph or isinstance(ct, Tensor):
        tensor._grad = current + ct
    else:
        # Without create_graph torch adds in place, even into a .grad that has a graph
        # (from an earlier create_graph backward): the same object, one more version. A
        # graph output may be a node's saved residual: it gets a new buffer instead.
        value = current._value
        if current._edge is None and isinstance(value, np.ndarray) and value.flags.writeable:
            np.add(value, ct, out=value, casting="unsafe")
        else:
            current._value = np.add(value, ct).astype(current.dtype, copy=False)
        current._vc += 1


def _which_saved(readers: tuple) -> tuple:
    """For a binary primitive whose input i is read by the gradients of the inputs in
    `readers[i]`: indexed by `(x needs a gradient) + 2 * (y needs one)`, (is x saved, is y)."""
    return tuple(
        tuple(any((rx, ry)[j] for j in readers[i]) for i in range(2))
        for ry in (False, True)
        for rx in (False, True)
    )


# Products whose torch nodes save an input only for the gradients that read it (`w * x` with
# `x` needing no gradient saves `x` only, so `w` may change in place before the backward
# pass): primitive -> `_which_saved` table. The torch face packs (saved-tensor hooks) and
# version-checks (`check_versions`) only what is saved.
SAVED_FOR_PARTNERS = {
    multiply_p: _which_saved(((1,), (0,))),
    matmul_p: _which_saved(((1,), (0,))),
    dot_p: _which_saved(((1,), (0,))),
    divide_p: _which_saved(((1,), (0, 1))),
}

# Tensors that had a graph and were detached in place (Tensor.detach_): a node that saved one
# raises when it runs, as torch's. id -> weakref (a Tensor's `==` is elementwise, so no
# WeakSet); empty unless detach_ was used.
DETACHED: dict = {}


def mark_detached(tensor) -> None:
    """Remember that `tensor` was detached in place (see DETACHED)."""
    key = id(tensor)
    DETACHED[key] = weakref.ref(tensor, lambda _, key=key: DETACHED.pop(key, None))


def check_versions(node, entries=None, anomaly: bool = False) -> None:
    """torch's error if a tensor `node` saved (its `versions`, or `entries` of them) has been
    modified in place since (`anomaly`: the pass runs in anomaly mode, which has reported the
    forward call of the failing node: the hint says so)."""
    if entries is None:
        entries = node.versions
        table = SAVED_FOR_PARTNERS.get(node.prim)
        if table is not None:  # (a product, of two inputs: only those its gradients read)
            saved0, saved1 = table[(node.p0 is not None) + 2 * (node.p1 is not None)]
            if not (saved0 and saved1):
                entries = (entries[0] if saved0 else None, entries[1] if saved1 else None)
    for saved in entries:
        if saved is None:
            continue
        tensor, version = saved
        if DETACHED and id(tensor) in DETACHED and tensor._edge is None:
            raise RuntimeError(
                "Trying to use a saved tensor that has been detached in-place, i.e. with "
                ".detach_().This is not supported, please use out-of-place `.detach()` instead"
            )
        if tensor._vc != version:
            producer = ""
            if tensor._edge is not None:  # torch names the op: "Mul" for MulBackward0
                op = re.sub(r"Backward\d*$", "", tensor._edge[0].name())
                producer = f", which is output {tensor._edge[1]} of {op},"
            hint = (
                "Hint: the backtrace further above shows the operation that failed to compute "
                "its gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!"
                if anomaly
                else "Hint: enable anomaly detection to find the operation that failed to "
                "compute its gradient, with autodiff.autograd.set_detect_anomaly(True)."
            )
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [Tensor[{tensor.dtype.name}] {list(tensor.shape)}]{producer} "
                f"is at version {tensor._vc}; expected version {version} instead. {hint}"
            )


def _link_anomaly_parent(node, in_cts, before: int) -> None:
    """In anomaly mode, the level-0 nodes `node`'s rule recorded (sequence numbers after
    `before`; those its results come from) keep `node` as the node whose backward induced
    them (torch's anomaly parent): an error in their backward reports its forward call too."""
    stack = [g._edge for g in in_cts if isinstance(g, Tensor) and type(g._edge) is tuple]
    seen = set()
    while stack:
        new = stack.pop()[0]
        if new in seen or new.seq is None or new.seq <= before or new.versions is None:
            continue
        seen.add(new)
        extra = new._extra()
        if extra.anomaly_parent is None:
            extra.anomaly_parent = node
        stack.extend(e for e in new.parents if type(e) is tuple)


def _warn_anomaly(node) -> None:
    """Anomaly mode's report on a node whose backward failed: the forward call that recorded
    it, then those of the nodes whose backward recorded it (torch's warnings)."""
    name, current, induced = node.name(), node, False
    while current is not None:
        extra = current.extra
        trace = extra.anomaly_trace if extra is not None else None
        if trace is None:
            message = (
                f"Error detected in {name}. No forward pass information available. Enable "
                "detect anomaly during forward pass for more information."
            )
        elif not induced:
            message = (
                f"Error detected in {name}. Traceback of forward call that caused the error:\n"
                f"{trace}"
            )
        else:
            message = (
                f"\n\nPrevious calculation was induced by {name}. Traceback of forward call "
                f"that induced the previous calculation:\n{trace}"
            )
        try:
            warnings.warn(message, stacklevel=4)
        except Warning:  # (an "error" filter: the backward error wins, the report goes to stderr)
            sys.stderr.write(f"UserWarning: {message}\n")
        current = extra.anomaly_parent if extra is not None else None
        if current is not None:
            name, induced = current.name(), True


def _check_nan(node, in_cts) -> None:
    for i, g in enumerate(in_cts):
        if g is None:
            continue
        value = g.primal() if isinstance(g, Tensor) else g
        if np.any(np.isnan(value)):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


__all__ = [
    "RELEASED_MESSAGE",
    "Sinks",
    "apply_rule",
    "backward_pass",
    "reference_backward_pass",
    "route",
    "route_one",
    "use_reference_engine",
]
