"""`while_loop`: `while_p`, its condition and body staged graphs (see autodiff/control/)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
from autodiff.control.common import (
    _avals,
    _batch_size,
    _carry_error,
    _check_callable,
    _check_carry,
    _eager,
    _forward_unchanged,
    _moved,
    _name,
    _promoted,
    _same_types,
)
from autodiff.core.abstract import aval_of
from autodiff.core.errors import type_str
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import LEAF, tree_flatten, tree_unflatten
from autodiff.ops import sparsity as sp
from autodiff.ops.structural import move_to_front
from autodiff.staging.call import (
    batch_graph,
    differentiable,
    jvp_graph,
    restage,
    run_graph,
)
from autodiff.staging.ir import Graph, eval_graph
from autodiff.staging.linearize import ReverseModeError
from autodiff.staging.trace import stage

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
        val, first = init_val, True
        while _truth(cond_fun(val)):
            new = body_fun(val)
            if first:
                _check_carry("while_loop", body_fun, val, new)
            val, first = new, False
        return val
    flat, in_tree = tree_flatten(init_val)
    cond_graph, cond_captured, body_graph, body_captured = _stage_while(
        cond_fun, body_fun, flat, in_tree
    )
    if cond_graph.out_tree != LEAF:  # (the types' check is after the weak promotion)
        raise TypeError(
            f"cond_fun must return a boolean scalar, but got pytree {cond_graph.out_tree}."
        )
    promoted = _promoted(flat, _avals(flat), body_graph.out_avals)
    if promoted is not None and body_graph.out_tree == in_tree:
        flat = promoted
        cond_graph, cond_captured, body_graph, body_captured = _stage_while(
            cond_fun, body_fun, flat, in_tree
        )
    avals = _avals(flat)
    out = cond_graph.out_avals
    if out[0].shape != () or out[0].dtype != np.dtype(bool):
        raise TypeError(_not_boolean(out[0]))
    if body_graph.out_tree != in_tree or not _same_types(body_graph.out_avals, avals):
        raise _carry_error(
            "while_loop", in_tree, avals, body_graph.out_tree, body_graph.out_avals, body_fun
        )
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
    return tree_unflatten(in_tree, _forward_unchanged(outs, [body_graph], flat, True))


def _stage_while(cond_fun: Callable, body_fun: Callable, flat: list, in_tree) -> tuple:
    avals = _avals(flat)
    arg_tree = tree_flatten((tree_unflatten(in_tree, flat),))[1]  # (one argument: the carry)
    cond_graph, cond_captured = stage(cond_fun, avals, arg_tree, name=_name(cond_fun, "cond_fun"))
    body_graph, body_captured = stage(body_fun, avals, arg_tree, name=_name(body_fun, "body_fun"))
    return cond_graph, cond_captured, body_graph, body_captured


def _not_boolean(aval) -> str:
    got = f"[ShapedArray({type_str(aval)})]"
    return f"cond_fun must return a boolean scalar, but got output type(s) {got}."


def _truth(value) -> bool:
    """An eagerly run cond_fun's answer, checked as JAX checks the staged one."""
    leaves, tree = tree_flatten(value)
    if tree != LEAF:
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {tree}.")
    aval = aval_of(value)
    if aval.shape != () or aval.dtype != np.dtype(bool):
        raise TypeError(_not_boolean(aval))
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
    raise ReverseModeError(
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
