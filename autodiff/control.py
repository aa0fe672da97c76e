"""Structured control flow: cond, switch, while_loop, fori_loop, scan (JAX's lax signatures).

Outside every transform they run as Python runs them. Inside one (or `jit`), each is one
primitive whose branches and bodies are staged graphs (autodiff/staging/), so that it is one
equation of a staged graph and every transform applies to it:

- `cond_p` (cond and switch): forward mode through the chosen branch; reverse mode through
  the chosen branch's pullback; under vmap with a batched index, every branch runs and a
  select picks each member's result.
- `while_p`: forward mode (the tangents loop along); reverse mode raises, as in JAX (the
  trip count is dynamic: use scan or a fori_loop with static bounds); under vmap, the loop
  runs until every member is done, finished members unchanged.
- `scan_p` (scan, and fori_loop with static bounds): forward mode; reverse mode saves the
  residuals of each iteration, stacked, and runs the body's backward graph in reverse
  (`checkpoint` inside a body keeps only its inputs instead); vmap.

Values a branch or body closes over (an enclosing transform's tracers) become operands of
the primitive, so derivatives flow to them too.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

import autodiff.numpy as anp
from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.errors import TracerConversionError, type_str
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.core.trace import current_level
from autodiff.ops import sparsity as sp
from autodiff.ops.structural import move_to_front
from autodiff.staging.call import (
    batch_graph,
    call_p,
    differentiable,
    jvp_graph,
    restage,
    run_graph,
    split_graph,
    vjp_graph,
)
from autodiff.staging.ir import Graph, Var, eval_graph
from autodiff.staging.reroll import register_scan
from autodiff.staging.trace import stage
from autodiff.vmap.transform import vmap


def _eager() -> bool:
    """Outside every transform: control flow is Python's (Tensors record at level 0)."""
    return current_level() == 0


def _avals(leaves: list) -> list:
    """The operands' types; Python numbers stay weakly typed, as they are in eager code (a
    fori_loop's index: `x * i` keeps a float32 `x`'s dtype)."""
    return [aval_of(x) for x in leaves]


