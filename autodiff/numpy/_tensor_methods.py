"""The implementations of Tensor's operators, ndarray-style methods and NumPy protocols.

Written with autodiff.numpy; `autodiff/torch/_tensor_methods.py` installs them on Tensor (with
every other method, in one table), because the core must not import the op families.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core.primitive import reflected_tensor_operator, tensor_operator
from autodiff.core.pytree import tree_map
from autodiff.core.tensor import Tensor
from autodiff.numpy._creation import PASSTHROUGH
from autodiff.ops import special as special_ops
from autodiff.ops import special_integrals
from autodiff.ops.elementwise import BINARY


def binary_operator(name: str) -> Callable:
    """`Tensor.__add__` and its kind: `anp.<name>(self, other)`, dispatched directly for an
    elementwise primitive (core/primitive.py's `tensor_operator`)."""
    prim = BINARY.get(name)
    op = anp.FUNCTIONS[name] if prim is None else tensor_operator(prim)
    if prim is not None:
        op.__name__ = op.__qualname__ = name
    return op


def reflected_operator(name: str) -> Callable:
    """`Tensor.__radd__` and its kind: `anp.<name>(other, self)`."""
    prim = BINARY.get(name)
    if prim is None:
        f = anp.FUNCTIONS[name]

        def rop(self, other):
            return f(other, self)

    else:
        rop = reflected_tensor_operator(prim)
    rop.__name__ = rop.__qualname__ = f"reflected_{name}"
    return rop


def in_place_operator(name: str, ufunc: np.ufunc | None = None) -> Callable:
    """`Tensor.__iadd__` and its kind: `self = anp.<name>(self, other)` in place, written
    straight into the buffer by `ufunc` where that is what the general path would do (see
    `Tensor._ufunc_in_place`: an optimizer's `p -= lr * p.grad` makes no new array)."""
    f = binary_operator(name)
    if ufunc is None:

        def iop(self, other):
            return self._assign_inplace(f(self, other))

    else:

        def iop(self, other):
            if self._ufunc_in_place(ufunc, other):
                return self
            return self._assign_inplace(f(self, other))

    iop.__name__ = iop.__qualname__ = f"in_place_{name}"
    return iop


def _repeats_elements(value) -> bool:
    shape = getattr(value, "shape", ())
    strides = getattr(value, "strides", ())
    return any(s == 0 and n > 1 for n, s in zip(shape, strides))


def positive(self: Tensor) -> Tensor:
    """`+x`: `x` itself."""
    return self


def setitem(self: Tensor, index, value) -> None:
    """`t[index] = value`: an in-place functional update (differentiable in both)."""
    if getattr(self, "_view", None) is not None and _repeats_elements(self._value):
        # (an expanded view: as torch, the selected part is written, which may not repeat)
        part = self[index]
        if getattr(part, "_view", None) is not None:
            part._assign_inplace(anp.broadcast_to(value, part.shape) * 1)
            return
    result = self._assign_inplace(anp.index_set(self, index, value))
    if result is not self:
        raise TypeError(
            "Item assignment on a traced value inside a transform is not supported: use "
            "x = x.at[index].set(value), which returns the updated array."
        )


def reshape(self: Tensor, *shape, order: str = "C") -> Tensor:
    """`ndarray.reshape`: accepts `t.reshape(2, 3)` and `t.reshape((2, 3))`."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return anp.reshape(self, shape, order=order)


def transpose(self: Tensor, *axes) -> Tensor:
    """`ndarray.transpose`: `t.transpose(1, 0)`, `t.transpose((1, 0))` or `t.transpose()`."""
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
        return anp.transpose(self, axes[0] or None)
    return anp.transpose(self, axes or None)


def flatten(self: Tensor, order: str = "C") -> Tensor:
    """`ndarray.flatten`: a 1-d copy."""
    return anp.copy(anp.ravel(self, order=order))


def matrix_transpose(self: Tensor) -> Tensor:
    """`x.mT`: the last two axes swapped."""
    return anp.swapaxes(self, -1, -2)


def _scipy_ufunc(ufunc: np.ufunc):
    """`autodiff.scipy.special`'s function for one of SciPy's special-function ufuncs
    (`scipy.special.expit(t)`), else None. SciPy is only looked at if it was imported."""
    special = sys.modules.get("scipy.special")
    name = ufunc.__name__
    if special is None:
        return None
    if name in _SCIPY_PRIVATE:  # what scipy.special.zeta calls
        if getattr(getattr(special, "_ufuncs", None), name, None) is not ufunc:
            return None
        name = _SCIPY_PRIVATE[name]
    elif getattr(special, name, None) is not ufunc:
        return None
    return special_ops.FUNCTIONS.get(name) or special_integrals.FUNCTIONS.get(name)


_SCIPY_PRIVATE = {"_zeta": "zeta", "_riemann_zeta": "zeta"}


def array_ufunc(self: Tensor, ufunc: np.ufunc, method: str, *inputs, **kwargs) -> Any:
    """`numpy.sin(t)` and every other ufunc call on Tensors runs `autodiff.numpy.sin`."""
    name = ufunc.__name__
    f = anp.FUNCTIONS.get(name) if getattr(np, name, None) is ufunc else _scipy_ufunc(ufunc)
    if method != "__call__" or f is None:
        what = f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}"
        raise NotImplementedError(f"autodiff does not support {what} on Tensors")
    out = kwargs.pop("out", None)
    if kwargs or out is not None:
        raise NotImplementedError(
            f"autodiff supports numpy.{name} on Tensors only without the arguments "
            f"{sorted(kwargs) or ['out']}"
        )
    return f(*inputs)


def array_function(self: Tensor, func: Callable, types, args: tuple, kwargs: dict) -> Any:
    """`numpy.mean(t)` and every other NumPy function on Tensors runs autodiff.numpy's."""
    module = func.__module__ or "numpy"
    namespace: Any = anp
    if module.startswith("numpy.linalg"):
        namespace = getattr(anp, "linalg", None)
    elif module.startswith("numpy.fft"):
        namespace = getattr(anp, "fft", None)
    elif (
        module != "numpy"
        and not module.startswith("numpy._core")
        and not module.startswith("numpy.core")
    ):
        namespace = None
    name = func.__name__
    handler = (
        namespace.FUNCTIONS.get(name)
        if namespace is not None and hasattr(namespace, "FUNCTIONS")
        else None
    )
    if handler is None and namespace is anp and name in PASSTHROUGH:
        # Functions of no derivative interest (allclose, ...) see the concrete values.
        args, kwargs = tree_map(
            lambda a: a.primal() if isinstance(a, Tensor) else a, (args, kwargs)
        )
        return func(*args, **kwargs)
    if handler is None:
        qual = f"{module}.{name}" if not module.startswith("numpy._core") else f"numpy.{name}"
        raise NotImplementedError(f"autodiff does not support {qual} on Tensors")
    return handler(*args, **kwargs)
