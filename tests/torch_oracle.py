"""Helpers of the torch-face tests: leaves and the same program run under autodiff and torch."""

import numpy as np
import pytest

import autodiff as ad


def leaf(*values):
    return ad.tensor(np.array(values, dtype=float), requires_grad=True)


def both(fn):
    """`fn(torch_module)` for autodiff and, when installed, real torch: the two results."""
    ours = fn(ad)
    torch = pytest.importorskip("torch")
    torch.set_default_dtype(torch.float64)
    try:
        return ours, fn(torch)
    finally:
        torch.set_default_dtype(torch.float32)
