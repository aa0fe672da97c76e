"""torch.testing._internal.common_methods_invocations's helpers the autograd tests read."""

import autodiff as torch


def mask_not_all_zeros(shape):
    """A random boolean mask with at least one True element."""
    while True:
        result = torch.randn(shape).gt(0)
        if result.sum() > 0:
            return result
