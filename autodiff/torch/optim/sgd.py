"""`SGD`: stochastic gradient descent with momentum, dampening, Nesterov, weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor
from autodiff.torch.optim.optimizer import Optimizer, check_flags, check_hyperparameters, scalar


class SGD(Optimizer):
    """torch.optim.SGD: with g the gradient (negated if `maximize`) plus `weight_decay * p`,
    the momentum buffer `b = momentum * b + (1 - dampening) * g` (`b = g` at the first
    step), then `p -= lr * (g + momentum * b if nesterov else b)` (`p -= lr * g` without
    momentum).

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn, optim
        >>> w = nn.Parameter(ad.tensor([1.0, -2.0]))
        >>> opt = optim.SGD([w], lr=0.1, momentum=0.9)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w * w).sum().backward()  # gradient 2 w
        ...     opt.step()
        >>> w.detach()
        tensor([ 0.46, -0.92])
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_hyperparameters(lr=lr, momentum=momentum, weight_decay=weight_decay)
        check_flags(foreach, fused, differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
            nesterov=nesterov, maximize=maximize, foreach=foreach,
            differentiable=differentiable, fused=fused,
        )  # fmt: skip
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns `closure()`'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr = scalar(group["lr"])
                momentum, dampening = group["momentum"], group["dampening"]
                weight_decay = scalar(group["weight_decay"])
                for p, g in self._gradients(group, "SGD"):
                    if weight_decay != 0:
                        g = g + weight_decay * p
                    if momentum != 0:
                        state = self.state[p]
                        buf: Tensor | None = state.get("momentum_buffer")
                        if buf is None:
                            buf = state["momentum_buffer"] = anp.copy(g)
                        else:
                            buf *= momentum
                            buf += (1 - dampening) * g
                        g = g + momentum * buf if group["nesterov"] else buf
                    p -= lr * g
        return loss


__all__ = ["SGD"]
