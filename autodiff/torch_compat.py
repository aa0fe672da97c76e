"""PyTorch's most used tensor functions and methods, so torch code ports by renaming the import.

`autodiff.tanh(t)`, `t.exp()`, `t.view(2, 3)`, `t.add_(u)`, ... are thin aliases of
`autodiff.numpy` functions; in-place methods go through `Tensor._assign_inplace`, so
they follow torch's version-counter rules.
"""

from __future__ import annotations

import numpy as np

import autodiff.numpy as anp
from autodiff.core.tensor import Tensor

_UNARY = (
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "abs",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "square",
    "reciprocal",
)


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


def _reduction(name):
    f = getattr(anp, name)

    def reduce(x, dim=None, keepdim: bool = False):
        return f(x, axis=dim, keepdims=keepdim)

    reduce.__name__ = name
    reduce.__doc__ = f"`torch.{name}(x, dim=None, keepdim=False)`."
    return reduce


FUNCTIONS = {name: getattr(anp, name) for name in _UNARY}
FUNCTIONS.update(
    sigmoid=sigmoid,
    relu=relu,
    clamp=clamp,
    cat=cat,
    stack=stack,
    unbind=unbind,
    mm=mm,
    matmul=anp.matmul,
    where=anp.where,
    maximum=anp.maximum,
    minimum=anp.minimum,
    pow=anp.power,
    sum=_reduction("sum"),
    mean=_reduction("mean"),
    prod=_reduction("prod"),
)


def _inplace(f):
    def method(self, *args, **kwargs):
        return self._assign_inplace(f(self, *args, **kwargs))

    return method


def _view(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = tuple(shape[0])
    return anp.reshape(self, shape)


def install() -> None:
    """Attach torch-style methods to Tensor (ndarray-style ones come from autodiff.numpy)."""
    for name in (*_UNARY, "sigmoid", "relu"):
        f = FUNCTIONS[name]
        setattr(Tensor, name, f)
        setattr(Tensor, name + "_", _inplace(f))
    Tensor.pow = anp.power
    Tensor.mm = mm
    Tensor.unbind = unbind
    Tensor.matmul = anp.matmul
    Tensor.clamp = clamp
    Tensor.view = _view
    Tensor.t = lambda self: anp.transpose(self)
    Tensor.unsqueeze = lambda self, dim: anp.expand_dims(self, dim)
    Tensor.dim = lambda self: self.ndim
    Tensor.numel = lambda self: self.size
    Tensor.add_ = _inplace(lambda self, other, alpha=1: self + other * alpha)
    Tensor.sub_ = _inplace(lambda self, other, alpha=1: self - other * alpha)
    Tensor.mul_ = _inplace(anp.multiply)
    Tensor.div_ = _inplace(anp.divide)
    Tensor.pow_ = _inplace(anp.power)
    Tensor.clamp_ = _inplace(clamp)
    Tensor.zero_ = _inplace(lambda self: anp.zeros_like(self))
    Tensor.fill_ = _inplace(lambda self, value: anp.full_like(self, value))
    Tensor.copy_ = _inplace(lambda self, src: anp.broadcast_to(src, self.shape) * 1)
