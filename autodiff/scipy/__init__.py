"""autodiff.scipy: SciPy's names and semantics (`integrate`, `linalg`, `signal`, `special`,
`stats`), differentiable and batchable.

SciPy itself is not imported: every function is implemented with NumPy (and Numba kernels
for the scalar special functions, compiled on first use). `integrate` builds on the
transforms and control flow (a layer above this namespace's others): it loads on first use.
"""

import importlib

from autodiff.scipy import linalg, signal, special, stats


def __getattr__(name: str):
    if name == "integrate":
        return importlib.import_module("autodiff.scipy.integrate")
    raise AttributeError(f"module 'autodiff.scipy' has no attribute '{name}'")
