"""Truncated Taylor series arithmetic for the primitives' `taylor` rules (`jet`, autodiff/taylor/).

A series here is the list of a value's normalized Taylor coefficients `[x0, x1, ..., xK]`
(x(t) = x0 + x1 t + ... + xK t^K). Its coefficients are arrays, Python numbers or tracers of
the levels below jet's, and the arithmetic is Python's operators on them: a rule's work is
seen (differentiated, batched, staged) by every enclosing level. A `taylor` rule gets each
operand's coefficients of orders 1..K (None for a constant) and returns the output's (see
core/primitive.py). Most functions satisfy an ODE y' = u(t) x'(t) whose u is a series known
from x (log: 1/x) or from y itself (exp: y); order by order that gives
k y_k = sum_{j=1..k} j x_j u_{k-j}, each coefficient from the ones below it.
"""

from __future__ import annotations

import itertools

from autodiff.core.primitive import bind


def order_of(series) -> int:
    """The number of coefficients (orders 1..K) of the operands' series (None: a constant)."""
    return next(len(s) for s in series if s is not None)


def full(primal, terms, order: int) -> list:
    """The series `[x0, x1, ..., xK]` of an operand: its primal and terms (zeros when None)."""
    return [primal, *terms] if terms is not None else [primal] + [0.0] * order


def cauchy(a: list, b: list, k: int):
    """The order-`k` coefficient of the product of the series `a` and `b`."""
    total = a[0] * b[k]
    for i in range(1, k + 1):
        total = total + a[i] * b[k - i]
    return total


def product(a: list, b: list) -> list:
    """The series of the product of `a` and `b` (of one length)."""
    return [cauchy(a, b, k) for k in range(len(a))]


def quotient(x: list, y: list, z0) -> list:
    """The series of `x / y` (z y = x, order by order), given its value `z0`."""
    z = [z0]
    for k in range(1, len(x)):
        total = x[k]
        for j in range(1, k + 1):
            total = total - y[j] * z[k - j]
        z.append(total / y[0])
    return z


def inverse(x: list, z0) -> list:
    """The series of `1 / x`, given its value `z0`."""
    return quotient([1.0] + [0.0] * (len(x) - 1), x, z0)


def integrate(y0, x: list, u: list) -> list:
    """The series of y with y' = u x' and y(0) = `y0` (u's coefficients to order K - 1)."""
    return solve_ode(y0, x, lambda y, m: u[m])


def solve_ode(y0, x: list, u_of) -> list:
    """The series of y with y' = u x' and y(0) = `y0`, where `u_of(y, m)`, u's order-`m`
    coefficient, reads y's coefficients up to order `m` only (exp: y_m)."""
    y = [y0]
    u: list = []
    for k in range(1, len(x)):
        u.append(u_of(y, k - 1))
        total = x[1] * u[k - 1]
        for j in range(2, k + 1):
            total = total + (j * x[j]) * u[k - j]
        y.append(total / k)
    return y


def power(x: list, p, y0) -> list:
    """The series of `x ** p` for a constant exponent `p`, given its value `y0` (x0 != 0):
    from x y' = p y x', k x0 y_k = sum_{j=1..k} (p j - (k - j)) x_j y_{k-j}."""
    y = [y0]
    for k in range(1, len(x)):
        total = (p * k) * x[k] * y[0]
        for j in range(1, k):
            total = total + (p * j - (k - j)) * x[j] * y[k - j]
        y.append(total / (k * x[0]))
    return y


def natural_power(x: list, n: int) -> list:
    """The series of `x ** n` for a natural number `n`, by repeated squaring (exact where x0
    is 0, unlike `power`)."""
    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else product(result, base)
        n >>= 1
        if n:
            base = product(base, base)
    if result is None:  # (x ** 0: the constant 1)
        return [x[0] * 0.0 + 1.0] + [x[k] * 0.0 for k in range(1, len(x))]
    return result


def square_root(x: list, y0) -> list:
    """The series of `sqrt(x)`, given its value `y0` (y y = x, order by order)."""
    y = [y0]
    for k in range(1, len(x)):
        total = x[k]
        for j in range(1, k):
            total = total - y[j] * y[k - j]
        y.append(total / (2.0 * y0))
    return y


def sine_cosine(x: list, s0, c0, sign: float) -> tuple:
    """The series of s and c with s' = c x' and c' = sign * s x' (sin and cos: sign -1; sinh
    and cosh: +1), given their values."""
    s, c = [s0], [c0]
    for k in range(1, len(x)):
        ds, dc = x[1] * c[k - 1], x[1] * s[k - 1]
        for j in range(2, k + 1):
            ds = ds + (j * x[j]) * c[k - j]
            dc = dc + (j * x[j]) * s[k - j]
        s.append(ds / k)
        c.append(dc * (sign / k))
    return s, c


def unary_rule(series_of):
    """The taylor rule of a unary primitive from `series_of(x, out)`: the output's series from
    the operand's (both full, `[x0, ..., xK]`)."""

    def rule(primals, series, *, out):
        return series_of([primals[0], *series[0]], out)[1:]

    return rule


def linear_rule(prim):
    """The taylor rule of a primitive linear in its inexact operands (reshape, sum,
    concatenate, ...): each coefficient goes through its jvp rule, which for such a primitive
    is the primitive itself (constants' coefficients are zeros, None to the rule)."""

    def rule(primals, series, *, out, **params):
        terms = [
            prim.jvp(primals, tuple(None if s is None else s[k] for s in series), out=out, **params)
            for k in range(order_of(series))
        ]
        if prim.multiple_results:
            return [list(t) for t in zip(*terms)]
        return terms

    return rule


def multilinear_rule(prim):
    """The taylor rule of a primitive linear in each operand apart (multiply, matmul, einsum):
    the order-k coefficient is the sum of its application to the operands' coefficients whose
    orders add up to k (a Cauchy product; a constant has order 0 only)."""

    def rule(primals, series, *, out, **params):
        order = order_of(series)
        fulls = [full(p, s, order) for p, s in zip(primals, series)]
        ranges = [range(order + 1) if s is not None else range(1) for s in series]
        terms: list = [None] * order
        for orders in itertools.product(*ranges):
            k = sum(orders)
            if 0 < k <= order:
                value = bind(prim, *(f[i] for f, i in zip(fulls, orders)), **params)
                terms[k - 1] = value if terms[k - 1] is None else terms[k - 1] + value
        return terms

    return rule
