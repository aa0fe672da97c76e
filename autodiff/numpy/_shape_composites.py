"""NumPy's shape composites that no rule uses: tile, rot90, rollaxis, append, and the array
readers asanyarray, ascontiguousarray, asfortranarray, require, asarray_chkfinite.

Each is written with the shape functions of `autodiff.ops.shape`, so it differentiates and
batches through them; `autodiff.numpy` re-exports them.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.tensor import Tensor
from autodiff.ops import structural
from autodiff.ops.shape import _holds_tensor, _operand, asarray, concatenate, flip, ravel, transpose
from autodiff.ops.structural import ndim_of


def tile(A, reps):
    """`numpy.tile`, differentiable (a broadcast, whose transpose sums the copies).

    Example:
        >>> import numpy as np
        >>> tile(np.array([1.0, 2.0]), (2, 2))
        array([[1., 2., 1., 2.],
               [1., 2., 1., 2.]])
    """
    A = _operand(A)
    if not isinstance(A, Tensor):
        return np.tile(A, reps)
    try:
        reps = tuple(operator.index(r) for r in reps)
    except TypeError:
        reps = (operator.index(reps),)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    shape = A.shape
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    if all(r == 1 for r in reps):
        return structural.reshape(A, shape)
    # (s0, s1) -> (1, s0, 1, s1) -> broadcast (r0, s0, r1, s1) -> (r0 * s0, r1 * s1)
    x = structural.reshape(A, tuple(d for s in shape for d in (1, s)))
    x = structural.broadcast_to(x, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return structural.reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def rot90(m, k=1, axes=(0, 1)):
    """`numpy.rot90`: `m` rotated by 90 degrees `k` times in the plane of `axes`,
    differentiable.

    Example:
        >>> import numpy as np
        >>> rot90(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([[2., 4.],
               [1., 3.]])
    """
    m = _operand(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = ndim_of(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    axes_list = list(range(nd))
    axes_list[axes[0]], axes_list[axes[1]] = axes_list[axes[1]], axes_list[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), axes_list)
    return flip(transpose(m, axes_list), axes[1])


def rollaxis(a, axis, start=0):
    """`numpy.rollaxis`: axis `axis` moved to position `start`, differentiable.

    Example:
        >>> import numpy as np
        >>> rollaxis(np.ones((3, 4, 5)), 2).shape
        (5, 3, 4)
    """
    a = _operand(a)
    n = ndim_of(a)
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not (0 <= start < n + 1):
        raise np.exceptions.AxisError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in"
        )
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(a, axes)


def append(arr, values, axis=None):
    """`numpy.append`: `values` after `arr` (both flattened if `axis` is None),
    differentiable in both.

    Example:
        >>> import numpy as np
        >>> append(np.array([1.0, 2.0]), [[3.0], [4.0]])
        array([1., 2., 3., 4.])
    """
    arr, values = _operand(arr), _operand(values)
    if axis is None:
        if ndim_of(arr) != 1:
            arr = ravel(arr)
        values = ravel(values)
        axis = ndim_of(arr) - 1
    return concatenate((arr, values), axis=axis)


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """`numpy.asanyarray`: `asarray` (autodiff has no array subclasses).

    Example:
        >>> asanyarray([1.0, 2.0])
        array([1., 2.])
    """
    return asarray(a, dtype, order, device=device, copy=copy, like=like)


def ascontiguousarray(a, dtype=None, *, like=None):
    """`numpy.ascontiguousarray`: `asarray`, at least 1-d (as NumPy).

    Example:
        >>> ascontiguousarray(3.0)
        array([3.])
    """
    out = asarray(a, dtype)
    return structural.reshape(out, (1,)) if ndim_of(out) == 0 else out


def asfortranarray(a, dtype=None, *, like=None):
    """`numpy.asfortranarray`: `asarray`, at least 1-d (the memory layout is NumPy's concern).

    Example:
        >>> asfortranarray(3.0)
        array([3.])
    """
    if not isinstance(a, Tensor) and not _holds_tensor(a):
        return np.asfortranarray(a, dtype)
    return ascontiguousarray(a, dtype)


def require(a, dtype=None, requirements=None, *, like=None):
    """`numpy.require`: `asarray` (the flags are NumPy's concern).

    Example:
        >>> require([1.0], "float32").dtype
        dtype('float32')
    """
    if not isinstance(a, Tensor) and not _holds_tensor(a):
        return np.require(a, dtype, requirements)
    return asarray(a, dtype)


def asarray_chkfinite(a, dtype=None, order=None):
    """`numpy.asarray_chkfinite`: `asarray`, with a ValueError if a value is inf or NaN
    (where the values are known).

    Example:
        >>> asarray_chkfinite([1.0, 2.0])
        array([1., 2.])
    """
    out = asarray(a, dtype, order)
    try:
        values = np.asarray(out.primal() if isinstance(out, Tensor) else out)
    except TypeError:  # (under vmap or jit: no values to check)
        return out
    if values.dtype.char in np.typecodes["AllFloat"] and not np.isfinite(values).all():
        raise ValueError("array must not contain infs or NaNs")
    return out


FUNCTIONS = {
    f.__name__: f
    for f in (
        tile,
        rot90,
        rollaxis,
        append,
        asanyarray,
        ascontiguousarray,
        asfortranarray,
        require,
        asarray_chkfinite,
    )
}
