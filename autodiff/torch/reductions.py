"""torch's reductions, statistics, softmaxes, cumulative functions, norms and sorting
(torch's signatures; NumPy's keyword spellings accepted too)."""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
import autodiff.scipy.special as _special
from autodiff.core.graph import name_node
from autodiff.core.tensor import Tensor
from autodiff.torch._args import (
    _alias,
    _cast,
    _narrow,
    _no_extra,
    _np_dtype,
    _reduce_axes,
    fused,
    wrap_dim,
)
from autodiff.torch.types import return_types

# ---- reductions (torch's signatures; NumPy's keyword spellings accepted too) ----


# torch's node of a sum or mean over given dims (even `dim=None` given): its second overload.
_DIM_NODES = {"sum": "SumBackward1", "mean": "MeanBackward1"}
_NO_DIM = object()


def _reduction(name: str, numpy_name: str | None = None, keepdim_ok: bool = True) -> Callable:
    f = getattr(anp, numpy_name or name)
    dim_node = _DIM_NODES.get(name)

    def reduce(input, dim=_NO_DIM, keepdim: bool = False, *, dtype=None, **kwargs):
        given = dim is not _NO_DIM or "axis" in kwargs
        dim = _alias(kwargs, "axis", None if dim is _NO_DIM else dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        extra = {"dtype": _np_dtype(dtype)} if dtype is not None else {}
        out = f(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim), **extra)
        return name_node(out, dim_node) if given and dim_node is not None else out

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"`torch.{name}(input, dim=None, keepdim=False, *, dtype=None)` (also `axis=`, "
        "`keepdims=`)."
    )
    return reduce


sum = _reduction("sum")
mean = _reduction("mean")
nansum = _reduction("nansum")
nanmean = _reduction("nanmean")


def prod(input, dim=None, keepdim: bool = False, *, dtype=None, **kwargs):
    """`torch.prod(input, dim=None, keepdim=False, *, dtype=None)` (dim: one int)."""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("prod", kwargs)
    extra = {"dtype": _np_dtype(dtype)} if dtype is not None else {}
    return anp.prod(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim), **extra)


def _logical_reduction(name: str) -> Callable:
    f = getattr(anp, name)

    def reduce(input, dim=None, keepdim: bool = False, **kwargs):
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        return f(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim))

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"`torch.{name}(input, dim=None, keepdim=False)`: a bool tensor."
    return reduce


all = _logical_reduction("all")
any = _logical_reduction("any")
amax = _logical_reduction("amax")
amin = _logical_reduction("amin")
amax.__doc__ = "`torch.amax(input, dim=(), keepdim=False)`: ties share the gradient evenly."
amin.__doc__ = "`torch.amin(input, dim=(), keepdim=False)`: ties share the gradient evenly."


def _arg_reduction(name: str) -> Callable:
    f = getattr(anp, name)

    def reduce(input, dim=None, keepdim: bool = False, **kwargs):
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        if dim is None:
            out = f(anp.ravel(input))
            return anp.reshape(out, (1,) * np.ndim(input)) if keepdim else out
        if np.ndim(input) == 0:
            wrap_dim(dim, 0)
            return anp.zeros_like(anp.astype(input, np.int64))
        return f(input, axis=wrap_dim(dim, np.ndim(input)), keepdims=builtins.bool(keepdim))

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"`torch.{name}(input, dim=None, keepdim=False)`: int64 indices."
    return reduce


argmax = _arg_reduction("argmax")
argmin = _arg_reduction("argmin")


def _max_min(name: str) -> Callable:
    value_of = anp.max if name == "max" else anp.min
    index_of = anp.argmax if name == "max" else anp.argmin
    binary = anp.maximum if name == "max" else anp.minimum
    result = getattr(return_types, name)

    def reduce(input, dim=None, keepdim: bool = False, *, out=None, **kwargs):
        if out is not None:
            raise TypeError(f"{name}(): out= is not supported")
        if isinstance(dim, (Tensor, np.ndarray)):  # torch.max(input, other): elementwise
            _no_extra(name, kwargs)
            return binary(input, dim)
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, False)
        _no_extra(name, kwargs)
        if dim is None:
            if np.size(input) == 0:
                raise RuntimeError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            return value_of(input)
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"{name}(): dim must be an int (use amax/amin for several dims)")
        ndim = np.ndim(input)
        d = wrap_dim(dim, ndim)
        if ndim == 0:
            return result(anp.copy(input), anp.zeros_like(anp.astype(input, np.int64)))
        indices = index_of(input, axis=d, keepdims=True)
        # the values through the indices, so the gradient goes to that one element (torch's)
        values = anp.take_along_axis(input, indices, axis=d)
        if not keepdim:
            values, indices = anp.squeeze(values, d), anp.squeeze(indices, d)
        return result(values, indices)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"`torch.{name}`: `{name}(input)` the {name}imum; `{name}(input, dim, keepdim=False)` "
        f"the named tuple (values, indices); `{name}(input, other)` the elementwise {name}imum."
    )
    return reduce


max = _max_min("max")
min = _max_min("min")


