"""autodiff.scipy.special: `scipy.special`'s names and semantics, differentiable and batchable.

Implemented in `autodiff.ops.special` (NumPy, plus Numba-compiled scalar kernels for the
functions NumPy lacks); SciPy is not needed. Values match SciPy's to about 1e-15 in float64;
float32 inputs give float32 results.
"""
from autodiff.ops.special import (
    FUNCTIONS,
    beta,
    betaln,
    digamma,
    entr,
    erf,
    erfc,
    erfinv,
    expit,
    gamma,
    gammaln,
    log_ndtr,
    log_softmax,
    logit,
    logsumexp,
    ndtr,
    ndtri,
    polygamma,
    psi,
    softmax,
    xlog1py,
    xlogy,
)

__all__ = sorted(FUNCTIONS)
