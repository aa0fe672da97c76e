"""Tensor's autograd methods (backward, hooks, retain_grad) and its `.grad` property.

Installed on Tensor by `autodiff/_tensor_methods.py`, with every other method, in one table.
"""

from __future__ import annotations

import sys
import warnings
import weakref
from collections.abc import Callable

from autodiff.autograd._backward import backward as _run_backward
from autodiff.autograd._record import gradient_edge
from autodiff.core import buffers
from autodiff.core.graph import _RemovableHandle
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE


def backward(
    self: Tensor,
    gradient=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
) -> None:
    """Accumulate the gradient of this tensor into the leaves' `.grad` (see autograd.backward)."""
    _run_backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self: Tensor, hook: Callable) -> _RemovableHandle:
    """`hook(grad) -> Tensor | None` runs when this tensor's gradient is computed."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node, index = gradient_edge(self)
    return node._register_tensor_pre_hook(index, hook)


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable) -> _RemovableHandle:
    """`hook(tensor)` runs after `.grad` of this leaf has been accumulated."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._edge is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    node, _ = gradient_edge(self)
    extra = node._extra()
    if extra.post_accumulate_hooks is None:
        extra.post_accumulate_hooks = []
    extra.post_accumulate_hooks.append(hook)
    return _RemovableHandle(extra.post_accumulate_hooks, hook)


def retain_grad(self: Tensor) -> None:
    """Keep `.grad` for this non-leaf tensor during backward (a no-op on leaves)."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self._edge is None:
        return
    node, index = gradient_edge(self)
    node._retain(index, self)


def retains_grad(self: Tensor) -> bool:
    """Whether `retain_grad()` was called on this non-leaf tensor (the `.retains_grad` property)."""
    if self._edge is None:
        return False
    node, index = gradient_edge(self)
    extra = node.extra
    return bool(
        extra is not None
        and extra.retains
        and index in extra.retains
        and extra.retains[index]() is self
    )


def grad(self: Tensor) -> Tensor | None:
    """The gradient accumulated by `backward()` (leaves; non-leaves that `retain_grad()`)."""
    if self._edge is not None and self._grad is None and not retains_grad(self):
        warnings.warn(
            "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
            ".grad attribute won't be populated during autograd.backward(). If you indeed want "
            "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
            "non-leaf Tensor.",
            UserWarning,
            stacklevel=2,
        )
    return self._grad if self._trace is EVAL_TRACE else None


def set_grad(self: Tensor, value) -> None:
    """`t.grad = value` (a Tensor or array of `t`'s shape, or None)."""
    if value is not None:
        value = value if isinstance(value, Tensor) else Tensor(value)
        if value.shape != self.shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                "tensor are the same size"
            )
    old, self._grad = self._grad, value
    # A dropped gradient nothing else holds (`p.grad = None`, as optimizers' zero_grad
    # does) is recycled: the next backward pass writes this parameter's gradient into it
    # (core/buffers.py) instead of into fresh memory.
    if (
        old is not None
        and old._trace is EVAL_TRACE
        and sys.getrefcount(old) == 2  # (`old`, getrefcount's argument)
        and not weakref.getweakrefcount(old)
    ):
        buffers.give_if_unshared(old._value, 1)  # (`old._value`)
