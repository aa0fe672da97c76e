"""Scatter-add (the gradient of indexing): NumPy impls vs the Numba kernel.

Run: python -m benchmarks.bench_scatter
Prints the first-call cost of the kernel (compile, or load from Numba's cache), then
best-of-N milliseconds per case for np.add.at, our NumPy impl and the Numba kernel,
and the end-to-end gradient of x[idx] through autodiff.vjp.
"""

from __future__ import annotations

import time

import numpy as np

from autodiff import vjp
from autodiff.kernels.scatter import scatter_add_rows_numba, scatter_add_rows_numpy


def best_ms(f, repeat: int = 7) -> float:
    f()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def add_at(rows, values, n_rows):
    out = np.zeros((n_rows, values.shape[1]), values.dtype)
    np.add.at(out, rows, values)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    scatter_add_rows_numba(np.zeros(1, np.intp), np.zeros((1, 2)), 1)
    first_ms = 1e3 * (time.perf_counter() - start)
    print(f"kernel first call (float64; Numba import + compile or cache load): {first_ms:.1f} ms")
    print("(the default dispatch uses the kernel for rows longer than 1 only)\n")

    cases = [  # (label, number of indices, rows of the target, row length)
        ("1e6 indices into 1e5 elements", 10**6, 10**5, 1),
        ("1e4 indices into 1e3 elements", 10**4, 10**3, 1),
        ("1e5 rows of 64 into 1e4 rows", 10**5, 10**4, 64),
        ("1e4 rows of 1000 into 100 rows", 10**4, 100, 1000),
        ("1e3 rows of 8 into 100 rows", 10**3, 100, 8),
    ]
    print(f"{'case':34s} {'dtype':10s} {'add.at':>9s} {'numpy':>9s} {'numba':>9s} {'speedup':>8s}")
    for label, n, n_rows, inner in cases:
        for dtype in (np.float64, np.float32, np.complex128):
            rows = rng.integers(0, n_rows, n)
            values = rng.standard_normal((n, inner)).astype(dtype)
            t_at = best_ms(lambda: add_at(rows, values, n_rows))
            t_np = best_ms(lambda: scatter_add_rows_numpy(rows, values, n_rows))
            t_nb = best_ms(lambda: scatter_add_rows_numba(rows, values, n_rows))
            print(
                f"{label:34s} {np.dtype(dtype).name:10s} {t_at:9.3f} {t_np:9.3f} {t_nb:9.3f} "
                f"{t_np / t_nb:7.1f}x"
            )

    print("\nend to end: pullback of x[idx] (autodiff.vjp), default dispatch")
    for label, shape, n in (
        ("x (1e5,), idx 1e6", (10**5,), 10**6),
        ("x (1e4, 64), idx 1e5", (10**4, 64), 10**5),
    ):
        x = rng.standard_normal(shape)
        idx = rng.integers(0, shape[0], n)
        out, pullback = vjp(lambda x: x[idx], x)
        ct = np.ones_like(out)
        print(f"{label:34s} {best_ms(lambda: pullback(ct)):9.3f} ms")


if __name__ == "__main__":
    main()
