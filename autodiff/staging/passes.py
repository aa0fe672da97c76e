"""Graph passes: what `jit` does to a staged graph before running it.

- `inline_calls`: a staged call inside a staged function (jit of jit) becomes its equations.
- `simplify`: one forward sweep, each equation in turn
  - folded: of constants only, it is computed now and its result is a constant;
  - recognized as an identity transforms leave behind (`x * 1`, `x + -0.0`, `x / 1`, a cast
    or broadcast to what a value already is, a transpose of a transpose): its operand;
  - recognized as a common subexpression (the same primitive, params and inputs as an
    earlier one): that one's result.
- `eliminate_dead_code`: equations whose outputs nothing uses are dropped.

Each takes a graph and returns a new one (graphs are values: a cached graph is never
changed). Sub-graphs of control flow are optimized where they stand, by `optimize`.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import aval_of
from autodiff.staging.ir import Equation, Graph, Literal, Var, sub_graphs

# Constant folding computes arrays up to this size at compile time (larger ones stay in
# the graph: computing them at each call costs the same as storing them, and memory less).
FOLD_MAX_SIZE = 1 << 16


def optimize(graph: Graph, call_prim=None) -> Graph:
    """`graph` with every pass applied, sub-graphs included: calls inlined, the simplifying
    sweep, dead code eliminated."""
    if call_prim is not None:
        graph = inline_calls(graph, call_prim)
    graph = _map_sub_graphs(graph, lambda g: optimize(g, call_prim))
    return eliminate_dead_code(simplify(graph))


def _replace(graph: Graph, equations: list, out_vars=None, consts=None) -> Graph:
    return Graph(
        graph.in_vars,
        graph.consts if consts is None else consts,
        equations,
        graph.out_vars if out_vars is None else out_vars,
        graph.in_tree,
        graph.out_tree,
        graph.name,
    )


def _map_sub_graphs(graph: Graph, f) -> Graph:
    """`graph` with `f` applied to every sub-graph in its equations' params."""
    equations = []
    changed = False
    for eqn in graph.equations:
        if sub_graphs(eqn.params):
            params = {}
            for k, v in eqn.params.items():
                if type(v) is Graph:
                    v = f(v)
                elif type(v) is tuple and any(type(x) is Graph for x in v):
                    v = tuple(f(x) if type(x) is Graph else x for x in v)
                params[k] = v
            eqn = Equation(eqn.prim, eqn.inputs, eqn.outputs, params)
            changed = True
        equations.append(eqn)
    return _replace(graph, equations) if changed else graph


class _Substitution:
    """Variables replaced by others (or by literals): inputs and outputs read through it."""

    def __init__(self):
        self.map: dict = {}

    def __call__(self, x):
        while type(x) is Var and x in self.map:
            x = self.map[x]
        return x

    def inputs(self, eqn: Equation) -> list:
        return [self(x) for x in eqn.inputs]


# ---------------------------------------------------------------------------------------------


def inline_calls(graph: Graph, call_prim) -> Graph:
    """Staged calls (`call_prim` equations) replaced by their graphs' equations."""
    if not any(eqn.prim is call_prim for eqn in graph.equations):
        return graph
    subst = _Substitution()
    equations: list = []
    consts = list(graph.consts)
    for eqn in graph.equations:
        inputs = subst.inputs(eqn)
        if eqn.prim is not call_prim:
            equations.append(Equation(eqn.prim, inputs, eqn.outputs, eqn.params))
            continue
        inner = inline_calls(eqn.params["graph"], call_prim)
        inner_subst = {v: x for v, x in zip(inner.in_vars, inputs)}
        consts.extend(inner.consts)
        rename = _Substitution()
        rename.map = inner_subst
        for e in inner.equations:
            equations.append(Equation(e.prim, rename.inputs(e), e.outputs, e.params))
        for out, inner_out in zip(eqn.outputs, inner.out_vars):
            subst.map[out] = rename(inner_out)
    return _replace(graph, equations, [subst(v) for v in graph.out_vars], consts)


