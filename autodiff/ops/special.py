"""Special functions (SciPy's `scipy.special` names): erf family, gamma family, logistic, logsumexp.

The primitives come first, each with its rules side by side; the functions NumPy lacks
(erf, erfc, erfinv, ndtri, log_ndtr, gammaln, gamma, digamma, polygamma) have the scalar
kernels of `autodiff/kernels/special.py` as impls (Numba ufuncs, or `np.vectorize` without
Numba). Then come the functions, composites among them (ndtr, beta, betaln, softmax,
log_softmax), and `FUNCTIONS`, the table that `autodiff.scipy.special` re-exports with
ops/special_integrals.py's (Bessel, incomplete gamma and beta, zeta). Every derivative is
again a function of this module, so all orders work: gammaln' = digamma, digamma' =
polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import result_aval, ufunc_result_dtype
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.kernels import special as kernels
from autodiff.ops import series
from autodiff.ops.elementwise import FUNCTIONS as ELEMENTWISE
from autodiff.ops.elementwise import (
    _binary,
    _unary,
    astype,
    exp,
    log,
    log1p,
    nondiff,
    sign,
    stop_gradient,
    unbroadcast,
    where,
)
from autodiff.ops.reduce import (
    expand_reduced,
    normalize_axes,
    reduce_max_p,
    reduce_sum,
    reduction_abstract_eval,
    weighted_reduction,
)
from autodiff.ops.shape import broadcast_arrays, squeeze
from autodiff.ops.sparsity import elementwise
from autodiff.ops.structural import (
    broadcast_to,
    broadcasting_batch_rule,
    shape_of,
)

# (elementwise.FUNCTIONS has every elementwise function; its module names only those it calls)
isfinite, floor, remainder, absolute, logical_and, logical_xor = (
    ELEMENTWISE[name]
    for name in ("isfinite", "floor", "remainder", "absolute", "logical_and", "logical_xor")
)

_SQRT1_2 = 0.7071067811865476
_SQRT_PI = 1.7724538509055159
_SQRT_2PI = 2.5066282746310002
_TWO_OVER_SQRT_PI = 1.1283791670955126

# ---------------------------------------------------------------------------------------------
# The logistic functions and entr.


def _expit_impl(x):
    if dtype_of(x) == np.bool_:  # (NumPy cannot negate bools) as the kernels: float32
        x = np.asarray(x, np.float32)
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _elementwise_aval(dtype, *avals):
    """abstract_eval's answer: shapes broadcast; the dtype is the impl's (a kernel's, or its
    ufuncs' in turn); weakly typed when every input is and the dtype is theirs."""
    return result_aval(np.broadcast_shapes(*(a.shape for a in avals)), dtype, *avals)


def _expit_abstract_eval(x):
    if x.dtype == np.bool_:
        return _elementwise_aval(np.dtype(np.float32), x)
    return _elementwise_aval(ufunc_result_dtype(np.exp, ufunc_result_dtype(np.negative, x)), x)


expit_p = _unary("expit", _expit_impl, lambda x, out: out * (1.0 - out))
expit_p.abstract_eval = _expit_abstract_eval
# (jet: y' = (y - y^2) x', order by order)
expit_p.taylor = series.unary_rule(
    lambda x, out: series.solve_ode(out, x, lambda y, m: y[m] - series.cauchy(y, y, m))
)


def _logit_impl(x):
    # log(x / (1 - x)) loses precision near 1/2, where log1p(s) - log1p(-s), s = 2x - 1, does not
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        s = 2.0 * (x - 0.5)
        return np.where((x < 0.3) | (x > 0.65), np.log(x / (1.0 - x)), np.log1p(s) - np.log1p(-s))


logit_p = _unary("logit", _logit_impl, lambda x, out: 1.0 / (x * (1.0 - x)))
# (np.asarray first: a Python number becomes its default dtype, then meets weak constants)
logit_p.abstract_eval = lambda x: _elementwise_aval(np.result_type(x.dtype, 0.0), x)


def _entr_impl(x):
    with np.errstate(all="ignore"):
        out = np.negative(x * np.log(x))
    return np.where(x < 0, -np.inf, np.where(x == 0, 0, out))


def _entr_deriv(x, out):
    # -(1 + log x) for x >= 0 (+inf at 0); entr is the constant -inf for x < 0.
    negative = x < 0
    return where(negative, 0.0, -(1.0 + log(where(negative, 1.0, x))))


entr_p = _unary("entr", _entr_impl, _entr_deriv)
entr_p.abstract_eval = lambda x: _elementwise_aval(
    ufunc_result_dtype(np.multiply, x, ufunc_result_dtype(np.log, x)), x
)


# ---------------------------------------------------------------------------------------------
# Unary primitives: impl, derivative d(x, out) (jvp = t * d, vjp = g * d), elementwise batch.


def _kernel_abstract_eval(kernel):
    """The abstract_eval of a primitive whose impl is `kernel` (kernels/special.py)."""
    return lambda *avals: _elementwise_aval(kernel.result_dtype(avals[-1].dtype), *avals)


def _kernel_unary(name: str, kernel, deriv):
    p = _unary(name, kernel, deriv)
    p.abstract_eval = _kernel_abstract_eval(kernel)
    return p


erf_p = _kernel_unary("erf", kernels.erf, lambda x, out: _TWO_OVER_SQRT_PI * exp(-(x * x)))
erfc_p = _kernel_unary("erfc", kernels.erfc, lambda x, out: -_TWO_OVER_SQRT_PI * exp(-(x * x)))


def _erf_taylor(sign: float):
    """The taylor rule of erf (sign 1) and erfc (-1): y' = sign 2/sqrt(pi) exp(-x^2) x'."""

    def derivative(x: list) -> list:
        minus_square = [-v for v in series.product(x, x)]
        gauss = series.solve_ode(exp(minus_square[0]), minus_square, lambda y, m: y[m])
        return [(sign * _TWO_OVER_SQRT_PI) * v for v in gauss]

    return series.unary_rule(lambda x, out: series.integrate(out, x, derivative(x)))


erf_p.taylor = _erf_taylor(1.0)
erfc_p.taylor = _erf_taylor(-1.0)
erfinv_p = _kernel_unary("erfinv", kernels.erfinv, lambda x, out: 0.5 * _SQRT_PI * exp(out * out))
ndtri_p = _kernel_unary("ndtri", kernels.ndtri, lambda x, out: _SQRT_2PI * exp(0.5 * (out * out)))
# (log ndtr)' = pdf / ndtr = exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi): no overflow either way.
log_ndtr_p = _kernel_unary(
    "log_ndtr", kernels.log_ndtr, lambda x, out: exp(-0.5 * (x * x) - out) / _SQRT_2PI
)
gammaln_p = _kernel_unary("gammaln", kernels.gammaln, lambda x, out: digamma(x))
gamma_p = _kernel_unary("gamma", kernels.gamma, lambda x, out: out * digamma(x))
digamma_p = _kernel_unary("digamma", kernels.digamma, lambda x, out: polygamma(1, x))


# ---------------------------------------------------------------------------------------------
# xlogy, xlog1py: 0 where x == 0 (unless y is nan). d/dx is log(y) even there; d/dy = x / y
# is 0 there, and its denominator is guarded so that no nan appears at x = y = 0.


def _xlogy_impl(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y))


