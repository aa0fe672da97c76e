"""autodiff.scipy: SciPy's names and semantics (`integrate`, `linalg`, `signal`, `special`,
`stats`), differentiable and batchable.

SciPy itself is not imported: every function is implemented with NumPy (and Numba kernels
for the scalar special functions, compiled on first use).
"""

from autodiff.scipy import integrate, linalg, signal, special, stats
