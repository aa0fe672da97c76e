"""A compiled training step: `compile` of a function that calls `backward()` and an optimizer's
`step` (torch.compile with compiled autograd) staged as one graph.

While such a function stages (`StepCapture`, installed by compile.py), `loss.backward()` on
the staged loss differentiates the graph staged so far with respect to the parameters it
read (the captured tensors requiring grad) and keeps the gradients as staged values, which
`.grad` then reads; `zero_grad()` sets them to None; `optimizer.step()` of SGD, Adam or
AdamW stages the eager step's formulas (compile_optim.py) on them, its hyperparameters and
step counts read from the optimizer before each call, and later reads of the parameters
take the new values. The graph's extra outputs, the gradients and the updated parameters
and state, are written into the tensors after each call, as the eager step leaves them.

What the capture cannot stage as eager runs it raises `Unsupported` (a graph break: the
function runs eagerly) or, for an optimizer that has no state yet (its first step creates
it), `NotYet` (this call runs eagerly; the next stages).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import is_not

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import is_grad_enabled
from autodiff.core.pytree import tree_flatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.staging.call import _pullback_flat
from autodiff.staging.ir import Graph
from autodiff.staging.trace import StagingTracer, _tracer
from autodiff.torch.compile_optim import _KINDS, _adam, _sgd, _write
from autodiff.torch.nn.module import Module
from autodiff.torch.optim.optimizer import scalar


class MutableTracer(StagingTracer):
    """A staged value standing for a tensor the function may write in place (a module's
    buffer, a gradient): an in-place write rebinds it to the new staged value, which later
    reads see; its final value is an output written back into the tensor."""

    __slots__ = ()
    _mutable_when_staged = True

    def _inplace_method(self, result, since=None) -> Tensor:
        new = anp.astype(anp.broadcast_to(result, self.shape), self.dtype)
        if not isinstance(new, StagingTracer) or new._trace is not self._trace:
            new = anp.where(np.True_, new, self)  # (a constant written: make it staged)
        self._var = new._var
        self._value = new._value
        return self

    def _assign_inplace(self, result, since=None) -> Tensor:
        return self._inplace_method(result, since)


def _mutable(value) -> MutableTracer:
    """A fresh MutableTracer of the staged `value` (others holding `value` keep it)."""
    tracer = _tracer(value._trace, value._var)
    tracer.__class__ = MutableTracer
    return tracer


class Unsupported(Exception):
    """What a compiled training step cannot stage (the function then runs eagerly)."""


class NotYet(Exception):
    """An optimizer step whose state its first (eager) step is still to create."""

    def __str__(self) -> str:
        return "the optimizer's state is created by its first step, which runs eagerly"


class StepCapture:
    """`backward()`, `.grad`, `zero_grad()` and `optimizer.step()` while a compiled function
    stages (see the module), and the writes after each call of its graph."""

    def __init__(self, arguments_need_grad: bool) -> None:
        self.arguments_need_grad = arguments_need_grad
        self.reset(None)

    def reset(self, trace) -> None:
        """Start (again) on the staging `trace`."""
        self.trace = trace
        self.used = False
        self.grads: dict = {}  # id(tensor) -> [tensor, its gradient now, a new tensor?]
        self.initial: dict = {}  # id(tensor) -> (tensor, the .grad read as it was)
        self.updates: dict = {}  # id(tensor) -> [tensor, its staged new value]
        self.slots: list = []  # (vector, function giving its values, dtype): set per call
        self.structure: list = []  # each group's `_Structure`: checked per call
        self.steps: list = []  # step-count tensors, +1 after each call
        self.done: set = set()  # the graph variables of the losses already differentiated
        self.outputs: list = []  # what the extra outputs are written into, in order
        self.lifted: dict = {}  # id(staged parameter) -> the parameter
        self.buffers: dict = {}  # id(buffer) -> (buffer, its MutableTracer, its first Var)
        self.slots_of: dict = {}  # id(parameter) -> [(parameters dict, name)] holding it

    def lift(self, modules: list) -> None:
        """The parameters of `modules` staged (as captured values) while the function stages,
        so that what it computes from them alone is staged too (a weight's transpose, say);
        `restore` puts them back."""
        for module in modules:
            for m in module.modules():
                self._lift(m.__dict__["_parameters"], False)
                self._lift(m.__dict__["_buffers"], True)

    def _lift(self, tensors: dict, mutable: bool) -> None:
        """The plain tensors of a module's `tensors` (parameters, or buffers: `mutable`,
        written in place by BatchNorm) staged; each tensor lifted once."""
        builder = self.trace.builder
        for name, t in tensors.items():
            if t is None or type(t._value) is not np.ndarray or t._trace is not EVAL_TRACE:
                continue
            tracer = _tracer(self.trace, builder._capture(t))
            if mutable:
                found = self.buffers.get(id(t))
                tracer = found[1] if found is not None else _mutable(tracer)
                self.buffers[id(t)] = (t, tracer, tracer._var)
            self.lifted[id(tracer)] = t
            self.slots_of.setdefault(id(t), []).append((tensors, name, t))
            tensors[name] = tracer

    def restore(self) -> None:
        for slots in self.slots_of.values():
            for params, name, p in slots:
                params[name] = p
        self.slots_of = {}

    def real(self, t):
        """The parameter a staged parameter stands for (else `t`)."""
        return self.lifted.get(id(t), t)

    # ---- while staging ----
    def call(self, fun: Callable, args: tuple, kwargs: dict, modules: list, split: Callable):
        """`split(fun(*args, **kwargs))` staged with the parameters of `modules` lifted, and
        the extra outputs the function's steps made (`finish`)."""
        self.reset(state().stack[-1])
        self.lift(modules)
        try:
            out = split(fun(*args, **kwargs))
        finally:
            self.restore()
        extra = self.finish() if self.used else []
        # (what only staging needed: the calls keep no staged value, nor the trace's graph)
        self.trace, self.grads, self.updates, self.lifted, self.buffers = None, {}, {}, {}, {}
        self.done = set()
        return out, extra

    def _on_trace(self, what: str):
        if self.trace is None or state().stack[-1] is not self.trace:
            raise Unsupported(f"{what} inside a transform of the compiled function")
        return self.trace

    def grad_of(self, t: Tensor):
        """`t.grad` as the function has it now."""
        t = self.real(t)
        entry = self.grads.get(id(t))
        if entry is not None:
            return entry[1]
        g = t._grad
        self.initial[id(t)] = (t, g)  # (each call checks it: None, or this very tensor)
        if g is None:
            return None
        if g._trace is not EVAL_TRACE or type(g._value) is not np.ndarray:
            raise Unsupported("a gradient that is not a plain tensor")
        staged = _mutable(self._value(g))  # (written back into `g`, in place)
        self.grads[id(t)] = [t, staged, False]
        return staged

    def set_grad(self, t: Tensor, value) -> None:
        t = self.real(t)
        self.grads[id(t)] = [t, value, True]

    def zero_grads(self, params, set_to_none: bool) -> None:
        if not set_to_none:
            raise Unsupported("zero_grad(set_to_none=False)")
        for p in params:
            p = self.real(p)
            self.grads[id(p)] = [p, None, True]

    def backward(self, tensors, seeds, retain_graph, create_graph, inputs) -> None:
        """The gradients of the staged `tensors` into the `.grad` the function reads."""
        if create_graph or inputs is not None:
            raise Unsupported("backward(create_graph=True) or backward(inputs=...)")
        if self.arguments_need_grad:
            raise Unsupported("backward() with an argument that requires grad")
        if not is_grad_enabled():
            raise Unsupported("backward() under no_grad")
        trace = self._on_trace("backward()")
        outs = list(tensors) if isinstance(tensors, (tuple, list)) else [tensors]
        if not outs or any(type(o) is not StagingTracer or o._trace is not trace for o in outs):
            raise Unsupported("backward() of a value that was not staged")
        if any(o._var in self.done for o in outs):
            raise Unsupported("backward() through the same graph a second time")
        cts = _seeds(outs, seeds)
        builder = trace.builder
        captured = list(builder.captured.values())
        leaves = _leaves(captured, len(builder.in_vars))
        in_vars = builder.in_vars + [var for var, _ in captured]
        in_tree = tree_flatten([0] * len(in_vars))[1]
        out_tree = tree_flatten([0] * len(outs))[1]
        partial = Graph(in_vars, list(builder.consts.values()), list(builder.equations),
                        [o._var for o in outs], in_tree, out_tree, builder.name)  # fmt: skip
        _, pullback = _pullback_flat(partial, [_tracer(trace, v) for v in in_vars])
        found = pullback(cts)
        for position, t in leaves:
            g = found[position]
            if g is None:
                continue
            current = self.grad_of(t)
            entry = self.grads.get(id(t))
            fresh = entry[2] if entry is not None else current is None
            self.grads[id(t)] = [t, _mutable(g if current is None else current + g), fresh]
        self.done.update(o._var for o in outs)
        self.used = True

    def optimizer_step(self, opt, closure=None):
        """Stage `opt.step()` (SGD, Adam, AdamW) on the gradients the function has."""
        if closure is not None:
            raise Unsupported("optimizer.step(closure)")
        kind = _KINDS.get(type(opt))
        if kind is None or opt.defaults.get("differentiable"):
            raise Unsupported(f"{type(opt).__name__}.step()")
        trace = self._on_trace("optimizer.step()")
        for group in opt.param_groups:
            params = [p for p in group["params"] if self.grad_of(p) is not None]
            if params:
                self._group_step(trace, kind, opt, group, params)
        self.used = True

    def _group_step(self, trace, kind: str, opt, group: dict, params: list) -> None:
        for p in params:
            if (
                p._trace is not EVAL_TRACE
                or p._edge is not None
                or type(p._value) is not np.ndarray
            ):
                raise Unsupported("an optimizer over tensors that are not plain leaves")
        dtypes = {p._value.dtype for p in params}
        if len(dtypes) != 1 or next(iter(dtypes)).kind != "f":
            raise Unsupported("an optimizer group of mixed or non-float dtypes")
        dtype = next(iter(dtypes))
        keys = ("step", "exp_avg", "exp_avg_sq") if kind == "adam" else ("momentum_buffer",)
        if kind == "sgd" and group["momentum"] == 0:
            keys = ()
        if kind == "adam" and group["amsgrad"]:
            raise Unsupported("Adam(amsgrad=True)")
        states = [[opt.state.get(p, {}).get(k) for k in keys] for p in params]
        if any(x is None for s in states for x in s):
            raise NotYet()
        structure = _Structure(kind, opt, group, params, states)
        self.structure.append(structure)
        values = [self._value(p) for p in params]
        grads = [self._value(self.grad_of(p)) for p in params]
        hyper = self._slots(structure.hyper, dtype)
        if kind == "sgd":
            bufs = [s[0] for s in states] if keys else []
            news, new_bufs = _sgd(structure.flags, values, grads,
                                  [self._value(b) for b in bufs], hyper)  # fmt: skip
            self._rebind(trace, params + bufs, news + new_bufs)
            return
        n = len(params)
        steps = [s[0] for s in states]
        avgs, sqs = [s[1] for s in states], [s[2] for s in states]
        fixed = hyper[:6]  # (weight_decay, factor, weight, beta2, 1 - beta2, eps)
        sizes, corrections = list(hyper[6 : 6 + n]), list(hyper[6 + n :])
        news, new_avgs, new_sqs = _adam(
            structure.flags, values, grads, [self._value(m) for m in avgs],
            [self._value(v) for v in sqs], (*fixed, sizes, corrections),
        )  # fmt: skip
        self._rebind(trace, params + avgs + sqs, news + new_avgs + new_sqs)
        self.steps.extend(steps)

    def _value(self, t):
        """`t` as a staged value: its new value if the function updated it, else the
        tensor captured (a concrete tensor would have what is computed from it alone
        computed once, now)."""
        entry = self.updates.get(id(t))
        if entry is not None:
            return entry[1]
        if isinstance(t, Tensor) and t._trace is EVAL_TRACE:
            return _tracer(self.trace, self.trace.builder._capture(t))
        return t

    def _slots(self, provider, dtype) -> list:
        """`provider()`'s values as staged scalars: the elements of a vector the graph takes,
        which is set before each call."""
        slot = Tensor._from(np.asarray(provider(), dtype))
        self.slots.append((slot, provider, dtype))
        staged = self._value(slot)
        return [staged[i] for i in range(slot.shape[0])]

    def _rebind(self, trace, targets: list, news: list) -> None:
        builder = trace.builder
        for t, new in zip(targets, news):
            if type(new) is not StagingTracer:
                new = _staged(new, t)
            self.updates[id(t)] = [t, new]
            builder.rebound[id(t)] = new._var
            for params, name, _ in self.slots_of.get(id(t), ()):
                params[name] = new  # (the modules' later reads take the new value)
                self.lifted[id(new)] = t
        builder.check_read = self._check_read

    def _check_read(self, x) -> None:
        """A tensor read after the staged optimizer step: not one sharing the memory of a
        tensor the step updated (an alias would read the new values eagerly)."""
        value = getattr(x, "_value", None)
        if type(value) is not np.ndarray:
            return
        for t, _ in self.updates.values():
            if np.may_share_memory(value, t._value):
                raise Unsupported("reading a view or alias of a parameter after optimizer.step()")

    def finish(self) -> list:
        """The extra outputs of the graph (gradients, then updated tensors), noting where
        each goes."""
        self.outputs = []
        self.n_outputs = 0
        values = []
        for t, g, fresh in self.grads.values():
            if g is None:
                self.outputs.append(("none", t))
                continue
            self.outputs.append(("grad", t, fresh))
            values.append(g)
        for t, new in self.updates.values():
            self.outputs.append(("update", t))
            values.append(new)
        for t, tracer, first in self.buffers.values():
            if tracer._var is not first and id(t) not in self.updates:  # (written in place)
                self.outputs.append(("update", t))
                values.append(tracer)
        self.n_outputs = len(values)
        return values

    # ---- at each call ----
    def valid(self) -> bool:
        """Whether the optimizer's groups and state, and the gradients the function read,
        are as they were staged."""
        for t, g in self.initial.values():
            if t._grad is not g:
                return False
        return all(structure.holds() for structure in self.structure)

    def before_call(self) -> None:
        """The hyperparameters and step counts into the slots."""
        for slot, provider, dtype in self.slots:
            slot._value = np.array(provider(), dtype)

    def after_call(self, arrays: list) -> None:
        """The gradients, new parameters and state, and the step counts, written (as the
        eager step writes them: in place, a new version each)."""
        it = iter(arrays)
        targets, news = list(self.steps), [float(s._value) + 1 for s in self.steps]
        for out in self.outputs:
            kind, t = out[0], out[1]
            if kind == "update":
                targets.append(t)
                news.append(next(it))
            elif kind == "grad":
                _write_grad(t, next(it), out[2])
            else:
                t._grad = None
        _write(targets, news)


