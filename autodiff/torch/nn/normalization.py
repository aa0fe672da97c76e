"""Normalization layers with running statistics: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d,
and GroupNorm — torch.nn's, with its parameters, buffers, train/eval semantics and reprs."""

from __future__ import annotations

import warnings

from autodiff.core.tensor import Tensor
from autodiff.torch.creation import ones, tensor, zeros
from autodiff.torch.nn import functional as F
from autodiff.torch.nn import init
from autodiff.torch.nn.layers import _empty
from autodiff.torch.nn.module import Module
from autodiff.torch.nn.parameter import Parameter
from autodiff.torch.types import check_device


class _NormBase(Module):
    """Common base of the batch and instance norms: `weight` (ones) and `bias` (zeros) when
    `affine`; buffers `running_mean` (zeros), `running_var` (ones) and `num_batches_tracked`
    (an int64 0) when `track_running_stats`."""

    _expected_dims: tuple = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_empty((num_features,), device, dtype))
            if bias:
                self.bias = Parameter(_empty((num_features,), device, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            check_device(device)
            kwargs = {} if dtype is None else {"dtype": dtype}
            self.register_buffer("running_mean", zeros(num_features, **kwargs))
            self.register_buffer("running_var", ones(num_features, **kwargs))
            self.register_buffer("num_batches_tracked", tensor(0, dtype="int64"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean zeros, running variance ones, no batch tracked."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight ones, bias zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input) -> None:
        if input.ndim not in self._expected_dims:
            expected = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {expected} input (got {input.ndim}D input)")

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # (a cumulative moving average)
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep_stats = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep_stats else None,
            self.running_var if keep_stats else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization over a (N, C) or (N, C, L) input (torch.nn.BatchNorm1d): in
    training, normalise each channel with the batch's statistics and fold them into the
    running ones (`momentum`, or a cumulative average when it is None); in eval, use the
    running ones.

    Example:
        >>> import autodiff as ad
        >>> bn = BatchNorm1d(2)
        >>> bn
        BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
        >>> bn(ad.tensor([[0.0, 1.0], [2.0, 5.0]])).shape
        (2, 2)
        >>> bn.running_mean, int(bn.num_batches_tracked)
        (tensor([0.1, 0.3]), 1)
    """

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over a (N, C, H, W) input (torch.nn.BatchNorm2d); see
    BatchNorm1d."""

    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over a (N, C, D, H, W) input (torch.nn.BatchNorm3d); see
    BatchNorm1d."""

    _expected_dims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def _apply_instance_norm(self, input):
        return F.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        no_batch_dims = self._expected_dims[0]
        feature_dim = input.ndim - no_batch_dims
        size = input.shape[feature_dim]
        if size != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {size}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can "
                "silence this warning by not passing in num_features, which is not used "
                "because affine=False",
                stacklevel=2,
            )
        if input.ndim == no_batch_dims:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over a (N, C, L) or unbatched (C, L) input
    (torch.nn.InstanceNorm1d): each channel of each sample normalised over its own length;
    no affine parameters and no running statistics unless asked for.

    Example:
        >>> import autodiff as ad
        >>> InstanceNorm1d(1)(ad.tensor([[[1.0, 3.0]]]))
        tensor([[[-0.99999, 0.99999]]])
    """

    _expected_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over a (N, C, H, W) or (C, H, W) input
    (torch.nn.InstanceNorm2d); see InstanceNorm1d."""

    _expected_dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over a (N, C, D, H, W) or (C, D, H, W) input
    (torch.nn.InstanceNorm3d); see InstanceNorm1d."""

    _expected_dims = (4, 5)


class GroupNorm(Module):
    """Group normalization (torch.nn.GroupNorm): the channels split into `num_groups`
    groups, each normalised per sample; `weight` (ones) and `bias` (zeros) per channel.

    Example:
        >>> GroupNorm(2, 4)
        GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_empty((num_channels,), device, dtype))
            if bias:
                self.bias = Parameter(_empty((num_channels,), device, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
]
