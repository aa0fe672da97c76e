"""`jax._src.config`: JAX's flags read as their defaults (jax/_stubs.py)."""

from jax._stubs import _Flag, config

__all__ = ["config"]


def __getattr__(name):
    return _Flag(name)