def _same_types(a: Sequence[ShapedArray], b: Sequence[ShapedArray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(a, b))


def _describe(avals) -> str:
    return "(" + ", ".join(str(a.strengthened()) for a in avals) + ")"


def _name(fun: Callable, default: str) -> str:
    return getattr(fun, "__name__", default)


def _check_callable(where: str, what: str, *funs) -> None:
    """JAX's TypeError for a function argument that is not callable (its phrase kept)."""
    if not all(callable(f) for f in funs):
        got = ", ".join(type(f).__name__ for f in funs)
        raise TypeError(f"{where}: {what} should be callable, got {got}.")


def _carry_error(where: str, tree, in_avals, out_tree, out_avals) -> TypeError:
    """JAX's message for a body whose output carry differs from its input carry."""
    if out_tree != tree:
        detail = (
            f"the input carry has structure {tree} but the output carry has structure {out_tree}"
        )
    else:
        detail = "; ".join(
            f"the input carry{name} has type {type_str(a)} but the corresponding output "
            f"carry component has type {type_str(b)}"
            for name, a, b in zip(_carry_names(len(in_avals)), in_avals, out_avals)
            if a.shape != b.shape or a.dtype != b.dtype
        )
    return TypeError(
        f"{where} body function carry input and carry output must have equal types, but they "
        f"differ: {detail}. (The body_fun output and input must have identical types: the "
        f"same structure and types, got output {out_tree} {_describe(out_avals)} for input "
        f"{tree} {_describe(in_avals)}.)"
    )


def _carry_names(n: int) -> list:
    return [""] if n == 1 else [f" component {i}" for i in range(n)]


def _promoted(flat: list, avals: list, out_avals: list) -> list | None:
    """The carry with each weakly typed leaf (a Python number) converted to the dtype the
    body gives it, as JAX does (`init=0.0` with a float32 body); None if none changes."""
    if len(out_avals) != len(avals):
        return None
    changed = False
    out = list(flat)
    for i, (a, b) in enumerate(zip(avals, out_avals)):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            out[i] = anp.asarray(flat[i], dtype=b.dtype)
            changed = True
    return out if changed else None


def _unroll_value(unroll) -> None:
    """JAX's checks of `unroll` (a performance hint: no effect on the values)."""
    if isinstance(unroll, (bool, np.bool_)):
        return
    if not isinstance(unroll, (int, np.integer)):
        raise TypeError(
            f"`unroll` must be a `bool` or a non-negative `int`, got {type(unroll).__name__}."
        )
    if unroll < 0:
        raise ValueError(f"`unroll` must be a `bool` or a non-negative `int`, got {unroll}.")


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


def _strong(avals) -> tuple:
    return tuple(a.strengthened() for a in avals)


def _moved(values, dims) -> list:
    return [v if d is None else move_to_front(v, d) for v, d in zip(values, dims)]


def _batch_size(values, dims) -> int:
    return next(v.shape[d] for v, d in zip(values, dims) if d is not None)


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
    if not branches:
        raise ValueError("switch needs at least one branch")
    if not all(callable(b) for b in branches):
        raise TypeError("switch: branches argument should be a sequence of callables.")
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
    return tree_unflatten(first.out_tree, list(outs))


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
    traced = type(pred) in TENSOR_TYPES
    shape = pred.shape if traced else np.shape(pred)
    if shape != ():
        raise TypeError(f"Pred must be a scalar, got {pred!r} of shape {shape}.")
    kind = (pred.dtype if traced else np.asarray(pred).dtype).kind
    if kind not in "biuf":
        raise TypeError(f"Pred type must be either boolean or number, got {pred!r}.")
    if _eager() and type(pred) not in TENSOR_TYPES:
        return (true_fun if bool(pred) else false_fun)(*operands)
    if type(pred) in TENSOR_TYPES:
        is_bool = pred.dtype == np.dtype(bool)
        index = anp.astype(pred if is_bool else anp.not_equal(pred, 0), np.int32)
    else:
        index = int(bool(pred))
    return switch(index, [false_fun, true_fun], *operands)


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

# ---------------------------------------------------------------------------------------------
# while_loop


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """`val = body_fun(val)` while `cond_fun(val)`, from `init_val` (JAX's lax.while_loop).

    Forward mode and vmap work through it; reverse mode does not (the number of iterations
    is only known at run time): use `scan`, or `fori_loop` with static bounds.

    Example:
        >>> import autodiff as ad
        >>> step = lambda x: lambda c: (c[0] + 1, c[1] * x)
        >>> f = lambda x: ad.while_loop(lambda c: c[0] < 5, step(x), (0, 1.0))[1]
        >>> float(ad.jit(f)(2.0)), float(ad.jvp(f, (2.0,), (1.0,))[1])
        (32.0, 80.0)
    """
    _check_callable("while_loop", "body_fun and cond_fun arguments", cond_fun, body_fun)
    if _eager():
        val = init_val
        while _truth(cond_fun(val)):
            val = body_fun(val)
        return val
    flat, in_tree = tree_flatten(init_val)
    cond_graph, cond_captured, body_graph, body_captured = _stage_while(
        cond_fun, body_fun, flat, in_tree
    )
    if len(cond_graph.out_avals) != 1:  # (the types' check is after the weak promotion)
        raise TypeError(f"cond_fun must return a boolean scalar, got {cond_graph.out_avals}.")
    promoted = _promoted(flat, _avals(flat), body_graph.out_avals)
    if promoted is not None and body_graph.out_tree == in_tree:
        flat = promoted
        cond_graph, cond_captured, body_graph, body_captured = _stage_while(
            cond_fun, body_fun, flat, in_tree
        )
    avals = _avals(flat)
    out = cond_graph.out_avals
    if out[0].shape != () or out[0].dtype != np.dtype(bool):
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) {out}.")
    if body_graph.out_tree != in_tree or not _same_types(body_graph.out_avals, avals):
        raise _carry_error("while_loop", in_tree, avals, body_graph.out_tree, body_graph.out_avals)
    outs = bind(
        while_p,
        *flat,
        *cond_captured,
        *body_captured,
        cond_graph=cond_graph,
        body_graph=body_graph,
        n_carry=len(flat),
        n_cond=len(cond_captured),
    )
    return tree_unflatten(in_tree, list(outs))


def _stage_while(cond_fun: Callable, body_fun: Callable, flat: list, in_tree) -> tuple:
    avals = _avals(flat)
    arg_tree = tree_flatten((tree_unflatten(in_tree, flat),))[1]  # (one argument: the carry)
    cond_graph, cond_captured = stage(cond_fun, avals, arg_tree, name=_name(cond_fun, "cond_fun"))
    body_graph, body_captured = stage(body_fun, avals, arg_tree, name=_name(body_fun, "body_fun"))
    return cond_graph, cond_captured, body_graph, body_captured


def _truth(value) -> bool:
    if np.shape(value) != ():
        raise TypeError(f"cond_fun must return a boolean scalar, got shape {np.shape(value)}")
    return bool(value)


while_p = Primitive("while", multiple_results=True)

# Sparsity detection runs loops of up to this many steps whose trip count it knows (exact);
# longer ones, and loops whose trip count depends on the input, iterate their carry's
# pattern to a fixed point (conservative).
UNROLL = 256


def _steps(ctx, ins, cond_graph, body_graph, n_carry, n_cond) -> tuple:
    """Run the loop on patterns while its condition's value is known (a counter's bounds;
    every value, locally): up to `UNROLL` steps unless every value is known. The carry's
    patterns and whether the loop is done."""
    carry, cond_consts = ins[:n_carry], ins[n_carry : n_carry + n_cond]
    body_consts = ins[n_carry + n_cond :]
    bounded = any(p.value is None for p in ins)
    steps = 0
    while not bounded or steps < UNROLL:
        go = ctx.run(cond_graph, carry + cond_consts, second=False)[0].value
        if go is None:
            break
        if not go:
            return carry, True
        carry = ctx.run(body_graph, carry + body_consts)
        steps += 1
    return carry, False


