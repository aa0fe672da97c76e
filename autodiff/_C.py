"""`torch._C`: the few private names of torch's C extension that torch code reaches for,
mapped onto autodiff's own (each is an alias or a thin query of autodiff's state).

Only names autodiff has the machinery for are here: grad mode, forward-grad mode, the
saved-tensor-hooks switch, weak references to tensors, the node and saved-tensor classes,
and the two utility nodes `_functions.UndefinedGrad` (its backward gives undefined, i.e.
None, gradients) and `_functions.DelayedError` (its backward raises). A script that uses any
other `torch._C` name gets an AttributeError naming it.

Example:
    >>> import autodiff as torch
    >>> torch._C.is_grad_enabled(), torch._C._autograd._saved_tensors_hooks_is_enabled()
    (True, True)
    >>> t = torch.ones(2); ref = torch._C._WeakTensorRef(t); del t; ref.expired()
    True
"""

from __future__ import annotations

import types
import weakref

from autodiff.autograd._nodes import AccumulateGrad, SavedTensor
from autodiff.autograd._state import autograd_state
from autodiff.autograd.function import Function
from autodiff.autograd.grad_mode import is_grad_enabled
from autodiff.autograd.graph import Node
from autodiff.core.trace import state

__all__ = ["is_grad_enabled"]


def _set_fwd_grad_enabled(mode: bool) -> None:
    """Switch tangent propagation of dual levels on or off in this thread
    (`torch.autograd.forward_ad._set_fwd_grad_enabled` is the scoped form)."""
    state().fw_grad_enabled = bool(mode)


def _is_fwd_grad_enabled() -> bool:
    """Whether dual levels propagate tangents in this thread."""
    return state().fw_grad_enabled


class _WeakTensorRef:
    """A weak reference to a tensor: `expired()` once the tensor has been freed."""

    __slots__ = ("_ref",)

    def __init__(self, tensor) -> None:
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        """True once the tensor no longer exists."""
        return self._ref() is None


def _saved_tensors_hooks_is_enabled() -> bool:
    """False inside `torch.autograd.graph.disable_saved_tensors_hooks`."""
    return autograd_state().saved_tensors_hooks_disabled is None


class _UndefinedGradFunction(Function):
    @staticmethod
    def forward(ctx, *tensors):
        return tensors[0] if len(tensors) == 1 else tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * len(grads)


class UndefinedGrad:
    """`UndefinedGrad()(*tensors)`: the tensors, through a node whose backward gives each
    input an undefined (None) gradient, whatever gradient reaches it.

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> y = torch._C._functions.UndefinedGrad()(x * 2)
        >>> y.sum().backward(); x.grad is None
        True
    """

    def __call__(self, *tensors):
        return _UndefinedGradFunction.apply(*tensors)


class _DelayedErrorFunction(Function):
    @staticmethod
    def forward(ctx, message, *tensors):
        ctx.message = message
        return tensors[0] if len(tensors) == 1 else tensors

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


class DelayedError:
    """`DelayedError(message, num_inputs)(*tensors)`: the tensors, through a node whose
    backward raises `RuntimeError(message)` (an error that only a backward pass reaching it
    reports).

    Example:
        >>> import autodiff as torch
        >>> y = torch._C._functions.DelayedError("no gradient here", 1)(
        ...     torch.ones(2, requires_grad=True))
        >>> try:
        ...     y.sum().backward()
        ... except RuntimeError as e:
        ...     print(e)
        no gradient here
    """

    def __init__(self, message: str, num_inputs: int) -> None:
        self._message = message
        self._num_inputs = num_inputs

    def __call__(self, *tensors):
        if len(tensors) != self._num_inputs:
            raise TypeError(f"expected {self._num_inputs} arguments, got {len(tensors)} instead")
        return _DelayedErrorFunction.apply(self._message, *tensors)


# As in torch, both are node types (torch constructs the node, then applies it to tensors).
Node.register(UndefinedGrad)
Node.register(DelayedError)


class _Namespace(types.SimpleNamespace):
    """One of torch._C's submodules: the names autodiff maps, and a clear error for others."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"torch._C.{self._path}.{name} has no counterpart in autodiff (mapped: "
            f"{', '.join(sorted(k for k in vars(self) if not k.startswith('_path')))})"
        )


# torch._C._functions: node classes.
_functions = _Namespace(
    _path="_functions",
    AccumulateGrad=AccumulateGrad,
    DelayedError=DelayedError,
    UndefinedGrad=UndefinedGrad,
)

# torch._C._autograd: the saved-tensor class and the hooks switch.
_autograd = _Namespace(
    _path="_autograd",
    SavedTensor=SavedTensor,
    _saved_tensors_hooks_is_enabled=_saved_tensors_hooks_is_enabled,
)
