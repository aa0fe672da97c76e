"""The Taylor rules (jet) of the elementwise primitives (ops/elementwise.py): each output's
series from its operands' (ops/series.py's arithmetic). Each function is an ODE y' = u x'
solved order by order, u from y itself (exp) or from x (log: 1/x). Taylor mode
(autodiff/taylor/) loads this module: the rules are in place before any jet runs.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.primitive import bind_unary
from autodiff.ops import series
from autodiff.ops.elementwise import (
    _LN2,
    _LN10,
    _NUMBER,
    add_p,
    arccos_p,
    arccosh_p,
    arcsin_p,
    arcsinh_p,
    arctan_p,
    arctanh_p,
    astype_p,
    cbrt_p,
    conj_p,
    cos_p,
    cosh_p,
    divide_p,
    exp2_p,
    exp_p,
    expm1_p,
    imag_p,
    log1p_p,
    log2_p,
    log10_p,
    log_p,
    multiply_p,
    negative_p,
    power_p,
    real_p,
    reciprocal_p,
    sin_p,
    sinh_p,
    sqrt_p,
    square_p,
    subtract_p,
    tan_p,
    tanh_p,
    where_p,
)


def _shifted(x: list, c) -> list:
    """The series of `x + c` for a constant `c`."""
    return [x[0] + c, *x[1:]]


def _scaled(x: list, c) -> list:
    return [c * v for v in x]


def _squared(x: list) -> list:
    return series.product(x, x)


def _one_minus_square(x: list) -> list:
    return _shifted(_scaled(_squared(x), -1.0), 1.0)


def _root_of_inverse(w: list) -> list:
    """The series of `1 / sqrt(w)`."""
    return series.power(w, -0.5, bind_unary(reciprocal_p, bind_unary(sqrt_p, w[0])))


def _inverse(w: list) -> list:
    return series.inverse(w, bind_unary(reciprocal_p, w[0]))


def _one_plus(sign: float):
    """u_m of y' = (1 + sign y^2) x' (tan: +1, tanh: -1)."""
    return lambda y, m: (1.0 if m == 0 else 0.0) + sign * series.cauchy(y, y, m)


def _integral_rule(u_of):
    """The taylor rule of a y with y' = u(x) x', `u_of(x)` giving u's series."""
    return series.unary_rule(lambda x, out: series.integrate(out, x, u_of(x)))


def _ode_rule(u_of):
    """The taylor rule of a y with y' = u x', `u_of(y, m)` giving u's order-m coefficient."""
    return series.unary_rule(lambda x, out: series.solve_ode(out, x, u_of))


exp_p.taylor = _ode_rule(lambda y, m: y[m])
exp2_p.taylor = _ode_rule(lambda y, m: y[m] * _LN2)
expm1_p.taylor = _ode_rule(lambda y, m: y[0] + 1.0 if m == 0 else y[m])
log_p.taylor = _integral_rule(_inverse)
log2_p.taylor = _integral_rule(lambda x: _inverse(_scaled(x, _LN2)))
log10_p.taylor = _integral_rule(lambda x: _inverse(_scaled(x, _LN10)))
log1p_p.taylor = _integral_rule(lambda x: _inverse(_shifted(x, 1.0)))
sqrt_p.taylor = series.unary_rule(series.square_root)
cbrt_p.taylor = series.unary_rule(lambda x, out: series.power(x, 1.0 / 3.0, out))
square_p.taylor = series.unary_rule(lambda x, out: _squared(x))
reciprocal_p.taylor = series.unary_rule(series.inverse)
sin_p.taylor = series.unary_rule(
    lambda x, out: series.sine_cosine(x, out, bind_unary(cos_p, x[0]), -1.0)[0]
)
cos_p.taylor = series.unary_rule(
    lambda x, out: series.sine_cosine(x, bind_unary(sin_p, x[0]), out, -1.0)[1]
)
tan_p.taylor = _ode_rule(_one_plus(1.0))
arcsin_p.taylor = _integral_rule(lambda x: _root_of_inverse(_one_minus_square(x)))
arccos_p.taylor = _integral_rule(lambda x: _scaled(_root_of_inverse(_one_minus_square(x)), -1.0))
arctan_p.taylor = _integral_rule(lambda x: _inverse(_shifted(_squared(x), 1.0)))
sinh_p.taylor = series.unary_rule(
    lambda x, out: series.sine_cosine(x, out, bind_unary(cosh_p, x[0]), 1.0)[0]
)
cosh_p.taylor = series.unary_rule(
    lambda x, out: series.sine_cosine(x, bind_unary(sinh_p, x[0]), out, 1.0)[1]
)
tanh_p.taylor = _ode_rule(_one_plus(-1.0))
arcsinh_p.taylor = _integral_rule(lambda x: _root_of_inverse(_shifted(_squared(x), 1.0)))
arccosh_p.taylor = _integral_rule(lambda x: _root_of_inverse(_shifted(_squared(x), -1.0)))
arctanh_p.taylor = _integral_rule(lambda x: _inverse(_one_minus_square(x)))


def _divide_taylor(primals, series_in, *, out):
    (x, y), (sx, sy) = primals, series_in
    if sy is None:
        return [t / y for t in sx]
    order = series.order_of(series_in)
    return series.quotient(series.full(x, sx, order), series.full(y, sy, order), out)[1:]


def _natural(y):
    """`y` as an int when it is a concrete natural number up to 64 (x ** y is then exact at
    x = 0 by products), else None."""
    if type(y) in _NUMBER or isinstance(y, (np.ndarray, np.generic)):
        value = np.asarray(y)
        if value.shape == () and value.dtype.kind in "biuf" and 0 <= value <= 64:
            if float(value) == int(value):
                return int(value)
    return None


def _power_taylor(primals, series_in, *, out):
    (x, y), (sx, sy) = primals, series_in
    order = series.order_of(series_in)
    xs = series.full(x, sx, order)
    if sy is None:
        n = _natural(y)
        if n is not None:
            return series.natural_power(xs, n)[1:]
        return series.power(xs, y, out)[1:]
    # x ** y = exp(y log x)
    log_x = bind_unary(log_p, x)
    log_x = series.integrate(log_x, xs, _inverse(xs)) if sx is not None else [log_x] + [0.0] * order
    exponent = series.product(series.full(y, sy, order), log_x)
    return series.solve_ode(out, exponent, lambda v, m: v[m])[1:]


divide_p.taylor = _divide_taylor
power_p.taylor = _power_taylor
multiply_p.taylor = series.multilinear_rule(multiply_p)
for _p in (negative_p, add_p, subtract_p, where_p, astype_p, real_p, imag_p, conj_p):
    _p.taylor = series.linear_rule(_p)
