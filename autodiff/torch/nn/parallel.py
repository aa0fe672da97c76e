"""`DataParallel` as torch.nn's behaves without GPUs: a wrapper whose forward calls the
wrapped module (state dict keys gain the `module.` prefix, as torch's)."""

from __future__ import annotations

from typing import Any

from autodiff.torch.nn.module import Module


class DataParallel(Module):
    """Wraps `module`; on the CPU (autodiff's only device) forward calls it unchanged, as
    torch.nn.DataParallel does when no GPU is available.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> dp = DataParallel(nn.Linear(2, 1))
        >>> list(dp.state_dict())
        ['module.weight', 'module.bias']
        >>> dp(ad.ones(3, 2)).shape
        (3, 1)
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        # (without GPUs torch ignores device_ids and output_device: so does this)
        self.module = module
        self.device_ids: list = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


__all__ = ["DataParallel"]
