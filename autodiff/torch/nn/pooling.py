"""Pooling layers: MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d (torch.nn's),
calling the `functional` pools (composites of autodiff ops)."""

from __future__ import annotations

from autodiff.core.tensor import Tensor
from autodiff.torch.nn import functional as F
from autodiff.torch.nn.module import Module


class _MaxPoolNd(Module):
    _fn = staticmethod(F.max_pool2d)

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """Max pooling over the last dim (torch.nn.MaxPool1d)."""

    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max pooling over the last two dims (torch.nn.MaxPool2d).

    Example:
        >>> import autodiff as ad
        >>> MaxPool2d(2)
        MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
        >>> MaxPool2d(2)(ad.ones(1, 3, 8, 8)).shape
        (1, 3, 4, 4)
    """

    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max pooling over the last three dims (torch.nn.MaxPool3d)."""

    _fn = staticmethod(F.max_pool3d)


class _AvgPoolNd(Module):
    _nd = 2

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override=None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        if self._nd > 1:
            self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        if self._nd == 1:
            return F.avg_pool1d(
                input,
                self.kernel_size,
                self.stride,
                self.padding,
                self.ceil_mode,
                self.count_include_pad,
            )
        fn = F.avg_pool2d if self._nd == 2 else F.avg_pool3d
        return fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Average pooling over the last dim (torch.nn.AvgPool1d)."""

    _nd = 1


class AvgPool2d(_AvgPoolNd):
    """Average pooling over the last two dims (torch.nn.AvgPool2d).

    Example:
        >>> AvgPool2d(3, 2, 1)
        AvgPool2d(kernel_size=3, stride=2, padding=1)
    """

    _nd = 2


class AvgPool3d(_AvgPoolNd):
    """Average pooling over the last three dims (torch.nn.AvgPool3d)."""

    _nd = 3


class _AdaptiveAvgPoolNd(Module):
    _fn = staticmethod(F.adaptive_avg_pool2d)

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling of the last dim to `output_size` positions (torch.nn.AdaptiveAvgPool1d)."""

    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling of the last two dims to `output_size` (torch.nn.AdaptiveAvgPool2d).

    Example:
        >>> import autodiff as ad
        >>> AdaptiveAvgPool2d((1, 1))(ad.ones(2, 3, 5, 5)).shape
        (2, 3, 1, 1)
    """

    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling of the last three dims to `output_size` (torch.nn.AdaptiveAvgPool3d)."""

    _fn = staticmethod(F.adaptive_avg_pool3d)


__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
]
