"""torch-style Tensor factories: `tensor`, `zeros`, `ones`, ... with `requires_grad`."""

from __future__ import annotations

import numpy as np

from autodiff.core.tensor import Tensor
from autodiff.numpy import _creation


def _size(size) -> tuple:
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        return tuple(size[0])
    return tuple(size)


def _make(value, requires_grad: bool) -> Tensor:
    t = Tensor._from(value)
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, dtype=None, requires_grad: bool = False) -> Tensor:
    """A new leaf Tensor holding a copy of `data` (float64 for Python floats).

    Example:
        >>> t = tensor([1.0, 2.0], requires_grad=True)
        >>> t.requires_grad, t.is_leaf, t.shape
        (True, True, (2,))
    """
    if isinstance(data, Tensor):
        data = data.primal()
    return _make(np.array(data, dtype=dtype), requires_grad)


def as_tensor(data, dtype=None) -> Tensor:
    """`data` as a Tensor, sharing memory with a NumPy array when possible.

    Example:
        >>> import numpy as np
        >>> a = np.zeros(2)
        >>> t = as_tensor(a); a[0] = 1.0  # shares memory with `a`
        >>> t
        tensor([1., 0.])
    """
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == np.dtype(dtype) else data.astype(dtype)
    return Tensor._from(np.asarray(data, dtype=dtype))


def from_numpy(array: np.ndarray) -> Tensor:
    """A Tensor sharing memory with `array`.

    Example:
        >>> import numpy as np
        >>> a = np.zeros(2)
        >>> t = from_numpy(a); a[1] = 5.0
        >>> t
        tensor([0., 5.])
    """
    return Tensor._from(array)


def zeros(*size, dtype=np.float64, requires_grad: bool = False) -> Tensor:
    """A Tensor of zeros: `zeros(2, 3)` or `zeros((2, 3))`.

    Example:
        >>> zeros(2, 3).shape, zeros((2, 3)).shape
        ((2, 3), (2, 3))
    """
    return _make(np.zeros(_size(size), dtype), requires_grad)


def ones(*size, dtype=np.float64, requires_grad: bool = False) -> Tensor:
    """A Tensor of ones.

    Example:
        >>> x = ones(2, requires_grad=True)
        >>> (x * 3).sum().backward(); x.grad
        tensor([3., 3.])
    """
    return _make(np.ones(_size(size), dtype), requires_grad)


def empty(*size, dtype=np.float64, requires_grad: bool = False) -> Tensor:
    """An uninitialised Tensor (zeros here).

    Example:
        >>> empty(2, 2).shape
        (2, 2)
    """
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def full(size, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    """A Tensor filled with `fill_value`.

    Example:
        >>> full((2,), 7.0)
        tensor([7., 7.])
    """
    return _make(np.full(tuple(size), fill_value, dtype), requires_grad)


def zeros_like(t, dtype=None, requires_grad: bool = False) -> Tensor:
    """A Tensor of zeros with the shape (and, by default, dtype) of `t`.

    Example:
        >>> zeros_like(ones(2, 2))
        tensor([[0., 0.],
                [0., 0.]])
    """
    return zeros(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad: bool = False) -> Tensor:
    """A Tensor of ones with the shape (and, by default, dtype) of `t`.

    Example:
        >>> ones_like(zeros(3), requires_grad=True)
        tensor([1., 1., 1.], requires_grad=True)
    """
    return ones(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    """A Tensor of `fill_value` with the shape (and, by default, dtype) of `t`.

    Example:
        >>> full_like(zeros(2), 0.5)
        tensor([0.5, 0.5])
    """
    return full(t.shape, fill_value, dtype or t.dtype, requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False) -> Tensor:
    """`torch.arange`: integers unless a bound is a float or `dtype` is given.

    Example:
        >>> arange(3), arange(0, 1, 0.25)
        (tensor([0, 1, 2]), tensor([0.  , 0.25, 0.5 , 0.75]))
    """
    values = (
        np.arange(start, end, step, dtype=dtype)
        if end is not None
        else np.arange(start, dtype=dtype)
    )
    return _make(values, requires_grad)


def linspace(start, end, steps: int, dtype=np.float64, requires_grad: bool = False) -> Tensor:
    """`torch.linspace`: `steps` evenly spaced values from `start` to `end`; differentiable in
    a `start` or `end` that carries a derivative (unless `requires_grad` asks for a new leaf).

    Example:
        >>> linspace(0, 1, 5)
        tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
        >>> a = tensor(1.0, requires_grad=True)
        >>> linspace(a, 3.0, 5).sum().backward(); a.grad
        tensor(2.5)
    """
    values = _creation.linspace(start, end, steps, dtype=dtype)
    if isinstance(values, Tensor) and not requires_grad:
        return values
    return _make(values.primal() if isinstance(values, Tensor) else values, requires_grad)


def eye(n: int, m: int | None = None, dtype=np.float64, requires_grad: bool = False) -> Tensor:
    """`torch.eye`: an `n` x `m` (default square) identity matrix.

    Example:
        >>> eye(2, 3)
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    return _make(np.eye(n, m, dtype=dtype), requires_grad)


def rand(*size, dtype=np.float64, requires_grad: bool = False, generator=None) -> Tensor:
    """Uniform [0, 1) samples (from `generator`, a NumPy Generator, if given).

    Example:
        >>> import numpy as np
        >>> t = rand(2, 3, generator=np.random.default_rng(0))
        >>> t.shape, bool(((t >= 0) & (t < 1)).all())
        ((2, 3), True)
    """
    rng = generator if generator is not None else np.random.default_rng()
    return _make(rng.random(_size(size)).astype(dtype), requires_grad)


def randn(*size, dtype=np.float64, requires_grad: bool = False, generator=None) -> Tensor:
    """Standard normal samples.

    Example:
        >>> import numpy as np
        >>> randn(2, 3, generator=np.random.default_rng(0)).shape
        (2, 3)
    """
    rng = generator if generator is not None else np.random.default_rng()
    return _make(rng.standard_normal(_size(size)).astype(dtype), requires_grad)


__all__ = [
    "arange",
    "as_tensor",
    "empty",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "tensor",
    "zeros",
    "zeros_like",
]
