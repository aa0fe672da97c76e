"""The ctx of autograd.Function: what `forward` saves and marks, and how each rule
resolves it against the values it is given (autograd/function.py's docstring)."""

from __future__ import annotations

import copy
import sys
import warnings
import weakref
from typing import Any, NamedTuple

import numpy as np

from autodiff.autograd._nodes import (
    unpack_saved,
)
from autodiff.autograd._saved import check_versions
from autodiff.autograd._views import write_view
from autodiff.core import views
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.graph import Packed, version_of
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.ops.elementwise import astype
from autodiff.ops.structural import shape_of, sum_to_shape
from autodiff.reverse.accumulate import RELEASED_MESSAGE
from autodiff.reverse.graph import ReverseTrace

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
        >>> from autodiff.autograd import Function
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
        entries, tensors = _output_entries(output)
        self._ad_out_spec = (isinstance(output, tuple), tuple(entries))
        # Outputs that are views of a temporary made in forward stay views of it (torch).
        self._ad_view_bases = {
            j: o._view.base
            for j, o in enumerate(tensors)
            if isinstance(o, Tensor) and getattr(o, "_view", None) is not None
        }
        in_index = {id(a): i for i, a in enumerate(args) if self._ad_mask[i]}
        out_index = {id(o): j for j, o in enumerate(tensors)}
        dirty = self._ad_dirty_outputs(in_index, out_index)
        nondiff = {out_index[id(t)] for t in self.non_differentiable if id(t) in out_index}
        nondiff |= {j for j, o in enumerate(tensors) if not is_inexact(dtype_of(o))}
        dirty_inputs = {i for i, _ in dirty.values()}

        def ref(t):
            return _saved_ref(t, in_index, out_index, dirty_inputs)

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

    def _ad_dirty_outputs(self, in_index: dict, out_index: dict) -> dict:
        """{output j: (input i, its version)} for the tensors marked dirty, checked as torch's."""
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
                warnings.warn(message, UserWarning, stacklevel=3)
                continue
            if j is None:
                raise RuntimeError(
                    "Some elements marked as dirty during the forward method were not returned "
                    "as output. The inputs that are modified inplace must all be outputs of the "
                    "Function."
                )
            original = self._ad_args is not None and self._ad_args[i] is t
            dirty[j] = (i, version_of(t) if isinstance(t, Tensor) and not original else 0)
        return dirty

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

    def _ad_check_tangents(self, result, outs, tangents_in=(), versions=None, ins=None) -> tuple:
        """torch's checks of what jvp returned: count, None for non-differentiable outputs,
        shapes; an output marked dirty gets its input's tangent, modified in place (given
        `tangents_in` and their `versions` before jvp ran); an output that is a view of an
        input (or the input itself: `ins`) gets a view of that input's tangent."""
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
            _check_view_tangent(t, outs[j], ins, tangents_in, versions, dirty)
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


def _output_entries(output) -> tuple:
    """forward's output as entries ("t", tensor index) or ("c", constant), and its tensors
    (a tensor returned twice is one output, returned twice: torch)."""
    items = list(output) if isinstance(output, tuple) else [output]
    entries, tensors = [], []
    positions: dict = {}
    for o in items:
        if isinstance(o, (Tensor, np.ndarray)):
            j = positions.get(id(o))
            if j is None:
                j = positions[id(o)] = len(tensors)
                tensors.append(o)
            entries.append(("t", j))
        else:
            entries.append(("c", o))
    return entries, tensors


def _saved_ref(t, in_index: dict, out_index: dict, dirty_inputs: set):
    """Where a saved tensor is found again: ("out", j), ("in", i) or ("const", value)."""
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


def _is_dual(a) -> bool:
    """Whether `a` is a torch-style dual tensor (of a live `forward_ad.dual_level`)."""
    return isinstance(a, ForwardTracer) and a._trace.dual and a._trace.alive


def _raw(x):
    """The NumPy array under a level-0 Tensor (or the array itself); None for anything else."""
    while type(x) is Tensor:
        x = x._value
    return x if isinstance(x, np.ndarray) else None


def _check_view_tangent(t, out, ins, tangents_in, given, dirty) -> None:
    """torch's check of a custom Function whose forward returns a view of an input (or the
    input as-is): jvp must return a view of that input's tangent (`given`: the inputs whose
    tangents were passed to jvp; a `dirty` output, modified in place, has its own check)."""
    out_raw = _raw(out)
    if out_raw is None or given is None or ins is None or dirty is not None:
        return
    for k, x in enumerate(ins):
        x_raw = _raw(x)
        if k not in given or x_raw is None or not np.may_share_memory(out_raw, x_raw):
            continue
        if not (type(t) is Tensor and t._is_view()):
            raise RuntimeError(
                "A custom Function's forward is returning a view (or an input as-is) but the "
                "jvp is not returning a view."
            )
        grad_in = tangents_in[k]
        if t._base is not grad_in and t._base is not grad_in._base:
            # (torch's message tells whether the input given was itself a view)
            of_a_view = grad_in._is_view() or (type(x) is Tensor and x._is_view())
            raise RuntimeError(
                "A custom Function is returning a view but the jvp is not returning a view of "
                + (
                    "the same base as the given grad input."
                    if of_a_view
                    else "the given grad input."
                )
            )
        return


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


# Function's own static methods (its defaults), by name: a class whose attribute is one of
# these did not write its own. autograd/function.py, above this module, fills it.
FUNCTION_DEFAULTS: dict[str, Any] = {}


def overrides(cls, name: str) -> bool:
    """Whether the Function class `cls` defines its own `name` (setup_context, vmap, ...)."""
    return getattr(cls, name) is not FUNCTION_DEFAULTS[name]


def _is_new_style(cls) -> bool:
    return overrides(cls, "setup_context")


def _backward_fn(cls):
    has_backward = overrides(cls, "backward")
    has_vjp = overrides(cls, "vjp")
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