def _xlog1py_impl(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0, x * np.log1p(y))


def _xlogy_dy(x, y, out):
    x_zero = x == 0
    return x / where(logical_and(x_zero, y == 0), 1.0, y)


def _xlog1py_dy(x, y, out):
    x_zero = x == 0
    return x / where(logical_and(x_zero, y == -1), 1.0, 1.0 + y)


xlogy_p = _binary("xlogy", _xlogy_impl, lambda x, y, out: log(y), _xlogy_dy)
xlog1py_p = _binary("xlog1py", _xlog1py_impl, lambda x, y, out: log1p(y), _xlog1py_dy)


def _x_times(ufunc):
    """The abstract_eval of x * ufunc(y) (xlogy, xlog1py)."""
    return lambda x, y: _elementwise_aval(
        ufunc_result_dtype(np.multiply, x, ufunc_result_dtype(ufunc, y)), x, y
    )


xlogy_p.abstract_eval = _x_times(np.log)
xlog1py_p.abstract_eval = _x_times(np.log1p)

# ---------------------------------------------------------------------------------------------
# polygamma(n, x): n is a constant (an int or an integer array), differentiable in x.


def _polygamma_jvp(primals, tangents, *, out):
    n, x = primals
    t = tangents[1]
    if t is None:
        return None
    dx = t * polygamma(n + 1, x)
    return broadcast_to(dx, shape_of(out)) if shape_of(dx) != shape_of(out) else dx


