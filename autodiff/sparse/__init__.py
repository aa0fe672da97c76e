"""Sparse derivatives: sparsity patterns detected on staged graphs (`jacobian_sparsity`,
`hessian_sparsity`), their colorings (`color`), and compressed Jacobians and Hessians
(`sparse_jacfwd`, `sparse_jacrev`, `sparse_jacobian`, `sparse_hessian`).

The coloring builds on the kernels layer only (Numba loops, loaded lazily); detection and the
compressed evaluation build on staging, and are loaded on first use of their names, as SciPy
is: `import autodiff.sparse` stays light.
"""

import importlib

from autodiff.sparse.coloring import Coloring, check_coloring, color

# name -> the module of this package that defines it, imported on first use.
ON_FIRST_USE = {
    "jacobian_sparsity": "detect",
    "hessian_sparsity": "detect",
    "sparse_jacfwd": "jacobians",
    "sparse_jacrev": "jacobians",
    "sparse_jacobian": "jacobians",
    "sparse_hessian": "jacobians",
}


def __getattr__(name: str):
    if name in ON_FIRST_USE:
        return getattr(importlib.import_module(f"autodiff.sparse.{ON_FIRST_USE[name]}"), name)
    raise AttributeError(f"module 'autodiff.sparse' has no attribute '{name}'")


__all__ = ["Coloring", "check_coloring", "color", *ON_FIRST_USE]
