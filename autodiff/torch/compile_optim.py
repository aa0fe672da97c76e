"""`compile(optimizer.step)` for SGD, Adam and AdamW: every parameter of a group updated by one
jit-compiled function (the eager step's formulas, in its order of operations), the new values
written into the parameters' and the state's buffers."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core import views as _views
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.staging.api import jit
from autodiff.staging.call import run_graph
from autodiff.torch.optim.adam import Adam, AdamW
from autodiff.torch.optim.optimizer import Optimizer, scalar
from autodiff.torch.optim.sgd import SGD


def _sgd(flags: tuple, params: list, grads: list, bufs: list, hyper: tuple) -> tuple:
    """SGD's step on every parameter of a group (as SGD.step computes it)."""
    maximize, decay, momentum_on, nesterov = flags
    lr, weight_decay, momentum, undamped = hyper
    new_params, new_bufs = [], []
    for i, (p, g) in enumerate(zip(params, grads)):
        if maximize:
            g = -g
        if decay:
            g = g + weight_decay * p
        if momentum_on:
            buf = bufs[i] * momentum
            buf = buf + undamped * g
            new_bufs.append(buf)
            g = g + momentum * buf if nesterov else buf
        new_params.append(p - lr * g)
    return new_params, new_bufs


def _adam(flags: tuple, params: list, grads: list, avgs: list, sqs: list, hyper: tuple) -> tuple:
    """Adam's (AdamW's) step on every parameter of a group (as Adam.step computes it)."""
    maximize, decay, decoupled, small_weight = flags
    weight_decay, factor, weight, beta2, one_minus_beta2, eps, sizes, corrections = hyper
    new_params, new_avgs, new_sqs = [], [], []
    for p, g, m, v, step_size, correction in zip(params, grads, avgs, sqs, sizes, corrections):
        if maximize:
            g = -g
        if decay:
            if decoupled:
                p = p * factor
            else:
                g = g + weight_decay * p
        if small_weight:  # (torch's lerp, as optim.adam.lerp_ rounds it)
            m = m + weight * (g - m)
        else:
            m = g - (g - m) * (1 - weight)
        v = v * beta2
        v = v + one_minus_beta2 * g * g
        denom = anp.sqrt(v) / correction + eps
        new_params.append(p - step_size * m / denom)
        new_avgs.append(m)
        new_sqs.append(v)
    return new_params, new_avgs, new_sqs


def _writable(t) -> bool:
    value = t._value
    return (
        t._trace is EVAL_TRACE
        and type(value) is np.ndarray
        and value.dtype.kind == "f"
        and value.flags.writeable
    )


def _write(targets: list, news) -> None:
    """Each of `targets` <- its new value in `news`, in place, as an optimizer's in-place
    update writes it (a new version; as `Tensor._ufunc_in_place` under no_grad). Memory that
    a node may have saved (a non-leaf's, a view's, a live alias's) is marked written first."""
    for t, new in zip(targets, news):
        value, vc = t._value, t._vc
        if type(value) is not np.ndarray or t._trace is not EVAL_TRACE or not value.flags.writeable:
            with no_grad():
                t.copy_(Tensor._from(np.asarray(new)))
            continue
        shared = type(vc) is not int
        if t._edge is not None or t._view is not None or (shared and _aliased(t, vc.views)):
            _views.memory_written(t)
        value[...] = new
        if shared:
            vc.value += 1
        else:
            t._vc = vc + 1


def _aliased(t, views) -> bool:
    """Whether a live tensor other than `t` is among the weak references `views` (None: no
    aliases were ever made)."""
    for ref in views or ():
        other = ref()
        if other is not None and other is not t:
            return True
    return False


def _ready(params: list, state: dict, keys: tuple) -> bool:
    """Every parameter a plain float tensor whose state holds `keys` (a first step, which
    creates the state, runs eagerly)."""
    for p in params:
        s = state.get(p)
        if s is None or any(s.get(k) is None for k in keys):
            return False
    return True


def _sgd_group(staged, opt: Any, group: dict, params: list) -> None:
    momentum = group["momentum"]
    weight_decay = scalar(group["weight_decay"])
    flags = (bool(group["maximize"]), weight_decay != 0, momentum != 0, bool(group["nesterov"]))
    bufs = [opt.state[p]["momentum_buffer"] for p in params] if momentum != 0 else []
    hyper = (scalar(group["lr"]), weight_decay, momentum, 1 - group["dampening"])
    news = staged(
        flags, [p._value for p in params], [p.grad._value for p in params],
        [b._value for b in bufs], hyper,
    )  # fmt: skip
    _write(params + bufs, news)  # (the new parameters, then the new buffers)


