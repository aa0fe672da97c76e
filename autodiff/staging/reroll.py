"""Rerolling: runs of repeated blocks of a staged graph's equations, each made one `scan`.

A Python loop under `jit` stages its body again at every step: the unrolled RK4 steps of an
ODE and the backward steps of its gradient are thousands of equations, the same block after
block. The compiled backend pays for each equation; `reroll` finds runs of repeated blocks
and writes each run as one `scan` equation whose body is one block, so the compiled code
holds a block and a loop. It applies where a graph is compiled (staging/call.py); the
NumPy executor runs the graph as staged.

A run: `count` consecutive blocks of `period` equations, block `r` at `start + r * period`,
the same signatures (primitive, params, input types and literals, output types) in every
block, and every operand wired alike in every block:
- internal: the output of an earlier equation of the same block;
- carry: the output of an equation of the previous block; in the first block, a value from
  before the run (the initial carry);
- const: the same value from before the run in every block;
- xs: in block `r`, a value of block `j0 + r`, or `j0 - r`, of an earlier run, read as a
  slice of that run's stacked ys (a reverse scan reads `j0 - r`: the backward pass of a
  gradient reads the forward steps' values last first).
A block's value used after its run is the final carry, or an element of the run's stacked
ys (a `getitem` then defines the original variable). The scan runs each block's operations
in the same order on the same values: the results are bitwise those of the unrolled graph.
Whatever does not match exactly stays unrolled.

Cost: each equation's signature is hashed once; the candidate periods are the distances
between equal signatures that cover the most equations (at most MAX_PERIODS of them), each
compared over the whole list at once with NumPy; a candidate run's wiring is read once.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter

import numpy as np

from autodiff.core.abstract import ShapedArray
from autodiff.ops.gather_scatter import getitem_p
from autodiff.staging.ir import Equation, Graph, Literal, Var

# A graph of fewer equations is left as it is (compiling it is cheap as it stands).
MIN_EQUATIONS = 1000
# A run has at least this many blocks and this many equations ...
MIN_REPEATS = 3
MIN_RUN_EQUATIONS = 64
# ... and its period is among this many candidates (the distances between equal signatures
# covering the most equations).
MAX_PERIODS = 8
# A run whose operands do not all fit is tried again without these many blocks at its start
# and end, in this order.
_TRIMS = ((0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (2, 2))

_KEY = ("rerolled",)
# Guards the graphs' cached rerolled forms, and the scan primitive control/scans.py registers:
# scan_p is defined above staging (autodiff/control/scans.py), which gives it here at import.
_LOCK = threading.Lock()
_SCAN: list = []


def register_scan(primitive) -> None:
    """Make rerolled runs equations of `primitive` (autodiff/control/scans.py's scan_p)."""
    with _LOCK:
        _SCAN[:] = [primitive]


def rerolled(graph: Graph, lowerable=None) -> Graph:
    """`reroll(graph, lowerable)`, computed once per graph (kept in `graph.derived`; None
    there when it is `graph` itself, which would otherwise hold itself)."""
    with _LOCK:
        if _KEY not in graph.derived:
            found = _reroll(graph, lowerable, MIN_EQUATIONS)
            graph.derived[_KEY] = None if found is graph else found
        found = graph.derived[_KEY]
    return graph if found is None else found


def reroll(graph: Graph, lowerable=None, min_equations: int = MIN_EQUATIONS) -> Graph:
    """`graph` with each run of repeated blocks of its equations one `scan` equation (same
    inputs, consts and outputs), or `graph` itself if it has fewer than `min_equations` or
    no run. `lowerable(eqn)`: may the equation be in a scan's body (None: every one).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> def f(x):
        ...     for _ in range(40):
        ...         x = anp.sin(x) * 0.5 + x
        ...     return x
        >>> graph = ad.make_graph(f)(np.zeros(3))
        >>> small = reroll(graph, min_equations=0)
        >>> len(graph.equations), [e.prim.name for e in small.equations]
        (120, ['scan'])
        >>> x = np.arange(3.0)
        >>> bool(np.array_equal(graph(x)[0], small(x)[0]))
        True
    """
    with _LOCK:
        ready = bool(_SCAN)
    return _reroll(graph, lowerable, min_equations) if ready else graph


def _reroll(graph: Graph, lowerable, min_equations: int) -> Graph:
    eqns = graph.equations
    if len(eqns) < min_equations or not _SCAN:
        return graph
    sigs = _signatures(eqns, lowerable)
    where = {v: (i, k) for i, eqn in enumerate(eqns) for k, v in enumerate(eqn.outputs)}
    defs = [[where.get(x) if type(x) is Var else None for x in eqn.inputs] for eqn in eqns]
    plan = _Plan(graph, defs, where)
    for start, period, count in _candidate_runs(sigs, defs):
        plan.add(start, period, count)
    if not plan.runs:
        return graph
    return plan.rerolled()


# ---------------------------------------------------------------------------------------------
# Signatures, candidate periods, and runs whose blocks are wired alike.


def _signatures(eqns: list, lowerable) -> np.ndarray:
    """An int per equation, equal for equations a block may hold at the same place; a
    distinct negative one for an equation no scan body may hold."""
    ids: dict = {}
    allowed: dict = {}
    out = np.empty(len(eqns), np.int64)
    for i, eqn in enumerate(eqns):
        key = (
            eqn.prim,
            _value_key(eqn.params),
            tuple(_operand_key(x) for x in eqn.inputs),
            tuple(v.aval for v in eqn.outputs),
        )
        sig = ids.setdefault(key, len(ids))
        if sig not in allowed:
            allowed[sig] = lowerable is None or bool(lowerable(eqn))
        out[i] = sig if allowed[sig] else -1 - i
    return out


def _operand_key(x) -> tuple:
    if type(x) is Literal:
        return ("literal", _value_key(x.value), x.aval)
    return ("var", x.aval)


def _value_key(value) -> tuple:
    """A hashable key equal for params that mean the same (floats by their exact repr, so
    0.0 and -0.0 differ; objects that are not values by identity)."""
    kind = type(value)
    if kind is tuple or kind is list:
        return (kind.__name__, *map(_value_key, value))
    if kind is dict:
        return ("dict", *((k, _value_key(v)) for k, v in sorted(value.items())))
    if kind is float or kind is complex or isinstance(value, np.generic):
        return (kind.__name__, repr(value))
    if kind is np.ndarray:
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if kind is slice:
        return ("slice", _value_key(value.start), _value_key(value.stop), _value_key(value.step))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (kind.__name__, value)


def _candidate_runs(sigs: np.ndarray, defs: list) -> list:
    """(start, period, count) of runs whose blocks have the same signatures and wiring,
    not overlapping, most equations saved first chosen; in the order of the graph."""
    found = []
    for period in _candidate_periods(sigs):
        for start, end in _periodic_segments(sigs, period):
            count = (end - start) // period
            start = _phase(defs, start, end, period)
            found.extend(_wired_runs(defs, start, period, count))
    found.sort(key=lambda run: -run[1] * (run[2] - 1))
    chosen: list = []  # (start, end, period, count), sorted
    for start, period, count in found:
        end = start + period * count
        k = bisect.bisect(chosen, (start, end))
        if (k == 0 or chosen[k - 1][1] <= start) and (k == len(chosen) or chosen[k][0] >= end):
            chosen.insert(k, (start, end, period, count))
    return [(start, period, count) for start, _, period, count in chosen]


def _candidate_periods(sigs: np.ndarray) -> list:
    """The distances between an equation and the next of the same signature that cover the
    most equations (distance times occurrences), at most MAX_PERIODS."""
    last: dict = {}
    gaps: Counter = Counter()
    for i, sig in enumerate(sigs.tolist()):
        j = last.get(sig)
        if j is not None:
            gaps[i - j] += 1
        last[sig] = i
    n = len(sigs)
    scored = sorted(
        ((gap * times, gap) for gap, times in gaps.items() if times >= MIN_REPEATS - 1),
        reverse=True,
    )
    return [gap for _, gap in scored if gap * MIN_REPEATS <= n][:MAX_PERIODS]


def _periodic_segments(sigs: np.ndarray, period: int):
    """(start, end): maximal stretches of equations whose signatures repeat with `period`,
    at least MIN_REPEATS blocks long."""
    same = np.concatenate(([False], sigs[:-period] == sigs[period:], [False]))
    edges = np.flatnonzero(same[1:] != same[:-1])
    for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()):
        count = (b - a + period) // period
        if count >= MIN_REPEATS and count * period >= MIN_RUN_EQUATIONS:
            yield a, b + period


