"""Data movement read in place: which equations of a segment need no array of their own.

A basic slice (`getitem`; `split`'s parts are slices, see executor.py), a C-order `reshape`
that only splits axes or drops and adds axes of length 1, a `concatenate` or `stack` of a
few parts, `transpose`, `flip`, `broadcast_to` and `expand_reduced` each read their output's
element at an index from one position of their operands: an index expression. When every
equation reading such a value is a loop of the same segment (elementwise or a reduction),
the code generator (codegen.py) writes no array and no loop for it: its readers read its
operands at the composed position (a slice of a reshape of a slice is one index expression
on the array at the end of the chain), so their loops fuse across what were other shapes.

A value keeps its array when a statement reads it (BLAS, control flow, a reshape that is
not an index expression), when it leaves the segment, or when reading it in place would be
costly (a concatenation of many parts: a chain of selects at every read).

Cheap arithmetic (`RECOMPUTED`) that no loop reads at its own position (only pads, shifted
slices, rolls and gathers read it) is read in place too: its readers recompute it at the
positions they read, a few operations instead of a store and a load per element.

`roll` is staged as a split and a concatenate of its two parts: a concatenation whose parts
are slices of one value along the concatenation's axis reads that value once, at an index
that wraps around (`roll_access`), instead of choosing between two reads.
"""

from __future__ import annotations

from autodiff.staging.ir import Var
from autodiff.staging.numba.lower import ELEMENTWISE, expanded

# The equations that may be read in place (with their lowering's kind: see `viewable`).
VIEWS = frozenset(
    "getitem concatenate stack transpose flip broadcast_to expand_reduced reshape".split()
)
# A concatenation or stack of more parts is read through this many selects at every read of
# it (and every read of what reads it in place): past it, one array is cheaper.
MAX_PARTS = 4
# A value read in place whose expression would read arrays at more positions than this (a
# concatenation of concatenations doubles them at each level) keeps its array.
MAX_READS = 8
# Arithmetic that the loops reading its value at other positions than its own loop's (a pad,
# a shifted slice, a roll) recompute there, when no loop reads it at its own position: a few
# operations per read against storing the value and loading it again (a memory-bound
# Hessian's intermediates). At most this many operations in all its readers recompute (a
# tree count: the same operand read twice at one position costs LLVM one computation).
RECOMPUTED = frozenset("add subtract multiply negative".split())
MAX_RECOMPUTED_OPS = 16


def paren(expr: str) -> str:
    """An index expression safe to combine with operators (a name or number as it is)."""
    if expr.isidentifier() or expr.isdigit() or _enclosed(expr):
        return expr
    return f"({expr})"


def _enclosed(expr: str) -> bool:
    """Is `expr` one parenthesized expression, `(...)`?"""
    if not expr.startswith("("):
        return False
    depth = 0
    for k, c in enumerate(expr):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return k == len(expr) - 1
    return False


def reshape_access(in_shape: tuple, out_shape: tuple, index: list) -> list | None:
    """The position of `x` (of `in_shape`) that `x.reshape(out_shape)[index]` reads, when
    each axis of `x` of length > 1 is a run of whole output axes (split, not merged: a
    merge would read through a division); else None."""
    if 0 in in_shape or 0 in out_shape:
        return None
    outer = [(n, i) for n, i in zip(out_shape, index) if n != 1]
    read: list = []
    k = 0
    for n in in_shape:
        if n == 1:
            read.append("0")
            continue
        terms, size = [], 1
        while size < n and k < len(outer):
            terms.append(outer[k])
            size *= outer[k][0]
            k += 1
        if size != n:
            return None
        read.append(_flat(terms))
    return read if k == len(outer) else None


def _flat(terms: list) -> str:
    """The C-order flat index of the axes `terms` ((length, index expression) pairs)."""
    expr, stride = "", 1
    for n, i in reversed(terms):
        term = paren(i) if stride == 1 else f"{paren(i)} * {stride}"
        expr = term if not expr else f"{term} + {expr}"
        stride *= n
    return expr


def _reshape_viewable(eqn) -> bool:
    x, out = eqn.inputs[0], eqn.outputs[0]
    if eqn.params.get("order", "C") != "C" or type(x) is not Var or x.aval.ndim == 0:
        return False
    index = [f"i{k}" for k in range(out.aval.ndim)]
    return reshape_access(x.aval.shape, out.aval.shape, index) is not None


def viewable(eqn, kind: str) -> bool:
    """Can `eqn` be read in place (given its lowering's kind)?"""
    name = eqn.prim.name
    if name not in VIEWS or len(eqn.outputs) != 1:
        return False
    if name == "reshape":
        return kind == "statement" and _reshape_viewable(eqn)
    if kind != "elementwise":  # (a transpose written as the view `x.T` is a statement)
        return False
    if name in ("concatenate", "stack") and len(eqn.inputs) > MAX_PARTS:
        return False
    if name == "broadcast_to" and eqn.inputs[0].aval.shape == eqn.outputs[0].aval.shape:
        return False  # (a copy: its loop reads its operand as a scalar of the same loop)
    return all(type(x) is Var for x in eqn.inputs)