def _while_sparsity(ctx, ins, *, cond_graph, body_graph, n_carry, n_cond):
    """The loop run on patterns while its condition is known, then the carry's pattern
    iterated to its fixed point (any number of further steps)."""
    carry, done = _steps(ctx, ins, cond_graph, body_graph, n_carry, n_cond)
    if done:
        return carry
    ctx.inexact()
    return _fixed_point(ctx, body_graph, carry, ins[n_carry + n_cond :])[0]


def _fixed_point(ctx, body: Graph, carry: list, rest: list) -> tuple:
    """The union of the carry's patterns over any number of steps of `body(*carry, *rest)`
    (its first outputs the carry), and the body's outputs for it (with their Hessian terms)."""
    carry = [sp.union([p], p.shape, ctx.n) for p in carry]  # (values vary: unknown)
    while True:
        outs = ctx.run(body, carry + rest, second=False)
        grown = [sp.union([a, b], a.shape, ctx.n) for a, b in zip(carry, outs)]
        if sp.same(carry, grown):
            return carry, ctx.run(body, carry + rest)
        carry = grown


while_p.sparsity = sp.SparsityRule(_while_sparsity, linear=True)


def _while_impl(*operands, cond_graph, body_graph, n_carry, n_cond):
    carry = list(operands[:n_carry])
    cond_consts = operands[n_carry : n_carry + n_cond]
    body_consts = operands[n_carry + n_cond :]
    while run_graph(cond_graph, *carry, *cond_consts)[0]:
        carry = run_graph(body_graph, *carry, *body_consts)
    return tuple(carry)


while_p.impl = _while_impl
while_p.abstract_eval = lambda *avals, cond_graph, body_graph, n_carry, n_cond: _carry_avals(
    avals[:n_carry], body_graph.out_avals
)


def _carry_avals(init, out) -> tuple:
    """A loop's carry types: weak where both its initial value and the body's are."""
    return tuple(a if a.weak_type and b.weak_type else a.strengthened() for a, b in zip(init, out))


def _while_jvp(primals, tangents, *, cond_graph, body_graph, n_carry, n_cond):
    carry, cond_consts = primals[:n_carry], primals[n_carry : n_carry + n_cond]
    body_consts = primals[n_carry + n_cond :]
    t_carry, t_body = tangents[:n_carry], tangents[n_carry + n_cond :]
    body_mask = [t is not None for t in t_body]
    carry_mask = [t is not None for t in t_carry]
    while True:  # the carries with a tangent: closed under the body
        _, out_mask = jvp_graph(body_graph, tuple(carry_mask + body_mask))
        grown = [a or b for a, b in zip(carry_mask, out_mask)]
        if grown == carry_mask:
            break
        carry_mask = grown
    jgraph, _ = jvp_graph(body_graph, tuple(carry_mask + body_mask), instantiate=True)
    carry_avals = list(cond_graph.in_avals[:n_carry])
    t_carry = [
        (np.zeros(a.shape, a.dtype) if t is None else t)
        for t, a, m in zip(t_carry, carry_avals, carry_mask)
        if m
    ]
    t_body = [t for t in t_body if t is not None]
    k = len(t_carry)
    out_diff = [differentiable(a) for a in body_graph.out_avals]

    def body(*xs):  # (carry, carry tangents, body consts, their tangents)
        c, tc = xs[:n_carry], xs[n_carry : n_carry + k]
        b, tb = (
            xs[n_carry + k : n_carry + k + len(body_consts)],
            xs[n_carry + k + len(body_consts) :],
        )
        outs = eval_graph(jgraph, *c, *b, *tc, *tb)
        touts = iter(outs[n_carry:])
        t_all = [next(touts) if d else None for d in out_diff]
        return list(outs[:n_carry]) + [t for t, m in zip(t_all, carry_mask) if m]

    def cond(*xs):  # (carry, carry tangents, cond consts)
        return eval_graph(cond_graph, *xs[:n_carry], *xs[n_carry + k :])

    t_avals = [a for a, m in zip(carry_avals, carry_mask) if m]
    body_avals = carry_avals + t_avals + body_graph.in_avals[n_carry:]
    body_avals += [a for a, m in zip(body_graph.in_avals[n_carry:], body_mask) if m]
    cond_avals = carry_avals + t_avals + cond_graph.in_avals[n_carry:]
    outs = bind(
        while_p,
        *carry,
        *t_carry,
        *cond_consts,
        *body_consts,
        *t_body,
        cond_graph=restage(cond, cond_avals, f"jvp({cond_graph.name})"),
        body_graph=restage(body, body_avals, f"jvp({body_graph.name})"),
        n_carry=n_carry + k,
        n_cond=n_cond,
    )
    rest = iter(outs[n_carry:])
    return tuple(outs[:n_carry]), tuple(next(rest) if m else None for m in carry_mask)


