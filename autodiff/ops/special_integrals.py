"""Special functions computed by series and continued fractions (SciPy's names): the scaled
modified Bessel functions i0e and i1e (and i0, i1), the regularized incomplete gamma and beta
functions gammainc, gammaincc and betainc, and the zeta functions of Riemann and Hurwitz.

Their impls are the scalar kernels of `autodiff/kernels/special.py`, as the rest of the family's
(ops/special.py, whose `FUNCTIONS` and this module's make `autodiff.scipy.special`).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import Primitive, bind
from autodiff.kernels import special as kernels
from autodiff.ops.elementwise import astype, exp, log, sign, unbroadcast, where
from autodiff.ops.sparsity import elementwise
from autodiff.ops.special import (
    _kernel_abstract_eval,
    _kernel_unary,
    _typed_numbers,
    absolute,
    betaln,
    digamma,
    gammaln,
    xlog1py,
    xlogy,
)
from autodiff.ops.structural import (
    broadcast_to,
    broadcasting_batch_rule,
    shape_of,
    unary_batch_rule,
)

# ---------------------------------------------------------------------------------------------
# Bessel, incomplete gamma and beta, zeta: kernels as impls (kernels/special.py), derivatives
# with this module's functions. Where a derivative is not implemented (betainc in a and b,
# zeta in its exponent, the second derivative of gammainc in a), asking for it raises: a
# silent zero would be a wrong answer.


def _i1e_deriv(x, out):
    # i1e' = i0e - i1e (sign(x) + 1/x), which tends to 1/2 at 0 (as JAX, the limit is used
    # where |x| is below the float's resolution; the double where keeps 1/x finite)
    tiny = absolute(x) <= np.finfo(dtype_of(x)).eps
    safe = where(tiny, 1.0, x)
    return where(tiny, 0.5, i0e(safe) - out * (sign(safe) + 1.0 / safe))


i0e_p = _kernel_unary("i0e", kernels.i0e, lambda x, out: i1e(x) - sign(x) * out)
i1e_p = _kernel_unary("i1e", kernels.i1e, _i1e_deriv)
riemann_zeta_p = Primitive("riemann_zeta")
riemann_zeta_p.impl = kernels.riemann_zeta
riemann_zeta_p.sparsity = elementwise("all")
riemann_zeta_p.abstract_eval = _kernel_abstract_eval(kernels.riemann_zeta)


def _no_derivative(what: str):
    raise NotImplementedError(
        f"autodiff.scipy.special: the derivative of {what} is not implemented (JAX raises "
        "for it too); wrap the argument in stop_gradient if it is meant as a constant"
    )


def _riemann_zeta_jvp(primals, tangents, *, out):
    _no_derivative("zeta(x) (Riemann's, q=None) with respect to x")


def _riemann_zeta_vjp(g, x, *, out):
    _no_derivative("zeta(x) (Riemann's, q=None) with respect to x")


riemann_zeta_p.jvp = _riemann_zeta_jvp
riemann_zeta_p.vjp = _riemann_zeta_vjp
riemann_zeta_p.batch = unary_batch_rule(riemann_zeta_p)


def _partial(name: str, partials, i: int):
    """`partials[i]`, the derivative factor in argument `i`; raises where it is None."""
    if partials[i] is None:
        _no_derivative(f"{name} with respect to argument {i}")
    return partials[i]


def _kernel_primitive(name: str, kernel, partials):
    """An elementwise primitive of several arguments with `kernel` as impl and derivative
    factors `partials[i](*args, out)` (None: not implemented, raises when asked for)."""
    p = Primitive(name)
    p.impl = kernel
    p.abstract_eval = _kernel_abstract_eval(kernel)
    p.sparsity = elementwise("all")

    def jvp(primals, tangents, *, out):
        terms = [
            t * _partial(name, partials, i)(*primals, out)
            for i, t in enumerate(tangents)
            if t is not None
        ]
        if not terms:
            return None
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return broadcast_to(total, shape_of(out)) if shape_of(total) != shape_of(out) else total

    def vjp(g, *primals, out, needs):
        return tuple(
            unbroadcast(g * _partial(name, partials, i)(*primals, out), x) if needs[i] else None
            for i, x in enumerate(primals)
        )

    p.jvp = jvp
    p.vjp = vjp
    p.vjp_takes_needs = True
    p.batch = broadcasting_batch_rule(p)
    return p


def _gamma_density(a, x, out):
    # d gammainc / dx = x^(a-1) e^-x / gamma(a) (0 at x = 0 for a > 1, as its limit)
    return exp(xlogy(a - 1.0, x) - x - gammaln(a))


def _gammainc_da(a, x, out):
    return bind(gammainc_da_p, a, x)


def _gammainc_da_dx(a, x, out):
    # d/dx dP/da = d/da dP/dx = the density times (log x - digamma(a))
    return _gamma_density(a, x, out) * (log(x) - digamma(a))


gammainc_da_p = _kernel_primitive("gammainc_da", kernels.gammainc_da, (None, _gammainc_da_dx))
gammainc_p = _kernel_primitive("gammainc", kernels.gammainc, (_gammainc_da, _gamma_density))
gammaincc_p = _kernel_primitive(
    "gammaincc",
    kernels.gammaincc,
    (lambda a, x, out: -_gammainc_da(a, x, out), lambda a, x, out: -_gamma_density(a, x, out)),
)


def _beta_density(a, b, x, out):
    # d betainc / dx = x^(a-1) (1-x)^(b-1) / B(a, b)
    return exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b))


betainc_p = _kernel_primitive("betainc", kernels.betainc, (None, None, _beta_density))


def _zeta_dq(x, q, out):
    return -x * bind(zeta_p, x + 1.0, q)


zeta_p = _kernel_primitive("zeta", kernels.zeta, (None, _zeta_dq))


def i0e(x):
    """`scipy.special.i0e`: the exponentially scaled modified Bessel function exp(-abs(x)) I0(x);
    i0e' = i1e - sign(x) i0e.

    Example:
        >>> import autodiff as ad
        >>> round(float(i0e(1.0)), 12), round(float(ad.grad(i0e)(1.0)), 12)
        (0.465759607594, -0.257849192244)
    """
    return bind(i0e_p, x)


def i1e(x):
    """`scipy.special.i1e`: exp(-abs(x)) I1(x); i1e' = i0e - i1e (sign(x) + 1/x), 1/2 at 0.

    Example:
        >>> import autodiff as ad
        >>> round(float(i1e(1.0)), 12), float(ad.grad(i1e)(0.0))
        (0.20791041535, 0.5)
    """
    return bind(i1e_p, x)


def i0(x):
    """`scipy.special.i0`: the modified Bessel function I0 = i0e(x) exp(abs(x)).

    Example:
        >>> round(float(i0(1.0)), 12)
        1.266065877752
    """
    return i0e(x) * exp(absolute(x))


def i1(x):
    """`scipy.special.i1`: the modified Bessel function I1 = i1e(x) exp(abs(x)).

    Example:
        >>> round(float(i1(1.0)), 12)
        0.565159103992
    """
    return i1e(x) * exp(absolute(x))


def _promoted(*args):
    """The arguments in one dtype (NumPy's promotion, as SciPy's ufuncs), Python numbers next
    to single-precision arrays as float32 (`_typed_numbers`); the kernels follow the last."""
    args = list(args)
    for i in range(len(args) - 1):
        args[i], args[-1] = _typed_numbers(args[i], args[-1])
    for i in range(len(args) - 1):
        args[i], args[-1] = _typed_numbers(args[i], args[-1])
    number = (int, float, bool)
    typed = [dtype_of(a) for a in args if type(a) not in number]
    if len(typed) < 2:
        return args
    dt = np.result_type(*typed)
    return [a if type(a) in number or dtype_of(a) == dt else astype(a, dt) for a in args]


def gammainc(a, x):
    """`scipy.special.gammainc`: the regularized lower incomplete gamma function P(a, x).

    Differentiable in `x` (the gamma density) and in `a` (computed alongside the value by its
    series or continued fraction); the second derivative in `a` is not implemented (raises).

    Example:
        >>> import autodiff as ad
        >>> round(float(gammainc(2.0, 1.5)), 12), round(float(ad.grad(gammainc, 1)(2.0, 1.5)), 12)
        (0.442174599629, 0.334695240223)
    """
    return bind(gammainc_p, *_promoted(a, x))


def gammaincc(a, x):
    """`scipy.special.gammaincc`: Q(a, x) = 1 - P(a, x), accurate where P is near 1.

    Example:
        >>> import autodiff as ad
        >>> round(float(gammaincc(2.0, 1.5)), 12), round(float(ad.grad(gammaincc, 0)(2.0, 1.5)), 12)
        (0.557825400371, 0.313488637825)
    """
    return bind(gammaincc_p, *_promoted(a, x))


def betainc(a, b, x):
    """`scipy.special.betainc`: the regularized incomplete beta function I_x(a, b).

    Differentiable in `x`; its derivatives in `a` and `b` are not implemented and raise
    (as JAX).

    Example:
        >>> import autodiff as ad
        >>> value, slope = betainc(2.0, 3.0, 0.4), ad.grad(betainc, 2)(2.0, 3.0, 0.4)
        >>> round(float(value), 12), round(float(slope), 12)
        (0.5248, 1.728)
    """
    return bind(betainc_p, *_promoted(a, b, x))


def zeta(x, q=None):
    """`scipy.special.zeta`: the Hurwitz zeta function sum_k (k + q)^-x, or Riemann's (q=None,
    every real x). Differentiable in `q` (d/dq = -x zeta(x + 1, q)); the derivative in `x`
    is not implemented and raises.

    Example:
        >>> import autodiff as ad
        >>> round(float(zeta(2.0)), 12), round(float(ad.grad(zeta, 1)(3.0, 1.5)), 12)
        (1.644934066848, -0.704545517001)
    """
    if q is None:
        return bind(riemann_zeta_p, x)
    return bind(zeta_p, *_promoted(x, q))


FUNCTIONS = {f.__name__: f for f in (i0, i0e, i1, i1e, gammainc, gammaincc, betainc, zeta)}
