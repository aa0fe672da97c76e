"""The `jax` facade: JAX's public names mapped onto autodiff, for running JAX's own tests.

Only renames: every semantic comes from autodiff. `jax.jit` is autodiff.jit when the
environment sets JAX_SUITE_JIT=1, else the identity ("without jit"). Submodules JAX's tests
import but autodiff has no counterpart for are placeholders (jax/_stubs.py).
"""

# ruff: noqa: F401 (a namespace: what it imports, it re-exports)

import os

import numpy as _np

import autodiff as _ad
from autodiff import (
    ShapeDtypeStruct,
    block_until_ready,
    checking_leaks,
    checkpoint,
    checkpoint_policies,
    custom_jvp,
    custom_vjp,
    disable_jit,
    eval_shape,
    float0,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    remat,
    tree_util,
    value_and_grad,
    vjp,
    vmap,
)
from autodiff import Tensor as Array
from autodiff import make_graph as make_jaxpr

from . import _stubs, lax, numpy, tree
from ._stubs import config

check_tracer_leaks = checking_leaks


def _identity_jit(fun=None, **options):
    return fun if fun is not None else (lambda f: f)


jit = _ad.jit if os.environ.get("JAX_SUITE_JIT") == "1" else _identity_jit


def device_put(x, device=None, **options):
    """One CPU device: putting is making arrays."""
    return tree_util.tree_map(numpy.asarray, x)


def device_get(x):
    return tree_util.tree_map(_np.asarray, x)


# Flags used as decorators and contexts: hints without effect here.
default_matmul_precision = legacy_prng_key = numpy_dtype_promotion = _stubs._Flag("flag")
numpy_rank_promotion = enable_checks = debug_key_reuse = _stubs._Flag("flag")


def __getattr__(name):
    return _stubs.Missing(f"jax.{name}")