def _adam_group(staged, opt: Any, group: dict, params: list) -> None:
    lr, eps = scalar(group["lr"]), group["eps"]
    beta1, beta2 = group["betas"]
    weight_decay = scalar(group["weight_decay"])
    states = [opt.state[p] for p in params]
    sizes, corrections = [], []
    steps = [s["step"] for s in states]
    for step in steps:
        t = float(step._value) + 1
        sizes.append(lr / (1 - beta1**t))
        corrections.append((1 - beta2**t) ** 0.5)
    weight = 1 - beta1
    flags = (
        bool(group["maximize"]), weight_decay != 0, bool(group["decoupled_weight_decay"]),
        abs(weight) < 0.5,
    )  # fmt: skip
    hyper = (weight_decay, 1 - lr * weight_decay, weight, beta2, 1 - beta2, eps)
    avgs = [s["exp_avg"] for s in states]
    sqs = [s["exp_avg_sq"] for s in states]
    news = staged(
        flags, [p._value for p in params], [p.grad._value for p in params],
        [m._value for m in avgs], [v._value for v in sqs], (*hyper, sizes, corrections),
    )  # fmt: skip
    # (the steps, then the new parameters, first moments and second moments)
    _write(steps + params + avgs + sqs, [s._value + 1 for s in steps] + news)


_KINDS: dict = {SGD: "sgd", Adam: "adam", AdamW: "adam"}


class FusedStep:
    """The compiled step of an optimizer (SGD, Adam, AdamW): calling it with the optimizer
    updates every group by one jit-compiled function and returns True; it returns False,
    having changed nothing, when a group cannot take it (a first step, which creates the
    state; amsgrad; complex or non-NumPy parameters; another optimizer): then the eager step
    is to run.

    Example:
        >>> import autodiff as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
        >>> opt, fused = torch.optim.SGD([w], lr=0.5), FusedStep()
        >>> w.grad = torch.tensor([1.0, 1.0])
        >>> fused(opt), w.detach()
        (True, tensor([ 0.5, -2.5]))
    """

    def __init__(self) -> None:
        self.staged = {"sgd": jit(_sgd, static_argnums=0), "adam": jit(_adam, static_argnums=0)}
        self._graphs: dict = {}  # (kind, flags, the leaves' shapes and dtypes) -> Graph

    def _run(self, kind: str, flags: tuple, *args) -> list:
        """`self.staged[kind](flags, *args)`'s outputs, flat, by its staged graph at once
        (arrays and numbers in flat lists, known in advance: no pytree walk, no signature of
        each leaf)."""
        flat = []
        for a in args:
            if type(a) is tuple:
                for b in a:
                    flat.extend(b) if type(b) is list else flat.append(b)
            else:
                flat.extend(a)
        avals = tuple([(x.shape, x.dtype) if type(x) is np.ndarray else type(x) for x in flat])
        key = (kind, flags, tuple([len(a) for a in args]), avals)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = self.staged[kind].graph(flags, *args)
        return list(run_graph(graph, *flat))  # (its lists of outputs, concatenated)

    @property
    def traces(self) -> int:
        """How many update functions were staged (once per group signature)."""
        return sum(f.traces for f in self.staged.values())

    def __call__(self, opt: Optimizer) -> bool:
        kind: Any = _KINDS.get(type(opt))
        if kind is None or opt.defaults.get("differentiable"):
            return False
        groups = [(g, [p for p in g["params"] if p.grad is not None]) for g in opt.param_groups]
        # (every group checked before any is written: a partial step would be wrong)
        if not all(_plain(params) and _ready_for(opt, g, params) for g, params in groups):
            return False
        group_step = _sgd_group if kind == "sgd" else _adam_group
        for group, params in groups:
            if params:
                group_step(functools.partial(self._run, kind), opt, group, params)
        return True


def _plain(params: list) -> bool:
    return all(_writable(p) and type(p.grad._value) is np.ndarray for p in params)


def _ready_for(opt: Optimizer, group: dict, params: list) -> bool:
    if isinstance(opt, Adam):
        if group["amsgrad"]:
            return False
        return _ready(params, opt.state, ("step", "exp_avg", "exp_avg_sq"))
    if group["momentum"] != 0:
        return _ready(params, opt.state, ("momentum_buffer",))
    return True


__all__ = ["FusedStep"]
