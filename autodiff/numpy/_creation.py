"""Array creation and inspection, Tensor-aware: constants, except the ranges built from
endpoints (linspace, logspace, geomspace), differentiable in them.

The ranges are written with autodiff's functions, so every transform (vmap and jit
included) sees through them; on constant endpoints they are NumPy's own.
"""

from __future__ import annotations

import operator

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops.elementwise import astype, floor, log10, power, sign, where
from autodiff.ops.reduce import any as any_
from autodiff.ops.shape import broadcast_to, expand_dims, moveaxis, reshape
from autodiff.ops.structural import shape_of


def _shape_dtype(a, dtype):
    if isinstance(a, Tensor):
        return a.shape, (a.dtype if dtype is None else np.dtype(dtype))
    a = np.asarray(a)
    return a.shape, (a.dtype if dtype is None else np.dtype(dtype))


def _like(a, value):
    """A constant array of `value` with the shape of `a` (a Tensor stays a Tensor at level 0)."""
    return Tensor(value) if isinstance(a, Tensor) and a._trace is EVAL_TRACE else value


def zeros_like(a, dtype=None, shape=None):
    """`numpy.zeros_like`: a constant (no derivative flows through it).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> zeros_like(np.ones((2, 2))).tolist()
        [[0.0, 0.0], [0.0, 0.0]]
        >>> ad.grad(lambda x: (x + zeros_like(x)).sum())(np.ones(2))  # only `x` counts
        array([1., 1.])
    """
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.zeros(s if shape is None else shape, dt))


def ones_like(a, dtype=None, shape=None):
    """`numpy.ones_like`: a constant.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(ad.grad(lambda x: (ones_like(x) * x).sum())(2.0))
        1.0
    """
    s, dt = _shape_dtype(a, dtype)
    return _like(a, np.ones(s if shape is None else shape, dt))


def empty_like(a, dtype=None, shape=None):
    """`numpy.empty_like` (filled with zeros here: a constant).

    Example:
        >>> import numpy as np
        >>> empty_like(np.ones(3), dtype=np.float32).dtype
        dtype('float32')
    """
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """`numpy.full_like`: a constant, or differentiable in a traced `fill_value` (as in JAX
    and HIPS autograd).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> full_like(np.zeros(3), 0.5).tolist()
        [0.5, 0.5, 0.5]
        >>> float(ad.grad(lambda s: full_like(np.zeros(3), s).sum())(2.0))
        3.0
    """
    s, dt = _shape_dtype(a, dtype)
    s = s if shape is None else shape
    if isinstance(fill_value, Tensor):
        return _filled(s, fill_value, dt)
    return _like(a, np.full(s, fill_value, dt))


def full(shape, fill_value, dtype=None, order="C", **kwargs):
    """`numpy.full`: NumPy's constant, or differentiable in a traced `fill_value` (as in JAX
    and HIPS autograd: the fill broadcast to `shape`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> full((2,), 1.5).tolist()
        [1.5, 1.5]
        >>> float(ad.grad(lambda s: full((3,), s).sum())(2.0))
        3.0
    """
    if not isinstance(fill_value, Tensor):
        return np.full(shape, fill_value, dtype, order, **kwargs)
    if order not in ("C", "F") or set(kwargs) - {"like", "device"}:
        raise TypeError(f"full() got unexpected arguments: order={order!r}, {sorted(kwargs)}")
    return _filled(shape, fill_value, fill_value.dtype if dtype is None else np.dtype(dtype))


def _filled(shape, fill_value: Tensor, dtype: np.dtype):
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(shape)
    value = fill_value if fill_value.dtype == dtype else astype(fill_value, dtype)
    return broadcast_to(value, shape)


def shape(a) -> tuple:
    """`numpy.shape`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> shape(ad.zeros(2, 3)), shape([1, 2])
        ((2, 3), (2,))
    """
    return a.shape if isinstance(a, Tensor) else np.shape(a)


def ndim(a) -> int:
    """`numpy.ndim`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> ndim(ad.zeros(2, 3)), ndim(1.0)
        (2, 0)
    """
    return a.ndim if isinstance(a, Tensor) else np.ndim(a)


