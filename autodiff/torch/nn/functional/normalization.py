"""torch.nn.functional's batch, instance and group normalization (running statistics
updated in place, as torch's)."""

from __future__ import annotations

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops.elementwise import stop_gradient
from autodiff.torch.nn.functional._helpers import _shape, _size_text


def _update_running(running, new_value, momentum: float) -> None:
    """running <- (1 - momentum) running + momentum new_value, in place and untracked, as
    torch updates running statistics; `new_value` must have a concrete value, unless
    `running` is a buffer staged by `autodiff.compile` (then the update is staged)."""
    if getattr(running, "_mutable_when_staged", False):
        new = anp.reshape(new_value, running.shape)
        running.copy_(stop_gradient((1.0 - momentum) * running + momentum * new))
        return
    try:
        value = np.asarray(new_value.primal() if isinstance(new_value, Tensor) else new_value)
    except TypeError:
        raise RuntimeError(
            "Batch norm got a batched tensor as input while the running_mean or running_var, "
            "which will be updated in place, were not batched (or the input is staged under "
            "jit). Use track_running_stats=False (or eval mode), or update the running "
            "statistics outside the transform."
        ) from None
    if not isinstance(running, Tensor) or running._trace is not EVAL_TRACE:
        raise RuntimeError("batch_norm: running_mean and running_var must be concrete Tensors")
    old = np.asarray(running._value)
    updated = (1.0 - momentum) * old + momentum * value.reshape(old.shape)
    with no_grad():
        running.copy_(Tensor(updated.astype(old.dtype, copy=False)))


def _check_norm_channels(shape, weight, bias, running_mean, running_var) -> None:
    """A normalization's per-channel tensors each have one entry per channel (`shape[1]`)."""
    for name, t in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        _check_channels(name, t, shape[1])


def _check_channels(name: str, tensor, channels: int) -> None:
    if tensor is None:
        return
    n = int(np.prod(_shape(tensor), dtype=np.int64))
    if n != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {n}")


def _per_channel(tensor, ndim: int):
    """A (C,) tensor shaped to broadcast against (N, C, *spatial)."""
    return anp.reshape(tensor, (-1,) + (1,) * (ndim - 2))


def _affine(out, weight, bias, ndim: int):
    if weight is not None:
        out = out * _per_channel(weight, ndim)
    if bias is not None:
        out = out + _per_channel(bias, ndim)
    return out


def _batch_norm_count(shape: tuple, training: bool, eps: float) -> int:
    """The number of values per channel, once batch_norm's input shape and eps are checked."""
    ndim = len(shape)
    if ndim < 2:
        raise ValueError(f"batch_norm: expected an input of 2 or more dims, got {ndim}D input")
    count = int(np.prod((shape[0],) + shape[2:], dtype=np.int64))
    if training:
        if count == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{_size_text(shape)}"
            )
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return count


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalise each channel (dim 1) of `input` over the batch and spatial dims: with the
    batch's statistics when `training` (then updating `running_mean`/`running_var` in place,
    the variance unbiased, as torch), else with the running statistics; then scale by
    `weight` and shift by `bias` per channel.

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([[1.0], [3.0]])
        >>> rm, rv = ad.zeros(1), ad.ones(1)
        >>> batch_norm(x, rm, rv, training=True, eps=0.0 + 1e-12)
        tensor([[-1.],
                [ 1.]])
        >>> rm, rv
        (tensor([0.2]), tensor([1.1]))
    """
    shape = _shape(input)
    ndim = len(shape)
    count = _batch_norm_count(shape, training, eps)
    _check_norm_channels(shape, weight, bias, running_mean, running_var)
    if not training:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
        mean = _per_channel(running_mean, ndim)
        var = _per_channel(running_var, ndim)
        out = (input - mean) * (1.0 / anp.sqrt(var + eps))
        return _affine(out, weight, bias, ndim)
    axes = (0,) + tuple(range(2, ndim))
    mean = anp.mean(input, axis=axes, keepdims=True)
    centered = input - mean
    var = anp.mean(centered * centered, axis=axes, keepdims=True)
    if running_mean is not None:
        _update_running(running_mean, mean, momentum)
    if running_var is not None:
        _update_running(running_var, var * (count / (count - 1)), momentum)
    out = centered * (1.0 / anp.sqrt(var + eps))
    return _affine(out, weight, bias, ndim)


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalise each channel of each sample over its spatial dims (with `use_input_stats`,
    averaging the per-sample statistics into `running_mean`/`running_var` in place when
    given), else with the running statistics; then scale and shift per channel.

    Example:
        >>> import autodiff as ad
        >>> instance_norm(ad.tensor([[[1.0, 3.0]]]), eps=1e-12)
        tensor([[[-1.,  1.]]])
    """
    shape = _shape(input)
    ndim = len(shape)
    if ndim < 2:
        raise ValueError(f"instance_norm: expected an input of 2 or more dims, got {ndim}D input")
    if use_input_stats:
        count = int(np.prod(shape[2:], dtype=np.int64))
        if count == 1:
            raise ValueError(
                "Expected more than 1 spatial element when training, got input size "
                f"{_size_text(shape)}"
            )
    _check_norm_channels(shape, weight, bias, running_mean, running_var)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "Expected running_mean and running_var to be defined when use_input_stats is false"
            )
        mean = _per_channel(running_mean, ndim)
        var = _per_channel(running_var, ndim)
        out = (input - mean) * (1.0 / anp.sqrt(var + eps))
        return _affine(out, weight, bias, ndim)
    axes = tuple(range(2, ndim))
    mean = anp.mean(input, axis=axes, keepdims=True)
    centered = input - mean
    var = anp.mean(centered * centered, axis=axes, keepdims=True)
    if running_mean is not None:
        _update_running(running_mean, anp.mean(anp.reshape(mean, shape[:2]), axis=0), momentum)
    if running_var is not None:
        unbiased = anp.reshape(var, shape[:2]) * (count / (count - 1))
        _update_running(running_var, anp.mean(unbiased, axis=0), momentum)
    out = centered * (1.0 / anp.sqrt(var + eps))
    return _affine(out, weight, bias, ndim)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Split the channels (dim 1) into `num_groups` groups and normalise each group of each
    sample over its channels and spatial dims; then scale and shift per channel.

    Example:
        >>> import autodiff as ad
        >>> group_norm(ad.tensor([[1.0, 3.0]]), 1, eps=1e-12)
        tensor([[-1.,  1.]])
    """
    shape = _shape(input)
    if len(shape) < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {len(shape)}"
        )
    channels = shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (len(_shape(t)) != 1 or _shape(t)[0] != channels):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(_shape(t))} and input of shape "
                f"{list(shape)}"
            )
    grouped = anp.reshape(input, (shape[0], num_groups, -1))
    mean = anp.mean(grouped, axis=-1, keepdims=True)
    centered = grouped - mean
    var = anp.mean(centered * centered, axis=-1, keepdims=True)
    out = anp.reshape(centered * (1.0 / anp.sqrt(var + eps)), shape)
    return _affine(out, weight, bias, len(shape))
