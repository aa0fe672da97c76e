"""`r_` and `c_`: NumPy's index-expression concatenators, accepting Tensors and tracers.

`anp.r_[x, 0.0, y]` concatenates (differentiably) as `numpy.r_` does, with its slice ranges
and its string directives ("0,2", "-1"); an expression without a Tensor is NumPy's own.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.core.tensor import Tensor
from autodiff.numpy._creation import linspace
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype


def _holds_tensor(key) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(shp._holds_tensor(item) for item in items)


def _ndmin(obj, ndmin: int):
    return (
        shp.array(obj, copy=False, ndmin=ndmin)
        if isinstance(obj, Tensor)
        else np.array(obj, copy=None, ndmin=ndmin)
    )


def _directive(item: str, axis: int, ndmin: int, trans1d: int) -> tuple:
    """(axis, ndmin, trans1d) as a string directive ("0,2", "-1", "1,2,0") sets them."""
    if item in ("r", "c"):
        raise NotImplementedError(
            "autodiff.numpy.r_/c_: the matrix directives 'r' and 'c' make "
            "numpy.matrix objects, which autodiff does not support"
        )
    try:
        values = [int(x) for x in item.split(",")]
    except ValueError as e:
        raise ValueError(f"unknown special directive {item!r}") from e
    if len(values) == 1:
        return values[0], ndmin, trans1d
    return values[0], values[1], values[2] if len(values) == 3 else trans1d


class AxisConcatenator:
    """NumPy's `AxisConcatenator` (the class of `r_` and `c_`) for differentiable values."""

    __slots__ = ("_numpy", "axis", "ndmin", "trans1d")

    def __init__(self, numpy_object, axis=0, ndmin=1, trans1d=-1):
        self._numpy = numpy_object
        self.axis = axis
        self.ndmin = ndmin
        self.trans1d = trans1d

    def _item(self, item, ndmin: int, trans1d: int):
        """One entry of the expression as an array (a slice is a range)."""
        if isinstance(item, slice):
            start = 0 if item.start is None else item.start
            step = 1 if item.step is None else item.step
            if isinstance(step, (np.complexfloating, complex)):
                newobj = linspace(start, item.stop, num=int(abs(complex(step))))
            else:
                newobj = np.arange(start, item.stop, step)
            if ndmin > 1:
                newobj = _ndmin(newobj, ndmin)
                if trans1d != -1:
                    newobj = shp.swapaxes(newobj, -1, trans1d)
            return newobj
        item = shp.array(item) if isinstance(item, (list, tuple)) else item
        item_ndim = np.ndim(item) if not isinstance(item, Tensor) else item.ndim
        newobj = _ndmin(item, ndmin)
        if trans1d != -1 and item_ndim < ndmin:
            k2 = ndmin - item_ndim
            k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
            defaxes = list(range(ndmin))
            newobj = shp.transpose(newobj, defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2])
        return newobj

    def __getitem__(self, key):
        if not _holds_tensor(key):
            return self._numpy[key]
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, dtypes = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                axis, ndmin, trans1d = _directive(item, axis, ndmin, trans1d)
                continue
            if type(item) in np.ScalarType:
                objs.append(item)
                dtypes.append(item)
                continue
            newobj = self._item(item, ndmin, trans1d)
            objs.append(newobj)
            dtypes.append(dtype_of(newobj))
        final_dtype = np.result_type(*dtypes)
        objs = [astype(_ndmin(obj, ndmin), final_dtype) for obj in objs]
        return shp.concatenate(tuple(objs), axis=axis)

    def __len__(self) -> int:
        return 0


r_ = AxisConcatenator(np.r_, 0)
c_ = AxisConcatenator(np.c_, -1, ndmin=2, trans1d=0)
