"""The sparse-derivative workloads of bench_sparse.py: each model written once against an array
namespace `xp` (NumPy, autodiff.numpy, jax.numpy) and once in CasADi SX symbols, with its
Jacobian or Hessian worked out by hand in NumPy as the reference (a SciPy CSR array holding
exactly the structural nonzeros).

- `brusselator`: the 2-D Brusselator reaction-diffusion residual, two species on an N x N
  periodic grid (5-point Laplacian), unknowns `y = [u.ravel(), v.ravel()]`: its Jacobian.
- `rosenbrock`: the chained Rosenbrock function of n variables: its Hessian (tridiagonal).
- `vdp_jacobian`, `vdp_hessian`: an optimal-control NLP, the Van der Pol oscillator with a
  control, discretised over T trapezoidal steps (direct transcription). Unknowns
  `w = [x1 (T+1), x2 (T+1), u (T+1)]`; the constraints are the 2T defects; the Lagrangian is
  the quadratic cost plus fixed multipliers times the defects. The constraint Jacobian and
  the Lagrangian's Hessian.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

ALPHA = 10.0  # the Brusselator's diffusion coefficient
MU = 1.0  # the Van der Pol oscillator's damping
HORIZON = 5.0  # the NLP's time horizon (step HORIZON / T)


@dataclass(frozen=True)
class SparseWorkload:
    """One workload: a model, its inputs and its hand-derived reference, per size.

    `size` is the workload's own parameter (the grid side N, the number of variables n, the
    number of steps T); `n(size)` the number of unknowns. `function(xp, size)` returns the
    model as a function of one flat float64 vector; `casadi(ca, x, size)` the same model as a
    CasADi SX expression of the SX column `x`; `reference(size, x)` the derivative at `x`.
    """

    name: str
    kind: str  # "jacobian" or "hessian"
    description: str
    sizes: dict[str, tuple[int, ...]]  # "full" and "quick"
    n: Callable[[int], int]
    function: Callable[[Any, int], Callable[[Any], Any]]
    casadi: Callable[[Any, Any, int], Any]
    reference: Callable[[int, np.ndarray], sp.csr_array]
    inputs: Callable[[int], np.ndarray]

    def label(self, size: int) -> str:
        parameter = {"brusselator": "N", "rosenbrock": "n"}.get(self.name, "T")
        unknowns = "" if parameter == "n" else f" (n={self.n(size)})"
        return f"{self.name} {parameter}={size}{unknowns}"


def coo_csr(triplets: list[tuple[np.ndarray, np.ndarray, Any]], shape) -> sp.csr_array:
    """A CSR array from (rows, cols, values) triplets, duplicates summed and explicit zeros
    kept: the structure is the pattern, whatever the values."""
    rows = np.concatenate([r for r, _, _ in triplets])
    cols = np.concatenate([c for _, c, _ in triplets])
    values = np.concatenate([np.broadcast_to(v, r.shape) for r, _, v in triplets])
    out = sp.csr_array((values, (rows, cols)), shape=shape)
    out.sum_duplicates()
    return out


def pattern_of(matrix: sp.csr_array) -> sp.csr_array:
    """The structure of a CSR array as a boolean CSR array (explicit zeros included)."""
    return sp.csr_array(
        (np.ones(matrix.nnz, bool), matrix.indices, matrix.indptr), shape=matrix.shape
    )


# Brusselator


def _grid_neighbours(size: int) -> list[np.ndarray]:
    """For each point p = i * size + j of the periodic grid, its four neighbours' indices, in
    the order of the xp model's rolls (i-1, i+1, j-1, j+1)."""
    i, j = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    shifts = ((-1, 0), (1, 0), (0, -1), (0, 1))
    return [(((i + di) % size) * size + (j + dj) % size).ravel() for di, dj in shifts]


