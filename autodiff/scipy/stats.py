"""autodiff.scipy.stats: `scipy.stats`' normal distributions, differentiable in every argument.

`norm` and `multivariate_normal` are small objects with SciPy's method names and
signatures (no frozen distributions, no sampling). Unlike SciPy, float32 inputs give
float32 results, and parameters are not validated (a scale <= 0 gives nan or garbage
instead of SciPy's nan, as in JAX).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from autodiff.core.tensor import Tensor
from autodiff.numpy._matrices import diagonal
from autodiff.ops.elementwise import FUNCTIONS as ELEMENTWISE
from autodiff.ops.elementwise import where
from autodiff.ops.linalg import cholesky, eigh
from autodiff.ops.reduce import sum as _sum
from autodiff.ops.shape import reshape, squeeze, transpose
from autodiff.ops.special import _as_float, log_ndtr, ndtr, ndtri
from autodiff.ops.structural import shape_of
from autodiff.scipy import _distributions
from autodiff.scipy.linalg import solve_triangular

__all__ = ["norm", "multivariate_normal", "chi2", "gamma", "beta", "t", "poisson", "dirichlet"]

_LOG_SQRT_2PI = 0.9189385332046728
_LOG_2PI = 1.8378770664093453


def _is_number(v, value=None) -> bool:
    return type(v) in (int, float) and (value is None or v == value)


def _log(v):
    """log of a parameter; Python numbers stay Python floats (they must not promote float32)."""
    if _is_number(v):
        return math.log(v) if v > 0 else math.nan
    return ELEMENTWISE["log"](v)


def _standardize(x, loc, scale):
    z = _as_float(x)
    if not _is_number(loc, 0):
        z = z - loc
    if not _is_number(scale, 1):
        z = z / scale
    return z


class _Norm:
    """`scipy.stats.norm`: the normal distribution with mean `loc` and standard deviation `scale`.

    Example:
        >>> import autodiff as ad
        >>> float(norm.logpdf(1.0, loc=1.0, scale=1.0))  # -log(sqrt(2 pi))
        -0.918938533205
        >>> float(ad.grad(norm.logpdf)(2.0))  # -(x - loc) / scale^2
        -2.0
    """

    def logpdf(self, x, loc=0, scale=1):
        """`scipy.stats.norm.logpdf`."""
        z = _standardize(x, loc, scale)
        out = -0.5 * (z * z) - _LOG_SQRT_2PI
        return out if _is_number(scale, 1) else out - _log(scale)

    def pdf(self, x, loc=0, scale=1):
        """`scipy.stats.norm.pdf`."""
        return ELEMENTWISE["exp"](self.logpdf(x, loc, scale))

    def cdf(self, x, loc=0, scale=1):
        """`scipy.stats.norm.cdf`."""
        return ndtr(_standardize(x, loc, scale))

    def logcdf(self, x, loc=0, scale=1):
        """`scipy.stats.norm.logcdf`, accurate far into the left tail."""
        return log_ndtr(_standardize(x, loc, scale))

    def sf(self, x, loc=0, scale=1):
        """`scipy.stats.norm.sf`: 1 - cdf, accurate far into the right tail."""
        return ndtr(-_standardize(x, loc, scale))

    def logsf(self, x, loc=0, scale=1):
        """`scipy.stats.norm.logsf`."""
        return log_ndtr(-_standardize(x, loc, scale))

    def ppf(self, q, loc=0, scale=1):
        """`scipy.stats.norm.ppf`: the inverse of cdf."""
        z = ndtri(q)
        if not _is_number(scale, 1):
            z = z * scale
        return z if _is_number(loc, 0) else z + loc


class _MultivariateNormal:
    """`scipy.stats.multivariate_normal`: densities of a normal distribution in `d` dimensions.

    `cov` is a (d, d) positive definite matrix (factored by Cholesky), a length-d vector of
    variances (a diagonal covariance) or a scalar variance. `x` has shape (..., d); as in
    SciPy, a 1-d `x` is one point when d > 1 and a list of points when d == 1, and
    length-1 axes are squeezed from the result.

    Example:
        >>> import numpy as np
        >>> cov = np.array([[2.0, 0.5], [0.5, 1.0]])
        >>> float(multivariate_normal.logpdf(np.array([0.5, -1.0]), np.zeros(2), cov))
        -2.903399246091
    """

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        """`scipy.stats.multivariate_normal.logpdf`; with `allow_singular`, SciPy's density
        on the support of a singular `cov` (its pseudo-inverse and pseudo-determinant)."""
        cov = _as_float(cov)
        cov_shape = shape_of(cov)
        if mean is not None:
            mean = _as_float(mean)
            dim = shape_of(mean)[-1] if shape_of(mean) else 1
        else:
            dim = cov_shape[0] if cov_shape else 1
        x = _as_float(x)
        if not shape_of(x):
            x = reshape(x, (1,))
        elif len(shape_of(x)) == 1:
            x = reshape(x, (shape_of(x)[0], 1) if dim == 1 else (1, dim))
        dev = x if mean is None else x - mean
        if allow_singular and len(cov_shape) == 2:
            maha, logdet, dim = _pseudo_inverse_terms(dev, cov)
        elif len(cov_shape) == 0:
            maha = _sum(dev * dev, axis=-1) / cov
            logdet = dim * _log(cov)
        elif len(cov_shape) == 1:
            maha = _sum(dev * dev / cov, axis=-1)
            logdet = _sum(_log(cov))
        else:
            maha, logdet = _cholesky_terms(dev, cov)
        out = -0.5 * (maha + (logdet + dim * _LOG_2PI))
        out = squeeze(out)
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        """`scipy.stats.multivariate_normal.pdf`."""
        return ELEMENTWISE["exp"](self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean=None, cov=1):
        """`scipy.stats.multivariate_normal.entropy`: 0.5 log det(2 pi e cov)."""
        cov = _as_float(cov)
        cov_shape = shape_of(cov)
        if len(cov_shape) == 2:
            dim = cov_shape[0]
            logdet = 2.0 * _sum(ELEMENTWISE["log"](diagonal(cholesky(cov))))
        elif len(cov_shape) == 1:
            dim, logdet = cov_shape[0], _sum(_log(cov))
        else:
            dim = shape_of(mean)[-1] if mean is not None and shape_of(mean) else 1
            logdet = dim * _log(cov)
        return 0.5 * (dim * (1.0 + _LOG_2PI) + logdet)


def _pseudo_inverse_terms(dev, cov):
    """(dev^T cov^+ dev, log pseudo-det cov, rank): SciPy's `_PSD` of a possibly singular
    covariance, from its eigendecomposition (eigenvalues below SciPy's cutoff count as 0)."""
    s, u = eigh(cov)
    values = s.primal() if isinstance(s, Tensor) else np.asarray(s)
    cond = {"f": 1e3, "d": 1e6}[np.dtype(values.dtype).char.lower()] * np.finfo(values.dtype).eps
    keep = values > cond * np.max(np.abs(values))
    s_kept = where(keep, s, 1.0)
    logdet = _sum(where(keep, ELEMENTWISE["log"](s_kept), 0.0))
    scaled = u * ELEMENTWISE["sqrt"](where(keep, 1.0 / s_kept, 0.0))
    maha = _sum(ELEMENTWISE["square"](dev @ scaled), axis=-1)
    return maha, logdet, int(keep.sum())


def _cholesky_terms(dev, cov):
    """(dev^T cov^-1 dev over the last axis, log det cov) from cov = L L^T."""
    chol = cholesky(cov)
    lead = shape_of(dev)[:-1]
    points = reshape(dev, (math.prod(lead), shape_of(dev)[-1]))
    z = solve_triangular(chol, transpose(points), lower=True)
    maha = reshape(_sum(z * z, axis=0), lead)
    logdet = 2.0 * _sum(ELEMENTWISE["log"](diagonal(chol)))
    return maha, logdet


norm = _Norm()
multivariate_normal = _MultivariateNormal()
chi2, gamma, beta, t, poisson, dirichlet = (
    _distributions.DISTRIBUTIONS[name]
    for name in ("chi2", "gamma", "beta", "t", "poisson", "dirichlet")
)

# JAX and HIPS autograd make each distribution a module (`import
# jax.scipy.stats.multivariate_normal as mvn`, `from autograd.scipy.stats.norm import logpdf`):
# the same imports find these objects, which carry the modules' function names.
for _name in __all__:
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]
