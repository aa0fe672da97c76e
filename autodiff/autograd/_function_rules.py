"""The rules of an autograd.Function's primitive (`impl`, `vjp`, `jvp`, `batch`), and the
vmap layers that run user code per example (`generate_vmap_rule = True`)."""

from __future__ import annotations

import inspect

import numpy as np

from autodiff.autograd._function_ctx import FunctionCtx, VmapInfo, _backward_fn, _lower, overrides
from autodiff.autograd._nodes import (
    register_node_class,
)
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.graph import version_of
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.numpy import moveaxis
from autodiff.numpy import sum as sum_
from autodiff.ops.elementwise import conj_complex
from autodiff.ops.structural import shape_of
from autodiff.torch._node_names import name_primitive
from autodiff.vmap import vmap

# ---------------------------------------------------------------------------------------------
# vmap layers: run user code per example (generate_vmap_rule=True)


def _input_dims(spec: tuple, n: int) -> list:
    """Per input, its batch dim in each vmap layer of `spec` (None: not batched anywhere)."""
    if not spec:
        return [None] * n
    dims = [tuple(layer[0][i] for layer in spec) for i in range(n)]
    return [None if all(d is None for d in ds) else ds for ds in dims]


def _run_layers(fn, spec: tuple, values: list, dims: list, out_dims):
    """`fn(*values)` per example of the vmap layers in `spec` (the last one outermost).

    `dims[k]` gives value k's batch dim per layer (or None). Outputs come back with the
    batch axes in front; with `out_dims`, output k instead goes where `out_dims[k]` says
    per layer, summed over the layers where that entry is None (reducing a gradient of an
    unbatched input).
    """
    if not spec:
        return fn(*values)

    layer = len(spec) - 1
    mapped = [
        k
        for k, (v, d) in enumerate(zip(values, dims))
        if v is not None and d is not None and d[layer] is not None
    ]
    inner_dims = [None if d is None else d[:layer] for d in dims]
    inner_out = None if out_dims is None else [None if d is None else d[:layer] for d in out_dims]

    def per_example(*mapped_values):
        vals = list(values)
        for k, v in zip(mapped, mapped_values):
            vals[k] = v
        return tuple(_run_layers(fn, spec[:layer], vals, inner_dims, inner_out))

    outs = vmap(
        per_example,
        in_axes=tuple(dims[k][layer] for k in mapped),
        out_axes=0,
        axis_size=spec[layer][1],
    )(*[values[k] for k in mapped])
    if out_dims is None:
        return outs
    placed = []
    for o, d in zip(outs, out_dims):
        if o is not None:
            dest = None if d is None else d[layer]
            o = sum_(o, axis=0) if dest is None else moveaxis(o, 0, dest) if dest else o
        placed.append(o)
    return tuple(placed)


# ---------------------------------------------------------------------------------------------
# The rules of a Function's primitive


def _impl(*values, ctx: FunctionCtx, spec: tuple):
    def body(*vals):
        args = []
        for i, v in enumerate(vals):
            original = None if spec else ctx._ad_original(i, v)
            args.append(ctx._ad_wrap_input(i, v, always=True) if original is None else original)
        return ctx._ad_finish(args, ctx._ad_call_forward(args), per_example=bool(spec))

    st = state()
    previous = st.grad_enabled
    st.grad_enabled = False  # forward is not recorded, as in torch
    try:
        outs = _run_layers(body, spec, list(values), _input_dims(spec, len(values)), None)
    finally:
        st.grad_enabled = previous
    return tuple(o._value if isinstance(o, Tensor) else np.asarray(o) for o in outs)


def _vjp(cts, *primals, out, ctx: FunctionCtx, spec: tuple):
    backward = _backward_fn(ctx._ad_cls)
    n_in, n_out = len(primals), len(out)

    def body(*vals):
        ins = [ctx._ad_wrap_input(i, v) for i, v in enumerate(vals[:n_in])]
        outs = [ctx._ad_lift(v) for v in vals[n_in : n_in + n_out]]
        c = ctx._ad_for_rule(ins, outs)
        grad_outputs = c._ad_grad_outputs(vals[n_in + n_out :], outs)
        boxed = c._ad_cls.boxed_grads_call
        result = c._ad_call(backward, c._ad_refs, ins, outs, grad_outputs, boxed)
        return c._ad_check_grads(result, ins)

    in_dims = _input_dims(spec, n_in)
    out_dims = [(0,) * len(spec) if spec else None] * n_out
    # backward() follows PyTorch's conjugate convention for complex values; the rules' own
    # convention is the plain transpose (see conj_complex).
    cts = [None if c is None else conj_complex(c) for c in cts]
    values = [*primals, *out, *cts]
    grads = _run_layers(body, spec, values, in_dims + out_dims + out_dims, in_dims)
    grads = _finish_rule(grads, values)
    return tuple(None if g is None else conj_complex(g) for g in grads)


