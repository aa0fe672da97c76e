"""LLVM through llvmlite: IR text optimized and compiled to machine code for this CPU.

`compile_ir(ir, names)` returns a `Compiled`: the machine code of one module (the segments of
one graph), in an execution engine of its own so that `release()` frees it. The
optimization pipeline is LLVM's O2 with the loop vectorizer (not SLP's, and no
interleaving: see `_builder`), or a light one for a huge module (`LARGE_MODULE_LINES`), for
the host CPU (name and features); the object code is kept in a disk cache (`objects.py`)
keyed by the IR text, so a new process loads it instead of optimizing again.

llvmlite is imported, and LLVM set up, at the first compile (once per process, under a
lock): importing autodiff never loads it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib.util
import os
import re
import threading
import time

from autodiff.staging.llvm.products import BLAS_PREFIX
from autodiff.staging.llvm.runtime import blas_address
from autodiff.staging.llvm.scalars import LIBM_PREFIX

_lock = threading.Lock()
_state: dict = {}  # llvmlite, the target machine, the host's name: set up once (under _lock)
# Time spent per phase (seconds, summed over the process): for benchmarks.
TIMES = {"translate": 0.0, "parse": 0.0, "optimize": 0.0, "codegen": 0.0, "load": 0.0}
_EXTERNAL_CALL = re.compile(
    r'@"(' + re.escape(LIBM_PREFIX) + "|" + re.escape(BLAS_PREFIX) + r')(\w+)"'
)
# Above this many IR lines a module gets the light pipeline (`_light_pipeline`): O2's cost
# grows faster than linearly on one huge function (the unrolled `ode` gradient, 19k
# equations, 200k lines: O2 ~60 s, O1 ~50 s, the light pipeline ~5 s with code generation).
LARGE_MODULE_LINES = 100_000


def _preload_library() -> None:
    """Load llvmlite's shared library by a call through ctypes, which releases the GIL: its
    import then finds it loaded. Loading LLVM takes tens of milliseconds, which the caller's
    thread would otherwise wait out whenever a background compile is the first to set up."""
    spec = importlib.util.find_spec("llvmlite")
    if spec is None or spec.origin is None or not hasattr(os, "RTLD_NOW"):
        return
    directory = os.path.join(os.path.dirname(spec.origin), "binding")
    with contextlib.suppress(OSError):
        libc = ctypes.CDLL(None)
        libc.dlopen.restype = ctypes.c_void_p
        libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
        for name in os.listdir(directory):
            if name.startswith("libllvmlite"):
                libc.dlopen(os.path.join(directory, name).encode(), os.RTLD_NOW | os.RTLD_LOCAL)


def _libm():
    """The C library's math (by its usual name first: `find_library` runs a subprocess)."""
    try:
        return ctypes.CDLL("libm.so.6")
    except OSError:
        return ctypes.CDLL(ctypes.util.find_library("m"))


def _setup() -> dict:
    with _lock:
        if not _state:
            _preload_library()
            import llvmlite
            import llvmlite.binding as llvm

            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
            target = llvm.Target.from_default_triple()

            def target_machine():
                return target.create_target_machine(
                    cpu=cpu, features=features, opt=2, codemodel="jitdefault", jit=True
                )

            tm = target_machine()
            _state.update(
                libm=_libm(),
                bound=set(),
                llvm=llvm,
                tm=tm,
                features=features,
                target_machine=target_machine,
                host=f"llvmlite {llvmlite.__version__} {target.triple} {cpu} {features}",
                header=f'target triple = "{tm.triple}"\ntarget datalayout = "{tm.target_data}"\n',
            )
    return _state


def ready() -> bool:
    """Is LLVM set up in this process (a compile's fixed cost already paid)?"""
    return bool(_state)


def host() -> str:
    """What compiled code depends on besides its IR: llvmlite's version, the target triple,
    the CPU's name and features (part of the disk cache's key)."""
    return _setup()["host"]


def vector_bits() -> int:
    """The width of this CPU's vector registers in bits, from its features (512 with
    AVX-512, 256 with AVX, else SSE's 128)."""
    host = set(features().split(","))
    if "+avx512f" in host:
        return 512
    return 256 if "+avx" in host else 128


def header() -> str:
    """The module header for this target (triple and data layout)."""
    return _setup()["header"]