def _var_std(name: str) -> Callable:
    f = anp.var if name == "var" else anp.std

    def reduce(input, dim=None, unbiased=None, keepdim=None, *, correction=None, **kwargs):
        if isinstance(dim, builtins.bool):  # the legacy overload var(input, unbiased)
            dim, unbiased = None, dim
        dim = _alias(kwargs, "axis", dim, None)
        keepdim = _alias(kwargs, "keepdims", keepdim, None)
        if "ddof" in kwargs:
            correction = kwargs.pop("ddof")
        _no_extra(name, kwargs)
        if unbiased is not None and correction is not None:
            raise TypeError(f"{name}(): pass unbiased= or correction=, not both")
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        axis = _reduce_axes(input, dim)
        return fused(f, input, axis=axis, ddof=ddof, keepdims=builtins.bool(keepdim))

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"`torch.{name}(input, dim=None, unbiased=True, keepdim=False, *, correction=1)`: "
        "unbiased by default (Bessel's correction), unlike NumPy's."
    )
    return reduce


var = _var_std("var")
std = _var_std("std")


def logsumexp(input, dim=None, keepdim: bool = False, **kwargs):
    """`torch.logsumexp(input, dim, keepdim=False)` (also `axis=`, `keepdims=`)."""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("logsumexp", kwargs)
    if dim is None:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    return _special.logsumexp(input, axis=_reduce_axes(input, dim), keepdims=builtins.bool(keepdim))


def _softmax_dim(name: str, input, dim) -> int:
    if dim is None:
        ndim = np.ndim(input)
        warnings.warn(
            f"Implicit dimension choice for {name} has been deprecated. Change the call to "
            "include dim=X as an argument.",
            UserWarning,
            stacklevel=3,
        )
        return 0 if ndim in (0, 1, 3) else 1
    return wrap_dim(dim, np.ndim(input))


def softmax(input, dim=None, dtype=None, **kwargs):
    """`torch.softmax(input, dim, dtype=None)`."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("softmax", kwargs)
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        return anp.ones_like(x)
    return fused(_special.softmax, x, axis=_softmax_dim("softmax", x, dim))


def log_softmax(input, dim=None, dtype=None, **kwargs):
    """`torch.log_softmax(input, dim, dtype=None)`."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("log_softmax", kwargs)
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        return anp.zeros_like(x)
    return fused(_special.log_softmax, x, axis=_softmax_dim("log_softmax", x, dim))


def _cumulative(name: str, numpy_fn, input, dim, dtype, kwargs):
    """torch's cumsum/cumprod: `dim` required (also as `axis=`), a 0-d input copied."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra(name, kwargs)
    if dim is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    x = _cast(input, dtype)
    if np.ndim(x) == 0:
        wrap_dim(dim, 0)
        return anp.copy(x)
    return numpy_fn(x, axis=wrap_dim(dim, np.ndim(x)))


def cumsum(input, dim=None, *, dtype=None, **kwargs):
    """`torch.cumsum(input, dim, *, dtype=None)` (also `axis=`)."""
    return _cumulative("cumsum", anp.cumsum, input, dim, dtype, kwargs)


def cumprod(input, dim=None, *, dtype=None, **kwargs):
    """`torch.cumprod(input, dim, *, dtype=None)` (also `axis=`)."""
    return _cumulative("cumprod", anp.cumprod, input, dim, dtype, kwargs)


def _vector_norm(x, p, axis, keepdim: bool):
    a = anp.abs(x)
    if p == 2:
        return (
            anp.linalg.norm(x, axis=axis, keepdims=keepdim)
            if axis is None or isinstance(axis, builtins.int) or len(axis) == 1
            else anp.sqrt(anp.sum(a * a, axis=axis, keepdims=keepdim))
        )
    if p == math.inf:
        return anp.max(a, axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return anp.min(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return anp.sum(anp.astype(a != 0, a.dtype), axis=axis, keepdims=keepdim)
    if p == 1:
        return anp.sum(a, axis=axis, keepdims=keepdim)
    return anp.sum(a**p, axis=axis, keepdims=keepdim) ** (1.0 / p)


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None, **kwargs):
    """`torch.norm(input, p='fro', dim=None, keepdim=False, dtype=None)`: a vector norm over
    `dim` (all elements by default) for a number `p`; the Frobenius or nuclear matrix norm
    for `p='fro'` / `'nuc'`."""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("norm", kwargs)
    return fused(_norm, _cast(input, dtype), p, dim, builtins.bool(keepdim))


def _norm(x, p, dim, keepdim: bool):
    ndim = np.ndim(x)
    if isinstance(dim, builtins.int):
        dim = (dim,)
    axis = None if dim is None else tuple(wrap_dim(d, ndim) for d in dim)
    if axis is not None and ndim == 0:
        axis = None
    if p == "nuc":
        if axis is None:
            axis = (0, 1)
        return anp.linalg.norm(x, ord="nuc", axis=axis, keepdims=keepdim)
    if p is None or p == "fro":
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported p={p!r}")
    if axis is None and keepdim:
        return anp.reshape(_vector_norm(anp.ravel(x), p, None, False), (1,) * ndim)
    if axis is None:
        return _vector_norm(anp.ravel(x) if ndim != 1 else x, p, None, False)
    return _vector_norm(x, p, axis if len(axis) > 1 else axis[0], keepdim)


def dist(input, other, p=2):
    """`torch.dist(input, other, p=2)`: the p-norm of `input - other`."""
    return norm(anp.subtract(input, other), p)


def sort(input, dim: int = -1, descending: bool = False, stable: bool = False, **kwargs) -> Any:
    """`torch.sort(input, dim=-1, descending=False, stable=False)`: (values, indices)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("sort", kwargs)
    indices = argsort(input, dim, descending)
    if np.ndim(input) == 0:
        return return_types.sort(anp.copy(input), indices)
    return return_types.sort(
        anp.take_along_axis(input, indices, axis=wrap_dim(dim, np.ndim(input))), indices
    )


