"""torch's products and linear algebra: `mm`, `bmm`, `addmm`, `dot`, `einsum`, `det`,
`inverse`, `cholesky`, ..."""

from __future__ import annotations

import numpy as np

import autodiff.numpy as anp
from autodiff.core.tensor import Tensor
from autodiff.torch._args import wrap_dim
from autodiff.torch.reductions import norm
from autodiff.torch.views import expand


def mm(input, mat2):
    """`torch.mm(input, mat2)`: the product of two matrices."""
    if np.ndim(input) != 2 or np.ndim(mat2) != 2:
        raise RuntimeError(
            f"self must be a matrix (mm of {np.ndim(input)}-d and {np.ndim(mat2)}-d)"
        )
    return anp.matmul(input, mat2)


# ---- linear algebra ----


def _check_ndim(name: str, what: str, x, n: int) -> None:
    if np.ndim(x) != n:
        raise RuntimeError(f"{name}: Expected {what} to be {n}D, but got {np.ndim(x)}D")


def bmm(input: Tensor, mat2) -> Tensor:
    """`torch.bmm(input, mat2)`: batched matrix products of two 3-d tensors."""
    if np.ndim(input) != 3 or np.ndim(mat2) != 3:
        raise RuntimeError(
            f"batch1 must be a 3D tensor (bmm of {np.ndim(input)}D and {np.ndim(mat2)}D)"
        )
    return anp.matmul(input, mat2)


def mv(input: Tensor, vec) -> Tensor:
    """`torch.mv(input, vec)`: a matrix times a vector."""
    if np.ndim(input) != 2 or np.ndim(vec) != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {np.ndim(input)}, {np.ndim(vec)}"
        )
    return anp.matmul(input, vec)


def torch_dot(self: Tensor, other) -> Tensor:
    """torch's `dot(other)`: the inner product of two vectors (NumPy's dot also multiplies
    matrices)."""
    if self.ndim != 1 or np.ndim(other) != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {self.ndim}D and {np.ndim(other)}D tensors"
        )
    if self.shape != np.shape(other):
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
            f"[{np.shape(other)[0]}] to have the same number of elements, but got "
            f"{self.shape[0]} and {np.shape(other)[0]} elements respectively"
        )
    return anp.dot(self, other)


def vdot(self: Tensor, other) -> Tensor:
    """`Tensor.vdot(other)`: conj(self) . other, for vectors."""
    return anp.vdot(self, other)


def inner(self: Tensor, other) -> Tensor:
    """`Tensor.inner(other)`."""
    return anp.inner(self, other)


def outer(self: Tensor, vec2) -> Tensor:
    """`Tensor.outer(vec2)`: the outer product of two vectors."""
    return anp.outer(self, vec2)


def addmm(self: Tensor, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addmm(mat1, mat2, *, beta=1, alpha=1)`: `beta * self + alpha * mat1 @ mat2`."""
    product = mm(mat1, mat2)
    expand(self, *np.shape(product))  # (torch's check: self broadcasts to the product)
    return _scaled(self, beta) + _scaled(product, alpha)


def _scaled(x, c):
    if c == 0:
        return anp.zeros_like(x)
    return x if c == 1 else x * c


def addmv(self: Tensor, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addmv(mat, vec, *, beta=1, alpha=1)`."""
    return _scaled(self, beta) + _scaled(mv(mat, vec), alpha)


def addr(self: Tensor, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addr(vec1, vec2, *, beta=1, alpha=1)`."""
    return _scaled(self, beta) + _scaled(anp.outer(vec1, vec2), alpha)


def baddbmm(self: Tensor, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.baddbmm(batch1, batch2, *, beta=1, alpha=1)`."""
    return _scaled(self, beta) + _scaled(bmm(batch1, batch2), alpha)


def addbmm(self: Tensor, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """`Tensor.addbmm(batch1, batch2, *, beta=1, alpha=1)`: the products summed over the batch."""
    return _scaled(self, beta) + _scaled(anp.sum(bmm(batch1, batch2), axis=0), alpha)


def cross(self: Tensor, other, dim=None) -> Tensor:
    """`Tensor.cross(other, dim=None)`: the cross product along `dim` (the first of size 3)."""
    if dim is None:
        dim = next((k for k, n in enumerate(self.shape) if n == 3), -1)
    d = wrap_dim(dim, self.ndim)
    return anp.cross(self, other, axis=d)


def det(self: Tensor) -> Tensor:
    """`Tensor.det()`."""
    return anp.linalg.det(self)


def inverse(self: Tensor) -> Tensor:
    """`Tensor.inverse()`."""
    return anp.linalg.inv(self)


def pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor:
    """`Tensor.pinverse(rcond=1e-15)`."""
    return anp.linalg.pinv(self, rcond=rcond)


def matrix_power(self: Tensor, n: int) -> Tensor:
    """`Tensor.matrix_power(n)`."""
    return anp.linalg.matrix_power(self, n)


def slogdet(self: Tensor) -> tuple:
    """`Tensor.slogdet()`: (sign, logabsdet)."""
    return tuple(anp.linalg.slogdet(self))


def logdet(self: Tensor) -> Tensor:
    """`Tensor.logdet()`: log(det) (nan for a negative determinant)."""
    sign, logabs = anp.linalg.slogdet(self)
    return anp.where(sign > 0, logabs, anp.where(sign == 0, -np.inf, np.nan))


def cholesky(self: Tensor, upper: bool = False) -> Tensor:
    """`Tensor.cholesky(upper=False)`."""
    lower = anp.linalg.cholesky(self)
    return anp.conj(anp.swapaxes(lower, -1, -2)) if upper else lower


def kron(self: Tensor, other) -> Tensor:
    """`Tensor.kron(other)`."""
    return anp.kron(self, other)


def trace(input):
    """`torch.trace(input)`: the sum of a matrix's diagonal."""
    if np.ndim(input) != 2:
        raise RuntimeError("trace: expected a matrix")
    return anp.trace(input)


def dot(input: Tensor, tensor) -> Tensor:
    """`torch.dot(input, tensor)`: the inner product of two vectors."""
    return torch_dot(input, tensor)


ger = outer


def einsum(equation: str, *operands):
    """`torch.einsum(equation, *operands)` (or a list of operands)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return anp.einsum(equation, *operands)


def tensordot(a, b, dims=2):
    """`torch.tensordot(a, b, dims=2)`: dims an int or two lists of dims."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    return anp.tensordot(a, b, axes=dims)


def chain_matmul(*matrices):
    """`torch.chain_matmul(*matrices)`."""
    out = matrices[0]
    for m in matrices[1:]:
        out = anp.matmul(out, m)
    return out


def cdist(x1, x2, p: float = 2.0):
    """`torch.cdist(x1, x2, p=2)`: the p-norm distances between the rows of x1 and x2."""
    diff = anp.expand_dims(x1, -2) - anp.expand_dims(x2, -3)
    return norm(diff, p, dim=-1)
