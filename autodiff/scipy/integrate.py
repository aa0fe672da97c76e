"""autodiff.scipy.integrate: `odeint`, differentiable in the initial state, the times and
the extra arguments.

Dormand-Prince 5(4) steps, written with autodiff's functions (so the derivatives are those
of the computed solution, to any order). Each interval between requested times is cut into
equal steps, as many as the embedded error estimate asks for (read from the values, so
the number of steps is a constant of the derivative; not under vmap or jit, where values
are unknown). Values agree with SciPy's LSODA to about the tolerances.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.tensor import Tensor
from autodiff.ops import elementwise as _ew
from autodiff.ops import shape as _shape
from autodiff.ops.index import getitem

__all__ = ["odeint"]

# Dormand-Prince: the nodes, the stage weights, the 5th-order solution and the error weights
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_E = (
    71 / 57600,
    0.0,
    -71 / 16695,
    71 / 1920,
    -17253 / 339200,
    22 / 525,
    -1 / 40,
)  # 5th minus 4th order weights


def _value(x) -> np.ndarray:
    if isinstance(x, Tensor):
        try:
            return np.asarray(x.primal())
        except TypeError:
            raise NotImplementedError(
                "autodiff.scipy.integrate.odeint chooses its steps from the values, which "
                "are not known under vmap or jit"
            ) from None
    return np.asarray(x)


def _step(func, y, t, h, args):
    """One Dormand-Prince step: (the 5th-order solution, the error estimate)."""
    ks = []
    for c, row in zip(_C, _A):
        y_stage = y
        for a, k in zip(row, ks):
            if a:
                y_stage = y_stage + (h * a) * k
        ks.append(func(y_stage, t + c * h, *args))
    y_new = y
    for b, k in zip(_B, ks):
        if b:
            y_new = y_new + (h * b) * k
    err = 0.0
    for e, k in zip(_E, ks):
        if e:
            err = err + (h * e) * k
    return y_new, err


def _interval(func, y, t0, t1, args, rtol, atol, mxstep):
    """y at t1 from y at t0, in the fewest equal steps (a power of 2) whose error estimate
    is within the tolerances."""
    n = 1
    while True:
        h = (t1 - t0) / n
        y_k, worst = y, 0.0
        for j in range(n):
            y_k, err = _step(func, y_k, t0 + j * h, h, args)
            scale = atol + rtol * np.maximum(np.abs(_value(y_k)), 1e-300)
            worst = max(worst, float(np.max(np.abs(_value(err)) / scale)))
        if worst <= 1.0 or n >= mxstep:
            return y_k
        n *= 2


def odeint(func, y0, t, args=(), rtol=1.49012e-8, atol=1.49012e-8, mxstep=512, **kwargs):
    """`scipy.integrate.odeint`: the solution of dy/dt = func(y, t, *args) at the times `t`
    (the first one is y0's), differentiable in `y0`, `t` and `args`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> f = lambda y, t, k: -k * y
        >>> ys = odeint(f, np.array([1.0]), np.array([0.0, 1.0]), args=(2.0,))
        >>> round(float(ys[1, 0]), 6)  # exp(-2)
        0.135335
        >>> g = ad.grad(lambda k: odeint(f, np.array([1.0]), np.array([0.0, 1.0]), (k,))[1, 0])
        >>> round(float(g(2.0)), 6)  # -exp(-2)
        -0.135335
    """
    if kwargs.get("full_output"):
        raise NotImplementedError("autodiff.scipy.integrate.odeint does not support full_output")
    if not isinstance(args, tuple):
        args = (args,)
    y = _ew.astype(_shape._operand(y0), np.float64)
    t = _shape._operand(t)
    times = _value(t)
    if times.ndim != 1:
        raise ValueError("t must be a 1-d sequence of times")
    ys = [y]
    for i in range(1, times.shape[0]):
        y = _interval(func, y, getitem(t, i - 1), getitem(t, i), args, rtol, atol, mxstep)
        ys.append(y)
    return _shape.stack(ys)


FUNCTIONS: dict = {"odeint": odeint}
