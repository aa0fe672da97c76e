"""`autodiff.lax.linalg`: JAX's `jax.lax.linalg` names over autodiff's NumPy and SciPy linalg.

The factorizations batch over leading dimensions and differentiate as
`autodiff.numpy.linalg`'s do.
"""

from __future__ import annotations

import autodiff.numpy as anp
from autodiff.scipy import linalg as _scipy_linalg


def _hermitian_part(x):
    return (x + anp.conj(anp.swapaxes(x, -1, -2))) / 2


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor of each Hermitian positive-definite matrix in `x`.

    Example:
        >>> cholesky(anp.array([[4.0, 2.0], [2.0, 2.0]])).tolist()
        [[2.0, 0.0], [1.0, 1.0]]
    """
    x = anp.asarray(x)
    return anp.linalg.cholesky(_hermitian_part(x) if symmetrize_input else x)


def triangular_solve(
    a,
    b,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
):
    """`x` solving `op(a) @ x = b` (`left_side`) or `x @ op(a) = b`, with `a` triangular and
    `op` a transpose and/or conjugation.

    Example:
        >>> a = anp.array([[2.0, 0.0], [1.0, 1.0]])
        >>> triangular_solve(a, anp.array([[2.0], [3.0]]), left_side=True, lower=True).tolist()
        [[1.0], [2.0]]
    """
    a, b = anp.asarray(a), anp.asarray(b)
    a = anp.conj(a) if conjugate_a else a
    if not left_side:  # x a = b  <=>  a^T x^T = b^T
        b = anp.swapaxes(b, -1, -2)
        transpose_a = not transpose_a
    solve = _scipy_linalg.solve_triangular
    trans = 1 if transpose_a else 0
    if a.ndim == 2 and b.ndim == 2:
        x = solve(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    else:
        shape = anp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a_flat = anp.reshape(anp.broadcast_to(a, shape + a.shape[-2:]), (-1,) + a.shape[-2:])
        b_flat = anp.reshape(anp.broadcast_to(b, shape + b.shape[-2:]), (-1,) + b.shape[-2:])
        parts = [
            solve(a_flat[k], b_flat[k], trans=trans, lower=lower, unit_diagonal=unit_diagonal)
            for k in range(a_flat.shape[0])
        ]
        x = anp.reshape(anp.stack(parts), shape + b.shape[-2:])
    return x if left_side else anp.swapaxes(x, -1, -2)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """The QR factorization `(q, r)` of each matrix in `x` (complete if `full_matrices`).

    Example:
        >>> q, r = qr(anp.eye(3)[:, :2])
        >>> q.shape, r.shape
        ((3, 3), (3, 2))
    """
    if pivoting:
        raise NotImplementedError("lax.linalg.qr: pivoting=True is not supported")
    return anp.linalg.qr(x, mode="complete" if full_matrices else "reduced")


def eigh(
    x,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index=None,
):
    """The eigenvectors and eigenvalues `(v, w)` of each Hermitian matrix in `x` (note lax's
    order: vectors first), eigenvalues ascending.

    Example:
        >>> v, w = eigh(anp.diag(anp.array([2.0, 1.0])))
        >>> w.tolist()
        [1.0, 2.0]
    """
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.eigh: subset_by_index is not supported")
    x = anp.asarray(x)
    w, v = anp.linalg.eigh(
        _hermitian_part(x) if symmetrize_input else x, UPLO="L" if lower else "U"
    )
    return v, w


def svd(
    x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None
):
    """The singular value decomposition `(u, s, vh)` of each matrix in `x` (just `s` unless
    `compute_uv`), singular values descending.

    Example:
        >>> svd(anp.diag(anp.array([1.0, 3.0])), compute_uv=False).tolist()
        [3.0, 1.0]
    """
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.svd: subset_by_index is not supported")
    return anp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)


def tridiagonal_solve(dl, d, du, b):
    """`x` solving `A x = b` for the tridiagonal `A` of sub-diagonal `dl` (its first entry
    unused), diagonal `d` and super-diagonal `du` (its last entry unused).

    Example:
        >>> ones = anp.ones(3)
        >>> tridiagonal_solve(anp.zeros(3), 2 * ones, anp.zeros(3), anp.ones((3, 1))).tolist()
        [[0.5], [0.5], [0.5]]
    """
    dl, d, du = anp.asarray(dl), anp.asarray(d), anp.asarray(du)
    m = d.shape[-1]
    eye = anp.eye(m, dtype=d.dtype)
    below, above = anp.eye(m, k=-1, dtype=d.dtype), anp.eye(m, k=1, dtype=d.dtype)
    a = d[..., :, None] * eye + dl[..., :, None] * below + du[..., :, None] * above
    return anp.linalg.solve(a, b)


__all__ = ["cholesky", "eigh", "qr", "svd", "triangular_solve", "tridiagonal_solve"]
