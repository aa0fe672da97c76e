"""Abstract values: the shape and dtype of an array without its data.

`Primitive.abstract_eval` computes with these: it gets one `ShapedArray` per positional
argument (Python scalars become *weakly typed* ones, as in JAX: under NumPy 2's NEP 50
they take the precision of the array they meet) and the primitive's params, and returns
the `ShapedArray` of the output (a tuple for `multiple_results` primitives), computing
nothing. Staging (`jit`) and validation use it.
"""

from __future__ import annotations

import math

import numpy as np

# The dtype a Python scalar is held in, when it stands alone (NumPy's defaults).
_PYTHON_DTYPES = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}
# A value of each weak kind, for np.result_type (which treats Python *types* as strong).
_WEAK_VALUES = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}
# For ufunc.resolve_dtypes, which takes the Python types themselves as weak operands.
_WEAK_TYPES = {"i": int, "u": int, "f": float, "c": complex}
# The default integers, in which NumPy sums and multiplies bools and narrower integers.
_INT, _UINT = np.dtype(np.int_), np.dtype(np.uint)
_SHORT_KINDS = {"f": "f", "c": "c", "i": "i", "u": "u", "b": "bool", "V": "void"}


class ShapedArray:
    """The shape and dtype of an array whose value is unknown.

    `weak_type` marks a Python scalar's type (NEP 50): `f32[3] * weak f64[]` is `f32[3]`.

    Example:
        >>> a = ShapedArray((3, 4), np.float32)
        >>> a, a.ndim, a.size
        (f32[3,4], 2, 12)
        >>> aval_of(2.0)
        ~f64[]
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def strengthened(self) -> ShapedArray:
        """The same shape and dtype, not weakly typed."""
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def __eq__(self, other) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        kind = self.dtype.kind
        short = _SHORT_KINDS.get(kind) if self.dtype.name != "bfloat16" else None  # (bfloat16)
        if short is None:
            name = self.dtype.name
        elif kind in "fciu":
            name = f"{short}{self.dtype.itemsize * 8}"
        else:
            name = short
        return f"{'~' if self.weak_type else ''}{name}[{','.join(map(str, self.shape))}]"


def aval_of(x) -> ShapedArray:
    """The abstract value of `x`: an array, NumPy scalar, Tensor (any level), Python scalar or
    array-like. Python scalars are weakly typed."""
    kind = type(x)
    if kind in _PYTHON_DTYPES:
        return ShapedArray((), _PYTHON_DTYPES[kind], weak_type=kind is not bool)
    if kind is ShapedArray:
        return x
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        value = np.asarray(x)
        shape, dtype = value.shape, value.dtype
    return ShapedArray(shape, dtype, weak_type=bool(getattr(x, "weak_type", False)))


def dtype_operand(aval: ShapedArray):
    """`aval`'s dtype as `np.result_type` should see it: a Python value for a weak type."""
    return _WEAK_VALUES[aval.dtype.kind] if aval.weak_type else aval.dtype


def ufunc_operand(aval: ShapedArray):
    """`aval`'s dtype as `ufunc.resolve_dtypes` should see it: a Python type for a weak type."""
    if aval.weak_type and aval.dtype.kind in _WEAK_TYPES:
        return _WEAK_TYPES[aval.dtype.kind]
    return aval.dtype


def result_type(*avals: ShapedArray) -> np.dtype:
    """NumPy's promotion of `avals`' dtypes (NEP 50: weak types yield to strong ones). The
    weak ones go last: NumPy promotes a Python float met before bfloat16 to float32."""
    strong = [a.dtype for a in avals if not a.weak_type]
    return np.result_type(*strong, *[dtype_operand(a) for a in avals if a.weak_type])


def array_result_type(*avals: ShapedArray) -> np.dtype:
    """NumPy's promotion of `avals`' dtypes for functions that make an array of every operand
    first (np.concatenate, np.stack, np.correlate): a Python scalar counts as its default
    dtype there, not weakly."""
    return np.result_type(*[a.dtype for a in avals])


def accumulation_dtype(dtype) -> np.dtype:
    """The dtype of NumPy's sum, prod, cumsum and cumprod of `dtype` without `dtype=`: bools and
    integers narrower than the default integer accumulate in it (unsigned ones in its unsigned
    twin); the rest keep their dtype.

    Example:
        >>> accumulation_dtype(np.int8), accumulation_dtype(np.float32)
        (dtype('int64'), dtype('float32'))
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < _INT.itemsize):
        return _INT
    if dtype.kind == "u" and dtype.itemsize < _UINT.itemsize:
        return _UINT
    return dtype


def shaped_like(x: ShapedArray, shape: tuple, dtype=None) -> ShapedArray:
    """The aval of `shape` and `dtype` (by default `x`'s) computed from `x`: weakly typed if `x`
    is and its dtype passes straight through.

    Example:
        >>> shaped_like(aval_of(1.0), (2,)), shaped_like(aval_of(1.0), (2,), np.float32)
        (~f64[2], f32[2])
    """
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    return ShapedArray(shape, dtype, weak_type=x.weak_type and dtype == x.dtype)


def shape_with_length(shape: tuple, axis: int, length: int) -> tuple:
    """`shape` with `length` at (non-negative) `axis`."""
    return shape[:axis] + (length,) + shape[axis + 1 :]


def all_weak(*avals: ShapedArray) -> bool:
    """Is every aval weakly typed (so that a result computed from them is weak too)?"""
    return all(a.weak_type for a in avals)


def same_aval(x: ShapedArray, *others: ShapedArray, **params) -> ShapedArray:
    """The abstract_eval of a primitive whose output has its (first) input's shape and dtype."""
    return x


__all__ = [
    "ShapedArray",
    "accumulation_dtype",
    "all_weak",
    "array_result_type",
    "aval_of",
    "dtype_operand",
    "result_type",
    "same_aval",
    "shape_with_length",
    "shaped_like",
    "ufunc_operand",
]


def ufunc_result_dtype(ufunc, *operands) -> np.dtype:
    """The dtype `ufunc` gives for `operands`: avals (weakly typed ones count as Python
    scalars, NEP 50) or dtypes (of intermediate NumPy results, never weak).

    Example:
        >>> ufunc_result_dtype(np.exp, ShapedArray((), np.int8))
        dtype('float16')
        >>> ufunc_result_dtype(np.multiply, aval_of(2.0), np.dtype(np.float32))
        dtype('float32')
    """
    types = [ufunc_operand(o) if type(o) is ShapedArray else np.dtype(o) for o in operands]
    return ufunc.resolve_dtypes((*types, None))[-1]


__all__.append("ufunc_result_dtype")


def result_aval(shape: tuple, dtype, *avals: ShapedArray) -> ShapedArray:
    """The aval of a result of `shape` and `dtype` computed from `avals`: weakly typed when
    every one of them is and `dtype` is their promotion (as `shaped_like`, for several).

    Example:
        >>> result_aval((), np.float64, aval_of(1.0), aval_of(2)), result_aval((2,), np.int8)
        (~f64[], i8[2])
    """
    dtype = np.dtype(dtype)
    weak = bool(avals) and all_weak(*avals) and dtype == result_type(*avals)
    return ShapedArray(shape, dtype, weak_type=weak)


__all__.append("result_aval")
