"""The NumPy executor: a graph becomes one straight-line Python function calling the impls.

Two forms of one schedule: `interpret_graph` runs a list of steps at once (no compile
cost: a large graph's first calls); `compile_graph` writes the same steps as Python source
and compiles it (about 15 us a step, once: fastest per call). `run_graph`
(staging/call.py) starts a large graph on the first and moves it to the second.

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

from autodiff.staging.ir import Graph, Literal, Var

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


# Results of at least this many elements are written into the memory of an intermediate that
# is dead by then (one of the same shape and dtype): no fresh memory to allocate and fault in.
REUSE_MIN_SIZE = 1 << 12


class _Writer:
    def __init__(self):
        self.globals: dict = {"__builtins__": {}}
        self.locals: dict = {}
        self.counter = 0
        self.buffers: _Buffers | None = None

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
        self.buffers = _Buffers(graph)
        for i, eqn in enumerate(graph.equations):
            lines.append("    " + self.statement(eqn, i))
        outs = ", ".join(self.operand(x) for x in graph.out_vars)
        lines.append(f"    return [{outs}]")
        return "\n".join(lines) + "\n"

    def statement(self, eqn, index: int) -> str:
        ins = [self.operand(x) for x in eqn.inputs]
        reused = self.buffers.take(eqn, index)
        if reused is not None:  # (a fresh ufunc result into a dead intermediate's memory)
            self.locals[eqn.outputs[0]] = self.locals[reused]
            name = self.locals[reused]
            ufunc = self._global(_identifier(eqn.prim.name), eqn.prim.fast.pooled_ufunc)
            return f"{name} = {ufunc}({', '.join(ins)}, out={name})"
        outs = [self.local(v) for v in eqn.outputs]
        target = ", ".join(outs) + ("," if eqn.prim.multiple_results and len(outs) == 1 else "")
        if eqn.prim.multiple_results and not outs:
            target = "_"
        op = _OPERATORS.get(eqn.prim.name)
        if op is not None and len(ins) == 2 and not eqn.params and eqn.prim.fast.scalar_impl:
            return f"{target} = {ins[0]} {op} {ins[1]}"
        impl = self._global(_identifier(eqn.prim.name), eqn.prim.impl)
        args = list(ins)
        for key, value in eqn.params.items():
            args.append(f"{key}={self._global('p', value)}")
        return f"{target} = {impl}({', '.join(args)})"


def _fresh(eqn) -> bool:
    """Does `eqn` make a new array (a float ufunc's result on arrays of its shape), which no
    other value shares memory with?"""
    if eqn.prim.fast.pooled_ufunc is None or eqn.params or len(eqn.outputs) != 1:
        return False
    aval = eqn.outputs[0].aval
    return aval.ndim > 0 and aval.dtype.kind == "f"


class _Buffers:
    """Which intermediates a ufunc may write its result into: arrays made fresh by a ufunc,
    never shared (no other kind of operation read them: a view or a reshape would share
    their memory), not an output, and read for the last time by then (at the latest by the
    ufunc itself: it may write over an operand of its own shape)."""

    def __init__(self, graph: Graph):
        last_use: dict = {}
        shared: set = {v for v in graph.out_vars if type(v) is Var}
        fresh: list = []
        for i, eqn in enumerate(graph.equations):
            for x in eqn.inputs:
                if type(x) is Var:
                    last_use[x] = i
                    if not _fresh(eqn):
                        shared.add(x)  # (read by an op that may return a view of it)
            if _fresh(eqn):
                fresh.append(eqn.outputs[0])
        candidates = [v for v in fresh if v not in shared and v.aval.size >= REUSE_MIN_SIZE]
        self.order = sorted(candidates, key=lambda v: last_use.get(v, -1))
        self.last_use = last_use
        self.next = 0  # (self.order[:next] have been freed)
        self.free: dict = {}  # (shape, dtype) -> the variables whose memory is free

    def take(self, eqn, index: int):
        """A dead candidate whose memory the result of equation `index` may take, or None."""
        while self.next < len(self.order):
            var = self.order[self.next]
            if self.last_use.get(var, -1) > index:
                break
            self.free.setdefault((var.aval.shape, var.aval.dtype), []).append(var)
            self.next += 1
        if not _fresh(eqn) or eqn.outputs[0].aval.size < REUSE_MIN_SIZE:
            return None
        aval = eqn.outputs[0].aval
        free = self.free.get((aval.shape, aval.dtype))
        return free.pop() if free else None


def _identifier(name: str) -> str:
    """A prefix for an impl's global name from its primitive's name."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not cleaned or cleaned[0].isdigit() or keyword.iskeyword(cleaned):
        cleaned = "f_" + cleaned
    return cleaned + "_"


def interpret_graph(graph: Graph):
    """A function of the graph's flat inputs returning its flat outputs (a list), which runs
    its equations from a list of steps: each impl with its inputs' slots and its params."""
    slots: dict = {}
    template: list = []

    def slot(x) -> int:
        key = x if type(x) is Var else ("literal", id(x))
        if key not in slots:
            slots[key] = len(template)
            template.append(x.value if type(x) is Literal else None)
        return slots[key]

    n_in = len(graph.in_vars)
    for var in graph.in_vars:
        slot(var)
    for var, value in graph.consts:
        template[slot(var)] = value
    steps = []
    for eqn in graph.equations:
        ins = tuple(slot(x) for x in eqn.inputs)
        outs = tuple(slot(v) for v in eqn.outputs)
        multi = eqn.prim.multiple_results
        steps.append((eqn.prim.impl, ins, outs if multi else outs[0], eqn.params or None, multi))
    out_slots = [slot(x) for x in graph.out_vars]

    def run(*args):
        env = template.copy()
        env[:n_in] = args
        for impl, ins, out, params, multi in steps:
            values = [env[i] for i in ins]
            result = impl(*values, **params) if params else impl(*values)
            if multi:
                for i, value in zip(out, result):
                    env[i] = value
            else:
                env[out] = result
        return [env[i] for i in out_slots]

    return run


__all__ = ["compile_graph", "interpret_graph"]
