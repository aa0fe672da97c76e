"""ForwardTrace: each tracer carries (primal, tangent); a tangent of None is a symbolic zero.

Primals and tangents are values of the level below, so jvp rules written with
autodiff ops are seen — and differentiated — by every enclosing level.
"""

from __future__ import annotations

from autodiff.core.primitive import dispatch
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, Trace, state


class ForwardTracer(Tensor):
    """A dual number: `_value` is the primal, `_tangent` the tangent (never None)."""

    __slots__ = ("_tangent",)

    def __init__(self, value, trace, tangent):
        self._value = value
        self._trace = trace
        self._edge = None
        self._tangent = tangent


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