def _while_vjp(cts, *primals, out, cond_graph, body_graph, n_carry, n_cond):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values. The number of iterations is only known at run time: try "
        "autodiff.scan, or fori_loop with static start/stop (Python ints, or values known "
        "outside jit)."
    )


def _batched_carry(body: Graph, carry_dims, other_axes: tuple, size: int) -> list:
    """Which carries a batched loop batches: those batched on entry and those the body makes
    batched, until nothing changes."""
    carry = [d is not None for d in carry_dims]
    while True:
        axes = tuple(0 if b else None for b in carry) + other_axes
        _, out_mask = batch_graph(body, axes, size)
        grown = [a or b for a, b in zip(carry, out_mask)]
        if grown == carry:
            return carry
        carry = grown


def _carry_in(values, dims, batched: list, size: int) -> list:
    """Carries moved to their batched form: batch axis first, or broadcast along one."""
    out = []
    for v, d, b in zip(values, dims, batched):
        if d is not None:
            v = move_to_front(v, d)
        elif b:
            v = anp.broadcast_to(v, (size, *np.shape(v)))
        out.append(v)
    return out


def _while_batch(values, dims, *, cond_graph, body_graph, n_carry, n_cond):
    size = _batch_size(values, dims)
    consts = _moved(values[n_carry:], dims[n_carry:])
    const_axes = tuple(None if d is None else 0 for d in dims[n_carry:])
    cond_axes, body_axes = const_axes[:n_cond], const_axes[n_cond:]
    batched = _batched_carry(body_graph, dims[:n_carry], body_axes, size)
    carry_axes = tuple(0 if b else None for b in batched)
    cond_b, (pred_batched,) = batch_graph(cond_graph, carry_axes + cond_axes, size)
    if not pred_batched:  # one trip count for every member
        carry = _carry_in(values[:n_carry], dims[:n_carry], batched, size)
        body_b, _ = batch_graph(body_graph, carry_axes + body_axes, size, force=tuple(batched))
        outs = bind(
            while_p,
            *carry,
            *consts,
            cond_graph=cond_b,
            body_graph=body_b,
            n_carry=n_carry,
            n_cond=n_cond,
        )
        return outs, carry_axes
    # Each member stops on its own: every carry batched, the members done kept as they are.
    every = (0,) * n_carry
    carry = _carry_in(values[:n_carry], dims[:n_carry], [True] * n_carry, size)
    cond_b, _ = batch_graph(cond_graph, every + cond_axes, size, force=(True,))
    body_b, _ = batch_graph(body_graph, every + body_axes, size, force=(True,) * n_carry)

    def cond(*xs):  # (carry, cond consts, body consts): is any member not done?
        return [anp.any(eval_graph(cond_b, *xs[:n_carry], *xs[n_carry : n_carry + n_cond])[0])]

    def body(*xs):
        c, cc, bc = xs[:n_carry], xs[n_carry : n_carry + n_cond], xs[n_carry + n_cond :]
        going = eval_graph(cond_b, *c, *cc)[0]
        new = eval_graph(body_b, *c, *bc)
        return [
            anp.where(anp.reshape(going, (size,) + (1,) * (len(v.shape) - 1)), v, old)
            for v, old in zip(new, c)
        ]

    avals = _avals(carry) + _avals(consts)
    outs = bind(  # (both graphs take every const: they are passed once for each)
        while_p,
        *carry,
        *consts,
        *consts,
        cond_graph=restage(cond, avals, f"vmap({cond_graph.name})"),
        body_graph=restage(body, avals, f"vmap({body_graph.name})"),
        n_carry=n_carry,
        n_cond=len(consts),
    )
    return outs, every


while_p.jvp = _while_jvp
while_p.jvp_computes_primal = True
while_p.vjp = _while_vjp
while_p.batch = _while_batch

# ---------------------------------------------------------------------------------------------
# scan and fori_loop