class Compiled:
    """Machine code of one module: `addresses[name]` of its functions; `release()` frees
    it (no function of it may be called afterwards)."""

    def __init__(self, engine, addresses: dict):
        self._engine = engine
        self.addresses = addresses
        self.context = None

    def release(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()


def _builder(llvm, tm, level: int):
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = level >= 2
    # No interleaving of vectorized loops (several vectors per iteration): it made no
    # workload of the benchmarks faster (elementwise, mlp, chain, per_example, ode_loop,
    # hessian, hvp, measured) and lengthened every compile.
    pto.loop_interleaving = False
    # No SLP vectorizer: on some of our modules its output fails an assertion in LLVM 20's
    # instruction selection ("Already set a value for this node!"), which aborts the process.
    pto.slp_vectorization = False
    return llvm.create_pass_builder(tm, pto)


def _light_pipeline(llvm):
    """The passes a huge module gets: locals into registers (SROA), instruction combining,
    CFG simplification; each linear in practice, where O2's pipeline is not."""
    manager = llvm.create_new_module_pass_manager()
    manager.add_sroa_pass()
    manager.add_instruction_combine_pass()
    manager.add_simplify_cfg_pass()
    return manager


def optimize_to_object(ir: str, fastmath: bool = False) -> bytes:
    """The object code of module `ir` (text with `header()`), optimized for this CPU."""
    state = _setup()
    llvm = state["llvm"]
    start = time.perf_counter()
    # (a context of its own: LLVM's global one is not to be shared between threads, and
    # Numba compiles in it under a lock of its own)
    module = llvm.parse_assembly(ir, llvm.create_context())
    module.verify()
    parsed = time.perf_counter()
    if ir.count("\n") > LARGE_MODULE_LINES:
        _light_pipeline(llvm).run(module, _builder(llvm, state["tm"], 0))
    else:
        builder = _builder(llvm, state["tm"], 2)
        builder.getModulePassManager().run(module, builder)
    optimized = time.perf_counter()
    with _lock:  # (one target machine, shared)
        code = state["tm"].emit_object(module)
    TIMES["parse"] += parsed - start
    TIMES["optimize"] += optimized - parsed
    TIMES["codegen"] += time.perf_counter() - optimized
    return bytes(code)


def _bind_symbols(ir: str) -> None:
    """Bind the functions `ir` calls under our names to their addresses, once per process:
    the C library's math (scalars.math_call) and NumPy's BLAS (scalars.Expressions._gemm)."""
    state = _setup()
    for prefix, name in set(_EXTERNAL_CALL.findall(ir)):
        with _lock:
            if prefix + name in state["bound"]:
                continue
            if prefix == LIBM_PREFIX:
                address = ctypes.cast(getattr(state["libm"], name), ctypes.c_void_p).value
            else:
                address = blas_address(name)
                if address is None:
                    raise RuntimeError(f"no BLAS function {name}")
            state["llvm"].add_symbol(prefix + name, address)
            state["bound"].add(prefix + name)


def bind_symbol(name: str, address: int) -> None:
    """Bind symbol `name`, as modules loaded from now on call it, to `address` (the code of
    another engine: module.py's matrix-product kernels and vector math)."""
    state = _setup()
    with _lock:
        state["llvm"].add_symbol(name, address)
        state["bound"].add(name)


def features() -> str:
    """The host CPU's features, as LLVM names them ("+avx2,+fma,...")."""
    return _setup()["features"]


def load_object(code: bytes, names: list, ir: str) -> Compiled:
    """The functions `names` of object code `code` (compiled from module `ir`), loaded into
    an engine of their own."""
    state = _setup()
    llvm = state["llvm"]
    start = time.perf_counter()
    _bind_symbols(ir)
    context = llvm.create_context()
    empty = llvm.parse_assembly(state["header"], context)
    # (an engine owns its target machine, and disposes of it with itself)
    engine = llvm.create_mcjit_compiler(empty, state["target_machine"]())
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    addresses = {name: engine.get_function_address(name) for name in names}
    TIMES["load"] += time.perf_counter() - start
    if not all(addresses.values()):
        engine.close()
        raise RuntimeError("a compiled function is missing from its object code")
    compiled = Compiled(engine, addresses)
    compiled.context = context  # (lives as long as the engine's module)
    return compiled


__all__ = [
    "TIMES",
    "Compiled",
    "bind_symbol",
    "features",
    "header",
    "host",
    "load_object",
    "optimize_to_object",
]
