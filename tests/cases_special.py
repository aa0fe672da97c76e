"""Op table: autodiff.scipy.special and autodiff.scipy.stats (references: SciPy).

Domains keep central differences valid: erfinv/ndtri/logit inside their open intervals,
gamma-family arguments away from the poles (also between -3 and -2), log_ndtr also far in
the left tail, -inf entries in logsumexp only beside finite ones (an all -inf group has
no finite differences; tests/test_special.py covers it), covariances built symmetric
positive definite inside the function. Where SciPy returns float64 for float32 input
(polygamma, stats), the reference is rounded to float32, the dtype autodiff keeps.
"""

from functools import partial

import numpy as np
from optable import OpCase, arr, pos

import autodiff.scipy.special as sp
import autodiff.scipy.stats as st

try:
    import scipy.special as scipy_special
    import scipy.stats as scipy_stats
except ImportError:  # SciPy is only a reference for values
    scipy_special = scipy_stats = None

CASES = []
SHAPES = [(), (5,), (3, 4)]
PAIRS = [((), ()), ((4,), (4,)), ((3, 4), (4,)), ((3, 1), (1, 4))]


def _ref(name, *, cast=False):
    """SciPy's function `name` (a dotted path), rounded to the inputs' float dtype if `cast`."""
    if scipy_special is None:
        return None
    module, _, attr = name.rpartition(".")
    f = getattr(
        {
            "": scipy_special,
            "norm": scipy_stats.norm,
            "multivariate_normal": scipy_stats.multivariate_normal,
        }[module],
        attr,
    )
    if not cast:
        return f
    return lambda *args: np.asarray(f(*args)).astype(np.result_type(*args))


def _between(low, high):
    return lambda *s: arr(*s, low=low, high=high)


UNARY = {
    "erf": arr,
    "erfc": arr,
    "erfinv": _between(-0.8, 0.8),
    "ndtr": _between(-3.0, 3.0),
    "log_ndtr": _between(-5.0, 3.0),
    "ndtri": _between(0.1, 0.9),
    "gammaln": _between(0.5, 4.0),
    "gamma": _between(0.5, 4.0),
    "digamma": _between(0.5, 4.0),
    "expit": _between(-4.0, 4.0),
    "logit": _between(0.1, 0.85),
    "entr": pos,
}
for name, sample in UNARY.items():
    for shape in SHAPES:
        CASES.append(OpCase(f"{name}{shape}", getattr(sp, name), (sample(*shape),), ref=_ref(name)))

# Between the poles -3 and -2 (gamma > 0 there, digamma changes sign).
_negative = _between(-2.75, -2.25)
for name in ("gammaln", "gamma", "digamma"):
    CASES.append(OpCase(f"{name}_negative", getattr(sp, name), (_negative(5),), ref=_ref(name)))

CASES += [
    # asymptotic-series region (x < -20): values near -600, derivative near 35
    OpCase(
        "log_ndtr_tail",
        sp.log_ndtr,
        (np.array([-35.0, -25.0, -21.0, -12.0]),),
        ref=_ref("log_ndtr"),
    ),
    OpCase("psi", sp.psi, (pos(4),), ref=_ref("psi")),
]
for n in (0, 1, 2, 3):
    CASES.append(
        OpCase(
            f"polygamma{n}",
            lambda x, n=n: sp.polygamma(n, x),
            (pos(3, 4),),
            ref=None
            if scipy_special is None
            else lambda x, n=n: scipy_special.polygamma(n, x).astype(x.dtype),
        )
    )
CASES.append(
    OpCase(
        "polygamma_array_n",
        lambda x: sp.polygamma(np.array([1, 2, 3]), x),
        (pos(2, 3),),
        ref=None
        if scipy_special is None
        else lambda x: scipy_special.polygamma(np.array([1, 2, 3]), x).astype(x.dtype),
    )
)

BINARY = {
    "xlogy": (arr, pos),
    "xlog1py": (arr, _between(-0.5, 2.0)),
    "beta": (pos, pos),
    "betaln": (pos, pos),
}
for name, (sx, sy) in BINARY.items():
    for shx, shy in PAIRS:
        CASES.append(
            OpCase(f"{name}{shx}{shy}", getattr(sp, name), (sx(*shx), sy(*shy)), ref=_ref(name))
        )
CASES += [
    # x == 0 exactly: value 0, d/dx = log(y), d/dy = 0, d2/dxdy = 1/y all hold there
    OpCase("xlogy_zeros", sp.xlogy, (np.array([0.0, 0.5, 0.0, -1.5]), pos(4)), ref=_ref("xlogy")),
    OpCase(
        "xlog1py_zeros", sp.xlog1py, (np.array([0.0, 0.5, 0.0, -1.5]), pos(4)), ref=_ref("xlog1py")
    ),
    OpCase(
        "beta_negative",
        sp.beta,
        (np.array([-0.5, -1.5, 0.5, -2.5]), np.array([1.3, 0.7, -1.7, 3.2])),
        ref=_ref("beta"),
    ),
]

