"""autodiff.numpy.linalg: `numpy.linalg`'s names and semantics, differentiable and batchable.

`numpy.linalg.X` called on a Tensor or tracer dispatches to `FUNCTIONS["X"]`.
"""

from autodiff.ops import decompositions as _decompositions
from autodiff.ops import linalg as _products

LinAlgError = _decompositions.LinAlgError

FUNCTIONS: dict = dict(_decompositions.FUNCTIONS)
FUNCTIONS.update(
    {
        name: _products.FUNCTIONS[name]
        for name in ("matmul", "tensordot", "outer", "vecdot")
        if name in _products.FUNCTIONS
    }
)
globals().update(FUNCTIONS)

__all__ = ["LinAlgError", *sorted(FUNCTIONS)]
