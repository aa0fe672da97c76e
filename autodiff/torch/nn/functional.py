"""`autodiff.nn.functional`: torch.nn.functional's activations, losses and layers as functions.

Each is a composite of autodiff ops, so it differentiates (to any order), batches under
`vmap` and stages under `jit`; the formulas are torch's (same branches, clamps and
reductions), so values agree with torch's to rounding.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops.elementwise import stop_gradient
from autodiff.ops.special import erf, expit
from autodiff.ops.special import log_softmax as _log_softmax
from autodiff.ops.special import softmax as _softmax
from autodiff.torch.creation import rand

# ------------------------------------------------------------------------------ helpers


def _shape(x) -> tuple:
    return tuple(np.shape(x)) if not isinstance(x, Tensor) else x.shape


def _size_text(shape: tuple) -> str:
    return f"torch.Size({list(shape)})"


def _in_place(x, result, inplace: bool):
    """`result` written into `x` when `inplace` (torch's `inplace=True`), else `result`."""
    if inplace and isinstance(x, Tensor):
        return x._inplace_method(result)
    return result


def _concrete(x):
    """`x`'s value when it is concrete (NumPy value or level-0 Tensor), else None (a tracer:
    value checks are skipped)."""
    if isinstance(x, Tensor):
        return x._value if x._trace is EVAL_TRACE else None
    return np.asarray(x)


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return anp.mean(loss)
    if reduction == "sum":
        return anp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _warn_target_size(input, target, stacklevel: int = 3) -> None:
    if _shape(input) != _shape(target):
        warnings.warn(
            f"Using a target size ({_size_text(_shape(target))}) that is different to the input "
            f"size ({_size_text(_shape(input))}). This will likely lead to incorrect results due "
            "to broadcasting. Please ensure they have the same size.",
            stacklevel=stacklevel,
        )


def legacy_reduction(size_average, reduce, emit_warning: bool = True) -> str:
    """The `reduction` string of torch's deprecated `size_average`/`reduce` arguments."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(
            "size_average and reduce args will be deprecated, please use "
            f"reduction='{reduction}' instead.",
            stacklevel=3,
        )
    return reduction


# ------------------------------------------------------------------------------ activations


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
    return _softmax(input, axis=dim)


def log_softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """log(softmax(x)) along `dim`, computed stably."""
    if dtype is not None:
        input = anp.astype(input, dtype)
    if dim is None:
        dim = _softmax_dim("log_softmax", len(_shape(input)), _stacklevel)
    return _log_softmax(input, axis=dim)


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
    keep = np.asarray(rand(*_shape(input)) < 1.0 - p)
    return _in_place(input, input * (keep.astype(dtype) / dtype.type(1.0 - p)), inplace)


# ------------------------------------------------------------------------------ layers


def linear(input, weight, bias=None):
    """x @ weight.T + bias.

    Example:
        >>> import autodiff as ad
        >>> linear(ad.ones(1, 2), ad.tensor([[1.0, 2.0]]), ad.tensor([0.5]))
        tensor([[3.5]])
    """
    out = anp.matmul(input, anp.transpose(weight) if len(_shape(weight)) == 2 else weight)
    return out if bias is None else out + bias


def _check_index_range(index, size: int) -> None:
    """torch's IndexError for an index outside [0, size) (checked on concrete values)."""
    value = _concrete(index)
    if value is None:
        return
    if not np.issubdtype(value.dtype, np.integer):
        raise TypeError(f"expected an integer index tensor, got dtype {value.dtype}")
    if value.size and (value.min() < 0 or value.max() >= size):
        raise IndexError("index out of range in self")


def embedding(
    input,
    weight,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
):
    """The rows of `weight` at the integer indices `input`; the row `padding_idx` gets no
    gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not supported"
        )
    num = _shape(weight)[0]
    _check_index_range(input, num)
    out = anp.take(weight, input, axis=0)
    if padding_idx is None:
        return out
    if padding_idx < 0:
        padding_idx += num
    keep = anp.expand_dims(input != padding_idx, -1)
    return anp.where(keep, out, stop_gradient(out))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last `len(normalized_shape)` dims
    (biased variance, as torch)."""
    normalized_shape = (
        (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    )
    shape = _shape(input)
    k = len(normalized_shape)
    if k == 0 or shape[len(shape) - k :] != normalized_shape or len(shape) < k:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{_size_text(shape)[len('torch.Size(') : -1]}"
        )
    axes = tuple(range(len(shape) - k, len(shape)))
    mean = anp.mean(input, axis=axes, keepdims=True)
    centered = input - mean
    var = anp.mean(centered * centered, axis=axes, keepdims=True)
    out = centered * (1.0 / anp.sqrt(var + eps))
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    """`x / max(norm(x, p), eps)` along `dim`.

    Example:
        >>> import autodiff as ad
        >>> normalize(ad.tensor([[3.0, 4.0]]))
        tensor([[0.6, 0.8]])
    """
    norm = anp.linalg.norm(input, ord=p, axis=dim, keepdims=True)
    return input / anp.maximum(norm, eps)


def one_hot(tensor, num_classes: int = -1):
    """Integer class indices as one-hot int64 vectors (a new last axis of `num_classes`,
    by default one more than the largest index).

    Example:
        >>> import autodiff as ad
        >>> one_hot(ad.tensor([0, 2]))
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    if not np.issubdtype(dtype_of(tensor), np.integer):
        raise RuntimeError("one_hot is only applicable to index tensor.")
    value = _concrete(tensor)
    if value is not None and value.size:
        if value.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes != -1 and value.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    if num_classes == -1:
        if value is None:
            raise ValueError("one_hot inside a transform needs num_classes (no concrete value)")
        num_classes = int(value.max()) + 1 if value.size else 0
    hot = anp.expand_dims(tensor, -1) == np.arange(num_classes)
    return anp.astype(hot, np.int64)


def pad(input, pad: Sequence[int], mode: str = "constant", value: float | None = None):
    """Pad the last `len(pad) // 2` dims: `pad = (left, right, top, bottom, ...)` from the
    last dim backwards; `mode` constant (negative amounts crop), reflect, replicate or
    circular.

    Example:
        >>> import autodiff as ad
        >>> pad(ad.tensor([[1.0, 2.0]]), (1, 0))
        tensor([[0., 1., 2.]])
    """
    shape = _shape(input)
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    if len(pad) // 2 > len(shape):
        raise ValueError("Padding length too large")
    widths = [(0, 0)] * len(shape)
    for i in range(len(pad) // 2):
        widths[len(shape) - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    if mode not in modes:
        raise NotImplementedError(
            f"Unrecognised padding mode {mode}: expected constant, reflect, replicate or circular"
        )
    if mode != "constant" and value is not None:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode != "constant" and any(a < 0 or b < 0 for a, b in widths):
        raise ValueError(f"negative padding is supported in constant mode only, got {tuple(pad)}")
    crops = tuple(
        slice(-a if a < 0 else None, (n + b if b < 0 else None)) for (a, b), n in zip(widths, shape)
    )
    if any(a < 0 or b < 0 for a, b in widths):
        input = input[crops]
        widths = [(max(a, 0), max(b, 0)) for a, b in widths]
    if mode == "constant":
        return anp.pad(
            input, widths, mode="constant", constant_values=0.0 if value is None else value
        )
    return anp.pad(input, widths, mode=modes[mode])


# ------------------------------------------------------------------------------ losses


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """(input - target)^2, reduced.

    Example:
        >>> import autodiff as ad
        >>> mse_loss(ad.tensor([1.0, 2.0]), ad.tensor([1.0, 4.0]))
        tensor(2.)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    _warn_target_size(input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """`abs(input - target)`, reduced."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    _warn_target_size(input, target)
    return _reduce(anp.abs(input - target), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """`0.5 d**2` where `abs(d) < delta`, else `delta (abs(d) - 0.5 delta)`, for
    `d = input - target`; reduced."""
    _check_reduction(reduction)
    _warn_target_size(input, target)
    z = anp.abs(input - target)
    loss = anp.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(
    input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0
):
    """`0.5 d**2 / beta` where `abs(d) < beta`, else `abs(d) - 0.5 beta` (`abs(d)` for
    beta = 0), for `d = input - target`; reduced."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_target_size(input, target)
    z = anp.abs(input - target)
    if beta == 0.0:
        return _reduce(z, reduction)
    return _reduce(anp.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta), reduction)


def _class_axis_last(x, ndim: int):
    """(N, C, d1, ...) -> (N, d1, ..., C): the class axis moved last."""
    return anp.moveaxis(x, 1, -1) if ndim > 2 else x


def _picked(logp, target, ignore_index: int, ndim: int):
    """logp at the target class of each sample (0 where ignored), and the ignore mask."""
    n_classes = _shape(logp)[0 if ndim == 1 else 1]
    value = _concrete(target)
    if value is not None:
        if not np.issubdtype(value.dtype, np.integer):
            raise RuntimeError(
                f"expected scalar type Long but found {value.dtype} (class-index targets are "
                "integers)"
            )
        bad = value[(value != ignore_index) & ((value < 0) | (value >= n_classes))]
        if bad.size:
            raise IndexError(f"Target {int(bad.flat[0])} is out of bounds.")
    ignored = target == ignore_index
    safe = anp.where(ignored, 0, target)
    scores = _class_axis_last(logp, ndim)
    picked = anp.take_along_axis(scores, anp.expand_dims(safe, -1), axis=-1)[..., 0]
    return picked, ignored, safe


def nll_loss(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
):
    """-input[n, target[n]] (times weight[target[n]]), reduced; a `mean` divides by the total
    weight of the targets that are not `ignore_index`.

    Example:
        >>> import autodiff as ad
        >>> nll_loss(ad.tensor([[-1.0, -2.0], [-3.0, -4.0]]), ad.tensor([1, 0]))
        tensor(2.5)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    ndim = len(_shape(input))
    if ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {ndim})")
    expected = _shape(input)[:1] + _shape(input)[2:] if ndim > 1 else ()
    if _shape(target) != expected:
        raise ValueError(
            f"Expected target size {tuple(expected)}, got {_size_text(_shape(target))}"
        )
    picked, ignored, safe = _picked(input, target, ignore_index, ndim)
    w = anp.where(ignored, 0.0, 1.0 if weight is None else anp.take(weight, safe))
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return anp.sum(loss)
    return anp.sum(loss) / anp.sum(w)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
):
    """Cross entropy of the logits `input` (class axis 1, or 0 for a single sample) against
    class indices or, when `target` has the input's shape, class probabilities; `weight` per
    class, `label_smoothing` in [0, 1].

    Example:
        >>> import autodiff as ad
        >>> round(float(cross_entropy(ad.tensor([[0.0, 0.0]]), ad.tensor([1]))), 6)  # log 2
        0.693147
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    shape = _shape(input)
    ndim = len(shape)
    class_axis = 0 if ndim == 1 else 1
    n_classes = shape[class_axis]
    logp = log_softmax(input, dim=class_axis)
    w_shape = [1] * ndim
    w_shape[class_axis] = n_classes
    if _shape(target) == shape:  # class probabilities
        if not is_inexact(dtype_of(target)):
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                f"{dtype_of(target)}"
            )
        if label_smoothing > 0.0:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * anp.reshape(weight, w_shape)
        if reduction == "none":
            return -anp.sum(terms, axis=class_axis)
        total = -anp.sum(terms)
        return total if reduction == "sum" else total / (math.prod(shape) / n_classes)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return loss
    ignored = target == ignore_index
    terms = logp if weight is None else logp * anp.reshape(weight, w_shape)
    smooth = anp.where(ignored, 0.0, -anp.sum(terms, axis=class_axis))
    if reduction == "sum":
        smooth = anp.sum(smooth)
    elif reduction == "mean":
        if weight is None:
            smooth = anp.sum(smooth) / anp.sum(~ignored)
        else:
            safe = anp.where(ignored, 0, target)
            smooth = anp.sum(smooth) / anp.sum(anp.where(ignored, 0.0, anp.take(weight, safe)))
    return (1.0 - label_smoothing) * loss + smooth * (label_smoothing / n_classes)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"
):
    """-(t log(x) + (1 - t) log(1 - x)) for probabilities x, each log clamped at -100 (as
    torch), times `weight`, reduced."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    if _shape(target) != _shape(input):
        raise ValueError(
            f"Using a target size ({_size_text(_shape(target))}) that is different to the input "
            f"size ({_size_text(_shape(input))}) is deprecated. Please ensure they have the same "
            "size."
        )
    value = _concrete(input)
    if value is not None and np.size(value) and not ((value >= 0) & (value <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = anp.maximum(anp.log(input), -100.0)
    log_1mx = anp.maximum(anp.log1p(-input), -100.0)
    loss = (target - 1.0) * log_1mx - target * log_x
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input,
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight=None,
):
    """binary_cross_entropy(sigmoid(x), t), computed stably from the logits x; `pos_weight`
    weighs the positive term."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    if _shape(target) != _shape(input):
        raise ValueError(
            f"Target size ({_size_text(_shape(target))}) must be the same as input size "
            f"({_size_text(_shape(input))})"
        )
    log_sigmoid = anp.minimum(input, 0.0) - anp.log1p(anp.exp(-anp.abs(input)))
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1.0) * target + 1.0)
    loss = (1.0 - target) * input - log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """x where x > threshold, else `value`.

    Example:
        >>> import autodiff as ad
        >>> threshold(ad.tensor([-1.0, 0.5, 2.0]), 1.0, 0.0)
        tensor([0., 0., 2.])
    """
    return _in_place(input, anp.where(input > threshold, input, value), inplace)


