"""`jax._src.core`: autodiff's errors and tracer type; the rest are placeholders."""

from autodiff import ConcretizationError as ConcretizationTypeError
from autodiff import EscapedTracerError as UnexpectedTracerError
from autodiff import Tensor as Tracer
from jax._stubs import Missing

__all__ = ["ConcretizationTypeError", "Tracer", "UnexpectedTracerError"]


def __getattr__(name):
    return Missing(f"jax._src.core.{name}")
