"""`Adam` and `AdamW`: adaptive moments with bias correction (AdamW decays weights decoupled)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor
from autodiff.torch.optim.optimizer import Optimizer, check_flags, check_hyperparameters, scalar


def lerp_(start: Tensor, end, weight: float) -> None:
    """`start += weight * (end - start)` in place, rounded as torch's lerp."""
    if abs(weight) < 0.5:
        start += weight * (end - start)
    else:
        start.copy_(end - (end - start) * (1 - weight))


class Adam(Optimizer):
    """torch.optim.Adam: with g the gradient (negated if `maximize`; plus `weight_decay * p`,
    or, with `decoupled_weight_decay` (AdamW), `p *= 1 - lr * weight_decay` first),
    `m = beta1 m + (1 - beta1) g`, `v = beta2 v + (1 - beta2) g**2` (`amsgrad`: the running
    max of v), then `p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn, optim
        >>> w = nn.Parameter(ad.tensor([1.0, -2.0]))
        >>> opt = optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step()
        >>> w.detach()  # the first step moves each coordinate by lr
        tensor([ 0.9, -1.9])
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_hyperparameters(lr=lr, eps=eps, weight_decay=weight_decay)
        check_flags(foreach, fused, differentiable)
        beta1, beta2 = (scalar(b) for b in betas)
        if not 0.0 <= beta1 < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= beta2 < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(
            lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
            maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )  # fmt: skip
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns `closure()`'s loss."""
        loss = self._closure_loss(closure)
        name = type(self).__name__
        with no_grad():
            for group in self.param_groups:
                lr, eps = scalar(group["lr"]), group["eps"]
                beta1, beta2 = group["betas"]
                weight_decay = scalar(group["weight_decay"])
                for p, g in self._gradients(group, name):
                    state = self.state[p]
                    if not state:
                        state["step"] = Tensor(np.asarray(0.0))
                        state["exp_avg"] = anp.zeros_like(p.detach())
                        state["exp_avg_sq"] = anp.zeros_like(p.detach())
                        if group["amsgrad"]:
                            state["max_exp_avg_sq"] = anp.zeros_like(p.detach())
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    state["step"] += 1
                    if weight_decay != 0:
                        if group["decoupled_weight_decay"]:
                            p *= 1 - lr * weight_decay
                        else:
                            g = g + weight_decay * p
                    lerp_(exp_avg, g, 1 - beta1)
                    exp_avg_sq *= beta2
                    exp_avg_sq += (1 - beta2) * g * g
                    t = state["step"].item()
                    step_size = lr / (1 - beta1**t)
                    bias_correction2_sqrt = (1 - beta2**t) ** 0.5
                    if group["amsgrad"]:
                        max_sq = state["max_exp_avg_sq"]
                        max_sq.copy_(anp.maximum(max_sq, exp_avg_sq))
                        denom = anp.sqrt(max_sq) / bias_correction2_sqrt + eps
                    else:
                        denom = anp.sqrt(exp_avg_sq) / bias_correction2_sqrt + eps
                    p -= step_size * exp_avg / denom
        return loss


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (`p *= 1 - lr * weight_decay`
    before the Adam step), weight_decay 0.01 by default.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn, optim
        >>> w = nn.Parameter(ad.tensor([1.0]))
        >>> opt = optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> w.grad = ad.tensor([0.0]); opt.step(); w.detach()  # decay only: 1 - 0.1 * 0.5
        tensor([0.95])
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=True,
        )  # fmt: skip


__all__ = ["Adam", "AdamW"]
