"""autodiff.scipy: SciPy's names and semantics (`integrate`, `linalg`, `optimize`, `signal`,
`special`, `stats`), differentiable and batchable.

Importing it imports no SciPy: the functions are written with NumPy and autodiff's ops; the
special functions' values come from SciPy's ufuncs, loaded at their first call
(autodiff/kernels/special.py). `optimize`, whose solvers are SciPy's (differentiated
implicitly), and `integrate`, which builds on the transforms and control flow (a layer
above this namespace's others), load on first use.
"""

import importlib

from autodiff.scipy import linalg, signal, special, stats

# (SciPy's solvers, and the transforms and control flow these build on: loaded on first use)
_ON_FIRST_USE = ("optimize", "integrate")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"autodiff.scipy.{name}")
    raise AttributeError(f"module 'autodiff.scipy' has no attribute {name!r}")