def _reads(equations: list, kinds: list) -> dict:
    """For each viewable value, how many array positions reading it in place reads (at most:
    as if every viewable value it reads were read in place too)."""
    reads: dict = {}
    for eqn, kind in zip(equations, kinds):
        if eqn.outputs and viewable(eqn, kind):
            reads[eqn.outputs[0]] = sum(reads.get(x, 1) for x in eqn.inputs)
    return reads


def _recompute_costs(equations: list, kinds: list) -> dict:
    """For each value of `RECOMPUTED` arithmetic, how many operations computing it at one
    position takes (at most: as if every such value it reads were recomputed too)."""
    costs: dict = {}
    for eqn, kind in zip(equations, kinds):
        if kind == "elementwise" and eqn.prim.name in RECOMPUTED and len(eqn.outputs) == 1:
            costs[eqn.outputs[0]] = 1 + sum(costs.get(x, 0) for x in eqn.inputs)
    return costs


def _stores_parts(eqn) -> bool:
    """A concatenation written as a loop: the loops computing its parts store them into its
    array (codegen.py's sinks), better than recomputing them in its loop."""
    return eqn.prim.name == "concatenate"


def in_place(equations: list, kinds: list, live_out: set) -> dict:
    """The equations read in place, by output variable: viewable ones whose every reader is
    a loop (or is read in place itself), whose value does not leave, and whose expression
    stays small (`MAX_READS`); and `RECOMPUTED` arithmetic that no loop reads at its own
    position (`MAX_RECOMPUTED_OPS`)."""
    arrays = set(live_out)  # values read whole
    fused: set = set()  # values loops read at their own position
    views: dict = {}
    reads = _reads(equations, kinds)
    costs = _recompute_costs(equations, kinds)
    readers: dict = {}
    for eqn in equations:
        for x in eqn.inputs:
            readers[x] = readers.get(x, 0) + 1
    for eqn, kind in zip(reversed(equations), reversed(kinds)):
        out = eqn.outputs[0] if eqn.outputs else None
        if out in reads and out not in arrays and reads[out] <= MAX_READS:
            views[out] = eqn
        elif out in costs and out not in arrays and out not in fused:
            if costs[out] * readers.get(out, 1) <= MAX_RECOMPUTED_OPS:
                views[out] = eqn
        elif kind == "statement":
            arrays.update(x for x in eqn.inputs if type(x) is Var)
        elif (
            kind == "reduction"
            or _stores_parts(eqn)
            or ELEMENTWISE[eqn.prim.name].identity_operands
        ):
            fused.update(x for x in eqn.inputs if type(x) is Var)
    return views


def roots(views: dict, equations: list) -> dict:
    """For each value read in place, the variables it reads in the end (arrays)."""
    out: dict = {}
    for eqn in equations:
        v = eqn.outputs[0] if eqn.outputs else None
        if v not in views:
            continue
        found: set = set()
        for x in eqn.inputs:
            if type(x) is Var:
                found |= out.get(x, {x})
        out[v] = frozenset(found)
    return out


def roll_parts(eqn, views: dict) -> tuple | None:
    """For a concatenation of slices of one value along its axis (a roll, staged as a split
    and a concatenate): (that value, the axis, [(first output position, first input
    position)] per part); else None. `views` maps the parts to their equations (a part
    absent from it is not a slice read in place)."""
    if eqn.prim.name != "concatenate" or not views:
        return None
    axis = eqn.params["axis"] % eqn.outputs[0].aval.ndim
    source, pieces, start = None, [], 0
    for part in eqn.inputs:
        producer = views.get(part)
        if producer is None or producer.prim.name != "getitem":
            return None
        x = producer.inputs[0]
        begin = _axis_slice(producer.params["index"], x.aval.shape, axis)
        if begin is None or (source is not None and x is not source):
            return None
        source = x
        pieces.append((start, begin))
        start += part.aval.shape[axis]
    return source, axis, pieces


def _axis_slice(index: tuple, shape: tuple, axis: int) -> int | None:
    """The start of a step-1 slice along `axis` when `index` takes every other axis whole."""
    parts = expanded(index, len(shape))
    if len(parts) != len(shape) or any(type(p) is not slice for p in parts):
        return None
    begin = None
    for k, (p, n) in enumerate(zip(parts, shape)):
        start, stop, step = p.indices(n)
        if k == axis and step == 1:
            begin = start
        elif (start, stop, step) != (0, n, 1):
            return None
    return begin


def roll_access(pieces: list, i: str) -> str:
    """The input position along the axis that output position `i` reads: the position plus
    the offset of its part, chosen by selects on integers (no branch between loads)."""
    i = paren(i)
    expr = _shifted(i, pieces[-1][1] - pieces[-1][0])
    for k in range(len(pieces) - 2, -1, -1):
        first, begin = pieces[k]
        expr = f"({_shifted(i, begin - first)} if {i} < {pieces[k + 1][0]} else {expr})"
    return expr


def _shifted(i: str, offset: int) -> str:
    if offset == 0:
        return i
    return f"{i} + {offset}" if offset > 0 else f"{i} - {-offset}"


__all__ = [
    "MAX_PARTS",
    "MAX_READS",
    "VIEWS",
    "in_place",
    "paren",
    "reshape_access",
    "roll_access",
    "roll_parts",
    "roots",
    "viewable",
]