# ------------------------------------------------------------------------------ normalization


def _update_running(running, new_value, momentum: float) -> None:
    """running <- (1 - momentum) running + momentum new_value, in place and untracked, as
    torch updates running statistics; `new_value` must have a concrete value."""
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
    if ndim < 2:
        raise ValueError(f"batch_norm: expected an input of 2 or more dims, got {ndim}D input")
    if training:
        count = int(np.prod((shape[0],) + shape[2:], dtype=np.int64))
        if count == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{_size_text(shape)}"
            )
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
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


# ------------------------------------------------------------------------------ convolution


def _ntuple(name: str, value, n: int, fn_name: str = "") -> tuple:
    """`value` as an n-tuple of ints (an int repeated, or a sequence of length n)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} values to match "
            f"the convolution dimensions, but got {name}={list(value)}"
        )
    return value


def _windows(x, axis: int, kernel: int, stride: int, dilation: int):
    """`x` with dim `axis` replaced by two, (out, kernel): the sliding windows along it
    (`x[..., o * stride + k * dilation, ...]`). Built from basic slices and one stack, over
    whichever of the kernel or the output positions is fewer."""
    size = _shape(x)[axis]
    out = (size - dilation * (kernel - 1) - 1) // stride + 1
    lead = (slice(None),) * axis
    if kernel <= out:
        span = stride * (out - 1) + 1
        parts = [
            x[lead + (slice(k * dilation, k * dilation + span, stride),)] for k in range(kernel)
        ]
        return anp.stack(parts, axis=axis + 1)
    span = dilation * (kernel - 1) + 1
    parts = [x[lead + (slice(o * stride, o * stride + span, dilation),)] for o in range(out)]
    return anp.stack(parts, axis=axis)


_DTYPE_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half",
                "complex128": "ComplexDouble", "complex64": "ComplexFloat"}  # fmt: skip


def _same_padding(kernel: tuple, dilation: tuple) -> list:
    """(left, right) per spatial dim for padding='same' (the odd one on the right, as torch)."""
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return pads


def _conv_check(name: str, nd: int, shape: tuple, wshape: tuple, input, weight) -> None:
    """torch's errors for the ranks and dtypes of a convolution's input and weight."""
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
            f"input of size: {list(shape)}"
        )
    if len(wshape) != nd + 2:
        raise RuntimeError(
            f"{name}: expected a {nd + 2}D weight (out_channels, in_channels / groups, "
            f"*kernel_size), but got weight of size {list(wshape)}"
        )
    in_dtype, w_dtype = np.dtype(dtype_of(input)), np.dtype(dtype_of(weight))
    if in_dtype != w_dtype:
        raise RuntimeError(
            f"expected scalar type {_DTYPE_NAMES.get(in_dtype.name, in_dtype.name)} but found "
            f"{_DTYPE_NAMES.get(w_dtype.name, w_dtype.name)}"
        )


def _conv_channels(shape: tuple, wshape: tuple, bias, groups) -> None:
    """torch's errors for a convolution's channels, groups and bias."""
    if not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    channels, (out_channels, group_channels) = shape[1], wshape[:2]
    if out_channels % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(wshape)}] instead"
        )
    if channels != group_channels * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(wshape)}, expected input"
            f"{list(shape)} to have {group_channels * groups} channels, but got {channels} "
            "channels instead"
        )
    if bias is not None and _shape(bias) != (out_channels,):
        raise RuntimeError(
            f"Given weight of size {list(wshape)}, expected bias to be 1-dimensional with "
            f"{out_channels} elements, but got bias of size {list(_shape(bias))} instead"
        )


def _conv_padding(padding, nd: int, kernel: tuple, stride: tuple, dilation: tuple) -> list:
    """(left, right) per spatial dim from an int, a tuple, "valid" or "same"."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            return _same_padding(kernel, dilation)
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    pads = [(p, p) for p in _ntuple("padding", padding, nd)]
    if any(p < 0 for p, _ in pads):
        raise RuntimeError("negative padding is not supported")
    return pads