def scan(
    f: Callable,
    init,
    xs=None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
):
    """`carry, y = f(carry, x)` for each `x` of `xs` along its first axis, from `init`; returns
    the last carry and the `y`s stacked (JAX's lax.scan). `xs` may be None with `length`.

    Reverse mode saves each iteration's residuals (stacked) and runs the body's backward
    computation in reverse; wrap the body in `checkpoint` to save only its inputs. `unroll`
    (a bool or a non-negative int) is JAX's performance hint, checked as JAX checks it; it
    changes no value. A Python number in `init` takes the dtype the body gives it (JAX's
    weak types: `init=0.0` with float32 `xs`).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> cumsum = lambda xs: ad.scan(lambda c, x: (c + x, c + x), 0.0, xs)[1]
        >>> cumsum(np.arange(4.0)), ad.grad(lambda xs: anp.sum(cumsum(xs)))(np.ones(3))
        (array([0., 1., 3., 6.]), array([3., 2., 1.]))
    """
    _check_callable("scan", "f argument", f)
    _unroll_value(unroll)
    xs_flat, xs_tree = tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    if _eager():
        return _scan_python(f, init, xs_flat, xs_tree, length, reverse)
    init_flat, init_tree = tree_flatten(init)
    body, captured = _stage_scan(f, init_flat, init_tree, xs_flat, xs_tree)
    n = len(init_flat)
    promoted = _promoted(init_flat, _avals(init_flat), body.out_avals[:n])
    if promoted is not None and body.out_tree.children[0] == init_tree:
        init_flat = promoted
        body, captured = _stage_scan(f, init_flat, init_tree, xs_flat, xs_tree)
    carry_tree, y_tree = body.out_tree.children
    carry_avals = _avals(init_flat)
    if carry_tree != init_tree or not _same_types(body.out_avals[:n], carry_avals):
        raise _carry_error("scan", init_tree, carry_avals, carry_tree, body.out_avals[:n])
    outs = bind(
        scan_p,
        *init_flat,
        *xs_flat,
        *captured,
        body=body,
        length=length,
        reverse=bool(reverse),
        n_carry=n,
        n_xs=len(xs_flat),
    )
    return tree_unflatten(init_tree, list(outs[:n])), tree_unflatten(y_tree, list(outs[n:]))


def _stage_scan(f: Callable, init_flat: list, init_tree, xs_flat: list, xs_tree) -> tuple:
    """The body staged for a carry `init_flat` and one slice of `xs_flat`: graph, captured."""
    carry_avals = _avals(init_flat)
    x_avals = [ShapedArray(a.shape[1:], a.dtype) for a in _avals(xs_flat)]
    in_tree = tree_flatten(
        (tree_unflatten(init_tree, init_flat), tree_unflatten(xs_tree, x_avals))
    )[1]
    return stage(lambda c, x: _pair(f(c, x)), carry_avals + x_avals, in_tree, name=_name(f, "f"))


def _pair(out):
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"scan's body must return a pair (carry, y), got {type(out).__name__}")
    return out


def _scan_length(xs_flat: list, length) -> int:
    lengths = {(x.shape if type(x) in TENSOR_TYPES else np.shape(x))[0] for x in xs_flat}
    if length is not None:
        lengths.add(int(length))
    if not lengths:
        raise ValueError("scan needs xs, or length when xs is None")
    if len(lengths) > 1:
        raise ValueError(
            f"scan got inconsistent lengths: {sorted(lengths)} (xs' first axes, length)"
        )
    return lengths.pop()


def _scan_python(f, init, xs_flat, xs_tree, length: int, reverse: bool):
    carry, ys = init, []
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        carry, y = _pair(f(carry, tree_unflatten(xs_tree, [x[i] for x in xs_flat])))
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys:  # (the ys' types, from the body staged once)
        x_avals = [ShapedArray(a.shape[1:], a.dtype) for a in _avals(xs_flat)]
        init_flat, init_tree = tree_flatten(init)
        in_tree = tree_flatten((init, tree_unflatten(xs_tree, x_avals)))[1]
        body, _ = stage(lambda c, x: _pair(f(c, x)), _avals(init_flat) + x_avals, in_tree)
        y_tree = body.out_tree.children[1]
        y_avals = body.out_avals[len(init_flat) :]
        return carry, tree_unflatten(y_tree, [np.zeros((0, *a.shape), a.dtype) for a in y_avals])
    flat = [tree_flatten(y)[0] for y in ys]
    y_tree = tree_flatten(ys[0])[1]
    return carry, tree_unflatten(y_tree, [anp.stack(list(col)) for col in zip(*flat)])


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """`val = body_fun(i, val)` for `i` in `range(lower, upper)` (JAX's lax.fori_loop). With
    bounds known at trace time (Python ints, NumPy values, or an enclosing `grad`'s values,
    never a staged one) it is a `scan` (reverse mode works); with staged bounds a
    `while_loop` (forward mode only). `unroll` is accepted as JAX accepts it (static bounds
    only); it changes no value.

    Example:
        >>> import autodiff as ad
        >>> f = lambda x: ad.fori_loop(0, 3, lambda i, v: v * x + i, 1.0)
        >>> float(f(2.0)), float(ad.grad(f)(2.0)), float(ad.grad(ad.jit(f))(2.0))
        (12.0, 13.0, 13.0)
    """
    _check_callable("fori_loop", "body_fun argument", body_fun)
    if unroll is not None:
        _unroll_value(unroll)
    bounds = _concrete_bound(lower), _concrete_bound(upper)
    if None not in bounds and _eager():
        val = init_val
        for i in range(*bounds):
            val = body_fun(i, val)
        return val
    if None not in bounds:
        start, stop = bounds

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, val), _ = scan(step, (start, init_val), None, length=max(stop - start, 0))
        return val
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            "Can only use `unroll` in `fori_loop` if the loop bounds are statically known."
        )
    _, _, val = while_loop(
        lambda c: c[0] < c[1],
        lambda c: (c[0] + 1, c[1], body_fun(c[0], c[2])),
        (lower, upper, init_val),
    )
    return val


