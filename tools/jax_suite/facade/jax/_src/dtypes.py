"""`jax._src.dtypes`: the dtype helpers JAX's tests use."""

import numpy as np

from autodiff import float0
from jax._stubs import Missing

__all__ = ["canonicalize_dtype", "float0"]


def canonicalize_dtype(dtype, allow_extended_dtype=False):
    return np.dtype(dtype)


def __getattr__(name):
    return Missing(f"jax._src.dtypes.{name}")
