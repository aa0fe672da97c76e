"""`torch.utils.data`'s minimum for a training loop: Dataset, TensorDataset and a DataLoader
with `batch_size`, `shuffle` and `drop_last` (single process)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core.tensor import Tensor
from autodiff.torch.generator import rng


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(index)` and `__len__()`."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class TensorDataset(Dataset):
    """Samples are the index-th rows of each tensor (all of the same first dimension).

    Example:
        >>> import autodiff as ad
        >>> data = TensorDataset(ad.arange(6).reshape(3, 2), ad.tensor([0, 1, 0]))
        >>> len(data), data[1]
        (3, (tensor([2, 3]), tensor(1)))
    """

    def __init__(self, *tensors: Tensor) -> None:
        if any(len(t) != len(tensors[0]) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return len(self.tensors[0])


def default_collate(batch: Sequence) -> Any:
    """Stack a list of samples into a batch: tensors, arrays and numbers stacked along a new
    first axis, tuples, lists and dicts batched field by field.

    Example:
        >>> import autodiff as ad
        >>> default_collate([(ad.tensor([1.0]), 0), (ad.tensor([2.0]), 1)])
        [tensor([[1.],
                [2.]]), tensor([0, 1])]
    """
    first = batch[0]
    if isinstance(first, Tensor):
        return anp.stack(list(batch))
    if isinstance(first, (np.ndarray, np.generic, int, float, complex, bool)):
        return Tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {key: default_collate([b[key] for b in batch]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(first)}"
    )


_LOADING_OPTIONS = {
    "num_workers", "pin_memory", "timeout", "prefetch_factor", "persistent_workers",
    "pin_memory_device", "in_order", "multiprocessing_context",
}  # fmt: skip
_UNSUPPORTED = {"sampler", "batch_sampler", "worker_init_fn"}


class DataLoader:
    """Batches of a dataset, in order or shuffled each epoch (a permutation drawn from the
    default generator, `autodiff.manual_seed`, or from `generator`).

    Example:
        >>> import autodiff as ad
        >>> data = TensorDataset(ad.arange(5.0), ad.arange(5))
        >>> [x.tolist() for x, _ in DataLoader(data, batch_size=2)]
        [[0.0, 1.0], [2.0, 3.0], [4.0]]
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool = False,
        collate_fn: Callable | None = None,
        drop_last: bool = False,
        generator=None,
        **kwargs: Any,
    ) -> None:
        for name, value in kwargs.items():
            if name in _LOADING_OPTIONS:
                continue  # (how batches are loaded: this process loads them, the same ones)
            if name not in _UNSUPPORTED:
                raise TypeError(
                    f"DataLoader.__init__() got an unexpected keyword argument '{name}'"
                )
            if value is not None:
                raise NotImplementedError(f"DataLoader: {name} is not supported")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.generator = generator

    def _order(self) -> np.ndarray:
        n = len(self.dataset)  # type: ignore[arg-type]
        if not self.shuffle:
            return np.arange(n)
        return rng(self.generator).permutation(n)

    def __iter__(self) -> Iterator:
        order = self._order()
        if self.batch_size is None:
            for i in order:
                yield self.dataset[int(i)]
            return
        stop = len(order) - len(order) % self.batch_size if self.drop_last else len(order)
        for start in range(0, stop, self.batch_size):
            indices = order[start : start + self.batch_size]
            if isinstance(self.dataset, TensorDataset) and self.collate_fn is None:
                yield [t[indices] for t in self.dataset.tensors]
            else:
                samples = [self.dataset[int(i)] for i in indices]
                yield (self.collate_fn or default_collate)(samples)

    def __len__(self) -> int:
        n = len(self.dataset)  # type: ignore[arg-type]
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


__all__ = ["DataLoader", "Dataset", "TensorDataset", "default_collate"]
