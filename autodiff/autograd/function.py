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

import copy
import functools
import inspect
import sys
import warnings
import weakref
from typing import Any, NamedTuple

import numpy as np

from autodiff.autograd._nodes import (
    BackwardCFunction,
    function_node_class,
    register_node_class,
    set_function_ctx,
    unpack_saved,
)
from autodiff.autograd._saved import check_versions
from autodiff.autograd._views import write_view
from autodiff.autograd.grad_mode import no_grad
from autodiff.autograd.graph import Node as GraphNode
from autodiff.core import views
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.graph import Packed, version_of
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.numpy import moveaxis
from autodiff.numpy import sum as sum_
from autodiff.ops.elementwise import astype, conj_complex
from autodiff.ops.structural import shape_of, sum_to_shape
from autodiff.reverse.accumulate import RELEASED_MESSAGE
from autodiff.reverse.graph import ReverseTrace
from autodiff.vmap import vmap

_FUNCTORCH_HINT = (
    "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
    "...), it must override the setup_context staticmethod."
)


class VmapInfo(NamedTuple):
    """What a `vmap` staticmethod learns about the vmap it runs under.

    Example:
        >>> VmapInfo(batch_size=3, randomness="error").batch_size
        3
    """

    batch_size: int
    randomness: str


class FunctionCtx:
    """The `ctx` of one `Function.apply` call.

    Save what the derivative rules need with `save_for_backward` (tensors) or as
    attributes (anything else); read it back in `backward`/`jvp` as `saved_tensors`.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> class Square(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         ctx.note = "squared"
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> x = ad.tensor([3.0], requires_grad=True)
        >>> Square.apply(x).sum().backward(); x.grad
        tensor([6.])
    """

    def __init__(self):
        self.needs_input_grad: tuple = ()
        self.materialize_grads = True
        self.to_save: tuple = ()
        self.saved_for_forward = None
        self.dirty_tensors: tuple = ()
        self.non_differentiable: tuple = ()
        self._ad_cls = None
        self._ad_mask: tuple = ()  # which inputs are Tensors
        self._ad_kwargs: dict = {}
        self._ad_tensors = True  # user code sees Tensors (False: NumPy inputs, arrays stay arrays)
        self._ad_out_spec = None  # (is_tuple, (("t", j) | ("c", value), ...))
        self._ad_refs = None  # saved tensors as ("in", i) | ("out", j) | ("const", v) | None
        self._ad_fwd_refs = None
        self._ad_dirty: dict = {}  # output j -> (input i, in-place bumps inside forward)
        self._ad_view_bases: dict = {}  # output j -> the temporary it is a view of (forward)
        self._ad_nondiff: frozenset = frozenset()
        self._ad_saved = None  # the resolved saved tensors while a rule runs
        self._ad_resetup = False
        self._ad_args = None  # the apply call's arguments, while it runs (forward sees them)
        self._ad_originals: dict = {}  # saved level-0 inputs: i -> the Tensor itself
        # the level-0 node (saved_tensors outside the rules): a weakref until a rule hands this
        # ctx to user code, then the node itself
        self._ad_node = None
        self._ad_cleared = False  # saved_tensors was read (clear_saved_tensors_on_access)
        self._ad_accessed = False  # saved_tensors was read in the rule running
        self._ad_current_refs = None  # the refs of the rule running (backward's or jvp's)

    # ---- the torch ctx API ----
    def save_for_backward(self, *tensors) -> None:
        """Save tensors (inputs, outputs or others) for `backward`; `None` entries are allowed."""
        _check_savable("save_for_backward", tensors)
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Save tensors for `jvp` (read back as `saved_tensors` inside `jvp`)."""
        _check_savable("save_for_forward", tensors)
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that `forward` modified in place (they must be returned as outputs)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs without a derivative: they do not require grad; their grads are zeros."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With True (the default), missing (None) grads become zeros before `backward`/`jvp`."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to `save_for_backward` (to `save_for_forward` inside `jvp`).

        Inputs come back as the very tensors that were saved, as in torch. Outside the rules
        (from the node, `y.grad_fn.saved_tensors`) they are read from the graph, with torch's
        error once a backward pass has freed it."""
        if self._ad_refs is None:  # (during forward or setup_context)
            return tuple(self.to_save)
        if self._ad_saved is None:
            node = self._ad_node_alive()
            if node is None:
                raise RuntimeError(RELEASED_MESSAGE)
            return self._ad_saved_of(node)
        self._ad_check_cleared()
        if self._ad_accessed:
            saved = self._ad_unpack_again()
        else:
            saved = self._ad_saved
            self._ad_accessed = True
        self._ad_clear_on_access()
        return saved

    def _ad_unpack_again(self) -> tuple:
        """A backward's second read of saved_tensors: as in torch, each read unpacks the
        values saved through saved-tensor hooks again (the first read, those the engine
        unpacked for the rule); the others are as read before."""
        node = self._ad_node_alive()
        first = self._ad_saved
        if self._ad_current_refs is not self._ad_refs or node is None:
            return first
        primals, out = node.primals, node.out
        if primals is None or out is None:
            raise RuntimeError(RELEASED_MESSAGE)
        saved = []
        for r, v in zip(self._ad_refs, first):
            linked = isinstance(v, Tensor) and v._edge is not None
            if r is not None and r[0] == "in" and isinstance(primals[r[1]], Packed):
                v = unpack_saved(primals[r[1]], node.parents[r[1]] if linked else None)
            elif r is not None and r[0] == "out" and isinstance(out[r[1]], Packed):
                value = unpack_saved(out[r[1]], None)._value
                v = Tensor._from(value, (node, r[1]) if linked else None)
            elif r is not None and r[0] == "const" and isinstance(r[1], Packed):
                v = unpack_saved(r[1], None)
            saved.append(v)
        return tuple(saved)

    @property
    def saved_variables(self) -> tuple:
        """Deprecated alias of `saved_tensors` (torch's warning)."""
        warnings.warn(
            "'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2
        )
        return self.saved_tensors

    # ---- internals ----
    def _ad_saves_tensors(self) -> bool:
        """Whether the Function saved a tensor for backward (else its node may run twice)."""
        return any(r is not None for r in (self._ad_refs or ()))

    def _ad_node_alive(self):
        """This call's level-0 node, if it still exists."""
        node = self._ad_node
        return node() if isinstance(node, weakref.ref) else node

    def _ad_check_cleared(self) -> None:
        if self._ad_cleared:
            raise RuntimeError(
                "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True "
                "is set on the autograd.Function. Either access saved_tensors only once, or set "
                "clear_saved_tensors_on_access=False."
            )

    def _ad_clear_on_access(self) -> None:
        """With the Function's `clear_saved_tensors_on_access`, after a read of saved_tensors:
        drop every reference kept here to the saved tensors (the reader's are the last)."""
        if not self._ad_cls.clear_saved_tensors_on_access:
            return
        self._ad_cleared = True
        self._ad_saved = ()
        self._ad_originals = {}
        node = self._ad_node_alive()
        if node is not None and node.versions is not None:  # (their version checks)
            node.versions = [None] * len(node.versions)

    def _ad_saved_of(self, node) -> tuple:
        """The saved tensors, read from `node` (this call's level-0 node) outside the rules."""
        self._ad_check_cleared()
        saved = self._ad_resolve_saved(node)
        self._ad_clear_on_access()
        return saved

    def _ad_resolve_saved(self, node) -> tuple:
        primals, out = node.primals, node.out
        if primals is None or out is None:
            raise RuntimeError(RELEASED_MESSAGE)
        check_versions(node)
        saved = []
        for r in self._ad_refs:
            if r is None:
                saved.append(None)
            elif r[0] == "in":
                original = self._ad_originals.get(r[1])
                value = primals[r[1]]
                if isinstance(value, Packed):
                    saved.append(unpack_saved(value, node.parents[r[1]]))
                else:
                    saved.append(original if original is not None else _wrap(value))
            elif r[0] == "out":
                value = out[r[1]]
                if isinstance(value, Packed):
                    value = unpack_saved(value, None)._value
                saved.append(Tensor._from(value, (node, r[1])))
            else:
                value = r[1]
                saved.append(unpack_saved(value, None) if isinstance(value, Packed) else value)
        return tuple(saved)

    def _ad_original(self, i: int, v):
        """Input `i` as forward and the rules see it: the caller's Tensor itself when `v` is
        its value at level 0 (identity, as in torch), else `v` wrapped."""
        args = self._ad_args
        original = args[i] if args is not None else self._ad_originals.get(i)
        if (
            isinstance(original, Tensor)
            and original._trace is EVAL_TRACE
            and (v is original._value or (isinstance(v, Tensor) and v._value is original._value))
        ):
            return original
        return None

    @property
    def _ad_name(self) -> str:
        return f"{self._ad_cls.__name__}Backward"

    def _ad_lift(self, v):
        return _wrap(v) if self._ad_tensors else v

    def _ad_wrap_input(self, i: int, v, always: bool = False):
        if not self._ad_mask[i]:
            return v
        return _wrap(v) if always or self._ad_tensors else v

    def _ad_call_forward(self, args: list):
        cls = self._ad_cls
        if _is_new_style(cls):
            output = cls.forward(*args, **self._ad_kwargs)
            cls.setup_context(self, tuple(args), output)
            return output
        return cls.forward(self, *args, **self._ad_kwargs)

    def _ad_finish(self, args, output, *, per_example: bool = False) -> tuple:
        """After forward/setup_context: record the output structure, the saved tensors by
        position, dirty and non-differentiable outputs; return the tensor outputs.

        `per_example`: forward ran under the temporary vmaps of a generated vmap rule; if
        setup_context kept tracers of those (saved intermediates, tensor attributes), each
        rule sets up a copy of this ctx again from its own values (see `_ad_for_rule`).
        """
        items = list(output) if isinstance(output, tuple) else [output]
        entries, tensors = [], []
        positions: dict = {}  # (a tensor returned twice is one output, returned twice: torch)
        for o in items:
            if isinstance(o, (Tensor, np.ndarray)):
                j = positions.get(id(o))
                if j is None:
                    j = positions[id(o)] = len(tensors)
                    tensors.append(o)
                entries.append(("t", j))
            else:
                entries.append(("c", o))
        self._ad_out_spec = (isinstance(output, tuple), tuple(entries))
        # Outputs that are views of a temporary made in forward stay views of it (torch).
        self._ad_view_bases = {
            j: o._view.base
            for j, o in enumerate(tensors)
            if isinstance(o, Tensor) and getattr(o, "_view", None) is not None
        }
        in_index = {id(a): i for i, a in enumerate(args) if self._ad_mask[i]}
        out_index = {id(o): j for j, o in enumerate(tensors)}
        dirty = {}
        for t in self.dirty_tensors:
            i, j = in_index.get(id(t)), out_index.get(id(t))
            if i is None:
                message = (
                    "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors "
                    "that have been mutated should be passed to ctx.mark_dirty()."
                )
                if getattr(t, "_view", None) is not None:  # (a view of an intermediate: torch)
                    raise RuntimeError(message)
                warnings.warn(message, UserWarning, stacklevel=2)
                continue
            if j is None:
                raise RuntimeError(
                    "Some elements marked as dirty during the forward method were not returned "
                    "as output. The inputs that are modified inplace must all be outputs of the "
                    "Function."
                )
            original = self._ad_args is not None and self._ad_args[i] is t
            dirty[j] = (i, version_of(t) if isinstance(t, Tensor) and not original else 0)
        nondiff = {out_index[id(t)] for t in self.non_differentiable if id(t) in out_index}
        nondiff |= {j for j, o in enumerate(tensors) if not is_inexact(dtype_of(o))}
        dirty_inputs = {i for i, _ in dirty.values()}

        def ref(t):
            if t is None:
                return None
            i, j = in_index.get(id(t)), out_index.get(id(t))
            if j is not None and (i is None or i in dirty_inputs):
                return ("out", j)
            if i is not None:
                return ("in", i)
            if isinstance(t, Tensor) and t._trace is EVAL_TRACE and not t.requires_grad:
                return ("const", t._value)
            return ("const", t)

        self._ad_refs = tuple(ref(t) for t in self.to_save)
        if self.saved_for_forward is not None:
            self._ad_fwd_refs = tuple(ref(t) for t in self.saved_for_forward)
        self._ad_dirty = dirty
        self._ad_nondiff = frozenset(nondiff)
        # the rules resolve saved tensors by position: drop the references
        self.to_save = self.dirty_tensors = self.non_differentiable = ()
        self.saved_for_forward = None
        if per_example:
            self._ad_resetup = any(
                isinstance(v, Tensor) and v._trace is not EVAL_TRACE
                for v in (
                    *vars(self).values(),
                    *(
                        r[1]
                        for r in self._ad_refs + (self._ad_fwd_refs or ())
                        if r is not None and r[0] == "const"
                    ),
                )
            )
        return tuple(tensors)

    def _ad_for_rule(self, ins, outs) -> FunctionCtx:
        """The ctx a rule hands to user code: this one, or a copy set up from the rule's own
        values when this one cannot serve (its forward ran through a `vmap` staticmethod,
        which applies the Function anew, or it kept per-example tracers) — as torch.func
        calls setup_context at each level."""
        if self._ad_refs is not None and not self._ad_resetup:
            return self
        view = copy.copy(self)
        view._ad_resetup = False
        is_tuple, entries = self._ad_out_spec
        items = [outs[e[1]] if e[0] == "t" else e[1] for e in entries]
        output = tuple(items) if is_tuple else items[0]
        self._ad_cls.setup_context(view, tuple(ins), output)
        view.dirty_tensors = ()  # in-place semantics belong to the imperative level only
        view._ad_finish(ins, output)
        return view

    def _ad_call(self, user_fn, refs, ins, outs, args, boxed: bool = False):
        """Call `backward`/`jvp` with `saved_tensors` resolved against this rule's values
        (`boxed`: the args as one list, torch's `boxed_grads_call`)."""
        previous = self._ad_saved
        saved = []
        for r in refs:
            if r is None:
                saved.append(None)
            elif r[0] == "in":
                original = self._ad_original(r[1], ins[r[1]])
                saved.append(ins[r[1]] if original is None else original)
                del original
            elif r[0] == "out":
                saved.append(outs[r[1]])
            elif isinstance(r[1], Packed):  # (hooks set through _raw_saved_tensors)
                saved.append(unpack_saved(r[1], None))
            else:
                saved.append(self._ad_lift(r[1]))
        self._ad_saved = tuple(saved)
        del saved  # (with clear_saved_tensors_on_access, backward holds the last references)
        previous_state = self._ad_accessed, self._ad_current_refs
        self._ad_accessed, self._ad_current_refs = False, refs
        # The user's code may keep this ctx (stash it) and read saved_tensors later, as in
        # torch, where the ctx holds its node. While the backward runs it does; afterwards only
        # if the user's code kept a reference to the ctx (a cycle through the node's params,
        # which the collector frees): otherwise the node is freed with its graph, as before.
        weak = isinstance(self._ad_node, weakref.ref)
        if weak:
            self._ad_node = self._ad_node()
        references = sys.getrefcount(self)
        try:
            return user_fn(self, list(args)) if boxed else user_fn(self, *args)
        finally:
            self._ad_saved = previous
            self._ad_accessed, self._ad_current_refs = previous_state
            if weak and self._ad_node is not None and sys.getrefcount(self) <= references:
                self._ad_node = weakref.ref(self._ad_node)

    def _ad_grad_outputs(self, cts, outs) -> list:
        """One grad per forward output: None for non-Tensor outputs, zeros when materialized."""
        grads = []
        entries = self._ad_out_spec[1]
        # (an output returned twice gets its gradient at its last position, as in torch)
        last = {j: pos for pos, (kind, j) in enumerate(entries) if kind == "t"}
        for pos, (kind, j) in enumerate(entries):
            if kind == "c":
                grads.append(None)
                continue
            nondiff = j in self._ad_nondiff
            g = None if nondiff or last[j] != pos else cts[j]
            # (torch's private `ctx._materialize_non_diff_grads = False` keeps None for outputs
            # marked non-differentiable)
            if (
                g is None
                and self.materialize_grads
                and not (nondiff and not getattr(self, "_materialize_non_diff_grads", True))
            ):
                g = np.zeros(shape_of(outs[j]), dtype_of(outs[j]))
            grads.append(self._ad_lift(g))
        return grads

    def _ad_check_grads(self, result, ins) -> tuple:
        """torch's checks of what backward returned: count, non-Tensor inputs, shapes, dtypes."""
        grads = result if isinstance(result, tuple) else (result,)
        n = len(ins)
        if len(grads) > n and all(g is None for g in grads[n:]):
            grads = grads[:n]
        if len(grads) != n:
            raise RuntimeError(
                f"function {self._ad_name} returned an incorrect number of gradients (expected "
                f"{n}, got {len(grads)})"
            )
        checked = []
        for i, (g, x) in enumerate(zip(grads, ins)):
            if g is None:
                checked.append(None)
                continue
            if not self._ad_mask[i]:
                raise RuntimeError(
                    f"function {self._ad_name} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a Variable"
                )
            if not self.needs_input_grad[i]:  # dropped unchecked, as in torch
                checked.append(None)
                continue
            g = _as_array(g)
            g_shape, x_shape = tuple(shape_of(g)), tuple(shape_of(x))
            if g_shape != x_shape:
                if not _expandable(x_shape, g_shape):
                    raise RuntimeError(
                        f"Function {self._ad_name} returned an invalid gradient at index {i} - got "
                        f"{list(g_shape)} but expected shape compatible with {list(x_shape)}"
                    )
                g = sum_to_shape(g, x_shape)
            checked.append(_grad_in_dtype(self, i, g, x))
        return tuple(checked)

    def _ad_check_tangents(self, result, outs, tangents_in=(), versions=None) -> tuple:
        """torch's checks of what jvp returned: count, None for non-differentiable outputs,
        shapes; an output marked dirty gets its input's tangent, modified in place (given
        `tangents_in` and their `versions` before jvp ran)."""
        entries = self._ad_out_spec[1]
        tangents = result if isinstance(result, tuple) else (result,)
        if len(tangents) != len(entries):
            raise RuntimeError(
                "Function's jvp returned an invalid number of forward gradients (expected "
                f"{len(entries)} but got {len(tangents)})"
            )
        checked = []
        last = {j: pos for pos, (kind, j) in enumerate(entries) if kind == "t"}
        for pos, ((kind, j), t) in enumerate(zip(entries, tangents)):
            if kind == "c" or last[j] != pos:
                continue
            dirty = self._ad_dirty.get(j)
            if dirty is not None and versions is not None and dirty[0] in versions:
                given = tangents_in[dirty[0]]
                if t is not given or version_of(given) == versions[dirty[0]]:
                    raise RuntimeError(
                        "An inplace custom Function is not modifying the forward mode gradients "
                        "inplace. If the forward is modifying an input inplace, then the jvp "
                        "function must modify the corresponding gradient inplace."
                    )
            if j in self._ad_nondiff:
                if t is not None:
                    raise RuntimeError(
                        f"Function's jvp returned a gradient at position {pos}, but  the "
                        "corresponding forward output is not a differentiable Tensor.You should "
                        "return None at that position instead."
                    )
                checked.append(None)
                continue
            if t is None:
                checked.append(None)
                continue
            t = _as_array(t)
            t_shape, o_shape = tuple(shape_of(t)), tuple(shape_of(outs[j]))
            if t_shape != o_shape:
                raise RuntimeError(
                    "Trying to set a forward gradient that has a different size than that of the "
                    "original Tensor, this is not supported. Tensor is of size "
                    f"{list(o_shape)} while the given forward gradient is of size {list(t_shape)}."
                )
            checked.append(_in_dtype_of_float(t, outs[j]))
        return tuple(checked)

    def _ad_outputs(self, args: tuple, outs: tuple):
        """Rebuild what forward returned around the primitive's outputs (the apply result)."""
        outs = list(outs)
        node = next(
            (
                o._edge[0]
                for o in map(_undual, outs)
                if isinstance(o, Tensor) and o._trace is EVAL_TRACE and o._edge is not None
            ),
            None,
        )
        if node is not None:
            self._ad_trim_versions(node)
            self._ad_node = weakref.ref(node)
        # Keep the saved level-0 inputs themselves (the rules hand them back as they were).
        self._ad_originals = {
            r[1]: args[r[1]]
            for r in (self._ad_refs or ()) + (self._ad_fwd_refs or ())
            if r is not None
            and r[0] == "in"
            and isinstance(args[r[1]], Tensor)
            and args[r[1]]._trace is EVAL_TRACE
        }
        self._ad_args = None
        for j, o in enumerate(outs):
            if j in self._ad_dirty and _is_dual(args[self._ad_dirty[j][0]]):
                outs[j] = _rebase_dirty_dual(args[self._ad_dirty[j][0]], self._ad_dirty[j], o, node)
                continue
            if not (isinstance(o, Tensor) and o._trace is EVAL_TRACE):
                continue
            if j in self._ad_nondiff and o._edge is not None:
                o = Tensor._from(o._value)
            several = sum(isinstance(x, Tensor) for x in outs) > 1
            if j in self._ad_dirty:
                o = _rebase_dirty(args, self._ad_dirty[j], o, node, several=several)
            elif type(o._value) is np.ndarray:
                bases = list(args) + [self._ad_view_bases.get(j)]
                _mark_output_view(o, j, bases, self._ad_cls.__name__, several)
            outs[j] = o
        is_tuple, entries = self._ad_out_spec
        items = [outs[e[1]] if e[0] == "t" else e[1] for e in entries]
        return tuple(items) if is_tuple else items[0]

    def _ad_trim_versions(self, node) -> None:
        """Like torch, check in-place modification only of the inputs that were saved."""
        saved = {
            r[1]
            for r in (self._ad_refs or ()) + (self._ad_fwd_refs or ())
            if r is not None and r[0] == "in"
        }
        if node.versions is not None:
            node.versions = [v if i in saved else None for i, v in enumerate(node.versions)]


