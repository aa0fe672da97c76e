"""torch's indexing functions: `index_select`, `gather`, `scatter*`, `index_*`,
`masked_*`, `nonzero`, `take`, `searchsorted`, ..."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core.graph import name_node
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops.at import at as _at
from autodiff.ops.elementwise import stop_gradient
from autodiff.torch._args import _cast, _concrete, _value_like, wrap_dim


def index_select(self: Tensor, dim: int, index) -> Tensor:
    """`Tensor.index_select(dim, index)`: the entries at `index` (a vector) along `dim`."""
    if np.ndim(index) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    _check_index_dtype("index_select", index)
    if self.ndim == 0:
        return (
            anp.take(anp.reshape(self, (1,)), anp.reshape(index, (-1,)))[0]
            if np.ndim(index) == 0
            else anp.take(anp.reshape(self, (1,)), index)
        )
    result = anp.take(self, anp.reshape(index, (-1,)), axis=wrap_dim(dim, self.ndim))
    return name_node(result, "IndexSelectBackward0")  # (torch's node of index_select)


def _check_index_dtype(name: str, index) -> None:
    kind = np.result_type(index.dtype if isinstance(index, Tensor) else np.asarray(index)).kind
    if kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def masked_select(self: Tensor, mask) -> Tensor:
    """`Tensor.masked_select(mask)`: a vector of the entries where `mask` (broadcast) is True."""
    shape = np.broadcast_shapes(self.shape, np.shape(mask))
    x = anp.broadcast_to(self, shape) if self.shape != shape else self
    m = anp.broadcast_to(mask, shape) if np.shape(mask) != shape else mask
    return x[m]


def masked_fill(self: Tensor, mask, value) -> Tensor:
    """`Tensor.masked_fill(mask, value)`: `value` (a number or a 0-d tensor) where `mask`."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    _check_mask("masked_fill", mask)
    return anp.where(mask, _value_like(value, self), self)


def _check_mask(name: str, mask) -> None:
    dt = mask.dtype if isinstance(mask, Tensor) else np.asarray(mask).dtype
    if dt != np.bool_:
        raise RuntimeError(f"{name}_ only supports boolean masks, but got mask with dtype {dt}")


def masked_scatter(self: Tensor, mask, source) -> Tensor:
    """`Tensor.masked_scatter(mask, source)`: where `mask` is True, `source`'s entries in order."""
    _check_mask("masked_scatter", mask)
    m = np.broadcast_to(np.asarray(_concrete(mask)), self.shape)
    positions = np.cumsum(m.ravel()) - 1
    taken = anp.take(anp.ravel(source), np.where(m.ravel(), positions, 0))
    return anp.where(m, anp.reshape(_cast(taken, self.dtype), self.shape), self)


def _full_index(dim: int, index) -> tuple:
    """The index tuple that addresses `out[i_0, ..., index[i], ..., i_n]` for each position of
    `index` (scatter's and gather's addressing)."""
    shape = np.shape(index)
    parts = []
    for k in range(len(shape)):
        if k == dim:
            parts.append(index)
        else:
            view_shape = [1] * len(shape)
            view_shape[k] = shape[k]
            parts.append(np.arange(shape[k]).reshape(view_shape))
    return tuple(parts)


def _check_same_ndim(name: str, self, index) -> None:
    if np.ndim(index) != self.ndim and not (self.ndim == 0 and np.ndim(index) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")


def gather(self: Tensor, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """`Tensor.gather(dim, index)`: `out[i][j] = self[index[i][j]][j]` (dim 0) and likewise."""
    _check_same_ndim("gather", self, index)
    _check_index_dtype("gather", index)
    if self.ndim == 0:
        return anp.reshape(anp.take(anp.reshape(self, (1,)), index), np.shape(index))
    d = wrap_dim(dim, self.ndim)
    ishape = np.shape(index)
    for k, (n, m) in enumerate(zip(ishape, self.shape)):
        if k != d and n > m:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(ishape)} to be "
                f"smaller than self {list(self.shape)} apart from dimension {d}"
            )
    key = tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(ishape))
    x = (
        self[key]
        if builtins.any(n < m for k, (n, m) in enumerate(zip(ishape, self.shape)) if k != d)
        else self
    )
    return anp.take_along_axis(x, index, axis=d)


