"""torch's view and reshaping methods: `view`, `reshape`, `expand`, `narrow`, `split`,
`squeeze`, `permute`, `transpose`, `flatten`, `as_strided`, `contiguous`, `clone`, ..."""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

import autodiff.numpy as anp
from autodiff.core import views as _views
from autodiff.core.errors import TracerConversionError
from autodiff.core.graph import name_node
from autodiff.core.primitive import bind as _bind
from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops.structural import reshape_p as _reshape_p
from autodiff.torch._args import _alias, _array, _dims_arg, _grad_mode, _narrow, _np_dtype, wrap_dim


def view(self: Tensor, *shape) -> Tensor:
    """`Tensor.view(*shape)`: the same data in another shape, without a copy (as torch,
    it raises where the data's layout would need one: use `reshape`); `view(dtype)`
    reinterprets the bytes (no derivative)."""
    if (
        len(shape) == 1
        and not isinstance(shape[0], (builtins.int, np.integer, Tensor))
        and not isinstance(shape[0], (tuple, list, Size))
    ):
        return _view_dtype(self, shape[0])
    shape = _dims_arg(shape)
    value = _array(self)
    if value is not None and value.ndim and not value.flags.c_contiguous:
        target = _infer_shape(shape, value.size)
        probe = value.view()
        try:
            probe.shape = target
        except AttributeError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None
    return _new_view(self, _infer_shape(shape, self.size))


def _new_view(self: Tensor, shape: tuple) -> Tensor:
    """`self` in `shape` as a new tensor (a view of self's memory at level 0, as torch's
    `view`, even for its own shape; autodiff.numpy.reshape returns `self` then)."""
    if isinstance(self, Tensor) and tuple(shape) == self.shape:
        return _bind(_reshape_p, self, shape=tuple(shape), order="C")
    return anp.reshape(self, shape)


def _infer_shape(shape, numel: int) -> tuple:
    shape = tuple(operator.index(n) for n in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(n for n in shape if n != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if n == -1 else n for n in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _view_dtype(self: Tensor, d) -> Tensor:
    np_dtype = _np_dtype(d)
    if np_dtype == self.dtype:
        return anp.reshape(self, self.shape)
    if self._trace is not EVAL_TRACE:
        raise TracerConversionError(
            "view(dtype) reinterprets the bytes of a value, which has no derivative: not "
            "supported on a traced value"
        )
    value = np.ascontiguousarray(self._value)
    if value.ndim == 0 and np_dtype.itemsize != value.dtype.itemsize:
        raise RuntimeError("self.dim() cannot be 0 to view a dtype of a different element size")
    return Tensor._from(value.view(np_dtype))


def view_as(self: Tensor, other) -> Tensor:
    """`Tensor.view_as(other)`: `self.view(other.size())`."""
    return view(self, *np.shape(other))


def reshape(self: Tensor, *shape, order: str = "C") -> Tensor:
    """`reshape(*shape)`, `reshape(shape)` (both faces; NumPy's `order=` too)."""
    shape = _dims_arg(shape)
    if order != "C":
        return anp.reshape(self, shape, order=order)
    return _new_view(self, _infer_shape(shape, self.size) if -1 in shape else shape)


def reshape_as(self: Tensor, other) -> Tensor:
    """`Tensor.reshape_as(other)`."""
    return anp.reshape(self, np.shape(other))


def expand(self: Tensor, *sizes) -> Tensor:
    """`Tensor.expand(*sizes)`: broadcast to `sizes` (-1 keeps a dimension; new leading
    dimensions allowed), without copying."""
    sizes = _dims_arg(sizes)
    shape = self.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of "
            f"sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(shape)})"
        )
    target = []
    for i, n in enumerate(sizes):
        n = operator.index(n)
        if i < lead:
            if n < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({n}) isn't allowed in a leading, "
                    "non-existing dimension 0"
                )
            target.append(n)
            continue
        have = shape[i - lead]
        if n == -1:
            n = have
        elif have != n and have != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shape)}"
            )
        target.append(n)
    target = tuple(target)
    if target == shape:
        return _new_view(self, shape)  # (a view, as torch's: a node of its own)
    return anp.broadcast_to(self, target)


