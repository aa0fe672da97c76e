"""User-defined derivative rules and rematerialisation: custom_jvp, custom_vjp, checkpoint.

Each is a primitive whose rules call back into the transforms, so a custom rule
composes with grad, jvp, vmap and the torch-style API, and nests:

- custom_jvp: the user's jvp rule gives forward mode; reverse mode transposes the
  rule's tangent map (a linear function of the tangents, built from autodiff ops)
  with `vjp`, so one rule serves both modes.
- custom_vjp: the primitive computes the function; its `fwd` (core/primitive.py) runs
  the user's fwd one level down, so residuals are ordinary values a higher-order pass
  differentiates through, and a fwd that calls the function itself binds the primitive
  again one level down (not recursively); `bwd` is the vjp.
- checkpoint: saves only the inputs; its vjp re-runs the function under `vjp`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.forward_ad.transforms import jvp, zero_tangent
from autodiff.ops.elementwise import conj_complex
from autodiff.ops.structural import shape_of
from autodiff.reverse.transforms import check_argnums, pullback
from autodiff.staging.trace import stage
from autodiff.vmap.transform import vmap


class _OutTree:
    """Where a traced call records the structure of its output (known only once run)."""

    __slots__ = ("treedef", "n_out", "res_tree")

    def __init__(self):
        self.treedef = None
        self.n_out = None
        self.res_tree = None  # custom_vjp: the structure of the residuals


def _flat_call(fun, in_tree, out_store):
    """`fun` as a function of flat leaves returning a flat tuple of outputs."""

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        flat_out, treedef = tree_flatten(out)
        if out_store.treedef is None:
            out_store.treedef = treedef
            out_store.n_out = len(flat_out)
        return tuple(flat_out)

    return flat


def _zeros_like(x):
    return np.zeros(shape_of(x), getattr(x, "dtype", np.float64))


def _number_as_cotangent(c, primal):
    """A Python number that a user's bwd returned for `primal`, as an array of the primal's
    shape and (inexact) dtype, as JAX accepts it; any other cotangent unchanged."""
    if type(c) not in (int, float, complex):
        return c
    dt = np.dtype(getattr(primal, "dtype", np.float64))
    return np.full(shape_of(primal), c, dt if dt.kind in "fc" else np.result_type(c, 0.0))


def _split_static(args, nondiff_argnums, fname: str):
    """The positions `nondiff_argnums` names (checked as argnums are), the static arguments
    there and the other, dynamic, ones."""
    if nondiff_argnums == ():  # (the common case)
        return (), (), args
    nums = check_argnums(nondiff_argnums, len(args), fname, "nondiff_argnums")
    static = tuple(args[i] for i in nums)
    dynamic = tuple(a for i, a in enumerate(args) if i not in nums)
    return nums, static, dynamic


def _merge_static(static, dynamic, nondiff_argnums, n):
    it_s, it_d = iter(static), iter(dynamic)
    return tuple(next(it_s) if i in nondiff_argnums else next(it_d) for i in range(n))


# ------------------------------------------------------------------------------ custom_jvp

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.jvp_computes_primal = True
custom_jvp_call_p.impl = lambda *args, fun, rule, store: fun(*args)


def _staged_avals(fun: Callable, avals: tuple) -> tuple:
    """The output types of `fun` (flat in, flat out) for inputs of types `avals`: it is
    staged (autodiff/staging/trace.py), as jit stages it."""
    graph, _ = stage(fun, list(avals), tree_flatten(avals)[1], name=getattr(fun, "__name__", "f"))
    return tuple(a.strengthened() for a in graph.out_avals)


custom_jvp_call_p.abstract_eval = lambda *avals, fun, rule, store: _staged_avals(fun, avals)


def _custom_jvp_rule(primals, tangents, *, fun, rule, store):
    tangents = tuple(_zeros_like(p) if t is None else t for p, t in zip(primals, tangents))
    return rule(primals, tangents)


def _custom_jvp_vjp(g, *primals, out, fun, rule, store):
    def tangent_map(*ts):
        return rule(primals, ts)[1]

    cts = tuple(_zeros_like(o) if c is None else c for o, c in zip(out, g))
    _, pull = pullback(tangent_map, [_zeros_like(p) for p in primals], False, conjugate=False)
    return pull(cts)


def _custom_jvp_batch(values, dims, *, fun, rule, store):
    fun_b = vmap(fun, in_axes=tuple(dims))
    rule_b = vmap(rule, in_axes=(tuple(dims), tuple(dims)))
    outs = bind(custom_jvp_call_p, *values, fun=fun_b, rule=rule_b, store=store)
    return outs, (0,) * len(outs)


custom_jvp_call_p.jvp = _custom_jvp_rule
custom_jvp_call_p.vjp = _custom_jvp_vjp
custom_jvp_call_p.batch = _custom_jvp_batch


class custom_jvp:
    """A function with a user-defined forward-mode rule, used by every transform.

    Define the rule with `defjvp(rule)`, where `rule(primals, tangents)` returns
    `(primal_out, tangent_out)` (with `nondiff_argnums`, the static arguments come
    first: `rule(*static, primals, tangents)`), or with `defjvps(*fns)`, one
    `fn(tangent_i, primal_out, *primals)` per argument. Reverse mode transposes the
    rule, so `grad` works too.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> @ad.custom_jvp
        ... def log1pexp(x):
        ...     return anp.log1p(anp.exp(x))
        >>> @log1pexp.defjvp
        ... def _(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return log1pexp(x), t * (1.0 - 1.0 / (1.0 + anp.exp(x)))
        >>> float(ad.grad(log1pexp)(100.0))
        1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = nondiff_argnums  # (checked at each call, as argnums)
        self.jvp_rule = None

    def defjvp(self, rule: Callable) -> Callable:
        self.jvp_rule = rule
        return rule

    def defjvps(self, *tangent_fns: Callable | None) -> None:
        def rule(primals, tangents):
            out = self.fun(*primals)
            total = None
            for fn, t in zip(tangent_fns, tangents):
                if fn is None:
                    continue
                term = fn(t, out, *primals)
                total = term if total is None else total + term
            return out, total if total is not None else _zeros_like(out)

        self.jvp_rule = rule

    def __call__(self, *args):
        if self.jvp_rule is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {self.__name__} using defjvp."
            )
        nums, static, dynamic = _split_static(args, self.nondiff_argnums, self.__name__)
        n = len(args)

        def fun(*dyn):
            return self.fun(*_merge_static(static, dyn, nums, n))

        def rule(primals, tangents):
            return self.jvp_rule(*static, tuple(primals), tuple(tangents))

        flat, in_tree = tree_flatten(dynamic)
        if not any(isinstance(a, Tensor) for a in flat):
            return fun(*dynamic)
        store = _OutTree()
        flat_fun = _flat_call(fun, in_tree, store)

        def flat_rule(primals, tangents):
            out, t_out = rule(tree_unflatten(in_tree, primals), tree_unflatten(in_tree, tangents))
            out_flat, treedef = tree_flatten(out)
            if store.treedef is None:
                store.treedef = treedef
            return tuple(out_flat), tuple(tree_flatten(t_out)[0])

        outs = bind(custom_jvp_call_p, *flat, fun=flat_fun, rule=flat_rule, store=store)
        return tree_unflatten(store.treedef, list(outs))


