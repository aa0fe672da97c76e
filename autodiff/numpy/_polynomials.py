"""NumPy's polynomial functions (coefficient arrays, highest power first), as composites:
poly, roots, polyval, polyadd, polysub, polymul, polydiv, polyder, polyint, polyfit.

Each follows NumPy's computation, so values match NumPy's; derivatives come from the parts
(convolutions, a least-squares solve, the eigenvalues of the companion matrix). Where NumPy
decides a shape from values (leading zeros stripped, roots at zero), the values decide it
here too, so those functions need concrete coefficients (not under vmap or jit).
"""

from __future__ import annotations

import warnings

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.numpy._arguments import concrete_values
from autodiff.numpy._matrices import vander
from autodiff.numpy._sequences import convolve
from autodiff.ops import linalg
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import FUNCTIONS as _F
from autodiff.ops.elementwise import astype
from autodiff.ops.index import getitem, index_set
from autodiff.ops.products import dot, outer
from autodiff.ops.structural import ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value


def _coefficients(p):
    return shp.atleast_1d(_operand(p))


def _length(p) -> int:
    return shape_of(p)[0]


def _leading_zeros_stripped(p):
    """NumPy's poly1d(p): the coefficients without leading zeros ([0] for all zeros)."""
    values = concrete_values(p, "polymul")
    nonzero = np.flatnonzero(values)
    if nonzero.size == 0:
        return getitem(p, slice(-1, None)) * 0 if _length(p) else np.array([0.0])
    return getitem(p, slice(int(nonzero[0]), None))


def poly(seq_of_zeros):
    """`numpy.poly`: the coefficients of the monic polynomial with the given roots (of the
    eigenvalues of a square matrix), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> poly(np.array([1.0, 2.0]))
        array([ 1., -3.,  2.])
        >>> ad.grad(lambda r: poly(r)[2])(np.array([1.0, 2.0]))  # d(r0 r1)
        array([2., 1.])
    """
    seq = shp.atleast_1d(_operand(seq_of_zeros))
    sh = shape_of(seq)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        seq = linalg.eigvals(seq)
    elif len(sh) == 1:
        seq = astype(seq, np.dtype(np.mintypecode(np.dtype(dtype_of(seq)).char)))
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if _length(seq) == 0:
        return 1.0
    dt = dtype_of(seq)
    a = np.ones((1,), dtype=dt)
    for k in range(_length(seq)):
        factor = shp.stack([np.ones((), dt), -getitem(seq, k)])
        a = convolve(a, factor, mode="full")
    if np.issubdtype(dt, np.complexfloating):
        values = concrete_values(seq, "poly").astype(complex)
        if np.all(np.sort(values) == np.sort(values.conjugate())):
            a = _F["real"](a)
    return a


def roots(p):
    """`numpy.roots`: the eigenvalues of the companion matrix, differentiable where the roots
    are distinct (the derivative of `eigvals`). Leading and trailing zeros are read from the
    values.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> np.sort(roots(np.array([1.0, -3.0, 2.0])))
        array([1., 2.])
        >>> ad.grad(lambda p: roots(p).real.max())(np.array([1.0, -3.0, 2.0]))
        array([-4., -2., -1.])
    """
    p = shp.atleast_1d(_operand(p))
    if ndim_of(p) != 1:
        raise ValueError("Input must be a rank-1 array.")
    non_zero = np.flatnonzero(concrete_values(p, "roots"))
    if len(non_zero) == 0:
        return np.array([])
    trailing_zeros = _length(p) - int(non_zero[-1]) - 1
    p = getitem(p, slice(int(non_zero[0]), int(non_zero[-1]) + 1))
    if not np.issubdtype(dtype_of(p), np.inexact):
        p = astype(p, float)
    n = _length(p)
    if n > 1:
        first_row = -getitem(p, slice(1, None)) / getitem(p, 0)
        below = np.diag(np.ones((n - 2,), dtype_of(p)), -1)[1:]
        companion = shp.concatenate([shp.expand_dims(first_row, 0), below], axis=0)
        found = linalg.eigvals(companion)
        if np.all(np.imag(concrete_values(found, "roots")) == 0):
            found = _F["real"](found)  # (NumPy's eigvals: real when every root is)
    else:
        found = np.array([])
    if not trailing_zeros:
        return found
    return shp.concatenate([found, np.zeros(trailing_zeros, dtype_of(found))])


def _padded(a1, a2):
    """`a1` and `a2` of one length: the shorter one with zeros in front (of its dtype)."""
    diff = _length(a2) - _length(a1)
    if diff > 0:
        a1 = shp.concatenate([np.zeros(diff, dtype_of(a1)), a1])
    elif diff < 0:
        a2 = shp.concatenate([np.zeros(-diff, dtype_of(a2)), a2])
    return a1, a2


def polyadd(a1, a2):
    """`numpy.polyadd`: the sum of two polynomials, differentiable.

    Example:
        >>> import numpy as np
        >>> polyadd(np.array([1.0, 2.0]), np.array([9.0, 5.0, 4.0]))
        array([9., 6., 6.])
    """
    a1, a2 = _padded(_coefficients(a1), _coefficients(a2))
    return a1 + a2


def polysub(a1, a2):
    """`numpy.polysub`: the difference of two polynomials, differentiable.

    Example:
        >>> import numpy as np
        >>> polysub(np.array([2.0, 10.0, -2.0]), np.array([3.0, 10.0, -4.0]))
        array([-1.,  0.,  2.])
    """
    a1, a2 = _padded(_coefficients(a1), _coefficients(a2))
    return a1 - a2


