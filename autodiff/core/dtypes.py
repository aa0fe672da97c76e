"""Dtype helpers: which values are differentiable, NumPy-2 dtype inspection, and bfloat16.

bfloat16 is `ml_dtypes.bfloat16` (the NumPy dtype JAX uses), imported on first use only
(`bfloat16_dtype`): the package's import costs far more than autodiff's own. NumPy sees its
dtype as kind "V" (a user-defined type), so the helpers here, not `dtype.kind`, say that it
is floating.
"""

import importlib

import numpy as np

# NumPy scalar types whose scalar math (`+ - * /`) gives the ufunc's result, dtype (NEP 50)
# and floating-point error handling, with each other and with Python numbers (the operands of
# `Primitive.scalar_impl`). Ufuncs applied to 0-d arrays return such scalars, so after its
# first op a scalar function computes with them.
SCALARS = frozenset((np.float64, np.float32, np.complex128, np.complex64))
SCALAR_OPERANDS = SCALARS | {int, float}
# The pairs of operand types `Primitive.fast.scalar_impl` takes: scalar operands, at least one
# of them a NumPy scalar. `(type(x), type(y)) in SCALAR_PAIRS` is the one test, wherever made.
SCALAR_PAIRS = frozenset(
    (a, b) for a in SCALAR_OPERANDS for b in SCALAR_OPERANDS if a in SCALARS or b in SCALARS
)


# The dtype of the tangent of an integer or boolean value, as JAX's `jax.dtypes.float0`: its
# elements hold nothing (a tangent that is zero by construction). `jvp` takes one for an integer
# primal; `np.zeros(shape, float0)` makes it.
float0 = np.dtype([("float0", np.void, 0)])


def dtype_of(x) -> np.dtype:
    """The NumPy dtype of an array, Tensor, NumPy scalar or Python number."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    return np.asarray(x).dtype


def bfloat16_dtype() -> np.dtype:
    """NumPy's dtype of `ml_dtypes.bfloat16`, importing ml_dtypes on first use.

    Example:
        >>> bfloat16_dtype()
        dtype(bfloat16)
    """
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")
    except ImportError as error:
        raise ImportError(
            "bfloat16 needs the ml_dtypes package (the NumPy dtype JAX uses for it): "
            "pip install ml_dtypes"
        ) from error
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dtype) -> bool:
    """True for ml_dtypes' bfloat16 (without importing ml_dtypes: a value of that dtype
    exists only once it is imported)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "V" and dtype.name == "bfloat16"


def number_as(x, y):
    """`x`, a Python number met before a bfloat16 array `y`, as an array of `y`'s dtype (NumPy
    would make the pair float32; after the array it keeps bfloat16, as JAX and torch do
    either way); anything else as it is.

    Example:
        >>> number_as(2.0, np.ones(2)), number_as(np.ones(1), 2.0)
        (2.0, array([1.]))
    """
    if type(x) in (int, float, bool) and is_bfloat16(getattr(y, "dtype", None)):
        return np.asarray(x, y.dtype)
    return x


# Rules ask these once per cotangent: a dtype's `kind` is a faster test than np.issubdtype.
def is_inexact(dtype) -> bool:
    """True for floating and complex dtypes (bfloat16 too): the ones that carry derivatives."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or (dtype.kind == "V" and dtype.name == "bfloat16")


def is_float(dtype) -> bool:
    """True for real floating dtypes, bfloat16 among them."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (dtype.kind == "V" and dtype.name == "bfloat16")