# ------------------------------------------------------------------------------ custom_vjp

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.impl = lambda *args, fun, fwd, bwd, store: fun(*args)
custom_vjp_call_p.abstract_eval = lambda *avals, fun, fwd, bwd, store: _staged_avals(fun, avals)


def _custom_vjp_fwd(*primals, fun, fwd, bwd, store):
    """Reverse mode's forward: the user's `fwd`, one level down, so a higher-order pass
    differentiates the residuals as the ordinary code they are computed by."""
    results = fwd(*primals)
    return tuple(results[: store.n_out]), tuple(results[store.n_out :])


def _custom_vjp_vjp(g, *primals, out, fun, fwd, bwd, store, residuals=None):
    if residuals is None:  # (the torch face records the primal call: fwd runs again)
        residuals = fwd(*primals)[store.n_out :]
    cts = tuple(_zeros_like(o) if c is None else c for o, c in zip(out, g))
    # The user's bwd follows the public (conjugate) convention for complex values.
    grads = bwd(tuple(residuals), tuple(conj_complex(c) for c in cts))
    return tuple(
        None if c is None else conj_complex(_number_as_cotangent(c, p))
        for c, p in zip(grads, primals)
    )


def _custom_vjp_jvp(primals, tangents, *, out, fun, fwd, bwd, store):
    raise TypeError(
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function: it defines only a "
        "reverse-mode rule. Use custom_jvp, or differentiate it in reverse mode."
    )


def _custom_vjp_batch(values, dims, *, fun, fwd, bwd, store):
    in_axes = tuple(dims)
    fun_b, fwd_b = vmap(fun, in_axes=in_axes), vmap(fwd, in_axes=in_axes)
    bwd_b = vmap(bwd, in_axes=(0, 0), out_axes=(0,) * len(values))
    outs = bind(custom_vjp_call_p, *values, fun=fun_b, fwd=fwd_b, bwd=bwd_b, store=store)
    return outs, (0,) * len(outs)


custom_vjp_call_p.fwd = _custom_vjp_fwd
custom_vjp_call_p.vjp = _custom_vjp_vjp
custom_vjp_call_p.jvp = _custom_vjp_jvp
custom_vjp_call_p.batch = _custom_vjp_batch


