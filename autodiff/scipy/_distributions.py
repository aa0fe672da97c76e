"""`scipy.stats`' gamma-family distributions: chi2, gamma, beta, t, poisson and dirichlet,
with SciPy's method names and formulas (its `_logpdf` and its cdfs through the incomplete
gamma and beta functions), differentiable in every argument the special functions are.

As `norm`: no frozen distributions, no sampling, parameters not validated (a parameter
outside its domain gives nan, as in JAX); values outside the support give SciPy's
0 density (-inf log density) and 0 or 1 cdf.
"""

from __future__ import annotations

import math

import numpy as np

from autodiff.ops.elementwise import FUNCTIONS as ELEMENTWISE
from autodiff.ops.elementwise import where
from autodiff.ops.reduce import sum as _sum
from autodiff.ops.special import FUNCTIONS as SPECIAL
from autodiff.ops.special import _as_float
from autodiff.ops.special_integrals import betainc as _betainc
from autodiff.ops.special_integrals import gammainc as _gammainc
from autodiff.ops.special_integrals import gammaincc as _gammaincc

_exp, _log, _log1p, _floor = (ELEMENTWISE[n] for n in ("exp", "log", "log1p", "floor"))
_gammaln, _betaln, _xlogy, _xlog1py = (
    SPECIAL[n] for n in ("gammaln", "betaln", "xlogy", "xlog1py")
)


def _scaled(x, loc, scale):
    return (_as_float(x) - loc) / scale


def _log_scale(scale):
    return math.log(scale) if type(scale) in (int, float) else _log(scale)


class _Continuous:
    """The methods every continuous distribution derives from its `_logpdf` and `_cdf`
    (of the standardized variable): SciPy's signature, the `numargs` shape parameters then
    `loc` and `scale` (positional or by name)."""

    numargs = 1

    def _split(self, args, kwargs):
        shapes, rest = args[: self.numargs], list(args[self.numargs :])
        loc = kwargs.pop("loc", rest.pop(0) if rest else 0)
        scale = kwargs.pop("scale", rest.pop(0) if rest else 1)
        if rest or kwargs or len(shapes) != self.numargs:
            raise TypeError(
                f"{type(self).__name__[1:].lower()} takes {self.numargs} shape parameter(s), "
                "then loc and scale"
            )
        return shapes, loc, scale

    def logpdf(self, x, *args, **kwargs):
        """The log density at `x` (shape parameters, then `loc` and `scale`)."""
        shapes, loc, scale = self._split(args, kwargs)
        return self._logpdf(_scaled(x, loc, scale), *shapes) - _log_scale(scale)

    def pdf(self, x, *args, **kwargs):
        """The density at `x`."""
        return _exp(self.logpdf(x, *args, **kwargs))

    def cdf(self, x, *args, **kwargs):
        """The cumulative distribution function at `x`."""
        shapes, loc, scale = self._split(args, kwargs)
        return self._cdf(_scaled(x, loc, scale), *shapes)

    def logcdf(self, x, *args, **kwargs):
        """log of `cdf`."""
        return _log(self.cdf(x, *args, **kwargs))

    def sf(self, x, *args, **kwargs):
        """The survival function, 1 - `cdf`."""
        return 1.0 - self.cdf(x, *args, **kwargs)

    def logsf(self, x, *args, **kwargs):
        """log of `sf`."""
        return _log(self.sf(x, *args, **kwargs))


class _Chi2(_Continuous):
    """`scipy.stats.chi2` with `df` degrees of freedom.

    Example:
        >>> import autodiff as ad
        >>> round(float(chi2.cdf(2.0, 3)), 12), round(float(ad.grad(chi2.cdf)(2.0, 3)), 12)
        (0.427593295529, 0.207553748710)
    """

    def _logpdf(self, y, df):
        half = df / 2.0
        out = _xlogy(half - 1, y) - y / 2.0 - _gammaln(half) - math.log(2) * half
        return where(y < 0, -np.inf, out)

    def _cdf(self, y, df):
        return _gammainc(df / 2.0, where(y < 0, 0.0, y) / 2.0)