def _phase(defs: list, start: int, end: int, period: int) -> int:
    """Where the first block of the stretch [start, end) begins: of the places that keep
    its number of blocks, the one fewest values cross (a loop step's boundary, where only
    the carried state does); counted over uses within a block's length of a definition."""
    slack = (end - start) % period
    if slack == 0:
        return start
    base = max(start - period, 0)
    reach = np.full(end - base, -1, np.int64)  # a value's last use within `period`
    for i in range(start, end):
        for d in defs[i]:
            if d is not None and base <= d[0] and i - d[0] <= period:
                reach[d[0] - base] = max(reach[d[0] - base], i - base)
    crossing = np.zeros(end - base + 2, np.int64)  # values live across each cut
    defined = np.flatnonzero(reach >= 0)
    np.add.at(crossing, defined + 1, 1)
    np.add.at(crossing, reach[defined] + 1, -1)
    live = np.cumsum(crossing)[start - base : start - base + slack + 1]
    return start + int(np.argmin(live))


def _wiring(defs: list, start: int, period: int) -> tuple:
    """Where each operand of the block at `start` comes from: (0, place) the block itself,
    (1, place) the block before, None before that (or a literal, an input)."""
    key = []
    for i in range(start, start + period):
        for d in defs[i]:
            if d is None or d[0] < start - period:
                key.append(None)
            elif d[0] >= start:
                key.append((0, d[0] - start, d[1]))
            else:
                key.append((1, d[0] - start + period, d[1]))
    return tuple(key)


