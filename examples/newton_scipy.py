"""Newton's method and scipy.optimize.minimize with exact gradients, Hessians and HVPs.

    python examples/newton_scipy.py [--quick]

Tutorial: docs/tutorials/newton_scipy.md.
"""

import sys

import numpy as np

import autodiff as ad
import autodiff.numpy as anp


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def newton(f, x, steps=50, tol=1e-10):
    """Damped Newton iterations with exact gradient and Hessian; returns the iterates."""
    gradient, hessian = ad.grad(f), ad.hessian(f)
    path = [x]
    for _ in range(steps):
        g = gradient(x)
        if np.linalg.norm(g) < tol:
            break
        step = np.linalg.solve(hessian(x), g)
        t = 1.0
        while f(x - t * step) > f(x) and t > 1e-8:  # backtrack until the value decreases
            t /= 2
        x = x - t * step
        path.append(x)
    return np.array(path)


def main(quick: bool = False) -> None:
    n = 4 if quick else 10
    x0 = np.full(n, -1.0)
    path = newton(rosenbrock, x0)
    print(f"Newton: {len(path) - 1} steps, f = {rosenbrock(path[-1]):.2e}")

    try:
        from scipy.optimize import minimize
    except ImportError:
        print("scipy not installed: skipping scipy.optimize.minimize")
        return
    hessp = lambda x, v: ad.hvp(rosenbrock, (x,), (v,))
    for method, extra in (
        ("BFGS", {}),
        ("Newton-CG", {"hessp": hessp}),
        ("trust-exact", {"hess": ad.hessian(rosenbrock)}),
    ):
        result = minimize(rosenbrock, x0, jac=ad.grad(rosenbrock), method=method, **extra)
        print(f"{method:12s} nit={result.nit:4d} f={result.fun:.2e} x[0]={result.x[0]:.6f}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
