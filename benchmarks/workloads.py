"""What a workload is, its three kinds, and the gradient workloads (chain, elementwise, mlp, ode).

A workload maps framework names to programs: `program(args) -> call`, where
`call()` is what gets timed. A framework without a program for a workload shows
"n/a". Each kind of workload gets its programs from `frameworks.py`:

- `gradient_workload`: a loss `loss(xp, *args)`, differentiated with each framework's `grad`
  (the workloads of this module);
- `transform_workload`: a `body(tx, xp, *args)` using functional transforms
  (`transform_workloads.py`);
- `tensor_workload`: a `body(T, xp, *args) -> call` using the PyTorch-style API
  (`tensor_workloads.py`).

Any kind can override or add per-framework programs, and time other APIs for the same
computation as `alternatives` (reported below the tables, not in the ratios).
`suite.py` lists every workload in table order.

Imports NumPy only: the parent process reads this table without importing any framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from benchmarks.frameworks import FRAMEWORKS


@dataclass(frozen=True)
class Workload:
    """A named computation, timed in every framework that has a program for it.

    Arguments:
        name: the row name, used by `--only`.
        about: a one-line description, formatted with the size parameters.
        sizes: size parameters for full runs (`"full"`) and smoke runs (`"quick"`).
        inputs: `inputs(**size) -> args`, float64 NumPy arrays (pytrees), deterministic.
        reference: `reference(*args) -> expected result` in float64, independent of every framework.
        programs: framework name -> `program(args) -> call`.
        alternatives: framework name -> {label: program}: other APIs of that framework for the
            same computation, timed and checked too, reported apart from the main columns.
        notes: framework name -> what its program does, where a reader needs to know.
        static: names of size parameters that are not inputs' arguments but Python constants
            (a loop count): given as keywords to every program and to `reference`.
    """

    name: str
    about: str
    sizes: dict[str, dict]
    inputs: Callable[..., tuple]
    reference: Callable[..., object]
    programs: dict[str, Callable[[tuple], Callable[[], object]]]
    alternatives: dict[str, dict[str, Callable[[tuple], Callable[[], object]]]] = field(
        default_factory=dict
    )
    notes: dict[str, str] = field(default_factory=dict)
    static: tuple[str, ...] = ()

    def describe(self, quick: bool) -> str:
        return self.about.format(**self.sizes["quick" if quick else "full"])

    def make_inputs(self, quick: bool) -> tuple:
        size = self.sizes["quick" if quick else "full"]
        return self.inputs(**{k: v for k, v in size.items() if k not in self.static})

    def static_sizes(self, quick: bool) -> dict:
        return {k: self.sizes["quick" if quick else "full"][k] for k in self.static}


def _gradient_program(framework, loss, argnums, args, **static):
    return framework.grad(partial(loss, **static), argnums, args)


def gradient_workload(
    name, about, sizes, loss, inputs, reference, argnums=0, static=(), **extra
) -> Workload:
    """A workload timing the gradient of `loss(xp, *args)` w.r.t. `args[argnums]` everywhere.

    `static`: size parameters given to `loss` and `reference` as keywords (see `Workload`).
    `extra`: `programs` (overrides), `alternatives` and `notes`, as in `Workload`.
    """
    programs = {
        fw.name: partial(_gradient_program, fw, loss, argnums) for fw in FRAMEWORKS.values()
    }
    programs.update(extra.pop("programs", {}))
    return Workload(name, about, sizes, inputs, reference, programs, static=tuple(static), **extra)


def _numpy_program(function, args):
    return partial(function, np, *args)


def _kind_workload(kind, name, about, sizes, body, function, inputs, reference, **extra):
    programs = {
        fw.name: partial(getattr(fw, kind), body)
        for fw in FRAMEWORKS.values()
        if getattr(fw, kind) is not None
    }
    programs["numpy-fwd"] = partial(_numpy_program, function)
    programs.update(extra.pop("programs", {}))
    return Workload(name, about, sizes, inputs, reference, programs, **extra)


def transform_workload(name, about, sizes, body, function, inputs, reference, **extra) -> Workload:
    """A workload timing `body(tx, xp, *args)` in every framework with functional transforms.

    `function(xp, *args)` is the function being differentiated, timed in NumPy as `numpy-fwd`.
    `extra`: `programs` (overrides), `alternatives` and `notes`, as in `Workload`.
    """
    return _kind_workload(
        "transforms", name, about, sizes, body, function, inputs, reference, **extra
    )


def tensor_workload(name, about, sizes, body, function, inputs, reference, **extra) -> Workload:
    """A workload timing the call `body(T, xp, *args)` builds with the PyTorch-style API.

    Frameworks: autodiff (`T = autodiff`) and torch (`T = torch`); the rest as in
    `transform_workload`.
    """
    return _kind_workload("tensors", name, about, sizes, body, function, inputs, reference, **extra)


def seeded_rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---------------------------------------------------------------------------------------------
# chain: ~200 tiny elementwise ops, so the time is per-op overhead.

CHAIN_STEPS = 50


def chain_function(xp, x):
    for _ in range(CHAIN_STEPS):
        x = xp.sin(x) * 1.01 + 0.1 * x
    return x


def chain_loss(xp, x):
    return xp.sum(chain_function(xp, x))


def chain_gradient(x, xp=np):
    """The gradient of `chain_loss` by hand, in the array namespace `xp` (the reference; with
    `autodiff.numpy`, the hand-written program staged graphs are compared with)."""
    g = xp.ones_like(x)
    for _ in range(CHAIN_STEPS):
        g = g * (1.01 * xp.cos(x) + 0.1)
        x = xp.sin(x) * 1.01 + 0.1 * x
    return g


CHAIN = gradient_workload(
    "chain",
    "grad of sum(50 x [x = sin(x)*1.01 + 0.1*x]), x of {n} float64: per-op overhead",
    {"full": {"n": 8}, "quick": {"n": 8}},
    chain_loss,
    lambda n: (seeded_rng().standard_normal(n),),
    chain_gradient,
)


# ---------------------------------------------------------------------------------------------
# elementwise: a few large ufuncs, so the time is memory traffic and temporaries.


def elementwise_loss(xp, x):
    return xp.sum(xp.tanh(x) * xp.exp(-x * x) + xp.log1p(x * x))


def elementwise_gradient(x):
    t = np.tanh(x)
    e = np.exp(-x * x)
    return (1 - t * t) * e - 2 * x * t * e + 2 * x / (1 + x * x)


ELEMENTWISE = gradient_workload(
    "elementwise",
    "grad of sum(tanh(x)*exp(-x*x) + log1p(x*x)), x of {n:,} float64",
    {"full": {"n": 2**21}, "quick": {"n": 2**16}},
    elementwise_loss,
    lambda n: (seeded_rng().standard_normal(n),),
    elementwise_gradient,
)


# ---------------------------------------------------------------------------------------------
# mlp: matmul-dominated, the parameters are a tuple pytree.


def mlp_loss(xp, params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h = xp.tanh(x @ w1 + b1)
    h = xp.tanh(h @ w2 + b2)
    r = h @ w3 + b3 - y
    return xp.mean(r * r)


def mlp_gradient(params, x, y):
    """Backpropagation by hand."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    r = h2 @ w3 + b3 - y
    d3 = 2 * r / r.size
    d2 = (d3 @ w3.T) * (1 - h2 * h2)
    d1 = (d2 @ w2.T) * (1 - h1 * h1)
    return (x.T @ d1, d1.sum(0), h1.T @ d2, d2.sum(0), h2.T @ d3, d3.sum(0))


