"""The torch face's backward pass: the engine's hooks (reverse/engine.py's `PassHooks`) with
torch's semantics.

At each node the pass runs, in PyTorch's order: tensor pre-hooks, retain_grad, capture
(autograd.grad inputs), node pre-hooks, the rule (on the node's checked and unpacked saved
values), node post-hooks; a leaf's gradient goes to its `.grad` (AccumulateGrad,
autograd/_accumulate_grad.py) as soon as its last consumer has run. Anomaly mode checks
rules' results for nan and reports the forward call of a rule that fails.

Cotangents inside the engine follow the rules' bilinear convention. Every gradient a user
sees here (hooks, retain_grad, `.grad`, autograd.grad results) is its conjugate, PyTorch's
convention for complex tensors (`conj_complex`: a no-op for real dtypes); the seeds are
conjugated on entry by autograd.backward/grad.

The pass is also made known to hooks while it runs (`register_multi_grad_hook` asks which pass
runs and which nodes it runs; `queue_callback` adds to its callbacks, run once every node
has; torch._C's `_current_graph_task_*`, `_will_engine_execute_node` and
`_current_autograd_node` read it). As torch's graph task, it runs with its own copy of the
saved-tensor hooks stack: what its hooks push or pop there does not outlive it.
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys
import warnings

import numpy as np
from numpy import ndarray

from autodiff.autograd._accumulate_grad import accumulate_grad
from autodiff.autograd._saved import check_versions, node_residuals
from autodiff.autograd._state import autograd_state
from autodiff.core import buffers
from autodiff.core.graph import RELEASED, edge_node, observed
from autodiff.core.tensor import Tensor
from autodiff.core.trace import state
from autodiff.kernels import fused
from autodiff.kernels.fused import Lazy
from autodiff.ops.elementwise import conj_complex
from autodiff.reverse.accumulate import RELEASED_MESSAGE, route
from autodiff.reverse.engine import PassHooks, vjp_of

_TASK_IDS = itertools.count()  # torch's graph task ids: one counter for the process


class TorchPass(PassHooks):
    """A torch-style backward pass: where gradients go besides the graph — captured edges
    (`capture`: autograd.grad; read from `captured` after the pass) and tensors whose `.grad`
    accumulates (`accumulate_into`, edge -> tensor, or every leaf's with
    `accumulate_all_leaves`: backward) — the edges whose nodes it must run (`must_run`:
    backward's non-leaf inputs), whether it creates a graph, and this thread's anomaly mode.
    """

    __slots__ = (
        "capture",
        "accumulate_all_leaves",
        "accumulate_into",
        "captured",
        "must_run",
        "create_graph",
        "anomaly",
        "check_nan",
        "sink_nodes",
        "every_node",
        "grad_enabled",
        "saved",
        "callbacks",
        "hooks_stack",
        "id",
        "plan",
        "run",
        "roots",
    )
    leaves_when_ready = True

    def __init__(
        self,
        capture=(),
        accumulate_all_leaves=False,
        accumulate_into=None,
        must_run=(),
        create_graph: bool = False,
    ):
        st = autograd_state()
        self.capture = set(capture)  # edges (node, index)
        self.accumulate_all_leaves = accumulate_all_leaves
        self.accumulate_into = accumulate_into or {}
        self.captured: dict = {}
        self.must_run = set(must_run)
        self.create_graph = create_graph
        self.anomaly = st.anomaly
        self.check_nan = st.anomaly_check_nan
        # The interior nodes whose outputs are sinks (captured, or accumulated into `.grad`):
        # none in a plain backward() nor in autograd.grad with respect to leaves, whose
        # passes then leave the nodes without hooks to the engine.
        self.sink_nodes = {
            e[0]
            for edges in (self.capture, self.accumulate_into)
            for e in edges
            if e[0].prim is not None
        }
        self.every_node = bool(self.anomaly or self.sink_nodes or create_graph)
        self.grad_enabled = self.saved = self.hooks_stack = None
        self.callbacks: list = []
        self.id = -1
        self.plan = self.run = self.roots = None

    def targets(self) -> tuple[set, set]:
        captured = {e[0] for e in self.capture}
        executed = {e[0] for e in self.accumulate_into} | {e[0] for e in self.must_run}
        return captured, executed

    def begin(self, walk, roots) -> None:
        # (`create_graph` sets grad mode for the pass: rules run on Tensors, recorded)
        st = state()
        self.grad_enabled = st.grad_enabled
        st.grad_enabled = self.create_graph
        ag = autograd_state()
        self.id = next(_TASK_IDS)
        self.plan, self.run, self.roots = walk.plan, walk, roots
        self.saved = ag.pass_nodes
        ag.backward_pass_id += 1
        ag.pass_nodes = set(walk.plan.order)
        ag.passes.append(self)
        self.hooks_stack = ag.saved_tensors_hooks
        ag.saved_tensors_hooks = list(self.hooks_stack)

    def finish(self) -> None:
        # Callbacks run in the order queued, also those a callback queues.
        self.run.current = None
        callbacks = self.callbacks
        while callbacks:
            callbacks.pop(0)()

    def end(self) -> None:
        if self.grad_enabled is not None:
            state().grad_enabled = self.grad_enabled
        st = autograd_state()
        if self.saved is not None:
            st.pass_nodes = self.saved
        if st.passes and st.passes[-1] is self:
            st.passes.pop()
        if self.hooks_stack is not None:
            st.saved_tensors_hooks = self.hooks_stack
        self.plan = self.run = self.roots = None  # (the graph is not kept alive by the pass)

    # (the version check itself, called with the node: one frame less per node)
    check_saved = staticmethod(check_versions)

    def sequence_number(self) -> int:
        """The sequence number of the latest node recorded (anomaly mode links the nodes a
        rule records to the node whose rule it is)."""
        return autograd_state().seq

    # ---- leaves ----
    def leaf(self, walk, node) -> None:
        ct = walk.cts.pop(node, None)
        extra = node.extra
        if ct is None and (extra is None or not _has_hooks(extra)):
            return
        # (With no gradient, the pass still runs the leaf's hooks, with None: torch runs every
        # node its pass reaches.)
        walk.current = node
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
        if extra is not None and (extra.tensor_pre_hooks or extra.retains):
            ct = self._tensor_pre_hooks(node, [ct])[0]
        edge = (node, 0)
        if edge in self.capture and ct is not None:
            self.captured[edge] = conj_complex(ct)
        tensor = self._accumulating_tensor(node, edge)
        if tensor is None and not self.accumulate_all_leaves:
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
        if edge in self.accumulate_into:
            return self.accumulate_into[edge]
        extra = node.extra
        if self.accumulate_all_leaves and extra is not None and extra.variable is not None:
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
    def node(self, walk, node) -> None:
        multi = node.prim.multiple_results
        ct = walk.cts.pop(node, None)
        extra = node.extra
        if ct is None:
            if extra is None or not _has_hooks(extra) or node.out is None:  # (released)
                if not walk.retain:
                    node.release()
                return
            # The pass runs every node it reaches, also one no gradient reached: its hooks
            # see None (and a pre-hook may give it gradients after all).
            ct = [None] * len(node.out) if multi else None
        walk.current = node
        if type(ct) is Lazy:
            ct = fused.evaluate(ct, 1)
        if extra is not None or node in self.sink_nodes:
            ct = self._before_rule(node, ct if multi else [ct])
            if ct is None:  # captured only: not executed, residuals kept
                return
            ct = ct if multi else ct[0]
        if node.x0 is RELEASED:  # (node.primals is None, read from its slot)
            raise RuntimeError(RELEASED_MESSAGE)
        parents = node.parents
        if extra is None and ct is not None and not (self.anomaly or node.prim.multiple_results):
            # (the common node, no hooks or packed residuals: `_run_rule`'s call, inline)
            primals, out = node_residuals(node, self.create_graph)
            in_cts = vjp_of(node, ct, walk.plan.kept, primals, out)
            primals = out = None
        else:
            in_cts = self._rule_and_post_hooks(walk, node, ct)
        if not walk.retain:
            node.release()
        route(walk.cts, walk.owned, parents, in_cts, False)

    def _rule_and_post_hooks(self, walk, node, ct):
        multi = node.prim.multiple_results
        had_post_hooks = node.extra is not None and bool(node.extra.post_hooks)
        if ct is None or (multi and all(g is None for g in ct)):
            in_cts = (None,) * len(node.parents)  # (no gradient: the rule gives none)
        else:
            in_cts = self._run_rule(walk, node, ct)
        extra = node.extra  # (an unpack hook may have registered hooks: they run, as torch's)
        if extra is not None and extra.post_hooks:
            # Post-hooks registered while the node ran (by a saved tensor's unpack hook) see
            # no grad_outputs, as torch's, which moved them into the node by then.
            grad_outputs = (ct if multi else [ct]) if had_post_hooks else ()
            in_cts = self._post_hooks(node, in_cts, grad_outputs)
        return in_cts

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

    def _run_rule(self, walk, node, ct):
        """The node's vjp rule on its residuals; in anomaly mode, checked for nan, the nodes it
        records linked to it, and an error reported with the forward call's traceback."""
        anomaly = self.anomaly
        try:
            primals, out = node_residuals(node, self.create_graph, anomaly)
            before = self.sequence_number() if anomaly else None
            in_cts = vjp_of(node, ct, walk.plan.kept, primals, out)
            if anomaly:
                if before is not None and self.create_graph:
                    _link_anomaly_parent(node, in_cts, before)
                if self.check_nan:
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
        captured = self.captured
        for index, g in enumerate(grads):
            edge = (node, index)
            if edge in self.capture:
                captured[edge] = conj_complex(g)
            tensor = self.accumulate_into.get(edge)
            if tensor is not None and g is not None:
                accumulate_grad(tensor, conj_complex(g), self.create_graph)

    def _unwrap(self, g):
        if isinstance(g, Tensor) and not self.create_graph and g._trace is not None:
            return g._value if g._edge is None and not g._requires_grad else g.detach()._value
        return g

    # ---- what torch._C's introspection functions read ----
    def execution_order(self) -> list:
        """The nodes this pass runs, in the order it runs them (torch's prediction from the
        graph: it lists them all, whether or not a gradient reaches them): ready nodes by
        decreasing sequence number, a leaf as soon as its last consumer has run."""
        members = set(self.plan.order)  # (after pruning: the nodes the pass runs)
        deps = _dependency_counts(members)
        heap: list = []
        tie = itertools.count()

        def push(node):
            key = math.inf if node.prim is None else node.seq  # (leaves first, as torch's)
            heapq.heappush(heap, (-key, next(tie), node))

        for node in dict.fromkeys(edge_node(edge) for edge in self.roots):
            if node in members and not deps.get(node):
                push(node)
        out = []
        while heap:
            node = heapq.heappop(heap)[2]
            out.append(observed(node))
            for edge in node.parents:  # (an edge each: a parent may be reached twice)
                parent = None if edge is None else edge_node(edge)
                if parent in members:
                    deps[parent] -= 1
                    if deps[parent] == 0:
                        push(parent)
        return out

    def will_execute(self, node) -> bool:
        """Whether this pass runs `node` (torch's `_will_engine_execute_node`)."""
        if node not in autograd_state().pass_nodes:
            return False
        if self.plan.kept is not None and not any(e for e in node.parents if e is not None):
            # A leaf captured by autograd.grad: torch's exec info does not say.
            if any(edge[0] is node for edge in self.capture):
                raise RuntimeError(
                    "A leaf node was passed to _will_engine_execute_node but we are currently "
                    "running autograd.grad(). This is currently not supported."
                )
        return True


def _dependency_counts(members: set) -> dict:
    """For each node of `members`, the number of edges into it from `members`."""
    deps: dict = {}
    for node in members:
        for edge in node.parents:
            if edge is not None:
                parent = edge_node(edge)
                if parent in members:
                    deps[parent] = deps.get(parent, 0) + 1
    return deps


def _has_hooks(extra) -> bool:
    """Whether a node has hooks that run even when no gradient reaches it."""
    return bool(extra.tensor_pre_hooks or extra.pre_hooks or extra.post_hooks)


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", repr(hook))


def _check_hook_count(hook, new, old) -> None:
    """A node hook must return one gradient per slot (torch's check; no silent truncation)."""
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(new)}, but expected {len(old)})"
        )


def _as_tensor(g):
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._from(np.asarray(g))


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


__all__ = ["TorchPass"]
