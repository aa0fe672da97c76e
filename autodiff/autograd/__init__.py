"""autodiff.autograd: the PyTorch-compatible imperative API (torch.autograd's names and semantics).
"""
from autodiff.autograd import forward_ad

__all__ = ["forward_ad"]
