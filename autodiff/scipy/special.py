"""autodiff.scipy.special: `scipy.special`'s names and semantics, differentiable and batchable.

erf, erfc, erfinv, ndtr, log_ndtr, ndtri, gamma, gammaln, digamma (psi), polygamma, beta,
betaln, expit, logit, xlogy, xlog1py, entr, logsumexp, softmax, log_softmax, gammainc,
gammaincc, betainc, zeta, multigammaln, i0, i0e, i1, i1e. Implemented in
`autodiff.ops.special` and `autodiff.ops.special_integrals` with NumPy, plus Numba-compiled
scalar kernels for the functions NumPy lacks (`autodiff.kernels.special`; SciPy is not
needed). Values match SciPy's to about 1e-15 in float64; float32 (and float16) inputs keep
their dtype. SciPy's own ufuncs called on traced values or Tensors (`scipy.special.expit(t)`)
run these. Derivatives not implemented (betainc in a and b, zeta in its exponent, gammainc's
second derivative in a) raise.
"""

from autodiff.ops import special as _special
from autodiff.ops import special_integrals as _special_integrals

FUNCTIONS: dict = {**_special.FUNCTIONS, **_special_integrals.FUNCTIONS}
globals().update(FUNCTIONS)

__all__ = sorted(FUNCTIONS)
