"""NumPy forms of vjp rules: a rule's own code, run with the NumPy meaning of what it calls.

A vjp rule is written once, with autodiff's functions, so that it differentiates, batches
and nests again. On plain NumPy values that nobody records, each of those functions only
dispatches to a primitive's impl, and on small arrays that dispatch is most of what a
backward pass costs. So a function may be given its NumPy meaning (`define_numpy`: for
`bind`-ing helpers, the primitive's impl itself), and `vjp_rules` derives a rule's NumPy
form (`Primitive.fast.vjp`) from the rule: the same code, whose global names are read with
their NumPy meanings where they have one (as ops/formulas.py compiles an elementwise formula
with each namespace as its globals). Both forms run the same operations in the same order;
tests/test_ops.py checks them against each other, bitwise.
"""

from __future__ import annotations

from types import FunctionType

import numpy as np

from autodiff.core.dtypes import is_inexact
from autodiff.core.primitive import Primitive
from autodiff.ops.elementwise import cotangent_of, unbroadcast_numpy
from autodiff.ops.structural import shape_of

# Functions -> their NumPy meanings (on plain NumPy values, with the same parameters).
_NUMPY: dict = {}


def define_numpy(function, numpy_function) -> None:
    """Give `function` its NumPy meaning, `numpy_function`, in the NumPy forms of rules."""
    _NUMPY[function] = numpy_function


def vjp_rules(prim: Primitive, rule) -> None:
    """Give `prim` its vjp rule and that rule's NumPy form (`Primitive.fast.vjp`), both from
    `rule(ct, out, *primals, **params)`. The NumPy form reads the rule's global names as they
    are now, so the functions it calls must be defined (and given their NumPy meanings) first.

    Example:
        >>> import numpy as np
        >>> from autodiff.ops.gather_scatter import getitem_p  # (x[1] of an x of 3 elements)
        >>> ct, x, params = np.array(5.0), np.zeros(3), {"index": (1,)}
        >>> getitem_p.vjp(ct, x, out=ct, **params), getitem_p.fast.vjp(ct, ct, x, **params)
        ((array([0., 5., 0.]),), (array([0., 5., 0.]),))
    """

    def vjp(ct, *primals, out, **params):
        return rule(ct, out, *primals, **params)

    meanings = {id(function): numpy for function, numpy in _NUMPY.items()}
    names = {name: meanings.get(id(value), value) for name, value in rule.__globals__.items()}
    numpy_vjp = FunctionType(rule.__code__, names, rule.__name__, rule.__defaults__)
    numpy_vjp.__kwdefaults__ = rule.__kwdefaults__
    numpy_vjp.__qualname__ = f"{rule.__qualname__} (NumPy form)"
    prim.vjp, prim.fast.vjp = vjp, numpy_vjp


def cotangents_of(cts, xs) -> tuple:
    """Each cotangent of `cts` reduced to the shape and dtype of its primal in `xs`
    (`cotangent_of`: None for integer and bool primals).

    Example:
        >>> import numpy as np
        >>> cotangents_of([np.ones((2, 3)), np.ones(3)], [np.zeros(3), np.zeros(3, np.int64)])
        (array([2., 2., 2.]), None)
    """
    return tuple(cotangent_of(ct, x) for ct, x in zip(cts, xs))


def _cotangents_of_numpy(cts, xs) -> tuple:
    return tuple(map(_cotangent_of_numpy, cts, xs))


def _cotangent_of_numpy(ct, x):
    """`cotangent_of` for NumPy values."""
    try:
        kind = x.dtype.kind
    except AttributeError:  # a Python number
        return cotangent_of(ct, x)
    if ct is None or (kind not in "fc" and not is_inexact(x.dtype)):  # (bfloat16: kind "V")
        return None
    return unbroadcast_numpy(ct, x)


define_numpy(cotangent_of, _cotangent_of_numpy)
define_numpy(cotangents_of, _cotangents_of_numpy)


def _shape_of_numpy(x) -> tuple:
    """`shape_of` for NumPy values (arrays and NumPy scalars: a `shape`; else NumPy's)."""
    try:
        return x.shape
    except AttributeError:
        return np.shape(x)


define_numpy(shape_of, _shape_of_numpy)
