"""BatchTrace: each tracer carries a value with one extra axis, `_bdim`, mapped over by vmap.

Unbatched values are never tracers. Batch rules see lower-level values and their
batch dims (None for unbatched) and return `(out, out_bdim)`; they are written
with autodiff ops, so vmap composes with every other transform.
"""

from __future__ import annotations

from autodiff.core.errors import TracerConversionError
from autodiff.core.tensor import Tensor
from autodiff.core.trace import Trace


class BatchTracer(Tensor):
    """A batch of values: `_value` holds them stacked along axis `_bdim`."""

    __slots__ = ("_bdim",)

    def __init__(self, value, trace, bdim: int):
        self._value = value
        self._trace = trace
        self._edge = None
        self._bdim = bdim

    @property
    def shape(self) -> tuple:
        s = _shape(self._value)
        return s[: self._bdim] + s[self._bdim + 1 :]

    def primal(self):
        raise TracerConversionError(
            "A vmapped value has no single concrete value: Python control flow or conversion "
            "(bool(), float(), .item()) on it is not supported inside vmap. Keep it as an "
            "array (autodiff.numpy functions work on it, `anp.where` selects per example), use "
            "autodiff.stop_gradient(x) for a constant, or convert outside vmap."
        )

    def __repr__(self):
        return f"BatchTracer<level {self._trace.level}, bdim {self._bdim}>(shape={self.shape})"


def _shape(v) -> tuple:
    return v.shape if hasattr(v, "shape") else ()


class BatchTrace(Trace):
    """Applies each primitive's batch rule."""

    __slots__ = ("axis_size", "axis_name")

    def __init__(self, level: int, axis_size: int, axis_name=None):
        super().__init__(level)
        self.axis_size = axis_size
        self.axis_name = axis_name  # (vmap's axis_name: None for an unnamed axis)

    def process(self, prim, args, params):
        values = []
        dims = []
        for a in args:
            if isinstance(a, Tensor) and a._trace is self:
                values.append(a._value)
                dims.append(a._bdim)
            else:
                values.append(a)
                dims.append(None)
        rule = prim.batch or prim.rule("batch")
        out, out_dim = rule(values, dims, **params)
        if prim.multiple_results:
            return tuple(o if d is None else BatchTracer(o, self, d) for o, d in zip(out, out_dim))
        return out if out_dim is None else BatchTracer(out, self, out_dim)