# logsumexp, softmax, log_softmax over several axes.
x34, x234 = arr(3, 4), arr(2, 3, 4)
for kwargs in ({}, {"axis": 0}, {"axis": -1}, {"axis": 1, "keepdims": True}, {"axis": (0, 2)}):
    tag = "".join(f"-{k}{v}" for k, v in kwargs.items())
    x = x234 if kwargs.get("axis") == (0, 2) else x34
    CASES.append(
        OpCase(
            f"logsumexp{tag}",
            lambda a, kw=kwargs: sp.logsumexp(a, **kw),
            (x,),
            ref=None
            if scipy_special is None
            else lambda a, kw=kwargs: scipy_special.logsumexp(a, **kw),
        )
    )
for name in ("softmax", "log_softmax"):
    for axis in (None, 0, -1, (0, 1)):
        CASES.append(
            OpCase(
                f"{name}-axis{axis}",
                partial(getattr(sp, name), axis=axis),
                (x34,),
                ref=None
                if scipy_special is None
                else partial(getattr(scipy_special, name), axis=axis),
            )
        )
CASES += [
    OpCase("logsumexp_scalar", sp.logsumexp, (arr(),), ref=_ref("logsumexp")),
    OpCase(
        "logsumexp_neg_inf",
        lambda a: sp.logsumexp(a, axis=1),
        (np.where(np.arange(12).reshape(3, 4) % 3 == 1, -np.inf, x34),),
        ref=None if scipy_special is None else lambda a: scipy_special.logsumexp(a, axis=1),
    ),
    OpCase(
        "logsumexp_b",
        lambda a, b: sp.logsumexp(a, axis=1, b=b),
        (x34, pos(4)),
        ref=None if scipy_special is None else lambda a, b: scipy_special.logsumexp(a, axis=1, b=b),
    ),
    OpCase(
        "logsumexp_b_broadcast",
        lambda a, b: sp.logsumexp(a, b=b, keepdims=True),
        (arr(4), pos(3, 1)),
        ref=None
        if scipy_special is None
        else lambda a, b: scipy_special.logsumexp(a, b=b, keepdims=True),
    ),
    # mixed-sign weights whose sums stay away from 0
    OpCase(
        "logsumexp_signed",
        lambda a, b: sp.logsumexp(a, axis=0, b=b, return_sign=True),
        (
            np.array([[0.5, 1.0], [-0.3, 0.2], [0.1, 0.4]]),
            np.array([[2.0, -3.0], [-0.5, 0.5], [1.0, -1.0]]),
        ),
        ref=None
        if scipy_special is None
        else lambda a, b: scipy_special.logsumexp(a, axis=0, b=b, return_sign=True),
    ),
]

# scipy.stats: norm with broadcasting loc/scale, multivariate_normal.
# |z| <= 1.7: float32 exp(-z^2 / 2) keeps ~1e-6 relative accuracy
_norm_args = (arr(3, 4), _between(-0.5, 0.5)(4), pos(3, 1, low=1.5, high=3.0))
for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
    CASES.append(
        OpCase(
            f"norm.{method}",
            getattr(st.norm, method),
            _norm_args,
            ref=_ref(f"norm.{method}", cast=True),
        )
    )
    CASES.append(
        OpCase(
            f"norm.{method}_standard",
            getattr(st.norm, method),
            (_between(-1.5, 1.5)(5),),
            ref=_ref(f"norm.{method}", cast=True),
        )
    )
CASES.append(
    OpCase(
        "norm.ppf",
        st.norm.ppf,
        (_between(0.1, 0.9)(5), arr(5), pos(5)),
        ref=_ref("norm.ppf", cast=True),
    )
)


def _spd(a):
    return a @ np.swapaxes(a, -1, -2) + 2.0 * np.eye(np.shape(a)[-1], dtype=a.dtype)


def _mvn_ref(x, mean, cov):
    return np.asarray(scipy_stats.multivariate_normal.logpdf(x, mean, cov)).astype(x.dtype)


