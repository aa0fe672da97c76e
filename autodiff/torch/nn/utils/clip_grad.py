"""Gradient clipping: `clip_grad_norm_` (rescale all gradients together) and
`clip_grad_value_` (clamp each element)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients of `parameters` in place so that their total `norm_type`-norm (the
    norm of all gradients as one vector) is at most `max_norm`; returns that total norm.

    As torch: the scale is min(1, max_norm / (total + 1e-6)).

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> p = nn.Parameter(ad.zeros(2)); p.grad = ad.tensor([3.0, 4.0])
        >>> clip_grad_norm_([p], max_norm=1.0)
        tensor(5.)
        >>> round(float(p.grad.sum()), 4)  # (0.6 + 0.8) up to the 1e-6
        1.4
    """
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return Tensor(np.asarray(0.0))
    with no_grad():
        norms = anp.stack([anp.linalg.norm(anp.ravel(g), ord=norm_type) for g in grads])
        total = anp.linalg.norm(norms, ord=norm_type)
        if error_if_nonfinite and not math.isfinite(float(total)):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        scale = anp.minimum(max_norm / (total + 1e-6), 1.0)
        for g in grads:
            g *= anp.astype(scale, g.dtype)
    return total


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient element of `parameters` to [-clip_value, clip_value], in place.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> p = nn.Parameter(ad.zeros(2)); p.grad = ad.tensor([-3.0, 0.5])
        >>> clip_grad_value_(p, 1.0); p.grad
        tensor([-1. ,  0.5])
    """
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(anp.clip(g, -clip_value, clip_value))


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
