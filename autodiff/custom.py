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
- checkpoint: the function is staged (a Graph, as jit stages it) and bound as `remat_p`,
  which saves only the inputs and the values its policy (`checkpoint_policies`) allows of
  those the backward pass reads; its vjp recomputes the others under `vjp`.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Sequence

import numpy as np

from autodiff.core.abstract import aval_of, same_aval
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.errors import ConcretizationError
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.forward_ad.transforms import jvp, zero_tangent
from autodiff.ops.gather_scatter import filled
from autodiff.ops.products import _einsum_spec, dot_p, einsum_p, matmul_p
from autodiff.ops.sparsity import MOVEMENT, THROUGH_FUNCTION, THROUGH_GRAPH
from autodiff.ops.structural import shape_of
from autodiff.reverse.transforms import check_argnums, pullback
from autodiff.staging.ir import Graph, Var, eval_graph
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


def _flat_fwd_outputs(pair, store: _OutTree) -> tuple:
    """A custom_vjp fwd rule's `(output, residuals)`, checked, as one flat tuple (the
    structures recorded in `store`)."""
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


def _flat_grads(grads, dynamic) -> tuple:
    """A custom_vjp bwd rule's cotangents, one per differentiable argument, checked and
    flattened (`None` for each leaf of an argument whose cotangent is None)."""
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


def _zeros_like(x):
    return np.zeros(shape_of(x), getattr(x, "dtype", np.float64))


def _number_as_cotangent(c, primal):
    """A Python number that a user's bwd returned for `primal`, as an array of the primal's
    shape and (inexact) dtype, as JAX accepts it; any other cotangent unchanged."""
    if type(c) not in (int, float, complex):
        return c
    dt = np.dtype(getattr(primal, "dtype", np.float64))
    return np.full(shape_of(primal), c, dt if dt.kind in "fc" else np.result_type(c, 0.0))


def _split_static(args, nondiff_argnums, fname: str, what: str = "nondiff_argnums"):
    """The positions `nondiff_argnums` names (checked as argnums are), the static arguments
    there and the other, dynamic, ones."""
    if nondiff_argnums == ():  # (the common case)
        return (), (), args
    nums = check_argnums(nondiff_argnums, len(args), fname, what)
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
custom_jvp_call_p.sparsity = THROUGH_FUNCTION


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
custom_vjp_call_p.sparsity = THROUGH_FUNCTION
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
    # The user's bwd follows JAX's convention for complex values (the plain transpose of
    # the JVP, the rules' own): cotangents pass through unconjugated, whichever face runs
    # the backward pass (the torch face conjugates only at its own boundary).
    grads = bwd(tuple(residuals), cts)
    return tuple(None if c is None else _number_as_cotangent(c, p) for c, p in zip(grads, primals))


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
            return _flat_fwd_outputs(pair, store)

        def flat_bwd(res_flat, cts_flat):
            ct = tree_unflatten(store.treedef, list(cts_flat))
            grads = self.bwd(*static, tree_unflatten(store.res_tree, list(res_flat)), ct)
            return _flat_grads(grads, dynamic)

        outs = bind(custom_vjp_call_p, *flat, fun=flat_fun, fwd=flat_fwd, bwd=flat_bwd, store=store)
        return tree_unflatten(store.treedef, list(outs))


# ------------------------------------------------------------ checkpoint names and barriers

checkpoint_name_p = Primitive("checkpoint_name")
checkpoint_name_p.sparsity = MOVEMENT
checkpoint_name_p.saves_inputs = False  # (the identity: its vjp reads nothing)
checkpoint_name_p.saves_output = False
checkpoint_name_p.impl = lambda x, *, name: x
checkpoint_name_p.abstract_eval = same_aval
checkpoint_name_p.jvp = lambda primals, tangents, *, out, name: tangents[0]
checkpoint_name_p.vjp = lambda g, x, *, out, name: (g,)
checkpoint_name_p.batch = lambda values, dims, *, name: (
    bind(checkpoint_name_p, values[0], name=name),  # (named in batched graphs too)
    dims[0],
)


