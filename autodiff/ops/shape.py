"""NumPy's shape functions, on the primitives of ops/rearrange.py and ops/structural.py.

The primitives below them (flip, copy, concatenate and split, stack and unstack, repeat) only
move or copy elements, so each is linear (see ops/rearrange.py). reshape and transpose are
structural.py's, which the functions here give NumPy's signatures and argument handling. The
rest of NumPy's shape surface (expand_dims, atleast_2d, array of mixed Tensors and numbers,
...) is composites of these; those no rule uses (tile, rot90, ...) are in
autodiff/numpy/_shape_composites.py. Parameters are passed to NumPy as the user gave them
where possible, so invalid ones raise NumPy's own errors; on raw arrays the impls are single
NumPy calls, and reshape, transpose, flip and split return views.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.dtypes import is_inexact
from autodiff.core.primitive import bind, dispatch
from autodiff.core.tensor import Tensor
from autodiff.ops import structural
from autodiff.ops.elementwise import astype, stop_gradient
from autodiff.ops.rearrange import (
    concatenate_p,
    copy_p,
    flip_p,
    repeat_p,
    split_p,
    stack_p,
    unstack_p,
)
from autodiff.ops.structural import ndim_of, reshape_p, shape_of, transpose_p


def _holds_tensor(obj) -> bool:
    """Is `obj` a Tensor, or a (nested) list or tuple with a Tensor inside?"""
    if isinstance(obj, Tensor):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_holds_tensor(o) for o in obj)
    return False


def _operand(a):
    """An array argument: Tensors, ndarrays and NumPy scalars as they are, the rest as arrays
    (a list or tuple holding Tensors becomes one differentiable value)."""
    if isinstance(a, (Tensor, ndarray, np.generic)):
        return a
    if isinstance(a, (list, tuple)) and _holds_tensor(a):
        return array(a)
    return np.asarray(a)


def _memory_order(a: Tensor) -> str:
    """ "C" or "F": the layout of a Tensor's concrete value (for NumPy's order="A"/"K")."""
    try:
        p = np.asarray(a.primal())
    except TypeError:  # a vmapped value has no single layout
        return "C"
    return "F" if p.flags.f_contiguous and not p.flags.c_contiguous else "C"


def _shape_param(shape) -> tuple:
    """A shape (or axes) argument as a tuple of ints, with NumPy's errors."""
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(s) for s in shape)
    try:
        return (operator.index(shape),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(
            f"expected a sequence of integers or a single integer, got '{shape}'"
        ) from None


# ---------------------------------------------------------------------------------------------
# The functions. NumPy names and signatures; `autodiff.numpy` re-exports them.


def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None):
    """`numpy.reshape`, differentiable (`-1` infers a dimension; order "C", "F" or "A").

    Example:
        >>> import numpy as np
        >>> reshape(np.arange(6.0), (2, -1))
        array([[0., 1., 2.],
               [3., 4., 5.]])
    """
    if shape is None:
        shape = newshape
    elif newshape is not None:
        raise TypeError("You cannot specify 'newshape' and 'shape' arguments at the same time.")
    if shape is None:
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    a = _operand(a)
    shape = _shape_param(shape)
    if not isinstance(a, Tensor):
        if copy is not None:
            return np.reshape(a, shape, order=order, copy=copy)
        return bind(reshape_p, a, shape=shape, order=order)
    if order == "A":
        order = _memory_order(a)
    elif order not in ("C", "F"):
        np.reshape(np.empty(0), 0, order=order)  # NumPy's error for "K" and invalid orders
    if shape == a.shape:
        return bind(copy_p, a) if copy else a
    return bind(reshape_p, a, shape=shape, order=order)


