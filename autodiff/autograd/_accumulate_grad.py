"""torch's AccumulateGrad: how a leaf's gradient goes into its `.grad`.

The first gradient is stored (an array nothing else holds becomes `.grad` itself), later ones
are added in place, under one lock (backward passes in several threads may share leaves),
cast to the leaf's `grad_dtype` (`grad_dtype_of`).
"""

from __future__ import annotations

import threading

import numpy as np

from autodiff.core.graph import SAME_DTYPE, name_node
from autodiff.core.tensor import Tensor
from autodiff.ops.elementwise import multiply

# Accumulation into `.grad` is atomic, as torch's AccumulateGrad (one lock: it is held only
# for the read-add-write of a leaf's gradient).
_GRAD_LOCK = threading.Lock()


def accumulate_grad(tensor, ct, create_graph: bool, owned: bool = False) -> None:
    """torch's AccumulateGrad: the first gradient is stored, later ones are added in place.
    `owned`: `ct` is an array nothing else refers to, which the first `.grad` may take."""
    if isinstance(ct, Tensor) and not create_graph:
        ct = ct._value
    if not isinstance(ct, Tensor):
        ct = np.asarray(ct)
        if ct.shape != tensor.shape:
            ct = np.broadcast_to(ct, tensor.shape)
            owned = False  # (a read-only view: the first `.grad` is a copy)
    want = grad_dtype_of(tensor)
    if want is not None and ct.dtype != want:  # (torch casts to the leaf's grad_dtype)
        ct = ct.astype(want)
        owned = True
    with _GRAD_LOCK:  # backward passes in several threads may share leaves
        _accumulate_grad_locked(tensor, ct, create_graph, owned)


def grad_dtype_of(tensor):
    """The dtype `tensor`'s `.grad` takes (torch's `grad_dtype`): its own unless set on its
    gradient accumulator (a NumPy dtype, or None: any)."""
    node = tensor._accumulator
    extra = node.extra if node is not None and tensor._edge is None else None
    want = extra.grad_dtype if extra is not None else SAME_DTYPE
    return tensor.dtype if want is SAME_DTYPE else want


def _accumulate_grad_locked(tensor, ct, create_graph: bool, owned: bool = False) -> None:
    current = tensor._grad
    if current is None:
        if not isinstance(ct, Tensor):
            ct = Tensor._from(ct if owned else np.array(ct, copy=True))
        elif ct.requires_grad:
            ct = _copy_with_graph(ct)
        tensor._grad = ct
    elif create_graph or isinstance(ct, Tensor):
        tensor._grad = current + ct
    else:
        # Without create_graph torch adds in place, even into a .grad that has a graph
        # (from an earlier create_graph backward): the same object, one more version. A
        # graph output may be a node's saved residual: it gets a new buffer instead.
        value = current._value
        if current._edge is None and isinstance(value, np.ndarray) and value.flags.writeable:
            np.add(value, ct, out=value, casting="unsafe")
        else:
            current._value = np.add(value, ct).astype(current.dtype, copy=False)
        current._vc += 1


def _copy_with_graph(ct: Tensor) -> Tensor:
    """The first `.grad` of a backward pass with create_graph, as torch makes it: a copy of
    the gradient into a new tensor, recorded as `CopyBackwards` whose next functions are the
    new tensor's (None) and the gradient's (torch: `empty_strided(...).copy_(grad)`)."""
    ones = np.ones((), dtype=ct.dtype)
    return name_node(multiply(ones, ct), "CopyBackwards")  # (exact: 1 * g is g, -0.0 too)


__all__ = ["accumulate_grad", "grad_dtype_of"]
