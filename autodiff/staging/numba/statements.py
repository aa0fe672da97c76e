"""Statements of the Numba backend: the equations written as array code rather than loops.

Each entry of `STATEMENTS` is `(check, write)`: `check(eqn)` says whether the equation's
params and dtypes are handled; `write(writer, eqn)` writes its code with a
`codegen.Writer` and binds its outputs' names. Control flow writes its sub-graphs inline,
so a `fori_loop` body runs as a native loop with no call per iteration.
"""

from __future__ import annotations

import numpy as np

from autodiff.staging.numba.codegen import graph_lowerable
from autodiff.staging.numba.lower import broadcast_access, cast, dtype_name

_BLAS = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


# ---- matmul and dot: BLAS through np.dot ----


def _product_check(eqn) -> bool:
    a, b = (x.aval for x in eqn.inputs)
    out = eqn.outputs[0].aval
    if out.dtype not in _BLAS or a.ndim == 0 or b.ndim == 0:
        return False
    if eqn.prim.name == "dot" and (a.ndim > 2 or b.ndim > 2):
        return False
    return (a.ndim <= 2 and b.ndim <= 2) or (a.ndim >= 2 and b.ndim >= 2)


def _as_dtype(writer, x, dtype) -> str:
    name = writer.value(x)
    if x.aval.dtype == dtype:
        return name
    return f"{name}.astype({dtype_name(dtype)})"


def _write_product(writer, eqn) -> None:
    a, b = eqn.inputs
    out = eqn.outputs[0]
    dtype = out.aval.dtype
    an, bn = _as_dtype(writer, a, dtype), _as_dtype(writer, b, dtype)
    name = writer.names.new("m")
    writer.env[out] = name
    if a.aval.ndim <= 2 and b.aval.ndim <= 2:
        if 0 in a.aval.shape or 0 in b.aval.shape:
            writer.line(f"{name} = np.zeros({out.aval.shape!r}, {dtype_name(dtype)})")
            return
        writer.line(f"{name} = np.dot({an}, {bn})")  # (BLAS reads C and F layouts as they are)
        return
    batch = out.aval.shape[:-2]
    writer.line(f"{name} = np.empty({out.aval.shape!r}, {dtype_name(dtype)})")
    index = [writer.names.new("b") for _ in batch]
    outer = writer.indent
    for i, n in zip(index, batch):
        writer.line(f"for {i} in range({n}):")
        writer.indent += "    "
    ai = broadcast_access(a.aval.shape[:-2], index)
    bi = broadcast_access(b.aval.shape[:-2], index)
    left = f"{an}[{', '.join(ai + [':', ':'])}]"
    right = f"{bn}[{', '.join(bi + [':', ':'])}]"
    writer.line(
        f"{name}[{', '.join(index + [':', ':'])}] = "
        f"np.dot(np.ascontiguousarray({left}), np.ascontiguousarray({right}))"
    )
    writer.indent = outer


# ---- reshape ----


def _reshape_check(eqn) -> bool:
    return eqn.params.get("order", "C") == "C"


def _write_reshape(writer, eqn) -> None:
    x, out = eqn.inputs[0], eqn.outputs[0]
    shape = out.aval.shape
    name = writer.names.new("h")
    writer.env[out] = name
    value = writer.value(x)
    if x.aval.ndim == 0:
        writer.line(f"{name} = np.full({shape!r}, {value})")
    elif not shape:
        writer.line(f"{name} = np.ascontiguousarray({value}).ravel()[0]")
    else:
        writer.line(f"{name} = np.ascontiguousarray({value}).reshape({shape!r})")


# ---- control flow: sub-graphs written inline ----


def _carry(writer, x, aval) -> str:
    """A fresh local holding `x` (a carry, reassigned by the loop), in `aval`'s dtype."""
    name = writer.names.new("c")
    value = writer.value(x)
    if aval.ndim == 0:
        writer.line(f"{name} = {cast(value, x.aval.dtype, aval.dtype)}")
    else:
        writer.line(f"{name} = np.ascontiguousarray({value})")
    return name


