"""Sparse derivatives: coloring of sparsity patterns and the recovery of compressed
Jacobians and Hessians (`color`, `Coloring`, `check_coloring`).

Builds on the kernels layer only (Numba loops, loaded lazily); SciPy is imported on first use.
"""

from autodiff.sparse.coloring import Coloring, check_coloring, color

__all__ = ["Coloring", "check_coloring", "color"]
