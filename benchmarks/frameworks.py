"""The columns of the benchmark table: each framework's setup in its child, and its programs.

Every framework is imported only inside its own functions, so a child process
imports one framework and nothing else, and the parent imports none of them.
Workloads are written once, and each framework turns them into a zero-argument
call with its own idiomatic API:

- a gradient workload is a loss against an array namespace `xp` (`autodiff.numpy`,
  `autograd.numpy`, `torch`, `jax.numpy` or `numpy`): `Framework.grad`;
- a transform workload is a `body(tx, xp, *arrays)`, where `tx` holds the
  framework's functional transforms under JAX's signatures (`grad`, `jvp`, `vjp`,
  `vmap`, `hessian`, `jacrev`, `jacfwd`, `hvp`): `Framework.transforms`;
- a tensor workload is a `body(T, xp, *numpy_arrays) -> call` against the
  PyTorch-style API (`T` is `torch` or `autodiff`): `Framework.tensors`.

A framework that lacks a transform raises NotImplementedError from it, and its
cell shows "n/a".

With `--baseline DIR`, one more column, `autodiff@base` (BASELINE), runs autodiff's very
programs in a worker that imports `autodiff` from the checkout at DIR (`import_autodiff_from`):
the same suite, before and after a change, in one run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

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
        transforms: `(body, args) -> call`, where `call()` runs `body(tx, xp, *args)` on this
            framework's arrays, or None.
        tensors: `(body, args) -> call`, where `body(T, xp, *args)` builds the call with the
            PyTorch-style API, or None.
    """

    name: str
    module: str
    setup: Callable[[], None]
    grad: Callable[..., Callable[[], object]]
    checked: bool = True
    transforms: Callable[..., Callable[[], object]] | None = None
    tensors: Callable[..., Callable[[], object]] | None = None


def _no_setup() -> None:
    pass


def _numpy_forward(loss, argnums, args):
    import numpy

    return partial(loss, numpy, *args)


def _autodiff_grad(loss, argnums, args, *, jit: bool = False):
    import autodiff
    import autodiff.numpy as anp

    g = autodiff.grad(partial(loss, anp), argnums=argnums)
    return partial(autodiff.jit(g) if jit else g, *args)


def _autodiff_transforms(body, args, *, jit: bool = False):
    """The whole body is one `autodiff.jit` in the jit column."""
    import autodiff
    import autodiff.numpy as anp

    run = partial(body, autodiff, anp)
    return partial(autodiff.jit(run) if jit else run, *args)


def _autodiff_tensors(body, args):
    import autodiff
    import autodiff.numpy as anp

    return body(autodiff, anp, *args)


def _autograd_grad(loss, argnums, args):
    import autograd
    import autograd.numpy as agnp

    return partial(autograd.grad(partial(loss, agnp), argnum=argnums), *args)


def _unsupported(what: str) -> Callable:
    def missing(*args, **kwargs):
        raise NotImplementedError(what)

    return missing


def _autograd_transforms(body, args):
    """HIPS autograd's operators under JAX's signatures; it has no vmap and no forward jacobian."""
    import autograd
    import autograd.numpy as agnp
    from autograd.differential_operators import make_jvp, make_vjp

    def jvp(f, primals, tangents):
        (x,), (v,) = primals, tangents  # make_jvp differentiates one argument
        return make_jvp(f)(x)(v)

    def vjp(f, x):
        pullback, out = make_vjp(f)(x)
        return out, lambda ct: (pullback(ct),)

    tx = SimpleNamespace(
        grad=lambda f, argnums=0: autograd.grad(f, argnum=argnums),
        jvp=jvp,
        vjp=vjp,
        vmap=_unsupported("HIPS autograd has no vmap"),
        hessian=autograd.hessian,
        jacrev=autograd.jacobian,
        jacfwd=_unsupported("HIPS autograd has no forward-mode jacobian"),
        hvp=lambda f, primals, tangents: autograd.hessian_vector_product(f)(*primals, *tangents),
    )
    return partial(body, tx, agnp, *args)


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


def _torch_transforms(body, args):
    """torch.func; inputs are shared with NumPy (`torch.from_numpy`), made once."""
    import torch
    import torch.func as tf

    tx = SimpleNamespace(
        grad=tf.grad,
        jvp=tf.jvp,
        vjp=tf.vjp,
        vmap=lambda f, in_axes=0: tf.vmap(f, in_dims=in_axes),
        hessian=tf.hessian,
        jacrev=tf.jacrev,
        jacfwd=tf.jacfwd,
        hvp=lambda f, primals, tangents: tf.jvp(tf.grad(f), primals, tangents)[1],
    )
    return partial(body, tx, torch, *(_tree_map(torch.from_numpy, a) for a in args))


