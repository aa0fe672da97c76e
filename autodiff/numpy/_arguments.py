"""How autodiff.numpy's functions read their arguments: concrete values, axes, `out=`."""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.errors import ConcretizationError
from autodiff.core.tensor import Tensor
from autodiff.ops import shape as shp
from autodiff.ops.structural import ndim_of


def concrete_values(x, name: str) -> np.ndarray:
    """The values of `x` as a NumPy array, for a function whose result's shape or type
    depends on them (`name`): ConcretizationError where they are not known (under vmap or
    jit)."""
    if not isinstance(x, Tensor):
        return np.asarray(x)
    try:
        return np.asarray(x.primal())
    except TypeError:
        raise ConcretizationError(
            f"autodiff.numpy.{name}: its result's shape or type depends on the values of its "
            "argument, which are not known here (under vmap or jit); compute it outside "
            "the transform."
        ) from None


def at_axis(axis: int, part) -> tuple:
    """An index applying `part` along `axis` (all of every earlier axis)."""
    return (slice(None),) * axis + (part,)


def no_out(name: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"autodiff.numpy.{name} does not support out=")


def flat_axis(a, axis, scalar_as_vector: bool = True):
    """`(a, axis)` with axis=None meaning the flattened array, and the axis normalized.

    NumPy's cumulative functions and argsort read a 0-d array as a 1-d one; sort does not.
    """
    if axis is None:
        return shp.ravel(a), 0
    if scalar_as_vector and ndim_of(a) == 0:
        a = shp.ravel(a)
    return a, normalize_axis_index(axis, ndim_of(a))
