"""torch.nn.functional's convolutions: `conv1d`, `conv2d`, `conv3d` (windows of the
padded input, contracted with the weight) and the transposed `conv_transpose1d`,
`conv_transpose2d` (convolutions of the input spread out by the stride)."""

from __future__ import annotations

import itertools

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import dtype_of
from autodiff.torch.nn.functional._helpers import _shape

# A convolution whose kernel has at most this many positions gathers its input's windows
# as one stack of strided slices, in the layout its matrix product reads (a larger kernel:
# windows along one dim at a time, then a transposition), so the copy is one loop.
OFFSETS_MAX = 32


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


def _offset_slices(x, kernel: tuple, stride: tuple, dilation: tuple, out_sizes: tuple) -> list:
    """For each offset of the kernel (row-major), the strided slice of `x`'s last dims that
    it reads in every window: `x[..., o1 * s1 + k1 * d1, o2 * s2 + k2 * d2, ...]` over the
    output positions (o1, o2, ...)."""
    lead = (slice(None),) * (len(_shape(x)) - len(kernel))
    parts = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        spatial = tuple(
            slice(k * d, k * d + (o - 1) * s + 1, s)
            for k, d, s, o in zip(offset, dilation, stride, out_sizes)
        )
        parts.append(x[lead + spatial])
    return parts


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
    positions = int(np.prod(out_sizes, dtype=np.int64))
    patch = group_channels * int(np.prod(kernel, dtype=np.int64))
    if int(np.prod(kernel, dtype=np.int64)) <= OFFSETS_MAX:  # (N, C, K1 K2 ..., O1, O2, ...)
        x = anp.stack(_offset_slices(input, kernel, stride, dilation, out_sizes), axis=2)
    else:
        x = input
        for i in range(nd):  # (N, C, O1, K1, O2, K2, ...)
            x = _windows(x, 2 + 2 * i, kernel[i], stride[i], dilation[i])
        perm = (0, 1) + tuple(3 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))
        x = anp.transpose(x, perm)  # (N, C, K1, K2, ..., O1, O2, ...)
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


# ---- transposed convolutions: a convolution of the input spread out by the stride ----


def _spread(x, axis: int, stride: int):
    """`x` with `stride - 1` zeros between neighbours along dim `axis` (counted from the end)."""
    if stride == 1:
        return x
    x = anp.moveaxis(x, axis, -1)
    size = _shape(x)[-1]
    zero = anp.zeros_like(x)
    spread = anp.reshape(anp.stack([x] + [zero] * (stride - 1), axis=-1), _shape(x)[:-1] + (-1,))
    return anp.moveaxis(spread[..., : (size - 1) * stride + 1], -1, axis)


def _pad_or_crop(x, axis: int, left: int, right: int):
    """`x` padded with zeros (positive amounts) or cropped (negative) at both ends of dim
    `axis` (counted from the end)."""
    if left < 0 or right < 0:
        size = _shape(x)[axis]
        index = [slice(None)] * len(_shape(x))
        index[axis] = slice(max(-left, 0), size - max(-right, 0))
        x = x[tuple(index)]
    if left > 0 or right > 0:
        pads = [(0, 0)] * len(_shape(x))
        pads[axis] = (max(left, 0), max(right, 0))
        x = anp.pad(x, pads)
    return x


def _transposed_weight(weight, groups: int, nd: int):
    """A transposed convolution's weight (C_in, C_out / groups, *k) as the equivalent
    convolution's (C_out, C_in / groups, *k), its kernel flipped."""
    wshape = _shape(weight)
    in_channels, group_out = wshape[:2]
    kernel = wshape[2:]
    w = anp.reshape(weight, (groups, in_channels // groups, group_out) + kernel)
    w = anp.swapaxes(w, 1, 2)
    w = anp.reshape(w, (groups * group_out, in_channels // groups) + kernel)
    return anp.flip(w, axis=tuple(range(2, 2 + nd)))


def _conv_transpose(
    name: str, nd: int, input, weight, bias, stride, padding, output_padding, groups, dilation
):
    shape, wshape = _shape(input), _shape(weight)
    _conv_check(name, nd, shape, wshape, input, weight)
    stride = _ntuple("stride", stride, nd)
    dilation = _ntuple("dilation", dilation, nd)
    padding = _ntuple("padding", padding, nd)
    output_padding = _ntuple("output_padding", output_padding, nd)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError("output padding must be smaller than either stride or dilation")
    if not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    channels = shape[-nd - 1]
    if channels != wshape[0] or wshape[0] % groups:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(wshape)}, expected input{list(shape)} to "
            f"have {wshape[0]} channels, but got {channels} channels instead"
        )
    x = input
    for i in range(nd):
        axis = i - nd
        x = _spread(x, axis, stride[i])
        edge = dilation[i] * (wshape[2 + i] - 1) - padding[i]
        x = _pad_or_crop(x, axis, edge, edge + output_padding[i])
    w = _transposed_weight(weight, groups, nd)
    return _conv(name, nd, x, w, bias, 1, 0, dilation, groups)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """1-D transposed convolution (the gradient of conv1d with respect to its input, as
    torch): input (N, C_in, L) or (C_in, L), weight (C_in, C_out / groups, K).

    Example:
        >>> import autodiff as ad
        >>> conv_transpose1d(ad.tensor([[[1.0, 2.0]]]), ad.tensor([[[1.0, 1.0]]]), stride=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """2-D transposed convolution (the gradient of conv2d with respect to its input, as
    torch): input (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out / groups, kH, kW);
    `stride`, `padding`, `output_padding`, `dilation` an int or a pair. A composite of
    differentiable operations (the input spread by the stride, then a convolution).

    Example:
        >>> import autodiff as ad
        >>> conv_transpose2d(ad.ones(1, 1, 2, 2), ad.ones(1, 1, 2, 2))[0, 0]
        tensor([[1., 2., 1.],
                [2., 4., 2.],
                [1., 2., 1.]])
    """
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip
