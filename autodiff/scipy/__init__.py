"""autodiff.scipy: SciPy's names and semantics (`integrate`, `linalg`, `optimize`, `signal`,
`special`, `stats`), differentiable and batchable.

SciPy itself is not imported: every function is implemented with NumPy (and Numba kernels
for the scalar special functions, compiled on first use), but for `optimize`, whose solvers
are SciPy's (differentiated implicitly): it loads on first use (`autodiff.scipy.optimize`).
"""

import importlib

from autodiff.scipy import integrate, linalg, signal, special, stats


def __getattr__(name: str):
    if name == "optimize":  # (SciPy, and the transforms it builds on: loaded on first use)
        return importlib.import_module("autodiff.scipy.optimize")
    raise AttributeError(f"module 'autodiff.scipy' has no attribute {name!r}")
