"""Fit Gaussian-process hyperparameters by gradient descent on the negative log marginal likelihood.

    python examples/gaussian_process.py [--quick]

Tutorial: docs/tutorials/gaussian_process.md.
"""

import sys

import numpy as np

import autodiff as ad
import autodiff.numpy as anp


def rbf_kernel(xa, xb, log_length, log_amplitude):
    sq = (xa[:, None] - xb[None, :]) ** 2
    return anp.exp(2 * log_amplitude) * anp.exp(-0.5 * sq / anp.exp(2 * log_length))


def negative_log_likelihood(theta, x, y):
    """-log p(y | x, theta) for theta = (log length, log amplitude, log noise)."""
    log_length, log_amplitude, log_noise = theta[0], theta[1], theta[2]
    K = rbf_kernel(x, x, log_length, log_amplitude) + anp.exp(2 * log_noise) * anp.eye(len(x))
    L = anp.linalg.cholesky(K)
    alpha = anp.linalg.solve(K, y)
    return (
        0.5 * anp.dot(y, alpha)
        + anp.sum(anp.log(anp.diagonal(L)))
        + 0.5 * len(x) * np.log(2 * np.pi)
    )


def predict(theta, x, y, x_new):
    log_length, log_amplitude, log_noise = theta
    K = rbf_kernel(x, x, log_length, log_amplitude) + np.exp(2 * log_noise) * np.eye(len(x))
    K_new = rbf_kernel(x_new, x, log_length, log_amplitude)
    return K_new @ np.linalg.solve(K, y)


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, n))
    return x, np.sin(2 * x) + 0.1 * rng.normal(size=n)


def fit(x, y, theta0=(0.0, 0.0, -1.0), steps=200, lr=0.05):
    """Adam on the negative log marginal likelihood; returns theta and the loss history."""
    value_and_grad = ad.value_and_grad(negative_log_likelihood)
    theta = np.array(theta0, dtype=float)
    m, v, history = np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        loss, g = value_and_grad(theta, x, y)
        history.append(float(loss))
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g**2
        theta = theta - lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return theta, history


def main(quick: bool = False) -> None:
    x, y = make_data(20 if quick else 40)
    theta, history = fit(x, y, steps=30 if quick else 300)
    length, amplitude, noise = np.exp(theta)
    print(f"loss {history[0]:.2f} -> {history[-1]:.2f}")
    print(f"length scale {length:.3f}, amplitude {amplitude:.3f}, noise {noise:.3f}")
    try:
        from scipy.optimize import minimize
    except ImportError:
        return
    result = minimize(
        negative_log_likelihood,
        np.zeros(3),
        args=(x, y),
        jac=ad.grad(negative_log_likelihood),
        method="L-BFGS-B",
    )
    print(f"L-BFGS-B: loss {result.fun:.2f}, hyperparameters {np.exp(result.x).round(3)}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
