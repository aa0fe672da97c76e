"""Workloads of the functional transforms: nested grad, jvp, hvp, hessian, jacobians, vmap.

Each is a `body(tx, xp, *args)` written once against the transforms `tx` that
`frameworks.py` gives every framework under JAX's signatures, with a float64
reference worked out by hand in NumPy.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from benchmarks.frameworks import FRAMEWORKS
from benchmarks.workloads import (
    CHAIN_STEPS,
    chain_function,
    mlp_inputs,
    seeded_rng,
    transform_workload,
)

AUTODIFF, AUTOGRAD, TORCH = FRAMEWORKS["autodiff"], FRAMEWORKS["autograd"], FRAMEWORKS["torch"]


# ---------------------------------------------------------------------------------------------
# scalar4: four nested gradients of a scalar function: pure per-op overhead, growing graphs.

SCALAR4_ORDER = 4


def scalar4_function(xp, x):
    return xp.tanh(xp.sin(x) * x)


def scalar4_body(tx, xp, x):
    derivative = partial(scalar4_function, xp)
    for _ in range(SCALAR4_ORDER):
        derivative = tx.grad(derivative)
    return derivative(x)


def scalar4_tensors(T, xp, x):
    """Nested `autograd.grad(..., create_graph=True)` with the PyTorch-style API."""
    x = T.tensor(x, requires_grad=True)

    def call():
        derivative = scalar4_function(xp, x)
        for k in range(SCALAR4_ORDER):
            (derivative,) = T.autograd.grad(derivative, (x,), create_graph=k < SCALAR4_ORDER - 1)
        return derivative

    return call


def scalar4_reference(x):
    """Power-series arithmetic: the Taylor coefficients of tanh(sin(x)*x) at x, times k!."""
    order, x0 = SCALAR4_ORDER, float(x)
    k = np.arange(order + 1)
    factorial = np.array([math.factorial(i) for i in k], dtype=float)
    sin = np.array([np.sin(x0), np.cos(x0), -np.sin(x0), -np.cos(x0)])[k % 4] / factorial
    v = np.convolve(sin, [x0, 1.0])[: order + 1]  # sin(x0 + t) * (x0 + t)
    y, w = np.zeros(order + 1), np.zeros(order + 1)  # y = tanh(v), w = 1 - y**2
    y[0] = np.tanh(v[0])
    w[0] = 1.0 - y[0] ** 2
    for n in range(1, order + 1):  # y' = w v'
        y[n] = sum(j * v[j] * w[n - j] for j in range(1, n + 1)) / n
        w[n] = -sum(y[i] * y[n - i] for i in range(n + 1))
    return np.asarray(y[order] * factorial[order])


SCALAR4 = transform_workload(
    "scalar4",
    f"d{SCALAR4_ORDER}/dx{SCALAR4_ORDER} of tanh(sin(x)*x) at x = {{x}} by {SCALAR4_ORDER} "
    "nested grads",
    {"full": {"x": 0.7}, "quick": {"x": 0.7}},
    scalar4_body,
    scalar4_function,
    lambda x: (np.asarray(x),),
    scalar4_reference,
    programs={"torch": partial(TORCH.tensors, scalar4_tensors)},
    alternatives={
        "autodiff": {
            "autodiff.autograd.grad(create_graph=True) x4": partial(
                AUTODIFF.tensors, scalar4_tensors
            )
        },
        "torch": {"torch.func.grad x4": partial(TORCH.transforms, scalar4_body)},
    },
    notes={
        "torch": "torch.autograd.grad(create_graph=True) x4, the faster of torch's two ways "
        "(torch.func.grad x4: below)",
    },
)


# ---------------------------------------------------------------------------------------------
# jvp_chain: forward mode through the chain workload's ~200 small ops.


def jvp_chain_body(tx, xp, x, v):
    return tx.jvp(partial(chain_function, xp), (x,), (v,))


def jvp_chain_reference(x, v):
    """(chain(x), its derivative along v): the tangent carried through each step by hand."""
    for _ in range(CHAIN_STEPS):
        v = v * (1.01 * np.cos(x) + 0.1)
        x = np.sin(x) * 1.01 + 0.1 * x
    return x, v


JVP_CHAIN = transform_workload(
    "jvp_chain",
    f"jvp of {CHAIN_STEPS} x [x = sin(x)*1.01 + 0.1*x], x of {{n}}: forward-mode per-op overhead",
    {"full": {"n": 8}, "quick": {"n": 8}},
    jvp_chain_body,
    lambda xp, x, v: chain_function(xp, x),
    lambda n: tuple(seeded_rng().standard_normal((2, n))),
    jvp_chain_reference,
)


# ---------------------------------------------------------------------------------------------
# hvp, hessian: second derivatives of the Rosenbrock function.


def rosenbrock(xp, x):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """The tridiagonal Hessian, term by term."""
    n = x.size
    diagonal = np.zeros(n)
    diagonal[:-1] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    diagonal[1:] += 200.0
    off = -400.0 * x[:-1]
    return np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1)


def rosenbrock_inputs(n):
    return tuple(seeded_rng().standard_normal((2, n)))


def hvp_body(tx, xp, x, v):
    return tx.hvp(partial(rosenbrock, xp), (x,), (v,))


HVP = transform_workload(
    "hvp",
    "Hessian-vector product of the Rosenbrock function, n = {n}, forward-over-reverse",
    {"full": {"n": 1000}, "quick": {"n": 1000}},
    hvp_body,
    lambda xp, x, v: rosenbrock(xp, x),
    rosenbrock_inputs,
    lambda x, v: rosenbrock_hessian(x) @ v,
    notes={"autograd": "autograd.hessian_vector_product: reverse-over-reverse"},
)


def hessian_body(tx, xp, x):
    return tx.hessian(partial(rosenbrock, xp))(x)


HESSIAN = transform_workload(
    "hessian",
    "dense Hessian of the Rosenbrock function, n = {n}",
    {"full": {"n": 100}, "quick": {"n": 100}},
    hessian_body,
    rosenbrock,
    lambda n: rosenbrock_inputs(n)[:1],
    rosenbrock_hessian,
    notes={"autograd": "autograd.hessian: reverse-over-reverse, one vjp per row"},
)


# ---------------------------------------------------------------------------------------------
# jacrev, jacfwd, batched_vjp: y = tanh(W @ x) + x**2, a square dense Jacobian.


def tanh_layer(xp, x, w):
    return xp.tanh(w @ x) + x**2


def tanh_layer_inputs(n, batch=None):
    rng = seeded_rng()
    x, w = rng.standard_normal(n), rng.standard_normal((n, n)) / np.sqrt(n)
    return (x, w) if batch is None else (x, w, rng.standard_normal((batch, n)))


def tanh_layer_jacobian(x, w):
    return (1.0 - np.tanh(w @ x) ** 2)[:, None] * w + np.diag(2.0 * x)


def jacrev_body(tx, xp, x, w):
    return tx.jacrev(lambda x: tanh_layer(xp, x, w))(x)


def jacfwd_body(tx, xp, x, w):
    return tx.jacfwd(lambda x: tanh_layer(xp, x, w))(x)


JACREV = transform_workload(
    "jacrev",
    "reverse-mode Jacobian of tanh(W@x) + x**2, n = {n}",
    {"full": {"n": 200}, "quick": {"n": 200}},
    jacrev_body,
    tanh_layer,
    tanh_layer_inputs,
    tanh_layer_jacobian,
    notes={"autograd": "autograd.jacobian: a Python loop of vjps, one per output"},
)

JACFWD = transform_workload(
    "jacfwd",
    "forward-mode Jacobian of tanh(W@x) + x**2, n = {n}",
    {"full": {"n": 200}, "quick": {"n": 200}},
    jacfwd_body,
    tanh_layer,
    tanh_layer_inputs,
    tanh_layer_jacobian,
)


def batched_vjp_body(tx, xp, x, w, cotangents):
    _, pullback = tx.vjp(lambda x: tanh_layer(xp, x, w), x)
    return tx.vmap(pullback)(cotangents)


def batched_vjp_tensors(T, xp, x, w, cotangents):
    """One `autograd.grad(..., is_grads_batched=True)` call per forward pass."""
    x = T.tensor(x, requires_grad=True)
    w, cotangents = T.tensor(w), T.tensor(cotangents)
    return lambda: T.autograd.grad(tanh_layer(xp, x, w), (x,), cotangents, is_grads_batched=True)


BATCHED_VJP = transform_workload(
    "batched_vjp",
    "{batch} vjps of tanh(W@x) + x**2 (n = {n}) in one batched call, forward pass included",
    {"full": {"n": 256, "batch": 64}, "quick": {"n": 256, "batch": 64}},
    batched_vjp_body,
    lambda xp, x, w, cotangents: tanh_layer(xp, x, w),
    tanh_layer_inputs,
    lambda x, w, cotangents: cotangents @ tanh_layer_jacobian(x, w),
    programs={"torch": partial(TORCH.tensors, batched_vjp_tensors)},
    alternatives={
        "autodiff": {
            "autodiff.autograd.grad(is_grads_batched=True)": partial(
                AUTODIFF.tensors, batched_vjp_tensors
            )
        },
        "torch": {"torch.func.vmap(vjp_fn)": partial(TORCH.transforms, batched_vjp_body)},
    },
    notes={
        "autodiff": "vmap of the pullback from autodiff.vjp",
        "torch": "torch.autograd.grad(..., is_grads_batched=True), eager: torch batches the "
        "matrix-vector backward as a bmm over 64 copies of W and runs tanh_backward once per "
        "cotangent, so torch.func.vmap(vjp_fn) (below) is faster",
    },
)


# ---------------------------------------------------------------------------------------------
# per_example: per-example gradients of a small MLP, vmap of grad.


def example_loss(xp, params, x, y):
    """Squared error of one example (or the sum over a batch: the NumPy forward pass)."""
    w1, b1, w2, b2 = params
    r = xp.tanh(x @ w1 + b1) @ w2 + b2 - y
    return xp.sum(r * r)


def per_example_body(tx, xp, params, x, y):
    return tx.vmap(tx.grad(partial(example_loss, xp)), in_axes=(None, 0, 0))(params, x, y)


def per_example_loop(tx, xp, params, x, y):
    """For a framework without vmap: one grad per example, stacked."""
    grad = tx.grad(partial(example_loss, xp))
    grads = [grad(params, xi, yi) for xi, yi in zip(x, y)]
    return tuple(xp.stack(leaf) for leaf in zip(*grads))


def per_example_reference(params, x, y):
    """Backpropagation by hand, with a leading batch axis on every gradient."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    dr = 2.0 * (h @ w2 + b2 - y)
    da = (dr @ w2.T) * (1.0 - h * h)
    return (x[:, :, None] * da[:, None, :], da, h[:, :, None] * dr[:, None, :], dr)


PER_EXAMPLE = transform_workload(
    "per_example",
    "per-example gradients of a tanh MLP {widths}, squared error, batch {batch}: vmap(grad)",
    {
        "full": {"batch": 64, "widths": (16, 32, 1)},
        "quick": {"batch": 64, "widths": (16, 32, 1)},
    },
    per_example_body,
    example_loss,
    mlp_inputs,
    per_example_reference,
    programs={"autograd": partial(AUTOGRAD.transforms, per_example_loop)},
    alternatives={
        "autodiff": {"Python loop of autodiff.grad": partial(AUTODIFF.transforms, per_example_loop)}
    },
    notes={"autograd": "a Python loop of autograd.grad over the examples, stacked (no vmap)"},
)


TRANSFORM_WORKLOADS = (
    SCALAR4,
    JVP_CHAIN,
    HVP,
    HESSIAN,
    JACREV,
    JACFWD,
    BATCHED_VJP,
    PER_EXAMPLE,
)
