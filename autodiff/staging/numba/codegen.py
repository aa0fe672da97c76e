"""Numba source for a run of equations: fused loops, reductions inside them, statements.

`write_function(name, equations, in_vars, out_vars)` returns the source of one Python
function that Numba compiles (`@njit`, applied by `cache.load`). Its body is planned in
two steps:

1. **Grouping.** Equations are taken in order. An elementwise equation (see lower.py)
   joins a *loop group* of its output's shape when every operand is either computed by
   that group at the same index (fused: a scalar local, no memory) or available before
   the group starts (a whole array, read at any position). A reduction joins the group
   that computes its input, as an accumulator. Anything else is a *statement*. A group is
   written where it was opened, whole: what its members read was there before it. Data
   movement whose readers are all loops (slices, rolls, reshapes splitting axes, small
   concatenations: views.py) is no item at all: its readers read its operands in place,
   at the composed index, so they join groups as if they read those operands.
2. **Writing.** A group becomes one loop nest over its shape: one scalar statement per
   member, a store for each value needed outside the loop (into an array allocated just
   before it; or, for the parts of a concatenation that only it reads, straight into the
   concatenation's array, whose own loop is then not written), an update per accumulator.
   An innermost loop whose body selects on its index (a roll's wrapped read, a pad's
   guarded one) is split into loops over the ranges where every such select is decided
   (`split_loop`): their reads become affine in the index, and LLVM vectorizes them.
   Shape-() values are scalars throughout: a group of shape () is straight-line scalar
   code. Statements write array code: matmul through BLAS (`np.dot`), reshape, and control
   flow, whose sub-graphs are written inline by the same two steps (loops of
   `scan`/`fori_loop`, `while`, branches of `cond`).

The graph walk is a loop over equations; sub-graphs of control flow are written by a
nested writer (the nesting of the user's program, not of the graph).
"""

from __future__ import annotations

import re

import numpy as np

from autodiff.staging.ir import Graph, Literal, Var
from autodiff.staging.numba.lower import (
    ELEMENTWISE,
    REDUCTIONS,
    SUPPORTED,
    Operand,
    broadcast_access,
    cast,
    dtype_name,
    literal,
    literal_operand,
    lowering_of,
    reduction_axes,
)
from autodiff.staging.numba.views import (
    in_place,
    paren,
    reshape_access,
    roll_access,
    roll_parts,
)
from autodiff.staging.numba.views import (
    roots as views_roots,
)

# An innermost loop is split where selects on its index change sides (a roll's wrapped
# reads: `split_loop`) into at most this many loops, of at most this many body lines in all.
MAX_LOOP_PIECES = 5
MAX_SPLIT_LINES = 2000

# How many of the most recent loop groups an equation may join (bounds planning on long
# graphs; a group further back is rarely the right one).
_GROUP_WINDOW = 32


class Band:
    """An array zero but where `index[col] - index[row] == offset` with `lo <= index[row] <
    hi`, where it is `value` (every other axis of length 1)."""

    __slots__ = ("row", "col", "offset", "lo", "hi", "value")

    def __init__(self, row: int, col: int, offset: int, lo: int, hi: int, value):
        self.row, self.col, self.offset = row, col, offset
        self.lo, self.hi, self.value = lo, hi, value

    def reader(self, dtype):
        """The expression of the element at an index (a list of index expressions)."""
        one, zero = literal(self.value, dtype), literal(0, dtype)
        if self.lo >= self.hi:
            return lambda index: zero

        def read(index: list) -> str:
            i, j = index[self.row], index[self.col]
            # (`&`, not `and`: no branch in the loop, which stays vectorizable)
            test = f"(({j}) - ({i}) == {self.offset}) & ({self.lo} <= {i}) & ({i} < {self.hi})"
            return f"({one} if {test} else {zero})"

        return read


