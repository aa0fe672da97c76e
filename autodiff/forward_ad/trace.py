"""ForwardTrace: each tracer carries (primal, tangent); a tangent of None is a symbolic zero.

Primals and tangents are values of the level below, so jvp rules written with
autodiff ops are seen — and differentiated — by every enclosing level.
"""

from __future__ import annotations

import numpy as np
from numpy import ndarray

from autodiff.core.dtypes import SCALARS
from autodiff.core.primitive import dispatch
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, Trace, state


class ForwardTracer(Tensor):
    """A dual number: `_value` is the primal, `_tangent` the tangent (None only for a torch
    dual tensor detached in place: a symbolic zero)."""

    __slots__ = ("_tangent",)

    def __init__(self, value, trace, tangent):
        self._value = value
        self._trace = trace
        self._edge = None
        self._tangent = tangent

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

    def _assign_inplace(self, result):
        """An in-place operation on a torch-style dual tensor changes it in place, as torch's:
        the primal as a level-0 tensor's in-place update (its buffer written, its version
        bumped, or the update recorded), the tangent written into its buffer where it is a
        view of another tangent (so the dual it was taken from sees the change), else
        replaced. A function transform's tracer is updated functionally (Tensor's)."""
        trace = self._trace
        if not (trace.dual and trace.alive):
            return Tensor._assign_inplace(self, result)
        if isinstance(result, ForwardTracer) and result._trace is trace:
            primal, tangent = result._value, result._tangent
        else:
            primal, tangent = result, None
        mine = self._value
        if type(mine) is Tensor and mine._trace is EVAL_TRACE:
            mine._assign_inplace(primal)
        else:
            self._value = primal
        self._tangent = _updated_tangent(self._tangent, tangent)
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
            return self._wrap(prim, out, t_out)
        out = dispatch(prim, primals, params) if lower else prim.impl(*primals, **params)
        if not prim.differentiable or not any_tangent:
            return out
        if self.dual and not state().fw_grad_enabled:  # inference_mode
            return out
        rule = prim.jvp or prim.rule("jvp")
        t_out = rule(tuple(primals), tuple(tangents), out=out, **params)
        if self.dual:
            _annotate_level0_node(self, prim, args, out, t_out)
        return self._wrap(prim, out, t_out)

    def _wrap(self, prim, out, t_out):
        if prim.multiple_results:
            return tuple(self.dual_value(o, t) for o, t in zip(out, t_out))
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


def _updated_tangent(old, new):
    """A dual tensor's tangent after an in-place update to `new` (None: zero): written into
    `old`'s buffer where `old` is a writable view of another tangent (as torch's views), else
    `new` itself."""
    target = old._value if type(old) is Tensor and old._trace is EVAL_TRACE else old
    if type(target) is ndarray and target.base is not None and target.flags.writeable:
        value = new._value if type(new) is Tensor and new._trace is EVAL_TRACE else new
        if value is None or (
            type(value) in (ndarray, *SCALARS) and np.shape(value) == target.shape
        ):
            target[...] = 0 if value is None else value
            if type(old) is Tensor:
                old._vc += 1
            return old
    return new
