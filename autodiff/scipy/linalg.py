"""autodiff.scipy.linalg: `scipy.linalg`'s names and semantics, differentiable and batchable.

solve_triangular, cholesky (upper by default), cho_factor / cho_solve, solve (with
`assume_a`), inv, det and expm, written with the primitives of `autodiff.ops.linalg` (NumPy
impls: SciPy is not needed).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import bind
from autodiff.ops import elementwise as _ew
from autodiff.ops.elementwise import where
from autodiff.ops.linalg import det as _numpy_det
from autodiff.ops.linalg import inv as _numpy_inv
from autodiff.ops.linalg import solve as _numpy_solve
from autodiff.ops.linalg_factor import cholesky_p, expm_p
from autodiff.ops.linalg_solve import triangular_solve
from autodiff.ops.matrix import LinAlgError, _check_matrix, _cols, _mT, _triangle
from autodiff.ops.products import _array
from autodiff.ops.structural import broadcast_to, shape_of

_TRANS = {
    0: False,
    "N": False,
    "n": False,
    1: True,
    "T": True,
    "t": True,
    2: "C",
    "C": "C",
    "c": "C",
}


def solve_triangular(
    a,
    b,
    trans=0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
):
    """`scipy.linalg.solve_triangular`: `x` with `op(a) @ x = b`, reading one triangle of `a`.

    `trans` is 0/'N' (a), 1/'T' (a.T) or 2/'C' (a.conj().T); `b` is a vector when 1-D,
    else a stack of matrices. Differentiable in `a` (its triangle) and `b`.

    Example:
        >>> import numpy as np
        >>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
        array([1., 2.])
    """
    a, b = _array(a), _array(b)
    n = _check_matrix(a)[0]
    if trans not in _TRANS:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', not {trans!r}")
    trans = _TRANS[trans]
    if trans == "C":
        a, trans = (_ew.conj(a) if np.iscomplexobj(a) else a), True
    vector = len(shape_of(b)) == 1
    if shape_of(b)[-2 + vector] != n:
        raise ValueError(f"shapes of a {shape_of(a)} and b {shape_of(b)} are incompatible")
    x = triangular_solve(
        a,
        _cols(b) if vector else b,
        lower=bool(lower),
        trans=trans,
        unit_diagonal=bool(unit_diagonal),
    )
    return x[..., 0] if vector else x


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`scipy.linalg.cholesky`: upper factor `U` (`a = U.T @ U`) by default, else lower.

    Reads the upper (lower) triangle of `a`; derivatives as for `numpy.linalg.cholesky`.

    Example:
        >>> import numpy as np
        >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]))
        array([[2., 1.],
               [0., 2.]])
    """
    a = _array(a)
    _check_matrix(a)
    if lower:
        return bind(cholesky_p, a)
    conj = _ew.conj if np.iscomplexobj(a) else (lambda x: x)
    return _mT(conj(bind(cholesky_p, conj(_mT(a)))))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """`scipy.linalg.cho_factor`: `(c, lower)` for `cho_solve`.

    Unlike SciPy, the triangle of `c` not holding the factor is zero (SciPy leaves
    arbitrary values there); `cho_solve` reads only the factor either way.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b = np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([1.0, 2.0])
        >>> c, lower = cho_factor(a)
        >>> np.round(c, 4), lower
        (array([[2.    , 1.    ],
               [0.    , 1.4142]]), False)
        >>> np.round(cho_solve((c, lower), b), 4)
        array([-0.125,  0.75 ])
        >>> np.round(ad.grad(lambda a: cho_solve(cho_factor(a), b).sum())(a), 4)
        array([[ 0.0156, -0.0313],
               [-0.0313, -0.1875]])
    """
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """`scipy.linalg.cho_solve`: solve `a x = b` from `cho_factor(a)`; differentiable.

    Example:
        >>> import numpy as np
        >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
        >>> cho_solve(cho_factor(a), np.array([6.0, 7.0]))
        array([1., 1.])
    """
    c, lower = c_and_lower
    first = solve_triangular(c, b, trans=0 if lower else 2, lower=lower)
    return solve_triangular(c, first, trans=2 if lower else 0, lower=lower)


