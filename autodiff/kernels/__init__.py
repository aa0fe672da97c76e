"""Numba kernels: pure ndarray functions that are the impls of primitives where a benchmark says so.

Numba is imported lazily, on a kernel's first call (`_numba.njit_lazy`), never at `import autodiff`.
"""
