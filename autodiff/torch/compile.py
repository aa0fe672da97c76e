"""`compile` (torch.compile on the torch face): a function or module staged by `jit` once per
guard set and recorded as one autograd node; `OptimizedModule`; the `compiler` counters.

A module's forward is staged through `functional_call` with its parameters and buffers as
staged inputs: the staged call binds jit's call primitive, whose reverse rule runs the staged
pullback, so `loss.backward()` and `optimizer.step()` work unchanged around it. Buffers a
forward writes in place (BatchNorm's running statistics) are staged as values the forward
may rebind; their final values are extra outputs written back after each call.

Dropout's uniform draws are staged inputs, drawn before each call from the default
generator in eager's order (the same masks as eager for a seed). Where staging cannot go on
(Python needs a value: `if` on a tensor, `.item()`, `float()`; another random draw, whose
value would be frozen into the graph; any other error while staging),
the call is a *graph break*: with `fullgraph=False` that signature runs eagerly from then
on — a module's forward with its direct submodules' forwards compiled, each by its own
engine (the regions around the break, as far as submodules cut them); with `fullgraph=True`
it raises, naming the line.
"""

from __future__ import annotations

import functools
import os
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from autodiff.autograd._state import autograd_state
from autodiff.autograd.grad_mode import is_grad_enabled, no_grad
from autodiff.core.abstract import ShapedArray
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, TENSOR_TYPES
from autodiff.staging.api import _backend
from autodiff.staging.call import (
    _call_vjp,
    _zeros_like,
    call_p,
    differentiable,
    run_graph,
    split_graph,
)
from autodiff.staging.ir import Equation, Graph, Var
from autodiff.staging.passes import optimize
from autodiff.staging.trace import stage
from autodiff.torch.compile_optim import FusedStep
from autodiff.torch.compile_step import MutableTracer, NotYet, StepCapture, modules_of
from autodiff.torch.dtypes import default_float
from autodiff.torch.generator import _staged_draws, default_generator
from autodiff.torch.nn.module import Module
from autodiff.torch.nn.utils.stateless import functional_call
from autodiff.torch.optim.optimizer import Optimizer

# torch's backend names -> jit's executors ("inductor": jit's default, NumPy then Numba).
_BACKENDS = {None: None, "inductor": None, "eager": "numpy", "aot_eager": "numpy"}
_BACKENDS |= {"numpy": "numpy", "numba": "numba"}
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_hooks",
    "_backward_hooks",
    "_backward_pre_hooks",
)
CACHE_SIZE = 256  # (guard sets kept per compiled function, the oldest forgotten first)
_GUARDED = frozenset((bool, int, float, str, type(None), tuple))  # (module attributes guarded)
_EAGER = "eager"  # (a signature that broke the graph: it runs eagerly)
_SPLIT = "split"  # (a module's signature that broke the graph: its submodules compiled)
_NOT_YET = "not yet"  # (a training step whose optimizer has no state yet: this call eager)
_SAVED = ("saved backward",)  # (a forward graph's derived entry: its backward graph)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_lock = threading.Lock()
_compiled: weakref.WeakSet = weakref.WeakSet()  # (every compiled callable: `reset` clears them)
_local = threading.local()


class GraphBreakError(RuntimeError):
    """`compile(..., fullgraph=True)` met code that cannot be staged (a graph break)."""


def is_compiling() -> bool:
    """Whether the current thread is staging a compiled function (torch.compiler's).

    Example:
        >>> import autodiff as torch
        >>> torch.compiler.is_compiling()
        False
    """
    return getattr(_local, "depth", 0) > 0


def reset() -> None:
    """Forget every compiled signature of every compiled function and module
    (torch.compiler.reset / torch._dynamo.reset); the next calls stage again.

    Example:
        >>> import autodiff as torch
        >>> torch.compiler.reset()
    """
    with _lock:
        compiled = list(_compiled)
    for c in compiled:
        c.clear_cache()


