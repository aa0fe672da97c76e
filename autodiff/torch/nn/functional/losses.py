"""torch.nn.functional's losses: `mse_loss`, `l1_loss`, `huber_loss`, `nll_loss`,
`cross_entropy`, `binary_cross_entropy`, ..."""

from __future__ import annotations

import math

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.torch.nn.functional._helpers import (
    _check_reduction,
    _concrete,
    _in_place,
    _reduce,
    _shape,
    _size_text,
    _warn_target_size,
    legacy_reduction,
)
from autodiff.torch.nn.functional.activations import log_softmax


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


def _cross_entropy_probabilities(
    logp, target, weight, w_shape, class_axis: int, reduction: str, label_smoothing: float
):
    """cross_entropy against class probabilities (`target` of the input's shape)."""
    shape = _shape(logp)
    n_classes = shape[class_axis]
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
        return _cross_entropy_probabilities(
            logp, target, weight, w_shape, class_axis, reduction, label_smoothing
        )
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