def _conv(name: str, nd: int, input, weight, bias, stride, padding, dilation, groups):
    shape, wshape = _shape(input), _shape(weight)
    _conv_check(name, nd, shape, wshape, input, weight)
    stride = _ntuple("stride", stride, nd)
    dilation = _ntuple("dilation", dilation, nd)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    batched = len(shape) == nd + 2
    if not batched:
        input = anp.expand_dims(input, 0)
        shape = (1,) + shape
    _conv_channels(shape, wshape, bias, groups)
    n = shape[0]
    out_channels, group_channels = wshape[:2]
    kernel = wshape[2:]
    pads = _conv_padding(padding, nd, kernel, stride, dilation)
    padded = tuple(s + a + b for s, (a, b) in zip(shape[2:], pads))
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(e > p for e, p in zip(extent, padded)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, extent))}). Kernel size can't be greater than "
            "actual input size"
        )
    if any(a or b for a, b in pads):
        input = anp.pad(input, [(0, 0), (0, 0)] + pads)
    out_sizes = tuple((p - e) // s + 1 for p, e, s in zip(padded, extent, stride))
    x = input
    for i in range(nd):  # (N, C, O1, K1, O2, K2, ...)
        x = _windows(x, 2 + 2 * i, kernel[i], stride[i], dilation[i])
    perm = (0, 1) + tuple(3 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))
    x = anp.transpose(x, perm)  # (N, C, K1, K2, ..., O1, O2, ...)
    positions = int(np.prod(out_sizes, dtype=np.int64))
    patch = group_channels * int(np.prod(kernel, dtype=np.int64))
    # (C_out, C K) @ (N, C K, P): the result comes out (N, C_out, P), and a cotangent of that
    # layout feeds both products as it is
    if groups == 1:
        cols = anp.reshape(x, (n, patch, positions))
        y = anp.matmul(anp.reshape(weight, (out_channels, patch)), cols)
    else:
        cols = anp.reshape(x, (n, groups, patch, positions))
        y = anp.matmul(anp.reshape(weight, (groups, out_channels // groups, patch)), cols)
    y = anp.reshape(y, (n, out_channels) + out_sizes)
    if bias is not None:
        y = y + anp.reshape(bias, (out_channels,) + (1,) * nd)
    return y if batched else y[0]


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D convolution (cross-correlation, as torch): input (N, C_in, L) or (C_in, L),
    weight (C_out, C_in / groups, K); `padding` an int, a 1-tuple, "valid" or "same".

    Example:
        >>> import autodiff as ad
        >>> conv1d(ad.tensor([[[1.0, 2.0, 3.0]]]), ad.tensor([[[1.0, 1.0]]]))
        tensor([[[3., 5.]]])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-D convolution (cross-correlation, as torch): input (N, C_in, H, W) or
    (C_in, H, W), weight (C_out, C_in / groups, kH, kW); `stride`, `padding`, `dilation` an
    int or a pair; `padding` also "valid" or "same" (stride 1). A composite of slices, a
    stack and a matmul, so it differentiates in both modes, batches and stages.

    Example:
        >>> import autodiff as ad
        >>> conv2d(ad.ones(1, 1, 3, 3), ad.ones(1, 1, 2, 2), padding=1)[0, 0]
        tensor([[1., 2., 2., 1.],
                [2., 4., 4., 2.],
                [2., 4., 4., 2.],
                [1., 2., 2., 1.]])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """3-D convolution (cross-correlation, as torch): input (N, C_in, D, H, W) or
    (C_in, D, H, W), weight (C_out, C_in / groups, kD, kH, kW)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


# ------------------------------------------------------------------------------ pooling


def _pool_geometry(name, nd, shape, kernel_size, stride, padding, dilation, ceil_mode):
    """Kernel, stride, padding (left, right: the right one grown to fit ceil_mode's last
    window), dilation and output sizes of a pooling, with torch's checks."""
    if len(shape) not in (nd + 1, nd + 2) or 0 in shape[1:]:
        raise RuntimeError(
            f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input"
        )
    kernel = _ntuple("kernel_size", kernel_size, nd)
    stride = kernel if stride is None or stride == [] or stride == () else stride
    stride = _ntuple("stride", stride, nd)
    padding = _ntuple("padding", padding, nd)
    dilation = _ntuple("dilation", dilation, nd)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{name}: stride should be greater than zero")
    pads, out_sizes = [], []
    for size, k, s, p, d in zip(shape[-nd:], kernel, stride, padding, dilation):
        extent = d * (k - 1) + 1
        if p < 0 or p > extent // 2:
            raise RuntimeError(
                "pad should be at most half of effective kernel size, but got "
                f"pad={p}, kernel_size={k} and dilation={d}"
            )
        span = size + 2 * p - extent
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # (the last window must start inside the input or left padding)
        pads.append((p, max(p, (out - 1) * s + extent - size - p)))
        out_sizes.append(out)
    if any(o <= 0 for o in out_sizes):
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, shape[-nd - 1 :]))}). Calculated output "
            f"size: ({'x'.join(map(str, (shape[-nd - 1],) + tuple(out_sizes)))}). Output size "
            "is too small"
        )
    return kernel, stride, pads, dilation, tuple(out_sizes)