class _Entry:
    """One staged signature: its optimized graph, captured Tensors, the module's parameters
    and buffers (staged inputs after the arguments), the positions among them of the
    buffers it writes, and the modules of its guard (the references here keep the guard's
    identities valid)."""

    __slots__ = (
        "graph", "captured", "written", "state", "guard", "draws", "draw_dtype", "outputs",
        "forward", "capture",
    )  # fmt: skip

    def __init__(self, graph, captured: list, written: list, state: list, guard):
        self.graph = graph
        self.captured = captured
        self.written = written
        self.state = state
        self.guard = guard
        self.draws: list = []  # (the shapes of the uniform draws it takes, in order)
        self.draw_dtype: Any = None
        self.outputs: Any = None  # (the output's structure and its values other than tensors)
        self.forward: Any = None  # (the forward graph saving residuals, once recorded)
        self.capture: StepCapture | None = None  # (a training step's: compile_step.py)


class _Compiled:
    """The engine behind `compile`: guards, staging, the compiled call, graph breaks."""

    def __init__(self, fun: Callable, module: Module | None, fullgraph: bool, backend):
        self.fun = fun
        self.module = module
        self.fullgraph = fullgraph
        self.backend = backend
        self._cache: dict = {}
        self._cache_lock = threading.Lock()
        self.counts = dict.fromkeys(
            ("staged", "graph_breaks", "compiled_calls", "eager_calls", "split_calls"), 0
        )
        self._children: dict = {}  # id(submodule) -> its engine, for split calls
        # (an optimizer's methods update Python state: its step is `fused_step` or eager)
        self.optimizer = getattr(fun, "__self__", None)
        if not isinstance(self.optimizer, Optimizer):
            self.optimizer = None
        self.fused_step = FusedStep() if self.optimizer is not None else None
        with _lock:
            _compiled.add(self)

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()
            for k in self.counts:
                self.counts[k] = 0
            self._children = {}
            self.fused_step = FusedStep() if self.optimizer is not None else None

    # ---- the call ----
    def __call__(self, args: tuple, kwargs: dict):
        if self.optimizer is not None:
            return self._optimizer_call(args, kwargs)
        tree, leaves, dynamic, leaf_key = _arguments_key(args, kwargs)
        if leaf_key is None:  # (an unhashable non-array argument: nothing to guard on)
            return self._eager(args, kwargs)
        if self.module is not None:
            module_key = _module_key(self.module)
        else:  # (the modules a function names: their modes, attributes and parameters)
            module_key = _modules_key(modules_of(self.fun))
        if module_key is None:  # (hooks: they run eagerly, with the forward)
            return self._eager(args, kwargs)
        key = (tree, leaf_key, module_key)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._stage(key, args, kwargs, leaves, dynamic)
        if entry is _NOT_YET:
            return self._eager(args, kwargs)
        if entry is _SPLIT:
            return self._split_call(args, kwargs)
        if entry is _EAGER or (entry.draws and default_float() != entry.draw_dtype):
            return self._eager(args, kwargs)
        if entry.capture is not None:
            return self._run_step(key, entry, args, kwargs, [leaves[i] for i in dynamic])
        self.counts["compiled_calls"] += 1
        return self._run(entry, [leaves[i] for i in dynamic])

    def _split_call(self, args: tuple, kwargs: dict):
        """A module call whose forward broke the graph: the forward runs eagerly, each direct
        submodule's forward compiled (the regions around the break, as far as submodules
        cut them). The submodules' `forward` are set on them for the call's duration."""
        self.counts["split_calls"] += 1
        swapped = []
        try:
            for child in self.module.__dict__["_modules"].values():
                if child is not None and "forward" not in child.__dict__:
                    child.__dict__["forward"] = self._child_forward(child)
                    swapped.append(child)
            return self.fun(*args, **kwargs)
        finally:
            for child in swapped:
                del child.__dict__["forward"]

    def _child_forward(self, child: Module) -> Callable:
        """`child.forward` compiled: its engine's, except while that engine stages it."""
        found = self._children.get(id(child))
        if found is None or found.module is not child:
            found = _Compiled(type(child).forward.__get__(child), child, False, self.backend)
            self._children[id(child)] = found
        engine: _Compiled = found

        def forward(*args, **kwargs):
            if getattr(_local, "engine", None) is engine:  # (staging it: its own forward)
                return engine.fun(*args, **kwargs)
            return engine(args, kwargs)

        return forward

    def _optimizer_call(self, args: tuple, kwargs: dict):
        """An optimizer's method: its step compiled (`fused_step`) where it can be, else
        the method eagerly."""
        opt: Any = self.optimizer
        fused: Any = self.fused_step
        is_step = getattr(self.fun, "__func__", None) is type(opt).step
        if is_step and not args and not kwargs and fused(opt):
            self.counts["compiled_calls"] += 1
            self.counts["staged"] = fused.traces
            return None
        return self._eager(args, kwargs)

    def _eager(self, args: tuple, kwargs: dict):
        self.counts["eager_calls"] += 1
        return self.fun(*args, **kwargs)

    def _run_step(self, key, entry: _Entry, args: tuple, kwargs: dict, dynamic: list):
        """A compiled training step's call: its graph on the values, then the gradients,
        parameters and optimizer state written (compile_step.py); eagerly, and staged again
        at the next call, when the optimizer or the gradients read have changed since."""
        capture: Any = entry.capture
        if not capture.valid():
            with self._cache_lock:
                self._cache.pop(key, None)
            return self._eager(args, kwargs)
        self.counts["compiled_calls"] += 1
        capture.before_call()
        operands = _operands(entry, dynamic)
        values = [x._value if type(x) in TENSOR_TYPES else x for x in operands]
        outs = run_graph(entry.graph, *values)
        k = len(outs) - capture.n_outputs  # (the function's outputs, then the capture's)
        capture.after_call(outs[k:])
        return entry.outputs.rebuild([Tensor._from(np.asarray(a)) for a in outs[:k]])

    def _run(self, entry: _Entry, dynamic: list):
        state = entry.state
        operands = _operands(entry, dynamic)
        for i in entry.written:
            # (a copy of a buffer the call writes: the node saves its operands, and writing
            # into one would bump the version a backward pass checks)
            operands[len(dynamic) + i] = Tensor._from(np.array(state[i]._value))
        graph = entry.graph
        tensors = [x for x in operands if type(x) in TENSOR_TYPES]
        if not tensors:
            outs = run_graph(graph, *operands)
        elif _recorded(tensors):
            if entry.forward is None:
                guarded = len(dynamic) + len(state)
                entry.forward = _forward_graph(graph, _needed(operands, guarded, len(entry.draws)))
            outs = bind(saved_call_p, *operands, graph=entry.forward)
            outs = outs[: len(graph.out_vars)]
        else:
            outs = bind(call_p, *operands, graph=graph)
        tensors, written = tree_unflatten(graph.out_tree, list(outs))
        out = entry.outputs.rebuild(tensors)
        if written:
            with no_grad():
                for i, value in zip(entry.written, written):
                    state[i].copy_(value.detach() if isinstance(value, Tensor) else value)
        return out

    # ---- staging ----
    def _stage(self, key, args: tuple, kwargs: dict, leaves: list, dynamic: list):
        names: list = []
        state: list = []
        n_params = 0
        if self.module is not None:
            names, state, n_params = _named_state(self.module)
        tree = tree_flatten((args, kwargs))[1]
        written: list = []
        draws = _Draws()
        outputs = _Outputs()
        # (a function calling backward() and optimizer.step(): compile_step.py)
        capture = None if self.module is not None else StepCapture(_need_grad(leaves, dynamic))
        lifted = modules_of(self.fun) if capture is not None else []

        def staged(dyn: list, values: list, drawn: list):
            draws.start(drawn)
            flat = list(leaves)
            for i, v in zip(dynamic, dyn):
                flat[i] = v
            args, kwargs = tree_unflatten(tree, flat)
            if capture is not None:
                return capture.call(self.fun, args, kwargs, lifted, outputs.split)
            before = [t._var for t in values]
            for t in values[n_params:]:
                t.__class__ = MutableTracer
            out = functional_call(self.module, dict(zip(names, values)), args, kwargs)
            written[:] = [
                j for j in range(n_params, len(values)) if values[j]._var is not before[j]
            ]
            return outputs.split(out), [values[j] for j in written]

        avals = [_aval(leaves[i]) for i in dynamic] + [_aval(t) for t in state]
        try:
            graph, captured = self._captured_graph(staged, avals, (len(dynamic), len(state)),
                                                   draws, capture)  # fmt: skip
        except NotYet:
            return _NOT_YET
        except Exception as error:
            return self._graph_break(key, error)
        modules = list(self.module.modules()) if self.module is not None else []
        entry = _Entry(optimize(graph, call_p), captured, written, state, modules)
        if capture is not None and capture.used:
            entry.capture = capture
        entry.graph.backend = _backend(self.backend)
        entry.draws = draws.shapes
        entry.draw_dtype = draws.dtype
        entry.outputs = outputs
        with self._cache_lock:
            self.counts["staged"] += 1
            if all(t._trace is EVAL_TRACE for t in captured):
                # (a graph that captured an enclosing transform's tracers is that call's only)
                self._remember(key, entry)
        return entry

    def _captured_graph(self, staged: Callable, avals: list, counts: tuple, draws, capture):
        """`_staged_graph`, with `capture` (a training step's, or None) taking this thread's
        `backward()`, `.grad` and optimizer steps while it stages."""
        autograd = autograd_state()
        previous = autograd.step_capture
        autograd.step_capture = capture
        try:
            return self._staged_graph(staged, avals, counts, draws)
        finally:
            autograd.step_capture = previous

    def _staged_graph(self, staged: Callable, avals: list, counts: tuple, draws: _Draws) -> tuple:
        """`staged`'s graph and captured values. Random draws of dropout are staged inputs:
        a first staging finds their shapes, a second takes them as inputs. Any other draw
        from the default generator raises `_RandomDraw` (its value would be a constant)."""
        rng_state = default_generator.get_state()
        previous = getattr(_staged_draws, "feed", None), getattr(_local, "engine", None)
        _local.depth = getattr(_local, "depth", 0) + 1
        _staged_draws.feed, _local.engine = draws, self
        try:
            n_dyn, n_state = counts
            in_tree = tree_flatten(([0] * n_dyn, [0] * n_state, []))[1]
            graph, captured = stage(staged, avals, in_tree, None, _name(self.fun))
            if draws.shapes:
                draw_avals = [ShapedArray(s, draws.dtype) for s in draws.shapes]
                in_tree = tree_flatten(([0] * n_dyn, [0] * n_state, [0] * len(draw_avals)))[1]
                graph, captured = stage(staged, avals + draw_avals, in_tree, None, _name(self.fun))
                draws.check_all_used()
            if default_generator.get_state() != rng_state:
                raise _RandomDraw()
        finally:
            _staged_draws.feed, _local.engine = previous
            _local.depth -= 1
            default_generator.set_state(rng_state)
        return graph, captured

    def _remember(self, key, entry) -> None:
        """Cache `entry` for `key` (under the lock), forgetting the oldest past CACHE_SIZE."""
        self._cache[key] = entry
        if len(self._cache) > CACHE_SIZE:
            del self._cache[next(iter(self._cache))]

    def _graph_break(self, key, error: Exception) -> str:
        if self.fullgraph:
            raise GraphBreakError(_break_message(self.fun, error)) from error
        split = self.module is not None and bool(self.module.__dict__["_modules"])
        with self._cache_lock:
            self.counts["graph_breaks"] += 1
            self._remember(key, _SPLIT if split else _EAGER)
        return _SPLIT if split else _EAGER


