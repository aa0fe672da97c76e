"""`jax.errors`: autodiff's errors under JAX's names."""

from autodiff import ConcretizationError as ConcretizationTypeError
from autodiff import EscapedTracerError as UnexpectedTracerError
from autodiff import TracerConversionError as TracerArrayConversionError
from autodiff import TracerConversionError as TracerBoolConversionError
from autodiff import TracerConversionError as TracerIntegerConversionError

__all__ = [
    "ConcretizationTypeError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
