"""Matrices and products of arrays: diagonals and triangles, kron and cross, the array API's
vector products, meshgrid and vander, and the index helpers of a matrix's shape.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.dtypes import dtype_of
from autodiff.numpy._arguments import no_out
from autodiff.numpy._cumulative import cumprod
from autodiff.ops import elementwise as ew
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype, where
from autodiff.ops.index import getitem, scatter_add
from autodiff.ops.products import einsum
from autodiff.ops.structural import broadcast_to, ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value


# ---------------------------------------------------------------------------------------------
# Diagonals and triangles.


def diagonal(a, offset=0, axis1=0, axis2=1):
    """`numpy.diagonal`, differentiable (its transpose scatters back onto the diagonal).

    Example:
        >>> import numpy as np
        >>> diagonal(np.arange(9.0).reshape(3, 3), 1)
        array([1., 5.])
    """
    a = _operand(a)
    ndim = ndim_of(a)
    if ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i = normalize_axis_index(axis1, ndim, "axis1")
    j = normalize_axis_index(axis2, ndim, "axis2")
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    x = shp.moveaxis(a, (i, j), (-2, -1))
    rows, cols = shape_of(x)[-2:]
    r0, c0 = max(-offset, 0), max(offset, 0)
    d = np.arange(max(0, min(rows - r0, cols - c0)))
    return getitem(x, (Ellipsis, d + r0, d + c0))


def diag(v, k=0):
    """`numpy.diag`: the `k`-th diagonal of a matrix, or a matrix with `v` on it; differentiable.

    Example:
        >>> import numpy as np
        >>> diag(np.array([1.0, 2.0]), 1)
        array([[0., 1., 0.],
               [0., 0., 2.],
               [0., 0., 0.]])
    """
    v = _operand(v)
    s = shape_of(v)
    if len(s) == 1:
        n = s[0] + abs(k)
        i = np.arange(s[0])
        return scatter_add(v, (n, n), (i, i + k) if k >= 0 else (i - k, i))
    if len(s) == 2:
        return diagonal(v, k)
    raise ValueError("Input must be 1- or 2-d.")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """`numpy.trace`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.arange(4.0).reshape(2, 2)
        >>> float(trace(a)), ad.grad(trace)(a)
        (3.0, array([[1., 0.],
               [0., 1.]]))
    """
    no_out("trace", out)
    return red.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def triu(m, k=0):
    """`numpy.triu`: zeros below the `k`-th diagonal (of the last two axes), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> triu(np.ones((2, 2))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
        >>> ad.grad(lambda a: triu(a, 1).sum())(np.ones((2, 2)))
        array([[0., 1.],
               [0., 0.]])
    """
    m = _operand(m)
    mask = np.tril(np.ones(shape_of(m)[-2:], bool), k - 1)  # (NumPy's mask, and errors)
    return where(mask, np.zeros(1, dtype_of(m)), m)


def tril(m, k=0):
    """`numpy.tril`: zeros above the `k`-th diagonal (of the last two axes), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> tril(np.ones((2, 2))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
        >>> ad.grad(lambda a: tril(a, -1).sum())(np.ones((2, 2)))
        array([[0., 0.],
               [1., 0.]])
    """
    m = _operand(m)
    mask = np.tril(np.ones(shape_of(m)[-2:], bool), k)  # (NumPy's mask, and errors)
    return where(mask, m, np.zeros(1, dtype_of(m)))


def diagflat(v, k=0):
    """`numpy.diagflat`: the flattened `v` on the `k`-th diagonal, differentiable.

    Example:
        >>> import numpy as np
        >>> diagflat(np.array([[1.0, 2.0]]))
        array([[1., 0.],
               [0., 2.]])
    """
    return diag(shp.ravel(_operand(v)), k)


# ---------------------------------------------------------------------------------------------
# Products of arrays.


def kron(a, b):
    """`numpy.kron`, differentiable in both (a broadcast product, reshaped).

    Example:
        >>> import numpy as np
        >>> kron(np.array([1.0, 10.0]), np.array([1.0, 2.0]))
        array([ 1.,  2., 10., 20.])
    """
    a, b = _operand(a), _operand(b)
    nda, ndb = ndim_of(a), ndim_of(b)
    if nda < ndb:  # NumPy reads `a` with ndmin=b.ndim
        a = shp.reshape(a, (1,) * (ndb - nda) + shape_of(a))
        nda = ndb
    if nda == 0 or ndb == 0:
        return a * b
    a_shape = shape_of(a)
    b_shape = (1,) * (nda - ndb) + shape_of(b)
    a2 = shp.reshape(a, tuple(d for s in a_shape for d in (s, 1)))
    b2 = shp.reshape(b, tuple(d for s in b_shape for d in (1, s)))
    return shp.reshape(a2 * b2, tuple(p * q for p, q in zip(a_shape, b_shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """`numpy.cross` of 3-vectors (2-vectors as NumPy, with its DeprecationWarning), differentiable.

    Example:
        >>> import numpy as np
        >>> cross(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _operand(a), _operand(b)
    if ndim_of(a) < 1 or ndim_of(b) < 1:
        raise ValueError("At least one array has zero dimension")
    a = shp.moveaxis(a, normalize_axis_index(axisa, ndim_of(a), msg_prefix="axisa"), -1)
    b = shp.moveaxis(b, normalize_axis_index(axisb, ndim_of(b), msg_prefix="axisb"), -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional "
            "vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=2,
        )
    shape = np.broadcast_shapes(shape_of(a)[:-1], shape_of(b)[:-1])
    if na == 3 or nb == 3:
        axisc = normalize_axis_index(axisc, len(shape) + 1, msg_prefix="axisc")
    dtype = np.promote_types(dtype_of(a), dtype_of(b))
    a, b = astype(a, dtype), astype(b, dtype)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        z = a0 * b1 - a1 * b0
        return np.asarray(z) if isinstance(z, np.generic) else z  # NumPy gives a 0-d array
    if na == 2:
        b2 = b[..., 2]
        parts = (a1 * b2, ew.negative(a0 * b2), a0 * b1 - a1 * b0)
    elif nb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        parts = (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
    else:
        a2 = a[..., 2]
        parts = (ew.negative(a2 * b1), a2 * b0, a0 * b1 - a1 * b0)
    cp = shp.stack([broadcast_to(p, shape) for p in parts], axis=-1)
    return shp.moveaxis(cp, -1, axisc)


# ---------------------------------------------------------------------------------------------
# The array API's vector products (NumPy 2's gufuncs).


def vecdot(x1, x2, /, *, axis=-1):
    """`numpy.vecdot`: sum(conj(x1) * x2) along `axis` (broadcasting the rest), differentiable.

    Example:
        >>> import numpy as np
        >>> vecdot(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
        array([3., 7.])
    """
    x1, x2 = _operand(x1), _operand(x2)
    return red.sum(ew.conj(x1) * x2, axis=axis)


def matvec(x1, x2, /):
    """`numpy.matvec`: matrix times vector over the last axes (broadcasting), differentiable.

    Example:
        >>> import numpy as np
        >>> matvec(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
        array([3., 7.])
    """
    x1, x2 = _operand(x1), _operand(x2)
    return einsum("...ij,...j->...i", x1, x2)


def vecmat(x1, x2, /):
    """`numpy.vecmat`: conj(vector) times matrix over the last axes (broadcasting).

    Example:
        >>> import numpy as np
        >>> vecmat(np.array([1.0, 1.0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([4., 6.])
    """
    x1, x2 = _operand(x1), _operand(x2)
    return einsum("...j,...ji->...i", ew.conj(x1), x2)


# ---------------------------------------------------------------------------------------------
# Grids, and the indices of a matrix's parts.


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """`numpy.meshgrid`, differentiable in the coordinate vectors.

    Example:
        >>> import numpy as np
        >>> [g.tolist() for g in meshgrid(np.array([1.0, 2.0]), np.array([3.0]))]
        [[[1.0, 2.0]], [[3.0, 3.0]]]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [shp.reshape(_operand(x), s0[:i] + (-1,) + s0[i + 1 :]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = shp.reshape(output[0], (1, -1) + s0[2:])
        output[1] = shp.reshape(output[1], (-1, 1) + s0[2:])
    if not sparse:
        output = list(shp.broadcast_arrays(*output))
    if copy:
        output = [shp.copy(x) for x in output]
    return tuple(output)


def vander(x, N=None, increasing=False):
    """`numpy.vander`, differentiable (columns are cumulative products, as NumPy computes them).

    Example:
        >>> import numpy as np
        >>> vander(np.array([2.0, 3.0]), 3)
        array([[4., 2., 1.],
               [9., 3., 1.]])
    """
    x = _operand(x)
    if ndim_of(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = shape_of(x)[0]
    if N is None:
        N = n
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = np.promote_types(dtype_of(x), int)
    x = astype(x, dtype)
    columns = [np.ones((n, min(N, 1)), dtype)]
    if N > 1:
        columns.append(cumprod(broadcast_to(shp.reshape(x, (n, 1)), (n, N - 1)), axis=1))
    v = shp.concatenate(columns, 1) if len(columns) > 1 else columns[0]
    return v if increasing else shp.flip(v, 1)


def _indices_from(name: str, indices):
    def f(arr, k=0):
        shape = shape_of(_operand(arr))
        if len(shape) != 2:
            raise ValueError("input array must be 2-d")
        return indices(shape[-2], k=k, m=shape[-1])

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""`numpy.{name}`: the indices for an array of `arr`'s shape (constants).

    Example:
        >>> import numpy as np
        >>> [i.tolist() for i in {name}(np.ones((2, 2)))]
        {[i.tolist() for i in indices(2, k=0, m=2)]}
    """
    return f


tril_indices_from = _indices_from("tril_indices_from", np.tril_indices)


triu_indices_from = _indices_from("triu_indices_from", np.triu_indices)


def diag_indices_from(arr):
    """`numpy.diag_indices_from`: the indices of the main diagonal (constants).

    Example:
        >>> import numpy as np
        >>> diag_indices_from(np.ones((2, 2)))
        (array([0, 1]), array([0, 1]))
    """
    shape = shape_of(_operand(arr))
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


FUNCTIONS = {
    f.__name__: f
    for f in (
        diagonal,
        diag,
        trace,
        triu,
        tril,
        diagflat,
        kron,
        cross,
        vecdot,
        matvec,
        vecmat,
        meshgrid,
        vander,
        tril_indices_from,
        triu_indices_from,
        diag_indices_from,
    )
}