def _arguments_key(args: tuple, kwargs: dict) -> tuple:
    """A call's arguments: their tree, leaves, the positions of the tensors and arrays among
    them, and their guard key (None: an unhashable other argument)."""
    if not kwargs and all(type(a) in TENSOR_TYPES for a in args):
        # (the commonest call, tensors only: their shapes, dtypes and requires_grad)
        key = tuple([_tensor_key(a)[1:] for a in args])
        return len(args), list(args), list(range(len(args))), key
    leaves, tree = tree_flatten((args, kwargs))
    dynamic, key = _split_leaves(leaves)
    return tree, leaves, dynamic, key


def _need_grad(leaves: list, dynamic: list) -> bool:
    """Whether a tensor among the arguments requires grad."""
    return any(type(leaves[i]) in TENSOR_TYPES and leaves[i].requires_grad for i in dynamic)


def _operands(entry: _Entry, dynamic: list) -> list:
    """A compiled call's operands: the arguments' tensors, the module's parameters and
    buffers, dropout's draws (from the stream eager draws them from, in order), then the
    captured tensors."""
    operands = dynamic + entry.state
    if entry.draws:
        dtype = entry.draw_dtype
        operands += [default_generator.random(shape).astype(dtype) for shape in entry.draws]
    return operands + entry.captured