def brusselator(xp, size: int):
    def f(y):
        u = y[: size * size].reshape(size, size)
        v = y[size * size :].reshape(size, size)
        lap = lambda a: (
            xp.roll(a, 1, 0) + xp.roll(a, -1, 0) + xp.roll(a, 1, 1) + xp.roll(a, -1, 1) - 4 * a
        )
        uuv = u * u * v
        fu = 1 + uuv - 4.4 * u + ALPHA * lap(u)
        fv = 3.4 * u - uuv + ALPHA * lap(v)
        return xp.concatenate([fu.ravel(), fv.ravel()])

    return f


def brusselator_casadi(ca, y, size: int):
    points = size * size
    u, v = y[:points], y[points:]
    neighbours = [index.tolist() for index in _grid_neighbours(size)]
    lap = lambda a: (
        a[neighbours[0]] + a[neighbours[1]] + a[neighbours[2]] + a[neighbours[3]] - 4 * a
    )
    uuv = u * u * v
    return ca.vertcat(1 + uuv - 4.4 * u + ALPHA * lap(u), 3.4 * u - uuv + ALPHA * lap(v))


def brusselator_reference(size: int, y: np.ndarray) -> sp.csr_array:
    points = size * size
    u, v = y[:points], y[points:]
    p = np.arange(points)
    q = p + points  # v's unknowns, and fv's rows
    diffusion = [(p, nb, ALPHA) for nb in _grid_neighbours(size)]
    return coo_csr(
        [
            (p, p, 2 * u * v - 4.4 - 4 * ALPHA),
            (p, q, u * u),
            *diffusion,
            (q, p, 3.4 - 2 * u * v),
            (q, q, -u * u - 4 * ALPHA),
            *[(q, nb + points, ALPHA) for _, nb, _ in diffusion],
        ],
        (2 * points, 2 * points),
    )


def brusselator_inputs(size: int) -> np.ndarray:
    return 0.5 + np.random.default_rng(0).random(2 * size * size)


# Chained Rosenbrock


def rosenbrock(xp, size: int):
    return lambda x: xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_casadi(ca, x, size: int):
    return ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_reference(size: int, x: np.ndarray) -> sp.csr_array:
    i = np.arange(size - 1)
    diagonal = np.zeros(size)
    diagonal[:-1] += 2 + 1200 * x[:-1] ** 2 - 400 * x[1:]
    diagonal[1:] += 200
    every = np.arange(size)
    return coo_csr(
        [(every, every, diagonal), (i, i + 1, -400 * x[:-1]), (i + 1, i, -400 * x[:-1])],
        (size, size),
    )


def rosenbrock_inputs(size: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.5, 1.5, size)


# Van der Pol optimal control, trapezoidal direct transcription


def _vdp_split(w, steps: int):
    k = steps + 1
    return w[:k], w[k : 2 * k], w[2 * k :]


def _vdp_defects(xp_concatenate, w, steps: int):
    x1, x2, u = _vdp_split(w, steps)
    h = HORIZON / steps
    f2 = MU * (1 - x1**2) * x2 - x1 + u
    d1 = x1[1:] - x1[:-1] - h / 2 * (x2[1:] + x2[:-1])
    d2 = x2[1:] - x2[:-1] - h / 2 * (f2[1:] + f2[:-1])
    return xp_concatenate([d1, d2])


def vdp_multipliers(steps: int) -> np.ndarray:
    """The fixed Lagrange multipliers of the defects in the Lagrangian."""
    return np.random.default_rng(1).standard_normal(2 * steps)


def vdp_constraints(xp, steps: int):
    return lambda w: _vdp_defects(xp.concatenate, w, steps)


def vdp_constraints_casadi(ca, w, steps: int):
    return _vdp_defects(lambda parts: ca.vertcat(*parts), w, steps)


def vdp_lagrangian(xp, steps: int):
    lam = vdp_multipliers(steps)
    h = HORIZON / steps
    return lambda w: h * xp.sum(w * w) + xp.sum(lam * _vdp_defects(xp.concatenate, w, steps))


