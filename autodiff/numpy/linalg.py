"""autodiff.numpy.linalg: `numpy.linalg`'s names and semantics, differentiable and batchable.

The functions of the linear-algebra primitives (inv, solve, det, slogdet, cholesky, eigh,
eigvalsh, eig, eigvals, svd, qr, pinv, lstsq) come from `autodiff.ops.linalg`, matmul and
tensordot from `autodiff.ops.products`; the composites built on them (svdvals, the norms,
matrix_power, cond, matrix_rank, tensorinv, tensorsolve, multi_dot, matrix_transpose, diagonal,
trace, outer, vecdot, cross) are written here, with autodiff ops, so they get every rule for
free. `numpy.linalg.X` called on a Tensor or tracer dispatches to `FUNCTIONS["X"]`.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import bind
from autodiff.numpy._matrices import cross as _cross
from autodiff.ops import elementwise as _ew
from autodiff.ops import reduce as _reduce
from autodiff.ops import shape as _shape
from autodiff.ops.elementwise import astype, stop_gradient, where
from autodiff.ops.linalg import (
    cholesky,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    lstsq,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
)
from autodiff.ops.linalg_solve import inv_p
from autodiff.ops.matrix import (
    LinAlgError,
    _abs2,
    _check_matrix,
    _cols,
    _concrete,
    _diagonal,
    _mT,
    _trace,
)
from autodiff.ops.products import _array, dot, einsum, matmul, tensordot
from autodiff.ops.products import outer as _outer
from autodiff.ops.structural import shape_of


def svdvals(x, /):
    """`numpy.linalg.svdvals`: the singular values, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[3.0, 0.0], [0.0, -2.0]])
        >>> np.round(svdvals(a), 4)
        array([3., 2.])
        >>> ad.grad(lambda a: svdvals(a).sum())(a)  # the nuclear norm's gradient
        array([[ 1.,  0.],
               [ 0., -1.]])
    """
    return svd(x, compute_uv=False)


def _safe_sqrt(s):
    """`sqrt(s)` for `s >= 0` whose derivative is 0 (not inf or NaN) where `s == 0`."""
    zero = s == 0
    return where(zero, 0.0, _ew.sqrt(where(zero, 1.0, s)))


def _vector_norm(x, ord, axes: tuple, keepdims: bool):
    absolute = _ew.FUNCTIONS["absolute"]
    if ord == np.inf:
        return _reduce.max(absolute(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return _reduce.min(absolute(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        real = np.finfo(dtype_of(x)).dtype
        return _reduce.sum(astype(x != 0, real), axis=axes, keepdims=keepdims)
    if ord == 1:
        return _reduce.sum(absolute(x), axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        return _safe_sqrt(_reduce.sum(_abs2(x), axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    total = _reduce.sum(absolute(x) ** ord, axis=axes, keepdims=keepdims)
    zero = total == 0  # the p-norm's subgradient 0 at the origin, as for the 2-norm
    return where(zero, 0.0, where(zero, 1.0, total) ** (1.0 / ord))


def _matrix_norm(x, ord, row: int, col: int):
    absolute = _ew.FUNCTIONS["absolute"]
    if ord in (2, -2, "nuc"):
        s = svd(_shape.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        reduce = {2: _reduce.max, -2: _reduce.min, "nuc": _reduce.sum}[ord]
        return reduce(s, axis=-1)
    if ord in (1, -1):
        reduce = _reduce.max if ord == 1 else _reduce.min
        return reduce(_reduce.sum(absolute(x), axis=row), axis=col - (col > row))
    if ord in (np.inf, -np.inf):
        reduce = _reduce.max if ord == np.inf else _reduce.min
        return reduce(_reduce.sum(absolute(x), axis=col), axis=row - (row > col))
    if ord in (None, "fro", "f"):
        return _safe_sqrt(_reduce.sum(_abs2(x), axis=(row, col)))
    raise ValueError("Invalid norm order for matrices.")


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """`numpy.linalg.norm`: vector norms (any `ord`) and matrix norms (None, "fro", "nuc",
    inf, -inf, 1, -1, 2, -2), differentiable.

    At the origin the 2-norm (and "fro", and the p-norms) has the subgradient 0, not NaN.
    The max/min norms share the derivative between tied entries; 2, -2 and "nuc" go
    through the SVD (distinct singular values).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(norm)(np.array([3.0, 4.0])), ad.grad(norm)(np.zeros(2))
        (array([0.6, 0.8]), array([0., 0.]))
    """
    x = _array(x)
    if not is_inexact(dtype_of(x)):
        x = astype(x, np.float64)
    nd = len(shape_of(x))
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            ret = _safe_sqrt(_reduce.sum(_abs2(x)))
            return _shape.reshape(ret, (1,) * nd) if keepdims else ret
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        return _vector_norm(x, ord, (normalize_axis_index(axis[0], nd),), keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = (normalize_axis_index(a, nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    ret = _matrix_norm(x, ord, row, col)
    if keepdims:
        shape = [1 if i in (row, col) else s for i, s in enumerate(shape_of(x))]
        ret = _shape.reshape(ret, tuple(shape))
    return ret


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """`numpy.linalg.vector_norm`: several axes form one vector; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([[3.0, 0.0], [0.0, 4.0]])
        >>> float(vector_norm(x)), vector_norm(x, axis=0).tolist()
        (5.0, [3.0, 4.0])
        >>> ad.grad(vector_norm)(x)  # x / |x|
        array([[0.6, 0. ],
               [0. , 0.8]])
    """
    x = _array(x)
    shape = list(shape_of(x))
    if axis is None:
        y, y_axis = _shape.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, len(shape))
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        y = _shape.reshape(
            _shape.transpose(x, axes + rest),
            (int(np.prod([shape[i] for i in axes], dtype=int)), *[shape[i] for i in rest]),
        )
        y_axis = 0
    else:
        y, y_axis = x, axis
    ret = norm(y, ord=ord, axis=y_axis)
    if keepdims:
        axes = normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape))
        ret = _shape.reshape(ret, tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return ret


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """`numpy.linalg.matrix_norm`: the norm over the last two axes; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[3.0, 0.0], [0.0, 4.0]])
        >>> float(matrix_norm(a)), float(matrix_norm(a, ord=1))
        (5.0, 4.0)
        >>> ad.grad(matrix_norm)(a)  # a / |a|_F
        array([[0.6, 0. ],
               [0. , 0.8]])
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def matrix_power(a, n: int):
    """`numpy.linalg.matrix_power` by repeated squaring (negative powers through `inv`).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda a: matrix_power(a, 3).sum())(np.eye(2))
        array([[3., 3.],
               [3., 3.]])
    """
    a = _array(a)
    _check_matrix(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:  # a constant: the identity, with `a`'s shape and dtype
        return np.broadcast_to(np.eye(shape_of(a)[-1], dtype=dtype_of(a)), shape_of(a)).copy()
    if n < 0:
        a, n = inv(a), -n
    if n <= 3:
        result = a
        for _ in range(n - 1):
            result = result @ a
        return result
    z = result = None
    while n > 0:  # NumPy's order of products, so that values match
        z = a if z is None else z @ z
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else result @ z
    return result


def cond(x, p=None):
    """`numpy.linalg.cond`, differentiable (2-norm conditions through the SVD).

    Example:
        >>> import numpy as np
        >>> float(cond(np.array([[2.0, 0.0], [0.0, 0.5]])))
        4.0
    """
    x = _array(x)
    _check_matrix(x, square=p not in (None, 2, -2))
    if 0 in shape_of(x)[-2:]:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        with np.errstate(all="ignore"):
            r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        inv_x = bind(inv_p, x, nan_if_singular=True)
        r = norm(x, p, axis=(-2, -1)) * norm(inv_x, p, axis=(-2, -1))
    # NaN (0 / 0 from a singular matrix) means infinite, unless x itself has NaNs.
    nan_from_x = _reduce.any(_ew.isnan(x), axis=(-2, -1))
    return where(_ew.isnan(r) & ~nan_from_x, np.inf, r)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):
    """`numpy.linalg.matrix_rank`: an integer constant.

    Example:
        >>> import numpy as np
        >>> int(matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]]))), int(matrix_rank(np.eye(3)))
        (1, 3)
    """
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = _array(A)
    if len(shape_of(A)) < 2:
        return int(not bool(_concrete(_reduce.all(A == 0))))
    s = stop_gradient(svd(A, compute_uv=False, hermitian=hermitian))
    if tol is None:
        if rtol is None:
            rtol = max(shape_of(A)[-2:]) * float(np.finfo(dtype_of(s)).eps)
        else:
            rtol = _cols(_array(rtol))
        tol = _reduce.max(s, axis=-1, keepdims=True) * rtol
    else:
        tol = _cols(_array(tol))
    return _reduce.count_nonzero(s > tol, axis=-1)


