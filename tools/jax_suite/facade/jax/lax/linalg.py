"""`jax.lax.linalg`: `autodiff.lax.linalg`, with placeholders for the names it lacks."""

from autodiff.lax.linalg import *  # noqa: F403
from jax import _stubs


def __getattr__(name):
    return _stubs.Missing(f"jax.lax.linalg.{name}")