def take_along_dim(self: Tensor, indices, dim=None) -> Tensor:
    """`Tensor.take_along_dim(indices, dim=None)`: NumPy's take_along_axis (broadcasting)."""
    if dim is None:
        return anp.take_along_axis(anp.ravel(self), anp.ravel(indices), axis=0)
    d = wrap_dim(dim, self.ndim)
    shape = list(
        np.broadcast_shapes(
            *[tuple(s for k, s in enumerate(a) if k != d) for a in (self.shape, np.shape(indices))]
        )
    )
    xs = list(shape)
    xs.insert(d, self.shape[d])
    ins = list(shape)
    ins.insert(d, np.shape(indices)[d])
    return anp.take_along_axis(
        anp.broadcast_to(self, tuple(xs)), anp.broadcast_to(indices, tuple(ins)), axis=d
    )


def _scatter_src(self, index, src):
    """`src` cut to `index`'s shape (or a number broadcast to it), in self's dtype."""
    shape = np.shape(index)
    if isinstance(src, (Tensor, np.ndarray)) and np.ndim(src):
        key = tuple(slice(0, n) for n in shape)
        part = src[key] if np.shape(src) != shape else src
        return _cast(part, self.dtype) if isinstance(part, Tensor) else np.asarray(part, self.dtype)
    return anp.broadcast_to(_value_like(src, self), shape)


def _scatter_update(name: str, self, dim, index, src, how: str):
    _check_same_ndim(name, self, index)
    _check_index_dtype(name, index)
    d = wrap_dim(dim, self.ndim)
    if np.size(index) == 0:
        return anp.copy(self)
    values = _scatter_src(self, index, src)
    if self.ndim == 0:
        key: Any = ()
        values = anp.reshape(values, ())
    else:
        key = _full_index(d, index)
    if how == "set":
        return _write(self, key, values)
    return getattr(_at(self)[key], how)(values)


def _repeats(key: tuple, shape: tuple) -> bool:
    """Whether the index `key` names some position twice (True when it is not concrete)."""
    arrays = []
    for part in key:
        if isinstance(part, slice):
            continue
        if isinstance(part, Tensor):
            if part._trace is not EVAL_TRACE:
                return True
            part = part._value
        arrays.append(np.asarray(part))
    if not arrays:
        return False
    stacked = np.stack([a.ravel() for a in np.broadcast_arrays(*arrays)], axis=1)
    return len(np.unique(stacked, axis=0)) < len(stacked)


def _write(self, key: tuple, values):
    """`self.at[key].set(values)` with torch's derivative for `values` where `key` repeats a
    position: each value gets the gradient of the position it is written to (the adjoint of a
    gather: scatter_add), though only one of the repeated writes shows in the result."""
    if not isinstance(values, Tensor) or not _repeats(key, self.shape):
        return _at(self)[key].set(values)
    added = _at(anp.zeros_like(self))[key].add(values)
    return _at(self)[key].set(stop_gradient(values)) + (added - stop_gradient(added))


_SCATTER_REDUCE = {None: "set", "add": "add", "multiply": "multiply"}