def tensorinv(a, ind: int = 2):
    """`numpy.linalg.tensorinv`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = 2.0 * np.eye(4).reshape(4, 2, 2)
        >>> tensorinv(a, ind=1).shape
        (2, 2, 4)
        >>> g = ad.grad(lambda a: tensorinv(a, ind=1).sum())(a)  # -inv^T 1 1^T inv^T
        >>> g.reshape(4, 4)[0]
        array([-0.25, -0.25, -0.25, -0.25])
    """
    a = _array(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = shape_of(a)
    inv_shape = shape[ind:] + shape[:ind]
    rows = int(np.prod(shape[ind:], dtype=int))
    return _shape.reshape(inv(_shape.reshape(a, (rows, -1))), inv_shape)


def tensorsolve(a, b, axes=None):
    """`numpy.linalg.tensorsolve`, differentiable in `a` and `b`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b = 2.0 * np.eye(4).reshape(2, 2, 2, 2), np.array([[2.0, 4.0], [6.0, 8.0]])
        >>> tensorsolve(a, b).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
        >>> ad.grad(lambda b: tensorsolve(a, b).sum())(b)
        array([[0.5, 0.5],
               [0.5, 0.5]])
    """
    a, b = _array(a), _array(b)
    nd = len(shape_of(a))
    if axes is not None:
        order = list(range(nd))
        for k in axes:
            order.remove(k)
            order.insert(nd, k)
        a = _shape.transpose(a, order)
    old_shape = shape_of(a)[-(nd - len(shape_of(b))) :]
    size = int(np.prod(old_shape, dtype=int))
    if int(np.prod(shape_of(a), dtype=int)) != size**2:
        raise LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
            "prod(a.shape[:b.ndim])"
        )
    x = solve(_shape.reshape(a, (size, size)), _shape.ravel(b))
    return _shape.reshape(x, old_shape)


