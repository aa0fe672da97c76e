"""`jax._src.api`: the public transforms, as `jax` has them."""

import jax


def __getattr__(name):
    return getattr(jax, name)
