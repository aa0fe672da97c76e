"""`torch.testing`: assert_close and make_tensor, over autodiff (and `_internal`)."""

from __future__ import annotations

import numpy as np

import autodiff as torch
from torchshim import common_utils


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True,
                 msg=None, **kwargs):  # fmt: skip
    case = common_utils.TestCase()
    case.assertEqual(actual, expected, msg, rtol=rtol, atol=atol, equal_nan=equal_nan,
                     exact_dtype=check_dtype)  # fmt: skip


assert_allclose = assert_close


def make_tensor(*shape, dtype, device="cpu", low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, **kwargs):  # fmt: skip
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    low = -9.0 if low is None else low
    high = 9.0 if high is None else high
    values = np.random.uniform(low, high, size=shape)
    result = torch.tensor(values).to(dtype)
    if exclude_zero:
        result = torch.where(result == 0, torch.ones_like(result), result)
    return result.requires_grad_(requires_grad) if requires_grad else result


# (a package, so that `torch.testing._internal.*` resolves under it through the finder)
__path__: list[str] = []
