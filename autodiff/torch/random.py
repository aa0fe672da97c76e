"""torch's random factories (`randint`, `normal`, `bernoulli`, ...) and Tensor's random
fills (`uniform_`, `normal_`, ...), from the default generator or `generator=`."""

from __future__ import annotations

import numpy as np

from autodiff.core.sizes import Size
from autodiff.core.tensor import Tensor
from autodiff.torch import dtypes as torch_dtypes
from autodiff.torch._args import _concrete, _no_extra
from autodiff.torch.creation import _make
from autodiff.torch.generator import _integers, _normal, _uniform, rng
from autodiff.torch.types import check_device


def _random_fill(self: Tensor, values: np.ndarray) -> Tensor:
    return self._inplace_method(Tensor._from(values.astype(self.dtype)))


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None, **kw) -> Tensor:
    """`Tensor.uniform_(from=0, to=1)`: fill with uniform samples in [from, to)."""
    a = kw.pop("from", a)
    b = kw.pop("to", b)
    _no_extra("uniform_", kw)
    return _random_fill(self, a + (b - a) * _uniform(rng(generator), self.shape))


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """`Tensor.normal_(mean=0, std=1)`: fill with normal samples."""
    return _random_fill(self, mean + std * _normal(rng(generator), self.shape))


def bernoulli_(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    """`Tensor.bernoulli_(p=0.5)`: fill with 1 with probability p, else 0."""
    prob = np.asarray(_concrete(p))
    return _random_fill(self, (_uniform(rng(generator), self.shape) < prob).astype(np.float64))


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """`Tensor.exponential_(lambd=1)`: fill with exponential samples."""
    return _random_fill(self, rng(generator).exponential(self.shape) / lambd)


def random_(self: Tensor, a=None, b=None, *, generator=None, **kw) -> Tensor:
    """`Tensor.random_(from=0, to=None)`: fill with integers in [from, to) (`random_(to)`:
    [0, to))."""
    a = kw.pop("from", a)
    b = kw.pop("to", b)
    _no_extra("random_", kw)
    if b is None:
        a, b = (
            (0, a)
            if a is not None
            else (
                0,
                2 ** (24 if self.dtype == np.float32 else 53 if self.dtype.kind == "f" else 31),
            )
        )
    return _random_fill(self, _integers(rng(generator), a, b, self.shape))


# ---- random factories (the default generator; `generator=` for another) ----


def _float_dtype(dtype) -> np.dtype:
    d = torch_dtypes.to_numpy_dtype(dtype)
    return torch_dtypes.default_float() if d is None else d


def rand_like(input, *, dtype=None, device=None, requires_grad: bool = False, generator=None, **kw):
    """`torch.rand_like(input)`: uniform samples of `input`'s shape and dtype."""
    check_device(device)
    d = torch_dtypes.to_numpy_dtype(dtype) or input.dtype
    return _make(rng(generator).random(np.shape(input)).astype(d), requires_grad)


def randn_like(
    input, *, dtype=None, device=None, requires_grad: bool = False, generator=None, **kw
):
    """`torch.randn_like(input)`: standard normal samples of `input`'s shape and dtype."""
    check_device(device)
    d = torch_dtypes.to_numpy_dtype(dtype) or input.dtype
    return _make(rng(generator).standard_normal(np.shape(input)).astype(d), requires_grad)


def randint(
    *args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False, **kw
):
    """`torch.randint(low=0, high, size)` (or `randint(high, size)`): int64 samples in
    [low, high)."""
    check_device(device)
    low = kw.pop("low", None)
    high = kw.pop("high", None)
    if kw:
        raise TypeError(f"randint() got unexpected keyword arguments {sorted(kw)}")
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list, Size)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    if high is None or size is None:
        raise TypeError("randint() needs high and size: randint(low=0, high, size)")
    low = 0 if low is None else low
    d = torch_dtypes.to_numpy_dtype(dtype) or np.dtype(np.int64)
    return _make(rng(generator).integers(low, high, tuple(size)).astype(d), requires_grad)


def randint_like(
    input, low=0, high=None, *, dtype=None, device=None, requires_grad: bool = False, generator=None
):
    """`torch.randint_like(input, low=0, high)`: integers in [low, high) of `input`'s shape."""
    check_device(device)
    if high is None:
        low, high = 0, low
    d = torch_dtypes.to_numpy_dtype(dtype) or input.dtype
    return _make(rng(generator).integers(low, high, np.shape(input)).astype(d), requires_grad)


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False, **kw):
    """`torch.randperm(n)`: a random permutation of 0..n-1 (int64)."""
    check_device(device)
    d = torch_dtypes.to_numpy_dtype(dtype) or np.dtype(np.int64)
    return _make(rng(generator).permutation(n).astype(d), requires_grad)


def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
):
    """`torch.normal(mean, std, size=None)`: normal samples; `mean` and `std` may be tensors
    (the shape is theirs, broadcast) or numbers (then `size` is the shape)."""
    check_device(device)
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if tensors:
        shape = np.broadcast_shapes(*(np.shape(v) for v in (mean, std)))
        d = np.result_type(*(t.dtype for t in tensors))
    else:
        if size is None:
            raise TypeError("normal(): size is required when mean and std are numbers")
        shape = tuple(size)
        d = _float_dtype(dtype)
    noise = rng(generator).standard_normal(shape).astype(d)
    m, s = (np.asarray(_concrete(v)) for v in (mean, std))
    return _make((m + s * noise).astype(d), requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """`torch.bernoulli(input)`: 1 with probability `input` (elementwise), else 0."""
    prob = np.asarray(_concrete(input)) if p is None else np.full(np.shape(input), p)
    draws = rng(generator).random(np.shape(input)) < prob
    return Tensor._from(draws.astype(input.dtype))


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """`torch.multinomial(input, num_samples, replacement=False)`: category indices drawn
    with probabilities proportional to each row of `input`."""
    weights = np.asarray(_concrete(input), dtype=np.float64)
    rows = weights.reshape(-1, weights.shape[-1])
    gen = rng(generator)
    out = np.empty((rows.shape[0], num_samples), np.int64)
    for r, w in enumerate(rows):
        p = w / w.sum()
        if replacement:
            u = gen.random((num_samples,))
            out[r] = np.minimum(np.searchsorted(np.cumsum(p), u, side="right"), len(p) - 1)
        else:
            if num_samples > np.count_nonzero(p):
                raise RuntimeError(
                    "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
                )
            keys = np.log(gen.random((len(p),))) / np.where(p > 0, p, np.nan)
            keys = np.where(p > 0, keys, -np.inf)
            out[r] = np.argsort(-keys, kind="stable")[:num_samples]
    return Tensor._from(out.reshape(weights.shape[:-1] + (num_samples,)))