def _assign(writer, name: str, value: str, have, aval) -> None:
    if aval.ndim == 0:
        writer.line(f"{name} = {cast(value, have, aval.dtype)}")
    else:
        writer.line(f"{name} = np.ascontiguousarray({value})")


def _update_carries(writer, carries: list, outs: list, out_vars: list, avals: list) -> None:
    """Assign a loop's new carries, all at once: an output may name another carry (a body
    returning its inputs swapped, or passing one through), so each new value is taken into
    a fresh local before any carry is overwritten."""
    fresh = [writer.names.new("n") for _ in carries]
    for name, out, var, aval in zip(fresh, outs, out_vars, avals):
        _assign(writer, name, out, var.aval.dtype, aval)
    for c, name in zip(carries, fresh):
        writer.line(f"{c} = {name}")


def _scan_check(eqn) -> bool:
    return graph_lowerable(eqn.params["body"], STATEMENTS)


def _write_scan(writer, eqn) -> None:
    body = eqn.params["body"]
    n_carry, n_xs = eqn.params["n_carry"], eqn.params["n_xs"]
    length, reverse = eqn.params["length"], eqn.params["reverse"]
    operands = eqn.inputs
    carry_avals = body.in_avals[:n_carry]
    carries = [_carry(writer, x, a) for x, a in zip(operands[:n_carry], carry_avals)]
    ys = []
    for aval in body.out_avals[n_carry:]:
        y = writer.names.new("y")
        writer.line(f"{y} = np.empty({(length, *aval.shape)!r}, {dtype_name(aval.dtype)})")
        ys.append(y)
    consts = [writer.value(x) for x in operands[n_carry + n_xs :]]
    k = writer.names.new("k")
    steps = f"range({length - 1}, -1, -1)" if reverse else f"range({length})"
    outer = writer.indent
    writer.line(f"for {k} in {steps}:")
    writer.indent += "    "
    xs = [f"{writer.value(x)}[{k}]" for x in operands[n_carry : n_carry + n_xs]]
    outs = writer.graph(body, carries + xs + consts)
    for y, out in zip(ys, outs[n_carry:]):  # (before the carries change: an output may be one)
        writer.line(f"{y}[{k}] = {out}")
    _update_carries(writer, carries, outs, body.out_vars, carry_avals)
    writer.indent = outer
    for var, name in zip(eqn.outputs, carries + ys):
        writer.env[var] = name


def _while_check(eqn) -> bool:
    return graph_lowerable(eqn.params["cond_graph"], STATEMENTS) and graph_lowerable(
        eqn.params["body_graph"], STATEMENTS
    )


def _write_while(writer, eqn) -> None:
    cond_graph, body_graph = eqn.params["cond_graph"], eqn.params["body_graph"]
    n_carry, n_cond = eqn.params["n_carry"], eqn.params["n_cond"]
    operands = eqn.inputs
    avals = body_graph.in_avals[:n_carry]
    carries = [_carry(writer, x, a) for x, a in zip(operands[:n_carry], avals)]
    cond_consts = [writer.value(x) for x in operands[n_carry : n_carry + n_cond]]
    body_consts = [writer.value(x) for x in operands[n_carry + n_cond :]]
    outer = writer.indent
    writer.line("while True:")
    writer.indent += "    "
    (pred,) = writer.graph(cond_graph, carries + cond_consts)
    writer.line(f"if not {pred}:")
    writer.line("    break")
    outs = writer.graph(body_graph, carries + body_consts)
    _update_carries(writer, carries, outs, body_graph.out_vars, avals)
    writer.indent = outer
    for var, name in zip(eqn.outputs, carries):
        writer.env[var] = name


def _cond_check(eqn) -> bool:
    return all(graph_lowerable(g, STATEMENTS) for g in eqn.params["branches"])