def expand_as(self: Tensor, other) -> Tensor:
    """`Tensor.expand_as(other)`."""
    return expand(self, *np.shape(other))


def narrow(self: Tensor, dim: int, start, length: int) -> Tensor:
    """`Tensor.narrow(dim, start, length)`: `length` entries from `start` along `dim` (a view)."""
    ndim = self.ndim
    if ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, ndim)
    size = self.shape[d]
    start = operator.index(start)
    length = operator.index(length)
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _narrow(self, d, start, length)


def select(self: Tensor, dim: int, index: int) -> Tensor:
    """`Tensor.select(dim, index)`: the slice at `index` along `dim` (one dimension fewer)."""
    ndim = self.ndim
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, ndim)
    size = self.shape[d]
    i = operator.index(index)
    if not -size <= i < size:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {list(self.shape)} at "
            f"dimension {d}"
        )
    key = [slice(None)] * ndim
    key[d] = i % size
    return self[tuple(key)]


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple:
    """`Tensor.chunk(chunks, dim=0)`: at most `chunks` pieces of ceil(n / chunks) entries."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    step = builtins.max(-(-n // chunks), 1)
    return split(self, step, d)


def split(self: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """`Tensor.split(split_size, dim=0)`: pieces of `split_size` entries (the last smaller);
    `split([sizes], dim)`: pieces of those sizes, which must add up to the dimension."""
    if self.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if isinstance(split_size_or_sections, (builtins.int, np.integer)):
        step = builtins.int(split_size_or_sections)
        if step < 0 or (step == 0 and n):
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        sizes = [step] * (n // step) + ([n % step] if n % step else []) if step else [0]
    else:
        sizes = [operator.index(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    if len(sizes) == 1:
        return (_narrow(self, d, 0, n),)
    bounds = list(np.cumsum(sizes[:-1]))
    pieces = tuple(anp.split(self, [builtins.int(b) for b in bounds], axis=d))
    if isinstance(split_size_or_sections, (builtins.int, np.integer)):
        name_node(pieces[0], "SplitBackward0")  # (torch's node of a split by size)
        for piece in pieces:
            if getattr(piece, "_view", None) is not None:
                piece._view.op = "SplitBackward0"
    return pieces


def split_with_sizes(self: Tensor, split_sizes, dim: int = 0) -> tuple:
    """`Tensor.split_with_sizes(split_sizes, dim=0)`: pieces of the given sizes along `dim`
    (they must add up to its length)."""
    sizes = [operator.index(n) for n in split_sizes]
    length = self.shape[wrap_dim(dim, self.ndim)]
    if builtins.sum(sizes) != length:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's "
            f"size at dimension {dim}), but got split_sizes={sizes}"
        )
    return split(self, sizes, dim)


def tensor_split(self: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """`Tensor.tensor_split(indices_or_sections, dim=0)`: NumPy's `array_split`."""
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    return tuple(anp.array_split(self, indices_or_sections, axis=wrap_dim(dim, self.ndim)))


def unsqueeze(self: Tensor, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """`Tensor.unsqueeze(dim)`: a new axis of length 1 at `dim` (also `axis=`)."""
    dim = _alias({"axis": axis} if axis is not None else {}, "axis", dim, None)
    if dim is None:
        raise TypeError('unsqueeze() missing 1 required positional arguments: "dim"')
    return anp.expand_dims(self, wrap_dim(dim, self.ndim + 1))


def torch_squeeze(self: Tensor, dim=None) -> Tensor:
    """torch's `squeeze(dim=None)`: drop the given (or every) dimension of length 1; a
    dimension of another length is left alone (NumPy raises)."""
    ndim = self.ndim
    shape = self.shape
    if dim is None:
        return anp.squeeze(self)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = tuple(d for d in {wrap_dim(d, ndim) for d in dims} if ndim and shape[d] == 1)
    if not ndim:
        return anp.reshape(self, ())
    return anp.squeeze(self, axes) if axes else anp.reshape(self, shape)


def permute(self: Tensor, *dims) -> Tensor:
    """`Tensor.permute(*dims)`: the dimensions in the order `dims`."""
    dims = _dims_arg(dims)
    ndim = self.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{ndim} is not equal to len(dims) = {len(dims)}"
        )
    axes = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(axes)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return anp.transpose(self, axes)


