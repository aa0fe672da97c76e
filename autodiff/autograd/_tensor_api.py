"""Tensor's autograd methods (backward, hooks, retain_grad), attached by autodiff.autograd."""

from __future__ import annotations

import warnings

from autodiff.core.graph import _RemovableHandle
from autodiff.core.tensor import Tensor


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate the gradient of this tensor into the leaves' `.grad` (see autograd.backward)."""
    from autodiff.autograd._backward import backward as run

    run(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """`hook(grad) -> Tensor | None` runs when this tensor's gradient is computed."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node, index = self._gradient_edge()
    return node._register_tensor_pre_hook(index, hook)


def register_post_accumulate_grad_hook(self, hook):
    """`hook(tensor)` runs after `.grad` of this leaf has been accumulated."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._edge is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    node, _ = self._gradient_edge()
    extra = node._extra()
    if extra.post_accumulate_hooks is None:
        extra.post_accumulate_hooks = []
    extra.post_accumulate_hooks.append(hook)
    return _RemovableHandle(extra.post_accumulate_hooks, hook)


def retain_grad(self) -> None:
    """Keep `.grad` for this non-leaf tensor during backward (a no-op on leaves)."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self._edge is None:
        return
    node, index = self._gradient_edge()
    node._retain(index, self)


def _retains_grad(self) -> bool:
    if self._edge is None:
        return False
    node, index = self._gradient_edge()
    extra = node.extra
    return bool(
        extra is not None
        and extra.retains
        and index in extra.retains
        and extra.retains[index]() is self
    )


def _grad_get(self):
    if self._edge is not None and self._grad is None and not _retains_grad(self):
        warnings.warn(
            "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
            ".grad attribute won't be populated during autograd.backward(). If you indeed want "
            "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
            "non-leaf Tensor.",
            UserWarning,
            stacklevel=2,
        )
    return _core_grad.fget(self)


_core_grad = Tensor.grad


def install() -> None:
    Tensor.backward = backward
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(_retains_grad)
    Tensor.grad = property(_grad_get, _core_grad.fset, doc=_core_grad.__doc__)