def _is_dual(a) -> bool:
    """Whether `a` is a torch-style dual tensor (of a live `forward_ad.dual_level`)."""
    return isinstance(a, ForwardTracer) and a._trace.dual and a._trace.alive


def _undual(o):
    """`o` under its torch-style dual levels (a level-0 Tensor for the torch face)."""
    while _is_dual(o):
        o = o._value
    return o


def _rebase_dirty_dual(arg, dirty, out, node):
    """A dirty dual input becomes the output: its primal rebased as at level 0, its tangent
    the one jvp returned (the input's own, modified in place), the same dual object."""
    inner = out._value if isinstance(out, ForwardTracer) and out._trace is arg._trace else out
    tangent = out._tangent if inner is not out else None
    if _is_dual(arg._value):
        arg._value = _rebase_dirty_dual(arg._value, dirty, inner, node)
    elif isinstance(inner, Tensor) and inner._trace is EVAL_TRACE:
        arg._value = _rebase_dirty((arg._value,), (0, dirty[1]), inner, node, index=dirty[0])
    arg._tangent = tangent
    return arg


def _mark_output_view(out: Tensor, j: int, args, name: str, several: bool) -> None:
    """An output that shares an input's memory (forward returned the input, or a view of it)
    is a view of it, as torch's: made inside a custom Function, an in-place operation on it
    then raises (its backward would be overridden), as one made under no_grad does."""
    for a in args:
        a = _undual(a)
        if a is not None and getattr(a, "_view", None) is not None:
            a = a._view.base
        if (
            isinstance(a, Tensor)
            and a._trace is EVAL_TRACE
            and type(a._value) is np.ndarray
            and np.may_share_memory(out._value, a._value)
        ):
            if not state().grad_enabled:
                creation = views.NO_GRAD_MODE
            else:  # (torch: the one output of a custom Function, or one of several)
                creation = views.MULTI_OUTPUT if several else views.IN_CUSTOM_FUNCTION
            views.mark_view(out, a, name, creation, j)
            return


