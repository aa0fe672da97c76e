"""`jax.lax`: `autodiff.lax`, with placeholders for the names it lacks."""

# ruff: noqa: F401 (a namespace: what it imports, it re-exports)

import enum

from autodiff.lax import *  # noqa: F403
from autodiff.lax import linalg
from autodiff.numpy import bitwise_and, bitwise_xor
from jax import _stubs


class Precision(enum.Enum):
    """Matmul precision: a hint without effect on the CPU."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


def __getattr__(name):
    return _stubs.Missing(f"jax.lax.{name}")


def platform_dependent(*args, default=None, **per_platform):
    """The CPU's branch (or the default): this is the only platform."""
    return (per_platform.get("cpu") or default)(*args)
