"""torch.nn.functional's layers as functions: `linear`, `embedding`, `layer_norm`,
`normalize`, `one_hot`, `pad`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import dtype_of
from autodiff.ops.elementwise import stop_gradient
from autodiff.torch.nn.functional._helpers import _concrete, _shape, _size_text


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