class Names:
    """Unique local names for one generated function."""

    def __init__(self):
        self.count = 0

    def new(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"


class _Group:
    __slots__ = ("shape", "seq", "members", "vars", "reduced")

    def __init__(self, shape: tuple, seq: int):
        self.shape = shape
        self.seq = seq
        self.members: list = []
        self.vars: set = set()  # outputs of elementwise members: one scalar per index
        self.reduced: set = set()  # outputs of reductions: complete after the loop


def _is_var(x) -> bool:
    return type(x) is Var


def _whole(group: _Group, x, seq_of: dict) -> bool:
    """Is `x` a whole array before `group` starts?"""
    return x not in group.reduced and x not in group.vars and seq_of.get(x, -1) < group.seq


def _joinable(group: _Group, eqn, kind: str, shape: tuple, seq_of: dict, roots: dict) -> bool:
    if group.shape != shape:
        return False
    identity = kind == "reduction" or ELEMENTWISE[eqn.prim.name].identity_operands
    for x in eqn.inputs:
        if not _is_var(x):
            continue
        if x in roots:  # (read in place: what it reads, at other positions)
            if not all(_whole(group, r, seq_of) for r in roots[x]):
                return False
        elif x in group.reduced:
            return False
        elif x in group.vars:
            if not identity:
                return False
        elif seq_of.get(x, -1) >= group.seq:
            return False
    return True


def _choose(groups: list, eqn, kind: str, shape: tuple, seq_of: dict, roots: dict):
    """The loop group `eqn` joins (one computing an operand first), or None."""
    chosen = None
    producers = {x for x in eqn.inputs if _is_var(x)}
    for group in reversed(groups[-_GROUP_WINDOW:]):
        if _joinable(group, eqn, kind, shape, seq_of, roots):
            if producers & group.vars:
                return group
            if chosen is None:
                chosen = group
    return chosen


def plan(equations: list, kinds: list, roots: dict | None = None) -> list:
    """The items to write, in order: `_Group`s and statement equations. The equations whose
    outputs `roots` holds are read in place (views.py): no item of their own."""
    roots = roots or {}
    items: list = []
    groups: list = []
    seq_of: dict = {}
    for eqn, kind in zip(equations, kinds):
        if eqn.outputs and eqn.outputs[0] in roots:
            continue
        if kind == "statement":
            for v in eqn.outputs:
                seq_of[v] = len(items)
            items.append(eqn)
            continue
        shape = eqn.inputs[0].aval.shape if kind == "reduction" else eqn.outputs[0].aval.shape
        chosen = _choose(groups, eqn, kind, shape, seq_of, roots)
        if chosen is None:
            chosen = _Group(shape, len(items))
            items.append(chosen)
            groups.append(chosen)
        chosen.members.append(eqn)
        for v in eqn.outputs:
            seq_of[v] = chosen.seq
            (chosen.reduced if kind == "reduction" else chosen.vars).add(v)
    return items


def _uses(items: list, roots: dict) -> dict:
    """For each variable, the items that read it (through values read in place too)."""
    used: dict = {}
    for item in items:
        eqns = item.members if type(item) is _Group else [item]
        for eqn in eqns:
            for x in eqn.inputs:
                if _is_var(x):
                    for r in roots.get(x, (x,)):
                        used.setdefault(r, set()).add(id(item))
    return used


def _producers(items: list) -> dict:
    """The item computing each variable."""
    producer: dict = {}
    for item in items:
        for v in item.vars if type(item) is _Group else item.outputs:
            producer[v] = item
    return producer


def _sink_chain(part, reader, producer: dict, used: dict, live_out: set) -> list | None:
    """The reshapes (last first) from a value a loop computes to `part`, each read only by
    the next (the last by `reader`, the concatenation's loop); None when there is none."""
    chain: list = []
    v = part
    while True:
        item = producer.get(v)
        if item is None or v in live_out or used.get(v) != {id(reader)}:
            return None
        if type(item) is _Group:
            return chain if v.aval.ndim > 0 else None
        if item.prim.name != "reshape" or type(item.inputs[0]) is not Var:
            return None
        index = [f"i{k}" for k in range(item.inputs[0].aval.ndim)]
        if reshape_access(v.aval.shape, item.inputs[0].aval.shape, index) is None:
            return None  # (an index splitting axes: a division)
        chain.append(item)
        reader, v = item, item.inputs[0]


def _sinks(items: list, used: dict, live_out: set) -> tuple[dict, set]:
    """Concatenations whose parts are computed by loops that can store each part straight
    into the concatenation's array (through reshapes merging axes): {the value a loop
    computes: (the concatenation, its reshapes to the part, the part's first position along
    the axis)}, and the ids of the items that then write nothing (the concatenation's loop,
    the reshapes)."""
    producer = _producers(items)
    sinks: dict = {}
    dropped: set = set()
    for item in items:
        if type(item) is not _Group or len(item.members) != 1:
            continue
        eqn = item.members[0]
        if eqn.prim.name != "concatenate" or len(set(eqn.inputs)) != len(eqn.inputs):
            continue
        axis = eqn.params["axis"] % eqn.outputs[0].aval.ndim
        found, start = {}, 0
        for part in eqn.inputs:
            chain = None
            if _is_var(part) and part.aval.dtype == eqn.outputs[0].aval.dtype:
                chain = _sink_chain(part, item, producer, used, live_out)
            if chain is None:
                break
            head = chain[-1].inputs[0] if chain else part
            found[head] = (eqn, chain, start)
            start += part.aval.shape[axis]
        else:
            sinks.update(found)
            dropped.add(id(item))
            dropped.update(id(r) for _, chain, _ in found.values() for r in chain)
    return sinks, dropped


class Writer:
    """Writes the body of a generated function: lines at an indentation, and the name (or
    scalar expression) each variable has in the code."""

    def __init__(self, names: Names, statements: dict):
        self.names = names
        self.statements = statements
        self.lines: list = []
        self.indent = "    "
        self.env: dict = {}
        # Arrays of at least `buffer_min` elements written at the top level of the function
        # (not inside control flow) are parameters, allocated by the caller (NumPy's large
        # allocations use huge pages: ~10x fewer page faults than Numba's; and the
        # executor reuses them across calls): `buffers` lists their variables.
        self.buffer_min: int | None = None
        self.buffers: list = []
        # Inputs that are one value repeated (a constant broadcast from a scalar, strides 0),
        # passed as that scalar: read by loops only (see executor.py).
        self.uniform: set = set()
        # Inputs that are constants zero but on one diagonal band of one value (the basis of
        # a Jacobian or Hessian, sliced), read as that formula: {var: Band}.
        self.bands: dict = {}
        # Values a loop stores into the array of the concatenation reading them: {value:
        # (concatenation, reshapes between them, first position along the axis)}.
        self.sinks: dict = {}
        # Values read in place (views.py): their readers, and their equations.
        self.views: dict = {}
        self.view_eqns: dict = {}

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def value(self, x) -> str:
        """A variable's name, or a literal's expression (in its own dtype)."""
        if type(x) is Literal:
            return literal(x.value, x.aval.dtype)
        return self.env[x]

    def body(self, equations: list, live_out: set) -> None:
        """Write `equations` (all lowerable), keeping the values of `live_out` by name."""
        kinds = [
            "statement" if _is_view(eqn) else lowering_of(eqn, self.statements) for eqn in equations
        ]
        views = in_place(equations, kinds, live_out)
        for v, eqn in views.items():
            self.views[v] = self._view_reader(eqn)
            self.view_eqns[v] = eqn
        roots = views_roots(views, equations)
        items = plan(equations, kinds, roots)
        used = _uses(items, roots)
        sinks, dropped = _sinks(items, used, live_out)
        self.sinks.update(sinks)
        for item in items:
            if id(item) in dropped:
                continue
            if type(item) is _Group:
                outside = {
                    v
                    for v in item.vars
                    if v in live_out or any(u != id(item) for u in used.get(v, ()))
                }
                self._group(item, outside)
            elif _is_view(item):
                _write_transpose(self, item)
            else:
                self.statements[item.prim.name][1](self, item)

    # ---- loop groups ----
    def _operand(self, x, scalars: dict) -> Operand:
        if type(x) is Literal:
            return literal_operand(x)
        if x in self.views:
            return Operand(x.aval, self.views[x])
        if x in scalars:
            name = scalars[x]
            return Operand(x.aval, lambda index: name)
        name = self.env[x]
        if x.aval.ndim == 0 or x in self.uniform:
            return Operand(x.aval, lambda index: name)
        if x in self.bands:
            return Operand(x.aval, self.bands[x].reader(x.aval.dtype))
        return Operand(x.aval, lambda index: f"{name}[{', '.join(index)}]")

    def _group(self, group: _Group, outside: set) -> None:
        shape = group.shape
        index = [self.names.new("i") for _ in shape]
        self._group_arrays(group, outside)
        accumulators = {}
        for eqn in group.members:
            if eqn.prim.name in REDUCTIONS and eqn.outputs[0] in group.reduced:
                accumulators[eqn] = self._accumulator(eqn)
        outer = self.indent
        for i, n in zip(index, shape):
            self.line(f"for {i} in range({n}):")
            self.indent += "    "
        first = len(self.lines)
        self._group_body(group, outside, index, accumulators)
        self.indent = outer
        if shape:
            self.lines[first - 1 :] = split_loop(self.lines[first - 1 :], index[-1], shape[-1])
        for eqn, (acc, acc_dtype) in accumulators.items():
            out = eqn.outputs[0]
            self.env[out] = self._finish(acc, acc_dtype, out.aval)

    def _group_arrays(self, group: _Group, outside: set) -> None:
        """The arrays for the values of a loop group read outside its loop."""
        for eqn in group.members:
            for v in eqn.outputs:
                if v in self.sinks:
                    whole = self.sinks[v][0].outputs[0]  # (the concatenation's array)
                    if whole not in self.env:
                        self._array(whole)
                elif v in outside and group.shape:
                    self._array(v)

    def _array(self, v) -> None:
        """A new array for variable `v` (a parameter when the caller allocates it)."""
        self.env[v] = self.names.new("a")
        if self._top_level() and v.aval.size >= self.buffer_min:
            self.buffers.append(v)
        else:
            dtype = dtype_name(v.aval.dtype)
            self.line(f"{self.env[v]} = np.empty({v.aval.shape!r}, {dtype})")

    def _store(self, v, index: list) -> str:
        """Where the element of `v` at loop index `index` is stored."""
        if v not in self.sinks:
            return f"{self.env[v]}[{', '.join(index)}]"
        concatenation, chain, start = self.sinks[v]
        index = list(index)
        for reshape in reversed(chain):
            index = reshape_access(reshape.outputs[0].aval.shape, v.aval.shape, index)
            v = reshape.outputs[0]
        axis = concatenation.params["axis"] % len(index)
        if start:
            index[axis] = f"{start} + {paren(index[axis])}"
        out = concatenation.outputs[0]
        return f"{self.env[out]}[{', '.join(index)}]"

    def _group_body(self, group: _Group, outside: set, index: list, accumulators: dict) -> None:
        """The body of a loop group's loop nest: each member's scalar expression, stored where
        read outside, or accumulated."""
        scalars: dict = {}
        for eqn in group.members:
            operands = [self._operand(x, scalars) for x in eqn.inputs]
            if eqn in accumulators:
                self._accumulate(eqn, operands[0], accumulators[eqn], index)
                continue
            exprs = self._expressions(eqn, operands, index)
            for v, expr in zip(eqn.outputs, exprs):
                t = self.names.new("t")
                self.line(f"{t} = {expr}")
                scalars[v] = t
                if v not in outside:
                    continue
                if group.shape:
                    self.line(f"{self._store(v, index)} = {t}")
                else:
                    self.env[v] = t

    def _expressions(self, eqn, operands: list, index: list) -> list:
        """An equation's elements at the loop index (its rule's; a roll's reads one value)."""
        roll = roll_parts(eqn, self.view_eqns)
        if roll is not None:
            source, axis, pieces = roll
            read = list(index)
            read[axis] = roll_access(pieces, index[axis])
            value = self._operand(source, {}).read(read)
            return [cast(value, source.aval.dtype, eqn.outputs[0].aval.dtype)]
        if eqn.prim.name == "reshape":
            shapes = (eqn.inputs[0].aval.shape, eqn.outputs[0].aval.shape)
            return [operands[0].read(reshape_access(*shapes, index))]
        return ELEMENTWISE[eqn.prim.name].expressions(eqn, operands, index)

    def _view_reader(self, eqn):
        """The reader of a value read in place: its operands (whole arrays, or read in place
        themselves) at the position its equation reads for an index."""

        def read(index: list) -> str:
            operands = [self._operand(x, {}) for x in eqn.inputs]
            return self._expressions(eqn, operands, [paren(i) for i in index])[0]

        return read

    def _accumulator(self, eqn) -> tuple:
        out = eqn.outputs[0].aval
        rule = REDUCTIONS[eqn.prim.name]
        acc_dtype = np.dtype(rule.accumulator_dtype(out.dtype))
        acc = self.names.new("r")
        init = rule.init(acc_dtype)
        if out.shape:  # (np.empty and a loop: np.full and np.zeros are slow to compile)
            self.line(f"{acc} = np.empty({out.shape!r}, {dtype_name(acc_dtype)})")
            self._fill(acc, out.shape, init)
        else:
            self.line(f"{acc} = {init}")
        return acc, acc_dtype

    def _top_level(self) -> bool:
        return self.buffer_min is not None and self.indent == "    "

    def _fill(self, name: str, shape: tuple, value: str) -> None:
        index = [self.names.new("i") for _ in shape]
        outer = self.indent
        for i, n in zip(index, shape):
            self.line(f"for {i} in range({n}):")
            self.indent += "    "
        self.line(f"{name}[{', '.join(index)}] = {value}")
        self.indent = outer

    def _accumulate(self, eqn, operand: Operand, accumulator: tuple, index: list) -> None:
        acc, acc_dtype = accumulator
        x = cast(
            operand.read(broadcast_access(operand.aval.shape, index)), operand.aval.dtype, acc_dtype
        )
        out = eqn.outputs[0].aval
        target = acc
        if out.shape:
            axes = reduction_axes(eqn)
            if eqn.prim.name == "sum_to_shape":
                position = broadcast_access(out.shape, index)
            elif len(out.shape) == len(index):  # keepdims
                position = ["0" if k in axes else i for k, i in enumerate(index)]
            else:
                position = [i for k, i in enumerate(index) if k not in axes]
            target = f"{acc}[{', '.join(position)}]"
        update = REDUCTIONS[eqn.prim.name].update.format(acc=target, x=x)
        self.line(f"{target} = {update}")

    def _finish(self, acc: str, acc_dtype, out) -> str:
        if acc_dtype == out.dtype:
            return acc
        name = self.names.new("s")
        if out.shape:
            self.line(f"{name} = {acc}.astype({dtype_name(out.dtype)})")
        else:
            self.line(f"{name} = {cast(acc, acc_dtype, out.dtype)}")
        return name

    # ---- sub-graphs (control flow) ----
    def graph(self, graph: Graph, inputs: list) -> list:
        """Write `graph`'s equations here with `inputs` (names or expressions) for its
        inputs; returns its outputs' expressions."""
        for var, value in zip(graph.in_vars, inputs):
            self.env[var] = value
        self.body(graph.equations, {v for v in graph.out_vars if _is_var(v)})
        return [self.value(x) for x in graph.out_vars]


def split_loop(lines: list, i: str, n: int) -> list:
    """The innermost loop `for i in range(n):` (`lines[0]`, its body after it) split at the
    positions where a select on `i` changes sides (`x if i < k else y`: a roll's wrapped read;
    `x if lo <= i < hi else 0`: a pad's guarded read), into loops over ranges where each such
    select is decided: their reads become affine in `i`, and the middle loop vectorizes.
    Unchanged without such selects, or past `MAX_LOOP_PIECES` pieces or `MAX_SPLIT_LINES`
    lines of body copies."""
    body = lines[1:]
    below = re.compile(rf"\bif {i} < (\d+) else\b")
    within = re.compile(rf"\bif (\d+) <= {i} < (\d+) else\b")
    found = {int(k) for line in body for k in below.findall(line)}
    found |= {int(k) for line in body for pair in within.findall(line) for k in pair}
    cuts = sorted(k for k in found if 0 < k < n)
    if not cuts or len(cuts) >= MAX_LOOP_PIECES or len(body) * len(cuts) > MAX_SPLIT_LINES:
        return lines
    out = []
    for lo, hi in zip([0, *cuts], [*cuts, n]):
        out.append(lines[0].replace(f"range({n}):", f"range({lo}, {hi}):"))
        out += [_decided(line, below, within, lo) for line in body]
    return out


def _decided(line: str, below, within, lo: int) -> str:
    """`line` with the selects `split_loop` cut at decided for the range starting at `lo`
    (no cut inside the range: each test has one value over all of it)."""

    def truth(value: bool) -> str:
        return "if True else" if value else "if False else"

    line = below.sub(lambda m: truth(lo < int(m[1])), line)
    return within.sub(lambda m: truth(int(m[1]) <= lo < int(m[2])), line)


def _reversal(eqn) -> bool:
    axes, ndim = eqn.params["axes"], eqn.inputs[0].aval.ndim
    return axes is None or tuple(a % ndim for a in axes) == tuple(range(ndim))[::-1]


def _is_view(eqn) -> bool:
    """A transpose reversing the axes, written as the view `x.T`: read by a loop it costs
    the same as a copy, read by BLAS it is no copy at all (other permutations are loops:
    Numba's general `transpose` takes seconds to compile)."""
    return (
        eqn.prim.name == "transpose"
        and eqn.inputs[0].aval.dtype in SUPPORTED
        and type(eqn.inputs[0]) is Var
        and _reversal(eqn)
    )


def _write_transpose(writer: Writer, eqn) -> None:
    x, out = eqn.inputs[0], eqn.outputs[0]
    name = writer.names.new("w")
    writer.env[out] = name
    writer.line(f"{name} = {writer.value(x)}" + (".T" if x.aval.ndim > 1 else ""))


def graph_lowerable(graph: Graph, statements: dict) -> bool:
    """Can a sub-graph be written inline (every equation lowers; no constants)?"""
    if graph.consts:
        return False
    if any(v.aval.dtype not in SUPPORTED for v in graph.in_vars):
        return False
    return all(lowering_of(eqn, statements) is not None for eqn in graph.equations)


def write_function(
    name: str,
    equations: list,
    in_vars: list,
    out_vars: list,
    statements,
    buffer_min: int | None = None,
    uniform: frozenset = frozenset(),
    bands: dict | None = None,
) -> tuple[str, list]:
    """The source of `def name(*in_vars, *buffers): ...; return (*out_vars,)`, and the
    variables `buffers` stands for: the arrays of at least `buffer_min` elements it writes,
    which the caller allocates (None: it allocates every array itself)."""
    writer = Writer(Names(), statements)
    writer.buffer_min = buffer_min
    writer.uniform = set(uniform)
    writer.bands = dict(bands or {})
    params = []
    for v in in_vars:
        writer.env[v] = writer.names.new("v")
        params.append(writer.env[v])
    writer.body(equations, set(out_vars))
    params += [writer.env[v] for v in writer.buffers]
    outs = "".join(f"{writer.value(v)}, " for v in out_vars)
    head = f"def {name}({', '.join(params)}):"
    return "\n".join([head, *writer.lines, f"    return ({outs})"]) + "\n", writer.buffers


__all__ = ["Names", "Writer", "graph_lowerable", "plan", "write_function"]
