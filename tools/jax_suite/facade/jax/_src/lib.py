"""`jax._src.lib`: the version the tests compare against (that of the jaxlib jax 0.10.2 uses)."""

from jax._stubs import Missing

jaxlib_extension_version = 467
__all__ = ["jaxlib_extension_version"]


def __getattr__(name):
    return Missing(f"jax._src.lib.{name}")
