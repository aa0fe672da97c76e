"""`cond` and `switch`: `cond_p`, one staged graph per branch (see autodiff/control/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import autodiff.numpy as anp
from autodiff.control.common import (
    _avals,
    _batch_size,
    _check_callable,
    _describe,
    _eager,
    _forward_unchanged,
    _moved,
    _name,
    _same_types,
)
from autodiff.core.abstract import aval_of
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.ops import sparsity as sp
from autodiff.ops.structural import move_to_front
from autodiff.staging.call import (
    batch_graph,
    call_p,
    differentiable,
    jvp_graph,
    run_graph,
    vjp_graph,
)
from autodiff.staging.ir import Graph, Var
from autodiff.staging.trace import stage


class _Staged:
    """Functions staged for the same operands; each graph then takes the operands and the
    values *every* function closed over (its own where it has one, else unused)."""

    def __init__(self, funs: Sequence[Callable], avals: list, in_tree, names: Sequence[str]):
        staged = [stage(f, avals, in_tree, name=n) for f, n in zip(funs, names)]
        self.captured: list = []
        seen: set = set()
        for _, captured in staged:
            for value in captured:
                if id(value) not in seen:
                    seen.add(id(value))
                    self.captured.append(value)
        self.graphs = [self._extend(g, c) for g, c in staged]

    def _extend(self, graph: Graph, captured: list) -> Graph:
        n = len(graph.in_vars) - len(captured)
        own = {id(value): var for value, var in zip(captured, graph.in_vars[n:])}
        extra = [own.get(id(v)) or Var(aval_of(v).strengthened()) for v in self.captured]
        return Graph(
            graph.in_vars[:n] + extra,
            graph.consts,
            graph.equations,
            graph.out_vars,
            graph.in_tree,
            graph.out_tree,
            graph.name,
        )


# ---------------------------------------------------------------------------------------------
# cond and switch


def switch(index, branches: Sequence[Callable], *operands):
    """`branches[index](*operands)`, the index clamped to the branches (JAX's lax.switch).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> branches = [lambda x: x * 10.0, lambda x: x + 1.0, lambda x: -x]
        >>> f = ad.jit(lambda i, x: ad.switch(i, branches, x))
        >>> float(ad.switch(1, branches, 2.0)), float(f(5, 2.0))
        (3.0, -2.0)
    """
    branches = list(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    _check_index(index)
    if not branches:
        raise ValueError("Empty branch sequence")
    if _eager() and type(index) not in TENSOR_TYPES:
        return branches[_clamp(int(index), len(branches))](*operands)
    flat, in_tree = tree_flatten(operands)
    avals = _avals(flat)
    names = [_name(b, f"branch {i}") for i, b in enumerate(branches)]
    staged = _Staged(branches, avals, in_tree, names)
    first = staged.graphs[0]
    for i, graph in enumerate(staged.graphs[1:], 1):
        if graph.out_tree != first.out_tree or not _same_types(graph.out_avals, first.out_avals):
            raise TypeError(
                "cond branches must have equal output types (and the same pytree structure), "
                "but they differ. The branches of cond/switch must return the same structure "
                "and types: branch "
                f"0 returns {first.out_tree} {_describe(first.out_avals)}, branch {i} returns "
                f"{graph.out_tree} {_describe(graph.out_avals)}."
            )
    index = _index_value(index)
    outs = bind(cond_p, index, *flat, *staged.captured, branches=tuple(staged.graphs))
    return tree_unflatten(first.out_tree, _forward_unchanged(outs, staged.graphs, flat))


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)` (JAX's lax.cond).

    Under a transform or jit both functions are staged (and must return the same structure
    and types); under vmap with a batched predicate, both run and each member gets its own.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> f = lambda x: ad.cond(x > 0, lambda x: x ** 2, lambda x: -x, x)
        >>> float(ad.grad(f)(3.0)), float(ad.grad(f)(-3.0)), ad.vmap(f)(np.array([-2.0, 2.0]))
        (6.0, -1.0, array([2., 4.]))
    """
    _check_callable("cond", "true_fun and false_fun arguments", true_fun, false_fun)
    _check_pred(pred)
    if _eager() and type(pred) not in TENSOR_TYPES:
        return (true_fun if bool(pred) else false_fun)(*operands)
    if type(pred) in TENSOR_TYPES:
        is_bool = pred.dtype == np.dtype(bool)
        index = anp.astype(pred if is_bool else anp.not_equal(pred, 0), np.int32)
    else:
        index = int(bool(pred))
    return switch(index, [false_fun, true_fun], *operands)


def _check_pred(pred) -> None:
    """JAX's checks of cond's predicate: a boolean or number scalar."""
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or _shape(pred) != ():
        got = f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {_shape(pred)}."
        raise TypeError(f"Pred must be a scalar, got {pred} of {got}")
    try:
        kind = _dtype(pred).kind
    except TypeError as e:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from e
    if kind not in "biuf":
        raise TypeError(f"Pred type must be either boolean or number, got {_dtype(pred)}.")


def _check_index(index) -> None:
    """JAX's checks of switch's index: an integer scalar."""
    if _shape(index) != ():
        raise TypeError(f"Branch index must be scalar, got {index} of shape {_shape(index)}.")
    try:
        dtype = _dtype(index)
    except TypeError as e:
        raise TypeError(f"Index type must be an integer, got {index}.") from e
    if dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {dtype}")


def _shape(x) -> tuple:
    return tuple(x.shape) if type(x) in TENSOR_TYPES else np.shape(x)


def _dtype(x) -> np.dtype:
    return x.dtype if type(x) in TENSOR_TYPES else np.result_type(x)


def _clamp(i: int, n: int) -> int:
    return min(max(i, 0), n - 1)


def _index_value(index):
    if type(index) in TENSOR_TYPES:
        dtype = index.dtype
        if dtype.kind not in "iub" or index.shape != ():
            raise TypeError(
                f"switch's index must be an integer scalar, got {index.dtype}{index.shape}"
            )
        return index
    value = np.asarray(index)
    if value.shape != () or value.dtype.kind not in "iub":
        raise TypeError(f"switch's index must be an integer scalar, got {index!r}")
    return int(value)


cond_p = Primitive("cond", multiple_results=True)


def _cond_sparsity(ctx, ins, *, branches):
    """The union of the branches' patterns; the branch taken when the index is known."""
    index, operands = ins[0], ins[1:]
    if index.value is not None:
        branches = (branches[_clamp(int(index.value), len(branches))],)
    elif len(branches) > 1:
        ctx.inexact()
    results = [ctx.run(graph, operands) for graph in branches]
    return [
        sp.union([r[j] for r in results], aval.shape, ctx.n) for j, aval in enumerate(ctx.out_avals)
    ]


# (the branches add their second-order terms as they run)
cond_p.sparsity = sp.SparsityRule(_cond_sparsity, exact=True, linear=True)


def _cond_impl(index, *operands, branches):
    return run_graph(branches[_clamp(int(index), len(branches))], *operands)


cond_p.impl = _cond_impl


def _cond_abstract_eval(index, *avals, branches):
    outs = [g.out_avals for g in branches]  # (weak where every branch's output is)
    return tuple(
        a if all(o[i].weak_type for o in outs) else a.strengthened() for i, a in enumerate(outs[0])
    )


cond_p.abstract_eval = _cond_abstract_eval


def _cond_jvp(primals, tangents, *, branches):
    index, operands, ts = primals[0], primals[1:], tangents[1:]
    mask = tuple(t is not None for t in ts)
    jgraphs = tuple(jvp_graph(g, mask, instantiate=True)[0] for g in branches)
    results = bind(cond_p, index, *operands, *[t for t in ts if t is not None], branches=jgraphs)
    n = len(branches[0].out_vars)
    rest = iter(results[n:])
    touts = tuple(next(rest) if differentiable(a) else None for a in branches[0].out_avals)
    return tuple(results[:n]), touts


def _cond_vjp(cts, index, *operands, out, branches):
    ct_mask = tuple(c is not None for c in cts)
    vgraphs = tuple(vjp_graph(g, ct_mask, instantiate=True)[0] for g in branches)
    results = iter(
        bind(cond_p, index, *operands, *[c for c in cts if c is not None], branches=vgraphs)
    )
    in_cts = [next(results) if differentiable(a) else None for a in branches[0].in_avals]
    return (None, *in_cts)


def _cond_batch(values, dims, *, branches):
    index, operands, idim, odims = values[0], values[1:], dims[0], dims[1:]
    size = _batch_size(values, dims)
    moved = _moved(operands, odims)
    in_axes = tuple(None if d is None else 0 for d in odims)
    n_out = len(branches[0].out_vars)
    bgraphs = tuple(batch_graph(g, in_axes, size, force=(True,) * n_out)[0] for g in branches)
    if idim is None:
        return bind(cond_p, index, *moved, branches=bgraphs), (0,) * n_out
    # A batched index: every branch runs, each member takes its own branch's results.
    index = anp.clip(move_to_front(index, idim), 0, len(branches) - 1)
    results = [bind(call_p, *moved, graph=g) for g in bgraphs]
    outs = []
    for j in range(n_out):
        out = results[0][j]
        for b in range(1, len(branches)):
            chosen = anp.reshape(anp.equal(index, b), (size,) + (1,) * (len(out.shape) - 1))
            out = anp.where(chosen, results[b][j], out)
        outs.append(out)
    return outs, (0,) * n_out


cond_p.jvp = _cond_jvp
cond_p.jvp_computes_primal = True
cond_p.vjp = _cond_vjp
cond_p.batch = _cond_batch