def _concrete_bound(bound) -> int | None:
    """A loop bound's value if it is known now (as JAX's `core.is_concrete`): a number, an
    array, or a tracer of `grad`/`jvp` over one; None for a staged or batched value."""
    if type(bound) in TENSOR_TYPES:
        try:
            bound = bound.primal()
        except TracerConversionError:  # (staged: ConcretizationError; vmapped: no one value)
            return None
    value = np.asarray(bound)
    if value.shape != () or value.dtype.kind not in "iufb":
        return None
    return int(value)


scan_p = Primitive("scan", multiple_results=True)


def _scan_sparsity(ctx, ins, *, body, length, reverse, n_carry, n_xs):
    """Up to `UNROLL` steps (or with every value known), the scan run on patterns (exact);
    longer ones, the carry's fixed point with every step's xs at once (conservative)."""
    carry, xs, consts = ins[:n_carry], ins[n_carry : n_carry + n_xs], ins[n_carry + n_xs :]
    if length <= UNROLL or all(p.value is not None for p in ins):
        ys: list = []
        for i in range(length - 1, -1, -1) if reverse else range(length):
            outs = ctx.run(body, carry + [sp.item(x, i) for x in xs] + consts)
            carry = outs[:n_carry]
            ys.append(outs[n_carry:])
        if reverse:
            ys.reverse()
        avals = ctx.out_avals[n_carry:]
        return carry + [sp.stacked([y[j] for y in ys], a.shape) for j, a in enumerate(avals)]
    ctx.inexact()
    every = [sp.reduce_axes(x, (0,)) for x in xs]
    carry, outs = _fixed_point(ctx, body, carry, every + consts)
    ys = [sp.broadcast(y, a.shape) for y, a in zip(outs[n_carry:], ctx.out_avals[n_carry:])]
    return carry + ys


scan_p.sparsity = sp.SparsityRule(_scan_sparsity, exact=True, linear=True)


def _scan_impl(*operands, body, length, reverse, n_carry, n_xs):
    carry = list(operands[:n_carry])
    xs = operands[n_carry : n_carry + n_xs]
    consts = operands[n_carry + n_xs :]
    ys = [np.empty((length, *a.shape), a.dtype) for a in body.out_avals[n_carry:]]
    for i in range(length - 1, -1, -1) if reverse else range(length):
        outs = run_graph(body, *carry, *[x[i] for x in xs], *consts)
        carry = outs[:n_carry]
        for y, value in zip(ys, outs[n_carry:]):
            y[i] = value
    return (*carry, *ys)


def _scan_abstract_eval(*avals, body, length, reverse, n_carry, n_xs):
    ys = [ShapedArray((length, *a.shape), a.dtype) for a in body.out_avals[n_carry:]]
    return _carry_avals(avals[:n_carry], body.out_avals[:n_carry]) + tuple(ys)


scan_p.impl = _scan_impl
scan_p.abstract_eval = _scan_abstract_eval


def _scan_jvp(primals, tangents, *, body, length, reverse, n_carry, n_xs):
    masks = [t is not None for t in tangents]
    carry_mask, rest_mask = masks[:n_carry], masks[n_carry:]
    while True:  # the carries with a tangent: closed under the body
        _, out_mask = jvp_graph(body, tuple(carry_mask + rest_mask))
        grown = [a or b for a, b in zip(carry_mask, out_mask[:n_carry])]
        if grown == carry_mask:
            break
        carry_mask = grown
    in_mask = tuple(carry_mask + rest_mask)
    jgraph, _ = jvp_graph(body, in_mask, instantiate=True)
    avals = body.in_avals
    ts = [
        (np.zeros(a.shape, a.dtype) if t is None else t) if m else None
        for t, a, m in zip(
            tangents, [*avals[:n_carry], *_stacked(avals, n_carry, n_xs, length)], in_mask
        )
    ]
    groups = _groups(primals, ts, n_carry, n_xs)  # (carry, t_carry, xs, t_xs, consts, t_consts)
    sizes = [len(g) for g in groups]
    out_diff = [differentiable(a) for a in body.out_avals]
    n_y = len(body.out_avals) - n_carry

    def step(*xs):
        c, tc, x, tx, k, tk = _ungroup(xs, sizes)
        outs = eval_graph(jgraph, *c, *x, *k, *tc, *tx, *tk)
        touts = iter(outs[n_carry + n_y :])
        t_all = [next(touts) if d else None for d in out_diff]
        t_carry = [t for t, m in zip(t_all[:n_carry], carry_mask) if m]
        t_ys = [t for t in t_all[n_carry:] if t is not None]
        return list(outs[:n_carry]) + t_carry + list(outs[n_carry : n_carry + n_y]) + t_ys

    step_avals = [aval_of(v).strengthened() for v in groups[0] + groups[1]]
    step_avals += [
        ShapedArray(aval_of(v).shape[1:], aval_of(v).dtype) for v in groups[2] + groups[3]
    ]
    step_avals += [aval_of(v).strengthened() for v in groups[4] + groups[5]]
    outs = bind(
        scan_p,
        *groups[0],
        *groups[1],
        *groups[2],
        *groups[3],
        *groups[4],
        *groups[5],
        body=restage(step, step_avals, f"jvp({body.name})"),
        length=length,
        reverse=reverse,
        n_carry=sizes[0] + sizes[1],
        n_xs=sizes[2] + sizes[3],
    )
    k_c = sizes[1]
    carry_out, t_carry_out = outs[:n_carry], iter(outs[n_carry : n_carry + k_c])
    ys = outs[n_carry + k_c : n_carry + k_c + n_y]
    t_ys = iter(outs[n_carry + k_c + n_y :])
    t_carry = [next(t_carry_out) if m else None for m in carry_mask]
    t_y = [next(t_ys) if d else None for d in out_diff[n_carry:]]
    return (*carry_out, *ys), (*t_carry, *t_y)


