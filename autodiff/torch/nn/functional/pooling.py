"""torch.nn.functional's pooling: max, average and adaptive average, in 1, 2 and 3 dims."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import dtype_of
from autodiff.ops.elementwise import stop_gradient
from autodiff.torch.nn.functional._helpers import _shape
from autodiff.torch.nn.functional.convolution import _ntuple, _offset_slices, _windows

# Max pooling over windows of at most this many elements is a running maximum of strided
# slices (`_max_chain`); larger windows are gathered (`_max_windows`), whose graph does not
# grow with the window.
CHAIN_MAX_WINDOW = 16


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
    kernel, stride, pads, dilation, out_sizes = _pool_geometry(
        name, nd, shape, kernel_size, stride, padding, dilation, ceil_mode
    )
    widths = [(0, 0)] * (len(shape) - nd) + pads
    # (which positions of the padded input are padding: a window's maximum is one of its
    # input's elements, the first when they are all -inf, as torch's)
    is_padding = np.zeros(shape[-nd:], bool)
    if any(a or b for a, b in pads):
        is_padding = np.pad(is_padding, pads, constant_values=True)
        input = anp.pad(input, widths, mode="constant", constant_values=-np.inf)
    if int(np.prod(kernel)) <= CHAIN_MAX_WINDOW:
        return _max_chain(input, is_padding, kernel, stride, dilation, out_sizes)
    return _max_windows(input, nd, kernel, stride, dilation)


def _max_windows(x, nd: int, kernel, stride, dilation):
    """The reference max pooling: every window gathered, its first maximum taken (which gets
    the gradient, as torch's; where torch's picks the last NaN, or a window's first input
    element when all are -inf beside padding, this picks the first NaN, or the padding)."""
    windows = _pool_windows(x, nd, kernel, stride, dilation)
    first = anp.argmax(stop_gradient(windows), axis=-1)
    return anp.take_along_axis(windows, anp.expand_dims(first, -1), axis=-1)[..., 0]


def _max_chain(x, is_padding: np.ndarray, kernel, stride, dilation, out_sizes):
    """Max pooling as a running maximum over the window's offsets, one strided slice of `x`
    each: elementwise, so a compiled step fuses it into one loop (and its backward, the
    selections' transposes, into another). An offset's element replaces the maximum so far
    where it is greater or NaN, or where the maximum so far is padding, as torch's loop
    does: the first maximum (the last NaN) of a window's input elements gets the gradient."""
    parts = _offset_slices(x, kernel, stride, dilation, out_sizes)
    paddings = _offset_slices(is_padding, kernel, stride, dilation, out_sizes)
    best = best_padding = None
    for part, part_padding in zip(parts, paddings):
        if best is None:
            best, best_padding = part, part_padding
            continue
        take = part > best
        if np.dtype(dtype_of(part)).kind in "fc":
            take = anp.logical_or(take, anp.isnan(part))
        first_input = best_padding & ~part_padding
        if first_input.any():
            take = anp.logical_or(take, first_input)
        best = anp.where(take, part, best)
        best_padding = best_padding & part_padding
    return best


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
