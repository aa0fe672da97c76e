"""Tensor's operators, ndarray-style methods and NumPy protocols, written with autodiff.numpy.

They are attached here rather than defined in `autodiff.core.tensor` because the
core must not import the op families (dependencies point downward).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from autodiff.core.primitive import NO_PARAMS, bind_binary
from autodiff.core.pytree import tree_map
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.ops.at import at
from autodiff.ops.elementwise import BINARY
from autodiff.ops.index import getitem


@cache  # (the import statement runs once, not on each method call)
def _ns():
    import autodiff.numpy as anp

    return anp


def _binary(name):
    prim = BINARY.get(name)
    if prim is not None:  # elementwise operators bind their primitive directly (hot path)
        # `bind_binary(prim, self, other)`, inline: `self` is a Tensor, so the dispatch is
        # the choice between its trace and `other`'s (one interpreter frame less per operator).

        def op(self, other):
            top = self._trace
            if type(other) in TENSOR_TYPES and other._trace.level > top.level:
                top = other._trace
            if top.alive:
                return top.process(prim, (self, other), NO_PARAMS)
            return top.process_dead(prim, (self, other), NO_PARAMS)

        def rop(self, other):
            if type(other) in TENSOR_TYPES:  # (rare: Python tries `other`'s operator first)
                return bind_binary(prim, other, self)
            top = self._trace
            if top.alive:
                return top.process(prim, (other, self), NO_PARAMS)
            return top.process_dead(prim, (other, self), NO_PARAMS)

        return op, rop
    f = _ns().FUNCTIONS[name]

    def op(self, other):
        return f(self, other)

    def rop(self, other):
        return f(other, self)

    return op, rop


_OPERATORS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "power",
    "matmul": "matmul",
}
_COMPARISONS = {
    "__eq__": "equal",
    "__ne__": "not_equal",
    "__lt__": "less",
    "__le__": "less_equal",
    "__gt__": "greater",
    "__ge__": "greater_equal",
    "__and__": "logical_and",
    "__or__": "logical_or",
    "__xor__": "logical_xor",
}
_UNARY = {"__neg__": "negative", "__abs__": "absolute", "__invert__": "logical_not"}

# Methods whose NumPy function takes the array first, with the same remaining arguments.
_METHODS = (
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "var",
    "std",
    "cumsum",
    "cumprod",
    "ravel",
    "squeeze",
    "swapaxes",
    "repeat",
    "take",
    "dot",
    "clip",
    "round",
    "astype",
    "argmax",
    "argmin",
    "all",
    "any",
    "diagonal",
    "trace",
    "conj",
    "conjugate",
    "argsort",
    "nonzero",
    "ptp",
)


def _reshape(self, *shape, order="C"):
    """`ndarray.reshape`: accepts `t.reshape(2, 3)` and `t.reshape((2, 3))`."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return _ns().reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
        axes = axes[0]
    return _ns().transpose(self, axes or None)


def _clone(self, *, memory_format=None):
    """torch's name for `copy()`: a differentiable copy (CloneBackward0); `memory_format` is
    accepted for torch code and ignored (a copy is C-contiguous, as NumPy makes it)."""
    return _ns().copy(self)


def _flatten(self, order="C"):
    return _ns().copy(_ns().ravel(self, order=order))


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    name = ufunc.__name__
    f = _ns().FUNCTIONS.get(name)
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


def _array_function(self, func, types, args, kwargs):
    anp = _ns()
    module = func.__module__ or "numpy"
    namespace = anp
    if module.startswith("numpy.linalg"):
        namespace = getattr(anp, "linalg", None)
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
    if handler is None and namespace is anp and name in _passthrough():
        # Functions of no derivative interest (allclose, ...) see the concrete values.
        args, kwargs = tree_map(
            lambda a: a.primal() if isinstance(a, Tensor) else a, (args, kwargs)
        )
        return func(*args, **kwargs)
    if handler is None:
        qual = f"{module}.{name}" if not module.startswith("numpy._core") else f"numpy.{name}"
        raise NotImplementedError(f"autodiff does not support {qual} on Tensors")
    return handler(*args, **kwargs)


def _passthrough():
    from autodiff.numpy._creation import PASSTHROUGH

    return PASSTHROUGH


# In-place operators a ufunc can do in the tensor's own buffer (Tensor._ufunc_in_place).
_IN_PLACE_UFUNCS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
}


def _inplace(f, ufunc=None):
    if ufunc is None:

        def iop(self, other):
            return self._assign_inplace(f(self, other))

    else:

        def iop(self, other):
            if self._ufunc_in_place(ufunc, other):
                return self
            return self._assign_inplace(f(self, other))

    return iop


def _setitem(self, index, value):
    """`t[index] = value`: an in-place functional update (differentiable in both)."""
    updated = _ns().FUNCTIONS["index_set"](self, index, value)
    result = self._assign_inplace(updated)
    if result is not self:
        raise TypeError(
            "Item assignment on a traced value inside a transform is not supported: use "
            "x = x.at[index].set(value), which returns the updated array."
        )


def install() -> None:
    """Attach operators, methods and protocols to Tensor."""
    anp = _ns()
    for short, name in _OPERATORS.items():
        if name in anp.FUNCTIONS:
            op, rop = _binary(name)
            setattr(Tensor, f"__{short}__", op)
            setattr(Tensor, f"__r{short}__", rop)
            setattr(Tensor, f"__i{short}__", _inplace(op, _IN_PLACE_UFUNCS.get(name)))
    for dunder, name in _COMPARISONS.items():
        setattr(Tensor, dunder, _binary(name)[0])
    for dunder, name in _UNARY.items():
        f = anp.FUNCTIONS[name]
        setattr(Tensor, dunder, lambda self, f=f: f(self))
    Tensor.__pos__ = lambda self: self
    Tensor.__hash__ = object.__hash__
    for name in _METHODS:
        f = anp.FUNCTIONS.get(name)
        if f is not None:
            setattr(Tensor, name, f)
    Tensor.reshape = _reshape
    Tensor.transpose = _transpose
    Tensor.flatten = _flatten
    Tensor.copy = _ns().copy
    Tensor.clone = _clone
    Tensor.__getitem__ = getitem  # (`getitem(x, index)` itself: no wrapper's frame)
    Tensor.__setitem__ = _setitem
    Tensor.at = property(at, doc="Functional updates: `x.at[idx].set(v)`, `.add(v)`, ...")
    Tensor.T = property(lambda self: _ns().transpose(self))
    Tensor.mT = property(lambda self: _ns().swapaxes(self, -1, -2))
    Tensor.real = property(lambda self: _ns().real(self))
    Tensor.imag = property(lambda self: _ns().imag(self))
    Tensor.__array_ufunc__ = _array_ufunc
    Tensor.__array_function__ = _array_function
