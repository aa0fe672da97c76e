"""`scan`, `fori_loop` and `map`: `scan_p`, its body a staged graph (see autodiff/control/)."""

from __future__ import annotations

import operator
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
    _moved,
    _name,
    _promoted,
    _same_types,
)
from autodiff.control.whiles import (
    UNROLL,
    _batched_carry,
    _carry_avals,
    _carry_in,
    _fixed_point,
    while_loop,
)
from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.errors import TracerConversionError, type_str
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import LEAF, tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.ops import sparsity as sp
from autodiff.staging.call import (
    batch_graph,
    differentiable,
    jvp_graph,
    restage,
    run_graph,
    split_graph,
)
from autodiff.staging.ir import eval_graph
from autodiff.staging.reroll import register_scan
from autodiff.staging.trace import stage
from autodiff.vmap.transform import vmap


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
        raise _carry_error("scan", init_tree, carry_avals, carry_tree, body.out_avals[:n], f)
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
        leaves, tree = tree_flatten(out)
        got = type_str(leaves[0]) if tree == LEAF else str(tree)
        raise TypeError(f"scan body output must be a pair, got {got}.")
    return out


def _scan_length(xs_flat: list, length) -> int:
    """The trip count, or JAX's ValueError for inconsistent leading axes and `length`."""
    sizes = [(x.shape if type(x) in TENSOR_TYPES else np.shape(x))[0] for x in xs_flat]
    if length is not None:
        if any(n != int(length) for n in sizes):
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with leading axis "
                f"sizes {sizes}."
            )
        return int(length)
    if not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(sizes)) > 1:
        listed = ", ".join(str(n) for n in sizes)
        raise ValueError(f"scan got values with different leading axis sizes: {listed}.")
    return sizes[0]


def _scan_python(f, init, xs_flat, xs_tree, length: int, reverse: bool):
    carry, ys = init, []
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        new, y = _pair(f(carry, tree_unflatten(xs_tree, [x[i] for x in xs_flat])))
        if not ys:
            _check_carry("scan", f, carry, new)
        carry = new
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
    _check_bound_types(lower, upper)
    bounds = _concrete_bound(lower), _concrete_bound(upper)
    if None not in bounds and _eager():
        val = init_val
        for i in range(*bounds):
            new = body_fun(i, val)
            if i == bounds[0]:
                _check_carry("scan", None, val, new)
            val = new
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


def _check_bound_types(lower, upper) -> None:
    """JAX's check: equal dtypes, but for a weakly typed integer (a Python int) beside a
    typed one."""
    a, b = aval_of(lower), aval_of(upper)
    if a.dtype == b.dtype or (a.dtype.kind == b.dtype.kind == "i" and a.weak_type != b.weak_type):
        return
    raise TypeError(
        "lower and upper arguments to fori_loop must have equal types, got "
        f"{a.dtype.name} and {b.dtype.name}"
    )


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


__all__ = ["fori_loop", "map", "scan", "scan_p"]
