"""Scatter-add of rows: `out[rows[i], :] += values[i, :]`, duplicates accumulating.

The gradient of indexing (`ops.index.scatter_add`) reduces every index to this form.
NumPy impl: `np.add.at` for single elements (its 1-d fast path is as fast as a
Numba loop), `np.bincount` on flat positions for rows. For rows the Numba loop is
about 5-15x faster (benchmarks/bench_scatter.py); it runs from KERNEL_MIN_SIZE
values up, so that small problems never pay the compile or cache-load cost.
"""

from __future__ import annotations

import numpy as np

from autodiff.kernels._numba import kernels_ready, njit_lazy

KERNEL_MIN_SIZE = 1 << 16
# What the kernel saves against np.bincount per value (~0.3 ns against ~10 ns, rows of 64),
# for tiering (kernels_ready).
_NS_SAVED_PER_ELEMENT = 10.0
_KERNEL_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))


def scatter_add_rows(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """`(n_rows, values.shape[1])` zeros of `values.dtype`, plus `values[i]` at row `rows[i]`.

    Example:
        >>> scatter_add_rows(np.array([0, 2, 0]), np.array([[1.0], [2.0], [3.0]]), 3).ravel()
        array([4., 0., 2.])
    """
    if (
        values.shape[1] > 1
        and values.size >= KERNEL_MIN_SIZE
        and values.dtype in _KERNEL_DTYPES
        and kernels_ready(values.size, _NS_SAVED_PER_ELEMENT)
    ):
        return scatter_add_rows_numba(rows, values, n_rows)
    return scatter_add_rows_numpy(rows, values, n_rows)


def scatter_add_rows_numpy(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """`scatter_add_rows` in NumPy."""
    dtype = values.dtype
    inner = values.shape[1]
    if inner == 1:
        out = np.zeros(n_rows, dtype)
        np.add.at(out, rows, values[:, 0])
        return out.reshape(n_rows, 1)
    flat = (rows[:, None] * inner + np.arange(inner)).ravel()
    size = n_rows * inner
    values = values.ravel()
    if np.iscomplexobj(values):
        out = np.empty(size, dtype)
        out.real = np.bincount(flat, values.real, minlength=size)
        out.imag = np.bincount(flat, values.imag, minlength=size)
    else:
        out = np.bincount(flat, values, minlength=size).astype(dtype, copy=False)
    return out.reshape(n_rows, inner)


@njit_lazy()
def _scatter_add_rows_loop(out, rows, values):
    inner = values.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(inner):
            out[r, j] += values[i, j]


def scatter_add_rows_numba(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """`scatter_add_rows` with the Numba loop (C-contiguous intp rows and values)."""
    out = np.zeros((n_rows, values.shape[1]), values.dtype)
    _scatter_add_rows_loop(out, np.ascontiguousarray(rows, np.intp), np.ascontiguousarray(values))
    return out