_DIRTY_VIEW_WITH_OUTPUTS = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. "
    "You should either make sure the input is not a view (using .clone() for example) or make "
    "your Function only return one Tensor (potentially splitting it into two Functions: one doing "
    "the inplace that returns a single Tensor and a second one that does the other operations). "
    "You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change."
)


def _rebase_dirty(args, dirty, out, node, index=None, several=False):
    """A dirty input becomes the output: same object, new history, version bumped (torch).
    (`index`: the input's position in the node when `args` is not the node's inputs.) A dirty
    view is written as an in-place operation on a view is (CopySlices on its base)."""
    i, bumps = dirty
    orig = args[i]
    index = i if index is None else index
    if not (isinstance(orig, Tensor) and orig._trace is EVAL_TRACE):
        return out
    if orig._view is not None:
        if several and state().grad_enabled:
            raise RuntimeError(_DIRTY_VIEW_WITH_OUTPUTS)
        orig._vc += bumps
        write_view(orig, out)
        if node is not None and node.versions is not None and node.versions[index] is not None:
            node.versions[index] = (orig, version_of(orig))
        return orig
    if out._edge is not None and orig._requires_grad and orig._edge is None:
        raise RuntimeError(
            "a leaf Variable that requires grad has been used in an in-place operation."
        )
    orig._value = out._value
    if out._edge is not None:
        orig._edge = out._edge
    orig._vc += bumps + 1
    if node is not None and node.versions is not None and node.versions[index] is not None:
        node.versions[index] = (orig, version_of(orig))
    return orig


