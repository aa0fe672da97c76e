"""The backward engine: one iterative walk used by every reverse-mode entry point.

1. Collect the nodes reachable from the roots (an explicit stack, no recursion)
   and count, for each node, the edges from reachable consumers into it.
2. Optionally prune nodes from which no target can be reached.
3. Run nodes in decreasing sequence number. Every consumer of a node has a
   larger number, so a node's summed cotangent is complete when it runs; among
   ready nodes this is also the highest-sequence-number-first order of PyTorch.
   Leaf nodes (`prim is None`, torch's AccumulateGrad) run as soon as their
   last consumer has, as in PyTorch.
4. Per node, in PyTorch's order: tensor pre-hooks, node pre-hooks, retain_grad,
   capture (autograd.grad inputs), the vjp rule (or the leaf accumulation and
   post-accumulate hooks), node post-hooks; then route cotangents to parents.

Rules see raw arrays, or Tensors/lower-level tracers when the pass must itself
be recorded (create_graph, or a functional transform nested in another).

Cotangents inside the engine follow the rules' bilinear convention. In a torch-style
pass every gradient a user sees (hooks, retain_grad, `.grad`, autograd.grad results)
is its conjugate, PyTorch's convention for complex tensors (`conj_complex`: a no-op
for real dtypes); the seeds are conjugated on entry by autograd.backward/grad.
"""

from __future__ import annotations

import re
import threading
import warnings
from operator import attrgetter

import numpy as np

# (numpy's module-level __getattr__ keeps CPython from specializing `np.name` loads, so each
# is a full lookup: the per-node code uses these names.)
from numpy import add as _np_add
from numpy import ndarray

from autodiff.core import buffers
from autodiff.core.dtypes import SCALARS
from autodiff.core.graph import MANY, ONE, RELEASED, _Packed, edge_node, edge_pair
from autodiff.core.primitive import NO_PARAMS
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import state
from autodiff.kernels import fused
from autodiff.kernels.fused import Lazy
from autodiff.ops.elementwise import add, conj_complex

RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

_by_seq = attrgetter("seq")
# Cotangents of this many elements and more are donated to rules that can write into them
# (Primitive.vjp_numpy_donated) when nothing else refers to them: a count of references
# tells, where CPython keeps exact counts (3.14 may leave stack references uncounted).
DONATE_MIN_SIZE = 1 << 12
_EXACT_REFCOUNTS = buffers.EXACT_REFCOUNTS
# Accumulation into `.grad` is atomic, as torch's AccumulateGrad (one lock: it is held only
# for the read-add-write of a leaf's gradient).
_GRAD_LOCK = threading.Lock()


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


def _needs(parents: tuple, kept: set | None) -> tuple:
    """Which of a node's inputs need a cotangent (a rule's `needs`): those with an edge into a
    node the pass runs. As with torch's `should_compute_output`, a branch that
    autograd.grad(inputs=...) pruned gets no cotangent at all (for a matmul: one product
    less)."""
    if kept is None:
        return tuple(edge is not None for edge in parents)
    return tuple(edge is not None and edge_node(edge) in kept for edge in parents)


def _accumulate(cts: dict, node, index: int, ct) -> None:
    prim = node.prim
    if prim is not None and prim.multiple_results:
        slots = cts.get(node)
        if slots is None:
            if node.out is None:  # released by an earlier backward pass
                raise RuntimeError(RELEASED_MESSAGE)
            slots = cts[node] = [None] * len(node.out)
        ct = fused.materialize(ct)
        slots[index] = ct if slots[index] is None else add(slots[index], ct)
    else:
        prev = cts.get(node)
        if prev is None:
            cts[node] = ct
        elif type(prev) is Lazy or type(ct) is Lazy:
            cts[node] = _add_lazy(prev, ct)
        else:
            cts[node] = add(prev, ct)


def _add_lazy(total, ct):
    """`total + ct` where one is a lazy cotangent (kernels/fused.py): lazily when they fit."""
    lazy_sum = fused.accumulate(total, ct)
    if lazy_sum is None:
        return add(fused.materialize(total), fused.materialize(ct))
    return lazy_sum