def _recorded(tensors: list) -> bool:
    """Whether a call on `tensors` is recorded on the torch face's graph (level 0, grad
    mode on, an input requiring grad), where its forward saves the backward's residuals."""
    if not is_grad_enabled():
        return False
    needed = False
    for t in tensors:
        if t._trace is not EVAL_TRACE:
            return False
        needed = needed or t._requires_grad
    return needed


# A compiled forward as the torch face records it: call_p of `split_graph(graph)`'s forward
# graph, giving the outputs then the residuals its backward graph reads, so that
# `backward()` runs the backward graph on them (call_p's level-0 node keeps the outputs
# alone and recomputes the forward). Its rules other than the vjp are call_p's.
saved_call_p = Primitive(call_p.name, multiple_results=True)
for _rule in ("impl", "abstract_eval", "jvp", "batch", "sparsity", "taylor", "fast"):
    setattr(saved_call_p, _rule, getattr(call_p, _rule))


def _needed(operands: list, guarded: int, draws: int) -> tuple:
    """Which operands of a compiled call get a gradient: of the arguments, parameters and
    buffers (whose requires_grad the guard holds) those requiring grad; dropout's draws
    none; every captured tensor (its requires_grad is not guarded)."""
    needed = [type(x) in TENSOR_TYPES and x.requires_grad for x in operands[:guarded]]
    return (*needed, *(False,) * draws, *(True,) * (len(operands) - guarded - draws))