def _write_cond(writer, eqn) -> None:
    branches = eqn.params["branches"]
    index, operands = eqn.inputs[0], eqn.inputs[1:]
    values = [writer.value(x) for x in operands]
    outs = [writer.names.new("o") for _ in eqn.outputs]
    k = writer.names.new("q")
    writer.line(f"{k} = min(max(int({writer.value(index)}), 0), {len(branches) - 1})")
    outer = writer.indent
    for b, graph in enumerate(branches):
        if b == len(branches) - 1:
            writer.line("else:" if b else "if True:")
        else:
            writer.line(f"{'if' if b == 0 else 'elif'} {k} == {b}:")
        writer.indent = outer + "    "
        results = writer.graph(graph, values)
        for name, value, var, aval in zip(outs, results, graph.out_vars, eqn.outputs):
            _assign(writer, name, value, var.aval.dtype, aval.aval)
        writer.indent = outer
    for var, name in zip(eqn.outputs, outs):
        writer.env[var] = name


# ---- dynamic slices: a block at starts clamped at run time ----


def _clamped_starts(writer, starts: list, shape: tuple, sizes: tuple) -> list:
    names = []
    for s, n, k in zip(starts, shape, sizes):
        name = writer.names.new("s")
        writer.line(f"{name} = min(max(int({writer.value(s)}), 0), {n - k})")
        names.append(name)
    return names


def _block(starts: list, sizes: tuple) -> str:
    return ", ".join(f"{s}:{s} + {k}" for s, k in zip(starts, sizes))


def _write_dynamic_slice(writer, eqn) -> None:
    x, *starts = eqn.inputs
    sizes = eqn.params["sizes"]
    name = writer.names.new("d")
    writer.env[eqn.outputs[0]] = name
    if not sizes:  # (a 0-d operand: the block is the operand)
        writer.line(f"{name} = {writer.value(x)}")
        return
    clamped = _clamped_starts(writer, starts, x.aval.shape, sizes)
    writer.line(f"{name} = {writer.value(x)}[{_block(clamped, sizes)}].copy()")


def _write_dynamic_update_slice(writer, eqn) -> None:
    x, update, *starts = eqn.inputs
    sizes = update.aval.shape
    name = writer.names.new("d")
    writer.env[eqn.outputs[0]] = name
    if not sizes:  # (0-d: the update replaces the operand)
        writer.line(f"{name} = {cast(writer.value(update), update.aval.dtype, x.aval.dtype)}")
        return
    clamped = _clamped_starts(writer, starts, x.aval.shape, sizes)
    writer.line(f"{name} = {writer.value(x)}.copy()")
    writer.line(f"{name}[{_block(clamped, sizes)}] = {writer.value(update)}")


# ---- checkpointing: the staged function inline; identities ----


def _remat_check(eqn) -> bool:
    return graph_lowerable(eqn.params["graph"], STATEMENTS)


def _write_remat(writer, eqn) -> None:
    results = writer.graph(eqn.params["graph"], [writer.value(x) for x in eqn.inputs])
    for var, value in zip(eqn.outputs, results):
        name = writer.names.new("r")
        writer.line(f"{name} = {value}")
        writer.env[var] = name


def _write_aliases(writer, eqn) -> None:
    """Outputs that are the first inputs, as they are (an optimization barrier, a value saved
    by a checkpoint)."""
    for var, x in zip(eqn.outputs, eqn.inputs):
        name = writer.names.new("a")
        writer.line(f"{name} = {writer.value(x)}")
        writer.env[var] = name


def _always(eqn) -> bool:
    return True


STATEMENTS: dict = {
    "matmul": (_product_check, _write_product),
    "dot": (_product_check, _write_product),
    "reshape": (_reshape_check, _write_reshape),
    "scan": (_scan_check, _write_scan),
    "while": (_while_check, _write_while),
    "cond": (_cond_check, _write_cond),
    "dynamic_slice": (_always, _write_dynamic_slice),
    "dynamic_update_slice": (_always, _write_dynamic_update_slice),
    "remat": (_remat_check, _write_remat),
    "remat_saved": (_always, _write_aliases),
    "optimization_barrier": (_always, _write_aliases),
}

__all__ = ["STATEMENTS"]