def polymul(a1, a2):
    """`numpy.polymul`: the product of two polynomials (a convolution, after NumPy's
    stripping of leading zeros), differentiable.

    Example:
        >>> import numpy as np
        >>> polymul(np.array([1.0, 2.0, 3.0]), np.array([9.0, 5.0, 1.0]))
        array([ 9., 23., 38., 17.,  3.])
    """
    a1 = _leading_zeros_stripped(_coefficients(a1))
    a2 = _leading_zeros_stripped(_coefficients(a2))
    return convolve(a1, a2)


def polydiv(u, v):
    """`numpy.polydiv`: quotient and remainder of the long division, differentiable (the
    remainder's leading near-zeros are dropped, which its values decide).

    Example:
        >>> import numpy as np
        >>> polydiv(np.array([3.0, 5.0, 2.0]), np.array([2.0, 1.0]))
        (array([1.5 , 1.75]), array([0.25]))
    """
    u = _coefficients(u) + 0.0
    v = _coefficients(v) + 0.0
    w_dtype = np.result_type(dtype_of(u), dtype_of(v))
    m, n = _length(u) - 1, _length(v) - 1
    scale = 1.0 / getitem(v, 0)
    q = np.zeros((max(m - n + 1, 1),), w_dtype)
    r = astype(u, w_dtype)
    for k in range(m - n + 1):
        d = scale * getitem(r, k)
        q = index_set(q, k, d)
        r = index_set(r, slice(k, k + n + 1), getitem(r, slice(k, k + n + 1)) - d * v)
    values = concrete_values(r, "polydiv")
    start = 0
    while np.allclose(values[start], 0, rtol=1e-14) and values.shape[-1] - start > 1:
        start += 1
    return q, getitem(r, slice(start, None))


def polyder(p, m=1):
    """`numpy.polyder`: the `m`-th derivative's coefficients, differentiable.

    Example:
        >>> import numpy as np
        >>> polyder(np.array([1.0, 1.0, 1.0, 1.0]), 2)
        array([6., 2.])
    """
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _operand(p)
    for _ in range(m):
        n = _length(p) - 1
        p = getitem(p, slice(None, -1)) * np.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """`numpy.polyint`: the `m`-th antiderivative's coefficients, with integration constants
    `k`, differentiable in `p` and `k`.

    Example:
        >>> import numpy as np
        >>> polyint(np.array([3.0, 2.0, 1.0]))
        array([1., 1., 1., 0.])
    """
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = np.zeros(m, float) if k is None else shp.atleast_1d(_operand(k))
    if _length(k) == 1 and m > 1:
        k = getitem(k, 0) * np.ones(m, float)
    if _length(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _operand(p)
    for i in range(m):
        scaled = p / np.arange(_length(p), 0, -1)
        const = shp.reshape(getitem(k, i), (1,))
        p = shp.concatenate([scaled, const])
    return p


def _check_fit_arguments(x, y, deg) -> None:
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if ndim_of(x) != 1:
        raise TypeError("expected 1D vector for x")
    if shape_of(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if ndim_of(y) < 1 or ndim_of(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if shape_of(x)[0] != shape_of(y)[0]:
        raise TypeError("expected x and y to have same length")


def _weighted(lhs, rhs, w):
    """polyfit's least-squares system with each row scaled by its weight in `w`."""
    w = _operand(w) + 0.0
    if ndim_of(w) != 1:
        raise TypeError("expected a 1-d array for weights")
    if shape_of(w)[0] != shape_of(rhs)[0]:
        raise TypeError("expected w and y to have the same length")
    return lhs * shp.expand_dims(w, 1), rhs * (shp.expand_dims(w, 1) if ndim_of(rhs) == 2 else w)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """`numpy.polyfit`: least-squares polynomial coefficients (NumPy's scaled Vandermonde
    solve), differentiable in `x`, `y` and `w`; `full` and `cov` as NumPy's.

    Example:
        >>> import numpy as np
        >>> polyfit(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]), 1).round(12)
        array([2., 1.])
    """
    order = int(deg) + 1
    x = _operand(x) + 0.0
    y = _operand(y) + 0.0
    _check_fit_arguments(x, y, deg)
    if rcond is None:
        rcond = shape_of(x)[0] * np.finfo(dtype_of(x)).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        lhs, rhs = _weighted(lhs, rhs, w)
    scale = _F["sqrt"](red.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = shp.transpose(shp.transpose(c) / scale)
    if isinstance(rank, (int, np.integer)) and rank != order and not full:  # (when known)
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    v_base = linalg.inv(dot(shp.transpose(lhs), lhs)) / outer(scale, scale)
    if cov == "unscaled":
        fac = 1
    else:
        if shape_of(x)[0] <= order:
            raise ValueError(
                "the number of data points must exceed order to scale the covariance matrix"
            )
        fac = resids / (shape_of(x)[0] - order)
    if ndim_of(y) == 1:
        return c, v_base * fac
    return c, shp.expand_dims(v_base, 2) * fac


def polyval(p, x):
    """`numpy.polyval` (Horner's scheme, as NumPy), differentiable in `p` and `x`.

    Example:
        >>> import numpy as np
        >>> polyval(np.array([1.0, 0.0, -1.0]), np.array([2.0, 3.0]))
        array([3., 8.])
    """
    p, x = _operand(p), _operand(x)
    if ndim_of(p) == 0:
        raise TypeError("iteration over a 0-d array")
    y = np.zeros(shape_of(x), dtype_of(x))
    for i in range(shape_of(p)[0]):
        y = y * x + getitem(p, i)
    return y


FUNCTIONS = {
    f.__name__: f
    for f in (poly, roots, polyadd, polysub, polymul, polydiv, polyder, polyint, polyfit, polyval)
}