def _check_savable(name: str, tensors) -> None:
    for i, t in enumerate(tensors):
        if t is not None and not isinstance(t, (Tensor, np.ndarray)):
            raise TypeError(
                f"{name} can only save variables, but argument {i} is of type {type(t).__name__}"
            )


def _wrap(v):
    """Raw arrays become level-0 Tensors (what user code sees); Tensors and None pass."""
    if v is None or isinstance(v, Tensor):
        return v
    return Tensor._from(v if isinstance(v, np.ndarray) else np.asarray(v))


def _lower(v):
    """A level-0 Tensor without a graph becomes its raw value again."""
    if (
        isinstance(v, Tensor)
        and v._trace is EVAL_TRACE
        and v._edge is None
        and not v._requires_grad
    ):
        return v._value
    return v


def _as_array(g):
    if isinstance(g, (Tensor, np.ndarray, np.generic)):
        return g
    raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")


def _in_dtype_of_float(g, x):
    """A gradient `g` the user returned for `x`, cast to `x`'s dtype when `x` is floating or
    complex; for integer and bool inputs `g` is kept as given."""
    dt = dtype_of(x)
    return astype(g, dt) if is_inexact(dt) and dtype_of(g) != dt else g


def _grad_in_dtype(ctx, i: int, g, x):
    """The gradient `g` backward returned for input `i`, cast as `_in_dtype_of_float` does,
    unless that input is a leaf whose `grad_dtype` is None (torch casts a gradient to the
    dtype its next node takes: any, for such a leaf)."""
    if dtype_of(g) == dtype_of(x):
        return g
    node = ctx._ad_node
    if isinstance(node, weakref.ref):
        node = node()
    parents = getattr(node, "parents", None)
    edge = parents[i] if parents is not None and i < len(parents) else None
    if type(edge) is tuple:
        leaf = edge[0]
        extra = leaf.extra if leaf.prim is None else None
        if extra is not None and extra.grad_dtype is None:
            return g
    return _in_dtype_of_float(g, x)