class _Structure:
    """What a staged optimizer step of one group depends on beyond values: the group, its
    parameters and state tensors (identities) and the flags choosing the formulas; calling
    it gives them now. `hyper()` gives the group's numbers for the slots."""

    def __init__(self, kind: str, opt, group: dict, params: list, states: list) -> None:
        self.kind, self.opt, self.group = kind, opt, group
        self.params, self.states = params, states
        self.flags = self._flags()
        self.all_params = list(group["params"])
        self.keys = _keys(self)
        self.arrays = [(p._value.shape, p._value.dtype) for p in params]  # (the graph's)

    def _flags(self) -> tuple:
        g = self.group
        decay = scalar(g["weight_decay"]) != 0
        if self.kind == "sgd":
            return (bool(g["maximize"]), decay, g["momentum"] != 0, bool(g["nesterov"]))
        weight = 1 - g["betas"][0]
        return (bool(g["maximize"]), decay, bool(g["decoupled_weight_decay"]), abs(weight) < 0.5)

    def holds(self) -> bool:
        """Whether the group, its parameters (their arrays' shapes and dtypes), their state
        tensors and the flags are as staged."""
        group, opt = self.group, self.opt
        if not any(g is group for g in opt.param_groups) or self._flags() != self.flags:
            return False
        params = group["params"]
        if len(params) != len(self.all_params) or any(map(is_not, params, self.all_params)):
            return False
        for p, (shape, dtype) in zip(self.params, self.arrays):
            v = p._value  # (`.data = ...` may have given it another array)
            if type(v) is not np.ndarray or v.shape != shape or v.dtype != dtype:
                return False
        return self._state_holds()

    def _state_holds(self) -> bool:
        state, keys = self.opt.state, self.keys
        for p, held in zip(self.params, self.states):
            s = state.get(p) if keys else {}
            if s is None:
                return False
            for k, t in zip(keys, held):
                if s.get(k) is not t:
                    return False
        return True

    def hyper(self) -> list:
        g = self.group
        if self.kind == "sgd":
            return [scalar(g["lr"]), scalar(g["weight_decay"]), g["momentum"], 1 - g["dampening"]]
        lr, eps = scalar(g["lr"]), g["eps"]
        beta1, beta2 = g["betas"]
        decay = scalar(g["weight_decay"])
        sizes, corrections = [], []
        for s in self.states:
            t = float(s[0]._value) + 1
            sizes.append(lr / (1 - beta1**t))
            corrections.append((1 - beta2**t) ** 0.5)
        fixed = [decay, 1 - lr * decay, 1 - beta1, beta2, 1 - beta2, eps]
        return fixed + sizes + corrections