def size(a, axis=None) -> int:
    """`numpy.size`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> size(ad.zeros(2, 3)), size(ad.zeros(2, 3), axis=1)
        (6, 3)
    """
    s = shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def iscomplexobj(x) -> bool:
    """`numpy.iscomplexobj`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> iscomplexobj(ad.tensor([1j])), iscomplexobj(ad.tensor([1.0]))
        (True, False)
    """
    return (
        np.issubdtype(x.dtype, np.complexfloating) if isinstance(x, Tensor) else np.iscomplexobj(x)
    )


def isrealobj(x) -> bool:
    """`numpy.isrealobj`, Tensor-aware.

    Example:
        >>> import autodiff as ad
        >>> isrealobj(ad.tensor([1.0])), isrealobj(ad.tensor([1j]))
        (True, False)
    """
    return not iscomplexobj(x)


def result_type(*arrays_and_dtypes):
    """`numpy.result_type`, Tensor-aware.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> result_type(ad.tensor(np.ones(2, np.float32)), np.float64)
        dtype('float64')
    """
    return np.result_type(*[a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes])


def _traced(*values) -> bool:
    return any(isinstance(v, Tensor) for v in values)


def _with_row(y, row: int, value):
    """`y` with `y[row] = value` (broadcast), as a new array."""
    n = shape_of(y)[0]
    at_row = np.arange(n).reshape((n,) + (1,) * (len(shape_of(y)) - 1)) == row % n
    return where(at_row, value, y)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """`numpy.linspace`: `num` evenly spaced values from `start` to `stop` (arrays broadcast,
    the values along a new axis `axis`), differentiable in `start` and `stop`.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> linspace(1.0, 3.0, 5)
        array([1. , 1.5, 2. , 2.5, 3. ])
        >>> float(ad.grad(lambda a: anp.sum(linspace(a, 3.0, 5) ** 2))(1.0))
        7.5
    """
    if not _traced(start, stop):
        return np.linspace(start, stop, num, endpoint, retstep, dtype, axis, device=device)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = num - 1 if endpoint else num
    # NumPy's result type: Python numbers are weak, integers become floats.
    dt = np.result_type(*(dtype_of(v) if isinstance(v, Tensor) else v for v in (start, stop)), 0.0)
    start, stop = astype(start, dt), astype(stop, dt)
    delta = stop - start
    steps = np.arange(num, dtype=dt, device=device).reshape((-1,) + (1,) * len(shape_of(delta)))
    if div > 0:
        step = delta / div
        # NumPy's care for a step that underflows to zero (subnormal ranges): divide first.
        y = where(any_(step == 0), steps / div * delta, steps * step)
    else:
        step, y = np.nan, steps * delta
    y = y + start
    if endpoint and num > 1:
        y = _with_row(y, -1, stop)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None and np.issubdtype(dtype, np.integer):
        y = floor(y)
    y = astype(y, dt if dtype is None else dtype)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`numpy.logspace`: `base ** linspace(start, stop, ...)`, differentiable in `start`,
    `stop` and `base`.

    Example:
        >>> import autodiff as ad
        >>> logspace(0.0, 2.0, 3)
        array([  1.,  10., 100.])
        >>> float(ad.grad(lambda b: logspace(0.0, 2.0, 3, base=b)[-1])(10.0))  # d(b**2)/db
        20.0
    """
    if not _traced(start, stop, base):
        return np.logspace(start, stop, num, endpoint, base, dtype, axis)
    if shape_of(base) != ():  # (an array of bases broadcasts with the endpoints, as NumPy's)
        ndmax = len(np.broadcast_shapes(*map(shape_of, (start, stop, base))))
        start, stop, base = (
            reshape(v, (1,) * (ndmax - len(shape_of(v))) + tuple(shape_of(v)))
            for v in (start, stop, base)
        )
        base = expand_dims(base, axis)
    y = power(base, linspace(start, stop, num, endpoint, axis=axis))
    return y if dtype is None else astype(y, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """`numpy.geomspace`: `num` values from `start` to `stop` in geometric progression,
    differentiable in `start` and `stop`.

    Example:
        >>> import autodiff as ad
        >>> geomspace(1.0, 100.0, 3)
        array([  1.,  10., 100.])
        >>> float(ad.grad(lambda a: geomspace(a, 100.0, 3)[1])(1.0))  # d sqrt(100 a) / da
        5.0
    """
    if not _traced(start, stop):
        return np.geomspace(start, stop, num, endpoint, dtype, axis)
    if _has_zero(start) or _has_zero(stop):
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(dtype_of(start), dtype_of(stop), float(num), np.zeros((), dtype))
    start, stop = astype(start, dt), astype(stop, dt)
    # As NumPy: turn start to the positive reals and back, so that negative and complex
    # ranges work (the turn is locally constant: it has no derivative to lose).
    out_sign = sign(start)
    start, stop = start / out_sign, stop / out_sign
    y = logspace(log10(start), log10(stop), num, endpoint, dtype=dt)
    if num > 0:  # the endpoints exactly (10 ** log10(x) may differ from x)
        y = _with_row(y, 0, start)
        if num > 1 and endpoint:
            y = _with_row(y, -1, stop)
    y = y * out_sign
    if axis != 0:
        y = moveaxis(y, 0, axis)
    return astype(y, dt if dtype is None else dtype)


def _has_zero(x) -> bool:
    """Whether `x` holds a zero, where its values are known (not under vmap or jit)."""
    try:
        value = x.primal() if isinstance(x, Tensor) else x
    except TypeError:  # (no one concrete value)
        return False
    return bool(np.any(np.asarray(value) == 0))


FUNCTIONS = {
    f.__name__: f
    for f in (
        linspace,
        logspace,
        geomspace,
        zeros_like,
        ones_like,
        empty_like,
        full_like,
        full,
        shape,
        ndim,
        size,
        iscomplexobj,
        isrealobj,
        result_type,
    )
}

# Creation from nothing differentiable: NumPy's own functions, re-exported.
PASSTHROUGH = (
    "zeros",
    "ones",
    "empty",
    "eye",
    "identity",
    "arange",
    "tri",
    "indices",
    "ndarray",
    "dtype",
    "finfo",
    "iinfo",
    "issubdtype",
    "promote_types",
    "can_cast",
    "isscalar",
    "newaxis",
    "pi",
    "e",
    "inf",
    "nan",
    "euler_gamma",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool_",
    "intp",
    "integer",
    "floating",
    "complexfloating",
    "inexact",
    "number",
    "generic",
    "random",
    "errstate",
    "seterr",
    "allclose",
    "isclose",
    "array_equal",
    "broadcast_shapes",
    "ndindex",
    "ndenumerate",
    # dtypes and scalar types
    "bool",
    "int_",
    "intc",
    "uintc",
    "uint",
    "uintp",
    "long",
    "ulong",
    "longlong",
    "ulonglong",
    "short",
    "ushort",
    "byte",
    "ubyte",
    "half",
    "single",
    "double",
    "longdouble",
    "csingle",
    "cdouble",
    "clongdouble",
    "signedinteger",
    "unsignedinteger",
    "character",
    "flexible",
    "object_",
    "str_",
    "bytes_",
    "void",
    "datetime64",
    "timedelta64",
    "ufunc",
    "ScalarType",
    "True_",
    "False_",
    "little_endian",
    "typecodes",
    "sctypeDict",
    "common_type",
    "min_scalar_type",
    "mintypecode",
    "typename",
    "isdtype",
    "iterable",
    "isfortran",
    "array_equiv",
    "may_share_memory",
    "shares_memory",
    "isnat",
    # index helpers (integers from shapes)
    "s_",
    "index_exp",
    "mgrid",
    "ogrid",
    "ix_",
    "diag_indices",
    "tril_indices",
    "triu_indices",
    "mask_indices",
    "ravel_multi_index",
    "unravel_index",
    "einsum_path",
    # windows (from a length)
    "bartlett",
    "blackman",
    "hamming",
    "hanning",
    "kaiser",
    # reading, writing and printing
    "load",
    "save",
    "savez",
    "savez_compressed",
    "savetxt",
    "loadtxt",
    "genfromtxt",
    "fromfile",
    "frombuffer",
    "fromstring",
    "fromiter",
    "fromregex",
    "fromfunction",
    "array2string",
    "array_repr",
    "array_str",
    "set_printoptions",
    "get_printoptions",
    "printoptions",
    "format_float_positional",
    "format_float_scientific",
    "base_repr",
    "binary_repr",
    "geterr",
    "geterrcall",
    "seterrcall",
    "getbufsize",
    "setbufsize",
    "get_include",
    "info",
    "show_config",
    "show_runtime",
    "busday_count",
    "busday_offset",
    "is_busday",
    "busdaycalendar",
    "datetime_as_string",
    "datetime_data",
    "packbits",
    "unpackbits",
    "exceptions",
    "dtypes",
)