def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False, **kwargs):
    """`torch.argsort(input, dim=-1, descending=False, stable=False)` (stable always)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("argsort", kwargs)
    ndim = np.ndim(input)
    d = wrap_dim(dim, ndim)
    if ndim == 0:
        return anp.zeros_like(anp.astype(input, np.int64))
    key = input
    if descending:
        key = anp.astype(input, np.int64) if input.dtype.kind in "bu" else input
        key = -key
        if np.issubdtype(input.dtype, np.floating):  # torch puts NaN first in descending order
            key = anp.where(anp.isnan(input), -np.inf, key)
    return anp.argsort(key, axis=d, kind="stable")


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """`torch.topk(input, k, dim=-1, largest=True, sorted=True)`: (values, indices)."""
    d = wrap_dim(dim, np.ndim(input))
    n = np.shape(input)[d] if np.ndim(input) else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    indices = argsort(input, d, descending=largest)
    indices = _narrow(indices, d, 0, k)
    return return_types.topk(anp.take_along_axis(input, indices, axis=d), indices)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False, **kwargs) -> Any:
    """`torch.kthvalue(input, k, dim=-1, keepdim=False)`: the k-th smallest (values, indices)
    (also `axis=`, `keepdims=`)."""
    dim = _alias(kwargs, "axis", dim, -1)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("kthvalue", kwargs)
    d = wrap_dim(dim, np.ndim(input))
    n = np.shape(input)[d] if np.ndim(input) else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    indices = _narrow(argsort(input, d), d, k - 1, 1)
    values = anp.take_along_axis(input, indices, axis=d)
    if not keepdim:
        values, indices = anp.squeeze(values, d), anp.squeeze(indices, d)
    return return_types.kthvalue(values, indices)


def median(input, dim=None, keepdim: bool = False, **kwargs) -> Any:
    """`torch.median`: the lower of the two middle values (torch's, not NumPy's mean of
    them); with `dim`, the named tuple (values, indices). (Also `axis=`, `keepdims=`.)"""
    dim = _alias(kwargs, "axis", dim, None)
    keepdim = _alias(kwargs, "keepdims", keepdim, False)
    _no_extra("median", kwargs)
    if dim is None:
        flat = anp.ravel(input)
        n = np.shape(flat)[0]
        index = argsort(flat)[(n - 1) // 2]
        return flat[index]
    d = wrap_dim(dim, np.ndim(input))
    n = np.shape(input)[d] if np.ndim(input) else 1
    result = kthvalue(input, (n - 1) // 2 + 1, d, keepdim)
    return return_types.median(*result)


def count_nonzero(input, dim=None, **kwargs):
    """`torch.count_nonzero(input, dim=None)` (also `axis=`)."""
    dim = _alias(kwargs, "axis", dim, None)
    _no_extra("count_nonzero", kwargs)
    return anp.count_nonzero(input, axis=_reduce_axes(input, dim))


def unique(
    self: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim=None,
) -> Any:
    """`Tensor.unique(sorted=True, return_inverse=False, return_counts=False, dim=None)`."""
    out = anp.unique(self, return_inverse=return_inverse, return_counts=return_counts, axis=dim)
    if isinstance(out, tuple):
        first, *rest = out
        if return_inverse:
            rest[0] = anp.reshape(rest[0], self.shape) if dim is None else rest[0]
        return (first, *rest)
    return out


# ---- statistics ----


def var_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None, **kwargs):
    """`torch.var_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=1)`:
    (var, mean)."""
    return _stat_mean(var, input, dim, unbiased, keepdim, correction, kwargs)


def std_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None, **kwargs):
    """`torch.std_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=1)`:
    (std, mean)."""
    return _stat_mean(std, input, dim, unbiased, keepdim, correction, kwargs)


def _stat_mean(f, input, dim, unbiased, keepdim, correction, kwargs) -> tuple:
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    spread = f(input, dim, unbiased, keepdim, correction=correction, **dict(kwargs))
    kwargs = {k: v for k, v in kwargs.items() if k != "ddof"}
    return spread, mean(input, dim, builtins.bool(keepdim), **kwargs)
