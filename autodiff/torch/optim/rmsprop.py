"""`RMSprop`: gradients scaled by a running root mean square (centered and momentum variants)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor
from autodiff.torch.optim.adam import lerp_
from autodiff.torch.optim.optimizer import Optimizer, check_flags, check_hyperparameters, scalar


class RMSprop(Optimizer):
    """torch.optim.RMSprop: with g the gradient (negated if `maximize`) plus
    `weight_decay * p`, `v = alpha v + (1 - alpha) g**2`, `avg = sqrt(v) + eps` (`centered`:
    `sqrt(v - mean(g)**2) + eps`), then `p -= lr * g / avg`, or with momentum
    `b = momentum b + g / avg`, `p -= lr * b`.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn, optim
        >>> w = nn.Parameter(ad.tensor([1.0]))
        >>> opt = optim.RMSprop([w], lr=0.01, alpha=0.0, eps=0.0)
        >>> w.grad = ad.tensor([4.0]); opt.step(); w.detach()  # a step of lr * sign(g)
        tensor([0.99])
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameters(
            lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha
        )
        check_flags(foreach, None, differentiable)
        defaults = dict(
            lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
            weight_decay=weight_decay, capturable=capturable, foreach=foreach,
            maximize=maximize, differentiable=differentiable,
        )  # fmt: skip
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns `closure()`'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, alpha, eps = scalar(group["lr"]), group["alpha"], group["eps"]
                momentum, weight_decay = group["momentum"], scalar(group["weight_decay"])
                for p, g in self._gradients(group, "RMSprop"):
                    state = self.state[p]
                    if not state:
                        state["step"] = Tensor(np.asarray(0.0))
                        state["square_avg"] = anp.zeros_like(p.detach())
                        if momentum > 0:
                            state["momentum_buffer"] = anp.zeros_like(p.detach())
                        if group["centered"]:
                            state["grad_avg"] = anp.zeros_like(p.detach())
                    state["step"] += 1
                    if weight_decay != 0:
                        g = g + weight_decay * p
                    square_avg = state["square_avg"]
                    square_avg *= alpha
                    square_avg += (1 - alpha) * g * g
                    if group["centered"]:
                        grad_avg = state["grad_avg"]
                        lerp_(grad_avg, g, 1 - alpha)
                        avg = anp.sqrt(square_avg - grad_avg * grad_avg) + eps
                    else:
                        avg = anp.sqrt(square_avg) + eps
                    if momentum > 0:
                        buf = state["momentum_buffer"]
                        buf *= momentum
                        buf += g / avg
                        p -= lr * buf
                    else:
                        p -= lr * g / avg
        return loss


__all__ = ["RMSprop"]