class Sinks:
    """Where gradients go besides the graph: captured edges (autograd.grad / functional
    transforms) and tensors whose `.grad` accumulates (backward)."""

    __slots__ = ("capture", "accumulate_all_leaves", "accumulate_into", "captured", "targets")

    def __init__(self, capture=(), accumulate_all_leaves=False, accumulate_into=None, targets=()):
        self.capture = set(capture)  # edges (node, index)
        self.accumulate_all_leaves = accumulate_all_leaves
        self.accumulate_into = accumulate_into or {}  # edge -> tensor
        self.captured: dict = {}
        self.targets = set(targets)  # edges whose nodes the pass must run (backward inputs)


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
    cts: dict = {}
    roots = [edge_pair(edge) for edge in roots]
    for (node, index), ct in zip(roots, root_cts):
        if ct is not None:
            _accumulate(cts, node, index, ct)
    if order is not None:  # a functional trace's tape: all its nodes, in sequence order
        deps: dict = {}
    else:
        # Functional transforms (no sinks) collect leaves' cotangents at the end: no counts.
        # (A pruned pass counts dependencies among the nodes it keeps.)
        order, deps = _collect([edge[0] for edge in roots], count=sinks is not None and not prune)
    ends = frozenset()
    kept = None  # after pruning, the nodes that run: a rule skips cotangents for the others
    if prune and sinks is not None:
        captured = {e[0] for e in sinks.capture}
        executed = {e[0] for e in sinks.accumulate_into} | {e[0] for e in sinks.targets}
        order, deps, ends, kept = _prune(order, captured | executed, captured - executed)
    st = state()
    saved = (st.grad_enabled, st.backward_pass_id, st.pass_nodes)
    if create_graph is not None:
        st.grad_enabled = create_graph
    if sinks is not None:  # torch-style pass: hooks may ask which nodes it runs
        st.backward_pass_id += 1
        st.pass_nodes = set(order)
    run = _Runner(cts, sinks, retain_graph, bool(create_graph), st, ends, kept)
    # The common case runs inline: no hooks, sinks on interior nodes, anomaly mode, packed
    # residuals or recorded (create_graph) pass. Everything else goes through `run.node`.
    fast = not (st.anomaly or run.sink_nodes or create_graph)
    pop, get = cts.pop, cts.get
    owned: set = set()  # nodes whose pending cotangent is a sum created by this pass
    try:
        if sinks is not None:  # leaves that are roots themselves (x.backward() on a leaf)
            for node in order:
                if node.prim is None and node not in deps:
                    run.leaf(node)
        for node in reversed(order):
            prim = node.prim
            if prim is None:
                continue
            p1 = node.p1  # (Node.parents and .primals, inline: see Node for its slots)
            if p1 is ONE:
                parents = (node.p0,)
            elif p1 is MANY:
                parents = node.p0
            else:
                parents = (node.p0, p1)
            if fast and node.extra is None and not prim.multiple_results:
                ct = pop(node, None)
                if ct is not None:
                    out = node.out
                    if out is None:  # (released with its primals)
                        raise RuntimeError(RELEASED_MESSAGE)
                    if node.versions is not None:
                        _check_versions(node)
                    rule = prim.vjp_numpy
                    large = False
                    kind = type(ct)
                    if (  # the commonest case, first: a small array, a rule on plain arrays
                        kind is ndarray
                        and rule is not None
                        and node.raw
                        and ct.size < DONATE_MIN_SIZE
                        and not prim.vjp_takes_needs
                        and node.params is NO_PARAMS
                    ):  # (positional calls: no tuple of arguments to build)
                        if p1 is ONE:
                            in_cts = rule(ct, out, node.x0)
                        elif p1 is MANY:
                            in_cts = rule(ct, out, *node.x0)
                        else:
                            in_cts = rule(ct, out, node.x0, node.x1)
                    else:
                        primals = node.x0  # (node.primals, inline)
                        if p1 is ONE:
                            primals = (primals,)
                        elif p1 is not MANY:
                            primals = (primals, node.x1)
                        if rule is not None and node.raw and kind not in TENSOR_TYPES:
                            params = node.params
                            if kind is Lazy or (kind is ndarray and ct.size >= DONATE_MIN_SIZE):
                                large = True
                                if (
                                    prim.vjp_fused is not None
                                    and params is NO_PARAMS
                                    and fused.fusable(ct, out, primals)
                                ):
                                    # Lazy arithmetic: chains of these rules and their sums are
                                    # computed in one pass once a cotangent leaves them (see
                                    # kernels/fused.py); `rule` is then the fused one.
                                    rule = prim.vjp_fused
                                else:
                                    if kind is Lazy:
                                        ct = fused.evaluate(ct, 1)
                                    if prim.vjp_numpy_donated is not None and _donatable(ct):
                                        rule = prim.vjp_numpy_donated
                                    elif prim.vjp_numpy_large is not None:
                                        rule = prim.vjp_numpy_large
                            if prim.vjp_takes_needs:
                                needs = _needs(parents, kept)
                                in_cts = rule(ct, out, *primals, needs=needs, **params)
                            elif params is NO_PARAMS:  # (a call without keywords builds no dict)
                                in_cts = rule(ct, out, *primals)
                            else:
                                in_cts = rule(ct, out, *primals, **params)
                        else:
                            if type(ct) is Lazy:
                                ct = fused.evaluate(ct, 1)
                            rule = prim.vjp or prim.rule("vjp")
                            if prim.vjp_takes_needs:
                                needs = _needs(parents, kept)
                                in_cts = rule(ct, *primals, out=out, needs=needs, **node.params)
                            elif node.params is NO_PARAMS:  # (no keyword dict to merge)
                                in_cts = rule(ct, *primals, out=out)
                            else:
                                in_cts = rule(ct, *primals, out=out, **node.params)
                            # (A rule on plain arrays: its large residuals are recycled too.)
                            large = node.raw and type(ct) is ndarray and ct.size >= DONATE_MIN_SIZE
                    for edge, in_ct in zip(parents, in_cts):
                        if edge is not None and in_ct is not None:
                            if type(edge) is tuple:  # (see graph.edge_pair)
                                parent = edge[0]
                                pprim = parent.prim
                                if pprim is not None and pprim.multiple_results:
                                    _accumulate(cts, parent, edge[1], in_ct)
                                    continue
                            else:  # a functional trace's node of one output
                                parent = edge
                            prev = get(parent)
                            if prev is None:
                                cts[parent] = in_ct
                            elif (  # (same shape and dtype, plain arrays: added in place)
                                parent in owned
                                and type(in_ct) is ndarray
                                and type(prev) is ndarray
                                and in_ct.shape == prev.shape
                                and in_ct.dtype == prev.dtype
                            ):
                                _np_add(prev, in_ct, out=prev)
                            else:
                                if type(prev) is ndarray and type(in_ct) is ndarray:
                                    # (what `add` binds to; large sums into recycled memory)
                                    if large:
                                        total = buffers.ufunc_into(_np_add, (prev, in_ct))
                                    else:
                                        total = _np_add(prev, in_ct)
                                elif type(prev) is Lazy or type(in_ct) is Lazy:
                                    total = _add_lazy(prev, in_ct)
                                elif type(prev) is type(in_ct) and type(prev) in SCALARS:
                                    total = prev + in_ct  # (NumPy scalars: a parameter's)
                                else:
                                    total = add(prev, in_ct)
                                cts[parent] = total
                                # A sum the engine made is seen by no one else until its
                                # node runs: later contributions may be added in place.
                                if type(total) is ndarray:
                                    owned.add(parent)
                    # (No stale reference may keep a cotangent from being donated.)
                    in_cts = in_ct = prev = total = primals = None
                    if large and not retain_graph:
                        # Large arrays this pass alone holds, the cotangent (`ct`) and the
                        # node's residuals, are recycled (core/buffers.py).
                        out = None  # (release_node pools only unshared arrays)
                        buffers.give_if_unshared(ct, 1)
                        buffers.release_node(node)
                    ct = None
                if not retain_graph:
                    node.x0 = RELEASED  # (node.primals = None, inline)
                    node.x1 = node.out = None
            else:
                run.node(node)
            if not deps:
                continue
            for edge in parents:
                if edge is None:
                    continue
                parent = edge[0] if type(edge) is tuple else edge
                left = deps.get(parent, 0) - 1  # pruned parents have no count and never run
                deps[parent] = left
                if left == 0 and parent.prim is None:
                    run.leaf(parent)
        if sinks is None:
            for node in order:
                if node.prim is None:
                    run.leaf(node)
    finally:
        st.grad_enabled, _, st.pass_nodes = saved
    return run.results


