"""`Parameter`: a leaf Tensor that a Module registers as one of its parameters (torch.nn's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.torch.creation import empty


class Parameter(Tensor):
    """A Tensor that, assigned as a Module attribute, becomes one of the module's parameters.

    A leaf that requires grad by default (also under `no_grad`, as in torch). Built from a
    Tensor, it shares the Tensor's memory, cut from any graph (as `detach()`).

    Example:
        >>> import autodiff as ad
        >>> p = Parameter(ad.ones(2))
        >>> p.requires_grad, p.is_leaf, isinstance(p, ad.Tensor)
        (True, True, True)
        >>> (p * 3).sum().backward(); p.grad
        tensor([3., 3.])
    """

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = empty(0)
        elif isinstance(data, Tensor) and data._trace is not EVAL_TRACE:
            raise TypeError(
                "a Parameter holds a concrete value: it cannot be made from a "
                f"{type(data).__name__} inside a transform (create parameters outside it, or "
                "pass them to the transformed function as arguments)"
            )
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> Parameter:
        # As torch: a copy of the data with the same requires_grad; the gradient is not copied.
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(np.array(self._value, copy=True), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        state = self.__dict__ or None  # (attributes a user attached)
        return (type(self), (np.asarray(self._value), self.requires_grad), state)


__all__ = ["Parameter"]
