"""Dtype helpers: which values are differentiable, and NumPy-2 dtype inspection."""

import numpy as np


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
