"""The staged program: a `Graph` of equations over typed variables, and its interpreter.

A `Graph` is what `make_graph` and `jit` stage from a function: input variables, constants,
equations (a primitive applied to variables and literals, giving variables; control flow
holds sub-graphs in its params) and outputs, each variable typed by a `ShapedArray`. Its
`str()` is a listing in the spirit of a jaxpr. `eval_graph` interprets a graph by binding
its primitives, so every transform applies to staged code.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.primitive import bind
from autodiff.core.pytree import LEAF, TreeDef


class Var:
    """A value of a graph, known by its type only. `origin`: the names of the function's
    arguments it was computed from (for error messages)."""

    __slots__ = ("aval", "origin")

    def __init__(self, aval: ShapedArray, origin: frozenset = frozenset()):
        self.aval = aval
        self.origin = origin

    def __repr__(self):
        return f"Var({self.aval})"


class Literal:
    """A Python scalar written into an equation (weakly typed, as NumPy 2 treats it)."""

    __slots__ = ("value", "aval")

    def __init__(self, value):
        self.value = value
        self.aval = aval_of(value)

    def __repr__(self):
        return repr(self.value)


class Equation:
    """`outputs = prim(*inputs, **params)`: inputs are `Var`s and `Literal`s."""

    __slots__ = ("prim", "inputs", "outputs", "params")

    def __init__(self, prim, inputs: list, outputs: list, params: dict):
        self.prim = prim
        self.inputs = inputs
        self.outputs = outputs
        self.params = params


class Graph:
    """A staged function: `outputs = f(*inputs)` as equations.

    `consts` pairs variables with the concrete values they stand for (arrays the function
    closed over); `in_tree`/`out_tree` rebuild the function's argument and result pytrees
    from the flat inputs and outputs.
    """

    __slots__ = (
        "in_vars",
        "consts",
        "equations",
        "out_vars",
        "in_tree",
        "out_tree",
        "name",
        "compiled",
        "interpreted",
        "calls",
        "derived",
        "backend",
        "fastmath",
        "numba_failure",
    )

    def __init__(
        self,
        in_vars: list,
        consts: list,
        equations: list,
        out_vars: list,
        in_tree: TreeDef = LEAF,
        out_tree: TreeDef = LEAF,
        name: str = "f",
    ):
        self.in_vars = in_vars
        self.consts = consts
        self.equations = equations
        self.out_vars = out_vars
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.name = name
        self.compiled = None  # its executor, made on first use (staging/call.py's run_graph)
        self.interpreted = None  # ... and the interpreted one, for a large graph's first calls
        self.calls = 0
        self.derived: dict = {}  # graphs derived from it by transforms (staging/call.py)
        # Which executor runs it: "numpy", "numba" (compiled: LLVM, or Numba for what the LLVM
        # translator leaves), or "auto" (compiled at once if small, else NumPy until a
        # background compile is done; staging/call.py). Graphs derived from it inherit it.
        self.backend = "numpy"
        self.fastmath = False
        self.numba_failure: str | None = None  # why Numba could not compile it, if it could not

    @property
    def in_avals(self) -> list:
        return [v.aval for v in self.in_vars]

    @property
    def out_avals(self) -> list:
        return [v.aval for v in self.out_vars]

    def __call__(self, *args):
        """Evaluate the graph on flat arguments by binding its primitives (`eval_graph`)."""
        return eval_graph(self, *args)

    def count_equations(self) -> int:
        """How many equations, those of sub-graphs included."""
        total = 0
        stack = [self]
        while stack:
            graph = stack.pop()
            total += len(graph.equations)
            for eqn in graph.equations:
                stack.extend(sub_graphs(eqn.params))
        return total

    def __str__(self):
        return _Printer().graph(self, "")

    __repr__ = __str__


def sub_graphs(params: dict) -> list:
    """The graphs among an equation's params (control flow's branches and bodies)."""
    found = []
    for value in params.values():
        if type(value) is Graph:
            found.append(value)
        elif type(value) is tuple:
            found.extend(v for v in value if type(v) is Graph)
    return found


def eval_graph(graph: Graph, *args) -> list:
    """The outputs of `graph` (a flat list) for flat `args`, each primitive bound in turn: on
    plain values this runs the impls; on tracers, every transform sees the staged code."""
    env: dict = {}
    for var, value in zip(graph.in_vars, args):
        env[var] = value
    for var, value in graph.consts:
        env[var] = value
    for eqn in graph.equations:
        inputs = [env[x] if type(x) is Var else x.value for x in eqn.inputs]
        out = bind(eqn.prim, *inputs, **eqn.params)
        if eqn.prim.multiple_results:
            for var, value in zip(eqn.outputs, out):
                env[var] = value
        else:
            env[eqn.outputs[0]] = out
    return [env[x] if type(x) is Var else x.value for x in graph.out_vars]


# ---------------------------------------------------------------------------------------------
# Printing, in the spirit of a jaxpr:
#   { lambda a:f64[3] ; b:f64[3] c:f64[] . let
#       d:f64[3] = sin b
#       e:f64[3] = multiply d c
#     in (e,) }


class _Printer:
    def __init__(self):
        self.names: dict = {}

    def name(self, x) -> str:
        if type(x) is Literal:
            return repr(x.value)
        if x not in self.names:
            self.names[x] = _letters(len(self.names))
        return self.names[x]

    def typed(self, var) -> str:
        return f"{self.name(var)}:{var.aval}"

    def graph(self, graph: Graph, indent: str) -> str:
        consts = " ".join(self.typed(v) for v, _ in graph.consts)
        ins = " ".join(self.typed(v) for v in graph.in_vars)
        head = " ".join(part for part in ("lambda", consts, ";", ins) if part)
        lines = [f"{{ {head} . let"]
        for eqn in graph.equations:
            lines.append(indent + "    " + self.equation(eqn, indent + "    "))
        outs = ", ".join(self.name(v) for v in graph.out_vars)
        lines.append(f"{indent}  in ({outs}{',' if len(graph.out_vars) == 1 else ''}) }}")
        return "\n".join(lines)

    def equation(self, eqn: Equation, indent: str) -> str:
        outs = " ".join(self.typed(v) for v in eqn.outputs)
        params = ""
        shown = {k: v for k, v in eqn.params.items() if not k.startswith("_")}
        if shown:
            params = "[" + " ".join(f"{k}={self.param(v, indent)}" for k, v in shown.items()) + "]"
        ins = " ".join(self.name(x) for x in eqn.inputs)
        return f"{outs} = {eqn.prim.name}{params} {ins}".rstrip()

    def param(self, value, indent: str) -> str:
        if type(value) is Graph:
            return self.graph(value, indent + "  ")
        if type(value) is tuple and any(type(v) is Graph for v in value):
            return "(" + ", ".join(self.param(v, indent) for v in value) + ")"
        if isinstance(value, np.dtype):
            return value.name
        if isinstance(value, np.ndarray):
            return f"array({value.tolist()!r})" if value.size <= 8 else f"array{value.shape}"
        if callable(value):
            return getattr(value, "__name__", type(value).__name__)
        return repr(value)


def _letters(n: int) -> str:
    """a, b, ..., z, ba, bb, ...: the n-th variable name (base 26, jaxpr's naming)."""
    s = chr(ord("a") + n % 26)
    while n >= 26:
        n //= 26
        s = chr(ord("a") + n % 26) + s
    return s


__all__ = ["Equation", "Graph", "Literal", "Var", "eval_graph", "sub_graphs"]
