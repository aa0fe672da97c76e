"""Sparse Jacobians and Hessians with SciPy's solvers: a stiff 2-D Brusselator integrated by
solve_ivp(BDF) with our compressed Jacobian against SciPy's finite differences given the
pattern, a Newton solve of the 2-D Bratu problem with spsolve, and trust-constr on a chained
Rosenbrock function with the sparse Hessian.

    python examples/sparse_jacobians.py [--quick]
"""

import sys
import time

import numpy as np
import scipy.integrate
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg

import autodiff as ad
import autodiff.numpy as anp
from autodiff.sparse.jacobians import sparse_hessian, sparse_jacobian


def laplacian(w):
    """The periodic 5-point Laplacian on a 2-D grid (unit spacing)."""
    rolled = anp.roll(w, 1, 0) + anp.roll(w, -1, 0) + anp.roll(w, 1, 1) + anp.roll(w, -1, 1)
    return rolled - 4.0 * w


def brusselator(y, alpha=10.0):
    """The 2-D Brusselator's right-hand side; y is the two species (u, v), each flattened."""
    side = int(round(np.sqrt(y.shape[0] // 2)))
    u = anp.reshape(y[: side * side], (side, side))
    v = anp.reshape(y[side * side :], (side, side))
    fu = 1.0 + u * u * v - 4.4 * u + alpha * laplacian(u)
    fv = 3.4 * u - u * u * v + alpha * laplacian(v)
    return anp.concatenate([anp.reshape(fu, (-1,)), anp.reshape(fv, (-1,))])


def stencil(side: int, periodic: bool):
    """The 5-point stencil's pattern on a side x side grid."""
    offsets = [-1, 0, 1] + ([-side + 1, side - 1] if periodic else [])
    ring = sp.diags_array([np.ones(side - abs(k)) for k in offsets], offsets=offsets)
    eye = sp.identity(side)
    return sp.csr_array(sp.kron(ring, eye) + sp.kron(eye, ring) != 0)


def brusselator_pattern(side: int):
    grid, coupling = stencil(side, periodic=True), sp.identity(side * side)
    return sp.csr_array(sp.block_array([[grid, coupling], [coupling, grid]]) != 0)


def integrate(side: int, t_end: float, rounds: int = 1) -> None:
    pattern = brusselator_pattern(side)
    rhs = ad.jit(brusselator)
    jac = sparse_jacobian(brusselator, sparsity=pattern)
    x = np.linspace(0.0, 1.0, side, endpoint=False)
    u0 = 1.0 + np.sin(2 * np.pi * x)[:, None] * np.ones(side)
    y0 = np.concatenate([u0.ravel(), np.full(side * side, 3.0)])
    print(f"Brusselator {side}x{side}: n = {y0.size}, {jac.coloring(y0).ncolors} colors")
    rhs(y0), jac(y0)  # (both staged before timing, so that neither solve pays for it)
    paths = {
        "autodiff sparse_jacobian": {"jac": lambda t, y: jac(y)},
        "SciPy finite differences": {"jac_sparsity": pattern},
    }
    solutions, times = {}, {name: [] for name in paths}
    for _ in range(rounds):  # (alternating: a slow spell of the machine falls on both)
        for name, options in paths.items():
            start = time.perf_counter()
            result = scipy.integrate.solve_ivp(
                lambda t, y: rhs(y),
                (0.0, t_end),
                y0,
                method="BDF",
                rtol=1e-6,
                atol=1e-8,
                **options,
            )
            times[name].append(time.perf_counter() - start)
            solutions[name] = result
    for name, result in solutions.items():
        print(
            f"  {name:25s} {min(times[name]):7.2f} s (fastest of {rounds})  steps "
            f"{result.t.size - 1:4d}  Jacobians {result.njev:3d}  f evaluations {result.nfev:5d}"
        )
    solutions = {name: result.y[:, -1] for name, result in solutions.items()}
    ours, theirs = solutions.values()
    print(f"  largest difference of the final states: {np.max(np.abs(ours - theirs)):.1e}")


def bratu(side: int, lam: float = 6.0):
    """The 2-D Bratu problem -lap(u) = lam * exp(u), u = 0 on the boundary, as a residual."""
    h2 = 1.0 / (side + 1) ** 2

    def residual(u):
        grid = anp.pad(anp.reshape(u, (side, side)), 1)
        inner = grid[1:-1, 1:-1]
        neighbours = grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:]
        return anp.reshape((4.0 * inner - neighbours) / h2 - lam * anp.exp(inner), (-1,))

    return residual


def newton(side: int) -> None:
    residual = bratu(side)
    jac = sparse_jacobian(residual, sparsity=stencil(side, periodic=False))
    u, steps = np.zeros(side * side), 0
    while steps < 30:
        du = scipy.sparse.linalg.spsolve(jac(u).tocsc(), -np.asarray(residual(u)))
        u, steps = u + du, steps + 1
        if np.max(np.abs(du)) < 1e-12:
            break
    norm = np.max(np.abs(np.asarray(residual(u))))
    print(f"Bratu {side}x{side} by Newton + spsolve: {steps} steps, |residual| = {norm:.1e}")


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def minimize(n: int) -> None:
    pattern = sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1])
    hess = sparse_hessian(rosenbrock, sparsity=pattern != 0)
    value, gradient = ad.jit(rosenbrock), ad.jit(ad.grad(rosenbrock))
    result = scipy.optimize.minimize(
        lambda x: float(value(x)),
        np.full(n, 0.5),
        method="trust-constr",
        jac=gradient,
        hess=hess,
        options={"gtol": 1e-10},
    )
    error = np.max(np.abs(result.x - 1.0))
    print(
        f"trust-constr, chained Rosenbrock n = {n}: {result.nit} iterations, |x - 1| = {error:.1e}"
    )


def main(quick: bool = False) -> None:
    integrate(16 if quick else 128, 1.0, 1 if quick else 3)
    newton(16 if quick else 200)
    minimize(100 if quick else 10_000)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
