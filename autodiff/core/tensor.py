"""Tensor: the array type of the imperative API and the base class of every tracer.

A level-0 Tensor holds a concrete NumPy array in `_value`. A tracer (a subclass
defined by its transform) holds its primal in `_value` — a raw array or a tracer
of a lower level — and its trace in `_trace`. Operators, ndarray-style methods and
the NumPy protocols (`__array_ufunc__`, `__array_function__`) are attached by
`autodiff.numpy`, because they are written with its functions and the core must
not import upward.
"""
from __future__ import annotations

import numpy as np

from autodiff.core.errors import TracerConversionError
from autodiff.core.trace import EVAL_TRACE


class Tensor:
    """An n-dimensional array that autodiff can differentiate.

    Example:
        >>> import autodiff as ad
        >>> t = ad.tensor([1.0, 2.0])
        >>> (t * 3).numpy()
        array([3., 6.])
    """

    __slots__ = ("_value", "_trace", "_edge", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data, dtype=None):
        if isinstance(data, Tensor):
            data = data._value if data._trace is EVAL_TRACE else data.__array__()
        self._value = np.asarray(data, dtype=dtype)
        self._trace = EVAL_TRACE
        self._edge = None

    # ---- array metadata (read through to the primal, however deeply nested) ----
    @property
    def shape(self) -> tuple:
        return np.shape(self._value) if not isinstance(self._value, Tensor) else self._value.shape

    @property
    def dtype(self) -> np.dtype:
        v = self._value
        return v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ---- concrete values: a tracer's primal is concrete, so control flow works ----
    def primal(self):
        """The concrete NumPy value underneath all levels."""
        v = self._value
        return v.primal() if isinstance(v, Tensor) else v

    def __bool__(self) -> bool:
        return bool(self.primal())

    def __float__(self) -> float:
        return float(self.primal())

    def __int__(self) -> int:
        return int(self.primal())

    def __index__(self) -> int:
        return int(np.asarray(self.primal()).__index__())

    def __complex__(self) -> complex:
        return complex(self.primal())

    def item(self):
        """The value of a one-element tensor as a Python number."""
        return np.asarray(self.primal()).item()

    def tolist(self):
        return np.asarray(self.primal()).tolist()

    def numpy(self) -> np.ndarray:
        """The value as a NumPy array (level-0 Tensors only)."""
        return np.asarray(self.__array__())

    def __array__(self, dtype=None, copy=None):
        if self._trace is not EVAL_TRACE:
            raise TracerConversionError(
                f"Cannot convert a {type(self).__name__} to a NumPy array: the result would "
                "lose its derivative. Use autodiff.numpy functions on it, or "
                "autodiff.stop_gradient / .primal() if a constant is really meant."
            )
        v = self._value
        return np.asarray(v, dtype=dtype) if dtype is not None else np.asarray(v)

    def __repr__(self):
        body = np.array2string(np.asarray(self.primal()), separator=", ", prefix="tensor(")
        if self._trace is EVAL_TRACE:
            return f"tensor({body})"
        return f"{type(self).__name__}<level {self._trace.level}>({body})"

    __str__ = __repr__