def float_kind(dtype) -> str:
    """`dtype.kind`, with "f" for bfloat16 (NumPy's kind of it is "V"): for the tests written
    as `kind in "fc"`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "V" and dtype.name == "bfloat16":
        return "f"
    return dtype.kind


_FLOAT64 = np.dtype(np.float64)  # (the dtype a Python number, which has none, is tested as)


def in_float32(impl, *, binary: bool = False):
    """`impl` computing bfloat16 operands in float32 and rounding its results back to bfloat16
    once, as torch computes bfloat16 ops (and JAX accumulates them): for the NumPy functions
    that accumulate in the operand's dtype (`np.add.reduce`, `np.cumsum`, `np.dot`: a sum of
    many bfloat16 terms rounded at each one) or that return float32 for bfloat16
    (`np.matmul`). Other operands pass through untouched; a result is rounded back only when
    every inexact operand was bfloat16 (bfloat16 with float32 stays float32, as NumPy's).
    With `binary`, for an `impl(a, b)` of two operands and no params, the wrapper takes those
    two only: one call frame cheaper for the other dtypes (small products are hot).

    Example:
        >>> import numpy as np
        >>> bf16 = bfloat16_dtype()
        >>> x = np.full(1000, 0.01, bf16)
        >>> float(np.add.reduce(x)), float(in_float32(np.add.reduce)(x))
        (4.0, 10.0)
    """

    def computed_in_float32(*args, **params):
        for a in args:
            if getattr(a, "dtype", _FLOAT64).kind == "V":  # (bfloat16's kind: rare)
                return _computed_in_float32(impl, args, params)
        return impl(*args, **params)

    def binary_in_float32(a, b):
        if getattr(a, "dtype", _FLOAT64).kind == "V" or getattr(b, "dtype", _FLOAT64).kind == "V":
            return _computed_in_float32(impl, (a, b), {})
        return impl(a, b)

    return binary_in_float32 if binary else computed_in_float32


def reduction(ufunc):
    """`ufunc.reduce` as a reduction primitive's impl `(x, *, axes, keepdims)` (numpy.sum and
    numpy.prod minus their Python-level dispatch: the same result types and values), with
    bfloat16 accumulated in float32 and rounded once, as `in_float32` does, at the cost of
    one test for the other dtypes (the sums of reverse mode's unbroadcasts are hot).

    Example:
        >>> x = np.full(1000, 0.01, bfloat16_dtype())
        >>> float(reduction(np.add)(x, axes=(0,), keepdims=False))
        10.0
    """
    reduce = ufunc.reduce

    def impl(x, *, axes, keepdims):
        dtype = getattr(x, "dtype", _FLOAT64)
        if dtype.kind == "V" and is_bfloat16(dtype):
            return reduce(x, axes, np.float32, None, keepdims).astype(dtype)
        return reduce(x, axes, None, None, keepdims)

    return impl


def _computed_in_float32(impl, args, params):
    """`impl(*args, **params)` where an operand's dtype has NumPy's kind "V" (bfloat16, or
    another user-defined or structured dtype, passed through)."""
    bfloat16 = other_inexact = False
    wide = []
    for a in args:
        dtype = getattr(a, "dtype", None)
        if dtype is not None and is_bfloat16(dtype):
            a, bfloat16 = np.asarray(a, np.float32), True
        elif dtype is not None and dtype.kind in "fc":
            other_inexact = True
        wide.append(a)
    out = impl(*wide, **params)
    if not bfloat16 or other_inexact:
        return out
    if isinstance(out, tuple):
        return tuple(_round_bfloat16(o) for o in out)
    return _round_bfloat16(out)


def in_float32_dtype(dtype, *operand_dtypes) -> np.dtype:
    """The dtype `in_float32(impl)` returns, given `dtype`, the one `impl` returns for float32
    in place of bfloat16 operands (their abstract evaluation).

    Example:
        >>> bf16 = bfloat16_dtype()
        >>> in_float32_dtype(np.float32, bf16, bf16), in_float32_dtype(np.float32, bf16, np.float32)
        (dtype(bfloat16), dtype('float32'))
    """
    dtype = np.dtype(dtype)
    if dtype != np.float32:
        return dtype
    dtypes = [np.dtype(d) for d in operand_dtypes]
    if any(is_bfloat16(d) for d in dtypes) and not any(d.kind in "fc" for d in dtypes):
        return bfloat16_dtype()
    return dtype


def _round_bfloat16(out):
    dtype = getattr(out, "dtype", None)
    if dtype is not None and dtype == np.float32:
        return out.astype(bfloat16_dtype())  # (a NumPy scalar stays a scalar)
    return out
