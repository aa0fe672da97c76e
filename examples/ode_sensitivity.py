"""Sensitivity of an ODE solution to its parameters: differentiate through an RK4 integrator.

    python examples/ode_sensitivity.py [--quick]

Tutorial: docs/tutorials/ode_sensitivity.md.
"""

import sys

import numpy as np

import autodiff as ad
import autodiff.numpy as anp


def lotka_volterra(state, params):
    """Predator-prey dynamics: d(prey, predator)/dt."""
    prey, predator = state[0], state[1]
    a, b, c, d = params[0], params[1], params[2], params[3]
    return anp.stack([a * prey - b * prey * predator, d * prey * predator - c * predator])


def integrate(params, state0, t_end=10.0, steps=200):
    """Classical Runge-Kutta with a fixed step; returns the states at every step."""
    h = t_end / steps
    state, states = state0, [state0]
    for _ in range(steps):
        k1 = lotka_volterra(state, params)
        k2 = lotka_volterra(state + 0.5 * h * k1, params)
        k3 = lotka_volterra(state + 0.5 * h * k2, params)
        k4 = lotka_volterra(state + h * k3, params)
        state = state + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
        states.append(state)
    return anp.stack(states)


PARAMS = np.array([1.0, 0.4, 1.0, 0.2])
STATE0 = np.array([5.0, 2.0])


def main(quick: bool = False) -> None:
    steps = 40 if quick else 200
    final = lambda p: integrate(p, STATE0, steps=steps)[-1]
    forward = ad.jacfwd(final)(PARAMS)  # 4 parameters -> forward mode is natural
    reverse = ad.jacrev(final)(PARAMS)
    h = 1e-6
    central = np.stack(
        [(final(PARAMS + h * e) - final(PARAMS - h * e)) / (2 * h) for e in np.eye(4)], axis=1
    )
    print("d final state / d (a, b, c, d):")
    print(np.array2string(forward, precision=4))
    print(f"jacfwd vs jacrev: {np.max(np.abs(forward - reverse)):.1e}")
    print(f"jacfwd vs central differences: {np.max(np.abs(forward - central)):.1e}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
