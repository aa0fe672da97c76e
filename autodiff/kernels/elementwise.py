"""Fused elementwise backward formulas: one pass over memory, no temporaries.

`tanh_backward(g, y) = g * (1 - y*y)` and `log1p_backward(g, x) = g / (1 + x)` are
three NumPy passes each. Written plainly they also make two temporary arrays, and
every temporary of that size is fresh memory the OS has to fault in and zero; the
NumPy implementations here therefore work in place in their one result array
(about 3x faster on 2**21 float64 values), and the Numba loops read their inputs
once and write that array in one pass (about 2x faster again; bench_kernels.py).

The loops take C-contiguous 1-d arrays of one float dtype (float32 stays
float32: the constant 1 is passed in that dtype, since Numba would otherwise
promote to float64), and a cotangent that is a broadcast scalar (the gradient
of a `sum`) as a scalar, never materialised. Everything else — small arrays
(below KERNEL_MIN_SIZE, so that small problems never import Numba or load its
cache), other dtypes, broadcasting operands, Numba disabled or not yet loaded
(tiering: autodiff/kernels/_numba.py) — runs the NumPy formula.
"""

from __future__ import annotations

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)

from autodiff.core import buffers
from autodiff.core.dtypes import in_float32, is_bfloat16
from autodiff.kernels._numba import kernels_ready, njit_lazy

# The kernels beat NumPy from about 4K (float64) / 8K (float32) elements, but loading Numba
# costs ~0.5 s even with a warm cache: smaller arrays neither run them nor count towards
# tiering up (kernels_ready), so that small problems never load Numba.
KERNEL_MIN_SIZE = 1 << 16
_KERNEL_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64)))
# What a kernel saves against the in-place NumPy formula (benchmarks/bench_kernels.py:
# ~1.4 ms against ~2.5 ms on 2**21 float64 values), for tiering (kernels_ready).
_NS_SAVED_PER_ELEMENT = 0.5
_IN_PLACE_MIN_SIZE = 1 << 12


def tanh_backward(g, y, into=None):
    """`g * (1 - y*y)`: the derivative of tanh at output `y`, applied to `g`. With `into`
    (an array that may be overwritten, of the result's shape and dtype: a donated `g`), the
    result is written there.

    Example:
        >>> tanh_backward(np.array([2.0, 2.0]), np.array([0.0, 0.5]))
        array([2. , 1.5])
    """
    return _fused(_tanh_backward_loop, _tanh_backward_scalar_loop, tanh_backward_numpy, g, y, into)


def tanh_backward_numpy(g, y, into=None):
    """`tanh_backward` in NumPy (one new array when `g` fits `y`'s shape and dtype)."""
    if not _fits(g, y):
        return g * (1 - y * y)
    out = _empty_like(y)
    np.multiply(y, y, out=out)  # the same operations in the same order: bitwise the same
    np.subtract(1, out, out=out)
    if into is None:
        return np.multiply(g, out, out=out)
    np.multiply(g, out, out=into)
    buffers.give(out)
    return into


def log1p_backward(g, x, into=None):
    """`g / (1 + x)`: the derivative of log1p at `x`, applied to `g` (`into`: as in
    `tanh_backward`).

    Example:
        >>> log1p_backward(np.array([2.0, 2.0]), np.array([0.0, 3.0]))
        array([2. , 0.5])
    """
    return _fused(
        _log1p_backward_loop, _log1p_backward_scalar_loop, log1p_backward_numpy, g, x, into
    )


def log1p_backward_numpy(g, x, into=None):
    """`log1p_backward` in NumPy (one new array when `g` fits `x`'s shape and dtype)."""
    if not _fits(g, x):
        return g / (1 + x)
    out = np.add(1, x, out=_empty_like(x))
    if into is None:
        return np.divide(g, out, out=out)
    np.divide(g, out, out=into)
    buffers.give(out)
    return into


def _empty_like(a):
    """An array of `a`'s shape, dtype and layout, from recycled memory (core/buffers.py) when
    `a` is C-contiguous."""
    return buffers.empty(a.shape, a.dtype) if a.flags.c_contiguous else np.empty_like(a)


def _fits(g, a) -> bool:
    """Can `a`-shaped temporaries of `a`'s dtype hold the result of `g` combined with `a`?
    (Large arrays only: below that, temporaries are cheap and the plain formula is faster.)"""
    return (
        type(a) is ndarray
        and a.size >= _IN_PLACE_MIN_SIZE
        and type(g) is ndarray
        and g.dtype == a.dtype
        and g.shape == a.shape
    )


def _fused(loop, scalar_loop, numpy_impl, g, a, into=None):
    """Run `loop(out, g, a, one)` (or `scalar_loop` for a broadcast scalar `g`) where it pays;
    `out` is `into` when given. bfloat16 computes in float32, rounded once (torch's fused
    backward kernels: `1 - y*y` rounded after each step would lose the bits that cancel)."""
    if is_bfloat16(a.dtype if type(a) is ndarray else np.float64):
        return in_float32(numpy_impl)(g, a, None)
    if (
        type(a) is not ndarray
        or a.size < KERNEL_MIN_SIZE
        or type(g) is not ndarray
        or g.shape != a.shape
        or g.dtype != a.dtype
        or a.dtype not in _KERNEL_DTYPES
        or not kernels_ready(a.size, _NS_SAVED_PER_ELEMENT)
    ):
        return numpy_impl(g, a, into)
    return fused_numba(loop, scalar_loop, g, a, into)


def fused_numba(loop, scalar_loop, g, a, into=None):
    """The Numba path of `_fused`, for arrays `g` and `a` of one shape and float dtype."""
    if into is not None and not into.flags.c_contiguous:
        into = None
    if a.flags.f_contiguous and not a.flags.c_contiguous:  # transposes are C-contiguous
        return fused_numba(loop, scalar_loop, g.T, a.T).T
    out = np.empty(a.shape, a.dtype) if into is None else into
    one = a.dtype.type(1)
    flat_a = np.ascontiguousarray(a).reshape(-1)
    if not any(g.strides):  # every element is the same one: a broadcast scalar
        scalar_loop(out.reshape(-1), g[(0,) * g.ndim], flat_a, one)
    else:
        loop(out.reshape(-1), np.ascontiguousarray(g).reshape(-1), flat_a, one)
    return out


# error_model="numpy": division by zero gives inf/nan as in NumPy, instead of raising.


@njit_lazy(error_model="numpy")
def _tanh_backward_loop(out, g, y, one):
    for i in range(out.shape[0]):
        out[i] = g[i] * (one - y[i] * y[i])


@njit_lazy(error_model="numpy")
def _tanh_backward_scalar_loop(out, g, y, one):
    for i in range(out.shape[0]):
        out[i] = g * (one - y[i] * y[i])


@njit_lazy(error_model="numpy")
def _log1p_backward_loop(out, g, x, one):
    for i in range(out.shape[0]):
        out[i] = g[i] / (one + x[i])


@njit_lazy(error_model="numpy")
def _log1p_backward_scalar_loop(out, g, x, one):
    for i in range(out.shape[0]):
        out[i] = g / (one + x[i])
