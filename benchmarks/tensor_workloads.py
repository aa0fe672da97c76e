"""Workloads of the PyTorch-style API: an imperative training step, and a gradient penalty.

Each is a `body(T, xp, *args) -> call` written once against `T = autodiff` or
`T = torch` (`T.tensor`, `T.no_grad`, `T.autograd.grad`, `.backward()`), with a
float64 reference worked out by hand in NumPy.
"""

from __future__ import annotations

import numpy as np

from benchmarks.workloads import mlp_gradient, mlp_inputs, mlp_loss, seeded_rng, tensor_workload

# ---------------------------------------------------------------------------------------------
# train_step: forward, loss.backward(), SGD update under no_grad, gradients set to None.

LEARNING_RATE = 0.01


def train_step_body(T, xp, params, x, y):
    """Each call trains one step, so the parameters change from call to call.

    Returns the loss and the gradients of that step (fresh tensors every step,
    since `.grad` is reset to None, as `optimizer.zero_grad()` does by default).
    """
    params = [T.tensor(p, requires_grad=True) for p in params]
    x, y = T.tensor(x), T.tensor(y)

    def step():
        loss = mlp_loss(xp, params, x, y)
        loss.backward()
        grads = [p.grad for p in params]
        with T.no_grad():
            for p in params:
                p -= LEARNING_RATE * p.grad
        for p in params:
            p.grad = None
        return loss.detach(), grads

    return step


TRAIN_STEP = tensor_workload(
    "train_step",
    "one SGD step of a tanh MLP {widths}, batch {batch}, MSE: forward, loss.backward(), "
    "update under no_grad, .grad = None",
    {
        "full": {"batch": 128, "widths": (64, 256, 256, 10)},
        "quick": {"batch": 32, "widths": (64, 256, 256, 10)},
    },
    train_step_body,
    mlp_loss,
    mlp_inputs,
    lambda params, x, y: (mlp_loss(np, params, x, y), mlp_gradient(params, x, y)),
)


# ---------------------------------------------------------------------------------------------
# double_backward: a gradient penalty, loss = sum(y) + ||d sum(y) / dx||^2, y = tanh(x @ W).


def penalty_forward(xp, x, w):
    return xp.sum(xp.tanh(x @ w))


def double_backward_body(T, xp, x, w):
    x, w = T.tensor(x, requires_grad=True), T.tensor(w, requires_grad=True)

    def call():
        total = penalty_forward(xp, x, w)
        (dx,) = T.autograd.grad(total, (x,), create_graph=True)
        return T.autograd.grad(total + (dx * dx).sum(), (w,))

    return call


def double_backward_inputs(batch, n):
    rng = seeded_rng()
    return rng.standard_normal((batch, n)), rng.standard_normal((n, n)) / np.sqrt(n)


def double_backward_reference(x, w):
    """Second-order backpropagation by hand: s = 1 - tanh(x@W)**2 and g = d sum(y)/dx = s @ W.T."""
    t = np.tanh(x @ w)
    s = 1.0 - t * t
    g = s @ w.T
    ds = 2.0 * g @ w  # the penalty's cotangent of s
    return (x.T @ s + 2.0 * g.T @ s + x.T @ (ds * -2.0 * t * s),)


DOUBLE_BACKWARD = tensor_workload(
    "double_backward",
    "gradient penalty: grad w.r.t. W of sum(y) + ||d sum(y)/dx||^2, y = tanh(x @ W), "
    "x {batch}x{n}, W {n}x{n} (create_graph=True)",
    {"full": {"batch": 128, "n": 64}, "quick": {"batch": 128, "n": 64}},
    double_backward_body,
    penalty_forward,
    double_backward_inputs,
    double_backward_reference,
)

TENSOR_WORKLOADS = (TRAIN_STEP, DOUBLE_BACKWARD)
