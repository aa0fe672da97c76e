"""Parameters as one flat vector and back (`parameters_to_vector`, `vector_to_parameters`)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable).

    Example:
        >>> from autodiff import nn
        >>> parameters_to_vector(nn.Linear(3, 2).parameters()).shape
        (8,)
    """
    return anp.concatenate([anp.ravel(p) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Write consecutive slices of `vec` into the parameters (their shapes in order).

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> layer = nn.Linear(2, 1)
        >>> vector_to_parameters(ad.tensor([1.0, 2.0, 3.0]), layer.parameters())
        >>> layer.weight.detach(), layer.bias.detach()
        (tensor([[1., 2.]]), tensor([3.]))
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    parameters = list(parameters)
    total = sum(math.prod(p.shape) for p in parameters)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ValueError(
            f"vector_to_parameters: expected a vector of {total} elements, got shape {vec.shape}"
        )
    start = 0
    with no_grad():
        for p in parameters:
            n = math.prod(p.shape)
            p.copy_(anp.reshape(vec[start : start + n], p.shape))
            start += n


__all__ = ["parameters_to_vector", "vector_to_parameters"]