def _wired_runs(defs: list, start: int, period: int, count: int) -> list:
    """The runs among `count` blocks of equal signatures from `start` whose blocks are wired
    alike (a first block reads from before the run where the others read carries)."""
    keys = [_wiring(defs, start + r * period, period) for r in range(count)]
    runs = []
    r = 0
    while r + MIN_REPEATS <= count:
        common = keys[r + 1]
        end = r + 1
        if _first_fits(keys[r], common):
            end = r + 2
            while end < count and keys[end] == common:
                end += 1
        if end - r >= MIN_REPEATS and (end - r) * period >= MIN_RUN_EQUATIONS:
            runs.append((start + r * period, period, end - r))
            r = end
        else:
            r = max(end - 1, r + 1)
    return runs


def _first_fits(first: tuple, common: tuple) -> bool:
    """Can a block wired `first` begin a run of blocks wired `common`? Its internal operands
    must be the same; the others all come from before the run."""
    for f, c in zip(first, common):
        if (c is not None and c[0] == 0) or (f is not None and f[0] == 0):
            if f != c:
                return False
    return True


# ---------------------------------------------------------------------------------------------
# The plan: each run's operands classified, the values used outside it, and the new graph.


class _Run:
    """A run being made a scan: its blocks, and each operand of its template block (the
    second) as ("in", place), ("carry", slot), ("const", slot), ("xs", slot) or ("literal",)."""

    def __init__(self, start: int, period: int, count: int):
        self.start, self.period, self.count = start, period, count
        self.reverse = False
        self.operands: list = []  # per equation of a block: its operands' classes
        self.carries: dict = {}  # (place, initial Var) -> slot
        self.consts: dict = {}  # Var -> slot
        self.xs: dict = {}  # (producer run, place, first index) -> slot
        self.ys: dict = {}  # place -> slot
        self.points: dict = {}  # Var used outside -> (block, place)
        self.outputs: list = []  # the scan's output Vars (carries, then ys)

    def place(self, index: int, k: int) -> tuple[int, tuple]:
        """(block, place in its block) of output `k` of equation `index`."""
        block, offset = divmod(index - self.start, self.period)
        return block, (offset, k)

    def stacked(self, block: int) -> int:
        """Where a block's ys are in the stacked ys."""
        return self.count - 1 - block if self.reverse else block