class custom_vjp:
    """A function with a user-defined reverse-mode rule.

    `defvjp(fwd, bwd)`: `fwd(*args) -> (out, residuals)` and
    `bwd(residuals, ct_out) -> tuple` with one cotangent per (non-static) argument;
    with `nondiff_argnums`, `bwd(*static, residuals, ct_out)`. Forward mode (jvp)
    of a custom_vjp function raises a TypeError.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> @ad.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (anp.clip(g, -1.0, 1.0),))
        >>> float(ad.grad(lambda x: 10.0 * clip_gradient(x))(2.0))
        1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = nondiff_argnums  # (checked at each call, as argnums)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {self.__name__} using defvjp."
            )
        nums, static, dynamic = _split_static(args, self.nondiff_argnums, self.__name__)
        flat, in_tree = tree_flatten(dynamic)
        if not any(isinstance(a, Tensor) for a in flat):
            return self.fun(*args)
        n = len(args)
        store = _OutTree()

        def fun(*dyn):
            return self.fun(*_merge_static(static, dyn, nums, n))

        flat_fun = _flat_call(fun, in_tree, store)

        def flat_fwd(*leaves):
            pair = self.fwd(*_merge_static(static, tree_unflatten(in_tree, leaves), nums, n))
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(
                    "Custom VJP fwd rule must produce a pair (output, residuals), "
                    f"got {type(pair).__name__}."
                )
            out_flat, out_tree = tree_flatten(pair[0])
            res_flat, store.res_tree = tree_flatten(pair[1])
            if store.treedef is None:
                store.treedef, store.n_out = out_tree, len(out_flat)
            elif out_tree != store.treedef:
                raise TypeError(
                    "Custom VJP fwd rule must produce an output with the structure of the "
                    f"function's output: {store.treedef} for the function, {out_tree} for fwd."
                )
            return tuple(out_flat) + tuple(res_flat)

        def flat_bwd(res_flat, cts_flat):
            ct = tree_unflatten(store.treedef, list(cts_flat))
            grads = self.bwd(*static, tree_unflatten(store.res_tree, list(res_flat)), ct)
            if not isinstance(grads, (tuple, list)) or len(grads) != len(dynamic):
                raise TypeError(
                    "Custom VJP bwd rule must produce a tuple with one entry per differentiable "
                    f"argument ({len(dynamic)}), got {grads!r}."
                )
            flat_grads = []
            for arg, g in zip(dynamic, grads):
                n_leaves = len(tree_flatten(arg)[0])
                flat_grads.extend(tree_flatten(g)[0] if g is not None else [None] * n_leaves)
            return tuple(flat_grads)

        outs = bind(custom_vjp_call_p, *flat, fun=flat_fun, fwd=flat_fwd, bwd=flat_bwd, store=store)
        return tree_unflatten(store.treedef, list(outs))


# ------------------------------------------------------------------------------ checkpoint

checkpoint_p = Primitive("checkpoint", multiple_results=True)
checkpoint_p.impl = lambda *args, fun, store: fun(*args)
checkpoint_p.abstract_eval = lambda *avals, fun, store: _staged_avals(fun, avals)


def _checkpoint_vjp(g, *primals, out, fun, store):
    cts = tuple(_zeros_like(o) if c is None else c for o, c in zip(out, g))
    # Recompute the forward pass, now recording it.
    _, pull = pullback(fun, primals, False, conjugate=False)
    return pull(cts)


def _checkpoint_jvp(primals, tangents, *, out, fun, store):
    tangents = tuple(
        zero_tangent(p) if t is None or not is_inexact(dtype_of(p)) else t
        for p, t in zip(primals, tangents)
    )
    return jvp(fun, primals, tangents)[1]


def _checkpoint_batch(values, dims, *, fun, store):
    outs = bind(checkpoint_p, *values, fun=vmap(fun, in_axes=tuple(dims)), store=store)
    return outs, (0,) * len(outs)


checkpoint_p.vjp = _checkpoint_vjp
checkpoint_p.jvp = _checkpoint_jvp
checkpoint_p.batch = _checkpoint_batch


def checkpoint(fun: Callable) -> Callable:
    """`fun`, but reverse mode saves only its inputs and recomputes it during backward.

    Trades compute for memory: wrap segments of a deep computation so that only
    segment boundaries stay alive until the backward pass.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> block = ad.checkpoint(lambda x: anp.sin(anp.sin(x)))
        >>> float(ad.grad(lambda x: block(block(x)))(0.1)) == float(
        ...     ad.grad(lambda x: anp.sin(anp.sin(anp.sin(anp.sin(x)))))(0.1))
        True
    """

    @functools.wraps(fun)
    def wrapped(*args):
        flat, in_tree = tree_flatten(args)
        if not any(isinstance(a, Tensor) for a in flat):
            return fun(*args)
        store = _OutTree()
        outs = bind(checkpoint_p, *flat, fun=_flat_call(fun, in_tree, store), store=store)
        return tree_unflatten(store.treedef, list(outs))

    return wrapped


remat = checkpoint

__all__ = ["checkpoint", "custom_jvp", "custom_vjp", "remat"]
