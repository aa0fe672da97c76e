"""Error types raised by the tracer layer."""


class EscapedTracerError(RuntimeError):
    """A tracer of a finished function transform was used in a new computation."""


class TracerConversionError(TypeError):
    """A tracer was converted to a concrete NumPy array, which would drop its derivative."""
