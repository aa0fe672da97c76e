"""ReverseTrace and ReverseTracer: the functional reverse-mode level (grad, vjp, jacrev).

A tracer's `_edge` is the Node (autodiff.core.graph) that produced it, or `(node,
output_index)` when that node has several outputs (`graph.edge_pair` reads either).
Residuals are saved as values of the level below, so the backward pass is seen — and
differentiated — by any enclosing level.
"""

from __future__ import annotations

from numpy import ndarray

from autodiff.core import buffers, graph
from autodiff.core.dtypes import SCALAR_PAIRS
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
        # A recorded graph lives until the backward pass: each object less per node is memory
        # the next op does not have to fault in, and one less for the cycle collector to walk.
        # So a node of one or two inputs holds its edges and residuals without tuples (see
        # core/graph.py's Node: p0, p1 and x0, x1), and no params are a shared empty dict.
        # Unary functions and binary operators, the commonest cases, are unrolled, and the
        # output computed inline: as calls, the gradients take measurably more instructions
        # (python -m benchmarks.instructions), hence this function's length.
        if len(args) == 2:
            x, y = args
            p0 = p1 = None
            if type(x) in TENSOR_TYPES and x._trace is self:
                p0, x = x._edge, x._value
            if type(y) in TENSOR_TYPES and y._trace is self:
                p1, y = y._edge, y._value
            primals = (x, y)
            x0 = x
            x1 = y
            lower = type(x) in TENSOR_TYPES or type(y) in TENSOR_TYPES
        elif len(args) == 1:
            (x,) = args
            p0, p1 = None, ONE
            if type(x) in TENSOR_TYPES and x._trace is self:
                p0, x = x._edge, x._value
            x0, x1 = x, None
            primals = (x,)
            lower = type(x) in TENSOR_TYPES
        else:
            primals, p0, lower = self._inputs(args)
            x0, x1, p1 = primals, None, MANY
            x = primals[0] if primals else None
        # The output: one level down for a value of a lower trace, else the impl (NumPy's scalar
        # math for NumPy scalars, recycled memory for large elementwise results).
        if prim.fwd is not None and prim.differentiable:  # (output and residuals together)
            out, residuals = prim.fwd(*primals, **params)
            params = {**params, "residuals": residuals}
        elif lower:
            out = _compute_lower(prim, primals, params)
        elif params:
            out = prim.impl(*primals, **params)
        elif type(x) is ndarray:  # (the commonest first operand: no scalar arithmetic)
            fast = prim.fast
            if fast.pooled_ufunc is not None and x.size >= graph.STAND_IN_MIN_SIZE:
                out = buffers.ufunc_into(fast.pooled_ufunc, primals)
            else:
                out = prim.impl(*primals)  # (a call without keywords builds no dict)
        elif prim.fast.scalar_impl is not None and (type(x), type(primals[1])) in SCALAR_PAIRS:
            out = prim.fast.scalar_impl(x, primals[1])
        else:
            out = prim.impl(*primals)
        if not prim.differentiable:
            return out
        self._seq = seq = self._seq + 1
        # (the node is made inline, as `new_node` makes it: this runs once per recorded op)
        node = Node()
        node.prim = prim
        node.params = params or NO_PARAMS
        node.p0 = p0
        node.p1 = p1
        node.x0 = x0
        node.x1 = x1
        node.out = out
        node.seq = seq
        node.versions = None
        node.extra = None
        node.raw = not lower
        if (  # (large residuals that the rule reads only the shape and dtype of)
            not lower
            and not (prim.saves_inputs and prim.saves_output)
            and (
                (type(x) is ndarray and x.size >= graph.STAND_IN_MIN_SIZE)
                or (type(out) is ndarray and out.size >= graph.STAND_IN_MIN_SIZE)
            )
        ):
            self._lean(node, primals, out)
        self.nodes.append(node)
        if prim.multiple_results:
            return tuple(reverse_tracer(o, self, (node, i)) for i, o in enumerate(out))
        tracer = ReverseTracer()  # (reverse_tracer, inline)
        tracer._value = out
        tracer._trace = self
        tracer._edge = node  # (its own edge: see graph.edge_pair)
        return tracer

    def _inputs(self, args) -> tuple:
        """The values one level down of `args`, the edges of those that are this trace's
        tracers (None for the others), and whether any value belongs to a lower trace."""
        primals = []
        parents = []
        lower = False
        for a in args:
            if type(a) in TENSOR_TYPES and a._trace is self:
                parents.append(a._edge)
                a = a._value
            else:
                parents.append(None)
            lower = lower or type(a) in TENSOR_TYPES
            primals.append(a)
        return tuple(primals), tuple(parents), lower

    def _lean(self, node, primals: tuple, out) -> None:
        """Keep stand-ins instead of the large residuals `node`'s rule reads only the shape and
        dtype of (see `graph.lean_residuals`). What the node does not keep may die with its
        tracer, in this trace: at its end it is recycled if nothing else holds it then."""
        kept, residual_out = graph.lean_residuals(node.prim, primals, out)
        node.primals = kept
        node.out = residual_out
        spares = self.spares
        if spares is not None:
            if residual_out is not out:
                buffers.spare(spares, out)
            for p, k in zip(primals, kept):
                if k is not p:
                    buffers.spare(spares, p)


def _compute_lower(prim, primals: tuple, params: dict):
    """`prim` applied to `primals` one level down, where a value belongs to a lower trace (a
    nested transform: binary operators take bind_binary's unrolled dispatch)."""
    if params or len(primals) != 2:
        return dispatch(prim, primals, params)
    return bind_binary(prim, *primals)
