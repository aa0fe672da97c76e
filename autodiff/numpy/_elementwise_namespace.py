"""The namespace's elementwise functions: the elementwise family's, reading a list or tuple
that holds Tensors as one (stacked, differentiable) array, as NumPy reads a list.

Each is the family's binding (`bind_unary` / `bind_binary` of its primitive) with that one
check in front, so the common call costs no extra frame. `where` also takes NumPy's
one-argument form (the indices of the true elements).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.primitive import bind_binary, bind_unary
from autodiff.numpy._sorting import nonzero
from autodiff.ops import elementwise as ew
from autodiff.ops import shape as shp

_stacked = shp.array  # (a list or tuple: NumPy's reading of it, differentiable in its Tensors)


def _named_as(f, family_fn):
    f.__name__ = f.__qualname__ = family_fn.__name__
    f.__doc__ = family_fn.__doc__
    return f


def _unary(p, family_fn):
    def f(x):
        if type(x) is list or type(x) is tuple:
            x = _stacked(x)
        return bind_unary(p, x)

    return _named_as(f, family_fn)


def _binary(p, family_fn):
    def f(x1, x2):
        if type(x1) is list or type(x1) is tuple:
            x1 = _stacked(x1)
        if type(x2) is list or type(x2) is tuple:
            x2 = _stacked(x2)
        return bind_binary(p, x1, x2)

    return _named_as(f, family_fn)


_NO_VALUE = object()


def where(condition, x=_NO_VALUE, y=_NO_VALUE, /):
    """`numpy.where`: `x` where `condition` holds, else `y` (differentiable in both); with
    the condition alone, the indices of its true elements (constants).

    Example:
        >>> import numpy as np
        >>> where(np.array([True, False]), np.array([1.0, 2.0]), 0.0)
        array([1., 0.])
        >>> where([True, False, True])
        (array([0, 2]),)
    """
    if x is _NO_VALUE and y is _NO_VALUE:
        return nonzero(condition)
    if x is _NO_VALUE or y is _NO_VALUE:
        raise ValueError("either both or neither of x and y should be given")
    condition, x, y = (_stacked(v) if type(v) in (list, tuple) else v for v in (condition, x, y))
    return ew.where(condition, x, y)


def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    """`numpy.clip`; the derivative passes to `a` inside [a_min, a_max], bounds included.

    Example:
        >>> import numpy as np
        >>> clip(np.array([-1.0, 0.5, 2.0]), 0.0, 1.0)
        array([0. , 0.5, 1. ])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.clip does not support out=")
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise TypeError(f"clip() got unexpected keyword arguments {sorted(kwargs)}")
    a, a_min, a_max = (_stacked(v) if type(v) in (list, tuple) else v for v in (a, a_min, a_max))
    return ew.clip(a, a_min, a_max)


FUNCTIONS = {name: _unary(p, ew.FUNCTIONS[name]) for name, p in ew.UNARY.items()}
FUNCTIONS.update({name: _binary(p, ew.FUNCTIONS[name]) for name, p in ew.BINARY.items()})
FUNCTIONS.update(
    {
        "where": where,
        "clip": clip,
        # NumPy 2's names of the inverse trigonometric functions
        "acos": FUNCTIONS["arccos"],
        "acosh": FUNCTIONS["arccosh"],
        "asin": FUNCTIONS["arcsin"],
        "asinh": FUNCTIONS["arcsinh"],
        "atan": FUNCTIONS["arctan"],
        "atanh": FUNCTIONS["arctanh"],
        "atan2": FUNCTIONS["arctan2"],
    }
)
assert set(FUNCTIONS) >= set(ew.UNARY) | set(ew.BINARY), np  # every family function is here
