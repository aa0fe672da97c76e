"""torch's joining, tiling and rearranging functions: `cat`, `stack`, `flip`, `roll`,
`tril`, `repeat_interleave`, `diag`, `broadcast_*`, `meshgrid`, `hstack`, ..."""

from __future__ import annotations

import builtins
import operator

import numpy as np

import autodiff.numpy as anp
from autodiff.core import views as _views
from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor
from autodiff.torch import views
from autodiff.torch._args import _array, _dims_arg, _grad_mode, _no_extra, wrap_dim
from autodiff.torch.views import expand


def cat(tensors, dim: int = 0, *, axis: int | None = None):
    """`torch.cat(tensors, dim=0)` (also `axis=`)."""
    if axis is not None:
        dim = axis
    tensors = list(tensors)
    # torch skips 1-d empty tensors (a legacy rule: `torch.cat([torch.tensor([]), x])`)
    kept = [t for t in tensors if not (np.shape(t) == (0,))] or tensors[:1]
    ndim = np.ndim(kept[0]) if kept else 1
    return anp.concatenate(kept, axis=wrap_dim(dim, ndim))


def stack(tensors, dim: int = 0, *, axis: int | None = None):
    """`torch.stack(tensors, dim=0)` (also `axis=`)."""
    if axis is not None:
        dim = axis
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return anp.stack(tensors, axis=wrap_dim(dim, np.ndim(tensors[0]) + 1))


def unbind(x, dim: int = 0) -> tuple:
    """`torch.unbind`: the slices along `dim`, as a tuple (one UnbindBackward0 node)."""
    return tuple(anp.unstack(x, axis=wrap_dim(dim, x.ndim)))


def flip(self: Tensor, *dims) -> Tensor:
    """`Tensor.flip(dims)`: the order of the entries reversed along `dims`."""
    dims = _dims_arg(dims)
    if not self.ndim:
        return anp.copy(self)
    return anp.flip(self, tuple(wrap_dim(d, self.ndim) for d in dims))


def fliplr(self: Tensor) -> Tensor:
    """`Tensor.fliplr()`."""
    return flip(self, 1)


def flipud(self: Tensor) -> Tensor:
    """`Tensor.flipud()`."""
    return flip(self, 0)


def roll(self: Tensor, shifts, dims=None) -> Tensor:
    """`Tensor.roll(shifts, dims=None)`: entries shifted cyclically (flattened without dims)."""
    if dims is None:
        return anp.reshape(anp.roll(anp.ravel(self), shifts), self.shape)
    if isinstance(dims, (tuple, list)):
        dims = tuple(wrap_dim(d, self.ndim) for d in dims)
        shifts = tuple(shifts)
        if len(dims) != len(shifts):
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
            )
    else:
        dims = wrap_dim(dims, self.ndim)
    return anp.roll(self, shifts, axis=dims)


