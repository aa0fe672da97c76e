"""The adaptive Dormand-Prince 5(4) integrator behind `odeint`: steps chosen by the embedded
error estimate, values at the requested times by the method's dense output.

It is written once over a pair of loops (`Loops`): with autodiff's structured control flow
(`STRUCTURED`: the step sizes are traced values, so it runs under `jit` and `vmap`, and keeps
only the current state) or with Python loops that read the step decisions from the values
(`PYTHON`: reverse mode then differentiates the computed steps, discretise-then-differentiate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import autodiff.numpy as anp
from autodiff.control import scan, while_loop
from autodiff.ops.elementwise import stop_gradient

# The Dormand-Prince tableau: the stages' nodes and weights, the 5th-order solution's weights,
# the error weights (5th minus 4th order) and the weights of the solution at the step's middle
# (Shampine's dense output), from which the step's quartic interpolant is fitted.
_C = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_E = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)
_MID = (
    6025192743 / 30085553152 / 2,
    0.0,
    51252292925 / 65400821598 / 2,
    -2691868925 / 45128329728 / 2,
    187940372067 / 1594534317056 / 2,
    -1776094331 / 19743644256 / 2,
    11237099 / 235043384 / 2,
)
_SAFETY, _MAX_GROWTH, _MAX_SHRINK = 0.9, 10.0, 0.2


class Options(NamedTuple):
    """The solver's settings: tolerances (arrays of the state's size), the first step (0: chosen
    from the problem), the step bounds (hmax 0: none) and the attempts allowed per interval."""

    rtol: np.ndarray
    atol: np.ndarray
    h0: float
    hmax: float
    hmin: float
    mxstep: int


class Loops(NamedTuple):
    """A `while_loop(cond, body, init)` and a `scan(f, init, xs)` of JAX's signatures."""

    while_loop: Callable
    scan: Callable


def _python_while(cond, body, val):
    while bool(cond(val)):
        val = body(val)
    return val


def _python_scan(f, init, xs):
    carry, ys = init, []
    for i in range(xs[0].shape[0]):
        carry, y = f(carry, tuple(x[i] for x in xs))
        ys.append(y)
    return carry, tuple(anp.stack(list(col)) for col in zip(*ys))


STRUCTURED = Loops(while_loop, lambda f, init, xs: scan(f, init, xs))
PYTHON = Loops(_python_while, _python_scan)


def _combine(y, h, weights, ks):
    """y + h * sum(w * k), skipping the zero weights."""
    total = None
    for w, k in zip(weights, ks):
        if w:
            total = w * k if total is None else total + w * k
    return total * h if y is None else y + total * h


def _step(fun, y, f0, t, h):
    """One Dormand-Prince step of size `h` from (t, y): the 5th-order solution, its slope, the
    error estimate and the seven stage slopes (the last is the slope at the new point)."""
    hy = anp.astype(h, y.dtype)
    ks = [f0]
    for c, row in zip(_C, _A):
        ks.append(fun(_combine(y, hy, row, ks), t + c * h))
    y1 = _combine(y, hy, _B, ks)
    return y1, ks[-1], _combine(None, hy, _E, ks), ks


def _rms(x):
    return anp.sqrt(anp.mean(x * x))


def _error_ratio(err, y0, y1, opts: Options):
    scale = opts.atol + opts.rtol * anp.maximum(anp.abs(y0), anp.abs(y1))
    return _rms(err / scale)


def _next_step(h, ratio, opts: Options):
    """The step after one whose error ratio is `ratio` (larger after a success, never more than
    ten times; smaller after a failure, at least a fifth), within hmax."""
    shrink = anp.where(ratio < 1.0, 1.0, _MAX_SHRINK)
    factor = anp.minimum(_MAX_GROWTH, anp.maximum(_SAFETY * ratio ** (-1 / 5), shrink))
    factor = anp.where(ratio == 0.0, _MAX_GROWTH, factor)
    h = h * anp.astype(stop_gradient(factor), h.dtype)
    return anp.minimum(h, opts.hmax) if opts.hmax else h


def _initial_step(fun, t0, y0, f0, opts: Options):
    """Hairer, Norsett and Wanner's choice (Solving ODEs I, II.4): a step whose explicit Euler
    error estimate is about the tolerance."""
    scale = opts.atol + opts.rtol * anp.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = anp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / anp.maximum(d1, 1e-300))
    h0 = anp.astype(h0, t0.dtype)
    f1 = fun(y0 + anp.astype(h0, y0.dtype) * f0, t0 + h0)
    d2 = _rms((f1 - f0) / scale) / anp.astype(h0, y0.dtype)
    big = anp.maximum(d1, d2)
    h1 = anp.where(
        big <= 1e-15,
        anp.maximum(1e-6, h0 * 1e-3),
        anp.astype((0.01 / anp.maximum(big, 1e-300)) ** (1 / 5), t0.dtype),
    )
    h = stop_gradient(anp.minimum(100 * h0, anp.astype(h1, t0.dtype)))
    return anp.minimum(h, opts.hmax) if opts.hmax else h


