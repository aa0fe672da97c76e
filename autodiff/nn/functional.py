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
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.factories import rand
from autodiff.ops.elementwise import stop_gradient
from autodiff.ops.special import erf, expit
from autodiff.ops.special import log_softmax as _log_softmax
from autodiff.ops.special import softmax as _softmax

# ------------------------------------------------------------------------------ helpers


def _shape(x) -> tuple:
    return tuple(np.shape(x)) if not isinstance(x, Tensor) else x.shape


def _size_text(shape: tuple) -> str:
    return f"torch.Size({list(shape)})"


def _in_place(x, result, inplace: bool):
    """`result` written into `x` when `inplace` (torch's `inplace=True`), else `result`."""
    if inplace and isinstance(x, Tensor):
        return x._assign_inplace(result)
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


__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "huber_loss",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
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
]
