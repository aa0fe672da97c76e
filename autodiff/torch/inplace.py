"""Tensor's in-place arithmetic and fills on the torch face: `add_`, `mul_`, `zero_`,
`fill_`, `copy_`, and the in-place comparisons."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
from autodiff.core import views as _views
from autodiff.core.tensor import Tensor
from autodiff.torch._args import _cast
from autodiff.torch.pointwise import div


def comparison_in_place(f: Callable, name: str) -> Callable:
    """`t.eq_(other)` and its kind: `t` becomes `f(t, other)` in its own dtype (1 or 0)."""

    def method(self, other):
        since = _views.WRITER.clock()
        return self._inplace_method(anp.astype(f(self, other), self.dtype), since)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}(other)`: the comparison, in place, in this tensor's dtype."
    return method


def add_(self: Tensor, other, alpha=1) -> Tensor:
    """`Tensor.add_`: `self += other * alpha`, in place."""
    if alpha == 1 and self._ufunc_in_place(np.add, other):
        return self
    return self._inplace_method(self + (other if alpha == 1 else other * alpha))


def sub_(self: Tensor, other, alpha=1) -> Tensor:
    """`Tensor.sub_`: `self -= other * alpha`, in place."""
    if alpha == 1 and self._ufunc_in_place(np.subtract, other):
        return self
    return self._inplace_method(self - (other if alpha == 1 else other * alpha))


def mul_(self: Tensor, other) -> Tensor:
    """`Tensor.mul_`: `self *= other`, in place."""
    if self._ufunc_in_place(np.multiply, other):
        return self
    return self._inplace_method(self * other)


def div_(self: Tensor, other, *, rounding_mode=None) -> Tensor:
    """`Tensor.div_`: `self /= other`, in place."""
    if rounding_mode is None and self._ufunc_in_place(np.divide, other):
        return self
    return self._inplace_method(div(self, other, rounding_mode=rounding_mode))


def zero_(self: Tensor) -> Tensor:
    """`Tensor.zero_`: fill with zeros, in place."""
    return self._inplace_method(anp.zeros_like(self))


def fill_(self: Tensor, value) -> Tensor:
    """`Tensor.fill_`: fill with `value` (a number or a 0-d tensor, differentiable), in place."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions."
            )
        return self._inplace_method(anp.broadcast_to(_cast(value, self.dtype), self.shape) * 1)
    return self._inplace_method(anp.full_like(self, value))


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """`Tensor.copy_`: copy `src` (broadcast to this shape) into this tensor, in place."""
    src_dtype = src.dtype if isinstance(src, Tensor) else np.asarray(src).dtype
    value = anp.broadcast_to(src, self.shape) * 1
    if src_dtype != self.dtype:
        if self.dtype.kind not in "fc" and isinstance(value, Tensor) and value._edge is None:
            value = anp.astype(value, self.dtype)
        elif self.dtype.kind in "fc" or not isinstance(value, Tensor):
            value = anp.astype(value, self.dtype)
    return self._inplace_method(value)