class _Plan:
    def __init__(self, graph: Graph, defs: list, where: dict):
        self.graph, self.defs, self.where = graph, defs, where
        self.eqns = graph.equations
        self.owner = np.full(len(self.eqns), -1, np.int64)  # equation -> its run's number
        self.runs: list[_Run] = []

    def add(self, start: int, period: int, count: int) -> None:
        """Keep the run if its operands all fit a class; else the longest of it without a
        block or two at either end that does (the backward pass's first and last steps
        read values of forward steps left unrolled)."""
        for head, tail in _TRIMS:
            if count - head - tail >= MIN_REPEATS and self._add(
                start + head * period, period, count - head - tail
            ):
                return

    def _add(self, start: int, period: int, count: int) -> bool:
        run = _Run(start, period, count)
        directions: set = set()
        for offset in range(period):
            classes = [
                self._classify(run, offset, k, directions)
                for k in range(len(self.eqns[start + offset].inputs))
            ]
            if any(c is None for c in classes) or len(directions) > 1:
                return False
            run.operands.append(classes)
        run.reverse = directions == {-1}
        for key in run.xs:  # (what the xs read: the producers stack it)
            key[0].ys.setdefault(key[1], len(key[0].ys))
        for var in list(run.consts) + [init for _, init in run.carries]:
            self._use(var)
        self.owner[start : start + period * count] = len(self.runs)
        self.runs.append(run)
        return True

    def _classify(self, run: _Run, offset: int, k: int, directions: set):
        first = self.eqns[run.start + offset].inputs[k]
        if type(first) is Literal:
            return ("literal",)
        d = self.defs[run.start + run.period + offset][k]
        if d is not None and d[0] >= run.start + run.period:
            return ("in", (d[0] - run.start - run.period, d[1]))
        if d is not None and d[0] >= run.start:
            slot = run.carries.setdefault(((d[0] - run.start, d[1]), first), len(run.carries))
            return ("carry", slot)
        return self._outer(run, offset, k, directions)

    def _outer(self, run: _Run, offset: int, k: int, directions: set):
        """An operand from before the run: the same Var in every block (const), or the
        blocks of an earlier run in order (xs); None if neither."""
        at = range(run.start + offset, run.start + run.period * run.count, run.period)
        values = [self.eqns[i].inputs[k] for i in at]
        sources = [self.defs[i][k] for i in at]
        if any(d is not None and d[0] >= run.start for d in sources):
            return None
        if all(v is values[0] for v in values):
            return ("const", run.consts.setdefault(values[0], len(run.consts)))
        if any(d is None or self.owner[d[0]] < 0 for d in sources):
            return None
        producer = self.runs[self.owner[sources[0][0]]]
        places = [producer.place(*d) for d in sources]
        if any(self.owner[d[0]] != self.owner[sources[0][0]] for d in sources):
            return None
        step = producer.stacked(places[1][0]) - producer.stacked(places[0][0])
        first = producer.stacked(places[0][0])
        if step not in (1, -1) or any(
            p[1] != places[0][1] or producer.stacked(p[0]) != first + step * r
            for r, p in enumerate(places)
        ):
            return None
        directions.add(step)
        low = first if step == 1 else first - run.count + 1
        key = (producer, places[0][1], low)
        return ("xs", run.xs.setdefault(key, len(run.xs)))

    def _use(self, var) -> None:
        """Note that `var` is read outside the run defining it (if one does)."""
        d = self.where.get(var)
        if d is None or self.owner[d[0]] < 0:
            return
        run = self.runs[self.owner[d[0]]]
        block, place = run.place(*d)
        run.points[var] = (block, place)
        final = block == run.count - 1 and any(p == place for p, _ in run.carries)
        if not final:
            run.ys.setdefault(place, len(run.ys))

    def rerolled(self) -> Graph:
        """The graph with each run's equations replaced by its scan and what reads it."""
        for i, eqn in enumerate(self.eqns):
            if self.owner[i] < 0:
                for x in eqn.inputs:
                    self._use(x)
        for v in self.graph.out_vars:
            self._use(v)
        starts = {run.start: run for run in self.runs}
        out: list = []
        i = 0
        while i < len(self.eqns):
            run = starts.get(i)
            if run is None:
                out.append(self.eqns[i])
                i += 1
                continue
            out.extend(self._scan(run))
            i = run.start + run.period * run.count
        g = self.graph
        new = Graph(g.in_vars, g.consts, out, g.out_vars, g.in_tree, g.out_tree, g.name)
        new.backend, new.fastmath = g.backend, g.fastmath
        return new

    def _scan(self, run: _Run) -> list:
        """The equations replacing `run`: its xs' slices, its scan, the getitems of its
        values read outside."""
        eqns = []
        xs = []
        for producer, place, low in run.xs:
            stacked = producer.outputs[len(producer.carries) + producer.ys[place]]
            if low == 0 and run.count == producer.count:
                xs.append(stacked)
                continue
            part = Var(_stacked_aval(run.count, stacked.aval.shape[1:], stacked.aval))
            index = (slice(low, low + run.count, None),)
            eqns.append(Equation(getitem_p, [stacked], [part], {"index": index}))
            xs.append(part)
        body = self._body(run)
        self._outputs(run, body)
        params = {
            "body": body,
            "length": run.count,
            "reverse": run.reverse,
            "n_carry": len(run.carries),
            "n_xs": len(run.xs),
        }
        inputs = [init for _, init in run.carries] + xs + list(run.consts)
        eqns.append(Equation(_SCAN[0], inputs, run.outputs, params))
        ys = run.outputs[len(run.carries) :]
        for var, (block, place) in run.points.items():
            if var not in run.outputs:
                index = (run.stacked(block),)
                eqns.append(Equation(getitem_p, [ys[run.ys[place]]], [var], {"index": index}))
        return eqns

    def _body(self, run: _Run) -> Graph:
        """The template block (the second) as a graph of carries, xs and consts."""
        template = run.start + run.period
        local: dict = {}  # place -> the body's Var
        carries = [Var(self._aval(run, p)) for p, _ in run.carries]
        xs = [Var(self._aval(producer, place)) for producer, place, _ in run.xs]
        consts = [Var(v.aval) for v in run.consts]
        pick = {"carry": carries, "xs": xs, "const": consts}
        equations = []
        for offset, classes in enumerate(run.operands):
            eqn = self.eqns[template + offset]
            inputs = []
            for x, c in zip(eqn.inputs, classes):
                if c[0] == "literal":
                    inputs.append(x)
                elif c[0] == "in":
                    inputs.append(local[c[1]])
                else:
                    inputs.append(pick[c[0]][c[1]])
            outputs = [Var(v.aval, v.origin) for v in eqn.outputs]
            for k, v in enumerate(outputs):
                local[(offset, k)] = v
            equations.append(Equation(eqn.prim, inputs, outputs, eqn.params))
        ys = sorted(run.ys, key=run.ys.__getitem__)
        outs = [local[p] for p, _ in run.carries] + [local[p] for p in ys]
        return Graph(carries + xs + consts, [], equations, outs, name=f"{self.graph.name}_block")

    def _aval(self, run: _Run, place: tuple) -> ShapedArray:
        offset, k = place
        return self.eqns[run.start + offset].outputs[k].aval

    def _outputs(self, run: _Run, body: Graph) -> None:
        """The scan's outputs: the last block's Var where a final carry is read outside,
        else new Vars; then the stacked ys."""
        last = run.start + run.period * (run.count - 1)
        read = set(run.points)
        outputs = []
        for place, _ in run.carries:
            var = self.eqns[last + place[0]].outputs[place[1]]
            taken = var in read and var not in outputs
            outputs.append(var if taken else Var(var.aval))
        for v in body.out_vars[len(run.carries) :]:
            outputs.append(Var(_stacked_aval(run.count, v.aval.shape, v.aval)))
        run.outputs = outputs


def _stacked_aval(count: int, shape: tuple, aval: ShapedArray) -> ShapedArray:
    return ShapedArray((count, *shape), aval.dtype)


__all__ = ["MIN_EQUATIONS", "register_scan", "reroll", "rerolled"]
