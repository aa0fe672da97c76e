"""The Taylor-mode transforms: jet (truncated Taylor series through a function) and derivatives."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable

import numpy as np

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import new_trace
from autodiff.ops.structural import shape_of
from autodiff.taylor.trace import JetTrace, JetTracer

_SCALARS = (bool, int, float, complex)


def _is_array(x) -> bool:
    if isinstance(x, (Tensor, *_SCALARS)):
        return True
    return isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc"


def _check_containers(primals, series) -> int:
    """The series' order, once `primals` and `series` are sequences of one length whose
    entries are lists of terms of one length (JAX's messages where JAX has them)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError(
            "primal and series arguments to jet must be tuples or lists; found "
            f"{type(primals).__name__} and {type(series).__name__}."
        )
    if len(primals) != len(series):
        raise ValueError(
            f"jet got {len(primals)} primals and {len(series)} series: it takes one series "
            "(a list of terms) per primal."
        )
    for i, terms in enumerate(series):
        if not isinstance(terms, (tuple, list)):
            raise TypeError(
                f"series entry {i} of jet must be a tuple or list of terms (one array per "
                f"order), got {type(terms).__name__}."
            )
    orders = {len(terms) for terms in series}
    if len(orders) > 1:
        raise ValueError("jet terms have inconsistent lengths for different arguments")
    return orders.pop() if orders else 0


def _as_primal(i: int, x):
    if not _is_array(x):
        raise ValueError(f"primal value at position {i} is not an array")
    x = x if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x)
    if not is_inexact(dtype_of(x)):
        raise TypeError(
            f"jet requires real- or complex-valued primals (floating or complex dtype), but "
            f"primal {i} has dtype {dtype_of(x).name}: convert it to a float dtype."
        )
    return x


def _as_term(i: int, j: int, x, term):
    if not _is_array(term):
        raise ValueError(f"term {j} for argument {i} is not an array")
    if isinstance(term, _SCALARS):  # (a Python number takes the primal's dtype, as a weak one)
        term = np.asarray(term, dtype_of(x))
    if tuple(shape_of(term)) != tuple(shape_of(x)):
        raise ValueError(
            "jet called with different primal and series shapes: primal "
            f"{i} has shape {tuple(shape_of(x))} and its term {j} has shape "
            f"{tuple(shape_of(term))}."
        )
    if dtype_of(term) != dtype_of(x):
        raise TypeError(
            "jet called with different primal and series dtypes: primal "
            f"{i} has dtype {dtype_of(x).name} and its term {j} has dtype "
            f"{dtype_of(term).name}."
        )
    return term


def _scaled(terms: list, up: bool) -> list:
    """Derivatives (the k-th term scaled by k!) from normalized Taylor coefficients (`up`), or
    the other way round."""
    scaled = []
    for k, t in enumerate(terms, start=1):
        factor = math.factorial(k)
        scaled.append(t if factor == 1 else (t * float(factor) if up else t / float(factor)))
    return scaled


def _split(out, trace, order: int, factorial_scaled: bool):
    """The primal outputs and their terms (zeros where an output does not depend on the
    inputs; derivatives if `factorial_scaled`), each a pytree of the output's structure."""
    flat, treedef = tree_flatten(out)
    primals, terms = [], []
    for k, o in enumerate(flat):
        if not _is_array(o):
            raise TypeError(
                f"the function passed to jet returned {reprlib.repr(o)} of type {type(o)} at "
                f"output component {k}: it must return arrays, scalars or Tensors (or pytrees "
                "of them)."
            )
        if isinstance(o, JetTracer) and o._trace is trace:
            primals.append(o._value)
            terms.append(_scaled(o._series, up=True) if factorial_scaled else list(o._series))
        else:
            primals.append(o)
            terms.append([np.zeros(shape_of(o), dtype_of(o)) for _ in range(order)])
    return tree_unflatten(treedef, primals), tree_unflatten(treedef, terms)


def jet(fun: Callable, primals, series, factorial_scaled: bool = True):
    """Push a truncated Taylor series through `fun` (Taylor-mode AD, as `jax.experimental.jet`).

    Together, a primal x0 and its terms x1..xK make the curve x(t) = x0 + x1 t + x2 t^2 / 2! +
    ... + xK t^K / K!: the terms are its derivatives in t at 0. jet returns `fun(*primals)` and
    the derivatives of `fun(x(t))` at 0 of orders 1..K, in one pass whose cost grows with K^2
    (nesting jvp K times grows with 2^K).

    Arguments:
        fun: a function of arrays returning an array or a pytree of arrays.
        primals: a tuple or list of the arguments (arrays of a floating or complex dtype).
        series: a tuple or list with, for each primal, a list of its K terms (arrays of its
            shape and dtype).
        factorial_scaled: True (the default): the terms in and out are derivatives, as above.
            False: they are the normalized Taylor coefficients (x(t) = x0 + x1 t + x2 t^2 +
            ...).

    Returns:
        `(primals_out, series_out)`: `fun(*primals)`, and a pytree of its structure with the
        list of K terms of each output.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> y0, (y1, y2) = ad.jet(anp.exp, (0.0,), ([1.0, 0.0],))  # d/dt exp(t) at 0
        >>> float(y0), float(y1), float(y2)
        (1.0, 1.0, 1.0)
    """
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {reprlib.repr(fun)}: jet transforms one.")
    order = _check_containers(primals, series)
    primals = [_as_primal(i, x) for i, x in enumerate(primals)]
    series = [
        [_as_term(i, j, x, t) for j, t in enumerate(terms)]
        for i, (x, terms) in enumerate(zip(primals, series))
    ]
    if order == 0:
        return _split(fun(*primals), None, 0, factorial_scaled)
    if factorial_scaled:
        series = [_scaled(terms, up=False) for terms in series]
    with new_trace(JetTrace, order) as trace:
        out = fun(*(JetTracer(x, trace, terms) for x, terms in zip(primals, series)))
    return _split(out, trace, order, factorial_scaled)


def derivatives(fun: Callable, order: int) -> Callable:
    """The function giving `fun(x)` and its first `order` derivatives at a scalar `x`, by one
    `jet` along x(t) = x + t.

    Arguments:
        fun: a scalar function of a scalar.
        order: how many derivatives (a non-negative integer).

    Returns:
        A function of `x` returning the list `[f(x), f'(x), ..., f^(order)(x)]`.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> [round(float(d), 6) for d in ad.derivatives(anp.sin, order=3)(0.0)]
        [0.0, 1.0, -0.0, -1.0]
    """
    if not callable(fun):
        raise TypeError(
            f"Expected a callable value, got {reprlib.repr(fun)}: derivatives transforms one."
        )
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"derivatives: order must be an integer, got {reprlib.repr(order)}.")
    if order < 0:
        raise ValueError(f"derivatives: order must be non-negative, got {order}.")
    order = int(order)

    def derivatives_of(x):
        x = _as_primal(0, x)
        if tuple(shape_of(x)) != ():
            raise ValueError(
                f"derivatives takes a scalar x, got one of shape {tuple(shape_of(x))}."
            )
        one = np.ones((), dtype_of(x))
        seed = [one] + [np.zeros((), dtype_of(x))] * (order - 1) if order else []
        y, terms = jet(fun, (x,), (seed,))
        if not _is_array(y) or tuple(shape_of(y)) != ():
            raise ValueError(
                "derivatives takes a scalar function: fun returned "
                f"{reprlib.repr(y)} (it must return a scalar)."
            )
        return [y, *terms]

    return derivatives_of
