"""Numba kernels: pure ndarray functions that are the impls of primitives where a benchmark says so.

Numba is imported lazily and tiered (`_numba.kernels_ready`): never at `import autodiff`, and
only once the kernels would have saved what loading it costs (`tier_up()` loads it at once).
`fused.py` evaluates a large backward pass's lazy elementwise cotangents in one pass over
memory: NumPy blocks, then a compiled loop per hot expression.
"""

from autodiff.kernels._numba import set_numba_enabled, tier_up, tiered_up

__all__ = ["set_numba_enabled", "tier_up", "tiered_up"]