class _Runner:
    """Executes single nodes for `backward_pass` (hooks, rules, sinks)."""

    __slots__ = (
        "cts",
        "sinks",
        "retain",
        "create_graph",
        "state",
        "results",
        "ends",
        "sink_nodes",
        "kept",
    )

    def __init__(self, cts, sinks, retain, create_graph, st, ends=frozenset(), kept=None):
        self.cts = cts
        self.sinks = sinks
        self.retain = retain
        self.create_graph = create_graph
        self.state = st
        self.results = {} if sinks is None else sinks.captured
        self.ends = ends  # targets that are captured but not executed (see _prune)
        self.kept = kept  # the nodes a pruned pass runs (None: not pruned)
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

    # ---- leaves ----
    def leaf(self, node) -> None:
        ct = self.cts.pop(node, None)
        if ct is None:
            return
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
        extra = node.extra
        if extra is not None:
            ct = self._tensor_pre_hooks(node, [ct])[0]
        sinks = self.sinks
        if sinks is None:
            self.results[node] = ct
            return
        edge = (node, 0)
        if edge in sinks.capture:
            sinks.captured[edge] = conj_complex(ct)
        tensor = None
        if edge in sinks.accumulate_into:
            tensor = sinks.accumulate_into[edge]
        elif sinks.accumulate_all_leaves and extra is not None and extra.variable is not None:
            tensor = extra.variable()
        elif not sinks.accumulate_all_leaves:
            # autograd.grad only captures: torch does not execute the AccumulateGrad node,
            # so its node pre- and post-hooks do not run.
            return
        if extra is not None and extra.pre_hooks:
            ct = self._node_pre_hooks(node, [ct])[0]
        if tensor is not None and ct is not None:
            grad = conj_complex(ct)
            # An array of this pass that nothing else holds (not a hook, not another
            # cotangent) becomes the first `.grad` itself, as torch's AccumulateGrad steals
            # such a gradient, instead of being copied.
            owned = (
                type(grad) is ndarray
                and not (extra is not None and extra.post_hooks)
                and buffers.unshared(grad, 2 if grad is ct else 1)  # (`ct`, `grad`)
            )
            _accumulate_grad(tensor, grad, self.create_graph, owned)
            grad = None
            if extra is not None and extra.post_accumulate_hooks:
                for hook in list(extra.post_accumulate_hooks):
                    hook(tensor)
        if extra is not None and extra.post_hooks:
            # AccumulateGrad has no inputs: torch passes grad_inputs=() and the gradient
            # as grad_outputs.
            for hook in list(extra.post_hooks):
                hook((), (_as_tensor(conj_complex(ct)),))

    # ---- interior nodes ----
    def node(self, node) -> None:
        prim = node.prim
        multi = prim.multiple_results
        ct = self.cts.pop(node, None)
        if ct is None:
            if not self.retain:
                node.release()
            return
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
        extra = node.extra
        sinks = node in self.sink_nodes
        if extra is not None or sinks:
            grads = ct if multi else [ct]
            if extra is not None:
                grads = self._tensor_pre_hooks(node, grads)
            if sinks:
                self._sink_outputs(node, grads)
                if node in self.ends:  # captured only: not executed, residuals kept
                    return
            if extra is not None and extra.pre_hooks:
                grads = self._node_pre_hooks(node, grads)
            ct = grads if multi else grads[0]
        primals = node.primals
        if primals is None:
            raise RuntimeError(RELEASED_MESSAGE)
        parents = node.parents  # (both properties read once: see Node)
        primals, out = self._residuals(node, primals, parents)
        rule = prim.vjp or prim.rule("vjp")
        try:
            if prim.vjp_takes_needs:
                needs = _needs(parents, self.kept)
                in_cts = rule(ct, *primals, out=out, needs=needs, **node.params)
            else:
                in_cts = rule(ct, *primals, out=out, **node.params)
            if self.state.anomaly and self.state.anomaly_check_nan:
                _check_nan(node, in_cts)  # inside: a nan error also gets the forward trace
        except Exception:
            if extra is not None and extra.anomaly_trace is not None:
                warnings.warn(
                    f"Error detected in {node.name()}. Traceback of forward call that caused the "
                    f"error:\n{extra.anomaly_trace}",
                    stacklevel=2,
                )
            raise
        if extra is not None and extra.post_hooks:
            in_cts = self._post_hooks(node, in_cts, ct if multi else [ct])
        if not self.retain:
            node.release()
        cts = self.cts
        for edge, in_ct in zip(parents, in_cts):
            if edge is not None and in_ct is not None:
                parent, index = edge_pair(edge)
                _accumulate(cts, parent, index, in_ct)

    def _residuals(self, node, primals: tuple, parents: tuple):
        """The rule's arguments from the node's saved `primals` (its `parents` are the edges
        they had) and output."""
        out = node.out
        if node.versions is None:  # functional-trace node: residuals are lower-level values
            return primals, out
        _check_versions(node)
        create = self.create_graph
        if isinstance(out, _Packed):  # a saved output (see record)
            out = out.unpack(out.packed)
            out = out._value if isinstance(out, Tensor) else out
        values = []
        for p, edge in zip(primals, parents):
            if isinstance(p, _Packed):
                # The unpack hook's value, with the graph the saved input had (as torch puts
                # back a saved variable's grad_fn): a pack hook runs with grad mode off.
                p = p.unpack(p.packed)
                if isinstance(p, Tensor):
                    p = p._value
                if create and edge is not None:
                    p = Tensor._from(p, edge_pair(edge))
            elif create and edge is not None:
                p = Tensor._from(p, edge_pair(edge))  # linked to the graph, as the saved input was
            values.append(p)
        if create:
            if node.prim.multiple_results:
                out = tuple(Tensor._from(o, (node, i)) for i, o in enumerate(out))
            else:
                out = Tensor._from(out, (node, 0))
            dual = node.extra.dual if node.extra is not None else None
            if dual is not None and dual[0].alive:
                values, out = _dual_residuals(dual, values, out, node.prim.multiple_results)
        return values, out

    def _tensor_pre_hooks(self, node, grads: list) -> list:
        """Tensor hooks, then retain_grad (which sees their result), as torch runs them."""
        extra = node.extra
        if extra.tensor_pre_hooks:
            grads = list(grads)
            for index, hooks in extra.tensor_pre_hooks.items():
                for hook in list(hooks):
                    if grads[index] is None:
                        continue
                    new = hook(_as_tensor(conj_complex(grads[index])))
                    if new is not None:
                        if np.shape(new) != np.shape(grads[index]):
                            raise RuntimeError(
                                f"hook '{_hook_name(hook)}' has changed the size of value"
                            )
                        grads[index] = conj_complex(self._unwrap(new))
        if extra.retains:
            for index, ref in extra.retains.items():
                tensor = ref()
                if tensor is not None and grads[index] is not None:
                    _accumulate_grad(tensor, conj_complex(grads[index]), self.create_graph)
        return grads

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
                _accumulate_grad(tensor, conj_complex(g), self.create_graph)

    def _unwrap(self, g):
        if isinstance(g, Tensor) and not self.create_graph and g._trace is not None:
            return g._value if g._edge is None and not g._requires_grad else g.detach()._value
        return g


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
    from autodiff.forward_ad.trace import ForwardTracer

    trace, args, t_out = dual
    values = [a if isinstance(a, Tensor) and a._trace is trace else v for a, v in zip(args, values)]
    if multi:
        out = tuple(o if t is None else ForwardTracer(o, trace, t) for o, t in zip(out, t_out))
    elif t_out is not None:
        out = ForwardTracer(out, trace, t_out)
    return values, out


