"""PyTorch's most used tensor functions and methods, so torch code ports by renaming the import.

`autodiff.tanh(t)`, `autodiff.cat([...])`, ... are the functions below (re-exported by
`autodiff`); `t.exp()`, `t.view(2, 3)`, `t.add_(u)`, ... are the methods below and thin
aliases of `autodiff.numpy` functions, installed on Tensor by `autodiff/_tensor_methods.py`.
In-place methods go through `Tensor._assign_inplace`, so they follow torch's version-counter
rules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
from autodiff.core.tensor import Tensor

# ---- functions: `autodiff.<name>` as `torch.<name>` ----
exp = anp.exp
log = anp.log
log1p = anp.log1p
expm1 = anp.expm1
sqrt = anp.sqrt
sin = anp.sin
cos = anp.cos
tan = anp.tan
tanh = anp.tanh
sinh = anp.sinh
cosh = anp.cosh
abs = anp.abs  # (torch's names shadow the builtins in this module only)
sign = anp.sign
floor = anp.floor
ceil = anp.ceil
trunc = anp.trunc
square = anp.square
reciprocal = anp.reciprocal
matmul = anp.matmul
where = anp.where
maximum = anp.maximum
minimum = anp.minimum
pow = anp.power


def sigmoid(x):
    """`torch.sigmoid`: 1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + anp.exp(-x))


def relu(x):
    """`torch.relu`: max(x, 0) (derivative 0 at 0, as torch)."""
    return anp.where(x > 0, x, 0.0)


def clamp(x, min=None, max=None):  # noqa: A002 - torch's names
    """`torch.clamp`."""
    return anp.clip(x, min, max)


def cat(tensors, dim: int = 0):
    """`torch.cat`."""
    return anp.concatenate(tensors, axis=dim)


def stack(tensors, dim: int = 0):
    """`torch.stack`."""
    return anp.stack(tensors, axis=dim)


def unbind(x, dim: int = 0) -> tuple:
    """`torch.unbind`: the slices along `dim`, as a tuple (one UnbindBackward0 node)."""
    return anp.unstack(x, axis=dim)


def mm(a, b):
    """`torch.mm`."""
    return anp.matmul(a, b)


def _reduction(name: str) -> Callable:
    f = getattr(anp, name)

    def reduce(x, dim=None, keepdim: bool = False):
        return f(x, axis=dim, keepdims=keepdim)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"`torch.{name}(x, dim=None, keepdim=False)`."
    return reduce


sum = _reduction("sum")
mean = _reduction("mean")
prod = _reduction("prod")


# ---- methods: `t.<name>(...)` as torch's ----
def view(self: Tensor, *shape) -> Tensor:
    """`Tensor.view`: accepts `t.view(2, 3)` and `t.view((2, 3))`."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = tuple(shape[0])
    return anp.reshape(self, shape)


def t(self: Tensor) -> Tensor:
    """`Tensor.t`: the transpose."""
    return anp.transpose(self)


def unsqueeze(self: Tensor, dim: int) -> Tensor:
    """`Tensor.unsqueeze`: a new axis of length 1 at `dim`."""
    return anp.expand_dims(self, dim)


def dim(self: Tensor) -> int:
    """`Tensor.dim`: the number of dimensions."""
    return self.ndim


def numel(self: Tensor) -> int:
    """`Tensor.numel`: the number of elements."""
    return self.size


def clone(self: Tensor, *, memory_format=None) -> Tensor:
    """torch's name for `copy()`: a differentiable copy (CloneBackward0); `memory_format` is
    accepted for torch code and ignored (a copy is C-contiguous, as NumPy makes it)."""
    return anp.copy(self)


def in_place(f: Callable) -> Callable:
    """The in-place method `t.<f>_(...)`: `f(t, ...)` written back into `t`."""

    def method(self, *args, **kwargs):
        return self._assign_inplace(f(self, *args, **kwargs))

    functools.update_wrapper(method, f)  # (f's signature, for help() and the stubs)
    method.__name__ = method.__qualname__ = f"{f.__name__}_"
    return method


def add_(self: Tensor, other, alpha=1) -> Tensor:
    """`Tensor.add_`: `self += other * alpha`, in place."""
    return self._assign_inplace(self + other * alpha)


def sub_(self: Tensor, other, alpha=1) -> Tensor:
    """`Tensor.sub_`: `self -= other * alpha`, in place."""
    return self._assign_inplace(self - other * alpha)


def zero_(self: Tensor) -> Tensor:
    """`Tensor.zero_`: fill with zeros, in place."""
    return self._assign_inplace(anp.zeros_like(self))


def fill_(self: Tensor, value) -> Tensor:
    """`Tensor.fill_`: fill with `value`, in place."""
    return self._assign_inplace(anp.full_like(self, value))


def copy_(self: Tensor, src) -> Tensor:
    """`Tensor.copy_`: copy `src` (broadcast to this shape) into this tensor, in place."""
    return self._assign_inplace(anp.broadcast_to(src, self.shape) * 1)
