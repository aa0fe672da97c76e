"""`Adagrad`: gradients scaled by the root of their accumulated squares."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor
from autodiff.torch.optim.optimizer import Optimizer, check_flags, check_hyperparameters, scalar


class Adagrad(Optimizer):
    """torch.optim.Adagrad: with g the gradient (negated if `maximize`) plus
    `weight_decay * p`, `s += g**2` (s starts at `initial_accumulator_value`), then
    `p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)`.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn, optim
        >>> w = nn.Parameter(ad.tensor([1.0]))
        >>> opt = optim.Adagrad([w], lr=0.1, eps=0.0)
        >>> w.grad = ad.tensor([3.0]); opt.step(); w.detach()  # lr * g / |g|
        tensor([0.9])
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_hyperparameters(
            lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, eps=eps,
        )  # fmt: skip
        check_flags(foreach, fused, differentiable)
        defaults = dict(
            lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, foreach=foreach,
            maximize=maximize, differentiable=differentiable, fused=fused,
        )  # fmt: skip
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        # (as torch, the state is made with the group, so state_dict() has it before a step)
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            state = self.state[p]
            state["step"] = Tensor(np.asarray(0.0))
            state["sum"] = anp.full_like(p.detach(), group["initial_accumulator_value"])

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns `closure()`'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, eps = scalar(group["lr"]), group["eps"]
                lr_decay, weight_decay = group["lr_decay"], scalar(group["weight_decay"])
                for p, g in self._gradients(group, "Adagrad"):
                    state = self.state[p]
                    state["step"] += 1
                    t = state["step"].item()
                    if weight_decay != 0:
                        g = g + weight_decay * p
                    clr = lr / (1 + (t - 1) * lr_decay)
                    state_sum = state["sum"]
                    state_sum += g * g
                    p -= clr * g / (anp.sqrt(state_sum) + eps)
        return loss


__all__ = ["Adagrad"]
