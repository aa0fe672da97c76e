"""The namespaces a rule computes with: one vjp rule, and the NumPy form derived from it.

A vjp rule written as `rule(ops, ct, out, *primals, **params)` computes with the operations
of `ops`, by name: primitives (`define_primitive`) and functions (`define`). Given `AD`,
where a primitive is applied through `bind` and functions are autodiff's, it is the
primitive's vjp rule: it differentiates, batches and nests again. Given `NUMPY`, where a
primitive is its impl, called directly, it is `Primitive.fast.vjp`: the same operations, in
the same order, on plain NumPy values, without a dispatch per operation (most of what a
backward pass over small arrays costs). `vjp_rules` gives a primitive both forms of one rule.
"""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

from autodiff.core.primitive import Primitive, bind
from autodiff.ops.elementwise import cotangent_of, unbroadcast_numpy

AD = SimpleNamespace()
NUMPY = SimpleNamespace()


def define(name: str, *, ad, numpy) -> None:
    """Give the operation `name` its meaning in each namespace."""
    setattr(AD, name, ad)
    setattr(NUMPY, name, numpy)


def define_primitive(prim: Primitive) -> None:
    """`prim` as the operation of its name: bound in `AD`, its impl (as it is now) in `NUMPY`."""
    define(prim.name, ad=partial(bind, prim), numpy=prim.impl)


def vjp_rules(prim: Primitive, rule) -> None:
    """Give `prim` its vjp rule and its NumPy form (`Primitive.fast.vjp`), both `rule`
    (`rule(ops, ct, out, *primals, **params)`), computing with `AD` and with `NUMPY`.

    Example:
        >>> import numpy as np
        >>> from autodiff.ops.index import getitem_p  # (x[1] of an x of 3 elements)
        >>> ct, x, params = np.array(5.0), np.zeros(3), {"index": (1,)}
        >>> getitem_p.vjp(ct, x, out=ct, **params), getitem_p.fast.vjp(ct, ct, x, **params)
        ((array([0., 5., 0.]),), (array([0., 5., 0.]),))
    """

    def vjp(ct, *primals, out, **params):
        return rule(AD, ct, out, *primals, **params)

    prim.vjp = vjp
    prim.fast.vjp = partial(rule, NUMPY)  # (C's partial: no Python frame of its own)


def _cotangent_of_numpy(ct, x):
    """`cotangent_of` for NumPy values."""
    try:
        kind = x.dtype.kind
    except AttributeError:  # a Python number
        return cotangent_of(ct, x)
    return None if ct is None or kind not in "fc" else unbroadcast_numpy(ct, x)


define("cotangent_of", ad=cotangent_of, numpy=_cotangent_of_numpy)