def _keys(structure: _Structure) -> tuple:
    if structure.kind == "adam":
        return ("step", "exp_avg", "exp_avg_sq")
    return ("momentum_buffer",) if structure.group["momentum"] != 0 else ()


def modules_of(fun: Callable) -> list:
    """The modules a compiled function names: its globals and closure variables, and its
    instance and the instance's attributes for a method, that are Modules (their parameters
    are staged while it stages: `StepCapture.lift`)."""
    candidates: list = []
    code = getattr(fun, "__code__", None)
    if code is not None:
        names = getattr(fun, "__globals__", {})
        candidates += [names[n] for n in code.co_names if n in names]
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            candidates.append(cell.cell_contents)
        except ValueError:  # (a cell not filled yet)
            continue
    owner = getattr(fun, "__self__", None)
    if owner is not None:
        candidates.append(owner)
        candidates += list(getattr(owner, "__dict__", {}).values())
    found: dict = {}
    for c in candidates:
        if isinstance(c, Module):
            found.setdefault(id(c), c)
    return list(found.values())


def _seeds(outs: list, seeds) -> list:
    """The cotangents of `outs` (`backward`'s gradient, ones for a scalar)."""
    if seeds is None:
        for o in outs:
            if o.shape != ():
                raise Unsupported("backward() of a non-scalar without a gradient")
        return [np.ones((), o.dtype) for o in outs]
    seeds = list(seeds) if isinstance(seeds, (tuple, list)) else [seeds]
    if len(seeds) != len(outs):
        raise Unsupported("backward() with a gradient per tensor missing")
    return [np.ones(o.shape, o.dtype) if s is None else s for o, s in zip(outs, seeds)]


