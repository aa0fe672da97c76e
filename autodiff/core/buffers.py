"""Recycled large arrays: reverse mode's cache of the memory it allocates call after call.

A gradient over large arrays allocates the same arrays on every call: the forward pass's
outputs (residuals, temporaries) and the backward pass's cotangents. Memory of that size
comes fresh from the OS (glibc maps it, or trims its heap once large blocks are freed at
its top), and the OS then faults in and zeroes every page of it; on a virtual machine that
costs as much as a few passes of arithmetic over the array (benchmarks/README.md, the
`elementwise` row). So the backward pass hands the arrays it releases, when it is their
only holder (a count of references tells, as for donated cotangents), to a per-thread
pool; the next recorded elementwise op of that shape and dtype writes into one of them
(`ufunc_into`), and so do the sums of cotangents (reverse/accumulate.py).

The pool holds arrays of at least POOL_MIN_BYTES, at most POOL_MAX_BYTES in all per
thread: what one large gradient released, for the next. `clear()` empties it.
"""

from __future__ import annotations

import sys
import threading
import weakref

import numpy as np

# (numpy's module-level __getattr__ keeps CPython from specializing `np.name` loads: the calls
# made once per recorded op or backward node use these names.)
from numpy import broadcast_shapes as _broadcast_shapes
from numpy import empty as _empty
from numpy import matmul as _matmul
from numpy import ndarray

# Smaller arrays come from malloc's own free lists: no pages to fault in. (glibc maps blocks
# from 128 KiB on afresh, at first, and gives freed memory at the top of its heap back.)
POOL_MIN_BYTES = 1 << 17
POOL_MAX_BYTES = 1 << 30
# The largest array a trace keeps alive until its end to recycle it (`spare`).
SPARE_MAX_BYTES = 1 << 22
# Where CPython keeps exact reference counts (3.14 may leave stack references uncounted).
EXACT_REFCOUNTS = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
_NUMBERS = (float, int)


class _Pool(threading.local):
    def __init__(self):
        self.free: dict = {}  # (shape, dtype) -> [arrays]
        self.nbytes = 0


_pool = _Pool()


def take(shape: tuple, dtype) -> np.ndarray | None:
    """A pooled C-contiguous array of `shape` and `dtype` (its contents arbitrary), or None."""
    stack = _pool.free.get((shape, dtype))
    if not stack:
        return None
    a = stack.pop()
    _pool.nbytes -= a.nbytes
    return a


def give(a: np.ndarray) -> None:
    """Pool `a`, which the caller guarantees nothing else refers to (see `give_if_unshared`),
    if it is large, C-contiguous and there is room."""
    nbytes = a.nbytes
    if (
        nbytes < POOL_MIN_BYTES
        or _pool.nbytes + nbytes > POOL_MAX_BYTES
        or not a.flags.c_contiguous
        or a.base is not None
    ):
        return
    _pool.free.setdefault((a.shape, a.dtype), []).append(a)
    _pool.nbytes += nbytes


def unshared(a: np.ndarray, refs: int) -> bool:
    """Is the array `a` writable, owning its memory, and are `refs` references (the caller's,
    counted by the caller, its argument included) all there are? Then its memory may be
    reused (donated cotangents, recycled arrays)."""
    return (
        EXACT_REFCOUNTS
        and a.base is None
        and sys.getrefcount(a) == refs + 2  # (+ this function's argument, getrefcount's own)
        and a.flags.writeable
        and not weakref.getweakrefcount(a)  # (nobody watches it either)
    )


def give_if_unshared(a, refs: int) -> None:
    """Pool `a` if it is a large array and `refs` references (the caller's, counted by the
    caller) plus this function's argument are all there are."""
    if type(a) is ndarray and a.nbytes >= POOL_MIN_BYTES and unshared(a, refs + 1):
        give(a)