def _stacked(avals, n_carry, n_xs, length):
    """The avals of a scan's xs (stacked slices) and consts, from its body's inputs."""
    xs = [ShapedArray((length, *a.shape), a.dtype) for a in avals[n_carry : n_carry + n_xs]]
    return xs + list(avals[n_carry + n_xs :])


def _groups(primals, tangents, n_carry, n_xs) -> list:
    """(carry, carry tangents, xs, xs tangents, consts, consts tangents)."""
    parts = []
    for lo, hi in ((0, n_carry), (n_carry, n_carry + n_xs), (n_carry + n_xs, len(primals))):
        parts.append(list(primals[lo:hi]))
        parts.append([t for t in tangents[lo:hi] if t is not None])
    return parts


def _ungroup(xs, sizes) -> list:
    out, start = [], 0
    for size in sizes:
        out.append(xs[start : start + size])
        start += size
    return out


def _scan_fwd(*operands, body, length, reverse, n_carry, n_xs):
    fwd_body, _, _ = split_graph(body)
    outs = bind(
        scan_p, *operands, body=fwd_body, length=length, reverse=reverse, n_carry=n_carry, n_xs=n_xs
    )
    n_out = len(body.out_vars)
    return tuple(outs[:n_out]), tuple(outs[n_out:])


def _scan_vjp(cts, *operands, out, body, length, reverse, n_carry, n_xs, residuals=None):
    if residuals is None:  # (the torch face's level 0: recompute them)
        _, residuals = _scan_fwd(
            *operands, body=body, length=length, reverse=reverse, n_carry=n_carry, n_xs=n_xs
        )
    _, bwd_body, in_mask = split_graph(body)
    out_avals = [a.strengthened() for a in body.out_avals]
    in_avals = [a.strengthened() for a in body.in_avals]
    ct_carry = [
        np.zeros(a.shape, a.dtype) if c is None else c
        for c, a in zip(cts[:n_carry], out_avals)
        if differentiable(a)
    ]
    ct_ys = [
        np.zeros((length, *a.shape), a.dtype) if c is None else c
        for c, a in zip(cts[n_carry:], out_avals[n_carry:])
        if differentiable(a)
    ]
    const_avals = [a for a, m in zip(in_avals[n_carry + n_xs :], in_mask[n_carry + n_xs :]) if m]
    acc = [np.zeros(a.shape, a.dtype) for a in const_avals]
    n_cc, n_acc, n_cy = len(ct_carry), len(acc), len(ct_ys)
    carry_in_mask = in_mask[:n_carry]
    x_in_mask = in_mask[n_carry : n_carry + n_xs]

    def step(*xs):  # (carry cts, consts' cts so far, ys' cts, residuals) of one iteration
        c, a, cy, res = _ungroup(xs, [n_cc, n_acc, n_cy, len(residuals)])
        grads = iter(eval_graph(bwd_body, *c, *cy, *res))
        ct_c = [next(grads) for m in carry_in_mask if m]
        ct_x = [next(grads) for m in x_in_mask if m]
        ct_k = list(grads)
        return ct_c + [anp.add(s, g) for s, g in zip(a, ct_k)] + ct_x

    step_avals = _avals(ct_carry) + _avals(acc)
    step_avals += [ShapedArray(aval_of(v).shape[1:], aval_of(v).dtype) for v in ct_ys]
    step_avals += [ShapedArray(aval_of(v).shape[1:], aval_of(v).dtype) for v in residuals]
    outs = bind(
        scan_p,
        *ct_carry,
        *acc,
        *ct_ys,
        *residuals,
        body=restage(step, step_avals, f"bwd({body.name})"),
        length=length,
        reverse=not reverse,
        n_carry=n_cc + n_acc,
        n_xs=n_cy + len(residuals),
    )
    ct_init = iter(outs[:n_cc])
    ct_consts = iter(outs[n_cc : n_cc + n_acc])
    ct_xs = iter(outs[n_cc + n_acc :])
    result = [next(ct_init) if m else None for m in carry_in_mask]
    result += [next(ct_xs) if m else None for m in x_in_mask]
    result += [next(ct_consts) if m else None for m in in_mask[n_carry + n_xs :]]
    return tuple(result)