def rot90(self: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """`Tensor.rot90(k=1, dims=(0, 1))`: rotated by 90 degrees `k` times, from the first
    towards the second of `dims`."""
    d0, d1 = (wrap_dim(d, self.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError("expected rotation dims to be different")
    k %= 4
    if k == 0:
        return anp.copy(self)
    if k == 2:
        return anp.flip(self, (d0, d1))
    if k == 1:
        return anp.swapaxes(anp.flip(self, d1), d0, d1)
    return anp.flip(anp.swapaxes(self, d0, d1), d1)


def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    """`Tensor.tril(diagonal=0)`: the lower triangle of the last two dimensions."""
    if self.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return anp.tril(self, diagonal)


def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    """`Tensor.triu(diagonal=0)`: the upper triangle of the last two dimensions."""
    if self.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return anp.triu(self, diagonal)


def torch_repeat(self: Tensor, *sizes) -> Tensor:
    """torch's `repeat(*sizes)`: the tensor tiled `sizes[k]` times along each dimension
    (NumPy's `repeat` repeats each element)."""
    sizes = _dims_arg(sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    return anp.tile(self, tuple(operator.index(s) for s in sizes))


def tile(self: Tensor, *dims) -> Tensor:
    """`Tensor.tile(dims)`: NumPy's tile (fewer dims than the tensor's: leading 1s)."""
    return anp.tile(self, _dims_arg(dims))


def repeat_interleave(self: Tensor, repeats, dim=None, *, output_size=None) -> Tensor:
    """`Tensor.repeat_interleave(repeats, dim=None)`: each entry repeated (NumPy's repeat)."""
    if isinstance(repeats, Tensor):
        repeats = repeats.primal()
    if dim is None:
        return anp.repeat(anp.ravel(self), repeats)
    return anp.repeat(self, repeats, axis=wrap_dim(dim, self.ndim))


def diag(self: Tensor, diagonal: int = 0) -> Tensor:
    """`Tensor.diag(diagonal=0)`: a vector's diagonal matrix, or a matrix's diagonal."""
    if self.ndim not in (1, 2):
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{self.ndim}D")
    return anp.diag(self, diagonal)


def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """`Tensor.diag_embed(offset=0, dim1=-2, dim2=-1)`: the last dimension as diagonals."""
    m = self.shape[-1]
    n = m + builtins.abs(offset)
    place = np.zeros((m, n, n), dtype=self.dtype)
    rows = np.arange(m) + builtins.max(-offset, 0)
    cols = np.arange(m) + builtins.max(offset, 0)
    place[np.arange(m), rows, cols] = 1
    out = anp.einsum("...i,irc->...rc", self, place)
    ndim = self.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    return anp.moveaxis(out, (ndim - 2, ndim - 1), (d1, d2))


def torch_diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1, **kwargs) -> Tensor:
    """`diagonal(offset=0, dim1=0, dim2=1)` (NumPy's axis1=/axis2= too)."""
    dim1 = kwargs.pop("axis1", dim1)
    dim2 = kwargs.pop("axis2", dim2)
    _no_extra("diagonal", kwargs)
    d1, d2 = wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim)
    out = anp.diagonal(self, offset, d1, d2)
    value = _array(self)
    if value is not None and type(out) is Tensor:  # (a view of self's memory, as torch's)
        out = _views.as_view_of(
            out, self, np.diagonal(value, offset, d1, d2), "DiagonalBackward0", _grad_mode()
        )
    return out


def sum_to_size(self: Tensor, *size) -> Tensor:
    """`Tensor.sum_to_size(*size)`: summed over the dimensions that broadcast to `size`."""
    size = _dims_arg(size)
    shape = self.shape
    if np.broadcast_shapes(tuple(size), shape) != shape:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    lead = len(shape) - len(size)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(size) if n == 1 and shape[lead + k] != 1
    )
    out = anp.sum(self, axis=axes, keepdims=True) if axes else self
    return anp.reshape(out, tuple(size))


diagonal = torch_diagonal
concat = cat
concatenate = cat


def split(tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """`torch.split(tensor, split_size_or_sections, dim=0)`: torch's sizes, not NumPy's
    indices."""
    return views.split(tensor, split_size_or_sections, dim)


def reshape(input, shape):
    """`torch.reshape(input, shape)`."""
    return (
        views.reshape(input, *shape)
        if isinstance(shape, (tuple, list, Size))
        else views.reshape(input, shape)
    )


def permute(input, dims):
    """`torch.permute(input, dims)`."""
    return views.permute(input, *dims)


def broadcast_tensors(*tensors) -> tuple:
    """`torch.broadcast_tensors(*tensors)`."""
    return tuple(anp.broadcast_arrays(*tensors))


def broadcast_to(input, size):
    """`torch.broadcast_to(input, size)` (-1 keeps a dimension, as `expand`)."""
    return expand(input, *size)


def broadcast_shapes(*shapes) -> Size:
    """`torch.broadcast_shapes(*shapes)`."""
    return Size(
        np.broadcast_shapes(
            *(tuple(s) if not isinstance(s, builtins.int) else (s,) for s in shapes)
        )
    )


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """`torch.meshgrid(*tensors, indexing='ij')` (torch's default is 'ij', NumPy's 'xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(anp.meshgrid(*tensors, indexing=indexing or "ij"))


def atleast_1d(*tensors):
    """`torch.atleast_1d`."""
    return anp.atleast_1d(*tensors)


def atleast_2d(*tensors):
    """`torch.atleast_2d`."""
    return anp.atleast_2d(*tensors)


def atleast_3d(*tensors):
    """`torch.atleast_3d`."""
    return anp.atleast_3d(*tensors)


def hstack(tensors):
    """`torch.hstack(tensors)`."""
    return anp.hstack(list(tensors))


def vstack(tensors):
    """`torch.vstack(tensors)`."""
    return anp.vstack(list(tensors))


def dstack(tensors):
    """`torch.dstack(tensors)`."""
    return anp.dstack(list(tensors))


def column_stack(tensors):
    """`torch.column_stack(tensors)`."""
    return anp.column_stack(list(tensors))