def _forward_graph(graph, needed: tuple) -> Any:
    """`graph`'s forward graph (outputs then residuals), its backward graph known to it, giving
    the gradients of the operands `needed` marks."""
    fwd_graph, bwd_graph, in_mask = _untransposed(graph, *split_graph(graph, needed))
    fwd_graph.derived[_SAVED] = (bwd_graph, in_mask, graph.out_avals)
    return fwd_graph


def _untransposed(graph, fwd_graph, bwd_graph, in_mask) -> tuple:
    """The split graphs with each residual the forward graph transposes (a weight's or an
    activation's transpose, for the backward's matrix products) saved untransposed and
    transposed by the backward graph: a transposed view's strides would make the compiled
    backward copy it at each call."""
    n = len(graph.out_vars)
    made = {v: eqn for eqn in fwd_graph.equations for v in eqn.outputs}
    outs = list(fwd_graph.out_vars)
    ins = list(bwd_graph.in_vars)
    first: list = []
    k = len(ins) - (len(outs) - n)  # (the backward's inputs: cotangents, then residuals)
    for j in range(n, len(outs)):
        eqn = made.get(outs[j])
        if eqn is None or eqn.prim.name != "transpose" or type(eqn.inputs[0]) is not Var:
            continue
        source = eqn.inputs[0]
        outs[j] = source
        saved = ins[k + j - n]
        ins[k + j - n] = fresh = Var(source.aval)
        first.append(Equation(eqn.prim, [fresh], [saved], eqn.params))
    if not first:
        return fwd_graph, bwd_graph, in_mask
    new_fwd = Graph(fwd_graph.in_vars, fwd_graph.consts, fwd_graph.equations, outs,
                    fwd_graph.in_tree, fwd_graph.out_tree, fwd_graph.name)  # fmt: skip
    new_bwd = Graph(ins, bwd_graph.consts, first + bwd_graph.equations, bwd_graph.out_vars,
                    bwd_graph.in_tree, bwd_graph.out_tree, bwd_graph.name)  # fmt: skip
    new_fwd, new_bwd = optimize(new_fwd), optimize(new_bwd)
    for g in (new_fwd, new_bwd):
        g.backend, g.fastmath = graph.backend, graph.fastmath
    return new_fwd, new_bwd, in_mask


