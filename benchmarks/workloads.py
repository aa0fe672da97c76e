"""The benchmark workloads: what each computes, at which sizes, and its float64 reference result.

A workload maps framework names to programs: `program(args) -> call`, where
`call()` is what gets timed. A framework without a program for a workload shows
"n/a". Gradient workloads get a program for every framework from
`gradient_workload`; a later workload kind (hessian, jacobian, ...) adds its own
constructor, or lists per-framework programs directly.

Imports NumPy only: the parent process reads this table without importing any framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
    """

    name: str
    about: str
    sizes: dict[str, dict]
    inputs: Callable[..., tuple]
    reference: Callable[..., object]
    programs: dict[str, Callable[[tuple], Callable[[], object]]]

    def describe(self, quick: bool) -> str:
        return self.about.format(**self.sizes["quick" if quick else "full"])

    def make_inputs(self, quick: bool) -> tuple:
        return self.inputs(**self.sizes["quick" if quick else "full"])


def gradient_workload(name, about, sizes, loss, inputs, reference, argnums=0) -> Workload:
    """A workload timing the gradient of `loss(xp, *args)` w.r.t. `args[argnums]` everywhere."""
    programs = {fw.name: partial(fw.grad, loss, argnums) for fw in FRAMEWORKS.values()}
    return Workload(name, about, sizes, inputs, reference, programs)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---------------------------------------------------------------------------------------------
# chain: ~200 tiny elementwise ops, so the time is per-op overhead.

CHAIN_STEPS = 50


def chain_loss(xp, x):
    for _ in range(CHAIN_STEPS):
        x = xp.sin(x) * 1.01 + 0.1 * x
    return xp.sum(x)


def chain_gradient(x):
    g = np.ones_like(x)
    for _ in range(CHAIN_STEPS):
        g = g * (1.01 * np.cos(x) + 0.1)
        x = np.sin(x) * 1.01 + 0.1 * x
    return g


CHAIN = gradient_workload(
    "chain",
    "grad of sum(50 x [x = sin(x)*1.01 + 0.1*x]), x of {n} float64: per-op overhead",
    {"full": {"n": 8}, "quick": {"n": 8}},
    chain_loss,
    lambda n: (_rng().standard_normal(n),),
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
    lambda n: (_rng().standard_normal(n),),
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
    rng = _rng()
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


WORKLOADS: dict[str, Workload] = {w.name: w for w in (CHAIN, ELEMENTWISE, MLP)}
