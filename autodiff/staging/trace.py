"""StagingTrace: the level that records a `Graph` instead of computing (`make_graph`, `jit`).

Its tracers hold a `ShapedArray` (shape and dtype) and a graph variable, no value: every
primitive applied to them is checked by its `abstract_eval` and written down as an
equation. Transforms inside the staged function run as usual above this level, so staging
`grad(f)` records the gradient's own computation. Asking a staged value for its contents —
`bool()`, `float()`, `int()`, `__index__`, `np.asarray`, Python `if` on it — raises
`ConcretizationError`, naming the function and the arguments the value came from, and the
ways out.

Values the function did not receive as arguments become part of the graph: NumPy arrays
and scalars as constants, Python scalars as literals; Tensors (mutable, and maybe requiring
grad) and tracers of lower levels (an enclosing transform's) as *captured* inputs, which
the caller passes at each call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.config import checks_leaks
from autodiff.core.errors import ConcretizationError, conversion_hint, index_hint, type_str
from autodiff.core.pytree import TreeDef, tree_flatten, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import EVAL_TRACE, Trace, new_trace
from autodiff.staging.ir import Equation, Graph, Literal, Var

_PYTHON_SCALARS = frozenset((int, float, complex, bool))


class StagingTracer(Tensor):
    """A staged value: `_value` is its `ShapedArray` (so shape and dtype read through, as for
    any tracer), `_var` its graph variable."""

    __slots__ = ("_var",)
    __init__ = object.__init__

    def primal(self):
        raise self._trace.concretization_error(self, "its value")

    def __bool__(self):
        raise self._trace.concretization_error(
            self,
            "bool() (Python control flow, `if`)",
            f"Attempted boolean conversion of traced array with shape {type_str(self)}. ",
        )

    def __float__(self):
        raise self._trace.concretization_error(self, "float()", conversion_hint("float"))

    def __int__(self):
        raise self._trace.concretization_error(self, "int()", conversion_hint("int"))

    def __index__(self):
        raise self._trace.concretization_error(self, "an index (__index__)", index_hint(self))

    def __complex__(self):
        raise self._trace.concretization_error(self, "complex()", conversion_hint("complex"))

    def item(self):
        raise self._trace.concretization_error(self, ".item()")

    def tolist(self):
        raise self._trace.concretization_error(self, ".tolist()")

    def __array__(self, dtype=None, copy=None):
        raise self._trace.concretization_error(self, "a NumPy array (np.asarray)")

    def __repr__(self):
        # (as JAX: `print(x)` inside jit shows the abstract value and goes on)
        return f"Traced<{self._value}>with<{type(self._trace).__name__}>"

    __str__ = __repr__


class GraphBuilder:
    """The graph being recorded: inputs, constants, captured values, equations."""

    def __init__(self, name: str):
        self.name = name
        self.in_vars: list = []
        self.equations: list = []
        self.consts: dict = {}  # id(value) -> (Var, value)
        self.captured: dict = {}  # id(tensor) -> (Var, tensor)
        # Tensors a compiled training step wrote while staging (its optimizer's update):
        # id(tensor) -> the Var of their new value, which later reads take; and a check of
        # other tensors read after such a write (torch/compile_step.py)
        self.rebound: dict = {}
        self.check_read: Callable | None = None

    def new_input(self, aval: ShapedArray, origin: str, trace: StagingTrace) -> StagingTracer:
        var = Var(aval, frozenset((origin,)))
        self.in_vars.append(var)
        return _tracer(trace, var)

    def operand(self, x, trace: StagingTrace):
        """The graph operand (a `Var` or `Literal`) of a primitive's argument `x`."""
        kind = type(x)
        if kind in TENSOR_TYPES:
            if x._trace is trace:
                return x._var
            if self.rebound:
                var = self.rebound.get(id(x))
                if var is not None:
                    return var
                self.check_read(x)  # type: ignore[misc]
            return self._capture(x)
        if kind in _PYTHON_SCALARS:
            return Literal(x)
        entry = self.consts.get(id(x))
        if entry is None:
            if not isinstance(x, (np.ndarray, np.generic)):
                x = np.asarray(x)  # (a list or other array-like: NumPy's reading, now)
            entry = self.consts[id(x)] = (Var(aval_of(x)), x)
        return entry[0]

    def _capture(self, tensor: Tensor) -> Var:
        entry = self.captured.get(id(tensor))
        if entry is None:
            origin = "a Tensor the function closes over"
            if tensor._trace is not EVAL_TRACE:
                origin = f"a value of an enclosing {type(tensor._trace).__name__}"
            var = Var(aval_of(tensor).strengthened(), frozenset((origin,)))
            entry = self.captured[id(tensor)] = (var, tensor)
        return entry[0]

    def record(self, prim, inputs: list, params: dict, out_aval) -> list:
        """Append `prim(*inputs, **params)`; its output variables (typed by `out_aval`)."""
        origin = frozenset().union(*(x.origin for x in inputs if type(x) is Var))
        avals = out_aval if prim.multiple_results else (out_aval,)
        outputs = [Var(a, origin) for a in avals]
        self.equations.append(Equation(prim, inputs, outputs, params))
        return outputs

    def graph(self, out_operands: list, in_tree: TreeDef, out_tree: TreeDef) -> Graph:
        """The finished graph: captured values come after the declared inputs."""
        in_vars = self.in_vars + [var for var, _ in self.captured.values()]
        consts = list(self.consts.values())
        return Graph(in_vars, consts, self.equations, out_operands, in_tree, out_tree, self.name)