def checkpoint_name(x, name: str):
    """`x` (an array or a pytree of them), marked with `name` for checkpoint policies.

    The identity everywhere; inside `checkpoint(fun, policy=...)`, the policies
    `checkpoint_policies.save_only_these_names` and `save_any_names_but_these` choose by
    these names which values reverse mode keeps from the forward pass (JAX's
    `jax.ad_checkpoint.checkpoint_name`).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> policy = ad.checkpoint_policies.save_only_these_names("hidden")
        >>> g = lambda x: anp.sin(ad.checkpoint_name(x * 2.0, "hidden"))
        >>> float(ad.grad(ad.checkpoint(g, policy=policy))(0.0))
        2.0
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name's name must be a str, got {name!r}")
    return tree_map(lambda leaf: bind(checkpoint_name_p, leaf, name=name), x)


# An identity that staging's common-subexpression elimination does not see through: the
# values a checkpoint's backward pass recomputes from go through it (`prevent_cse`), so that
# under jit the recomputation is not merged back into the forward computation it repeats.
optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.sparsity = MOVEMENT
optimization_barrier_p.saves_inputs = False
optimization_barrier_p.saves_output = False
optimization_barrier_p.impl = lambda *xs: xs
optimization_barrier_p.abstract_eval = lambda *avals: avals
optimization_barrier_p.jvp = lambda primals, tangents, *, out: tuple(tangents)
optimization_barrier_p.vjp = lambda cts, *xs, out: tuple(cts)
optimization_barrier_p.batch = lambda values, dims: (
    bind(optimization_barrier_p, *values),
    tuple(dims),
)

# ------------------------------------------------------------------------------ policies


def everything_saveable(*_, **__) -> bool:
    """Save every value reverse mode would (as without `checkpoint`)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Save nothing but the inputs: recompute the rest (`checkpoint` without a policy)."""
    return False


def _has_batch_dims(prim, avals, params) -> bool:
    """Does a product share a batch axis between its operands (a label both have and keep)?"""
    if prim is matmul_p:
        return avals[0].ndim > 2 and avals[1].ndim > 2
    if prim is einsum_p:
        canonical, _ = _einsum_spec(params["subscripts"], tuple(a.shape for a in avals))
        lhs, _, out = canonical.partition("->")
        terms = lhs.split(",")
        return any(c in out and sum(c in t for t in terms) > 1 for c in set(lhs) - {","})
    return False  # (np.dot of N-d arrays: every free axis of one operand is its own)


class DotsSaveable:
    """Save the results of products (matmul, dot, einsum of two or more operands):
    recompute the cheap elementwise operations between them. With `only_if_no_batch_dims`,
    only products without a batch axis shared by their operands."""

    __slots__ = ("only_if_no_batch_dims",)

    def __init__(self, only_if_no_batch_dims: bool):
        self.only_if_no_batch_dims = only_if_no_batch_dims

    def __call__(self, prim, *avals, **params) -> bool:
        if prim not in (matmul_p, dot_p, einsum_p) or (prim is einsum_p and len(avals) < 2):
            return False
        return not (self.only_if_no_batch_dims and _has_batch_dims(prim, avals, params))

    def __repr__(self):
        return f"DotsSaveable(only_if_no_batch_dims={self.only_if_no_batch_dims})"


class SaveOnlyTheseNames:
    """Save only the values marked by `checkpoint_name` with one of `names`."""

    __slots__ = ("names",)

    def __init__(self, names):
        self.names = frozenset(names)

    def __call__(self, prim, *avals, **params) -> bool:
        return prim is checkpoint_name_p and params["name"] in self.names

    def __repr__(self):
        return f"save_only_these_names({', '.join(map(repr, sorted(self.names)))})"


class SaveAnyNamesButThese:
    """Save only the values marked by `checkpoint_name`, except those named one of `names`."""

    __slots__ = ("names",)

    def __init__(self, names):
        self.names = frozenset(names)

    def __call__(self, prim, *avals, **params) -> bool:
        return prim is checkpoint_name_p and params["name"] not in self.names

    def __repr__(self):
        return f"save_any_names_but_these({', '.join(map(repr, sorted(self.names)))})"


def save_only_these_names(*names: str) -> SaveOnlyTheseNames:
    """The policy saving only the values `checkpoint_name` marked with one of `names`."""
    return SaveOnlyTheseNames(names)


def save_any_names_but_these(*names: str) -> SaveAnyNamesButThese:
    """The policy saving every value `checkpoint_name` marked, except those of `names`."""
    return SaveAnyNamesButThese(names)


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """The policy saving what either policy saves."""

    def policy(prim, *avals, **params) -> bool:
        return bool(policy_1(prim, *avals, **params)) or bool(policy_2(prim, *avals, **params))

    return policy


dots_saveable = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)

# JAX's `jax.checkpoint_policies`: the names of the policies, with JAX's aliases.
checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_from_both_policies=save_from_both_policies,
    SaveOnlyTheseNames=SaveOnlyTheseNames,
    SaveAnyNamesButThese=SaveAnyNamesButThese,
)

# ------------------------------------------------------------ checkpoint
#
# The function is staged once per call (a Graph, as jit stages it) and bound as `remat_p`.
# Reverse mode's forward (`fwd`) evaluates the graph equation by equation and keeps, as
# residuals, the outputs of the equations the policy saves and the backward pass reads.
# The backward pass re-evaluates the graph under a pullback: a saved equation is not
# computed again (`remat_saved_p` stands for it, its saved value as its output and its own
# rule as its vjp), one whose output the backward pass never reads gets a stand-in of its
# shape (no work), and every other one is recomputed.


def _plan(graph: Graph, policy) -> list:
    """For each equation: "save" (its outputs are residuals), "compute" (recomputed in the
    backward pass) or "skip" (nothing reads its outputs: stand-ins)."""
    equations = graph.equations
    # The values the rules read: the inputs and outputs of rules that read them.
    needed: set = set()
    for eqn in equations:
        if eqn.prim.differentiable:
            if eqn.prim.saves_inputs:
                needed.update(x for x in eqn.inputs if type(x) is Var)
            if eqn.prim.saves_output:
                needed.update(eqn.outputs)
    kinds = [""] * len(equations)
    for k in range(len(equations) - 1, -1, -1):  # (a recomputed value needs its inputs)
        eqn = equations[k]
        if not any(v in needed for v in eqn.outputs):
            kinds[k] = "skip"
        elif policy is not None and policy(eqn.prim, *[x.aval for x in eqn.inputs], **eqn.params):
            kinds[k] = "save"
        else:
            kinds[k] = "compute"
            needed.update(x for x in eqn.inputs if type(x) is Var)
    return kinds


def _env(graph: Graph, args) -> dict:
    env: dict = dict(graph.consts)
    env.update(zip(graph.in_vars, args))
    return env


def _read(env: dict, xs) -> list:
    return [env[x] if type(x) is Var else x.value for x in xs]


def _write(env: dict, eqn, out) -> None:
    if eqn.prim.multiple_results:
        env.update(zip(eqn.outputs, out))
    else:
        env[eqn.outputs[0]] = out


def _remat_fwd(*args, graph, policy, prevent_cse):
    env = _env(graph, args)
    residuals: list = []
    for eqn, kind in zip(graph.equations, _plan(graph, policy)):
        out = bind(eqn.prim, *_read(env, eqn.inputs), **eqn.params)
        _write(env, eqn, out)
        if kind == "save":
            residuals.extend(_read(env, eqn.outputs))
    return tuple(_read(env, graph.out_vars)), tuple(residuals)


def _known(values: list, eqn, inputs: list):
    """`eqn` applied to `inputs` without computing it: `values` are its outputs."""
    if not eqn.prim.differentiable:
        return tuple(values) if eqn.prim.multiple_results else values[0]
    outs = bind(
        remat_saved_p, *values, *inputs, saved=eqn.prim, params=eqn.params, n_out=len(values)
    )
    return outs if eqn.prim.multiple_results else outs[0]


def _recompute(graph: Graph, kinds: list, residuals):
    """The graph as a function of its inputs that computes only the equations of `kinds`
    "compute" (the others: their saved values or stand-ins)."""

    def f(*args):
        saved = iter(residuals)
        env = _env(graph, args)
        for eqn, kind in zip(graph.equations, kinds):
            inputs = _read(env, eqn.inputs)
            if kind == "compute":
                out = bind(eqn.prim, *inputs, **eqn.params)
            elif kind == "save":
                out = _known([next(saved) for _ in eqn.outputs], eqn, inputs)
            else:
                out = _known(
                    [filled(v.aval.shape, 0, v.aval.dtype) for v in eqn.outputs], eqn, inputs
                )
            _write(env, eqn, out)
        return tuple(_read(env, graph.out_vars))

    return f


def _remat_vjp(cts, *primals, out, graph, policy, prevent_cse, residuals=None):
    # Without residuals (the torch face records impl's outputs only), everything is
    # recomputed.
    kinds = _plan(graph, policy if residuals is not None else None)
    cts = tuple(_zeros_like(o) if c is None else c for o, c in zip(out, cts))
    if any(prevent_cse):
        shielded = iter(
            bind(optimization_barrier_p, *[p for p, b in zip(primals, prevent_cse) if b])
        )
        primals = tuple(next(shielded) if b else p for p, b in zip(primals, prevent_cse))
    _, pull = pullback(_recompute(graph, kinds, residuals or ()), primals, False, conjugate=False)
    return pull(cts)


def _remat_abstract_eval(*avals, graph, policy, prevent_cse):
    for i, (got, want) in enumerate(zip(avals, graph.in_avals)):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise TypeError(f"checkpoint of '{graph.name}': operand {i} is {got}, not {want}")
    return tuple(a.strengthened() for a in graph.out_avals)


def _tangents(primals, tangents) -> tuple:
    """The tangents with zeros (float0 ones for integers) where they are symbolic."""
    return tuple(
        zero_tangent(p) if t is None or not is_inexact(dtype_of(p)) else t
        for p, t in zip(primals, tangents)
    )


def _remat_jvp(primals, tangents, *, out, graph, policy, prevent_cse):
    return jvp(lambda *xs: tuple(eval_graph(graph, *xs)), primals, _tangents(primals, tangents))[1]


def _remat_batch(values, dims, *, graph, policy, prevent_cse):
    size = next(shape_of(v)[d] for v, d in zip(values, dims) if d is not None)
    key = ("remat-vmap", tuple(dims), size)
    batched = graph.derived.get(key)
    if batched is None:
        fun = vmap(lambda *xs: tuple(eval_graph(graph, *xs)), in_axes=tuple(dims))
        avals = [aval_of(v).strengthened() for v in values]
        batched, _ = stage(fun, avals, tree_flatten(tuple(avals))[1], name=graph.name)
        graph.derived[key] = batched
    outs = bind(remat_p, *values, graph=batched, policy=policy, prevent_cse=prevent_cse)
    return outs, (0,) * len(outs)


remat_p = Primitive("remat", multiple_results=True)
remat_p.sparsity = THROUGH_GRAPH
remat_p.impl = lambda *args, graph, policy, prevent_cse: tuple(eval_graph(graph, *args))
remat_p.abstract_eval = _remat_abstract_eval
remat_p.fwd = _remat_fwd
remat_p.vjp = _remat_vjp
remat_p.jvp = _remat_jvp
remat_p.batch = _remat_batch


# An equation of a checkpointed function that the backward pass does not compute again:
# `remat_saved_p(*values, *inputs)` is `values` (saved by the forward pass, or stand-ins
# where nothing reads them), with the rule of the primitive `saved` applied to `inputs` as
# its vjp.
remat_saved_p = Primitive("remat_saved", multiple_results=True)
remat_saved_p.sparsity = MOVEMENT  # (its values: the first operands)
remat_saved_p.vjp_takes_needs = True
remat_saved_p.impl = lambda *operands, saved, params, n_out: operands[:n_out]
remat_saved_p.abstract_eval = lambda *avals, saved, params, n_out: avals[:n_out]


def _saved_vjp(cts, *operands, out, saved, params, n_out, needs):
    prim = saved
    inputs = operands[n_out:]
    ct = cts if prim.multiple_results else cts[0]
    value = tuple(out) if prim.multiple_results else out[0]
    if prim.vjp_takes_needs:
        in_cts = prim.vjp(ct, *inputs, out=value, needs=needs[n_out:], **params)
    else:
        in_cts = prim.vjp(ct, *inputs, out=value, **params)
    return (None,) * n_out + tuple(in_cts)


remat_saved_p.vjp = _saved_vjp
remat_saved_p.jvp = lambda primals, tangents, *, out, saved, params, n_out: tuple(tangents[:n_out])
remat_saved_p.batch = lambda values, dims, *, saved, params, n_out: (
    values[:n_out],
    tuple(dims[:n_out]),
)


def _leaf_names(fun: Callable, args: tuple, nums: tuple, kwargs: dict) -> list:
    """A name per flat dynamic argument, for error messages: the parameter's name."""
    try:
        params = [
            p.name
            for p in inspect.signature(fun).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    named = [
        (params[i] if i < len(params) else f"argument {i}", arg)
        for i, arg in enumerate(args)
        if i not in nums
    ]
    names = []
    for base, arg in named + list(kwargs.items()):
        n = len(tree_flatten(arg)[0])
        names.extend([base] if n == 1 else [f"{base}[{j}]" for j in range(n)])
    return names


def _cse_flags(prevent_cse, dynamic: tuple, kwargs: dict, n_captured: int) -> tuple:
    """`prevent_cse` (a bool, or one per positional argument) as one bool per operand."""
    if isinstance(prevent_cse, bool):
        per_arg = [prevent_cse] * len(dynamic)
    else:
        per_arg = list(prevent_cse)
        if len(per_arg) != len(dynamic) or not all(isinstance(b, bool) for b in per_arg):
            raise TypeError(
                "prevent_cse must be a bool or a tuple of bools, one per (non-static) "
                f"positional argument, got {prevent_cse!r}"
            )
    flags = []
    for arg, b in zip(dynamic, per_arg):
        flags.extend([b] * len(tree_flatten(arg)[0]))
    n_kwargs = len(tree_flatten(kwargs)[0])
    return tuple(flags) + (True,) * (n_kwargs + n_captured)


def checkpoint(
    fun: Callable,
    *,
    prevent_cse: bool | Sequence[bool] = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable:
    """`fun`, but reverse mode keeps less of its forward pass and recomputes the rest
    during the backward pass (JAX's `jax.checkpoint`, alias `remat`).

    Trades compute for memory: wrap segments of a deep computation so that only
    segment boundaries stay alive until the backward pass.

    Arguments:
        fun: the function (of arrays and pytrees of them) to rematerialize.
        policy: which intermediate values to keep anyway, as
            `policy(prim, *avals, **params) -> bool` for each primitive application of
            `fun` (see `checkpoint_policies`); None keeps only the inputs. `fun` is staged
            as `jit` stages it (values it closes over, an enclosing transform's too, are
            inputs of the checkpoint), so Python control flow on traced values raises
            `ConcretizationError` naming `fun`: mark such arguments static, or use
            `cond`/`while_loop`. Called with no Tensor among its arguments, `fun` just runs.
        prevent_cse: keep `jit`'s common-subexpression elimination from merging the
            recomputation back into the forward computation (which would keep its values
            alive after all); a bool, or one per positional argument.
        static_argnums, static_argnames: the positions and names of arguments that are
            Python values, not arrays: passed to `fun` as they are, never differentiated.

    Returns:
        The function, with the same signature.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> block = ad.checkpoint(lambda x: anp.sin(anp.sin(x)))
        >>> float(ad.grad(lambda x: block(block(x)))(0.1)) == float(
        ...     ad.grad(lambda x: anp.sin(anp.sin(anp.sin(anp.sin(x)))))(0.1))
        True
        >>> policy = ad.checkpoint_policies.dots_saveable  # (matmul results kept)
        >>> mlp = ad.checkpoint(lambda w, x: anp.tanh(x @ w) @ w, policy=policy)
        >>> ad.grad(lambda w: anp.sum(mlp(w, np.ones(2))))(np.eye(2)).shape
        (2, 2)
    """
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint's policy must be callable or None, got {policy!r}")
    fname = getattr(fun, "__name__", type(fun).__name__)
    static_names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
    static_names = frozenset(static_names)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        nums, static, dynamic = _split_static(args, static_argnums, fname, "static_argnums")
        static_kw = {k: v for k, v in kwargs.items() if k in static_names}
        dynamic_kw = {k: v for k, v in kwargs.items() if k not in static_names}
        flat, in_tree = tree_flatten((dynamic, dynamic_kw))
        if not any(isinstance(a, Tensor) for a in flat):
            return fun(*args, **kwargs)
        n = len(args)

        def call(dyn, kw):
            return fun(*_merge_static(static, dyn, nums, n), **kw, **static_kw)

        avals = [aval_of(a) for a in flat]
        names = _leaf_names(fun, args, nums, dynamic_kw)
        try:
            graph, captured = stage(call, avals, in_tree, names=names, name=fname)
        except ConcretizationError as e:
            raise ConcretizationError(
                f"checkpoint stages '{fname}' (as jit does) to recompute it: mark arguments "
                "that select what to compute with checkpoint's static_argnums or "
                f"static_argnames, or use structured control flow (autodiff.cond, ...). {e}"
            ) from e
        flags = _cse_flags(prevent_cse, dynamic, dynamic_kw, len(captured))
        outs = bind(remat_p, *flat, *captured, graph=graph, policy=policy, prevent_cse=flags)
        return tree_unflatten(graph.out_tree, list(outs))

    return wrapped


remat = checkpoint

__all__ = [
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "custom_jvp",
    "custom_vjp",
    "remat",
]