CASES += [
    OpCase(
        "multivariate_normal.logpdf_diag",
        st.multivariate_normal.logpdf,
        (arr(5, 3), arr(3), pos(3)),
        ref=None if scipy_stats is None else _mvn_ref,
    ),
    OpCase(
        "multivariate_normal.logpdf_scalar_cov",
        st.multivariate_normal.logpdf,
        (arr(5, 2), arr(2), pos()),
        ref=None if scipy_stats is None else _mvn_ref,
    ),
    OpCase(
        "multivariate_normal.pdf_1d",
        lambda x, m: st.multivariate_normal.pdf(x, m, 1.5),
        (arr(4), arr()),
        ref=None
        if scipy_stats is None
        else lambda x, m: np.asarray(scipy_stats.multivariate_normal.pdf(x, m, 1.5)).astype(
            x.dtype
        ),
    ),
    # full covariance (Cholesky), built symmetric positive definite from any square matrix
    OpCase(
        "multivariate_normal.logpdf",
        lambda x, m, a: st.multivariate_normal.logpdf(x, m, _spd(a)),
        (arr(5, 3), arr(3), arr(3, 3)),
        ref=None if scipy_stats is None else lambda x, m, a: _mvn_ref(x, m, _spd(a)),
    ),
    OpCase(
        "multivariate_normal.logpdf_one_point",
        lambda x, m, a: st.multivariate_normal.logpdf(x, m, _spd(a)),
        (arr(3), arr(3), arr(3, 3)),
        ref=None if scipy_stats is None else lambda x, m, a: _mvn_ref(x, m, _spd(a)),
    ),
]

# Bessel, incomplete gamma and beta, Hurwitz zeta, multigammaln (their own generator, so the
# shared stream and the cases above keep their arguments). Derivatives that are not
# implemented (betainc in a and b, zeta in x, gammainc's second derivative in a) are kept
# out of the differentiated arguments: the closures hold them.
_own = np.random.default_rng(29)


def _in(low, high):
    return lambda *s: arr(*s, low=low, high=high, rng=_own)


for name, sample in (("i0e", _in(-4.0, 4.0)), ("i1e", _in(-4.0, 4.0))):
    for shape in ((), (5,)):
        CASES.append(OpCase(f"{name}{shape}", getattr(sp, name), (sample(*shape),), ref=_ref(name)))
CASES += [
    OpCase("i0", sp.i0, (_in(-3.0, 3.0)(5),), ref=_ref("i0")),
    OpCase("i1", sp.i1, (_in(-3.0, 3.0)(5),), ref=_ref("i1")),
    OpCase(
        "gammainc_x",
        lambda x: sp.gammainc(np.array([0.7, 1.5, 2.5, 4.0]), x),
        (_in(0.3, 5.0)(4),),
        ref=None
        if scipy_special is None
        else lambda x: scipy_special.gammainc([0.7, 1.5, 2.5, 4.0], x),
    ),
    OpCase(
        "gammaincc_x",
        lambda x: sp.gammaincc(1.7, x),
        (_in(0.3, 5.0)(3, 2),),
        ref=None
        if scipy_special is None
        else lambda x: scipy_special.gammaincc(1.7, x).astype(x.dtype),
    ),
    # d/da once (its own derivative in a raises), in both regions of the kernel (x < a + 1
    # and above)
    OpCase(
        "gammainc_a",
        sp.gammainc,
        (_in(0.5, 3.0)(6), np.array([0.2, 1.0, 2.0, 3.5, 6.0, 9.0])),
        ref=_ref("gammainc"),
        order=1,
    ),
    OpCase(
        "gammaincc_a",
        sp.gammaincc,
        (_in(0.5, 3.0)(4), np.array([0.2, 1.0, 3.5, 9.0])),
        ref=_ref("gammaincc"),
        order=1,
    ),
    OpCase(
        "betainc_x",
        lambda x: sp.betainc(np.array([0.6, 2.0, 3.5]), np.array([1.4, 3.0, 0.8]), x),
        (_in(0.05, 0.95)(3),),
        ref=None
        if scipy_special is None
        else lambda x: scipy_special.betainc([0.6, 2.0, 3.5], [1.4, 3.0, 0.8], x),
    ),
    OpCase(
        "zeta_q",
        lambda q: sp.zeta(np.array([2.0, 3.5, 5.0]), q),
        (_in(0.5, 3.0)(3),),
        ref=None if scipy_special is None else lambda q: scipy_special.zeta([2.0, 3.5, 5.0], q),
    ),
    OpCase(
        "multigammaln",
        lambda a: sp.multigammaln(a, 3),
        (_in(1.2, 4.0)(4),),
        ref=None
        if scipy_special is None
        else lambda a: np.asarray(scipy_special.multigammaln(a, 3)).astype(a.dtype),
    ),
]
CASES += [
    OpCase("rgamma", sp.rgamma, (_in(-2.8, 4.0)(6),), ref=_ref("rgamma")),
    OpCase("erfcinv", sp.erfcinv, (_in(0.2, 1.8)(5),), ref=_ref("erfcinv")),
]
