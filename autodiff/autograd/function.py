"""autograd.Function: user-defined operations with their own derivatives, as in PyTorch.

A Function class is one `Primitive` (cached on the class) whose rules call the
class's static methods: `impl` runs `forward` (and `setup_context`), `vjp` runs
`backward`, `jvp` runs `jvp` and `batch` runs `vmap`. With
`generate_vmap_rule = True` the batch rule binds the same primitive again with
one more vmap layer in its `spec` param, and every rule then runs the user's
code per example under `autodiff.vmap` (torch's "vmapify").

The per-call `ctx` travels as a primitive param. What it saves is remembered by
position (input i, output j), and each rule resolves those positions against
the values it is given, so one ctx serves every level: the imperative graph
(where `create_graph` hands the rule graph-linked Tensors, so double backward
works), grad, jvp, vmap and their nestings.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from autodiff.autograd._function_ctx import (
    _FUNCTORCH_HINT,
    FUNCTION_DEFAULTS,
    FunctionCtx,
    VmapInfo,
    _bottom,
    _is_new_style,
    _needs_grad,
    _under_transform,
)
from autodiff.autograd._function_rules import _bind_defaults, _primitive_of
from autodiff.autograd._nodes import (
    BackwardCFunction,
    function_node_class,
    set_function_ctx,
)
from autodiff.autograd.grad_mode import no_grad
from autodiff.autograd.graph import Node as GraphNode
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state

# ---------------------------------------------------------------------------------------------
# Function

# What a node (a ctx, in torch) has and an instance of a Function class does not.
_NODE_ATTRIBUTES = frozenset(
    {
        "name",
        "next_functions",
        "register_hook",
        "register_prehook",
        "_register_hook_dict",
        "saved_tensors",
        "saved_variables",
        "_raw_saved_tensors",
        "needs_input_grad",
        "_sequence_nr",
        "_set_sequence_nr",
        "_input_metadata",
    }
)


class Function:
    """Base class of custom differentiable operations (torch.autograd.Function).

    Subclass it with static methods: `forward` (either `forward(ctx, *args)`, or
    `forward(*args)` plus `setup_context(ctx, inputs, output)`), `backward(ctx,
    *grad_outputs)` (or its alias `vjp`) returning one gradient per input, and
    optionally `jvp(ctx, *tangents)` for forward mode and `vmap(info, in_dims,
    *args)` (or `generate_vmap_rule = True`) for vmap. Call it with `apply`.
    Functional transforms (grad, jvp, vmap, jacrev, ...) need the
    `setup_context` style, as in torch.func.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> class Exp(Function):
        ...     @staticmethod
        ...     def forward(x):
        ...         return anp.exp(x)
        ...     @staticmethod
        ...     def setup_context(ctx, inputs, output):
        ...         ctx.save_for_backward(output)
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (y,) = ctx.saved_tensors
        ...         return g * y
        >>> x = ad.tensor([0.0, 1.0], requires_grad=True)
        >>> y = Exp.apply(x); y.grad_fn.name()
        'ExpBackward'
        >>> y.sum().backward(); x.grad
        tensor([1.        , 2.71828183])
        >>> float(ad.grad(lambda v: Exp.apply(v))(0.0))
        1.0
    """

    generate_vmap_rule = False
    # torch's: with True, saved_tensors may be read once and then drops its references
    clear_saved_tensors_on_access = False
    # torch's: with True, backward gets the grads as one list, backward(ctx, grads)
    boxed_grads_call = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The class of this Function's nodes (`y.grad_fn.__class__`), as torch's.
        cls._backward_cls = function_node_class(f"{cls.__name__}Backward")

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method."
        )

    def __getattr__(self, name: str):
        # An instance of a Function class is not a node: torch's errors for its node API
        # (only attributes the instance lacks get here).
        if name == "metadata":
            raise RuntimeError(
                "You attempted to access the anomaly metadata of a custom autograd function but "
                "the underlying PyNode has already been deallocated.  The most likely reason "
                "this occurred is because you assigned x.grad_fn to a local variable and then "
                "let the original variable get deallocated.  Don't do that!  If you really have "
                "no way of restructuring your code so this is the case, please file an issue "
                "reporting that you are affected by this."
            )
        if name in _NODE_ATTRIBUTES:
            raise RuntimeError(
                f"Attribute '{name}' is invalid for this instance of _C._FunctionBase. Accessing "
                "this attribute directly on an instance of autograd.Function is a legacy access "
                "pattern that is no longer supported. For examples on how to use new-style "
                "autograd functions, see "
                "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function "
            )
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """The operation itself, on Tensors that do not require grad (nothing is recorded)."""
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Fill `ctx` from the inputs and output of `forward` (for a forward without ctx)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """One gradient per forward output in, one per forward input out (None allowed)."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Any) -> Any:
        """One tangent per forward input in, one per forward output out."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @staticmethod
    def vmap(info: VmapInfo, in_dims: tuple, *args: Any) -> tuple:
        """Batched forward: return `(output, out_dims)`."""
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod "
            "or set generate_vmap_rule=True."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the Function on `args`, recording it for every active level of differentiation."""
        if _is_new_style(cls):
            args, kwargs = _bind_defaults(cls, args, kwargs)
        elif any(_under_transform(a) for a in args):
            raise RuntimeError(_FUNCTORCH_HINT)
        ctx = FunctionCtx()
        ctx._ad_cls = cls
        ctx._ad_mask = tuple(isinstance(a, Tensor) for a in args)
        ctx._ad_kwargs = kwargs
        ctx._ad_tensors = any(isinstance(_bottom(a), Tensor) for a in args)
        ctx.needs_input_grad = tuple(_needs_grad(a) for a in args)
        ctx._ad_args = args
        try:
            outs = bind(_primitive_of(cls), *args, ctx=ctx, spec=())
        except BaseException:
            ctx._ad_args = None
            raise
        return ctx._ad_outputs(args, outs)


