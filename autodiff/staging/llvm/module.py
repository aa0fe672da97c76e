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

_VARIANT = re.compile(r'@"(' + re.escape(mathlib.VARIANT_PREFIX) + r'(\w+)\.(f64|f32)\.v(\d+))"')
_TYPES = {"f64": "double", "f32": "float"}
_HINT = re.compile(re.escape(LOOP_HINT) + r"(\d+)")
_variants_lock = threading.Lock()
_variants: dict = {}  # symbol: the `Compiled` defining it (under _variants_lock)

_lock = threading.Lock()
_kernels: dict = {}  # dtype -> the Compiled of its product kernel (under _lock)
_slots: dict = {}  # dtype -> its kernel's slot (`_slot`), kept for the process's life
_wanted: dict = {}  # dtype -> started: kernels modules call through their slots, not compiled


def _object_code(ir: str) -> bytes:
    """Module `ir`'s object code: from the disk cache, or optimized and compiled (and kept)."""
    code = objects.load(ir)
    if code is None:
        code = engine.optimize_to_object(ir)
        objects.save(ir, code)
    return code


def kernel_address(dtype) -> int:
    """The address of gemm.py's product kernel of `dtype` for this host, compiled (or loaded
    from the disk cache) at the first call in the process, bound to its symbol for the
    modules that call it and written into its slot for those that read it there."""
    dtype = np.dtype(dtype)
    name = gemm.symbol(dtype)
    with _lock:
        if dtype not in _kernels:
            ir = _kernel_ir(dtype)
            compiled = engine.load_object(_object_code(ir), [name], ir)
            engine.bind_symbol(name, compiled.addresses[name])
            _kernels[dtype] = compiled
            _slot(dtype).value = compiled.addresses[name]
        return _kernels[dtype].addresses[name]


def _kernel_ir(dtype) -> str:
    return gemm.module_ir(dtype, gemm.host_shape(engine.features()), engine.header())


def _slot(dtype) -> ctypes.c_void_p:
    """The kernel's slot (under _lock): a pointer of this process, null until the kernel is
    compiled, bound to `gemm.slot_symbol(dtype)`."""
    if dtype not in _slots:
        cell = ctypes.c_void_p(None)
        engine.bind_symbol(gemm.slot_symbol(dtype), ctypes.addressof(cell))
        _slots[dtype] = cell
    return _slots[dtype]


def _bind_kernels(ir: str) -> None:
    """Make ready the kernels module `ir` calls: by symbol, compiled now; through a slot,
    loaded now from the disk cache, or else left to `compile_wanted_kernels` while the module
    calls BLAS (a graph's first call in a process does not wait a kernel's ~0.2 s)."""
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        if f'@"{gemm.symbol(dtype)}"' in ir:
            kernel_address(dtype)
        if f'@"{gemm.slot_symbol(dtype)}"' not in ir:
            continue
        with _lock:
            _slot(dtype)
            if dtype in _kernels or dtype in _wanted:
                continue
            cached = objects.load(_kernel_ir(dtype)) is not None
            if not cached:
                _wanted[dtype] = False
        if cached:
            kernel_address(dtype)


def compile_wanted_kernels() -> None:
    """Compile in a background thread the kernels loaded modules want and do not have yet
    (their slots null): called once a compiled graph has answered its first call, so that
    the compile does not share the CPU with that call."""
    with _lock:
        dtypes = [dtype for dtype, started in _wanted.items() if not started]
        _wanted.update(dict.fromkeys(dtypes, True))
    for dtype in dtypes:
        threading.Thread(target=_compile_kernel, args=(dtype,), daemon=True).start()


def _compile_kernel(dtype) -> None:
    with contextlib.suppress(Exception):  # (the slot stays null: the modules call BLAS)
        kernel_address(dtype)


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


def _bind_variants(ir: str) -> None:
    """Compile (or load) and bind each vector math function `ir` declares, once per process."""
    for symbol, name, suffix, lanes in set(_VARIANT.findall(ir)):
        with _variants_lock:
            if symbol in _variants:
                continue
            text = engine.header() + mathlib.variant_module(name, _TYPES[suffix], int(lanes))
            compiled = engine.load_object(_object_code(text), [symbol], text)
            engine.bind_symbol(symbol, compiled.addresses[symbol])
            _variants[symbol] = compiled


def _compile(translations: list):
    ir = module_text(translations)
    names = [t.name for t in translations]
    _bind_kernels(ir)
    _bind_variants(ir)
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


__all__ = ["compile_segments", "compile_wanted_kernels", "kernel_address", "module_text"]