def _scan_batch(values, dims, *, body, length, reverse, n_carry, n_xs):
    size = _batch_size(values, dims)
    xs = [  # (the batch axis second: each slice has it first)
        v if d is None else anp.moveaxis(v, d, 1)
        for v, d in zip(values[n_carry : n_carry + n_xs], dims[n_carry : n_carry + n_xs])
    ]
    consts = _moved(values[n_carry + n_xs :], dims[n_carry + n_xs :])
    other_axes = tuple(None if d is None else 0 for d in dims[n_carry:])
    batched = _batched_carry(body, dims[:n_carry], other_axes, size)
    carry = _carry_in(values[:n_carry], dims[:n_carry], batched, size)
    n_y = len(body.out_vars) - n_carry
    force = tuple(batched) + (False,) * n_y
    axes = tuple(0 if b else None for b in batched) + other_axes
    body_b, out_mask = batch_graph(body, axes, size, force=force)
    outs = bind(
        scan_p,
        *carry,
        *xs,
        *consts,
        body=body_b,
        length=length,
        reverse=reverse,
        n_carry=n_carry,
        n_xs=n_xs,
    )
    carry_dims = tuple(0 if b else None for b in batched)
    return outs, carry_dims + tuple(1 if m else None for m in out_mask[n_carry:])


scan_p.jvp = _scan_jvp
scan_p.jvp_computes_primal = True
scan_p.fwd = _scan_fwd
scan_p.vjp = _scan_vjp
scan_p.batch = _scan_batch
register_scan(scan_p)  # (the compile path rerolls unrolled loops into scans: staging/reroll.py)


# ---------------------------------------------------------------------------------------------
# map


def map(f: Callable, xs, *, batch_size: int | None = None):
    """`f` applied to each slice of `xs` along its leading axis, the results stacked (JAX's
    `lax.map`): `np.stack([f(x) for x in xs])` for an array, any pytree of arrays of one
    leading length in general.

    It is a `scan`, so it differentiates, batches and stages (one equation under `jit`,
    whatever the length), and runs one slice at a time: less memory than `vmap`. With
    `batch_size`, `f` is vmapped over chunks of that many slices, and the chunks run one
    after the other; the slices left over (when `batch_size` does not divide the length)
    run as one more vmapped chunk. `batch_size=0` is `vmap(f)` over everything.

    Arguments:
        f: a function of one slice (a pytree like `xs`, each leaf without its leading axis).
        xs: a pytree of arrays, all of one leading length.
        batch_size: how many slices each step computes at once (vmapped), or None for one.

    Returns:
        The outputs of `f`, each stacked along a new leading axis.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> xs = np.arange(6.0).reshape(3, 2)
        >>> ad.map(lambda x: anp.sum(x ** 2), xs)
        array([ 1., 13., 41.])
        >>> ad.map(lambda x: anp.sum(x ** 2), xs, batch_size=2)
        array([ 1., 13., 41.])
        >>> ad.grad(lambda xs: anp.sum(ad.map(lambda x: anp.sin(x[0]) * x[1], xs)))(xs)[0]
        array([1., 0.])
    """
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    batch_size = operator.index(batch_size)
    if batch_size < 0:
        raise ValueError(f"map's batch_size must be a non-negative int, got {batch_size}")
    leaves, tree = tree_flatten(xs)
    length = _scan_length(leaves, None)
    if length == 0:
        return map(f, xs)
    steps, left = (0, length) if batch_size == 0 else divmod(length, batch_size)
    mapped = vmap(f)
    done = steps * batch_size
    ys = None
    if steps:
        chunks = [_reshaped(x[:done], (steps, batch_size)) for x in leaves]
        ys = scan(lambda _, x: ((), mapped(x)), (), tree_unflatten(tree, chunks))[1]
        ys = tree_map(lambda y: _reshaped(y, (done,), 2), ys)
    if left:
        rest = mapped(tree_unflatten(tree, [x[done:] for x in leaves]))
        ys = rest if ys is None else tree_map(lambda a, b: anp.concatenate([a, b]), ys, rest)
    return ys


def _reshaped(x, lead: tuple, drop: int = 1):
    """`x` with its first `drop` axes replaced by axes of the sizes `lead`."""
    shape = x.shape if type(x) in TENSOR_TYPES else np.shape(x)
    return anp.reshape(x, lead + tuple(shape[drop:]))


__all__ = ["cond", "fori_loop", "map", "scan", "switch", "while_loop"]