def _saved_vjp(cts, *primals, out, graph):
    """saved_call_p's vjp: on NumPy values, the backward graph on the output cotangents and
    the saved residuals (which get no cotangent: they are never returned); recorded
    (`create_graph`, Tensors), call_p's, which differentiates again."""
    bwd_graph, in_mask, out_avals = graph.derived[_SAVED]
    n = len(out_avals)
    plain = all(type(c) is not Tensor for c in cts) and all(type(o) is not Tensor for o in out)
    if not plain or any(c is not None for c in cts[n:]):
        return _call_vjp(cts, *primals, out=out, graph=graph)
    seeds = [
        _zeros_like(a) if c is None else c for c, a in zip(cts, out_avals) if differentiable(a)
    ]
    results = iter(run_graph(bwd_graph, *seeds, *out[n:]))
    return tuple(next(results) if m else None for m in in_mask)


saved_call_p.vjp = _saved_vjp


class _Outputs:
    """A compiled call's output: its tensors come from the graph; its other leaves (Python
    numbers, strings, arrays: constants of the guard set) are returned as eager returns
    them."""

    def __init__(self) -> None:
        self.tree: Any = None
        self.others: dict = {}

    def split(self, out) -> list:
        """The tensors of `out` (remembering its structure and its other leaves)."""
        leaves, self.tree = tree_flatten(out)
        self.others = {i: x for i, x in enumerate(leaves) if type(x) not in TENSOR_TYPES}
        return [x for x in leaves if type(x) in TENSOR_TYPES]

    def rebuild(self, tensors: list):
        if not self.others:
            return tree_unflatten(self.tree, tensors)
        it = iter(tensors)
        n = len(tensors) + len(self.others)
        leaves = [self.others[i] if i in self.others else next(it) for i in range(n)]
        return tree_unflatten(self.tree, leaves)


class _Draws:
    """The uniform draws of a compiled forward's dropout, as `generator.staged_uniform` asks
    for them: while finding them, their shapes (and concrete zeros, the graph being thrown
    away); then the staged inputs, in the same order."""

    def __init__(self) -> None:
        self.shapes: list = []
        self.dtype = default_float()  # (rand's dtype: the default float dtype)
        self.tracers: list | None = None
        self.used = 0

    def start(self, drawn: list) -> None:
        self.used = 0
        self.tracers = drawn if drawn else None
        if not drawn:
            self.shapes = []

    def __call__(self, shape: tuple):
        if self.tracers is None:
            self.shapes.append(shape)
            return np.zeros(shape, self.dtype)
        if self.used >= len(self.tracers) or self.shapes[self.used] != shape:
            raise _RandomDraw()
        self.used += 1
        return self.tracers[self.used - 1]

    def check_all_used(self) -> None:
        if self.tracers is None or self.used != len(self.tracers):
            raise _RandomDraw()


