"""torch.autograd.Variable: the legacy name of Tensor, kept (as in torch) for old code.

`Variable(t, requires_grad=True)` makes a tensor sharing `t`'s data, `isinstance(x, Variable)`
holds for every Tensor, and `Variable._execution_engine.queue_callback(fn)` runs `fn` at the
end of the backward pass running now.
"""

from __future__ import annotations

import warnings

from autodiff.autograd._backward import queue_callback
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE


class ExecutionEngine:
    """torch's `Variable._execution_engine` (its `queue_callback`).

    Example:
        >>> import autodiff as ad
        >>> calls = []
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> y = x * 2
        >>> _ = y.register_hook(lambda g: Variable._execution_engine.queue_callback(
        ...     lambda: calls.append("done")))
        >>> y.sum().backward(); calls
        ['done']
    """

    def queue_callback(self, callback) -> None:
        """Run `callback()` once the backward pass running now has run every node (an error
        outside a backward pass)."""
        queue_callback(callback)


class VariableMeta(type):
    """Every Tensor is a Variable (`isinstance`); calling Variable makes a Tensor."""

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            return Tensor([])
        if not isinstance(data, Tensor) or data._trace is not EVAL_TRACE:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = Tensor._from(data._value)  # (shares the data, without the graph)
        t.requires_grad = requires_grad
        return t


class Variable(metaclass=VariableMeta):
    """The legacy name of Tensor: `Variable(t, requires_grad=False)` is a tensor sharing `t`'s
    data (outside its graph).

    Example:
        >>> import autodiff as ad
        >>> v = Variable(ad.tensor([1.0, 2.0]), requires_grad=True)
        >>> v, isinstance(v, Variable)
        (tensor([1., 2.], requires_grad=True), True)
    """

    _execution_engine = ExecutionEngine()


__all__ = ["Variable"]