def _interpolant(y0, y1, ks, h):
    """The step's quartic interpolant, as coefficients (highest power first) of the fraction
    of the step: it matches y and the slope at both ends and the dense-output middle value."""
    hy = anp.astype(h, y0.dtype)
    y_mid = _combine(y0, hy, _MID, ks)
    dy0, dy1 = hy * ks[0], hy * ks[-1]
    a = -2 * dy0 + 2 * dy1 - 8 * y0 - 8 * y1 + 16 * y_mid
    b = 5 * dy0 - 3 * dy1 + 18 * y0 + 14 * y1 - 32 * y_mid
    c = -4 * dy0 + dy1 - 11 * y0 - 5 * y1 + 16 * y_mid
    return anp.stack([a, b, c, dy0, y0])


def _polyval(coeffs, s):
    out = coeffs[0]
    for i in range(1, coeffs.shape[0]):
        out = out * s + coeffs[i]
    return out


def _interval(fun, opts: Options, loops: Loops):
    """The scan body: advance to the target time (steps may pass it) and interpolate there."""

    def advance(carry, xs):
        (target,) = xs

        def cond(state):
            i, _, _, t, h = state[:5]
            return (t < target) & (i < opts.mxstep) & (h > 0) & (h >= opts.hmin)

        def body(state):
            i, y, f, t, h, last_t, coeffs, n_steps, n_fe = state
            y1, f1, err, ks = _step(fun, y, f, t, h)
            ratio = _error_ratio(err, y, y1, opts)
            accept = ratio <= 1.0
            new = (y1, f1, t + h, t, _interpolant(y, y1, ks, h))
            old = (y, f, t, last_t, coeffs)
            y, f, t, last_t, coeffs = (anp.where(accept, a, b) for a, b in zip(new, old))
            h = _next_step(h, ratio, opts)
            return (i + 1, y, f, t, h, last_t, coeffs, n_steps + accept, n_fe + 6)

        state = loops.while_loop(cond, body, (anp.zeros((), np.int64), *carry))
        y, _, t, _, last_t, coeffs, n_steps, n_fe = carry = state[1:]
        span = t - last_t
        s = anp.astype((target - last_t) / anp.where(span > 0, span, 1.0), y.dtype)
        out = anp.where(t >= target, _polyval(coeffs, s), np.nan)
        return carry, (out, n_steps, n_fe, span, t)

    return advance


def integrate(fun: Callable, y0, ts, opts: Options, loops: Loops = STRUCTURED):
    """The solution of dy/dt = fun(y, t) (y a 1-d array) at the times `ts` (monotonic, the
    first y0's) and the solver's statistics per interval: (ys, (steps, evaluations, last
    step, time reached)). A time not reached within `mxstep` attempts gives nan."""
    if ts.shape[0] == 1:  # (no interval: the start alone)
        none, no_time = anp.zeros(0, np.int64), anp.zeros(0, ts.dtype)
        return y0[None], (none, none, no_time, no_time)
    direction = anp.astype(anp.where(ts[-1] < ts[0], -1.0, 1.0), ts.dtype)

    def forward(y, tau):  # (in tau = direction * t, which increases)
        return anp.astype(direction, y.dtype) * fun(y, direction * tau)

    taus = direction * ts
    f0 = forward(y0, taus[0])
    if opts.h0:
        h = anp.full((), min(opts.h0, opts.hmax or opts.h0), ts.dtype)
    else:
        h = _initial_step(forward, taus[0], y0, f0, opts)
    coeffs = anp.stack([anp.zeros_like(y0)] * 4 + [y0])  # (the constant y0)
    counts = anp.zeros((), np.int64)
    init = (y0, f0, taus[0], h, taus[0], coeffs, counts, counts + (1 if opts.h0 else 2))
    _, (ys, n_steps, n_fe, spans, reached) = loops.scan(
        _interval(forward, opts, loops), init, (taus[1:],)
    )
    ys = anp.concatenate([y0[None], ys])
    monotonic = anp.all(anp.diff(taus) >= 0)
    ys = anp.where(monotonic, ys, np.nan)
    return ys, (n_steps, n_fe, direction * spans, direction * reached)