class _RandomDraw(Exception):
    """Staging drew from the default random generator (the draw would be frozen into the
    graph as a constant)."""

    def __str__(self) -> str:
        return (
            "a random draw (dropout in training mode, rand, randn, ...): its value would be "
            "frozen into the compiled graph"
        )


def _module_key(root: Module) -> tuple | None:
    """The module's guard: each submodule's identity, class and plain attributes (numbers,
    strings, tuples, None: `training`, `p`, `eps`, ...), each parameter's and buffer's
    identity, shape, dtype and requires_grad, in a walk of the module tree; None when a hook
    is registered (the call then runs eagerly)."""
    key: list = []
    stack = [root]
    while stack:
        m = stack.pop()
        d = m.__dict__
        if d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"]:
            return None
        if d["_backward_pre_hooks"]:
            return None
        key.append((id(m), type(m)))
        key.extend(
            [
                (k, v)
                for k, v in d.items()
                if type(v) in _GUARDED and (type(v) is not tuple or _hashable(v))
            ]
        )
        key.extend([_tensor_key(t) for t in d["_parameters"].values() if t is not None])
        key.append(None)
        key.extend([_tensor_key(t) for t in d["_buffers"].values() if t is not None])
        stack.extend([c for c in d["_modules"].values() if c is not None])
    return tuple(key)


def _tensor_key(t) -> tuple:
    """A guarded tensor's identity, shape, dtype (NumPy's: the torch face's dtype objects
    cost a lookup) and requires_grad."""
    v = t._value
    if type(v) is np.ndarray and t._trace is EVAL_TRACE:
        return id(t), v.shape, v.dtype, t._requires_grad or t._edge is not None
    return id(t), t.shape, t.dtype, t.requires_grad


def _modules_key(modules: list) -> tuple | None:
    """`_module_key` of each of `modules` (None if one has hooks)."""
    keys = []
    for m in modules:
        key = _module_key(m)
        if key is None:
            return None
        keys.append(key)
    return tuple(keys)


def _hashable(value) -> bool:
    if type(value) is not tuple:
        return True
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _named_state(module: Module) -> tuple:
    """The module's parameters then buffers: their dotted names, the tensors, how many are
    parameters."""
    names: list = []
    state: list = []
    for name, t in module.named_parameters():
        names.append(name)
        state.append(t)
    n_params = len(state)
    for name, b in module.named_buffers():
        names.append(name)
        state.append(b)
    return names, state, n_params


def _split_leaves(leaves: list) -> tuple:
    """The positions of the array leaves (the others are static: part of the guard, constants
    in the graph), and the guard of all leaves (None if one is unhashable)."""
    dynamic = []
    key: list = []
    for i, x in enumerate(leaves):
        kind = type(x)
        if kind in TENSOR_TYPES:
            dynamic.append(i)
            key.append((x.shape, x.dtype, x.requires_grad))
        elif kind is np.ndarray:
            dynamic.append(i)
            key.append((x.shape, x.dtype))
        else:
            try:
                hash(x)
            except TypeError:
                return dynamic, None
            key.append((kind, x))
    return dynamic, tuple(key)


def _aval(x) -> ShapedArray:
    return ShapedArray(tuple(x.shape), np.dtype(x.dtype))


def _name(fun: Callable) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _break_message(fun: Callable, error: Exception) -> str:
    """The graph break's cause and the user's line it happened at."""
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            where = f' at File "{frame.filename}", line {frame.lineno}: {frame.line}'
            break
    return (
        f"autodiff.compile(fullgraph=True): graph break in {_name(fun)!r}{where}: "
        f"{type(error).__name__}: {error}. Remove the break (use autodiff's control flow, "
        "keep values as tensors) or compile with fullgraph=False, where the call runs eagerly."
    )