def _foldable(eqn: Equation) -> bool:
    """Primitives whose params are plain data (no Python functions to call back)."""
    return not any(callable(v) and not isinstance(v, np.dtype) for v in eqn.params.values())


def simplify(graph: Graph) -> Graph:
    """The forward sweep (see the module): folded constants, identities and common
    subexpressions replaced by what they stand for."""
    subst = _Substitution()
    equations = []
    known = dict(graph.consts)  # var -> value, constants folded included
    consts = list(graph.consts)
    producers: dict = {}  # var -> the equation that made it
    seen: dict = {}  # CSE key -> the first equation
    for eqn in graph.equations:
        eqn = Equation(eqn.prim, subst.inputs(eqn), eqn.outputs, eqn.params)
        has_graphs = bool(sub_graphs(eqn.params))
        folded = None if has_graphs else _fold(eqn, known)
        if folded is not None:
            for var, value in zip(eqn.outputs, folded):
                known[var] = value
                consts.append((var, value))
            continue
        same = _identity(eqn, producers, known)
        if same is not None:
            subst.map[eqn.outputs[0]] = same
            continue
        key = None if has_graphs else _cse_key(eqn)
        if key is not None:
            earlier = seen.get(key)
            if earlier is not None:
                for var, first in zip(eqn.outputs, earlier.outputs):
                    subst.map[var] = first
                continue
            seen[key] = eqn
        equations.append(eqn)
        for var in eqn.outputs:
            producers[var] = eqn
    return _replace(graph, equations, [subst(v) for v in graph.out_vars], consts)


def _fold(eqn: Equation, known: dict):
    """`eqn`'s outputs computed now if its inputs are all known and they are small, else
    None (also when computing them fails: the error stays one of the run)."""
    if not all(type(x) is Literal or x in known for x in eqn.inputs):
        return None
    if any(v.aval.size > FOLD_MAX_SIZE for v in eqn.outputs) or not _foldable(eqn):
        return None
    values = [x.value if type(x) is Literal else known[x] for x in eqn.inputs]
    try:
        out = eqn.prim.impl(*values, **eqn.params)
    except Exception:
        return None
    outs = out if eqn.prim.multiple_results else (out,)
    if any(aval_of(o).shape != v.aval.shape for o, v in zip(outs, eqn.outputs)):
        return None
    return outs


def _constant_value(x, consts: dict):
    return x.value if type(x) is Literal else consts.get(x)


def _identity(eqn: Equation, producers: dict, consts: dict):
    """The operand `eqn` merely passes on (same shape, dtype and value, bitwise), or None."""
    if len(eqn.outputs) != 1 or not eqn.inputs:
        return None
    name = eqn.prim.name
    out = eqn.outputs[0]
    if name in ("multiply", "divide", "add", "subtract"):
        return _arithmetic_identity(eqn, consts)
    x = eqn.inputs[0]
    if type(x) is not Var:
        return None
    same_type = x.aval.shape == out.aval.shape and x.aval.dtype == out.aval.dtype
    if name in ("astype", "broadcast_to", "sum_to_shape", "reshape") and same_type:
        return x
    if name == "getitem" and same_type and len(eqn.inputs) == 1:
        if _whole(eqn.params["index"], x.aval.shape):
            return x
    if name == "transpose":
        return _transpose_identity(eqn, x, producers, same_type)
    return None


def _transpose_identity(eqn: Equation, x: Var, producers: dict, same_type: bool):
    """`_identity` of a transpose: `x` itself if it keeps the axes in order, the operand of
    the transpose producing `x` if the two undo each other, else None."""
    outer = eqn.params.get("axes")
    if same_type and outer is not None:
        if tuple(a % max(x.aval.ndim, 1) for a in outer) == tuple(range(x.aval.ndim)):
            return x
    producer = producers.get(x)
    if producer is not None and producer.prim.name == "transpose":
        inner = producer.params.get("axes")
        if inner is not None and outer is not None:
            if tuple(inner[i] for i in outer) == tuple(range(len(outer))):
                return producer.inputs[0]
    return None