def _jvp(primals, tangents, *, out, ctx: FunctionCtx, spec: tuple):
    cls = ctx._ad_cls
    n_in, n_out = len(primals), len(out)

    def body(*vals):
        ins = [ctx._ad_wrap_input(i, v) for i, v in enumerate(vals[:n_in])]
        outs = [ctx._ad_lift(v) for v in vals[n_in : n_in + n_out]]
        c = ctx._ad_for_rule(ins, outs)
        tangents_in = []
        for i, t in enumerate(vals[n_in + n_out :]):
            if not c._ad_mask[i] or not is_inexact(dtype_of(ins[i])):
                t = None  # (no tangent for non-Tensor and integer inputs, as in torch)
            elif t is None and c.materialize_grads:
                t = np.zeros(shape_of(ins[i]), dtype_of(ins[i]))
            tangents_in.append(c._ad_lift(t))
        versions = {
            i: version_of(t)
            for i, t in enumerate(tangents_in)
            if type(t) is Tensor and t._trace is EVAL_TRACE
        }
        refs = c._ad_fwd_refs or ()  # (jvp sees what save_for_forward saved, as in torch)
        result = c._ad_call(cls.jvp, refs, ins, outs, tangents_in)
        return c._ad_check_tangents(result, outs, tangents_in, versions, ins)

    in_dims = _input_dims(spec, n_in)
    out_dims = [(0,) * len(spec) if spec else None] * n_out
    values = [*primals, *out, *tangents]
    return _finish_rule(_run_layers(body, spec, values, in_dims + out_dims + in_dims, None), values)


def _batch(values, dims, *, ctx: FunctionCtx, spec: tuple):
    cls = ctx._ad_cls
    size = next(shape_of(v)[d] for v, d in zip(values, dims) if d is not None)
    has_vmap = overrides(cls, "vmap")
    if cls.generate_vmap_rule:
        if has_vmap:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True "
                "and an overridden vmap staticmethod. Please set generate_vmap_rule=False or "
                "delete the overridden vmap staticmethod to avoid ambiguity."
            )
        outs = bind(_primitive_of(cls), *values, ctx=ctx, spec=spec + ((tuple(dims), size),))
        return outs, (0,) * len(outs)
    if not has_vmap:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            "override and implement the vmap staticmethod or set generate_vmap_rule=True."
        )
    in_dims = tuple(d if m else None for d, m in zip(dims, ctx._ad_mask))
    args = [ctx._ad_wrap_input(i, v) for i, v in enumerate(values)]
    result = cls.vmap(VmapInfo(size, "error"), in_dims, *args, **ctx._ad_kwargs)
    if not isinstance(result, tuple) or len(result) != 2:
        got = f"{len(result)} returns" if isinstance(result, tuple) else f"a {type(result)}"
        raise RuntimeError(
            "Expected the vmap staticmethod to have two returns, an output and out_dims with "
            f"pytree structure compatible with the output. Got {got} instead"
        )
    output, out_dims = result
    items = list(output) if isinstance(output, tuple) else [output]
    if isinstance(out_dims, tuple) and isinstance(output, tuple) and len(out_dims) == len(items):
        item_dims = list(out_dims)
    elif out_dims is None or isinstance(out_dims, int):
        item_dims = [out_dims] * len(items)
    else:
        raise RuntimeError(
            "The autograd.Function's vmap staticmethod returned an incompatible (output, "
            f"out_dims) tuple. Expected out_dims={out_dims} to be compatible with the structure "
            "of `output`."
        )
    entries, outs, out_bdims = [], [], []
    for o, d in zip(items, item_dims):
        if isinstance(o, (Tensor, np.ndarray)):
            entries.append(("t", len(outs)))
            outs.append(o)
            out_bdims.append(None if d is None else d % len(shape_of(o)))
        else:
            entries.append(("c", o))
    if ctx._ad_out_spec is None:
        ctx._ad_out_spec = (isinstance(output, tuple), tuple(entries))
    return _finish_rule(outs, values), tuple(out_bdims)


def _finish_rule(results, values) -> tuple:
    """Rules given raw arrays return raw arrays (the engine's fast path)."""
    if any(isinstance(v, Tensor) for v in values):
        return tuple(results)
    return tuple(_lower(r) for r in results)


def _bind_defaults(cls, args: tuple, kwargs: dict) -> tuple:
    """Like torch for setup_context-style Functions: defaults of forward become inputs."""
    sig = cls.__dict__.get("_ad_forward_signature")
    if sig is None:
        sig = inspect.signature(cls.forward)
        positional = [p for p in sig.parameters.values() if p.kind <= p.POSITIONAL_OR_KEYWORD]
        cls._ad_forward_signature = sig = (sig, len(positional))
    if not kwargs and len(args) >= sig[1]:
        return args, kwargs
    bound = sig[0].bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _primitive_of(cls) -> Primitive:
    prim = cls.__dict__.get("_ad_primitive")
    if prim is None:
        prim = Primitive(cls.__name__, multiple_results=True)
        name_primitive(prim, f"{cls.__name__}Backward")
        prim.impl = _impl
        prim.vjp = _vjp
        prim.jvp = _jvp
        prim.batch = _batch
        register_node_class(prim, cls._backward_cls)
        cls._ad_primitive = prim
    return prim
