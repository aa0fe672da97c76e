"""JetTrace: each tracer carries a primal and its truncated Taylor series; the jvp fallback.

As ForwardTrace carries one tangent, a JetTracer carries the normalized Taylor coefficients
of orders 1..K of its value along a curve x(t) (x(t) = x0 + x1 t + ... + xK t^K). Primals and
coefficients are values of the levels below, so the `taylor` rules (written with autodiff
ops, next to each primitive's other rules) are seen by every enclosing level: jet nests,
batches, stages and differentiates through the level stack.

A primitive without a taylor rule gets its series from its jvp rule: y' = J(x) x', so the
output's coefficients of orders 1..K are those of the jvp rule's result along the curve, of
orders 0..K-1, divided by their order; the jvp rule's own series comes from a jet of order
K - 1 (a level above this one), whose primitives use their taylor rules or, again, this
fallback (it ends at order 1, a plain jvp).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import bind, dispatch
from autodiff.core.tensor import Tensor
from autodiff.core.trace import Trace, new_trace
from autodiff.ops import elementwise_taylor  # noqa: F401 (installs the elementwise taylor rules)
from autodiff.ops.elementwise import astype
from autodiff.ops.structural import broadcast_to, shape_of


class JetTracer(Tensor):
    """A value on a curve: `_value` is the primal x0, `_series` the list [x1, ..., xK]."""

    __slots__ = ("_series",)

    def __init__(self, value, trace, series: list):
        self._value = value
        self._trace = trace
        self._edge = None
        self._series = series


class JetTrace(Trace):
    """Propagates truncated Taylor series of `order` coefficients through every primitive
    with its taylor rule (or the jvp fallback)."""

    __slots__ = ("order",)

    def __init__(self, level: int, order: int):
        super().__init__(level)
        self.order = order

    def process(self, prim, args, params):
        primals = []
        series = []
        any_series = False
        lower = False  # does any primal belong to a lower trace?
        for a in args:
            if isinstance(a, Tensor) and a._trace is self:
                series.append(a._series)
                any_series = True
                a = a._value
            else:
                series.append(None)
            primals.append(a)
            if isinstance(a, Tensor):
                lower = True
        out = dispatch(prim, primals, params) if lower else prim.impl(*primals, **params)
        if not prim.differentiable or not any_series:
            return out
        primals_t, series_t = tuple(primals), tuple(series)
        if prim.taylor is not None:
            terms = prim.taylor(primals_t, series_t, out=out, **params)
        else:
            terms = jvp_series(prim, primals_t, series_t, out, params, self.order)
        if prim.multiple_results:
            return tuple(self.jet_value(o, t) for o, t in zip(out, terms))
        return self.jet_value(out, terms)

    def jet_value(self, primal, terms):
        """`primal` with its coefficients `terms` at this level (`primal` itself when it has
        no derivative: an integer or boolean value); terms are made of the primal's shape and
        dtype (a rule may return them broadcastable, or None for zeros)."""
        dt = dtype_of(primal)
        if not is_inexact(dt):
            return primal
        shape = shape_of(primal)
        fitted = []
        for t in terms:
            if t is None:
                t = np.zeros(shape, dt)
            if shape_of(t) != shape:
                t = broadcast_to(t, shape)
            if dtype_of(t) != dt:
                t = astype(t, dt)
            fitted.append(t)
        return JetTracer(primal, self, fitted)


def jvp_series(prim, primals: tuple, series: tuple, out, params: dict, order: int) -> list:
    """The output's coefficients of orders 1..`order` from `prim`'s jvp rule (see the module's
    docstring): a jet of order `order - 1` of the rule along the curve, the tangent along it
    being the curve's derivative x'(t) (coefficients (k + 1) x_{k+1})."""
    rule = prim.jvp or prim.rule("taylor")  # (neither rule: the error names the taylor one)
    if order == 1:
        tangents = tuple(None if s is None else s[0] for s in series)
        return _as_terms(prim, _jvp(prim, rule, primals, tangents, out, params), 0, None)
    with new_trace(JetTrace, order - 1) as inner:
        xs = tuple(p if s is None else JetTracer(p, inner, s[:-1]) for p, s in zip(primals, series))
        dxs = tuple(
            None if s is None else JetTracer(s[0], inner, [(k + 1) * s[k] for k in range(1, order)])
            for s in series
        )
        inner_out = None if prim.jvp_computes_primal else bind(prim, *xs, **params)
        derivative = _jvp(prim, rule, xs, dxs, inner_out, params)
    return _as_terms(prim, derivative, order - 1, inner)


def _jvp(prim, rule, primals, tangents, out, params):
    if prim.jvp_computes_primal:
        return rule(primals, tangents, **params)[1]
    return rule(primals, tangents, out=out, **params)


def _as_terms(prim, derivative, order: int, inner) -> list:
    """The output's coefficients from the series of its derivative along the curve (of
    `order` coefficients past the value, at the level `inner`): the order-k coefficient is
    the derivative's order-(k - 1) one over k. A list per output for `multiple_results`."""
    if prim.multiple_results:
        return [_integrated(d, order, inner) for d in derivative]
    return _integrated(derivative, order, inner)


def _integrated(derivative, order: int, inner) -> list:
    if derivative is None:  # (a symbolic zero)
        return [None] * (order + 1)
    if isinstance(derivative, JetTracer) and derivative._trace is inner:
        coefficients = [derivative._value, *derivative._series]
    else:  # (constant along the curve)
        coefficients = [derivative] + [None] * order
    return [c if c is None or k == 0 else c / (k + 1) for k, c in enumerate(coefficients)]