def multi_dot(arrays, *, out=None):
    """`numpy.linalg.multi_dot`: the chain of `dot`s in NumPy's cheapest order; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones(4)
        >>> multi_dot([a, b, c]).tolist()
        [12.0, 12.0]
        >>> ad.grad(lambda c: multi_dot([a, b, c]).sum())(c)
        array([6., 6., 6., 6.])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.linalg.multi_dot does not support out")
    arrays = [_array(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1])
    first, last = len(shape_of(arrays[0])), len(shape_of(arrays[-1]))
    if first == 1:
        arrays[0] = _shape.reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = _shape.reshape(arrays[-1], (-1, 1))
    result = _chain_product(arrays)
    if first == 1 and last == 1:
        return result[0, 0]
    return _shape.ravel(result) if first == 1 or last == 1 else result


def _chain_product(arrays):
    """The product of a chain of matrices, in NumPy's cheapest order."""
    for x in arrays:
        if len(shape_of(x)) != 2:
            raise LinAlgError(
                f"{len(shape_of(x))}-dimensional array given. Array must be two-dimensional"
            )
    split = _chain_order([shape_of(x) for x in arrays])

    def product(i, j):
        if i == j:
            return arrays[i]
        return dot(product(i, split[i][j]), product(split[i][j] + 1, j))

    return product(0, len(arrays) - 1)


def _chain_order(shapes) -> list:
    """`split[i][j]`: where the optimal product of matrices i..j splits (NumPy's algorithm)."""
    n = len(shapes)
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0.0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = np.inf
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + float(p[i] * p[k + 1] * p[j + 1])
                if q < cost[i][j]:
                    cost[i][j] = q
                    split[i][j] = k
    return split


def matrix_transpose(x, /):
    """`numpy.linalg.matrix_transpose`: swaps the last two axes; differentiable.

    Example:
        >>> import numpy as np
        >>> matrix_transpose(np.zeros((5, 2, 3))).shape
        (5, 3, 2)
    """
    x = _array(x)
    _check_matrix(x, square=False)
    return _mT(x)


def _offset_square(x, offset: int):
    """The square block of the last two axes whose main diagonal is `x`'s `offset` diagonal."""
    _check_matrix(x, square=False)
    x = x[..., :, offset:] if offset >= 0 else x[..., -offset:, :]
    k = min(shape_of(x)[-2:])
    return x[..., :k, :k]