def mlp_inputs(batch, widths):
    rng = seeded_rng()
    params = []
    for fan_in, fan_out in zip(widths, widths[1:]):
        params.append(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in))
        params.append(0.1 * rng.standard_normal(fan_out))
    x = rng.standard_normal((batch, widths[0]))
    y = rng.standard_normal((batch, widths[-1]))
    return tuple(params), x, y


MLP = gradient_workload(
    "mlp",
    "grad of the mean squared error of a tanh MLP {widths}, batch {batch}, w.r.t. 6 parameters",
    {
        "full": {"batch": 128, "widths": (64, 256, 256, 10)},
        "quick": {"batch": 32, "widths": (64, 256, 256, 10)},
    },
    mlp_loss,
    mlp_inputs,
    mlp_gradient,
)


# ---------------------------------------------------------------------------------------------
# ode: a long chain of small ops (RK4 on a (3, batch) state), gradient w.r.t. 3 parameters.

ODE_DT = 0.01


def lorenz_loss(xp, p, state, *, steps):
    """Sum of squares of the state after `steps` RK4 steps of the Lorenz system."""
    sigma, rho, beta = p[0], p[1], p[2]

    def field(s):
        x, y, z = s[0], s[1], s[2]
        return xp.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

    h = ODE_DT
    for _ in range(steps):
        k1 = field(state)
        k2 = field(state + h / 2 * k1)
        k3 = field(state + h / 2 * k2)
        k4 = field(state + h * k3)
        state = state + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return xp.sum(state * state)