class OptimizedModule(Module):
    """A compiled module (torch's OptimizedModule): calling it runs the original module's
    forward compiled; the original is its submodule `_orig_mod`, so its parameters, buffers,
    `state_dict` (keys prefixed `_orig_mod.`, as torch's), `train()` and `eval()` are the
    original's; other attributes read through to it."""

    def __init__(self, mod: Module, compiled: _Compiled) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args, **kwargs) -> Any:
        if any(self.__dict__.get(h) for h in _HOOK_DICTS):
            return super().__call__(*args, **kwargs)  # (hooks on the wrapper: eagerly)
        return self._compiled(args, kwargs)

    def forward(self, *args, **kwargs) -> Any:
        return self._compiled(args, kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    @property
    def _compile_counts(self) -> dict:
        return self._compiled.counts


def compile(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = False,
    backend: str | None = None,
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
) -> Any:
    """`model` (a function or an `nn.Module`) compiled, as torch.compile: its forward staged
    by `jit` once per guard set — the arguments' shapes, dtypes and requires_grad, the other
    arguments' values, each submodule's training mode, the parameters' and buffers' identities,
    shapes and dtypes — and recorded on the autograd graph as one node whose backward runs
    the compiled pullback. A module gives an `OptimizedModule` sharing the original's
    parameters. Usable as a decorator, with or without arguments.

    Arguments:
        model: a function or module (None: returns a decorator).
        fullgraph: raise `GraphBreakError`, naming the line, where the forward cannot be
            staged (Python reading a tensor's value, a random draw, a staging error); with
            False (the default) such a signature runs eagerly instead.
        dynamic: accepted; staging is per shape either way (a new shape stages again).
        backend: None or "inductor" (jit's default executor: NumPy, then Numba compiled in
            the background), "eager" / "aot_eager" / "numpy" (the NumPy executor), "numba".
        mode: None, "default", "reduce-overhead", "max-autotune",
            "max-autotune-no-cudagraphs" (accepted; one mode here).
        options: None or an empty dict.
        disable: return `model` unchanged.

    `compile(opt.step)` of SGD, Adam or AdamW updates every parameter of a group by one
    compiled function (the first step, creating the state, and other optimizers run
    eagerly). Dropout draws its masks from eager's stream, as staged inputs. Hooks, other
    random draws and graph breaks run eagerly; `compiled._compile_counts`
    counts stagings, graph breaks and calls.

    Example:
        >>> import autodiff as torch
        >>> model = torch.compile(torch.nn.Linear(3, 1))
        >>> loss = model(torch.ones(2, 3)).sum()
        >>> loss.backward()
        >>> model.weight.grad
        tensor([[2., 2., 2.]])
        >>> model._compile_counts["staged"]
        1
    """
    if backend not in _BACKENDS:
        raise ValueError(
            f"compile: unknown backend {backend!r}: use None, 'inductor', 'eager', 'aot_eager', "
            "'numpy' or 'numba' (jit's executors)"
        )
    if mode not in _MODES:
        raise ValueError(f"compile: unknown mode {mode!r}: use one of {_MODES}")
    if options:
        raise ValueError(f"compile: options are not supported, got {options!r}")
    if dynamic not in (None, False, True):
        raise TypeError(f"compile: dynamic must be a bool or None, got {dynamic!r}")
    if model is None:
        return functools.partial(
            compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode
        )
    if not callable(model):
        raise TypeError(f"compile: expected a function or a Module, got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, _Compiled(model, model, fullgraph, _BACKENDS[backend]))
    engine = _Compiled(model, None, fullgraph, _BACKENDS[backend])

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return engine(args, kwargs)

    compiled._compile_counts = engine.counts  # type: ignore[attr-defined]
    compiled._torchdynamo_orig_callable = model  # type: ignore[attr-defined]
    return compiled


__all__ = ["GraphBreakError", "OptimizedModule", "compile", "is_compiling", "reset"]