def _polygamma_vjp(g, n, x, *, out):
    return None, unbroadcast(g * polygamma(n + 1, x), x)


polygamma_p = Primitive("polygamma")
polygamma_p.impl = kernels.polygamma
polygamma_p.sparsity = elementwise("all")
polygamma_p.abstract_eval = _kernel_abstract_eval(kernels.polygamma)
polygamma_p.jvp = _polygamma_jvp
polygamma_p.vjp = _polygamma_vjp
polygamma_p.batch = broadcasting_batch_rule(polygamma_p)

# ---------------------------------------------------------------------------------------------
# logsumexp over `axes` (normalized, see `reduce.normalize_axes`). Its derivative is the
# softmax exp(a - out): elements at -inf get 0, and so do groups that are all -inf (their
# out is -inf; the shift is dropped there, so no inf - inf appears).


def _logsumexp_impl(a, *, axes, keepdims):
    a = np.asarray(a)
    if not is_inexact(a.dtype):
        a = a.astype(np.float64)
    if a.size == 0:
        shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape))
        out = np.full(shape, -np.inf, a.dtype)
    else:
        # SciPy's formulation: the maxima (ties counted) are kept out of the sum, which then
        # goes through log1p, exact for small remainders.
        a_max = np.max(a, axis=axes, keepdims=True)
        ties = a == a_max
        count = np.sum(ties, axis=axes, keepdims=True, dtype=a.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            rest = np.sum(np.where(ties, 0, np.exp(a - a_max)), axis=axes, keepdims=True)
            out = np.log1p(rest / count) + np.log(count) + a_max
            finite = np.isfinite(out)
            if not finite.all():  # infinities and nans: the direct formula says what they give
                direct = np.log(np.sum(np.exp(a), axis=axes, keepdims=True))
                out = np.where(finite, out, direct)
    if not keepdims:
        out = np.squeeze(out, axes)
    return out[()] if out.ndim == 0 else out


def _softmax_of(a, out, axes, keepdims):
    """exp(a - logsumexp(a)) broadcast over `a`, 0 for groups whose logsumexp is -inf."""
    out = expand_reduced(out, axes, keepdims, shape_of(a))
    return exp(a - where(isfinite(out), out, 0.0))


logsumexp_p = weighted_reduction("logsumexp", _logsumexp_impl, _softmax_of)  # weights: softmax
logsumexp_p.abstract_eval = reduction_abstract_eval(
    lambda dtype: dtype if is_inexact(dtype) else np.dtype(np.float64)
)


# ---------------------------------------------------------------------------------------------
# The functions: SciPy's names and signatures.


def _fn1(p, name: str, doc: str):
    def f(x):
        return bind(p, x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


erf = _fn1(
    erf_p,
    "erf",
    """`scipy.special.erf`, differentiable: erf' = 2/sqrt(pi) exp(-x^2).

    Example:
        >>> import autodiff as ad
        >>> float(erf(0.5)), float(ad.grad(erf)(0.0))  # erf'(0) = 2 / sqrt(pi)
        (0.520499877813, 1.128379167096)
    """,
)
erfc = _fn1(
    erfc_p,
    "erfc",
    """`scipy.special.erfc` (1 - erf, accurate where erf is near 1).

    Example:
        >>> import autodiff as ad
        >>> float(erfc(3.0)), float(ad.grad(erfc)(0.0))  # 1 - erf(3) without cancellation
        (2.20904969986e-05, -1.128379167096)
    """,
)
erfinv = _fn1(
    erfinv_p,
    "erfinv",
    """`scipy.special.erfinv`: the inverse of erf on (-1, 1).

    Example:
        >>> import autodiff as ad
        >>> float(erfinv(erf(0.5))), float(ad.grad(erfinv)(0.0))  # sqrt(pi) / 2
        (0.5, 0.886226925453)
    """,
)
ndtri = _fn1(
    ndtri_p,
    "ndtri",
    """`scipy.special.ndtri`: the inverse of the normal CDF.

    Example:
        >>> import autodiff as ad
        >>> float(ndtri(0.975)), float(ad.grad(ndtri)(0.5))  # sqrt(2 pi)
        (1.959963984540, 2.506628274631)
    """,
)
gamma = _fn1(
    gamma_p,
    "gamma",
    """`scipy.special.gamma`, differentiable: gamma' = gamma digamma.

    Example:
        >>> import autodiff as ad
        >>> float(gamma(5.0)), float(ad.grad(gamma)(1.0))  # 4!, -euler_gamma
        (24.0, -0.577215664902)
    """,
)
digamma = _fn1(
    digamma_p,
    "digamma",
    """`scipy.special.digamma` (psi): the derivative of gammaln.

    Example:
        >>> import autodiff as ad
        >>> float(digamma(1.0)), float(ad.grad(digamma)(1.0))  # -euler_gamma, pi^2 / 6
        (-0.577215664902, 1.644934066848)
    """,
)
psi = digamma
expit = _fn1(
    expit_p,
    "expit",
    """`scipy.special.expit`: the logistic sigmoid 1 / (1 + exp(-x)).

    Example:
        >>> import autodiff as ad
        >>> float(expit(0.0)), float(ad.grad(expit)(0.0))  # expit' = expit (1 - expit)
        (0.5, 0.25)
    """,
)
logit = _fn1(
    logit_p,
    "logit",
    """`scipy.special.logit`: log(p / (1 - p)), the inverse of expit.

    Example:
        >>> import autodiff as ad
        >>> float(logit(expit(2.0))), float(ad.grad(logit)(0.5))  # 1 / (p (1 - p))
        (2.0, 4.0)
    """,
)
entr = _fn1(
    entr_p,
    "entr",
    """`scipy.special.entr`: -x log(x), 0 at 0 and -inf for x < 0.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> np.round(entr(np.array([0.0, 0.5, -1.0])), 4)
        array([0.    , 0.3466,   -inf])
        >>> float(ad.grad(entr)(1.0))  # -log(x) - 1
        -1.0
    """,
)


def gammaln(x):
    """`scipy.special.gammaln`: log|gamma(x)|; its derivative is digamma, to any order.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(gammaln(5.0)), float(ad.grad(gammaln)(1.0))  # log 4!, -euler_gamma
        (3.178053830348, -0.577215664902)
    """
    return bind(gammaln_p, x)


def polygamma(n, x):
    """`scipy.special.polygamma`: the n-th derivative of digamma (n = 0 is digamma itself).

    `n` is a nonnegative integer (or an integer array broadcasting with `x`); the result is
    differentiable in `x`, with polygamma(n, x)' = polygamma(n + 1, x). Unlike SciPy, float32
    `x` gives float32.

    Example:
        >>> float(polygamma(1, 1.0))  # pi^2 / 6
        1.644934066848
    """
    return bind(polygamma_p, n, x)


def log_ndtr(x):
    """`scipy.special.log_ndtr`: log of the normal CDF, accurate far into the left tail.

    Example:
        >>> import autodiff as ad
        >>> round(float(log_ndtr(-40.0)), 9), round(float(ad.grad(log_ndtr)(-40.0)), 9)
        (-804.608442014, 40.024968847)
    """
    return bind(log_ndtr_p, x)


def ndtr(x):
    """`scipy.special.ndtr`: the standard normal CDF, 0.5 erfc(-x / sqrt(2)).

    Example:
        >>> float(ndtr(0.0))
        0.5
    """
    return 0.5 * erfc(_as_float(x) * -_SQRT1_2)


def _typed_numbers(a, b):
    """A Python-number argument next to float32 (or float16) becomes a float32 scalar, so that
    rules evaluate log(y), gammaln(b), ... in float32 rather than float64, as NumPy's weak
    scalars would; next to anything else it stays a number (a constant, no cotangent)."""
    number = (int, float, bool)
    if type(a) in number and type(b) not in number and dtype_of(b) in _SINGLE:
        a = np.float32(a)
    elif type(b) in number and type(a) not in number and dtype_of(a) in _SINGLE:
        b = np.float32(b)
    return a, b


_SINGLE = (np.dtype(np.float32), np.dtype(np.float16))


def xlogy(x, y):
    """`scipy.special.xlogy`: x log(y), and 0 where x == 0 (unless y is nan).

    Where x == 0 the derivative in y is 0 (no nan even at y == 0); the derivative in x is
    log(y) everywhere.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> xlogy(np.array([0.0, 2.0]), np.array([0.0, np.e]))
        array([0., 2.])
        >>> ad.grad(lambda y: xlogy(0.0, y))(0.0)
        np.float64(0.0)
    """
    return bind(xlogy_p, *_typed_numbers(x, y))


def xlog1py(x, y):
    """`scipy.special.xlog1py`: x log1p(y), and 0 where x == 0 (unless y is nan).

    Example:
        >>> import numpy as np
        >>> xlog1py(np.array([0.0, 1.0]), np.array([-1.0, 0.0]))
        array([0., 0.])
    """
    return bind(xlog1py_p, *_typed_numbers(x, y))


def betaln(a, b):
    """`scipy.special.betaln`: log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).

    SciPy switches to an asymptotic expansion when a > 1e6 b (or b > 1e6 a); this sum loses
    relative accuracy there.

    Example:
        >>> float(betaln(1.0, 2.0))  # log(1/2)
        -0.6931471805599453
    """
    a, b = _typed_numbers(a, b)
    dt = np.result_type(dtype_of(a), dtype_of(b))
    if dt == np.float32:  # the sum cancels where betaln is near 0: add in float64, as SciPy
        a, b = astype(a, np.float64), astype(b, np.float64)
        return astype(gammaln(a) + gammaln(b) - gammaln(a + b), np.float32)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def _gamma_is_negative(x):
    """Where gamma(x) < 0 (a constant): on (-1, 0), (-3, -2), ..., where floor(x) is odd."""
    odd = remainder(floor(x), 2.0) == 1.0
    return logical_and(x < 0, odd)


def beta(a, b):
    """`scipy.special.beta`: gamma(a) gamma(b) / gamma(a + b), as sign * exp(betaln(a, b)).

    Example:
        >>> float(beta(2.0, 3.0))  # 1/12
        0.083333333333
    """
    a, b = _typed_numbers(a, b)
    magnitude = exp(betaln(a, b))
    negative = logical_xor(
        logical_xor(_gamma_is_negative(a), _gamma_is_negative(b)), _gamma_is_negative(a + b)
    )
    return where(negative, -magnitude, magnitude)


def _as_float(a):
    """Lists and integer arrays become float64 arrays, as in SciPy; Python numbers become
    Python floats (so that they do not promote float32 operands)."""
    if type(a) in (int, float, bool):
        return float(a)
    if not hasattr(a, "dtype"):
        a = np.asarray(a)
    return a if is_inexact(dtype_of(a)) else astype(a, np.float64)


def _finite_max(a, axes):
    """max over `axes` (kept), 0 where it is not finite: a constant shift for stability."""
    m = bind(reduce_max_p, stop_gradient(a), axes=axes, keepdims=True)
    return where(isfinite(m), m, 0.0)


def _signed_logsumexp(a, b, axes, keepdims):
    """log|sum(b exp(a))| and its sign, as a composite (the b and return_sign cases)."""
    if b is not None:
        a, b = broadcast_arrays(a, b)
        a = where(b == 0, -np.inf, a)  # zero weights drop their terms, even infinite ones
    shift = _finite_max(a, axes)
    terms = exp(a - shift)
    s = reduce_sum(terms if b is None else b * terms, axes, True)
    sgn = sign(s)
    zero = s == 0
    # double where: log's derivative is never evaluated at 0, so an all -inf group has no nan
    out = where(zero, -np.inf, log(absolute(where(zero, 1.0, s)))) + shift
    if not keepdims:
        out, sgn = squeeze(out, axes), squeeze(sgn, axes)
    return out, sgn


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """`scipy.special.logsumexp`: log(sum(b * exp(a))) over `axis`, computed stably.

    Entries at -inf contribute nothing, also to the derivative, and a group that is all -inf
    gives -inf with a zero (not nan) derivative. With `b`, negative weights are allowed:
    `return_sign=True` returns (log|sum|, sign), otherwise negative sums give nan.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(logsumexp(np.array([0.0, np.log(3.0)])))  # log 4
        1.386294361120
        >>> ad.grad(logsumexp)(np.array([0.0, np.log(3.0), -np.inf]))
        array([0.25, 0.75, 0.  ])
    """
    a = _as_float(a)
    if b is not None:
        b = b if hasattr(b, "dtype") else np.asarray(b)
        dtype = np.result_type(dtype_of(a), dtype_of(b))
        a = astype(a, dtype) if dtype_of(a) != dtype else a
    ndim = len(np.broadcast_shapes(shape_of(a), shape_of(b) if b is not None else ()))
    axes = normalize_axes(axis, ndim)
    if b is None and not return_sign:
        return bind(logsumexp_p, a, axes=axes, keepdims=bool(keepdims))
    out, sgn = _signed_logsumexp(a, b, axes, bool(keepdims))
    if return_sign:
        return out, sgn
    return where(sgn < 0, np.nan, out)


def log_softmax(x, axis=None):
    """`scipy.special.log_softmax`: x - logsumexp(x, axis), shifted by the max as SciPy does.

    Example:
        >>> import numpy as np
        >>> log_softmax(np.array([0.0, np.log(3.0)]))
        array([-1.38629436, -0.28768207])
    """
    x = _as_float(x)
    axes = normalize_axes(axis, len(shape_of(x)))
    shifted = x - _finite_max(x, axes)
    return shifted - bind(logsumexp_p, shifted, axes=axes, keepdims=True)


def softmax(x, axis=None):
    """`scipy.special.softmax`: exp(x) / sum(exp(x)) over `axis`.

    Example:
        >>> import numpy as np
        >>> softmax(np.array([0.0, np.log(3.0)]))
        array([0.25, 0.75])
    """
    return exp(log_softmax(x, axis))


def multigammaln(a, d):
    """`scipy.special.multigammaln`: the log of the multivariate gamma function of dimension
    `d` (a positive integer), d(d-1)/4 log(pi) + sum_j gammaln(a - j/2), j = 0..d-1.

    Like SciPy, raises ValueError when a concrete `a` has an element <= (d - 1)/2.

    Example:
        >>> import autodiff as ad
        >>> round(float(multigammaln(3.0, 2)), 12), round(float(ad.grad(multigammaln)(3.0, 2)), 12)
        (1.550194993958, 1.625940975744)
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d!r}")
    try:
        concrete = np.asarray(a, dtype=np.float64)
    except Exception:  # a traced value: no check
        concrete = None
    if concrete is not None and np.any(concrete <= 0.5 * (d - 1)):
        raise ValueError(
            f"multigammaln: condition a ({concrete}) > 0.5 * (d-1) ({0.5 * (d - 1)}) not met"
        )
    total = gammaln(a)
    for j in range(1, d):
        total = total + gammaln(a - 0.5 * j)
    return total + 0.25 * d * (d - 1) * float(np.log(np.pi))


def _gamma_pole(x):
    return (x <= 0.0) & (np.floor(x) == x)


def _rgamma_impl(x):
    x = np.asarray(x, kernels.gamma.result_dtype(dtype_of(x)))
    with np.errstate(all="ignore"):
        g = np.asarray(kernels.gamma(x))
        out = np.where(np.abs(x) < 1e-300, x, 1.0 / g)  # (gamma(x) ~ 1/x overflows there)
        return np.where(_gamma_pole(x) | (x == -np.inf), 0.0, out).astype(x.dtype)[()]


def _rgamma_deriv(x, out):
    # (1/gamma)' = -digamma / gamma, except at the poles -n, where 1/gamma is 0 and its
    # derivative the limit (-1)^n n! = +-gamma(1 - x) (there, only the first derivative is
    # exact)
    pole = logical_and(stop_gradient(floor(x)) == x, x <= 0.0)
    safe = where(pole, 0.5, x)
    factorial = gamma(where(pole, 1.0 - x, 1.0))
    even = remainder(stop_gradient(x), 2.0) == 0.0
    return where(pole, where(even, factorial, -factorial), -out * digamma(safe))


rgamma_p = _unary("rgamma", _rgamma_impl, _rgamma_deriv)
rgamma_p.abstract_eval = _kernel_abstract_eval(kernels.gamma)


def rgamma(x):
    """`scipy.special.rgamma`: 1 / gamma(x), an entire function (0 at the poles of gamma);
    rgamma' = -digamma(x) rgamma(x), and (-1)^n n! at x = -n (the second derivative there is
    not exact).

    Example:
        >>> import autodiff as ad
        >>> float(rgamma(3.0)), float(ad.grad(rgamma)(-2.0))  # 1/2!, and (-1)^2 2!
        (0.5, 2.0)
    """
    return bind(rgamma_p, x)


def _gammasgn_impl(x):
    x = np.asarray(x, kernels.gamma.result_dtype(dtype_of(x)))
    with np.errstate(invalid="ignore"):
        odd = np.remainder(np.floor(-x), 2.0) == 0.0  # gamma < 0 on (-1, 0), (-3, -2), ...
        out = np.where(x > 0.0, 1.0, np.where(odd, -1.0, 1.0))
        out = np.where(x == 0.0, np.copysign(1.0, x), out)
        out = np.where(_gamma_pole(x) & (x != 0.0) | np.isnan(x) | (x == -np.inf), np.nan, out)
    return out.astype(x.dtype)[()]


gammasgn_p = nondiff("gammasgn", _gammasgn_impl)
gammasgn_p.abstract_eval = _kernel_abstract_eval(kernels.gamma)


def gammasgn(x):
    """`scipy.special.gammasgn`: the sign of gamma(x) (nan at its poles), a constant.

    Example:
        >>> float(gammasgn(-0.5)), float(gammasgn(-1.5))
        (-1.0, 1.0)
    """
    return bind(gammasgn_p, x)


def erfcinv(y):
    """`scipy.special.erfcinv`: the inverse of erfc on (0, 2), -ndtri(y / 2) / sqrt(2)
    (accurate in the tail near 0, where erfinv(1 - y) would cancel).

    Example:
        >>> import autodiff as ad
        >>> round(float(erfcinv(0.5)), 12), round(float(erfcinv(1e-300)), 9)
        (0.476936276204, 26.209469961)
    """
    return -ndtri(0.5 * y) * _SQRT1_2


FUNCTIONS = {
    "erf": erf,
    "erfc": erfc,
    "erfinv": erfinv,
    "ndtr": ndtr,
    "log_ndtr": log_ndtr,
    "ndtri": ndtri,
    "gamma": gamma,
    "gammaln": gammaln,
    "digamma": digamma,
    "psi": psi,
    "polygamma": polygamma,
    "beta": beta,
    "betaln": betaln,
    "expit": expit,
    "logit": logit,
    "xlogy": xlogy,
    "xlog1py": xlog1py,
    "entr": entr,
    "logsumexp": logsumexp,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "multigammaln": multigammaln,
    "rgamma": rgamma,
    "gammasgn": gammasgn,
    "erfcinv": erfcinv,
}
