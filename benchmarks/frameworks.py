"""The columns of the benchmark table: each framework's setup in its child, and its gradient.

Every framework is imported only inside its own functions, so a child process
imports one framework and nothing else, and the parent imports none of them.
A gradient workload is a loss written once against an array namespace `xp`
(`autodiff.numpy`, `autograd.numpy`, `torch`, `jax.numpy` or `numpy`); each
framework turns it into a zero-argument call with its own idiomatic API.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

# Set by the parent in every child's environment, so that all columns run on one core.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
    "JAX_ENABLE_X64": "1",
}


@dataclass(frozen=True)
class Framework:
    """One column of the table.

    Arguments:
        name: the column heading.
        module: the top-level module whose presence decides whether the column runs.
        setup: called once in the child before any workload (imports, thread pinning, float64).
        grad: `(loss, argnums, args) -> call`, where `call()` computes the gradient of
            `loss(xp, *args)` with respect to `args[argnums]` (the numpy column: the forward pass).
        checked: whether results are compared with the workload's float64 reference gradient.
    """

    name: str
    module: str
    setup: Callable[[], None]
    grad: Callable[..., Callable[[], object]]
    checked: bool = True


def _no_setup() -> None:
    pass


def _numpy_forward(loss, argnums, args):
    import numpy

    return partial(loss, numpy, *args)


def _autodiff_grad(loss, argnums, args):
    import autodiff
    import autodiff.numpy as anp

    return partial(autodiff.grad(partial(loss, anp), argnums=argnums), *args)


def _autograd_grad(loss, argnums, args):
    import autograd
    import autograd.numpy as agnp

    return partial(autograd.grad(partial(loss, agnp), argnum=argnums), *args)


def _torch_setup() -> None:
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.set_default_dtype(torch.float64)


def _tree_map(f, tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(_tree_map(f, t) for t in tree)
    return f(tree)


def _torch_grad(loss, argnums, args):
    """Leaf tensors are made once; each call records a new graph and runs `torch.autograd.grad`."""
    import torch

    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    leaves = []

    def leaf(a):
        t = torch.from_numpy(a).requires_grad_()
        leaves.append(t)
        return t

    targs = [
        _tree_map(leaf, a) if i in wrt else _tree_map(torch.from_numpy, a)
        for i, a in enumerate(args)
    ]
    return lambda: torch.autograd.grad(loss(torch, *targs), leaves)


def _jax_setup() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")


def _jax_grad(loss, argnums, args, *, jit: bool):
    """Inputs are placed on the device once; each call waits for its result (block_until_ready)."""
    import jax
    import jax.numpy as jnp

    g = jax.grad(partial(loss, jnp), argnums=argnums)
    if jit:
        g = jax.jit(g)
    jargs = [_tree_map(jnp.asarray, a) for a in args]
    return lambda: jax.block_until_ready(g(*jargs))


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework("autodiff", "autodiff", _no_setup, _autodiff_grad),
        Framework("autograd", "autograd", _no_setup, _autograd_grad),
        Framework("torch", "torch", _torch_setup, _torch_grad),
        Framework("jax", "jax", _jax_setup, partial(_jax_grad, jit=False)),
        Framework("jax.jit", "jax", _jax_setup, partial(_jax_grad, jit=True)),
        Framework("numpy-fwd", "numpy", _no_setup, _numpy_forward, checked=False),
    )
}


def child_environment() -> dict[str, str]:
    """A child process's environment: this one's, with every thread pool pinned to one thread."""
    env = dict(os.environ)
    env.update(THREAD_ENV)
    return env