class _Gamma(_Continuous):
    """`scipy.stats.gamma` with shape `a`.

    Example:
        >>> round(float(gamma.logpdf(2.0, 3.0)), 12)
        -1.306852819440
    """

    def _logpdf(self, y, a):
        return where(y < 0, -np.inf, _xlogy(a - 1.0, y) - y - _gammaln(a))

    def _cdf(self, y, a):
        return _gammainc(a, where(y < 0, 0.0, y))


class _Beta(_Continuous):
    """`scipy.stats.beta` with shapes `a` and `b`.

    Example:
        >>> round(float(beta.cdf(0.5, 2.0, 3.0)), 12)
        0.6875
    """

    numargs = 2

    def _logpdf(self, y, a, b):
        out = _xlog1py(b - 1.0, -y) + _xlogy(a - 1.0, y) - _betaln(a, b)
        return where((y < 0) | (y > 1), -np.inf, out)

    def _cdf(self, y, a, b):
        return _betainc(a, b, where(y < 0, 0.0, where(y > 1, 1.0, y)))


class _T(_Continuous):
    """`scipy.stats.t`, Student's t with `df` degrees of freedom.

    Example:
        >>> round(float(t.cdf(1.0, 3.0)), 12)
        0.804498890522
    """

    def _logpdf(self, y, df):
        return (
            _gammaln((df + 1) / 2.0)
            - _gammaln(df / 2.0)
            - 0.5 * _log(df * np.pi)
            - (df + 1) / 2.0 * _log1p(y * y / df)
        )

    def _cdf(self, y, df):
        tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + y * y))
        return where(y < 0, tail, 1.0 - tail)


class _Poisson:
    """`scipy.stats.poisson` with mean `mu` (a discrete distribution: `k` are counts).

    Example:
        >>> round(float(poisson.pmf(2, 3.0)), 12)
        0.224041807655
    """

    def logpmf(self, k, mu, loc=0):
        """The log probability of the count `k`."""
        k = _as_float(k) - loc
        out = _xlogy(k, mu) - _gammaln(k + 1) - mu
        return where((k < 0) | (_floor(k) != k), -np.inf, out)

    def pmf(self, k, mu, loc=0):
        """The probability of the count `k`."""
        return _exp(self.logpmf(k, mu, loc))

    def cdf(self, k, mu, loc=0):
        """The probability of at most `k`."""
        k = _floor(_as_float(k) - loc)
        return where(k < 0, 0.0, _gammaincc(where(k < 0, 0.0, k) + 1, mu))

    def logcdf(self, k, mu, loc=0):
        """log of `cdf`."""
        return _log(self.cdf(k, mu, loc))


class _Dirichlet:
    """`scipy.stats.dirichlet` with concentrations `alpha` (x: the K components first).

    Example:
        >>> import numpy as np
        >>> round(float(dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), np.array([1.0, 2.0, 3.0]))), 12)
        1.504077396776
    """

    def logpdf(self, x, alpha):
        """The log density at the point `x` of the simplex (components first)."""
        x, alpha = _as_float(x), _as_float(alpha)
        log_norm = _sum(_gammaln(alpha)) - _gammaln(_sum(alpha))
        terms = _xlogy(alpha - 1, x.T).T if x.ndim > 1 else _xlogy(alpha - 1, x)
        return _sum(terms, axis=0) - log_norm

    def pdf(self, x, alpha):
        """The density at `x`."""
        return _exp(self.logpdf(x, alpha))


chi2 = _Chi2()
gamma = _Gamma()
beta = _Beta()
t = _T()
poisson = _Poisson()
dirichlet = _Dirichlet()

DISTRIBUTIONS = {
    "chi2": chi2,
    "gamma": gamma,
    "beta": beta,
    "t": t,
    "poisson": poisson,
    "dirichlet": dirichlet,
}
