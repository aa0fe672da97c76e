"""The NumPy executor: a graph becomes one straight-line Python function calling the impls.

`compile_graph(graph)` writes the graph as Python source — one statement per equation,
each variable a local, every impl, param, constant and literal a global of the function —
and compiles it once. A call then runs the impls in order with nothing between them: no
tracers, no dispatch, no interpretation of the graph. Binary arithmetic of the four
operators is written as Python's operators (NumPy's ufuncs on arrays, NumPy's fast scalar
math on NumPy scalars: the impls' results, bitwise). Control-flow primitives run their
sub-graphs through executors of their own (their impls compile them on first use).
"""

from __future__ import annotations

import keyword

from autodiff.staging.ir import Graph, Literal

# Primitives computed by Python's binary operators (on arrays: the same ufuncs, bitwise).
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}


def compile_graph(graph: Graph):
    """A function of the graph's flat inputs returning its flat outputs (a list).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> from autodiff.staging.api import make_graph
        >>> run = compile_graph(make_graph(lambda x: anp.sin(x) * 2.0)(np.zeros(2)))
        >>> run(np.array([0.0, np.pi / 2]))
        [array([0., 2.])]
    """
    writer = _Writer()
    source = writer.function(graph)
    names = writer.globals
    code = compile(source, f"<staged {graph.name}>", "exec")
    local: dict = {}
    exec(code, names, local)
    run = local["run"]
    run.source = source  # (for reading: what a call runs)
    return run


class _Writer:
    def __init__(self):
        self.globals: dict = {"__builtins__": {}}
        self.locals: dict = {}
        self.counter = 0

    def _global(self, prefix: str, value) -> str:
        name = f"{prefix}{self.counter}"
        self.counter += 1
        self.globals[name] = value
        return name

    def local(self, var) -> str:
        name = self.locals.get(var)
        if name is None:
            name = self.locals[var] = f"v{len(self.locals)}"
        return name

    def operand(self, x) -> str:
        if type(x) is Literal:
            return self._global("l", x.value)
        return self.local(x)

    def function(self, graph: Graph) -> str:
        params = [self.local(v) for v in graph.in_vars]
        lines = [f"def run({', '.join(params)}):"]
        for var, value in graph.consts:
            self.locals[var] = self._global("c", value)
        for eqn in graph.equations:
            lines.append("    " + self.statement(eqn))
        outs = ", ".join(self.operand(x) for x in graph.out_vars)
        lines.append(f"    return [{outs}]")
        return "\n".join(lines) + "\n"

    def statement(self, eqn) -> str:
        outs = [self.local(v) for v in eqn.outputs]
        target = ", ".join(outs) + ("," if eqn.prim.multiple_results and len(outs) == 1 else "")
        if eqn.prim.multiple_results and not outs:
            target = "_"
        ins = [self.operand(x) for x in eqn.inputs]
        op = _OPERATORS.get(eqn.prim.name)
        if op is not None and len(ins) == 2 and not eqn.params and eqn.prim.fast.scalar_impl:
            return f"{target} = {ins[0]} {op} {ins[1]}"
        impl = self._global(_identifier(eqn.prim.name), eqn.prim.impl)
        args = list(ins)
        for key, value in eqn.params.items():
            args.append(f"{key}={self._global('p', value)}")
        return f"{target} = {impl}({', '.join(args)})"


def _identifier(name: str) -> str:
    """A prefix for an impl's global name from its primitive's name."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not cleaned or cleaned[0].isdigit() or keyword.iskeyword(cleaned):
        cleaned = "f_" + cleaned
    return cleaned + "_"


__all__ = ["compile_graph"]