def _donatable(ct) -> bool:
    """Is `ct` an array the engine alone refers to, owning its memory (not a view), writable?
    (Two references: the engine's local variable and this function's argument.)"""
    return buffers.unshared(ct, 2)


def _as_tensor(g):
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._from(np.asarray(g))


def _accumulate_grad(tensor, ct, create_graph: bool, owned: bool = False) -> None:
    """torch's AccumulateGrad: the first gradient is stored, later ones are added in place.
    `owned`: `ct` is an array nothing else refers to, which the first `.grad` may take."""
    if isinstance(ct, Tensor) and not create_graph:
        ct = ct._value
    if not isinstance(ct, Tensor):
        ct = np.asarray(ct)
        if ct.shape != tensor.shape:
            ct = np.broadcast_to(ct, tensor.shape)
            owned = False  # (a read-only view: the first `.grad` is a copy)
    with _GRAD_LOCK:  # backward passes in several threads may share leaves
        _accumulate_grad_locked(tensor, ct, create_graph, owned)


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


def _check_versions(node) -> None:
    for saved in node.versions:
        if saved is None:
            continue
        tensor, version = saved
        if tensor._vc != version:
            producer = ""
            if tensor._edge is not None:  # torch names the op: "Mul" for MulBackward0
                op = re.sub(r"Backward\d*$", "", tensor._edge[0].name())
                producer = f", which is output {tensor._edge[1]} of {op},"
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [Tensor[{tensor.dtype.name}] {list(tensor.shape)}]{producer} "
                f"is at version {tensor._vc}; expected version {version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its gradient, "
                "with autodiff.autograd.set_detect_anomaly(True)."
            )


def _check_nan(node, in_cts) -> None:
    for i, g in enumerate(in_cts):
        if g is None:
            continue
        value = g.primal() if isinstance(g, Tensor) else g
        if np.any(np.isnan(value)):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


__all__ = ["RELEASED_MESSAGE", "Sinks", "backward_pass"]
