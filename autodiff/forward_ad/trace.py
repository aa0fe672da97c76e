"""ForwardTrace: each tracer carries (primal, tangent); a tangent of None is a symbolic zero.

Primals and tangents are values of the level below, so jvp rules written with
autodiff ops are seen — and differentiated — by every enclosing level.
"""

from __future__ import annotations

import numpy as np
from numpy import ndarray

from autodiff.core.dtypes import SCALARS
from autodiff.core.primitive import bind, dispatch
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, Trace, state
from autodiff.ops.rearrange import copy_p


class ForwardTracer(Tensor):
    """A dual number: `_value` is the primal, `_tangent` the tangent (None only for a torch
    dual tensor detached in place: a symbolic zero)."""

    __slots__ = ("_tangent", "_alias")

    def __init__(self, value, trace, tangent, alias: bool = False):
        self._value = value
        self._trace = trace
        self._edge = None
        self._tangent = tangent
        # made by torch's make_dual: an alias (a view) of its primal tensor, as torch's dual
        self._alias = alias

    # ---- a torch dual tensor is its primal's memory: storage, version, views read through ----
    def _level0_primal(self, what: str):
        """The level-0 tensor under a live torch dual tensor (its memory), else an error."""
        t = self
        while type(t) is ForwardTracer and t._trace.dual and t._trace.alive:
            t = t._value
        if type(t) is not Tensor or t._trace is not EVAL_TRACE:
            raise RuntimeError(f"{what} needs a level-0 tensor (or a dual tensor of one)")
        return t

    def untyped_storage(self):
        """`untyped_storage()` of a dual tensor: its primal's (they share memory, as torch's)."""
        return self._level0_primal("untyped_storage()").untyped_storage()

    def storage(self):
        """`storage()` of a dual tensor: its primal's (they share memory, as torch's)."""
        return self._level0_primal("storage()").storage()

    def data_ptr(self) -> int:
        """`data_ptr()` of a dual tensor: its primal's (they share memory, as torch's)."""
        return self._level0_primal("data_ptr()").data_ptr()

    def storage_offset(self) -> int:
        """`storage_offset()` of a dual tensor: its primal's."""
        return self._level0_primal("storage_offset()").storage_offset()

    def numpy(self, *, force: bool = False):
        """`numpy()` of a torch dual tensor: its primal's array (torch's; the tangent is not
        part of the data). A function transform's tracer raises (its derivative would be lost)."""
        trace = self._trace
        if trace.dual and trace.alive:
            return self._value.numpy(force=force)
        return Tensor.numpy(self, force=force)

    @property
    def _version(self) -> int:
        """The version counter of the primal (a dual tensor shares its primal's, as torch's)."""
        v = self._value
        return v._version if isinstance(v, Tensor) else 0

    def _is_view(self) -> bool:
        """A dual tensor made by make_dual is a view of its primal (as torch's, outside
        inference mode); a result is a view when its primal is."""
        if self._alias:
            return True
        is_view = getattr(self._value, "_is_view", None)
        return bool(is_view()) if is_view is not None else False

    @property
    def _base(self):
        """The tensor this dual tensor is a view of (None if it is not a view)."""
        primal = self._value
        base = getattr(primal, "_base", None)
        if self._alias and base is None:
            return primal
        return base

    def __repr__(self) -> str:
        # A torch-style dual tensor prints as torch's: its primal, then `tangent=...`.
        trace = self._trace
        if trace.alive and trace.dual and type(self._value) is Tensor:
            primal = repr(self._value)
            tangent = self._tangent
            tangent = repr(tangent if isinstance(tangent, Tensor) else Tensor._from(tangent))
            return f"{primal[:-1]}, tangent={tangent})"
        return Tensor.__repr__(self)

    __str__ = __repr__

    def _assign_inplace(self, result, since=None):
        """An in-place operation on a torch-style dual tensor changes it in place, as torch's:
        the primal as a level-0 tensor's in-place update (its buffer written, its version
        bumped, or the update recorded), the tangent written into its buffer where it is a
        view of another tangent (so the dual it was taken from sees the change), else
        replaced. A function transform's tracer is updated functionally (Tensor's)."""
        trace = self._trace
        if not (trace.dual and trace.alive):
            return Tensor._assign_inplace(self, result, since)
        if isinstance(result, ForwardTracer) and result._trace is trace:
            primal, tangent = result._value, result._tangent
        else:
            primal, tangent = result, None
        old = self._tangent
        if (
            _writable_tangent(old, tangent)
            and old._requires_grad
            and old._edge is None
            and state().grad_enabled
        ):  # (checked before the primal is written: an error leaves both unchanged)
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        mine = self._value
        if type(mine) is Tensor and mine._trace is EVAL_TRACE:
            mine._assign_inplace(primal)
        else:
            self._value = primal
        self._tangent = _updated_tangent(old, tangent)
        return self


