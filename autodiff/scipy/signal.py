"""autodiff.scipy.signal: `scipy.signal`'s N-dimensional convolve and correlate,
differentiable in both inputs.

Computed directly (SciPy's method="direct"): the windows of the zero-padded first input
are gathered once and contracted with the flipped second input, so the derivatives are a
scatter and a contraction. `method` is accepted and ignored (SciPy's "fft" gives the same
values up to rounding).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.numpy._rearranging import pad
from autodiff.ops import shape as _shape
from autodiff.ops.elementwise import FUNCTIONS as _ELEMENTWISE
from autodiff.ops.index import getitem
from autodiff.ops.products import tensordot
from autodiff.ops.structural import ndim_of, shape_of

__all__ = ["convolve", "correlate"]

_MODES = ("full", "valid", "same")


def _check(in1, in2, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    if ndim_of(in1) != ndim_of(in2):
        raise ValueError("in1 and in2 should have the same dimensionality")


def _swap_needed(mode: str, s1: tuple, s2: tuple) -> bool:
    """SciPy's `_inputs_swap_needed`: for "valid", the larger input goes first."""
    if mode != "valid":
        return False
    ok1 = all(a >= b for a, b in zip(s1, s2))
    ok2 = all(b >= a for a, b in zip(s1, s2))
    if not (ok1 or ok2):
        raise ValueError(
            "For 'valid' mode, one must be at least as large as the other in every dimension"
        )
    return not ok1


def _direct_convolve(in1, in2, mode: str):
    """SciPy's direct convolution of same-rank `in1` and `in2` (no swap needed)."""
    s1, s2 = shape_of(in1), shape_of(in2)
    if any(n == 0 for n in s1 + s2):
        return np.zeros(0, np.result_type(dtype_of(in1), dtype_of(in2)))
    padded = pad(in1, [(k - 1, k - 1) for k in s2])
    starts = []
    for n1, n2 in zip(s1, s2):
        full = n1 + n2 - 1
        if mode == "full":
            starts.append(np.arange(full))
        elif mode == "valid":
            starts.append(np.arange(n2 - 1, n1))
        else:  # same: the centre of the full result, of in1's size
            first = (full - n1) // 2
            starts.append(np.arange(first, first + n1))
    nd = len(s1)
    index = []
    for d, (positions, n2) in enumerate(zip(starts, s2)):
        shape_n = [1] * (2 * nd)
        shape_n[d] = len(positions)
        shape_j = [1] * (2 * nd)
        shape_j[nd + d] = n2
        index.append(positions.reshape(shape_n) + np.arange(n2).reshape(shape_j))
    windows = getitem(padded, tuple(index))
    kernel = _shape.flip(in2, tuple(range(nd)))
    return tensordot(windows, kernel, axes=nd)


def convolve(in1, in2, mode="full", method="auto"):
    """`scipy.signal.convolve`: the N-dimensional convolution of `in1` and `in2` ("full",
    "valid" or "same"), differentiable in both.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
        array([0. , 1. , 2.5, 4. , 1.5])
        >>> ad.grad(lambda k: convolve(np.array([1.0, 2.0, 3.0]), k, "valid")[0])(np.ones(3))
        array([3., 2., 1.])
    """
    in1, in2 = _shape._operand(in1), _shape._operand(in2)
    if method not in ("auto", "direct", "fft"):
        raise ValueError("Acceptable method flags are 'auto', 'direct', or 'fft'.")
    if ndim_of(in1) == ndim_of(in2) == 0:
        return in1 * in2
    _check(in1, in2, mode)
    if _swap_needed(mode, shape_of(in1), shape_of(in2)):
        in1, in2 = in2, in1
    return _direct_convolve(in1, in2, mode)


def correlate(in1, in2, mode="full", method="auto"):
    """`scipy.signal.correlate`: the N-dimensional cross-correlation (a convolution with
    `in2` reversed and conjugated), differentiable in both.

    Example:
        >>> import numpy as np
        >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), "valid")
        array([3.5])
    """
    in1, in2 = _shape._operand(in1), _shape._operand(in2)
    if ndim_of(in1) == ndim_of(in2) == 0:
        return in1 * _ELEMENTWISE["conjugate"](in2)
    _check(in1, in2, mode)
    everywhere = tuple(range(ndim_of(in1)))
    if _swap_needed(mode, shape_of(in1), shape_of(in2)):
        z = convolve(in2, _shape.flip(_ELEMENTWISE["conjugate"](in1), everywhere), mode, method)
        return _shape.flip(_ELEMENTWISE["conjugate"](z), everywhere)
    return convolve(in1, _shape.flip(_ELEMENTWISE["conjugate"](in2), everywhere), mode, method)


FUNCTIONS: dict = {"convolve": convolve, "correlate": correlate}
