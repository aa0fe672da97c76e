"""autodiff.scipy.integrate: `odeint`, SciPy's signature, differentiable in the initial state,
the times and the extra arguments.

The integrator is adaptive Dormand-Prince 5(4) (autodiff/scipy/_ode.py), written with
structured control flow, so `odeint` runs under `jit` and `vmap`. Reverse mode is the
continuous adjoint method by default (as jax.experimental.ode.odeint: a custom_vjp whose
backward pass integrates the adjoint system backwards in time with the same solver, so its
memory does not grow with the number of steps); `adjoint=False` differentiates the computed
steps instead (discretise-then-differentiate), which forward mode needs too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
from autodiff.control import scan
from autodiff.core.abstract import ShapedArray
from autodiff.core.errors import TracerConversionError
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import current_level
from autodiff.custom import custom_vjp
from autodiff.reverse import vjp
from autodiff.scipy._ode import PYTHON, STRUCTURED, Options, integrate
from autodiff.staging.api import jit
from autodiff.staging.ir import eval_graph
from autodiff.staging.trace import stage
from autodiff.vmap import vmap

__all__ = ["odeint"]

_TOL = 1.49012e-8  # (SciPy's default rtol and atol)
# Attempted steps allowed per output interval when mxstep is 0 (SciPy's "solver-determined").
DEFAULT_MXSTEP = 100_000

# SciPy's keywords that tune LSODA's Jacobians and method orders: an explicit method has no use
# for them, so a value other than the default is an error, not a silent no-op.
_LSODA_ONLY = {
    "Dfun": None,
    "col_deriv": 0,
    "ml": None,
    "mu": None,
    "mxordn": 12,
    "mxords": 5,
}


def _check_lsoda_keywords(values: dict) -> None:
    for name, default in _LSODA_ONLY.items():
        if values[name] is not default and values[name] != default:
            raise ValueError(
                f"odeint got {name}={values[name]!r}: autodiff's odeint integrates with the "
                "explicit Dormand-Prince method, which uses no Jacobian and no method orders "
                "(Dfun, col_deriv, ml, mu, mxordn and mxords are LSODA's); leave them out"
            )


def _concrete(x, name: str):
    """`x` as a NumPy value: a keyword that sets the solver, which must not be traced."""
    if isinstance(x, Tensor):
        raise TypeError(f"odeint's {name} must be a concrete number or array, not a traced value")
    return np.asarray(x, dtype=np.float64)


def _tolerance(x, name: str, shape: tuple, dtype) -> np.ndarray:
    value = _concrete(_TOL if x is None else x, name)
    if np.any(value < 0) or not np.all(np.isfinite(value)):
        raise ValueError(f"odeint's {name} must be finite and non-negative, got {x!r}")
    try:
        return np.broadcast_to(value, shape).ravel().astype(dtype)
    except ValueError:
        raise ValueError(
            f"odeint's {name} of shape {value.shape} does not fit y0's shape {shape}"
        ) from None


def _step_bound(x, name: str) -> float:
    value = _concrete(x, name)
    if value.shape != () or not value >= 0 or not np.isfinite(value):
        raise ValueError(f"odeint's {name} must be a finite number >= 0, got {x!r}")
    return float(value)


def _options(y_shape, dtype, rtol, atol, h0, hmax, hmin, mxstep) -> Options:
    if isinstance(mxstep, bool) or not isinstance(mxstep, (int, np.integer)) or mxstep < 0:
        raise ValueError(f"odeint's mxstep must be an int >= 0, got {mxstep!r}")
    return Options(
        rtol=_tolerance(rtol, "rtol", y_shape, dtype),
        atol=_tolerance(atol, "atol", y_shape, dtype),
        h0=_step_bound(h0, "h0"),
        hmax=_step_bound(hmax, "hmax"),
        hmin=_step_bound(hmin, "hmin"),
        mxstep=int(mxstep) or DEFAULT_MXSTEP,
    )


def _float_operand(x, name: str):
    """`x` as a real floating array (integers as float64); complex values are refused."""
    x = x if isinstance(x, Tensor) else np.asarray(x)
    if x.dtype.kind == "c":
        raise TypeError(f"odeint integrates real systems, but {name} is {x.dtype}")
    if x.dtype.kind not in "f":
        x = anp.astype(x, np.float64)
    return x


def _times(t):
    ts = _float_operand(t, "t")
    if ts.ndim != 1 or ts.shape[0] == 0:
        raise ValueError(
            f"odeint's t must be a non-empty 1-d sequence of times, got shape {ts.shape}"
        )
    try:
        values = ts.primal() if isinstance(ts, Tensor) else ts
    except TypeError:  # (traced: an unordered t gives nan instead)
        return ts
    steps = np.diff(values)
    if not (np.all(steps >= 0) or np.all(steps <= 0)):
        raise ValueError("odeint's t must be monotonically increasing or decreasing")
    return ts


def _dynamics(func, y_shape, tfirst: bool, static, dynamic_mask, args_tree) -> Callable:
    """dy/dt as a function of the flat state, the time and the traced arguments."""

    def rhs(y_flat, t, *dynamic):
        it_dyn, it_static = iter(dynamic), iter(static)
        leaves = [next(it_dyn) if d else next(it_static) for d in dynamic_mask]
        args = tree_unflatten(args_tree, leaves)
        y = anp.reshape(y_flat, y_shape)
        out = func(t, y, *args) if tfirst else func(y, t, *args)
        if isinstance(out, (list, tuple)):  # (SciPy's examples return lists)
            out = anp.stack([anp.asarray(x) for x in out])
        if np.shape(out) != y_shape:
            raise ValueError(f"odeint's func returned shape {np.shape(out)}, but y0 has {y_shape}")
        return anp.astype(anp.ravel(out), y_flat.dtype)

    return rhs


def _closure_converted(rhs, y, t, params: list):
    """`rhs` with the traced values it closes over (an enclosing transform's) as more
    parameters, so that derivatives flow to them through the adjoint (JAX's closure_convert)."""
    if current_level() == 0:
        return rhs, params
    avals = [ShapedArray(np.shape(x), x.dtype) for x in (y, t, *params)]
    try:
        graph, captured = stage(rhs, avals, tree_flatten(tuple(avals))[1], name="odeint's func")
    except TracerConversionError as error:
        raise TypeError(
            "odeint with adjoint=True traces func under a transform (to find the values it "
            "closes over), and func uses Python control flow on values: use autodiff.numpy."
            "where or autodiff.cond instead, or pass adjoint=False"
        ) from error
    if not captured:
        return rhs, params

    def converted(y, t, *ps):
        return eval_graph(graph, y, t, *ps)[0]

    return converted, params + list(captured)


def _adjoint_solve(rhs, opts: Options):
    """(ys, statistics) of (y0, ts, params), a custom_vjp whose backward pass integrates the
    adjoint system."""

    def run(y0, ts, params):
        return integrate(lambda y, t: rhs(y, t, *params), y0, ts, opts)

    # Staged once for every call of this solve (the intervals of a backward pass; each run of
    # an enclosing jit), so that func and its derivatives in the adjoint system are traced
    # once; a func with Python control flow on values runs as Python does (`eager`).
    compiled, eager = jit(run), []

    @custom_vjp
    def solve(y0, ts, params):
        if not eager:
            try:
                return compiled(y0, ts, params)
            except TracerConversionError:
                eager.append(True)
        return run(y0, ts, params)

    def fwd(y0, ts, params):  # (through `solve`, so that a higher order uses the adjoint too)
        ys, stats = solve(y0, ts, params)
        return (ys, stats), (ys, ts, params)

    def bwd(residuals, cts):
        ys, ts, params = residuals
        return _adjoint(rhs, opts, ys, ts, params, cts[0])

    solve.defvjp(fwd, bwd)
    return solve


def _differentiable(params) -> list:
    return [i for i, p in enumerate(params) if np.dtype(p.dtype).kind == "f"]


def _augmented(rhs, n: int, dtype, diff: list, aug_dtype) -> Callable:
    """The adjoint system in forward time: (y, a, a_params)' = (f, -a f_y, -a f_params)."""

    def aug(z, t, *params):
        y, a = anp.astype(z[:n], dtype), anp.astype(z[n : 2 * n], dtype)

        def f_of(y, *chosen):
            full = list(params)
            for i, p in zip(diff, chosen):
                full[i] = p
            return rhs(y, t, *full)

        f, pullback = vjp(f_of, y, *[params[i] for i in diff])
        parts = [f, *(-anp.ravel(b) for b in pullback(a))]
        return anp.concatenate([anp.astype(x, aug_dtype) for x in parts])

    return aug


def _adjoint(rhs, opts: Options, ys, ts, params, g):
    """The cotangents of (y0, ts, params) for the cotangent `g` of the solution: the adjoint
    system integrated backwards from each requested time to the one before (its state carries
    y, recomputed, beside the adjoints: the memory is the state's, whatever the steps)."""
    n, dtype = ys.shape[1], ys.dtype
    diff = _differentiable(params)
    aug_dtype = np.result_type(dtype, *[params[i].dtype for i in diff])
    n_params = sum(int(np.prod(np.shape(params[i]))) for i in diff)
    m = 2 * n + n_params
    aug_opts = opts._replace(
        rtol=np.full(m, opts.rtol.min(initial=_TOL), aug_dtype),
        atol=np.full(m, opts.atol.min(initial=_TOL), aug_dtype),
    )
    solve = _adjoint_solve(_augmented(rhs, n, dtype, diff, aug_dtype), aug_opts)

    def interval(carry, x):
        a, params_bar = carry
        y, t, t_before, g_before = x
        z = anp.concatenate([anp.astype(y, aug_dtype), anp.astype(a, aug_dtype), params_bar])
        z = solve(z, anp.stack([t, t_before]), params)[0][1]
        return (anp.astype(z[n : 2 * n], dtype) + g_before, z[2 * n :]), None

    init = (g[-1], anp.zeros(n_params, aug_dtype))
    (a, params_bar), _ = scan(interval, init, (ys[1:], ts[1:], ts[:-1], g[:-1]), reverse=True)
    slopes = vmap(lambda y, t: rhs(y, t, *params))(ys, ts)
    # A later requested time moves its value along the trajectory; the first one moves the
    # start of every later value (its own is y0, whatever the time).
    ts_bar = anp.sum(slopes * g, axis=1)
    t0_bar = -anp.sum(slopes[0] * (a - g[0]))
    ts_bar = anp.astype(anp.concatenate([t0_bar[None], ts_bar[1:]]), ts.dtype)
    return a, ts_bar, _unpacked(params_bar, params, diff)


def _unpacked(flat, params, diff: list) -> tuple:
    bars, start = [anp.zeros_like(p) for p in params], 0
    for i in diff:
        size = int(np.prod(np.shape(params[i])))
        piece = anp.reshape(flat[start : start + size], np.shape(params[i]))
        bars[i], start = anp.astype(piece, params[i].dtype), start + size
    return tuple(bars)


def _discretised(rhs, y0, ts, params, opts: Options):
    """The solution with its steps as reverse mode records them: chosen from the values by
    Python when they are known, else by structured control flow (jit, vmap; forward mode)."""

    def f(y, t):
        return rhs(y, t, *params)

    try:
        return integrate(f, y0, ts, opts, PYTHON)
    except TracerConversionError:  # (values unknown: the steps are traced values)
        return integrate(f, y0, ts, opts, STRUCTURED)


def _solve_adjoint(rhs, y0, ts, params, opts: Options):
    try:
        return _adjoint_solve(rhs, opts)(y0, ts, tuple(params))
    except TypeError as error:
        if "forward-mode" not in str(error):
            raise
        raise TypeError(
            "odeint with adjoint=True has only a reverse-mode rule (the adjoint method, as "
            "jax.experimental.ode.odeint): for forward mode (jvp, jacfwd, hessian) pass "
            "adjoint=False, which differentiates the computed steps"
        ) from error


def _infodict(stats, reached_all) -> dict:
    n_steps, n_fe, hu, tcur = stats
    info = {"hu": hu, "tcur": tcur, "nst": n_steps, "nfe": n_fe}
    if reached_all is None:
        info["message"] = None  # (traced values: see nst and tcur)
    elif reached_all:
        info["message"] = "Integration successful."
    else:
        info["message"] = (
            "Excess work done on this call (mxstep attempts, or a step below hmin): the "
            "times not reached are nan."
        )
    return info


def _all_reached(ys):
    try:
        values = ys.primal() if isinstance(ys, Tensor) else np.asarray(ys)
    except TypeError:
        return None
    return bool(np.all(np.isfinite(values)))


def _refined(ts, m: int):
    """The times with each interval cut into `m` equal ones (as functions of the times)."""
    if m == 1 or ts.shape[0] == 1:
        return ts
    fractions = np.arange(m) / m
    starts = ts[:-1, None] + anp.astype(fractions, ts.dtype) * (ts[1:] - ts[:-1])[:, None]
    return anp.concatenate([anp.ravel(starts), ts[-1:]])


def _check_keywords(func, tcrit, adjoint, checkpoints, lsoda: dict) -> None:
    if not callable(func):
        raise TypeError(f"odeint's func must be callable, got {type(func).__name__}")
    if not isinstance(adjoint, bool):
        raise TypeError(f"odeint's adjoint must be True or False, got {adjoint!r}")
    if isinstance(checkpoints, bool) or not isinstance(checkpoints, (int, np.integer)):
        raise TypeError(f"odeint's checkpoints must be an int, got {checkpoints!r}")
    if checkpoints < 1:
        raise ValueError(f"odeint's checkpoints must be at least 1, got {checkpoints}")
    if tcrit is not None:
        raise ValueError(
            "odeint does not support tcrit: integrate up to each critical time and restart "
            "from there (two odeint calls)"
        )
    _check_lsoda_keywords(lsoda)


def odeint(
    func: Callable,
    y0,
    t,
    args=(),
    Dfun=None,
    col_deriv=0,
    full_output=0,
    ml=None,
    mu=None,
    rtol=_TOL,
    atol=_TOL,
    tcrit=None,
    h0=0.0,
    hmax=0.0,
    hmin=0.0,
    ixpr=0,
    mxstep=0,
    mxhnil=0,
    mxordn=12,
    mxords=5,
    printmessg=0,
    tfirst=False,
    *,
    adjoint: bool = True,
    checkpoints: int = 1,
):
    """`scipy.integrate.odeint`: the solution of `dy/dt = func(y, t, *args)` at the times `t`
    (monotonic; the first is y0's), differentiable in `y0`, `t` and `args` (and in what
    `func` closes over), under `jit`, `vmap`, `grad` and `jacrev`.

    Adaptive Dormand-Prince 5(4) steps within `rtol` and `atol` (None: SciPy's 1.49012e-8),
    `h0` the first step, `hmax` and `hmin` bounds on the steps (0: none), `mxstep` the step
    attempts allowed per interval of `t` (0: 100,000); a time not reached gives nan.
    `tfirst=True` calls `func(t, y, *args)`. With `full_output`, also a dict: `hu` (the last
    step of each interval), `tcur` (the time reached), `nst` and `nfe` (steps and evaluations
    of func so far, as SciPy's) and `message`; it is not differentiated.
    `printmessg`, `ixpr` and `mxhnil` are accepted (odeint prints nothing); LSODA's `Dfun`,
    `col_deriv`, `ml`, `mu`, `mxordn`, `mxords` and `tcrit` raise a ValueError.

    Reverse mode: with `adjoint=True`, the continuous adjoint method (as
    jax.experimental.ode.odeint; its memory does not grow with the steps, forward mode
    raises, and under a transform `func` is traced as `jit` traces it); with
    `adjoint=False`, the derivative of the computed steps (memory per step; forward mode
    works, and reverse mode under `jit` does not). The adjoint's backward pass integrates y
    backwards from the values kept at the times of `t`, which is unstable for systems that
    contract strongly (dissipative ones, such as Lorenz's): `checkpoints=m` keeps y at `m`
    equal sub-intervals of each interval of `t` too, and recomputes it backwards only
    between them (memory `m` times the outputs', whatever the steps).

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
    del ixpr, mxhnil, printmessg  # (message controls: odeint prints no messages)
    lsoda = {"Dfun": Dfun, "col_deriv": col_deriv, "ml": ml, "mu": mu}
    lsoda.update(mxordn=mxordn, mxords=mxords)
    _check_keywords(func, tcrit, adjoint, checkpoints, lsoda)
    args = args if isinstance(args, tuple) else (args,)
    y0, ts = _float_operand(y0, "y0"), _times(t)
    opts = _options(y0.shape, y0.dtype, rtol, atol, h0, hmax, hmin, mxstep)
    leaves, args_tree = tree_flatten(args)
    mask = [isinstance(x, Tensor) for x in leaves]
    params = [x for x, traced in zip(leaves, mask) if traced]
    static = [x for x, traced in zip(leaves, mask) if not traced]
    rhs = _dynamics(func, y0.shape, bool(tfirst), static, mask, args_tree)
    y_flat = anp.ravel(y0)
    if adjoint:
        rhs, params = _closure_converted(rhs, y_flat, ts[0], params)
        fine = _refined(ts, checkpoints)
        ys, stats = _solve_adjoint(rhs, y_flat, fine, params, opts)
        ys, stats = ys[::checkpoints], tuple(x[checkpoints - 1 :: checkpoints] for x in stats)
    else:  # (reverse mode records the steps, closed-over values included)
        ys, stats = _discretised(rhs, y_flat, ts, params, opts)
    ys = anp.reshape(ys, (ts.shape[0], *y0.shape))
    if not full_output:
        return ys
    return ys, _infodict(stats, _all_reached(ys))


FUNCTIONS: dict = {"odeint": odeint}