class ForwardTrace(Trace):
    """Propagates tangents through every primitive with its jvp rule."""

    __slots__ = ("dual",)

    def __init__(self, level: int, dual: bool = False):
        super().__init__(level)
        self.dual = dual  # a torch-style dual level: its tracers lower to their primal once it ends

    def lower(self, tracer):
        if self.dual:
            return tracer._value
        return super().lower(tracer)

    def process(self, prim, args, params):
        primals = []
        tangents = []
        any_tangent = False
        lower = False  # does any primal belong to a lower trace?
        for a in args:
            if isinstance(a, Tensor) and a._trace is self:
                tangents.append(a._tangent)
                any_tangent = True
                a = a._value
            else:
                tangents.append(None)
            primals.append(a)
            if isinstance(a, Tensor):
                lower = True
        if (
            prim.jvp_computes_primal
            and any_tangent
            and not (self.dual and not state().fw_grad_enabled)
        ):
            out, t_out = prim.jvp(tuple(primals), tuple(tangents), **params)
            return self._wrap(prim, out, t_out, primals, tangents)
        out = dispatch(prim, primals, params) if lower else prim.impl(*primals, **params)
        if not prim.differentiable or not any_tangent:
            return out
        if self.dual and not state().fw_grad_enabled:  # inference_mode
            return out
        rule = prim.jvp or prim.rule("jvp")
        t_out = rule(tuple(primals), tuple(tangents), out=out, **params)
        if self.dual:
            _annotate_level0_node(self, prim, args, out, t_out)
        return self._wrap(prim, out, t_out, primals, tangents)

    def _wrap(self, prim, out, t_out, primals=(), tangents=()):
        if prim.multiple_results:
            if self.dual:
                t_out = [_unaliased(primals, tangents, o, t) for o, t in zip(out, t_out)]
            return tuple(self.dual_value(o, t) for o, t in zip(out, t_out))
        if self.dual:
            t_out = _unaliased(primals, tangents, out, t_out)
        return self.dual_value(out, t_out)

    def dual_value(self, primal, tangent):
        """`primal` with `tangent` at this level (`primal` itself for a None tangent)."""
        return primal if tangent is None else ForwardTracer(primal, self, tangent)


def _annotate_level0_node(trace, prim, args, out, t_out) -> None:
    """Tell the level-0 node this dual operation recorded (if any) about its dual inputs."""
    first = out[0] if prim.multiple_results else out
    edge = getattr(first, "_edge", None)
    if edge is None or first._trace is not EVAL_TRACE or edge[0].prim is not prim:
        return
    edge[0]._extra().dual = (trace, args, t_out)


def _writable_tangent(old, new) -> bool:
    """Whether an in-place update of a dual tensor writes its new tangent `new` into the
    tangent tensor `old` (torch's: the tangent is updated in place, so a tangent given to
    make_dual, and the tangents of views sharing its memory, see the change)."""
    if type(old) is not Tensor or old._trace is not EVAL_TRACE:
        return False
    target = old._value
    if type(target) is not ndarray or not target.flags.writeable:
        return False
    if new is None:
        return True
    value = new._value if type(new) is Tensor and new._trace is EVAL_TRACE else new
    return type(value) in (ndarray, *SCALARS) and np.shape(value) == target.shape


def _updated_tangent(old, new):
    """A dual tensor's tangent after an in-place update to `new` (None: zero): written into
    `old` (a level-0 tensor: its version bumped, views of it updated) where it can hold it,
    else `new` itself."""
    if not _writable_tangent(old, new):
        return new
    if new is None:
        new = np.zeros(old._value.shape, old._value.dtype)
    old._assign_inplace(new)
    return old


def _unaliased(primals, tangents, out, t_out):
    """`t_out`, copied where it shares memory with an input's tangent although the primal
    result does not share that input's memory (a rule that passes a tangent through, e.g.
    a copy's): an in-place update of the result, which writes its tangent in place, must
    not change the input's tangent. (A view's tangent stays a view of its base's.)"""
    t_val = t_out._value if type(t_out) is Tensor and t_out._trace is EVAL_TRACE else t_out
    if type(t_val) is not ndarray:
        return t_out
    o_val = out._value if type(out) is Tensor and out._trace is EVAL_TRACE else out
    for p, t in zip(primals, tangents):
        t_in = t._value if type(t) is Tensor and t._trace is EVAL_TRACE else t
        if type(t_in) is not ndarray or not np.may_share_memory(t_val, t_in):
            continue
        p_in = p._value if type(p) is Tensor and p._trace is EVAL_TRACE else p
        if type(o_val) is ndarray and type(p_in) is ndarray and np.may_share_memory(o_val, p_in):
            continue
        return bind(copy_p, t_out)
    return t_out