def _whole(index: tuple, shape: tuple) -> bool:
    """Does `x[index]` select all of `x` of `shape`, in order (full slices and Ellipsis)?"""
    if not all(type(p) is slice or p is Ellipsis for p in index) or index.count(Ellipsis) > 1:
        return False
    slices = [p for p in index if p is not Ellipsis]
    if len(slices) > len(shape):
        return False
    if Ellipsis in index:
        at = index.index(Ellipsis)
        slices[at:at] = [slice(None)] * (len(shape) - len(slices))
    return all(p.indices(n) == (0, n, 1) for p, n in zip(slices, shape))


def _is_one(v) -> bool:
    return bool(v == 1)


def _is_minus_zero(v) -> bool:
    """`x + v` is `x`, bitwise, for every x: an integer 0, or -0.0 (`x + 0.0` turns -0.0 into
    0.0)."""
    return bool(v == 0) and (not isinstance(v, np.floating) or bool(np.signbit(v)))


def _is_plus_zero(v) -> bool:
    """`x - v` is `x`, bitwise: an integer 0, or 0.0 (`x - 0.0` is `x + -0.0`)."""
    return bool(v == 0) and (not isinstance(v, np.floating) or not bool(np.signbit(v)))


def _uniform(value) -> bool:
    """Is every element of the constant `value` the same (a scalar, a broadcast scalar: the
    cotangent of a sum, or a small array of one value)?"""
    if np.size(value) <= 1:
        return np.size(value) == 1
    a = np.asarray(value)
    if not any(a.strides):
        return True
    return a.size <= FOLD_MAX_SIZE and bool(np.all(a == a.reshape(-1)[0]))


# (primitive, position of the operand kept) -> what the other operand must be
_NEUTRAL = {
    ("multiply", 0): _is_one,
    ("multiply", 1): _is_one,
    ("divide", 0): _is_one,
    ("add", 0): _is_minus_zero,
    ("add", 1): _is_minus_zero,
    ("subtract", 0): _is_plus_zero,
}


def _arithmetic_identity(eqn: Equation, consts: dict):
    """`x * 1`, `1 * x`, `x / 1`, `x + -0.0`, `x - 0.0` (and integer zeros): `x`, where the
    result has x's type (`int_x * 1.0` is a float: not an identity)."""
    out = eqn.outputs[0]
    for keep in (0, 1):
        test = _NEUTRAL.get((eqn.prim.name, keep))
        if test is None:
            continue
        x, c = eqn.inputs[keep], eqn.inputs[1 - keep]
        if type(x) is not Var or x.aval.shape != out.aval.shape or x.aval.dtype != out.aval.dtype:
            continue
        value = _constant_value(c, consts)
        if value is not None and not np.iscomplexobj(value) and _uniform(value):
            if test(np.asarray(value).reshape(-1)[0]):
                return x
    return None


def _cse_key(eqn: Equation):
    """What makes two equations compute the same (None when it cannot be told)."""
    inputs = tuple(  # (a literal by its repr too: 0.0 and -0.0 are equal, not the same)
        id(x) if type(x) is Var else (type(x.value), x.value, repr(x.value)) for x in eqn.inputs
    )
    try:
        key = (eqn.prim, inputs, tuple(sorted(eqn.params.items())))
        hash(key)
    except TypeError:  # (unhashable params: arrays, slices)
        return None
    return key


def eliminate_dead_code(graph: Graph) -> Graph:
    """Only the equations the outputs depend on (walked backwards, no recursion)."""
    live = {v for v in graph.out_vars if type(v) is Var}
    kept = []
    for eqn in reversed(graph.equations):
        if any(v in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(x for x in eqn.inputs if type(x) is Var)
    kept.reverse()
    consts = [(v, value) for v, value in graph.consts if v in live]
    if len(kept) == len(graph.equations) and len(consts) == len(graph.consts):
        return graph
    return _replace(graph, kept, consts=consts)


__all__ = ["eliminate_dead_code", "inline_calls", "optimize", "simplify"]
