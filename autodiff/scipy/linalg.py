"""autodiff.scipy.linalg: `scipy.linalg`'s names and semantics, differentiable and batchable.

solve_triangular, cholesky (upper by default), cho_factor / cho_solve, solve (with
`assume_a`), inv, det and expm, implemented with NumPy (SciPy is not needed).
"""

from autodiff.ops import decompositions as _decompositions

LinAlgError = _decompositions.LinAlgError

FUNCTIONS: dict = dict(_decompositions.SCIPY_LINALG)
globals().update(FUNCTIONS)

__all__ = ["LinAlgError", *sorted(FUNCTIONS)]
