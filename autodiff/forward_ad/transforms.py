"""The functional forward-mode transform: jvp."""

from __future__ import annotations

import reprlib
from collections.abc import Callable

import numpy as np

from autodiff.core.config import checks_leaks
from autodiff.core.dtypes import dtype_of, float0, float_kind, is_inexact
from autodiff.core.errors import invalid_value_error
from autodiff.core.pytree import tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.core.trace import new_trace
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.ops.structural import shape_of


def is_valid_value(x) -> bool:
    if isinstance(x, (Tensor, bool, int, float, complex)):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return float_kind(x.dtype) in "biufc" or x.dtype == float0
    return False


def _as_value(x, where: str = "an argument"):
    if isinstance(x, Tensor) or (isinstance(x, np.ndarray) and is_valid_value(x)):
        return x
    if not is_valid_value(x):
        raise invalid_value_error(x, f"{where} of jvp")
    return np.asarray(x)


def _check_tangent(i: int, primal, tangent):
    p_shape, t_shape = tuple(shape_of(primal)), tuple(shape_of(tangent))
    if p_shape != t_shape:
        raise ValueError(
            f"jvp called with different primal and tangent shapes: primal {i} has shape "
            f"{p_shape} and its tangent has shape {t_shape}."
        )
    p_dt, t_dt = dtype_of(primal), dtype_of(tangent)
    if is_inexact(p_dt) and p_dt != t_dt:
        raise TypeError(
            "primal and tangent arguments to jvp do not match; dtypes must be equal, or in case "
            "of int/bool primal dtype the tangent dtype must be float0: jvp called with "
            f"different primal and tangent dtypes: primal {i} has dtype {p_dt.name} and its "
            f"tangent has dtype {t_dt.name}."
        )
    if not is_inexact(p_dt) and t_dt != float0:
        raise TypeError(
            f"jvp requires real- or complex-valued primals (floating or complex dtype), or a "
            f"tangent of dtype float0 for an integer or boolean one, but primal {i} has dtype "
            f"{p_dt.name} and its tangent has dtype {t_dt.name}: pass "
            f"np.zeros({p_shape}, autodiff.float0) as its tangent (an integer has no "
            "derivative), or convert the primal to a float dtype."
        )


def zero_tangent(x):
    """The tangent that is zero for `x`: zeros of its dtype, float0 ones for an integer or
    boolean `x`.

    Example:
        >>> zero_tangent(np.ones(2)), zero_tangent(3).dtype
        (array([0., 0.]), dtype([('float0', 'V')]))
    """
    dt = dtype_of(x)
    return np.zeros(shape_of(x), dt if is_inexact(dt) else float0)


def _split(out, trace, has_aux):
    """Primal outputs and tangents (zeros where the output does not depend on the inputs;
    float0 zeros for integer and boolean outputs, as in JAX)."""
    flat, treedef = tree_flatten(out)
    primals, tangents = [], []
    for k, o in enumerate(flat):
        if not is_valid_value(o):
            raise TypeError(
                f"the function passed to jvp returned {reprlib.repr(o)} of type {type(o)} at "
                f"output component {k}, which is not a valid JAX type: it must return arrays, "
                "scalars or Tensors (or pytrees of them)."
            )
        if isinstance(o, ForwardTracer) and o._trace is trace:
            primals.append(o._value)
            tangents.append(o._tangent if is_inexact(dtype_of(o)) else zero_tangent(o._value))
        else:
            primals.append(o)
            tangents.append(zero_tangent(o))
    return tree_unflatten(treedef, primals), tree_unflatten(treedef, tangents)


@checks_leaks("jvp")
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Evaluate `fun(*primals)` and its directional derivative along `tangents`.

    Arguments:
        fun: a function of arrays or pytrees of arrays.
        primals: a tuple or list of the arguments.
        tangents: a tuple or list with the structure, shapes and dtypes of `primals`; an
            integer or boolean primal takes a tangent of dtype `float0`, as in JAX (it has no
            derivative: `np.zeros(shape, autodiff.float0)`).

    Returns:
        `(out, tangent_out)` or `(out, tangent_out, aux)` with `has_aux`.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> out, t = ad.jvp(anp.sin, (0.0,), (2.0,))
        >>> float(out), float(t)
        (0.0, 2.0)
    """
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {reprlib.repr(fun)}: jvp transforms one.")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "primal and tangent arguments to jvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}."
        )
    p_flat, p_def = tree_flatten(tuple(primals))
    t_flat, t_def = tree_flatten(tuple(tangents))
    if p_def != t_def:
        raise TypeError(
            "primal and tangent arguments to jvp must have the same tree structure; primals "
            f"have tree structure {p_def} whereas tangents have tree structure {t_def}."
        )
    p_flat = [_as_value(p, f"primal {i}") for i, p in enumerate(p_flat)]
    t_flat = [_as_value(t, f"tangent {i}") for i, t in enumerate(t_flat)]
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        _check_tangent(i, p, t)
    with new_trace(ForwardTrace) as trace:
        duals = [
            ForwardTracer(p, trace, t) if is_inexact(dtype_of(p)) else p
            for p, t in zip(p_flat, t_flat)
        ]
        result = fun(*tree_unflatten(p_def, duals))
        if has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(
                    "has_aux=True requires the function to return a two-element tuple (output, "
                    f"aux), but got type {type(result)} with value {reprlib.repr(result)}."
                )
            result, aux = result
    out, t_out = _split(result, trace, has_aux)
    if has_aux:
        aux = tree_map(
            lambda v: v._value if isinstance(v, Tensor) and v._trace is trace else v, aux
        )
        return out, t_out, aux
    return out, t_out
