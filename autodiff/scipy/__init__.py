"""autodiff.scipy: SciPy's names and semantics (`linalg`), differentiable and batchable.

SciPy itself is not imported: every function is implemented with NumPy.
"""
from autodiff.scipy import linalg  # noqa: F401