def _torch_tensors(body, args):
    import torch

    return body(torch, torch, *args)


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


def _jax_transforms(body, args, *, jit: bool):
    """The whole body is one `jax.jit` in the jit column; every call waits for its result."""
    import jax
    import jax.numpy as jnp

    tx = SimpleNamespace(
        grad=jax.grad,
        jvp=jax.jvp,
        vjp=jax.vjp,
        vmap=lambda f, in_axes=0: jax.vmap(f, in_axes=in_axes),
        hessian=jax.hessian,
        jacrev=jax.jacrev,
        jacfwd=jax.jacfwd,
        hvp=lambda f, primals, tangents: jax.jvp(jax.grad(f), primals, tangents)[1],
    )
    run = partial(body, tx, jnp)
    if jit:
        run = jax.jit(run)
    jargs = [_tree_map(jnp.asarray, a) for a in args]
    return lambda: jax.block_until_ready(run(*jargs))


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework(
            "autodiff",
            "autodiff",
            _no_setup,
            _autodiff_grad,
            transforms=_autodiff_transforms,
            tensors=_autodiff_tensors,
        ),
        Framework(
            "autodiff.jit",
            "autodiff",
            _no_setup,
            partial(_autodiff_grad, jit=True),
            transforms=partial(_autodiff_transforms, jit=True),
        ),
        Framework(
            "autograd", "autograd", _no_setup, _autograd_grad, transforms=_autograd_transforms
        ),
        Framework(
            "torch",
            "torch",
            _torch_setup,
            _torch_grad,
            transforms=_torch_transforms,
            tensors=_torch_tensors,
        ),
        Framework(
            "jax",
            "jax",
            _jax_setup,
            partial(_jax_grad, jit=False),
            transforms=partial(_jax_transforms, jit=False),
        ),
        Framework(
            "jax.jit",
            "jax",
            _jax_setup,
            partial(_jax_grad, jit=True),
            transforms=partial(_jax_transforms, jit=True),
        ),
        Framework("numpy-fwd", "numpy", _no_setup, _numpy_forward, checked=False),
    )
}


# The column of `--baseline DIR`: autodiff's programs, run by a worker whose `autodiff` is DIR's.
BASELINE = "autodiff@base"


def is_autodiff_checkout(path: str) -> bool:
    """Whether `path` holds an importable `autodiff` package (a checkout or a worktree)."""
    return os.path.isfile(os.path.join(path, "autodiff", "__init__.py"))


def import_autodiff_from(path: str) -> str:
    """Make this process's `autodiff` the one in the checkout at `path`, before anything imports
    it; returns that package's directory.

    The worker runs `python -m benchmarks` from this checkout, so the current directory (this
    checkout's own `autodiff`) comes first on `sys.path`; `path` goes before it. The suite's own
    modules (`benchmarks.*`) are already imported from this checkout and stay so: both columns
    run the same workloads and harness, and only `autodiff` differs.
    """
    if "autodiff" in sys.modules:
        raise RuntimeError("autodiff is already imported: the baseline cannot replace it")
    path = os.path.realpath(path)
    sys.path.insert(0, path)
    import autodiff

    package = os.path.dirname(os.path.realpath(autodiff.__file__))
    if package != os.path.join(path, "autodiff"):
        raise RuntimeError(f"autodiff was imported from {package}, not from {path}")
    return package


def child_environment() -> dict[str, str]:
    """A child process's environment: this one's, with every thread pool pinned to one thread,
    and Python's bytecode cache on, as users have it (with PYTHONDONTWRITEBYTECODE set, as some
    tools set it, every import compiles every module again: `import autodiff` then measured
    ~0.35-0.45 s instead of ~0.18 s on the same machine)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(THREAD_ENV)
    return env


def child_cpu() -> int | None:
    """The CPU every child is bound to (the last one this process may use), if the OS can bind."""
    return max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def bind_to_child_cpu() -> None:
    """Bind this process to `child_cpu()`; call before a framework starts any thread.

    Thread-count settings are not enough (XLA keeps a thread pool per core), so that no
    column can use a second core.
    """
    if (cpu := child_cpu()) is not None:
        os.sched_setaffinity(0, {cpu})