class StagingTrace(Trace):
    """Records every primitive applied to its tracers into a `GraphBuilder`."""

    __slots__ = ("builder",)

    def __init__(self, level: int, builder: GraphBuilder):
        super().__init__(level)
        self.builder = builder

    def process(self, prim, args, params):
        builder = self.builder
        inputs = [builder.operand(a, self) for a in args]
        rule = prim.abstract_eval
        if rule is None:
            raise NotImplementedError(
                f"Staging (abstract_eval) rule for '{prim.name}' is not implemented"
            )
        out_aval = rule(*[x.aval for x in inputs], **params)
        outputs = builder.record(prim, inputs, params, out_aval)
        if prim.multiple_results:
            return tuple(_tracer(self, v) for v in outputs)
        return _tracer(self, outputs[0])

    def concretization_error(
        self, tracer: StagingTracer, what: str, hint: str = ""
    ) -> ConcretizationError:
        """The error for `what` asked of a staged value; `hint`, JAX's words for the case,
        goes first."""
        origin = sorted(tracer._var.origin)
        source = (
            f"It depends on {', '.join(origin)}."
            if origin
            else "It is computed from constants only."
        )
        return ConcretizationError(
            f"{hint}Cannot use a staged value (an abstract {tracer._value}) as {what} in "
            f"'{self.builder.name}': under jit, values have a shape and a dtype but no value "
            f"yet. {source} Ways out: mark the argument static (jit's static_argnums or "
            "static_argnames) if it is a Python value that selects what to compute; use "
            "structured control flow (autodiff.cond, autodiff.switch, autodiff.fori_loop, "
            "autodiff.while_loop, autodiff.scan) instead of Python `if`/`while` on staged "
            "values; or compute the value outside the jitted function."
        )


def _tracer(trace: StagingTrace, var: Var) -> StagingTracer:
    tracer = StagingTracer()
    tracer._value = var.aval
    tracer._trace = trace
    tracer._edge = None
    tracer._var = var
    return tracer


@checks_leaks("staging (jit, or a control-flow body)")
def stage(
    fun: Callable,
    avals: Sequence[ShapedArray],
    in_tree: TreeDef,
    names: Sequence[str] | None = None,
    name: str | None = None,
) -> tuple[Graph, list]:
    """Stage `fun` for flat arguments of types `avals` (rebuilt as `in_tree`): its `Graph`,
    and the captured values (Tensors, enclosing transforms' tracers) the graph takes after
    the declared inputs. `names`: how to call each flat argument in error messages."""
    name = name or getattr(fun, "__name__", type(fun).__name__)
    builder = GraphBuilder(name)
    names = names or [f"argument {i}" for i in range(len(avals))]
    with new_trace(StagingTrace, builder) as trace:
        tracers = [builder.new_input(a, n, trace) for a, n in zip(avals, names)]
        out = fun(*tree_unflatten(in_tree, tracers))
        out_flat, out_tree = tree_flatten(out)
        outputs = [_output_operand(builder, o, trace, name, i) for i, o in enumerate(out_flat)]
    graph = builder.graph(outputs, in_tree, out_tree)
    return graph, [tensor for _, tensor in builder.captured.values()]


def _output_operand(builder: GraphBuilder, value, trace, name: str, index: int):
    if type(value) in TENSOR_TYPES or type(value) in _PYTHON_SCALARS:
        return builder.operand(value, trace)
    if isinstance(value, (np.ndarray, np.generic)):
        return builder.operand(value, trace)
    raise TypeError(
        f"Output {index} of '{name}' is a {type(value).__name__}, which is not a valid array "
        "type: a staged function returns arrays, Tensors and Python numbers, in tuples, "
        "lists, dicts or registered pytrees."
    )


__all__ = ["GraphBuilder", "StagingTrace", "StagingTracer", "stage"]