def _from_triangle(a, lower: bool, hermitian: bool):
    """The symmetric (Hermitian) matrix whose lower (upper) triangle is that of `a`."""
    strict = _triangle(a, lower, strict=True)
    mirrored = _mT(_ew.conj(strict) if hermitian and np.iscomplexobj(a) else strict)
    diag = _triangle(_triangle(a, True), False)
    return strict + diag + mirrored


_ASSUME = {
    None: "gen",
    "gen": "gen",
    "general": "gen",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
    "pos": "pos",
    "positive definite": "pos",
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper triangular": "upper",
    "lower triangular": "lower",
}


def _assumption(assume_a) -> str:
    if assume_a not in _ASSUME:
        raise NotImplementedError(f"autodiff.scipy.linalg does not support assume_a={assume_a!r}")
    return _ASSUME[assume_a]


def solve(
    a,
    b,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    assume_a=None,
    transposed: bool = False,
):
    """`scipy.linalg.solve`, differentiable; `assume_a` selects which entries of `a` are read.

    "sym"/"her"/"pos" read one triangle (`lower`), "diagonal"/"tridiagonal" the (tri)diagonal,
    "upper triangular"/"lower triangular" a triangle; "banded" is not supported.

    Example:
        >>> import numpy as np
        >>> solve(np.array([[4.0, 2.0], [2.0, 5.0]]), np.array([6.0, 7.0]), assume_a="pos")
        array([1., 1.])
    """
    a, b = _array(a), _array(b)
    _check_matrix(a)
    kind = _assumption(assume_a)
    if transposed:
        if np.iscomplexobj(a):
            raise NotImplementedError("scipy.linalg.solve(transposed=True) is real-only")
        a = _mT(a)
    if kind in ("upper", "lower"):
        return solve_triangular(a, b, lower=kind == "lower")
    if kind in ("sym", "her", "pos"):  # one triangle is read, in derivatives too
        a = _from_triangle(a, lower, kind != "sym")
        if kind == "pos":
            return cho_solve(cho_factor(a, lower=lower), b)
    elif kind == "diagonal":
        a = _triangle(_triangle(a, True), False)
    elif kind == "tridiagonal":
        n = shape_of(a)[-1]
        a = where(np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1, a, 0.0)
    return _numpy_solve(a, b)


def inv(
    a, overwrite_a: bool = False, check_finite: bool = True, *, assume_a=None, lower: bool = False
):
    """`scipy.linalg.inv`, differentiable; `assume_a` as for `solve` (reads those entries).

    Example:
        >>> import numpy as np
        >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    a = _array(a)
    n = _check_matrix(a)[0]
    kind = _assumption(assume_a)
    if kind == "gen":
        return _numpy_inv(a)
    return solve(
        a, broadcast_to(np.eye(n, dtype=dtype_of(a)), shape_of(a)), lower=lower, assume_a=assume_a
    )


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """`scipy.linalg.det`, differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
        >>> round(float(det(a)), 4)
        5.0
        >>> np.round(ad.grad(det)(a), 4)  # det(a) inv(a)^T
        array([[ 3., -1.],
               [-1.,  2.]])
    """
    return _numpy_det(a)


def expm(A):
    """`scipy.linalg.expm`: the matrix exponential (stacks too), differentiable to any order.

    Computed by scaling and squaring with Pade approximants in double precision (float32
    inputs give float32 results, rounded from double; SciPy computes those in float32); its
    derivative is the Frechet derivative, the top-right block of the exponential of
    `[[A, E], [0, A]]`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> expm(np.zeros((2, 2)))
        array([[1., 0.],
               [0., 1.]])
        >>> ad.grad(lambda a: expm(a)[0, 0])(np.zeros((2, 2)))
        array([[1., 0.],
               [0., 0.]])
    """
    A = _array(A)
    _check_matrix(A)
    return bind(expm_p, A)


FUNCTIONS: dict = {
    f.__name__: f
    for f in (solve_triangular, cholesky, cho_factor, cho_solve, solve, inv, det, expm)
}

__all__ = ["LinAlgError", *sorted(FUNCTIONS)]
