"""`linearize` that works under `jit`: inside a staged function the linear map is a staged
graph of the tangents, held by a pytree (`LinearFunction`) whose leaves are its residuals,
so that it can be returned from a jitted function (as JAX's `Partial`) or called inside it.

Outside `jit`, `linearize` is reverse/transforms.py's (the recorded pullback, transposed);
a function with no reverse mode (a while_loop) is linearized by forward mode instead, as JAX's
linearize needs only the JVP.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.dtypes import float0, is_inexact
from autodiff.core.primitive import bind
from autodiff.core.pytree import register_pytree_node, tree_flatten, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.core.trace import state
from autodiff.forward_ad import jvp
from autodiff.reverse.transforms import check_callable, tangents_for
from autodiff.reverse.transforms import linearize as _recorded_linearize
from autodiff.staging.call import call_p, run_graph
from autodiff.staging.ir import Graph
from autodiff.staging.trace import StagingTrace, stage


class ReverseModeError(ValueError):
    """A primitive without reverse mode was differentiated in reverse (a while loop, whose
    trip count is known only at run time)."""


class LinearFunction:
    """The linear map of `linearize` under `jit`: `graph` (of the tangents of the float
    primals, then the residuals) and its residuals, the pytree's leaves."""

    def __init__(self, graph: Graph, residuals: list, primals: tuple):
        self.graph = graph
        self.residuals = residuals
        self.primals = primals  # (shapes and dtypes only: what tangents must match)

    def __call__(self, *tangents):
        ts = tangents_for(tangents, self.primals)
        flat = [t for t, p in zip(ts, self.primals) if is_inexact(p.dtype)]
        operands = flat + list(self.residuals)
        if any(type(x) in TENSOR_TYPES for x in operands):
            outs = bind(call_p, *operands, graph=self.graph)
        else:
            outs = run_graph(self.graph, *operands)
        return tree_unflatten(self.graph.out_tree, list(outs))


register_pytree_node(
    LinearFunction,
    lambda f: (f.residuals, (f.graph, f.primals)),
    lambda aux, residuals: LinearFunction(aux[0], list(residuals), aux[1]),
)


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """Evaluate `fun` once and return `(out, jvp_fn)` (`(out, jvp_fn, aux)` with `has_aux`),
    where `jvp_fn(*tangents)` is its JVP at `primals` (a tangent per primal, float0 for an
    integer one). Under `jit`, `jvp_fn` is a pytree of its residuals (JAX's `Partial`), so a
    jitted function may return it; outside, it transposes the recorded pullback.

    Example:
        >>> import autodiff as ad
        >>> out, f_jvp = ad.linearize(lambda x: x ** 3, 2.0)
        >>> float(out), float(f_jvp(1.0))
        (8.0, 12.0)
        >>> out, f_jvp = ad.jit(lambda x: ad.linearize(lambda x: x ** 3, x))(2.0)
        >>> float(out), float(f_jvp(1.0))
        (8.0, 12.0)
    """
    if not any(type(t) is StagingTrace for t in state().stack):
        try:
            return _recorded_linearize(fun, *primals, has_aux=has_aux)
        except ReverseModeError:
            return _forward_linearize(fun, primals, has_aux)
    check_callable(fun, "linearize")
    avals = [aval_of(p) for p in primals]
    floats = [i for i, a in enumerate(avals) if is_inexact(a.dtype)]
    primal_out: list = []  # (the outputs of the one evaluation: values of the levels below)

    def tangent_map(*float_tangents):
        tangents = [_zero_tangent(a) for a in avals]
        for i, t in zip(floats, float_tangents):
            tangents[i] = t
        result = jvp(fun, primals, tuple(tangents), has_aux=has_aux)
        primal_out.append((result[0], result[2]) if has_aux else (result[0], None))
        return result[1]

    tangent_avals = [avals[i].strengthened() for i in floats]
    in_tree = tree_flatten(tuple(tangent_avals))[1]
    graph, residuals = stage(tangent_map, tangent_avals, in_tree, name="linearized")
    out, aux = primal_out[0]
    # (what tangents must match: zeros of no memory, as _tangent_for reads primals)
    shapes = tuple(np.broadcast_to(np.zeros((), a.dtype), a.shape) for a in avals)
    linear = LinearFunction(graph, residuals, shapes)
    return (out, linear, aux) if has_aux else (out, linear)


def _forward_linearize(fun: Callable, primals: tuple, has_aux: bool):
    """`linearize` by forward mode alone: each call of the linear map is a JVP of `fun`."""
    zeros = tuple(_zero_tangent(aval_of(p)) for p in primals)
    result = jvp(fun, primals, zeros, has_aux=has_aux)

    def jvp_fn(*tangents):
        return jvp(fun, primals, tangents_for(tangents, primals), has_aux=has_aux)[1]

    return (result[0], jvp_fn, result[2]) if has_aux else (result[0], jvp_fn)


def _zero_tangent(aval: ShapedArray) -> np.ndarray:
    dtype = aval.dtype if is_inexact(aval.dtype) else float0
    return np.zeros(aval.shape, dtype)


__all__ = ["LinearFunction", "ReverseModeError", "linearize"]