def _pool_windows(x, nd: int, kernel, stride, dilation):
    """(..., O1, O2, ..., K1 K2 ...): every window of the last nd dims, flattened last."""
    lead = len(_shape(x)) - nd
    for i in range(nd):
        x = _windows(x, lead + 2 * i, kernel[i], stride[i], dilation[i])
    perm = tuple(range(lead))
    perm += tuple(lead + 2 * i for i in range(nd)) + tuple(lead + 2 * i + 1 for i in range(nd))
    x = anp.transpose(x, perm)
    return anp.reshape(x, _shape(x)[: lead + nd] + (-1,))


def _max_pool(name, nd, input, kernel_size, stride, padding, dilation, ceil_mode, indices):
    if indices:
        raise NotImplementedError(f"autodiff.nn.functional.{name}: return_indices=True")
    shape = _shape(input)
    kernel, stride, pads, dilation, _ = _pool_geometry(
        name, nd, shape, kernel_size, stride, padding, dilation, ceil_mode
    )
    widths = [(0, 0)] * (len(shape) - nd) + pads
    if any(a or b for a, b in pads):
        input = anp.pad(input, widths, mode="constant", constant_values=-np.inf)
    windows = _pool_windows(input, nd, kernel, stride, dilation)
    # (the first maximum of each window gets the gradient, as torch's)
    first = anp.argmax(stop_gradient(windows), axis=-1)
    return anp.take_along_axis(windows, anp.expand_dims(first, -1), axis=-1)[..., 0]


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """The maximum of each window of the last dim of (N, C, L) or (C, L); the gradient
    goes to the first maximum of a window, as torch's."""
    return _max_pool(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """The maximum of each window of the last two dims of (N, C, H, W) or (C, H, W);
    `stride` defaults to `kernel_size`; padding is -inf.

    Example:
        >>> import autodiff as ad
        >>> max_pool2d(ad.arange(16.0).reshape(1, 4, 4), 2)
        tensor([[[ 5.,  7.],
                 [13., 15.]]])
    """
    return _max_pool(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """The maximum of each window of the last three dims of (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool(
        "max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def _avg_pool(name, nd, input, kernel_size, stride, padding, ceil_mode, include_pad, divisor):
    shape = _shape(input)
    kernel, stride, pads, _, _ = _pool_geometry(
        name, nd, shape, kernel_size, stride, padding, 1, ceil_mode
    )
    ones = (1,) * nd
    widths = [(0, 0)] * (len(shape) - nd) + pads
    if any(a or b for a, b in pads):
        input = anp.pad(input, widths)
    total = anp.sum(_pool_windows(input, nd, kernel, stride, ones), axis=-1)
    if divisor:
        return total / divisor
    # what each window counts: the input, the explicit padding when count_include_pad, never
    # ceil_mode's overhang
    padding = _ntuple("padding", padding, nd)
    spatial = shape[-nd:]
    if include_pad:
        mask = np.ones(tuple(n + 2 * p for n, p in zip(spatial, padding)))
        extra = [(0, b - p) for (_, b), p in zip(pads, padding)]
    else:
        mask = np.ones(spatial)
        extra = pads
    mask = np.pad(mask, extra)
    counts = np.sum(np.asarray(_pool_windows(mask, nd, kernel, stride, ones)), axis=-1)
    return total / counts.astype(dtype_of(total))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window of the last dim of (N, C, L) or (C, L)."""
    return _avg_pool(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None
    )


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """The mean of each window of the last two dims of (N, C, H, W) or (C, H, W)
    (padding counted unless `count_include_pad=False`; `divisor_override` replaces the
    count).

    Example:
        >>> import autodiff as ad
        >>> avg_pool2d(ad.arange(16.0).reshape(1, 4, 4), 2)
        tensor([[[ 2.5,  4.5],
                 [10.5, 12.5]]])
    """
    return _avg_pool(
        "avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override,
    )  # fmt: skip


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """The mean of each window of the last three dims of (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(
        "avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override,
    )  # fmt: skip


def _adaptive_avg_pool(name: str, nd: int, input, output_size):
    shape = _shape(input)
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(shape)}"
        )
    sizes = (output_size,) * nd if not isinstance(output_size, Sequence) else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: output_size must be an int or {nd} values, got {output_size}")
    x = input
    for i, out in enumerate(sizes):
        axis = len(shape) - nd + i
        size = shape[axis]
        if out is None or out == size:
            continue
        if size % out == 0:  # (equal windows: one reshape)
            split = _shape(x)[:axis] + (out, size // out) + _shape(x)[axis + 1 :]
            x = anp.mean(anp.reshape(x, split), axis=axis + 1)
            continue
        lead = (slice(None),) * axis
        parts = [
            anp.mean(x[lead + (slice(j * size // out, -(-(j + 1) * size // out)),)], axis=axis)
            for j in range(out)
        ]
        x = anp.stack(parts, axis=axis)
    return x


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to `output_size` positions along the last dim (windows
    `[floor(i L / O), ceil((i + 1) L / O))`, as torch's)."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of the last two dims to `output_size` (an int, or a pair whose None
    entries keep the input's size).

    Example:
        >>> import autodiff as ad
        >>> adaptive_avg_pool2d(ad.arange(16.0).reshape(1, 4, 4), 1)
        tensor([[[7.5]]])
    """
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of the last three dims to `output_size`."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "conv3d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "group_norm",
    "huber_loss",
    "instance_norm",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "tanh",
    "threshold",
]
