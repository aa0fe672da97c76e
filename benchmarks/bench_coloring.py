"""Coloring of sparsity patterns (autodiff.sparse.color): colors and times per kind and order.

Run: python -m benchmarks.bench_coloring [--reference]
Prints the first call's cost (Numba import and the kernels' compile or cache load), then for
each pattern, kind and order the number of colors and the best-of-N milliseconds of `color`
(normalising the pattern, ordering, coloring, the recovery plan) and of one `decompress`.
`--reference` times the plain-Python loops instead of the Numba kernels.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.sparse as sp

from autodiff.kernels import set_numba_enabled, tier_up
from autodiff.sparse import color
from autodiff.sparse.coloring import ORDERS


def best_ms(f, repeat: int = 5) -> float:
    f()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def brusselator_pattern(n: int, interleaved: bool = True) -> sp.csr_array:
    """The Jacobian pattern of the 2-D Brusselator on an n x n periodic grid: each species'
    5-point Laplacian, the two species coupled pointwise (6 nonzeros per row). Unknowns
    ordered (i, j, species) if `interleaved`, else (species, i, j)."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    points = (i * n + j).ravel()
    neighbours = [points] + [
        (((i + di) % n) * n + (j + dj) % n).ravel() for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1))
    ]
    rows, cols = [], []
    for species in (0, 1):
        for target in neighbours:
            rows.append(_unknown(points, species, n, interleaved))
            cols.append(_unknown(target, species, n, interleaved))
        rows.append(_unknown(points, species, n, interleaved))
        cols.append(_unknown(points, 1 - species, n, interleaved))
    size = 2 * n * n
    data = np.ones(size * 6, bool)
    return sp.csr_array((data, (np.concatenate(rows), np.concatenate(cols))), shape=(size, size))


def _unknown(point: np.ndarray, species: int, n: int, interleaved: bool) -> np.ndarray:
    return 2 * point + species if interleaved else species * n * n + point


def tridiagonal_pattern(n: int) -> sp.csr_array:
    """The Hessian pattern of the chained Rosenbrock function of n variables."""
    ones = np.ones(n)
    band = sp.diags_array([ones[1:], ones, ones[1:]], offsets=[-1, 0, 1], format="csr")
    return band.astype(bool)


def main() -> None:
    reference = "--reference" in sys.argv
    if reference:
        set_numba_enabled(False)
    else:
        start = time.perf_counter()
        tier_up()
        for kind in ("column", "row", "star"):
            for order in ORDERS:
                color(tridiagonal_pattern(8), kind, order)
        first_ms = 1e3 * (time.perf_counter() - start)
        print(
            f"first calls (Numba import + compile or cache load of the kernels): {first_ms:.0f} ms"
        )
    print("engine:", "Python reference" if reference else "Numba kernels", "\n")
    cases = [
        ("brusselator 32x32 (i,j,s)", brusselator_pattern(32), ("column", "row", "star")),
        ("brusselator 32x32 (s,i,j)", brusselator_pattern(32, False), ("column",)),
        ("brusselator 128x128 (i,j,s)", brusselator_pattern(128), ("column", "row", "star")),
        ("tridiagonal 1e4", tridiagonal_pattern(10**4), ("star", "column")),
        ("tridiagonal 1e6", tridiagonal_pattern(10**6), ("star", "column")),
    ]
    header = ("pattern", "kind", "order", "colors", "color ms", "decompress ms")
    print("{:30s} {:7s} {:17s} {:>6s} {:>9s} {:>14s}".format(*header))
    for label, pattern, kinds in cases:
        if reference and pattern.shape[0] > 10**5:
            continue
        for kind in kinds:
            for order in ORDERS:
                coloring = color(pattern, kind, order)
                t_color = best_ms(lambda: color(pattern, kind, order), repeat=3)
                compressed = np.ones(coloring.compressed_shape)
                t_decompress = best_ms(lambda: coloring.decompress(compressed))
                print(
                    f"{label:30s} {kind:7s} {order:17s} {coloring.ncolors:6d} "
                    f"{t_color:9.2f} {t_decompress:14.3f}"
                )


if __name__ == "__main__":
    main()
