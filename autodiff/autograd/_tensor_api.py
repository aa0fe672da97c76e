"""Tensor's autograd methods (backward, hooks, retain_grad) and its `.grad` property.

Installed on Tensor by `autodiff/torch/_tensor_methods.py`, with every other method, in one table.
"""

from __future__ import annotations

import copy
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import SupportsIndex

import numpy as np

from autodiff.autograd._backward import backward as _run_backward
from autodiff.autograd._grad_dtype import check_grad_assignment
from autodiff.autograd._record import gradient_edge
from autodiff.autograd._saved import mark_detached
from autodiff.autograd._state import _state as _autograd_state
from autodiff.core import buffers
from autodiff.core.graph import _RemovableHandle
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.forward_ad.trace import ForwardTracer


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
    capture = _autograd_state.step_capture
    if capture is not None and (self._trace is EVAL_TRACE or id(self) in capture.lifted):
        return capture.grad_of(self)
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
        if self._trace is EVAL_TRACE:  # (its dtype against grad_dtype, first: torch's)
            check_grad_assignment(self, value)
        if value.shape != self.shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                "tensor are the same size"
            )
    capture = _autograd_state.step_capture
    if capture is not None and (self._trace is EVAL_TRACE or id(self) in capture.lifted):
        capture.set_grad(self, value)
        return
    if self._trace is not EVAL_TRACE:
        raise RuntimeError("`.grad` can be assigned only outside function transforms")
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


def del_grad(self: Tensor) -> None:
    """`del t.grad`: the same as `t.grad = None`."""
    set_grad(self, None)


def output_nr(self: Tensor) -> int:
    """Which output of its grad_fn this tensor is (0 for leaves)."""
    edge = self._edge if self._trace is EVAL_TRACE else None
    return 0 if edge is None else (edge[1] if type(edge) is tuple else 0)


_DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using "
    "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
    "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
    "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution."
)


def detach_(self: Tensor) -> Tensor:
    """Detach this tensor from the graph in place: it becomes a leaf that does not require
    grad (its nodes keep what they saved; a node that saved it raises on use, as in torch).
    A view cannot be detached in place (its history is its base's): use `detach()`."""
    if self._trace is not EVAL_TRACE:
        if not (isinstance(self, ForwardTracer) and self._trace.dual):
            raise RuntimeError("detach_() can be used only outside function transforms")
        # A dual tensor: no graph and no tangent any more (torch's detach_ is both).
        self._tangent = None
        if isinstance(self._value, Tensor):
            self._value = detach_(Tensor._from(self._value._value, self._value._edge))
        return self
    if self._view is not None:
        raise RuntimeError(_DETACH_VIEW)
    if self._edge is not None:
        mark_detached(self)  # (a node that saved it raises when it runs, as torch's)
    self._edge = None
    self._requires_grad = False
    return self


# torch's `t._backward_hooks` (a dict of hook(grad) called with this tensor's gradient, legacy
# code assigns one): id(tensor) -> (weakref to it, the dict). (A Tensor's `==` is elementwise:
# no WeakKeyDictionary.)
_BACKWARD_HOOKS: dict = {}


def backward_hooks(self: Tensor) -> dict | None:
    """The dict of legacy gradient hooks assigned to `t._backward_hooks` (None: none)."""
    entry = _BACKWARD_HOOKS.get(id(self))
    return entry[1] if entry is not None and entry[0]() is self else None


def set_backward_hooks(self: Tensor, hooks) -> None:
    """`t._backward_hooks = {...}`: each value is called with the gradient of `t`, in order,
    when the backward pass computes it (what they return replaces it, as `register_hook`'s)."""
    key = id(self)
    if hooks is None:
        _BACKWARD_HOOKS.pop(key, None)
        return
    ref = weakref.ref(self, lambda _, key=key: _BACKWARD_HOOKS.pop(key, None))
    _BACKWARD_HOOKS[key] = (ref, hooks)
    if self.requires_grad:

        def call_hooks(grad, hooks=hooks):
            for hook in list(hooks.values()):
                result = hook(grad)
                if result is not None:
                    grad = result
            return grad

        node, index = gradient_edge(self)
        node._register_tensor_pre_hook(index, call_hooks)


def del_backward_hooks(self: Tensor) -> None:
    raise RuntimeError("Deletion of _backwards_hooks not allowed!")  # (torch's spelling)


def grad_fn_attr(self: Tensor):
    """torch's `t._grad_fn`: the same as `t.grad_fn` (None for leaves); assigning None
    detaches the tensor in place (`detach_()`)."""
    return self.grad_fn


def set_grad_fn_attr(self: Tensor, value) -> None:
    if value is not None:
        raise RuntimeError("_grad_fn can be only set to None")
    detach_(self)


def del_grad_fn_attr(self: Tensor) -> None:
    raise RuntimeError("Deletion of _grad_fn not allowed. Detach tensor instead!")


# ---- pickle and copy: a leaf's data, requires_grad (and for deepcopy its .grad), as torch ----


def _rebuild(cls, value, requires_grad: bool, state, grad=None) -> Tensor:
    t = object.__new__(cls)
    t._value = value
    t._trace = EVAL_TRACE
    t._edge = None
    t._requires_grad = bool(requires_grad)
    t._grad = grad
    t._vc = 0
    t._accumulator = None
    t._view = None
    if state:
        t.__dict__.update(state)
    return t


def _check_concrete(tensor: Tensor, what: str) -> None:
    if tensor._trace is not EVAL_TRACE:
        raise TypeError(
            f"Cannot {what} a {type(tensor).__name__}: it is a traced value inside a function "
            "transform (its derivative cannot leave the transform)."
        )


def reduce_ex(self: Tensor, protocol: SupportsIndex) -> tuple:
    """Pickle (and `copy.copy`) support: the data and `requires_grad` (not `.grad`, not the
    graph: a tensor that requires grad comes back as a leaf), as torch."""
    _check_concrete(self, "pickle")
    state = getattr(self, "__dict__", None) or None
    return (_rebuild, (type(self), self._value, self.requires_grad, state))


def deepcopy(self: Tensor, memo: dict) -> Tensor:
    """`copy.deepcopy`: a leaf's data, `requires_grad` and `.grad` copied, as torch (which
    refuses, as here, a tensor with a grad_fn)."""
    _check_concrete(self, "deepcopy")
    if self._edge is not None:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
            "because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001"
        )
    done = memo.get(id(self))
    if done is not None:
        return done
    value = self._value
    new_value = memo.get(id(value))
    if new_value is None:  # (NumPy scalars are immutable: kept)
        new_value = np.array(value, copy=True) if type(value) is np.ndarray else value
        memo[id(value)] = new_value
    new = _rebuild(type(self), new_value, self._requires_grad, None)
    memo[id(self)] = new
    if self._grad is not None:
        new._grad = copy.deepcopy(self._grad, memo)
    state = getattr(self, "__dict__", None)
    if state:
        new.__dict__.update(copy.deepcopy(state, memo))
    return new