def lorenz_gradient(p, state, *, steps):
    """Forward sensitivities by hand: the state's tangents along each parameter, through RK4."""
    sigma, rho, beta = p
    dp = np.eye(3)[:, :, None]  # dp[k, j]: the tangent of parameter j along parameter k

    def field(s):
        x, y, z = s
        return np.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

    def field_tangent(s, ds):  # ds: (3 parameters, 3, batch)
        (x, y, z), dx, dy, dz = s, ds[:, 0], ds[:, 1], ds[:, 2]
        return np.stack(
            [
                sigma * (dy - dx) + dp[:, 0] * (y - x),
                dx * (rho - z) + x * (dp[:, 1] - dz) - dy,
                dx * y + x * dy - dp[:, 2] * z - beta * dz,
            ],
            axis=1,
        )

    h = ODE_DT
    tangent = np.zeros((3, *state.shape))
    for _ in range(steps):
        k1, t1 = field(state), field_tangent(state, tangent)
        s2, d2 = state + h / 2 * k1, tangent + h / 2 * t1
        k2, t2 = field(s2), field_tangent(s2, d2)
        s3, d3 = state + h / 2 * k2, tangent + h / 2 * t2
        k3, t3 = field(s3), field_tangent(s3, d3)
        s4, d4 = state + h * k3, tangent + h * t3
        k4, t4 = field(s4), field_tangent(s4, d4)
        state = state + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        tangent = tangent + h / 6 * (t1 + 2 * t2 + 2 * t3 + t4)
    return np.einsum("kij,ij->k", tangent, 2 * state)


def lorenz_inputs(batch):
    state = seeded_rng().standard_normal((3, batch)) * 5.0 + np.array([[0.0], [0.0], [25.0]])
    return np.array([10.0, 28.0, 8.0 / 3.0]), state


ODE = gradient_workload(
    "ode",
    "grad w.r.t. (sigma, rho, beta) of sum(state**2) after {steps} RK4 steps (dt "
    f"{ODE_DT}) of the Lorenz system, state (3, {{batch}}): a long chain of small ops",
    {"full": {"batch": 64, "steps": 100}, "quick": {"batch": 64, "steps": 5}},
    lorenz_loss,
    lorenz_inputs,
    lorenz_gradient,
    static=("steps",),
)


# ---------------------------------------------------------------------------------------------
# ode_loop: ode's gradient with the RK4 steps in a fori_loop (one staged step), where the
# framework has one (autodiff, JAX); elsewhere a Python loop of the same steps.


def _fori_loop(xp):
    """The framework's fori_loop for the array namespace `xp`, or a Python loop."""
    name = getattr(xp, "__name__", "")
    if name == "jax.numpy":
        import jax

        return jax.lax.fori_loop
    if name == "autodiff.numpy":
        import autodiff

        return autodiff.fori_loop

    def python_loop(lower, upper, body, value):
        for i in range(lower, upper):
            value = body(i, value)
        return value

    return python_loop


def lorenz_loop_loss(xp, p, state, *, steps):
    """`lorenz_loss` with the steps in a fori_loop."""
    sigma, rho, beta = p[0], p[1], p[2]

    def field(s):
        x, y, z = s[0], s[1], s[2]
        return xp.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

    def step(i, s):
        h = ODE_DT
        k1 = field(s)
        k2 = field(s + h / 2 * k1)
        k3 = field(s + h / 2 * k2)
        k4 = field(s + h * k3)
        return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    state = _fori_loop(xp)(0, steps, step, state)
    return xp.sum(state * state)


ODE_LOOP = gradient_workload(
    "ode_loop",
    "ode's gradient ({steps} RK4 steps, state (3, {batch})) with the steps in a fori_loop "
    "(autodiff.fori_loop, jax.lax.fori_loop): one staged step",
    {"full": {"batch": 64, "steps": 100}, "quick": {"batch": 64, "steps": 5}},
    lorenz_loop_loss,
    lorenz_inputs,
    lorenz_gradient,
    static=("steps",),
    notes={
        "torch": "a Python loop of the steps (torch has no fori_loop)",
        "autograd": "a Python loop of the steps",
    },
)
