"""`python -m autodiff`: exact derivatives of scientific functions beside central differences."""

import numpy as np

import autodiff as ad
import autodiff.numpy as anp


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def mlp_loss(params, inputs, targets):
    (w1, b1), (w2, b2) = params
    hidden = anp.tanh(inputs @ w1 + b1)
    return anp.mean((hidden @ w2 + b2 - targets) ** 2)


def scalar(x):
    return anp.tanh(anp.sin(x) * x)


def central_difference(f, x, h=1e-6):
    """Gradient of scalar f at array x by central differences, one coordinate at a time."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _row(name, exact, estimate):
    exact, estimate = np.ravel(exact), np.ravel(estimate)
    err = np.max(np.abs(exact - estimate)) / max(1.0, np.max(np.abs(estimate)))
    shown = ", ".join(f"{v:+.6f}" for v in exact[:3])
    approx = ", ".join(f"{v:+.6f}" for v in estimate[:3])
    print(f"{name:<34} autodiff [{shown}{', ...' if exact.size > 3 else ''}]")
    print(f"{'':<34} central  [{approx}{', ...' if estimate.size > 3 else ''}]  rel. err {err:.1e}")


def main() -> None:
    rng = np.random.default_rng(0)
    print("autodiff demo: exact derivatives beside central-difference estimates\n")

    x = rng.uniform(-1.5, 1.5, 6)
    _row("Rosenbrock gradient (n=6)", ad.grad(rosenbrock)(x), central_difference(rosenbrock, x))

    params = [
        (rng.normal(size=(4, 8)) * 0.5, np.zeros(8)),
        (rng.normal(size=(8, 2)) * 0.5, np.zeros(2)),
    ]
    inputs, targets = rng.normal(size=(16, 4)), rng.normal(size=(16, 2))
    g = ad.grad(mlp_loss)(params, inputs, targets)
    w1 = params[0][0]
    est = central_difference(
        lambda w: mlp_loss([(w, params[0][1]), params[1]], inputs, targets), w1
    )
    _row("MLP loss gradient, first layer", g[0][0], est)

    d = scalar
    for _ in range(4):
        d = ad.grad(d)
    d3 = ad.grad(ad.grad(ad.grad(scalar)))
    x0 = 0.7
    _row("4th derivative of tanh(sin(x)*x)", d(x0), (d3(x0 + 1e-4) - d3(x0 - 1e-4)) / 2e-4)


if __name__ == "__main__":
    main()
