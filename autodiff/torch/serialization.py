"""`torch.save` and `torch.load`: tensors pickled by value."""

from __future__ import annotations

import io
import os
import pickle
from typing import Any

import numpy as np

from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.torch.types import check_device

# ---- save and load ----


def _rebuild_tensor(value, requires_grad: bool, grad=None) -> Tensor:
    t = Tensor._from(value)
    if requires_grad:
        t.requires_grad = True
    if grad is not None:
        t._grad = Tensor._from(grad)
    return t


class _TensorPickler(pickle.Pickler):
    """Pickles every Tensor (anywhere in the object) as its value and `requires_grad`: no
    graph, no hooks, as `torch.save`."""

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            if obj._trace is not EVAL_TRACE:
                raise pickle.PicklingError(
                    f"Cannot save a {type(obj).__name__}: a traced value inside a function "
                    "transform has no value of its own to save."
                )
            value = np.array(obj._value)
            if type(obj) is not Tensor:  # (nn.Parameter and other subclasses)
                return NotImplemented
            return (_rebuild_tensor, (value, obj._requires_grad))
        return NotImplemented


def save(obj, f, pickle_module=None, pickle_protocol: int = 2, **kwargs) -> None:
    """`torch.save(obj, f)`: pickle `obj` (tensors, dicts and lists of them, any picklable
    object holding them) to a path or a binary file.

    Example:
        >>> import io, autodiff as torch
        >>> buffer = io.BytesIO()
        >>> torch.save({"w": torch.ones(2, requires_grad=True)}, buffer); _ = buffer.seek(0)
        >>> torch.load(buffer)["w"]
        tensor([1., 1.], requires_grad=True)
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            _TensorPickler(handle, protocol=pickle_protocol).dump(obj)
        return
    _TensorPickler(f, protocol=pickle_protocol).dump(obj)


def load(
    f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, **kwargs
) -> Any:
    """`torch.load(f, map_location=None)`: what `save` wrote (`map_location` may name the
    CPU only)."""
    if (
        map_location is not None
        and not callable(map_location)
        and not isinstance(map_location, dict)
    ):
        check_device(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return pickle.load(handle)
    if isinstance(f, (bytes, bytearray)):
        return pickle.load(io.BytesIO(f))
    return pickle.load(f)