def release_node(node) -> None:
    """Drop a node's residuals (its `primals` and `out`), pooling those it alone held."""
    out, primals = node.out, node.primals
    node.out = node.primals = None
    give_if_unshared(out, 1)  # (`out`)
    out = None
    # (Only from a tuple nothing else holds: each of its arrays then counts one reference
    # from it, whoever else held the tuple.)
    if primals is not None and sys.getrefcount(primals) == 2:
        for p in primals:
            give_if_unshared(p, 2)  # (the tuple, `p`)
        p = None


def ufunc_into(ufunc, args: tuple):
    """`ufunc(*args)`, written into a pooled array when there is one of the result's shape and
    dtype: `args` are arrays of one float dtype, or Python numbers (which keep the array's
    dtype, NEP 50), the first or second an array. Arrays of two or more dimensions must
    also be C-contiguous or broadcast scalars, and arrays of another shape than the first
    C-contiguous: NumPy's result would be C-contiguous too (the layout, and so a later
    reduction's order of summation, is the same)."""
    first = args[0]
    if type(first) in _NUMBERS:  # (`2 * x`: the array's shape and dtype)
        first = args[1]
    dtype = first.dtype
    if dtype.kind == "f" and first.shape and _pool.free and first.nbytes >= POOL_MIN_BYTES:
        shape = _result_shape(args, first)
        out = None if shape is None else take(shape, dtype)
        if out is not None:
            return ufunc(*args, out=out)
    return ufunc(*args)


def _result_shape(args: tuple, first: np.ndarray) -> tuple | None:
    """The shape of a ufunc's result on `args` (see `ufunc_into`), or None when they do not
    qualify for a pooled result (or NumPy would raise its own error)."""
    shape, dtype = first.shape, first.dtype
    for a in args:
        if type(a) in _NUMBERS:
            continue
        if not (type(a) is ndarray and a.dtype == dtype):
            return None
        if a.shape == shape:
            if not (len(shape) == 1 or a.flags.c_contiguous or not any(a.strides)):
                return None
        elif a.flags.c_contiguous and first.flags.c_contiguous:  # (broadcasting)
            try:
                shape = _broadcast_shapes(shape, a.shape)
            except ValueError:
                return None
        else:
            return None
    return shape


def matmul_into(a, b):
    """`np.matmul(a, b)`, written into a pooled array when `a` and `b` are matrices of one float
    dtype (NumPy's result is then a new C-contiguous matrix, as the pooled one is)."""
    if (
        _pool.free
        and type(a) is ndarray
        and type(b) is ndarray
        and a.ndim == 2
        and b.ndim == 2
        and a.dtype == b.dtype
        and a.dtype.kind == "f"
        and a.shape[1] == b.shape[0]
    ):
        out = take((a.shape[0], b.shape[1]), a.dtype)
        if out is not None:
            return _matmul(a, b, out=out)
    return _matmul(a, b)


def spare(spares: list, a) -> None:
    """Note in `spares` (a trace's) an array no node of the trace keeps, to be recycled when
    the trace ends if nothing holds it then (`give_spares`). Only medium-sized arrays: a
    noted array lives until then, and those are the ones malloc would map afresh each call."""
    if type(a) is ndarray and POOL_MIN_BYTES <= a.nbytes <= SPARE_MAX_BYTES:
        spares.append(a)


def give_spares(spares: list) -> None:
    """Pool the arrays noted in `spares` that nothing else holds; empty the list."""
    unique = {id(a): a for a in spares}
    spares.clear()
    for a in unique.values():
        give_if_unshared(a, 2)  # (`unique`, `a`)
    a = None


def empty(shape: tuple, dtype) -> np.ndarray:
    """`np.empty(shape, dtype)`, from the pool when it has one (for a temporary the caller
    gives back, or a result)."""
    out = take(shape, dtype) if _pool.free else None
    return _empty(shape, dtype) if out is None else out


def clear() -> None:
    """Empty this thread's pool (its memory goes back to the allocator)."""
    _pool.free.clear()
    _pool.nbytes = 0


def pooled_bytes() -> int:
    """How many bytes this thread's pool holds."""
    return _pool.nbytes
