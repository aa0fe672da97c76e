"""Error types raised by the tracer layer."""


class EscapedTracerError(RuntimeError):
    """A tracer of a finished function transform was used in a new computation.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> leaked = []
        >>> _ = ad.grad(lambda x: leaked.append(x) or anp.sin(x))(1.0)
        >>> anp.cos(leaked[0])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        autodiff.core.errors.EscapedTracerError: A tracer from a finished ReverseTrace ...
    """


class TracerConversionError(TypeError):
    """A tracer was converted to a concrete NumPy array or Python number (`np.asarray`,
    `float()`, `int()`, `.item()`, `.tolist()`, ...), which would drop its derivative.
    `bool()` (Python control flow) is allowed where the value is concrete.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda x: np.asarray(x).sum())(1.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        autodiff.core.errors.TracerConversionError: Cannot convert a ReverseTracer to a ...
        >>> ad.grad(lambda x: float(x) * x)(1.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        autodiff.core.errors.TracerConversionError: Cannot convert a ReverseTracer to a Python ...
    """


class ConcretizationError(TracerConversionError):
    """A value that is only known by its shape and dtype (staged by `jit`, or an abstract
    value) was asked for its contents: converted to a Python or NumPy value, used in Python
    control flow, or needed to know an output's shape (a boolean mask, `unique`).

    The message names where the value came from and the ways out: mark the argument static
    (`static_argnums`), use structured control flow (`autodiff.cond`, `autodiff.while_loop`),
    or compute the value outside the staged function.
    """