def vdp_lagrangian_casadi(ca, w, steps: int):
    lam = ca.DM(vdp_multipliers(steps))
    defects = _vdp_defects(lambda parts: ca.vertcat(*parts), w, steps)
    return HORIZON / steps * ca.sumsqr(w) + ca.dot(lam, defects)


def vdp_jacobian_reference(steps: int, w: np.ndarray) -> sp.csr_array:
    k = steps + 1
    x1, x2, _ = _vdp_split(w, steps)
    h = HORIZON / steps
    t = np.arange(steps)
    a = MU * (1 - x1**2)  # d f2 / d x2
    b = -2 * MU * x1 * x2 - 1  # d f2 / d x1
    r2 = t + steps  # the rows of the second defects
    return coo_csr(
        [
            (t, t + 1, 1.0),
            (t, t, -1.0),
            (t, k + t + 1, -h / 2),
            (t, k + t, -h / 2),
            (r2, k + t + 1, 1 - h / 2 * a[1:]),
            (r2, k + t, -1 - h / 2 * a[:-1]),
            (r2, t + 1, -h / 2 * b[1:]),
            (r2, t, -h / 2 * b[:-1]),
            (r2, 2 * k + t + 1, -h / 2),
            (r2, 2 * k + t, -h / 2),
        ],
        (2 * steps, 3 * k),
    )


def vdp_hessian_reference(steps: int, w: np.ndarray) -> sp.csr_array:
    k = steps + 1
    x1, x2, _ = _vdp_split(w, steps)
    h = HORIZON / steps
    lam2 = vdp_multipliers(steps)[steps:]
    # f2 at step s enters the defects s - 1 and s, each with the factor -h/2.
    weight = np.zeros(k)
    weight[1:] += lam2
    weight[:-1] += lam2
    weight *= -h / 2
    s = np.arange(k)
    every = np.arange(3 * k)
    return coo_csr(
        [
            (every, every, 2 * h),
            (s, s, weight * -2 * MU * x2),
            (s, k + s, weight * -2 * MU * x1),
            (k + s, s, weight * -2 * MU * x1),
        ],
        (3 * k, 3 * k),
    )


def vdp_inputs(steps: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-2.0, 2.0, 3 * (steps + 1))


BRUSSELATOR = SparseWorkload(
    "brusselator",
    "jacobian",
    "Jacobian of the 2-D Brusselator residual (two species, periodic 5-point Laplacian, "
    "N x N grid, n = 2 N^2, 6 nonzeros a row)",
    {"full": (32, 128), "quick": (6,)},
    lambda size: 2 * size * size,
    brusselator,
    brusselator_casadi,
    brusselator_reference,
    brusselator_inputs,
)
ROSENBROCK = SparseWorkload(
    "rosenbrock",
    "hessian",
    "Hessian of the chained Rosenbrock function of n variables (tridiagonal)",
    {"full": (10**4, 10**5, 10**6), "quick": (50,)},
    lambda size: size,
    rosenbrock,
    rosenbrock_casadi,
    rosenbrock_reference,
    rosenbrock_inputs,
)
VDP_JACOBIAN = SparseWorkload(
    "vdp_jacobian",
    "jacobian",
    "constraint Jacobian of a Van der Pol optimal-control NLP, T trapezoidal steps "
    "(n = 3 (T+1) unknowns, 2T defects)",
    {"full": (1000, 10**5), "quick": (10,)},
    lambda size: 3 * (size + 1),
    vdp_constraints,
    vdp_constraints_casadi,
    vdp_jacobian_reference,
    vdp_inputs,
)
VDP_HESSIAN = SparseWorkload(
    "vdp_hessian",
    "hessian",
    "Hessian of the same NLP's Lagrangian (cost + fixed multipliers . defects)",
    {"full": (1000, 10**5), "quick": (10,)},
    lambda size: 3 * (size + 1),
    vdp_lagrangian,
    vdp_lagrangian_casadi,
    vdp_hessian_reference,
    vdp_inputs,
)

SPARSE_WORKLOADS = (BRUSSELATOR, ROSENBROCK, VDP_JACOBIAN, VDP_HESSIAN)