def scatter(self: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """`Tensor.scatter(dim, index, src)` (or `value=`): `out[index[i][j]][j] = src[i][j]`
    (dim 0) and likewise; `reduce='add'`/`'multiply'` combines instead of writing."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing the src (or value) argument")
    if reduce not in _SCATTER_REDUCE:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    return _scatter_update("scatter", self, dim, index, src, _SCATTER_REDUCE[reduce])


def scatter_add(self: Tensor, dim: int, index, src) -> Tensor:
    """`Tensor.scatter_add(dim, index, src)`: repeated indices accumulate."""
    return _scatter_update("scatter_add", self, dim, index, src, "add")


_REDUCE_IDENTITY = {"sum": 0, "prod": 1, "amax": -np.inf, "amin": np.inf, "mean": 0}
_REDUCE_HOW = {"sum": "add", "prod": "multiply", "amax": "max", "amin": "min", "mean": "add"}


def scatter_reduce(
    self: Tensor, dim: int, index, src, reduce: str, *, include_self: bool = True
) -> Tensor:
    """`Tensor.scatter_reduce(dim, index, src, reduce, include_self=True)`: reduce is
    'sum', 'prod', 'mean', 'amax' or 'amin'."""
    if reduce not in _REDUCE_HOW:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got " + str(reduce)
        )
    base = self
    if not include_self:
        identity = _REDUCE_IDENTITY[reduce]
        if self.dtype.kind in "iub" and not np.isfinite(identity):
            info = np.iinfo(self.dtype)
            identity = info.min if identity < 0 else info.max
        base = _scatter_update("scatter_reduce", self, dim, index, identity, "set")
    out = _scatter_update("scatter_reduce", base, dim, index, src, _REDUCE_HOW[reduce])
    if reduce == "mean":  # (the counts: a constant, computed on the concrete index)
        counts = np.full(self.shape, 1 if include_self else 0, np.int64)
        index_value = np.asarray(_concrete(index))
        if self.ndim:
            np.add.at(counts, _full_index(wrap_dim(dim, self.ndim), index_value), 1)
        else:
            counts = counts + index_value.size
        counts = np.maximum(counts, 1)
        out = out / counts if self.dtype.kind in "fc" else anp.floor_divide(out, counts)
        out = _cast(out, self.dtype)
    return out


def _index_key(self, dim: int, index) -> tuple:
    _check_index_dtype("index", index)
    if np.ndim(index) > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    d = wrap_dim(dim, self.ndim)
    return (slice(None),) * d + (
        anp.reshape(index, (-1,)) if isinstance(index, Tensor) else np.reshape(index, (-1,)),
    )


def index_add(self: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    """`Tensor.index_add(dim, index, source, alpha=1)`: `source * alpha` added at `index`
    along `dim` (repeats accumulate)."""
    src = source if alpha == 1 else source * alpha
    return _at(self)[_index_key(self, dim, index)].add(
        _cast(src, self.dtype) if isinstance(src, Tensor) else src
    )


def index_copy(self: Tensor, dim: int, index, source) -> Tensor:
    """`Tensor.index_copy(dim, index, source)`: `source`'s slices written at `index`."""
    return _write(self, _index_key(self, dim, index), source)


def index_fill(self: Tensor, dim: int, index, value) -> Tensor:
    """`Tensor.index_fill(dim, index, value)`: `value` written at `index` along `dim`."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    return _at(self)[_index_key(self, dim, index)].set(_value_like(value, self))


def index_put(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """`Tensor.index_put(indices, values, accumulate=False)`: `self[indices] = values` (or
    `+=` with repeats accumulating), out of place."""
    key = tuple(indices)
    return _at(self)[key].add(values) if accumulate else _write(self, key, values)


def torch_put(self: Tensor, index, source, accumulate: bool = False) -> Tensor:
    """torch's `put(index, source, accumulate=False)`: `source` written at the flat `index`,
    out of place (NumPy's `put` writes in place)."""
    flat = anp.ravel(self)
    key = (anp.reshape(index, (-1,)) if isinstance(index, Tensor) else np.reshape(index, (-1,)),)
    src = anp.reshape(source, (-1,))
    out = _at(flat)[key].add(src) if accumulate else _write(flat, key, src)
    return anp.reshape(out, self.shape)


def torch_nonzero(self: Tensor, *, as_tuple: bool = False) -> Any:
    """torch's `nonzero()`: an (n, ndim) int64 tensor of the nonzero entries' indices;
    `as_tuple=True` gives NumPy's tuple of index vectors."""
    value = np.asarray(_concrete(self))
    found = np.nonzero(value) if value.ndim else np.nonzero(value.reshape(1))
    if as_tuple:
        return tuple(Tensor._from(i.astype(np.int64)) for i in found)
    out = (
        np.stack(found, axis=1).astype(np.int64)
        if value.ndim
        else np.zeros((len(found[0]), 0), np.int64)
    )
    return Tensor._from(out)


def argwhere(self: Tensor) -> Tensor:
    """`Tensor.argwhere()`: `nonzero()`."""
    return torch_nonzero(self)


nonzero = torch_nonzero


def take(input, index):
    """`torch.take(input, index)`: entries of the flattened input."""
    return anp.take(anp.ravel(input), index)


def searchsorted(
    sorted_sequence, input, *, right: bool = False, side: str | None = None, out_int32: bool = False
):
    """`torch.searchsorted(sorted_sequence, values, right=False)` (int64 indices)."""
    side = side or ("right" if right else "left")
    seq = np.asarray(_concrete(sorted_sequence))
    values = np.asarray(_concrete(input))
    if seq.ndim <= 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        out = np.stack(
            [
                np.searchsorted(s, v, side=side)
                for s, v in zip(
                    seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
                )
            ]
        ).reshape(values.shape)
    return Tensor._from(out.astype(np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """`torch.bucketize(input, boundaries, right=False)`: the index of each value's bucket
    (`boundaries[i-1] < x <= boundaries[i]`; with `right`, `boundaries[i-1] <= x <
    boundaries[i]`), int64 indices that need no gradient.

    Example:
        >>> import autodiff as torch
        >>> torch.bucketize(torch.tensor([0.5, 1.0, 2.5]), torch.tensor([1.0, 2.0]))
        tensor([0, 0, 2])
    """
    if np.ndim(_concrete(boundaries)) != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension")
    return searchsorted(boundaries, input, right=right, out_int32=out_int32)
