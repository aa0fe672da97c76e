"""The reverse-mode graph: Node (one per differentiable primitive application), ReverseTrace, ReverseTracer.

A tracer's `_edge` is `(node, output_index)`: the node that produced it. A node
keeps its primitive, params, the primal inputs and output it needs to run the
vjp rule (its residuals, at the level below), and the edges of its inputs
(`parents`, `None` for constants). Sequence numbers grow with creation, so every
node's parents have smaller numbers than the node: sorting by sequence number is
a topological order.
"""
from __future__ import annotations

from autodiff.core.primitive import bind
from autodiff.core.tensor import Tensor
from autodiff.core.trace import Trace


class Node:
    """One recorded primitive application (or, with `prim=None`, a leaf that receives a gradient)."""

    __slots__ = ("prim", "params", "primals", "out", "parents", "seq", "__weakref__")

    def __init__(self, prim, params, primals, out, parents, seq):
        self.prim = prim
        self.params = params
        self.primals = primals
        self.out = out
        self.parents = parents
        self.seq = seq

    def name(self) -> str:
        return "AccumulateGrad" if self.prim is None else self.prim.node_name

    @property
    def released(self) -> bool:
        return self.primals is None

    def release(self) -> None:
        """Drop the saved residuals; the graph structure (parents) stays."""
        self.primals = None
        self.out = None

    def __repr__(self):
        return f"<{self.name()} seq={self.seq}>"


class ReverseTracer(Tensor):
    """A value inside a reverse-mode transform: its primal and the edge that produced it."""

    __slots__ = ()

    def __init__(self, value, trace, edge):
        self._value = value
        self._trace = trace
        self._edge = edge


class ReverseTrace(Trace):
    """Records a Node for every differentiable primitive applied to its tracers."""

    __slots__ = ("_seq",)

    def __init__(self, level: int):
        super().__init__(level)
        self._seq = 0

    def new_leaf(self, value) -> ReverseTracer:
        """A tracer for an input to differentiate with respect to."""
        self._seq += 1
        return ReverseTracer(value, self, (Node(None, None, (), None, (), self._seq), 0))

    def process(self, prim, args, params):
        primals = []
        parents = []
        for a in args:
            if isinstance(a, Tensor) and a._trace is self:
                primals.append(a._value)
                parents.append(a._edge)
            else:
                primals.append(a)
                parents.append(None)
        out = bind(prim, *primals, **params)
        if not prim.differentiable:
            return out
        self._seq += 1
        node = Node(prim, params, primals, out, parents, self._seq)
        if prim.multiple_results:
            return tuple(ReverseTracer(o, self, (node, i)) for i, o in enumerate(out))
        return ReverseTracer(out, self, (node, 0))