def movedim(self: Tensor, source, destination) -> Tensor:
    """`Tensor.movedim(source, destination)` (ints or sequences)."""
    ndim = self.ndim
    wrap = lambda d: (
        tuple(wrap_dim(i, ndim) for i in d) if isinstance(d, (tuple, list)) else wrap_dim(d, ndim)
    )
    return anp.moveaxis(self, wrap(source), wrap(destination))


def torch_transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """torch's `transpose(dim0, dim1)`: those two dimensions swapped."""
    ndim = self.ndim
    if ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return anp.reshape(self, ())
    return anp.swapaxes(self, wrap_dim(dim0, ndim), wrap_dim(dim1, ndim))


def t(self: Tensor) -> Tensor:
    """`Tensor.t()`: the transpose of a matrix (a vector or a number as it is)."""
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return anp.transpose(self)


def torch_flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """torch's `flatten(start_dim=0, end_dim=-1)`: those dimensions merged into one."""
    ndim = self.ndim
    if ndim == 0:
        return anp.reshape(self, (1,))
    s, e = wrap_dim(start_dim, ndim), wrap_dim(end_dim, ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = self.shape
    return anp.reshape(self, shape[:s] + (math.prod(shape[s : e + 1]),) + shape[e + 1 :])


def unflatten(self: Tensor, dim: int, sizes) -> Tensor:
    """`Tensor.unflatten(dim, sizes)`: dimension `dim` split into `sizes` (one may be -1)."""
    d = wrap_dim(dim, self.ndim)
    shape = self.shape
    sizes = _infer_shape(tuple(sizes), shape[d])
    return anp.reshape(self, shape[:d] + sizes + shape[d + 1 :])


def as_strided(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """`Tensor.as_strided(size, stride, storage_offset=0)`: the elements at `offset +
    sum(i_k * stride_k)` of the tensor's data in row-major order (its storage when it is
    contiguous). Differentiable exactly, overlapping strides included (the gradient of an
    element read several times is the sum of its reads' gradients)."""
    size = tuple(operator.index(n) for n in size)
    stride = tuple(operator.index(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(size)} and {len(stride)}"
        )
    offset = 0 if storage_offset is None else operator.index(storage_offset)
    index = np.full(size, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        index = index + np.arange(n, dtype=np.int64).reshape(shape) * s
    numel = self.size
    if index.size and (index.min() < 0 or index.max() >= numel):
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} "
            f"require a storage of {builtins.int(index.max()) + 1} elements, but this tensor "
            f"has {numel}"
        )
    out = anp.take(anp.ravel(self), index)
    value = _array(self)
    if value is not None and value.flags.c_contiguous and type(out) is Tensor:
        item = value.itemsize
        strided = np.ndarray(
            size,
            value.dtype,
            buffer=value,
            offset=offset * item if index.size else 0,
            strides=tuple(s * item for s in stride),
        )
        out = _views.as_view_of(out, self, strided, "AsStridedBackward0", _grad_mode())
    return out


def contiguous(self: Tensor, memory_format=None) -> Tensor:
    """`Tensor.contiguous()`: itself when its data are row-major, else a row-major copy."""
    value = _array(self)
    if value is None or value.flags.c_contiguous:
        return self
    out = anp.copy(self)
    if type(out._value) is np.ndarray and not out._value.flags.c_contiguous:
        out._value = np.ascontiguousarray(out._value)  # (a fresh result: nothing else holds it)
    return out


def is_contiguous(self: Tensor, memory_format=None) -> bool:
    """`Tensor.is_contiguous()`: whether the data are row-major (C order) in memory."""
    value = _array(self)
    return True if value is None else builtins.bool(value.flags.c_contiguous)


def clone(self: Tensor, *, memory_format=None) -> Tensor:
    """torch's name for `copy()`: a differentiable copy (CloneBackward0); `memory_format` is
    accepted for torch code and ignored (the copy keeps the layout, as torch's default)."""
    return anp.copy(self)


squeeze = torch_squeeze
moveaxis = movedim
transpose = torch_transpose
swapaxes = torch_transpose
swapdims = torch_transpose
flatten = torch_flatten
