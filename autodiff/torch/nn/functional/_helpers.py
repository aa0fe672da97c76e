"""Helpers of torch.nn.functional's families: shapes, reductions, `inplace=`, the
legacy `size_average`/`reduce` arguments."""

from __future__ import annotations

import warnings

import numpy as np

import autodiff.numpy as anp
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE


def _shape(x) -> tuple:
    return tuple(np.shape(x)) if not isinstance(x, Tensor) else x.shape


def _size_text(shape: tuple) -> str:
    return f"torch.Size({list(shape)})"


def _in_place(x, result, inplace: bool):
    """`result` written into `x` when `inplace` (torch's `inplace=True`), else `result`."""
    if inplace and isinstance(x, Tensor):
        return x._inplace_method(result)
    return result


def _concrete(x):
    """`x`'s value when it is concrete (NumPy value or level-0 Tensor), else None (a tracer:
    value checks are skipped)."""
    if isinstance(x, Tensor):
        return x._value if x._trace is EVAL_TRACE else None
    return np.asarray(x)


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return anp.mean(loss)
    if reduction == "sum":
        return anp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _warn_target_size(input, target, stacklevel: int = 3) -> None:
    if _shape(input) != _shape(target):
        warnings.warn(
            f"Using a target size ({_size_text(_shape(target))}) that is different to the input "
            f"size ({_size_text(_shape(input))}). This will likely lead to incorrect results due "
            "to broadcasting. Please ensure they have the same size.",
            stacklevel=stacklevel,
        )


def legacy_reduction(size_average, reduce, emit_warning: bool = True) -> str:
    """The `reduction` string of torch's deprecated `size_average`/`reduce` arguments."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(
            "size_average and reduce args will be deprecated, please use "
            f"reduction='{reduction}' instead.",
            stacklevel=3,
        )
    return reduction