def _expandable(shape: tuple, desired: tuple) -> bool:
    """Whether `shape` broadcasts to `desired` (then a gradient of shape `desired` is summed)."""
    if len(shape) > len(desired):
        return False
    return all(s == d or s == 1 for s, d in zip(reversed(shape), reversed(desired)))


def _is_new_style(cls) -> bool:
    return cls.setup_context is not Function.setup_context


def _backward_fn(cls):
    has_backward = cls.backward is not Function.backward
    has_vjp = cls.vjp is not Function.vjp
    if has_backward and has_vjp:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
            "should only implement one of them."
        )
    return cls.vjp if has_vjp else cls.backward


def _needs_grad(a) -> bool:
    """Whether some reverse-mode level (the imperative graph or a live grad) tracks `a`."""

    v = a
    while isinstance(v, Tensor):
        if v._trace is EVAL_TRACE:
            return v.requires_grad
        if isinstance(v._trace, ReverseTrace) and v._trace.alive:
            return True
        v = v._value
    return False


def _bottom(a):
    """The concrete value under all levels of `a`: a level-0 Tensor or a raw value."""
    while isinstance(a, Tensor) and a._trace is not EVAL_TRACE:
        a = a._value
    return a


def _under_transform(a) -> bool:
    """Whether `a` is a tracer of a live function transform (dual levels do not count)."""

    v = a
    while isinstance(v, Tensor) and v._trace is not EVAL_TRACE:
        t = v._trace
        if t.alive and not (isinstance(t, ForwardTrace) and t.dual):
            return True
        v = v._value
    return False


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
        return c._ad_check_tangents(result, outs, tangents_in, versions)

    in_dims = _input_dims(spec, n_in)
    out_dims = [(0,) * len(spec) if spec else None] * n_out
    values = [*primals, *out, *tangents]
    return _finish_rule(_run_layers(body, spec, values, in_dims + out_dims + in_dims, None), values)


def _batch(values, dims, *, ctx: FunctionCtx, spec: tuple):
    cls = ctx._ad_cls
    size = next(shape_of(v)[d] for v, d in zip(values, dims) if d is not None)
    has_vmap = cls.vmap is not Function.vmap
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
        prim.node_name = f"{cls.__name__}Backward"
        prim.impl = _impl
        prim.vjp = _vjp
        prim.jvp = _jvp
        prim.batch = _batch
        register_node_class(prim, cls._backward_cls)
        cls._ad_primitive = prim
    return prim


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


# ---------------------------------------------------------------------------------------------
# once_differentiable

# torch's DelayedError node: one node over all the outputs of a once-differentiable backward
# (None outputs enter as constants, edges of no gradient), whose own backward raises.
_delayed_error_p = Primitive("delayed_error", multiple_results=True)
_delayed_error_p.node_name = "torch::autograd::Error"
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
