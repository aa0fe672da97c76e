"""torch's in-place view operations: `t_`, `transpose_`, `swapdims_`/`swapaxes_`, `squeeze_`,
`unsqueeze_`, `as_strided_`. Each changes a tensor's own shape and strides, its data stay where
they are.

The tensor takes the value of the out-of-place view (a NumPy view of its own memory) and, when
the operation is recorded, that view's history (TransposeBackward0, ...: torch's gradient of
the view operation, chained onto the tensor's old grad_fn); its version counter grows (a node
that saved it raises on use). A view stays a view of the same base, made the same way (its
creation mode: torch's CreationMeta), so the errors of a later in-place operation on it are the
ones the original view would give; torch's errors for in-place operations on views and leaves
are raised first, with nothing changed. Level-0 tensors only: inside a function transform the
out-of-place form (`t()`, `transpose(...)`) is the one to use.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autodiff.autograd._views import _regrow, check_view_inplace
from autodiff.core.graph import VersionCounter
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.torch import views


def _apply_in_place(self: Tensor, name: str, view_op: Callable, *args) -> Tensor:
    """`self` made to hold `view_op(self, *args)` (a view of its memory) in place."""
    if not isinstance(self, Tensor) or self._trace is not EVAL_TRACE:
        raise RuntimeError(
            f"{name}() changes a tensor's own shape in place, which a value traced by a function "
            f"transform (or a dual tensor) cannot do: use the out-of-place "
            f"{name[:-1]}() and its result."
        )
    grad = state().grad_enabled
    if grad and self._requires_grad and self._edge is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    out = view_op(self, *args)  # (its arguments checked: torch's errors, nothing changed yet)
    records = grad and out._edge is not None
    if self._view is not None:
        check_view_inplace(self, records)
    value = out._value
    if (
        type(value) is not np.ndarray
        or type(self._value) is not np.ndarray
        or (value.size and not np.may_share_memory(value, self._value))
    ):
        raise NotImplementedError(
            f"{name}() on this tensor: its {name[:-1]}() is a copy here, not a view of its "
            "memory (as_strided of a non-contiguous tensor), so the tensor cannot take it in "
            f"place. Use the out-of-place {name[:-1]}() and its result."
        )
    old = self._value
    if (
        not records
        and self._view is None
        and self._edge is not None
        and (value.shape != old.shape or value.strides != old.strides)
    ):
        # (torch keeps the grad_fn of the old shape: a backward pass through it then fails, or
        # for a square matrix gives the gradient transposed)
        raise RuntimeError(
            f"{name}() with grad mode disabled on a tensor that has a grad_fn would leave its "
            "history for the old shape. Call it with grad mode enabled (it is recorded), or "
            f"on tensor.detach(); or use the out-of-place {name[:-1]}()."
        )
    self._value = value
    if records:
        self._rebase(out._edge)
        node = out._edge[0]
        if node.versions is not None:  # (the view's node saved this tensor: the new version)
            node.versions = [
                (self, saved[1] + 1) if saved is not None and saved[0] is self else saved
                for saved in node.versions
            ]
    _bump(self)
    meta = self._view
    if not records and meta is not None and self._edge is not None and meta.base.requires_grad:
        # (a view changed outside grad mode: its gradient is read from its base anew, as
        # torch's grad_fn of a view whose version changed: AsStridedBackward0)
        st = state()
        previous, st.grad_enabled = st.grad_enabled, True
        try:
            _regrow(self, meta.base)
        finally:
            st.grad_enabled = previous
    return self


def _bump(tensor: Tensor) -> None:
    vc = tensor._vc
    if type(vc) is VersionCounter:
        vc.value += 1
    else:
        tensor._vc = vc + 1


def t_(self: Tensor) -> Tensor:
    """In-place version of `t()`: a matrix transposed in place (its strides swapped)."""
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _apply_in_place(self, "t_", views.t)


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place version of torch's `transpose(dim0, dim1)`: two dimensions swapped in place."""
    return _apply_in_place(self, "transpose_", views.torch_transpose, dim0, dim1)


def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place version of `swapdims(dim0, dim1)` (`transpose_`)."""
    return _apply_in_place(self, "swapdims_", views.torch_transpose, dim0, dim1)


def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    """In-place version of `swapaxes(axis0, axis1)` (`transpose_`)."""
    return _apply_in_place(self, "swapaxes_", views.torch_transpose, axis0, axis1)


def squeeze_(self: Tensor, dim=None) -> Tensor:
    """In-place version of torch's `squeeze(dim=None)`: dimensions of length 1 dropped."""
    return _apply_in_place(self, "squeeze_", views.torch_squeeze, dim)


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place version of `unsqueeze(dim)`: a dimension of length 1 inserted at `dim`."""
    return _apply_in_place(self, "unsqueeze_", views.unsqueeze, dim)


def as_strided_(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """In-place version of `as_strided(size, stride, storage_offset)` (a contiguous tensor:
    the strides count its elements in row-major order, as `as_strided`'s)."""
    return _apply_in_place(self, "as_strided_", views.as_strided, size, stride, storage_offset)


__all__ = ["as_strided_", "squeeze_", "swapaxes_", "swapdims_", "t_", "transpose_", "unsqueeze_"]
