"""Error types raised by the tracer layer."""

import reprlib

import numpy as np


class EscapedTracerError(RuntimeError):
    """A tracer of a finished function transform was used in a new computation.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> leaked = []
        >>> _ = ad.grad(lambda x: leaked.append(x) or anp.sin(x))(1.0)
        >>> anp.cos(leaked[0])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        autodiff.core.errors.EscapedTracerError: Encountered an unexpected tracer: a tracer ...
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


# ---------------------------------------------------------- messages of the functional face
# The functional transforms raise JAX's exception types with messages that carry JAX's key
# phrases (so that `pytest.raises(match=...)` written against JAX still matches) and name
# the function and argument concerned.


def type_str(x) -> str:
    """A value's type in JAX's short form: `float32[10,4]`, `int64[]`.

    Example:
        >>> import numpy as np
        >>> type_str(np.ones((2, 3), np.float32)), type_str(1.0)
        ('float32[2,3]', 'float64[]')
    """
    dtype = getattr(x, "dtype", None)
    shape = getattr(x, "shape", None)
    if dtype is None or shape is None:
        arr = np.asarray(x)
        dtype, shape = arr.dtype, arr.shape
    name = "float0" if np.dtype(dtype).names == ("float0",) else np.dtype(dtype).name
    return f"{name}[{','.join(str(d) for d in shape)}]"


def conversion_hint(kind: str) -> str:
    """JAX's advice for `float(x)`, `int(x)`, `complex(x)` on a traced value (its phrase kept).

    Example:
        >>> "`x.astype(float)`" in conversion_hint("float")
        True
    """
    return (
        "Abstract tracer value encountered where concrete value is expected: the problem arose "
        f"with the `{kind}` function. If trying to convert the data type of a value, try using "
        f"`x.astype({kind})` or `autodiff.numpy.asarray(x, {kind})` instead. "
    )


def index_hint(tracer) -> str:
    """JAX's words for `operator.index(x)` (a list index, `range(x)`) on a traced value: an
    integer one "was called on traced array", any other is no index at all (NumPy's words).

    Example:
        >>> import numpy as np
        >>> index_hint(np.zeros((), np.int64))
        'The __index__() method was called on traced array with shape int64[]. '
    """
    if np.dtype(tracer.dtype).kind not in "iub" or tuple(tracer.shape) != ():
        return "Only integer scalar arrays can be converted to a scalar index. "
    return f"The __index__() method was called on traced array with shape {type_str(tracer)}. "


def invalid_value_error(x, where: str) -> TypeError:
    """The error for a value that is not an array, a scalar or a Tensor (`where` names it:
    "argument 0 of f"), in JAX's words ("... is not a valid JAX type").

    Example:
        >>> print(invalid_value_error("foo", "argument 0 of f"))  # doctest: +ELLIPSIS
        Argument 'foo' of type <class 'str'> is not a valid JAX type: argument 0 of f must be ...
    """
    what = f"dtype {x.dtype}" if hasattr(x, "dtype") else f"type {type(x)}"
    return TypeError(
        f"Argument {reprlib.repr(x)} of {what} is not a valid JAX type: {where} must be an array, "
        "a scalar or a Tensor (or a pytree of them: a list or tuple is a pytree, np.asarray(x) "
        "makes it an array)."
    )
