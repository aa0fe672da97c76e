"""torch.nn.functional's activations, softmaxes and dropout."""

from __future__ import annotations

import math
import warnings

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.ops.special import erf, expit
from autodiff.ops.special import log_softmax as _log_softmax
from autodiff.ops.special import softmax as _softmax
from autodiff.torch._args import fused
from autodiff.torch.creation import rand
from autodiff.torch.generator import staged_uniform
from autodiff.torch.nn.functional._helpers import _in_place, _shape


def relu(input, inplace: bool = False):
    """max(x, 0), with derivative 0 at 0 (as torch); NaN stays NaN.

    Example:
        >>> import autodiff as ad
        >>> relu(ad.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """
    return _in_place(input, anp.where(input <= 0, 0.0, input), inplace)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """x for x > 0, else `negative_slope * x`."""
    return _in_place(input, anp.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """x for x > 0, else `alpha * (exp(x) - 1)` (computed with expm1, as torch)."""
    negative = anp.where(input > 0, 0.0, input)  # (the unused branch stays finite)
    return _in_place(input, anp.where(input > 0, input, alpha * anp.expm1(negative)), inplace)


def tanh(input):
    """The hyperbolic tangent."""
    return anp.tanh(input)


def sigmoid(input):
    """`1 / (1 + exp(-x))`, stable for large `abs(x)`."""
    return expit(input)


def silu(input, inplace: bool = False):
    """x * sigmoid(x) (also called swish)."""
    return _in_place(input, input * expit(input), inplace)


def gelu(input, approximate: str = "none"):
    """x * Phi(x), Phi the standard normal CDF; `approximate="tanh"` uses torch's tanh form.

    Example:
        >>> import autodiff as ad
        >>> round(float(gelu(ad.tensor(1.0))), 6)
        0.841345
    """
    if approximate == "none":
        return input * 0.5 * (1.0 + erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + anp.tanh(inner))
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as torch)."""
    linear = input * beta > threshold
    smooth = anp.log1p(anp.exp(anp.where(linear, 0.0, input * beta))) / beta
    return anp.where(linear, input, smooth)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`.

    Example:
        >>> import autodiff as ad
        >>> softmax(ad.tensor([0.0, 0.0]), dim=0)
        tensor([0.5, 0.5])
    """
    if dtype is not None:
        input = anp.astype(input, dtype)
    if dim is None:
        dim = _softmax_dim("softmax", len(_shape(input)), _stacklevel)
    return fused(_softmax, input, axis=dim)  # (bfloat16: in float32, as torch's kernel)


def log_softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """log(softmax(x)) along `dim`, computed stably."""
    if dtype is not None:
        input = anp.astype(input, dtype)
    if dim is None:
        dim = _softmax_dim("log_softmax", len(_shape(input)), _stacklevel)
    return fused(_log_softmax, input, axis=dim)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p), in training;
    the identity otherwise. Draws from the global random generator (`manual_seed`)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    dtype = dtype_of(input) if is_inexact(dtype_of(input)) else np.dtype(np.float64)
    if p == 1.0:
        return _in_place(input, input * np.zeros((), dtype), inplace)
    staged = staged_uniform(_shape(input))  # (autodiff.compile: the draw is an input)
    if staged is not None:
        keep = anp.astype(staged < 1.0 - p, dtype)
        return _in_place(input, input * (keep / dtype.type(1.0 - p)), inplace)
    keep = np.asarray(rand(*_shape(input)) < 1.0 - p)
    return _in_place(input, input * (keep.astype(dtype) / dtype.type(1.0 - p)), inplace)