_HOOKS = ("tensor_pre_hooks", "pre_hooks", "post_hooks", "post_accumulate_hooks", "retains")


def _leaves(captured: list, first: int) -> list:
    """(position among the graph's inputs, tensor) of the captured leaves requiring grad."""
    leaves = []
    for i, (_, t) in enumerate(captured):
        if t._trace is not EVAL_TRACE or not t.requires_grad:
            continue
        if t._edge is not None:
            raise Unsupported("backward() into a tensor computed outside the compiled function")
        extra = t._accumulator.extra if t._accumulator is not None else None
        if extra is not None and any(getattr(extra, name) for name in _HOOKS):
            raise Unsupported("backward() into a tensor with hooks")
        leaves.append((first + i, t))
    return leaves


def _staged(value, like: Tensor) -> StagingTracer:
    """`value` as a staged value (a constant's copy in the graph)."""
    return anp.where(np.True_, value, like)


def _write_grad(t: Tensor, array, fresh: bool) -> None:
    """`t.grad` <- `array`: a new tensor, or written into the gradient the function added to."""
    if fresh:
        t._grad = Tensor._from(array if type(array) is np.ndarray else np.asarray(array))
        return
    g = t._grad
    if g is None or type(g._value) is not np.ndarray or g._value.shape != np.shape(array):
        t._grad = Tensor._from(np.asarray(array))
        return
    _write([g], [array])


__all__ = ["MutableTracer", "NotYet", "StepCapture", "Unsupported", "modules_of"]