def diagonal(x, /, *, offset: int = 0):
    """`numpy.linalg.diagonal`: the `offset` diagonal of the last two axes; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.arange(6.0).reshape(2, 3)
        >>> diagonal(a).tolist(), diagonal(a, offset=1).tolist()
        ([0.0, 4.0], [1.0, 5.0])
        >>> ad.grad(lambda a: diagonal(a, offset=1).sum())(a)
        array([[0., 1., 0.],
               [0., 0., 1.]])
    """
    return _diagonal(_offset_square(_array(x), operator.index(offset)))


def trace(x, /, *, offset: int = 0, dtype=None):
    """`numpy.linalg.trace`: sums the `offset` diagonal of the last two axes; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.arange(6.0).reshape(2, 3)
        >>> float(trace(a)), float(trace(a, offset=1))
        (4.0, 6.0)
        >>> ad.grad(trace)(a)
        array([[1., 0., 0.],
               [0., 1., 0.]])
    """
    x = _array(x)
    if dtype is not None:
        x = astype(x, dtype)
    return _trace(_offset_square(x, operator.index(offset)))


def outer(x1, x2, /):
    """`numpy.linalg.outer`: the outer product of two vectors (1-D only, unlike `numpy.outer`);
    differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> outer(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])).shape
        (2, 3)
        >>> ad.grad(lambda x: outer(x, np.array([3.0, 4.0])).sum())(np.array([1.0, 2.0]))
        array([7., 7.])
    """
    x1, x2 = _array(x1), _array(x2)
    if len(shape_of(x1)) != 1 or len(shape_of(x2)) != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"x1.ndim={len(shape_of(x1))} and x2.ndim={len(shape_of(x2))}."
        )
    return _outer(x1, x2)


def vecdot(x1, x2, /, *, axis: int = -1):
    """`numpy.linalg.vecdot`: `sum(conj(x1) * x2)` along `axis`, the other axes broadcast;
    differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> vecdot(x, np.array([1.0, 1.0])).tolist()
        [3.0, 7.0]
        >>> ad.grad(lambda x: vecdot(x, x).sum())(x)
        array([[2., 4.],
               [6., 8.]])
    """
    x1, x2 = _array(x1), _array(x2)
    moved = []
    for i, x in enumerate((x1, x2)):
        nd = len(shape_of(x))
        if nd == 0:
            raise ValueError(
                f"vecdot: Input operand {i} does not have enough dimensions (has 0, gufunc core "
                "with signature (n),(n)->() requires 1)"
            )
        moved.append(_shape.moveaxis(x, normalize_axis_index(axis, nd), -1))
    n1, n2 = shape_of(moved[0])[-1], shape_of(moved[1])[-1]
    if n1 != n2:
        raise ValueError(
            "vecdot: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n),(n)->() (size {n2} is different from {n1})"
        )
    return einsum("...i,...i->...", _ew.conj_complex(moved[0]), moved[1])


def cross(x1, x2, /, *, axis: int = -1):
    """`numpy.linalg.cross`: the cross product of 3-vectors along `axis` (3-vectors only, unlike
    `numpy.cross`); differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> cross(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        array([0., 0., 1.])
        >>> ad.grad(lambda x: cross(x, np.array([0.0, 1.0, 0.0]))[2])(np.array([1.0, 0.0, 0.0]))
        array([1., 0., 0.])
    """
    x1, x2 = _array(x1), _array(x2)
    n1, n2 = shape_of(x1)[axis], shape_of(x2)[axis]
    if n1 != 3 or n2 != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
            f"{n1} and {n2} dimensional instead."
        )
    return _cross(x1, x2, axis=axis)


FUNCTIONS: dict = {
    f.__name__: f
    for f in (
        inv,
        solve,
        det,
        slogdet,
        cholesky,
        eigh,
        eigvalsh,
        eig,
        eigvals,
        svd,
        svdvals,
        qr,
        pinv,
        lstsq,
        norm,
        vector_norm,
        matrix_norm,
        matrix_power,
        cond,
        matrix_rank,
        tensorinv,
        tensorsolve,
        multi_dot,
        matrix_transpose,
        diagonal,
        trace,
        matmul,
        tensordot,
        outer,
        vecdot,
        cross,
    )
}

__all__ = ["LinAlgError", *sorted(FUNCTIONS)]
