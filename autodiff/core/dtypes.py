"""Dtype helpers: which values are differentiable, and NumPy-2 dtype inspection."""

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


# Rules ask these once per cotangent: a dtype's `kind` is a faster test than np.issubdtype.
def is_inexact(dtype) -> bool:
    """True for floating and complex dtypes: the ones that carry derivatives."""
    return np.dtype(dtype).kind in "fc"


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"