FUNCTION_DEFAULTS.update(
    {name: getattr(Function, name) for name in ("setup_context", "backward", "vjp", "vmap")}
)

# ---------------------------------------------------------------------------------------------
# once_differentiable

# torch's DelayedError node: one node over all the outputs of a once-differentiable backward
# (None outputs enter as constants, edges of no gradient), whose own backward raises.
_delayed_error_p = Primitive("delayed_error", multiple_results=True)
_delayed_error_p.impl = lambda *xs: tuple(xs)
_delayed_error_p.abstract_eval = lambda *avals: tuple(avals)
_delayed_error_p.jvp = lambda primals, tangents, *, out: tuple(tangents)
_delayed_error_p.batch = lambda values, dims: (tuple(values), tuple(dims))


def _raise_twice(cts, *xs, out):
    raise RuntimeError(
        "trying to differentiate twice a function that was marked with @once_differentiable"
    )


_delayed_error_p.vjp = _raise_twice


def _delayed_error(outputs: tuple) -> tuple:
    """`outputs` (of a backward run without recording) through one DelayedError node: each
    level-0 one as a fresh tensor that requires grad, as torch's `fake_requires_grad`."""
    slots = [
        isinstance(g, np.ndarray) or (isinstance(g, Tensor) and g._trace is EVAL_TRACE)
        for g in outputs
    ]
    if not any(slots):
        return outputs
    args = []
    for g, fake in zip(outputs, slots):
        if fake:
            g = Tensor._from(g._value if isinstance(g, Tensor) else g)
            g._requires_grad = True
        else:  # (None, a number, or a tracer: it passes by, an input without a gradient edge)
            g = Tensor._from(np.zeros(()))
        args.append(g)
    errs = bind(_delayed_error_p, *args)
    return tuple(e if fake else g for g, e, fake in zip(outputs, errs, slots))


def once_differentiable(fn):
    """Decorate a `backward` that is not itself differentiable.

    It runs without recording; if a differentiable backward pass (`create_graph=True`)
    needs its result, differentiating it again raises a clear error.

    Example:
        >>> import autodiff as ad
        >>> class Cube(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...     @staticmethod
        ...     @once_differentiable
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 3 * x ** 2 * g
        >>> x = ad.tensor([2.0], requires_grad=True)
        >>> Cube.apply(x).sum().backward(); x.grad
        tensor([12.])
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not state().grad_enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        if isinstance(outputs, tuple):
            return _delayed_error(outputs)
        return _delayed_error((outputs,))[0]

    return wrapper


Function._backward_cls = function_node_class("FunctionBackward")
set_function_ctx(FunctionCtx)
GraphNode.register(FunctionCtx)  # (a ctx is a Node, as torch's: there it is the node itself)


class InplaceFunction(Function):
    """A Function that may work in place (torch's legacy base class; `inplace` is kept for
    the subclass to read).

    Example:
        >>> issubclass(InplaceFunction, Function)
        True
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


__all__ = [
    "BackwardCFunction",
    "Function",
    "FunctionCtx",
    "InplaceFunction",
    "VmapInfo",
    "once_differentiable",
]
