"""The segments of one graph compiled together: one LLVM module, one engine.

`compile_segments(translations, fastmath)` joins the translated functions into a module,
gets its object code (from the disk cache, or by optimizing and compiling it: engine.py),
loads it, and returns a Python callable per segment (runtime.py). The machine code stays
loaded while any of the callables lives (each holds the `Compiled`; `release()` on it frees
the code early, for whoever evicts compiled graphs). A module that fails to compile is
compiled again one segment at a time, and a segment that still fails is left out (the
caller compiles it with Numba).

What a module calls of ours beyond its own functions is compiled apart, once per process,
in engines never released, their object code kept in the disk cache like a module's, and
bound by symbol before the module is loaded: the matrix-product kernels (gemm.py), per
dtype (`kernel_address`), and the vector math the translator maps short loops' calls to
(mathlib.py's `variant_symbol`s), per function and width.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import threading

import numpy as np

from autodiff.staging.llvm import engine, gemm, mathlib, objects
from autodiff.staging.llvm.runtime import segment_function
from autodiff.staging.llvm.values import LOOP_HINT

_VARIANT = re.compile(
    r'@"(' + re.escape(mathlib.VARIANT_PREFIX) + r'(\w+)\.(f64|f32)\.v(\d+))\.slot"'
)
_TYPES = {"f64": "double", "f32": "float"}
_HINT = re.compile(re.escape(LOOP_HINT) + r"(\d+)")

_lock = threading.Lock()
_code: dict = {}  # symbol -> the Compiled defining it: kernels, vector math (under _lock)
_slots: dict = {}  # slot symbol -> its pointer (`_slot`), kept for the process's life
_wanted: dict = {}  # slot symbol -> [function symbol, its module's IR, started]


def _object_code(ir: str) -> bytes:
    """Module `ir`'s object code: from the disk cache, or optimized and compiled (and kept)."""
    code = objects.load(ir)
    if code is None:
        code = engine.optimize_to_object(ir)
        objects.save(ir, code)
    return code


def _define(symbol: str, ir: str) -> int:
    """The address of function `symbol` of module `ir`, compiled (or loaded from the disk
    cache) once per process, bound to its symbol and written into its slot if it has one.
    (Compiled outside the lock: a background compile never holds up another thread's; two
    threads may both compile it, and the first to finish is kept.)"""
    with _lock:
        if symbol in _code:
            return _code[symbol].addresses[symbol]
    compiled = engine.load_object(_object_code(ir), [symbol], ir)
    with _lock:
        if symbol not in _code:
            engine.bind_symbol(symbol, compiled.addresses[symbol])
            _code[symbol] = compiled
            _slot(symbol + ".slot").value = compiled.addresses[symbol]
        else:
            compiled.release()
        return _code[symbol].addresses[symbol]


def _slot(name: str) -> ctypes.c_void_p:
    """The slot `name` (under _lock): a pointer of this process, bound to that symbol, null
    until the function it is the slot of is compiled."""
    if name not in _slots:
        cell = ctypes.c_void_p(None)
        engine.bind_symbol(name, ctypes.addressof(cell))
        _slots[name] = cell
    return _slots[name]


def kernel_address(dtype) -> int:
    """The address of gemm.py's product kernel of `dtype` for this host (see `_define`)."""
    dtype = np.dtype(dtype)
    header = engine.header()
    return _define(
        gemm.symbol(dtype), gemm.module_ir(dtype, gemm.host_shape(engine.features()), header)
    )


def _calls(ir: str) -> list:
    """(function symbol, its module's IR, called through a slot) for each function of ours
    module `ir` calls: gemm.py's kernels, mathlib.py's vector math."""
    found = []
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        name = gemm.symbol(dtype)
        direct, slotted = f'@"{name}"' in ir, f'@"{gemm.slot_symbol(dtype)}"' in ir
        if direct or slotted:
            shape = gemm.host_shape(engine.features())
            found.append((name, gemm.module_ir(dtype, shape, engine.header()), not direct))
    for name, function, suffix, lanes in set(_VARIANT.findall(ir)):
        text = mathlib.variant_module(function, _TYPES[suffix], int(lanes))
        found.append((name, engine.header() + text, True))
    return found


def _bind(ir: str) -> None:
    """Make ready what module `ir` calls of ours: called by symbol, compiled now; through a
    slot, loaded now from the disk cache, or else left to `compile_wanted` (until then the
    module calls BLAS, or libm on each lane: a first call does not wait ~0.02-0.2 s for a
    compile that pays off over many calls)."""
    for symbol, text, slotted in _calls(ir):
        if not slotted:
            _define(symbol, text)
            continue
        with _lock:
            _slot(symbol + ".slot")
            if symbol in _code or symbol + ".slot" in _wanted:
                continue
            if objects.load(text) is None:
                _wanted[symbol + ".slot"] = [symbol, text, False]
                continue
        _define(symbol, text)


def compile_wanted() -> None:
    """Compile in a background thread what loaded modules call through slots still null:
    called once a compiled graph has answered its first call, so that the compile does not
    share the CPU with that call."""
    with _lock:
        wanted = [entry for entry in _wanted.values() if not entry[2]]
        for entry in wanted:
            entry[2] = True
    if wanted:
        threading.Thread(target=_define_all, args=(wanted,), daemon=True).start()


def _define_all(wanted: list) -> None:
    for symbol, text, _ in wanted:
        with contextlib.suppress(Exception):  # (the slot stays null: the fallback stays)
            _define(symbol, text)


def module_text(translations: list) -> str:
    """The IR text of a module holding `translations`' functions, their loop hints
    (`values.LOOP_HINT`) numbered through the module."""
    declarations: dict = {}
    for t in translations:
        declarations.update(t.declarations)
    lines = [engine.header(), *sorted(declarations.values()), ""]
    hinted = 0
    for t in translations:
        if not t.hinted_loops:
            lines.append(t.ir)
            continue
        lines.append(_HINT.sub(lambda m, base=hinted: f"!{base + 1 + int(m[1])}", t.ir))
        hinted += t.hinted_loops
    if hinted:  # (!0 the hint, then each loop's own node)
        lines.append('!0 = !{!"llvm.loop.vectorize.enable", i1 true}')
        lines += [f"!{k} = distinct !{{!{k}, !0}}" for k in range(1, hinted + 1)]
    return "\n".join(lines)


def _compile(translations: list):
    ir = module_text(translations)
    names = [t.name for t in translations]
    _bind(ir)
    code = objects.load(ir)
    if code is not None:
        try:
            return engine.load_object(code, names, ir)
        except Exception:  # (a damaged file: compiled anew, and replaced)
            pass
    code = engine.optimize_to_object(ir)
    objects.save(ir, code)
    return engine.load_object(code, names, ir)


def compile_segments(translations: list, fastmath: bool = False) -> dict:
    """{name: callable} for the translated segments that compile (see the module
    docstring). `fastmath` is already in the IR; it names nothing here."""
    del fastmath
    if not translations:
        return {}
    try:
        groups = [(translations, _compile(translations))]
    except Exception:  # (one bad function fails its module: try them one by one)
        groups = []
        for t in translations:
            try:
                groups.append(([t], _compile([t])))
            except Exception:
                continue
    functions = {}
    for group, compiled in groups:
        for t in group:
            function = segment_function(t, compiled.addresses[t.name])
            function.compiled = compiled
            functions[t.name] = function
    return functions


__all__ = ["compile_segments", "compile_wanted", "kernel_address", "module_text"]
