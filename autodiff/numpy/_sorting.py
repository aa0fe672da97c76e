"""Sorting, searching and counting: sort, argsort, partition, lexsort, searchsorted, the
unique family, nonzero, argwhere, isin.

A sort is a gather through argsort: the derivative of each sorted position goes back to the
element that landed there. Indices and counts are integer constants.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import bind
from autodiff.core.tensor import Tensor
from autodiff.numpy._arguments import concrete_values, flat_axis
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype
from autodiff.ops.sorting import argsort_p, searchsorted_p, take_along, unique_p
from autodiff.ops.structural import broadcast_to, ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value


def _check_sort_kind(kind, stable) -> None:
    np.sort(np.empty(0), kind=kind, stable=stable)  # NumPy's errors for an invalid kind


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`numpy.sort`, differentiable in the values: the gradient of each sorted position goes
    back to the element that landed there.

    Equal values get the gradient of the sorted position they occupy in a stable sort (the
    earlier element the earlier position), whatever `kind` and `stable` say: those only
    choose NumPy's algorithm, and the sorted values are the same for all of them.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda x: sort(x)[0] + 2.0 * sort(x)[2])(np.array([3.0, 1.0, 2.0]))
        array([2., 1., 0.])
    """
    if order is not None:
        raise NotImplementedError("autodiff.numpy.sort does not support order= (structured arrays)")
    a, axis = flat_axis(_operand(a), axis, scalar_as_vector=False)
    if not isinstance(a, Tensor):
        return np.sort(a, axis, kind=kind, stable=stable)
    _check_sort_kind(kind, stable)
    return take_along(a, bind(argsort_p, a, axis=axis, kind="stable", stable=None), axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`numpy.argsort`: integer indices, a constant.

    Example:
        >>> import numpy as np
        >>> argsort(np.array([3.0, 1.0, 2.0])).tolist()
        [1, 2, 0]
    """
    if order is not None:
        raise NotImplementedError(
            "autodiff.numpy.argsort does not support order= (structured arrays)"
        )
    a, axis = flat_axis(_operand(a), axis)
    return bind(argsort_p, a, axis=axis, kind=kind, stable=stable)


def searchsorted(a, v, side="left", sorter=None):
    """`numpy.searchsorted`: integer indices, a constant (vmappable in `a` and `v`).

    Example:
        >>> import numpy as np
        >>> searchsorted(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5]))
        array([1, 0])
    """
    a, v = _operand(a), _operand(v)
    if sorter is not None:
        a = take_along(a, _operand(sorter), 0)
    return bind(searchsorted_p, a, v, side=side, batch_dims=0)


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,
):
    """`numpy.unique` of the concrete values: constants (not differentiable, not vmappable).

    Example:
        >>> import numpy as np
        >>> unique(np.array([3.0, 1.0, 3.0]))
        array([1., 3.])
    """
    out = bind(
        unique_p,
        _operand(ar),
        return_index=bool(return_index),
        return_inverse=bool(return_inverse),
        return_counts=bool(return_counts),
        axis=axis,
        equal_nan=bool(equal_nan),
        sorted=bool(sorted),
    )
    return out[0] if len(out) == 1 else tuple(out)


def _kth_checked(kth, n: int) -> None:
    kth = np.asarray(kth)
    if kth.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if kth.size and (kth.max() >= n or kth.min() < -n):
        raise ValueError(f"kth(={int(kth.max())}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.partition`, differentiable: the kth elements are where a sort would put them,
    smaller ones before and larger ones after. Here every element is in sorted order (a
    valid partition; NumPy leaves the order within the parts unspecified).

    Example:
        >>> import numpy as np
        >>> partition(np.array([3.0, 4.0, 2.0, 1.0]), 2)[2]
        np.float64(3.0)
    """
    if order is not None:
        raise NotImplementedError("autodiff.numpy.partition does not support order=")
    a, axis = flat_axis(_operand(a), axis, scalar_as_vector=False)
    _kth_checked(kth, shape_of(a)[axis])
    return sort(a, axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.argpartition`: the indices that partition `a` (here those of a stable sort),
    an integer constant.

    Example:
        >>> import numpy as np
        >>> int(argpartition(np.array([3.0, 4.0, 2.0, 1.0]), 2)[2])
        0
    """
    if order is not None:
        raise NotImplementedError("autodiff.numpy.argpartition does not support order=")
    a = _operand(a)
    if axis is not None:
        _kth_checked(kth, shape_of(a)[normalize_axis_index(axis, max(ndim_of(a), 1))])
    return argsort(a, axis, kind="stable")


def sort_complex(a):
    """`numpy.sort_complex`: sorted by real part, then imaginary part, as complex values;
    differentiable.

    Example:
        >>> import numpy as np
        >>> sort_complex(np.array([1.0 + 2j, 1.0 - 1j, 0.5 + 0j]))
        array([0.5+0.j, 1. -1.j, 1. +2.j])
    """
    a = _operand(a)
    out = sort(a)
    if not np.issubdtype(dtype_of(out), np.complexfloating):
        kind = np.dtype(dtype_of(out)).char
        target = "F" if kind in "bhBH" else ("G" if kind == "g" else "D")
        out = astype(out, np.dtype(target))
    return out


def lexsort(keys, axis=-1):
    """`numpy.lexsort`: the indices sorting by the last key, then the one before, ...; an
    integer constant (vmappable: a chain of stable argsorts).

    Example:
        >>> import numpy as np
        >>> lexsort((np.array([1.0, 0.0, 1.0]), np.array([2.0, 1.0, 1.0])))
        array([1, 2, 0])
    """
    keys = [
        _operand(k)
        for k in (keys if isinstance(keys, (list, tuple)) else list(shp.unstack(_operand(keys))))
    ]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = np.broadcast_shapes(*(shape_of(k) for k in keys))
    axis = normalize_axis_index(axis, len(shape)) if shape else 0
    keys = [broadcast_to(k, shape) for k in keys]
    order = None
    for key in keys:
        sorted_key = key if order is None else take_along(key, order, axis)
        step = bind(argsort_p, sorted_key, axis=axis, kind="stable", stable=None)
        order = step if order is None else take_along(order, step, axis)
    return order


def nonzero(a):
    """`numpy.nonzero`: the indices of the nonzero elements (integer constants, whose number
    the values decide).

    Example:
        >>> import numpy as np
        >>> nonzero(np.array([0.0, 1.5, 0.0, 2.0]))
        (array([1, 3]),)
    """
    return np.nonzero(concrete_values(_operand(a), "nonzero"))


def flatnonzero(a):
    """`numpy.flatnonzero`: the indices of the nonzero elements of the flattened array.

    Example:
        >>> import numpy as np
        >>> flatnonzero(np.array([[0.0, 1.0], [2.0, 0.0]]))
        array([1, 2])
    """
    return np.flatnonzero(concrete_values(_operand(a), "flatnonzero"))


def argwhere(a):
    """`numpy.argwhere`: the indices of the nonzero elements, one row each.

    Example:
        >>> import numpy as np
        >>> argwhere(np.array([[0.0, 1.0], [2.0, 0.0]]))
        array([[0, 1],
               [1, 0]])
    """
    return np.argwhere(concrete_values(_operand(a), "argwhere"))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """`numpy.isin`: whether each element equals one of `test_elements` (a boolean
    constant; vmappable, by comparing every pair).

    Example:
        >>> import numpy as np
        >>> isin(np.array([1.0, 2.0, 3.0]), [2.0, 5.0]).tolist()
        [False, True, False]
    """
    element, tests = _operand(element), shp.ravel(_operand(test_elements))
    pairs = shp.expand_dims(element, -1) == tests
    found = red.any(pairs, axis=-1)
    return ~found if invert else found


def unique_values(x):
    """`numpy.unique_values`: the distinct values (a constant).

    Example:
        >>> import numpy as np
        >>> unique_values(np.array([2.0, 1.0, 2.0]))
        array([1., 2.])
    """
    return np.unique_values(concrete_values(_operand(x), "unique_values"))


def unique_counts(x):
    """`numpy.unique_counts`: the distinct values and their counts (constants).

    Example:
        >>> import numpy as np
        >>> unique_counts(np.array([2.0, 1.0, 2.0])).counts
        array([1, 2])
    """
    return np.unique_counts(concrete_values(_operand(x), "unique_counts"))


def unique_inverse(x):
    """`numpy.unique_inverse`: the distinct values and where each element's is (constants).

    Example:
        >>> import numpy as np
        >>> unique_inverse(np.array([2.0, 1.0, 2.0])).inverse_indices
        array([1, 0, 1])
    """
    return np.unique_inverse(concrete_values(_operand(x), "unique_inverse"))


def unique_all(x):
    """`numpy.unique_all`: values, indices, inverse indices and counts (constants).

    Example:
        >>> import numpy as np
        >>> unique_all(np.array([2.0, 1.0, 2.0])).indices
        array([1, 0])
    """
    return np.unique_all(concrete_values(_operand(x), "unique_all"))


FUNCTIONS = {
    f.__name__: f
    for f in (
        sort,
        argsort,
        searchsorted,
        unique,
        partition,
        argpartition,
        sort_complex,
        lexsort,
        nonzero,
        flatnonzero,
        argwhere,
        isin,
        unique_values,
        unique_counts,
        unique_inverse,
        unique_all,
    )
}
