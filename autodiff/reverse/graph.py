"""ReverseTrace and ReverseTracer: the functional reverse-mode level (grad, vjp, jacrev).

A tracer's `_edge` is the Node (autodiff.core.graph) that produced it, or `(node,
output_index)` when that node has several outputs (`graph.edge_pair` reads either).
Residuals are saved as values of the level below, so the backward pass is seen — and
differentiated — by any enclosing level.
"""

from __future__ import annotations

from numpy import ndarray

from autodiff.core import buffers, graph
from autodiff.core.dtypes import SCALAR_OPERANDS, SCALARS
from autodiff.core.graph import MANY, ONE, Node, new_node
from autodiff.core.primitive import NO_PARAMS, bind_binary, dispatch
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import Trace


class ReverseTracer(Tensor):
    """A value inside a reverse-mode transform: its primal and the edge that produced it.
    Made by `reverse_tracer` (or inline in `ReverseTrace.process`)."""

    __slots__ = ()
    # No __init__ written in Python: calling the class then costs no interpreter frame.
    __init__ = object.__init__


def reverse_tracer(value, trace, edge) -> ReverseTracer:
    """A tracer of `trace` with primal `value`, produced by `edge` (a node, or `(node,
    output_index)` for a node with several outputs)."""
    tracer = ReverseTracer()
    tracer._value = value
    tracer._trace = trace
    tracer._edge = edge
    return tracer


class ReverseTrace(Trace):
    """Records a Node for every differentiable primitive applied to its tracers."""

    __slots__ = ("_seq", "nodes", "spares")

    def __init__(self, level: int):
        super().__init__(level)
        self._seq = 0
        # Medium arrays no node keeps, to recycle at the trace's end (see process): a list
        # only where the caller recycles them (grad), else None.
        self.spares: list | None = None
        # Every node, in creation (= sequence) order: already a topological order, so the
        # backward pass needs no graph walk or sort (see backward_pass's `order`).
        self.nodes: list = []

    def new_leaf(self, value) -> ReverseTracer:
        """A tracer for an input to differentiate with respect to."""
        self._seq += 1
        node = new_node(None, None, (), None, (), self._seq)
        self.nodes.append(node)
        return reverse_tracer(value, self, node)

    def process(self, prim, args, params):
        if len(args) == 2:  # binary operators: the commonest case, unrolled (no lists)
            x, y = args
            if type(x) in TENSOR_TYPES and x._trace is self:
                px = x._edge
                x = x._value
            else:
                px = None
            if type(y) in TENSOR_TYPES and y._trace is self:
                py = y._edge
                y = y._value
            else:
                py = None
            arity = 2  # (the edges: px, py)
            primals = (x, y)
            lower = type(x) in TENSOR_TYPES or type(y) in TENSOR_TYPES
        elif len(args) == 1:  # unary functions: unrolled too
            (x,) = args
            if type(x) in TENSOR_TYPES and x._trace is self:
                px = x._edge
                x = x._value
            else:
                px = None
            arity = 1
            primals = (x,)
            lower = type(x) in TENSOR_TYPES
        else:
            arity = 0  # (the edges: `parents`)
            primals = []
            parents = []
            lower = False  # does any primal belong to a lower trace?
            for a in args:
                if type(a) in TENSOR_TYPES and a._trace is self:
                    parents.append(a._edge)
                    a = a._value
                else:
                    parents.append(None)
                if type(a) in TENSOR_TYPES:
                    lower = True
                primals.append(a)
            primals = tuple(primals)
            parents = tuple(parents)
            x = primals[0] if primals else None  # (the first input, as in the cases above)
        if lower:  # (a nested transform: binary operators take bind_binary's unrolled dispatch)
            if params or len(primals) != 2:
                out = dispatch(prim, primals, params)
            else:
                out = bind_binary(prim, x, y)
            large = False
        elif (
            type(x) is not ndarray  # (the commonest first operand: no scalar arithmetic)
            and prim.scalar_impl is not None  # (binary primitives only: x and y are set)
            and (type(x) in SCALARS or type(y) in SCALARS)
            and type(x) in SCALAR_OPERANDS
            and type(y) in SCALAR_OPERANDS
        ):
            out = prim.scalar_impl(x, y)
            large = False
        else:
            # Large arrays (tested once, on the first input: the large one of a reduction, and
            # of the elementwise ops that write into recycled memory, core/buffers.py) ...
            large = type(x) is ndarray and x.size >= graph.STAND_IN_MIN_SIZE
            if params:
                out = prim.impl(*primals, **params)
            elif large and prim.pooled_ufunc is not None:
                out = buffers.ufunc_into(prim.pooled_ufunc, primals)
            else:  # (a call without keywords builds no dict)
                out = prim.impl(*primals)
        if not prim.differentiable:
            return out
        residual_out = out
        # ... and the output get stand-ins, see `lean_residuals`.
        if (
            not lower
            and (large or (type(out) is ndarray and out.size >= graph.STAND_IN_MIN_SIZE))
            and not (prim.saves_inputs and prim.saves_output)
        ):
            kept, residual_out = graph.lean_residuals(prim, primals, out)
            # What the node does not keep may die with its tracer, in this trace: at its end
            # it is recycled if nothing else holds it then (core/buffers.py).
            spares = self.spares
            if spares is not None:
                if residual_out is not out:
                    buffers.spare(spares, out)
                for p, k in zip(primals, kept):
                    if k is not p:
                        buffers.spare(spares, p)
            primals = kept
        self._seq = seq = self._seq + 1
        # A recorded graph lives until the backward pass: each object less per node is memory
        # the next op does not have to fault in, and one less for the cycle collector to walk.
        # So a node of one or two inputs holds its edges and residuals without tuples (see
        # core/graph.py's Node), and no params are a shared empty dict.
        # The node and the tracer are made inline, as `new_node` and `reverse_tracer` make them:
        # this runs once per recorded operation, and a call is a large share of its cost.
        node = Node()
        if arity == 2:  # (Node.set_inputs, inline: one and two inputs take no tuples)
            node.p0 = px
            node.p1 = py
            node.x0, node.x1 = primals
        elif arity == 1:
            node.p0 = px
            node.p1 = ONE
            (node.x0,) = primals
            node.x1 = None
        else:
            node.p0 = parents
            node.p1 = MANY
            node.x0 = primals
            node.x1 = None
        node.prim = prim
        node.params = params or NO_PARAMS
        node.out = residual_out
        node.seq = seq
        node.versions = None
        node.extra = None
        node.raw = not lower
        self.nodes.append(node)
        if prim.multiple_results:
            return tuple(reverse_tracer(o, self, (node, i)) for i, o in enumerate(out))
        tracer = ReverseTracer()
        tracer._value = out
        tracer._trace = self
        tracer._edge = node  # (its own edge: see graph.edge_pair)
        return tracer
