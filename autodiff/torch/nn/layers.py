"""Layers with parameters or modes: Linear, Embedding, LayerNorm, Dropout, Identity, Flatten."""

from __future__ import annotations

import math
from typing import Any

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor
from autodiff.torch.creation import empty
from autodiff.torch.nn import functional as F
from autodiff.torch.nn import init
from autodiff.torch.nn.module import Module
from autodiff.torch.nn.parameter import Parameter
from autodiff.torch.types import check_device


def _empty(shape: tuple, device, dtype) -> Tensor:
    """Uninitialised parameter data (in the default dtype unless `dtype` is given)."""
    check_device(device)
    return empty(*shape) if dtype is None else empty(*shape, dtype=dtype)


class Identity(Module):
    """Returns its input (arguments are accepted and ignored, as torch's).

    Example:
        >>> import autodiff as ad
        >>> Identity(54, unused="x")(ad.ones(2))
        tensor([1., 1.])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features).

    Initialised as torch's: weight by kaiming_uniform_(a=sqrt(5)), bias uniform in
    +-1/sqrt(in_features), drawn from the global generator (`autodiff.manual_seed`).

    Example:
        >>> import autodiff as ad
        >>> layer = Linear(3, 2)
        >>> layer
        Linear(in_features=3, out_features=2, bias=True)
        >>> layer(ad.ones(5, 3)).shape
        (5, 2)
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in_features), device, dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again, as torch initialises them."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flattens dims `start_dim` to `end_dim` into one.

    Example:
        >>> import autodiff as ad
        >>> Flatten()(ad.ones(2, 3, 4)).shape
        (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        shape = input.shape
        if not shape:
            return anp.reshape(input, (1,))
        start = self.start_dim % len(shape)
        end = self.end_dim % len(shape)
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        merged = math.prod(shape[start : end + 1])
        return anp.reshape(input, shape[:start] + (merged,) + shape[end + 1 :])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """In training, zeroes each element with probability `p` and scales the rest by
    1 / (1 - p); in eval mode, the identity.

    Example:
        >>> import autodiff as ad
        >>> drop = Dropout(0.5).eval()
        >>> drop(ad.ones(3))
        tensor([1., 1., 1.])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Embedding(Module):
    """A lookup table: row i of `weight` (num_embeddings, embedding_dim) for index i.
    Initialised from N(0, 1); the row `padding_idx` is zero and gets no gradient.

    Example:
        >>> import autodiff as ad
        >>> emb = Embedding(10, 3, padding_idx=0)
        >>> emb(ad.tensor([[0, 2], [4, 5]])).shape
        (2, 2, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "Embedding: max_norm, scale_grad_by_freq and sparse are not supported"
            )
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(
                _empty((num_embeddings, embedding_dim), device, dtype), requires_grad=not _freeze
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw the weight from N(0, 1) again (the padding row zero)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text

    @classmethod
    def from_pretrained(
        cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None, **kwargs
    ) -> Embedding:
        """An Embedding whose weight is `embeddings` (2-D), frozen unless `freeze=False`."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, _weight=embeddings, _freeze=freeze, **kwargs)


class LayerNorm(Module):
    """Normalises over the last dims `normalized_shape` (zero mean, unit biased variance),
    then scales by `weight` (ones) and shifts by `bias` (zeros).

    Example:
        >>> import autodiff as ad
        >>> LayerNorm(4)
        LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
        >>> out = LayerNorm(4)(ad.tensor([[1.0, 2.0, 3.0, 4.0]]))
        >>> abs(out.sum().item()) < 1e-12
        True
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(self.normalized_shape, device, dtype))
            if bias:
                self.bias = Parameter(_empty(self.normalized_shape, device, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


__all__ = ["Dropout", "Embedding", "Flatten", "Identity", "LayerNorm", "Linear"]
