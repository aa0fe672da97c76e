"""Convolution layers: Conv1d, Conv2d, Conv3d (torch.nn's: weight (out, in / groups,
*kernel_size) and bias initialised as torch's, padding modes zeros/reflect/replicate/circular,
padding "same"/"valid"). They call `functional.conv1d/2d/3d`, composites of autodiff ops."""

from __future__ import annotations

import math

from autodiff.core.tensor import Tensor
from autodiff.torch.nn import functional as F
from autodiff.torch.nn import init
from autodiff.torch.nn.layers import _empty
from autodiff.torch.nn.module import Module
from autodiff.torch.nn.parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n: int) -> tuple:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    return value * n if len(value) == 1 else value


def _check_arguments(in_channels, out_channels, stride, padding, groups, padding_mode) -> None:
    """torch's checks of a convolution layer's arguments, in torch's order."""
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(
                f"Invalid padding string {padding!r}, should be one of {{'same', 'valid'}}"
            )
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(
            f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
            f"padding_mode='{padding_mode}'"
        )


class _ConvNd(Module):
    _nd = 0
    _conv = staticmethod(F.conv2d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        nd = self._nd
        kernel_size = _tuple(kernel_size, nd)
        stride = _tuple(stride, nd)
        dilation = _tuple(dilation, nd)
        if not isinstance(padding, str):
            padding = _tuple(padding, nd)
        _check_arguments(in_channels, out_channels, stride, padding, groups, padding_mode)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = False
        self.output_padding = (0,) * nd
        self.groups = groups
        self.padding_mode = padding_mode
        # (F.pad's amounts, last dim first, for the non-zero padding modes)
        reversed_pads = [0, 0] * nd
        for i, (k, d) in enumerate(zip(kernel_size, dilation)):
            slot = nd - 1 - i
            if padding == "same":
                total = d * (k - 1)
                reversed_pads[2 * slot : 2 * slot + 2] = [total // 2, total - total // 2]
            elif not isinstance(padding, str):
                reversed_pads[2 * slot : 2 * slot + 2] = [padding[i], padding[i]]
        self._reversed_padding_repeated_twice = reversed_pads
        self.weight = Parameter(
            _empty((out_channels, in_channels // groups) + kernel_size, device, dtype)
        )
        if bias:
            self.bias = Parameter(_empty((out_channels,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw weight (kaiming_uniform_, a=sqrt(5)) and bias (uniform +-1/sqrt(fan_in)) again,
        as torch initialises them."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._conv(
            input, weight, bias, self.stride, self.padding, self.dilation, self.groups
        )

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution layer over (N, C_in, L) or (C_in, L) inputs (torch.nn.Conv1d).

    Example:
        >>> import autodiff as ad
        >>> conv = Conv1d(2, 4, 3, padding=1)
        >>> conv
        Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=(1,))
        >>> conv(ad.ones(5, 2, 7)).shape
        (5, 4, 7)
    """

    _nd = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution layer over (N, C_in, H, W) or (C_in, H, W) inputs (torch.nn.Conv2d).

    Example:
        >>> import autodiff as ad
        >>> conv = Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        >>> conv
        Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)
        >>> conv(ad.ones(2, 3, 8, 8)).shape
        (2, 8, 4, 4)
    """

    _nd = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """3-D convolution layer over (N, C_in, D, H, W) or (C_in, D, H, W) inputs
    (torch.nn.Conv3d)."""

    _nd = 3
    _conv = staticmethod(F.conv3d)


__all__ = ["Conv1d", "Conv2d", "Conv3d"]
