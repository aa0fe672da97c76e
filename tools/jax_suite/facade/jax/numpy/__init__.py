"""`jax.numpy`: autodiff.numpy."""

from autodiff.numpy import *  # noqa: F403
from autodiff.numpy import fft, linalg  # noqa: F401
from jax import _stubs


def __getattr__(name):
    return _stubs.Missing(f"jax.numpy.{name}")
