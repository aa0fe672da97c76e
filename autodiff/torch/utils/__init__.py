"""autodiff.utils: torch.utils's `checkpoint` (activation checkpointing on the torch face) and
`data` (Dataset, TensorDataset, DataLoader). Builds on the torch face's autograd."""

from autodiff.torch.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