def ravel(a, order: str = "C"):
    """`numpy.ravel`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ravel(np.arange(4.0).reshape(2, 2)).tolist()
        [0.0, 1.0, 2.0, 3.0]
        >>> ad.grad(lambda a: ravel(a)[1])(np.zeros((2, 2)))
        array([[0., 1.],
               [0., 0.]])
    """
    a = _operand(a)
    if not isinstance(a, Tensor):
        return np.ravel(a, order)
    if order in ("A", "K"):
        order = _memory_order(a)
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """`numpy.transpose`, differentiable (a view on raw arrays).

    Example:
        >>> import numpy as np
        >>> transpose(np.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    a = _operand(a)
    if axes is not None:
        axes = _shape_param(axes)
    if isinstance(a, Tensor) and (axes is None and a.ndim < 2 or axes == tuple(range(a.ndim))):
        return a
    return bind(transpose_p, a, axes=axes)


def swapaxes(a, axis1: int, axis2: int):
    """`numpy.swapaxes`, differentiable.

    Example:
        >>> import numpy as np
        >>> swapaxes(np.zeros((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    a = _operand(a)
    n = ndim_of(a)
    i = normalize_axis_index(axis1, n, "axis1")
    j = normalize_axis_index(axis2, n, "axis2")
    perm = list(range(n))
    perm[i], perm[j] = j, i
    return structural.transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """`numpy.moveaxis`, differentiable.

    Example:
        >>> import numpy as np
        >>> moveaxis(np.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    return structural.moveaxis(_operand(a), source, destination)


def expand_dims(a, axis):
    """`numpy.expand_dims` (an int or a tuple of axes), differentiable.

    Example:
        >>> import numpy as np
        >>> expand_dims(np.zeros((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    return structural.expand_dims(_operand(a), axis)


def squeeze(a, axis=None):
    """`numpy.squeeze`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> squeeze(np.zeros((1, 3, 1))).shape
        (3,)
        >>> ad.grad(lambda a: squeeze(a)[0])(np.zeros((1, 2)))
        array([[1., 0.]])
    """
    a = _operand(a)
    shape = shape_of(a)
    if axis is None:
        return structural.reshape(a, tuple(s for s in shape if s != 1))
    axes = normalize_axis_tuple(axis, len(shape))
    if any(shape[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return structural.reshape(a, tuple(s for i, s in enumerate(shape) if i not in axes))


def broadcast_to(array, shape, subok: bool = False):
    """`numpy.broadcast_to`, differentiable (its transpose sums back).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> broadcast_to(np.array([1.0, 2.0]), (3, 2)).shape
        (3, 2)
        >>> ad.grad(lambda v: broadcast_to(v, (3, 2)).sum())(np.array([1.0, 2.0]))  # 3 copies
        array([3., 3.])
    """
    return structural.broadcast_to(_operand(array), shape)


def broadcast_arrays(*args, subok: bool = False) -> tuple:
    """`numpy.broadcast_arrays`, differentiable.

    Example:
        >>> import numpy as np
        >>> [a.shape for a in broadcast_arrays(np.zeros((2, 1)), np.zeros(3))]
        [(2, 3), (2, 3)]
    """
    arrays = [_operand(a) for a in args]
    shape = np.broadcast_shapes(*(shape_of(a) for a in arrays))
    return tuple(structural.broadcast_to(a, shape) for a in arrays)


def _result_dtype(dtype, arrays: list) -> tuple:
    """`(dtype, arrays)` for concatenate and stack's `dtype=`: an integer result carries no
    derivative, so its inputs become constants."""
    if dtype is None:
        return None, arrays
    dtype = np.dtype(dtype)
    if not is_inexact(dtype):
        arrays = [stop_gradient(a) if isinstance(a, Tensor) else a for a in arrays]
    return dtype, arrays


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting: str = "same_kind"):
    """`numpy.concatenate` (`axis=None` flattens first), differentiable in every array.

    Example:
        >>> import numpy as np
        >>> concatenate([np.zeros(2), np.ones(1)])
        array([0., 0., 1.])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.concatenate does not support out=")
    arrays = [_operand(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    dtype, arrays = _result_dtype(dtype, arrays)
    return bind(concatenate_p, *arrays, axis=operator.index(axis), dtype=dtype, casting=casting)


def stack(arrays, axis: int = 0, out=None, *, dtype=None, casting: str = "same_kind"):
    """`numpy.stack`, differentiable.

    Example:
        >>> import numpy as np
        >>> stack([np.zeros(3), np.ones(3)], axis=1).shape
        (3, 2)
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.stack does not support out=")
    arrays = [_operand(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shape = shape_of(arrays[0])
    for a in arrays:
        if shape_of(a) != shape:
            raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, len(shape) + 1)
    if dtype is not None:
        dtype, arrays = _result_dtype(dtype, arrays)
    return dispatch(stack_p, tuple(arrays), {"axis": axis, "dtype": dtype, "casting": casting})


def unstack(x, /, *, axis: int = 0):
    """`numpy.unstack`: the arrays along `axis`, as a tuple; differentiable (its transpose
    is `stack`).

    Example:
        >>> import numpy as np
        >>> [a.tolist() for a in unstack(np.arange(4.0).reshape(2, 2), axis=1)]
        [[0.0, 2.0], [1.0, 3.0]]
    """
    x = _operand(x)
    shape = shape_of(x)
    if not shape:
        raise ValueError("Input array must be at least 1-d.")
    return bind(unstack_p, x, axis=normalize_axis_index(axis, len(shape)))


def hstack(tup, *, dtype=None, casting: str = "same_kind"):
    """`numpy.hstack`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> hstack([np.array([1.0]), np.array([2.0, 3.0])]).tolist()
        [1.0, 2.0, 3.0]
        >>> ad.grad(lambda a, b: hstack([a, 2.0 * b]).sum(), argnums=(0, 1))(np.ones(1), np.ones(2))
        (array([1.]), array([2., 2.]))
    """
    arrays = [_atleast_1d(a) for a in tup]
    axis = 0 if arrays and ndim_of(arrays[0]) == 1 else 1
    return concatenate(arrays, axis, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting: str = "same_kind"):
    """`numpy.vstack`, differentiable.

    Example:
        >>> import numpy as np
        >>> vstack([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    return concatenate([_atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def dstack(tup):
    """`numpy.dstack`, differentiable.

    Example:
        >>> import numpy as np
        >>> dstack([np.zeros((2, 3)), np.ones((2, 3))]).shape
        (2, 3, 2)
    """
    return concatenate([_atleast_3d(a) for a in tup], 2)


def column_stack(tup):
    """`numpy.column_stack`, differentiable.

    Example:
        >>> import numpy as np
        >>> column_stack([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).tolist()
        [[1.0, 3.0], [2.0, 4.0]]
    """
    arrays = []
    for v in tup:
        a = _operand(v)
        arrays.append(structural.reshape(a, (a.size, 1)) if a.ndim < 2 else a)
    return concatenate(arrays, 1)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """`numpy.array_split`, differentiable (the pieces are views on raw arrays).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> [p.tolist() for p in array_split(np.arange(5.0), 2)]
        [[0.0, 1.0, 2.0], [3.0, 4.0]]
        >>> ad.grad(lambda x: array_split(x, 2)[1].sum())(np.zeros(5))
        array([0., 0., 0., 1., 1.])
    """
    ary = _operand(ary)
    n = ary.shape[axis]
    axis = normalize_axis_index(axis, ary.ndim)
    try:
        bounds = [0, *indices_or_sections, n]
    except TypeError:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extra = divmod(n, sections)
        bounds = np.cumsum([0] + [each + 1] * extra + [each] * (sections - extra)).tolist()
    ranges = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        start, stop, _ = slice(lo, hi).indices(n)
        ranges.append((start, max(start, stop)))
    return list(bind(split_p, ary, ranges=tuple(ranges), axis=axis))


def split(ary, indices_or_sections, axis: int = 0) -> list:
    """`numpy.split`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.tolist() for p in split(np.arange(5.0), [2])]
        [[0.0, 1.0], [2.0, 3.0, 4.0]]
    """
    ary = _operand(ary)
    try:
        len(indices_or_sections)
    except TypeError:
        if ary.shape[axis] % indices_or_sections:
            raise ValueError("array split does not result in an equal division") from None
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections) -> list:
    """`numpy.hsplit`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.shape for p in hsplit(np.zeros((2, 4)), 2)]
        [(2, 2), (2, 2)]
    """
    ary = _operand(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections) -> list:
    """`numpy.vsplit`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.shape for p in vsplit(np.zeros((4, 2)), [1])]
        [(1, 2), (3, 2)]
    """
    ary = _operand(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    """`numpy.dsplit`, differentiable.

    Example:
        >>> import numpy as np
        >>> [p.shape for p in dsplit(np.zeros((1, 2, 4)), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    ary = _operand(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def repeat(a, repeats, axis=None):
    """`numpy.repeat` (int or per-element repeats), differentiable (its transpose sums runs).

    Example:
        >>> import numpy as np
        >>> repeat(np.array([1.0, 2.0]), [1, 2])
        array([1., 2., 2.])
    """
    a = _operand(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    else:
        axis = normalize_axis_index(axis, ndim_of(a))
    r = np.asarray(repeats.primal() if isinstance(repeats, Tensor) else repeats)
    repeats = r.item() if r.ndim == 0 else tuple(r.tolist())
    return bind(repeat_p, a, repeats=repeats, axis=axis)


def flip(m, axis=None):
    """`numpy.flip`, differentiable (a view on raw arrays).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> flip(np.array([1.0, 2.0, 3.0])).tolist()
        [3.0, 2.0, 1.0]
        >>> ad.grad(lambda x: flip(x)[0])(np.zeros(3))  # the last element
        array([0., 0., 1.])
    """
    m = _operand(m)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        axis = tuple(axis)
    return bind(flip_p, m, axis=axis)


def _flip_axis_fn(name: str, axis: int, flipped: list):
    """numpy.fliplr (`axis` 1) or numpy.flipud (0): `flip(m, axis)`, with NumPy's error when
    `m` has no such axis."""

    def f(m):
        m = _operand(m)
        if ndim_of(m) <= axis:
            raise ValueError(f"Input must be >= {axis + 1}-d.")
        return flip(m, axis)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""`numpy.{name}`, differentiable.

    Example:
        >>> import numpy as np
        >>> {name}(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
        {flipped}
    """
    return f


fliplr = _flip_axis_fn("fliplr", 1, [[2.0, 1.0], [4.0, 3.0]])
flipud = _flip_axis_fn("flipud", 0, [[3.0, 4.0], [1.0, 2.0]])


def _atleast_1d(a):
    a = _operand(a)
    return structural.reshape(a, (1,)) if a.ndim == 0 else a


def _atleast_2d(a):
    a = _operand(a)
    return structural.reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a


def _atleast_3d(a):
    a = _operand(a)
    if a.ndim == 0:
        return structural.reshape(a, (1, 1, 1))
    if a.ndim == 1:
        return structural.reshape(a, (1,) + a.shape + (1,))
    if a.ndim == 2:
        return structural.reshape(a, a.shape + (1,))
    return a


def _one_or_tuple(results: tuple):
    return results[0] if len(results) == 1 else results


def atleast_1d(*arys):
    """`numpy.atleast_1d`, differentiable.

    Example:
        >>> import numpy as np
        >>> atleast_1d(np.float64(1.0)).shape, [a.shape for a in atleast_1d(1.0, np.ones(2))]
        ((1,), [(1,), (2,)])
    """
    return _one_or_tuple(tuple(_atleast_1d(a) for a in arys))


def atleast_2d(*arys):
    """`numpy.atleast_2d`, differentiable.

    Example:
        >>> import numpy as np
        >>> atleast_2d(np.ones(3)).shape
        (1, 3)
    """
    return _one_or_tuple(tuple(_atleast_2d(a) for a in arys))


def atleast_3d(*arys):
    """`numpy.atleast_3d`, differentiable.

    Example:
        >>> import numpy as np
        >>> atleast_3d(np.ones(3)).shape, atleast_3d(np.ones((2, 3))).shape
        ((1, 3, 1), (2, 3, 1))
    """
    return _one_or_tuple(tuple(_atleast_3d(a) for a in arys))


def copy(a, order: str = "K", subok: bool = False):
    """`numpy.copy`, differentiable (the identity on values).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(ad.grad(lambda x: copy(x) * x)(3.0))
        6.0
    """
    a = _operand(a)
    if not isinstance(a, Tensor):
        return np.copy(a, order=order, subok=subok)
    return bind(copy_p, a)


def _build(obj):
    """A nested list or tuple holding Tensors and numbers, stacked into one differentiable value."""
    if isinstance(obj, Tensor):
        return obj
    if not (isinstance(obj, (list, tuple)) and _holds_tensor(obj)):
        return np.asarray(obj)
    parts = [_build(o) for o in obj]
    shapes = {shape_of(p) for p in parts}
    if len(shapes) > 1:
        raise ValueError(
            "setting an array element with a sequence. The requested array has an "
            f"inhomogeneous shape: its elements have shapes {sorted(shapes)}."
        )
    return stack(parts)


def array(
    object,
    dtype=None,
    *,
    copy: bool = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
    like=None,
):
    """`numpy.array`; nested lists may mix Tensors and numbers, and stay differentiable.

    Without a Tensor inside, this is `numpy.array` itself.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> ad.grad(lambda x: anp.sum(anp.array([x[0], 2.0 * x[1], 1.0])))(anp.array([3.0, 4.0]))
        array([1., 2.])
    """
    if not _holds_tensor(object):
        return np.array(
            object, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, like=like
        )
    out = _build(object)
    if dtype is not None:
        out = astype(out, dtype)
    if copy and out is object:
        out = bind(copy_p, out)
    if out.ndim < ndmin:
        out = structural.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """`numpy.asarray`; a Tensor is returned as it is (cast if `dtype` is given).

    Example:
        >>> asarray([1.0, 2.0])
        array([1., 2.])
    """
    if isinstance(a, Tensor):
        out = a if dtype is None else astype(a, dtype)
        return bind(copy_p, out) if copy and out is a else out
    if _holds_tensor(a):
        return array(a, dtype=dtype)
    return np.asarray(a, dtype=dtype, order=order, device=device, copy=copy, like=like)


def matrix_transpose(x, /):
    """`numpy.matrix_transpose`: the last two axes swapped, differentiable.

    Example:
        >>> import numpy as np
        >>> matrix_transpose(np.ones((2, 3, 4))).shape
        (2, 4, 3)
    """
    x = _operand(x)
    if ndim_of(x) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {ndim_of(x)}")
    return swapaxes(x, -1, -2)


FUNCTIONS = {
    f.__name__: f
    for f in (
        reshape,
        ravel,
        transpose,
        swapaxes,
        moveaxis,
        expand_dims,
        squeeze,
        broadcast_to,
        broadcast_arrays,
        concatenate,
        stack,
        unstack,
        hstack,
        vstack,
        dstack,
        column_stack,
        split,
        array_split,
        hsplit,
        vsplit,
        dsplit,
        repeat,
        flip,
        fliplr,
        flipud,
        atleast_1d,
        atleast_2d,
        atleast_3d,
        copy,
        array,
        asarray,
        matrix_transpose,
    )
}
FUNCTIONS.update({"concat": concatenate, "permute_dims": transpose})
