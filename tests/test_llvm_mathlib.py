"""The LLVM backend's vectorizable transcendentals (autodiff/staging/llvm/mathlib.py).

Each definition is compiled here into a loop `void f(x*, y*, i64 n)` by llvmlite directly
(parse, the O3 pipeline with both vectorizers for the host CPU, MCJIT): within its ulp bound
of NumPy on dense samples and the edges, vectorized with no libm call in the vector loop,
and timed against the same loop calling libm (printed, not asserted).
"""

from __future__ import annotations

import ctypes
import re
import time

import numpy as np
import pytest
import scipy.special

from autodiff.staging.llvm import engine, mathlib, module

llvm = pytest.importorskip("llvmlite.binding")

TYPES = {"double": np.float64, "float": np.float32}
# ulp bounds against NumPy's ufunc of the same dtype (the module docstring's table); expit
# against the sigmoid computed in long double. A float's bound is against the exact result
# rounded to float (NumPy's float64 loop, rounded): NumPy's float32 loops are themselves up
# to ~2 ulp off that, and the float functions are within 3 ulps of them.
BOUND = {
    "double": {"exp": 1, "exp2": 1, "expm1": 2, "log": 1, "log2": 2, "log10": 2, "log1p": 2}
    | {"sin": 1, "cos": 1, "tanh": 3, "expit": 2, "sinh": 2, "cosh": 1},
    "float": dict.fromkeys(mathlib.NAMES, 1)
    | dict.fromkeys(["expm1", "log2", "log10", "tanh", "expit"], 2),
}
NUMPY_FLOAT_BOUND = 3

LOOP = """
define void @{loop}(ptr noalias %x, ptr noalias %y, i64 %n) {{
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %body, label %exit
body:
  %i = phi i64 [0, %entry], [%next, %body]
  %px = getelementptr {ty}, ptr %x, i64 %i
  %v = load {ty}, ptr %px
  %r = call {ty} {callee}({ty} %v)
  %py = getelementptr {ty}, ptr %y, i64 %i
  store {ty} %r, ptr %py
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %body, label %exit
exit:
  ret void
}}
"""
LIBM_EXPIT = """
define internal {ty} @libm.expit.{ty}({ty} %x) {{
  %minus = fneg {ty} %x
  %e = call {ty} @exp{suffix}({ty} %minus)
  %d = fadd {ty} 1.0, %e
  %y = fdiv {ty} 1.0, %d
  ret {ty} %y
}}
"""
PAIRS = [(name, ty) for name in sorted(mathlib.NAMES) for ty in TYPES]
LOOP_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _expit(x):
    """The sigmoid in long double (SciPy's float expit flushes subnormal results to 0)."""
    wide = x.astype(np.longdouble)
    e = np.exp(-np.abs(wide))
    return np.where(wide >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _reference(name):
    return _expit if name == "expit" else getattr(np, name)


def _libm_callee(name, ty, parts, declares):
    suffix = "" if ty == "double" else "f"
    if name == "expit":
        declares.add(f"declare {ty} @exp{suffix}({ty})")
        parts.append(LIBM_EXPIT.format(ty=ty, suffix=suffix))
        return f"@libm.expit.{ty}"
    declares.add(f"declare {ty} @{name}{suffix}({ty})")
    return f"@{name}{suffix}"


class Compiled:
    """The loops of one module, compiled for the host CPU; `ir[loop]` their optimized IR."""

    def __init__(self, libm: bool):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        parts, declares = [], {mathlib.declarations(PAIRS)} if not libm else set()
        for name, ty in PAIRS:
            if libm:
                callee = _libm_callee(name, ty, parts, declares)
            else:
                text, callee = mathlib.definition(name, ty)
                parts.append(text)
            parts.append(LOOP.format(loop=f"loop.{name}.{ty}", ty=ty, callee=callee))
        module = llvm.parse_assembly("\n\n".join([*declares, *parts]))
        module.verify()
        target = llvm.Target.from_default_triple()
        features = llvm.get_host_cpu_features().flatten()
        cpu = llvm.get_host_cpu_name()
        self.machine = target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        tuning.loop_vectorization = True
        tuning.slp_vectorization = True
        builder = llvm.create_pass_builder(self.machine, tuning)
        builder.getModulePassManager().run(module, builder)
        self.engine = llvm.create_mcjit_compiler(module, self.machine)
        self.engine.finalize_object()
        self.module = module

    def ir(self, name, ty):
        return str(self.module.get_function(f"loop.{name}.{ty}"))

    def __call__(self, name, ty, x, out=None):
        function = LOOP_TYPE(self.engine.get_function_address(f"loop.{name}.{ty}"))
        x = np.ascontiguousarray(x, dtype=TYPES[ty])
        out = np.empty_like(x) if out is None else out
        function(x.ctypes.data, out.ctypes.data, x.size)
        return out


@pytest.fixture(scope="module")
def ours():
    return Compiled(libm=False)


def _worst_ulps(got, want):
    """The largest distance in ulps of `want` where both are finite and nonzero."""
    both = np.isfinite(want) & (want != 0) & np.isfinite(got)
    if not both.any():
        return 0.0
    distance = np.abs(got[both].astype(np.float64) - want[both].astype(np.float64))
    return float((distance / np.spacing(np.abs(want[both]))).max())


def _check(got, want, bound):
    """NaN where NumPy gives NaN, its infinities and signed zeros exactly, else `bound` ulps."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    assert np.isfinite(got[np.isfinite(want)]).all()
    assert _worst_ulps(got, want) <= bound


def _dense(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    small = np.geomspace(1e-300, 1.0, 20_001)
    small = np.concatenate([small, -small])
    if name.startswith("log"):
        x = [np.geomspace(5e-324, 1.7e308, 300_001), np.linspace(0.5, 2.0, 300_001)]
        if name == "log1p":
            x += [small, np.linspace(-0.999999, 3.0, 300_001)]
        return np.concatenate(x)
    spread = {"exp": 745.0, "exp2": 1075.0, "expm1": 60.0, "tanh": 25.0}
    spread |= {"expit": 750.0, "sinh": 711.0, "cosh": 711.0, "sin": 30.0, "cos": 30.0}
    x = [np.linspace(-spread[name], spread[name], 600_001), rng.standard_normal(100_000), small]
    if name in ("sin", "cos"):
        # the reduction's whole range, and libm's beyond it
        x += [rng.uniform(-(2.0**20), 2.0**20, 300_000), rng.uniform(-1e12, 1e12, 20_000)]
        x += [np.geomspace(1.0, 1.7e308, 20_001)]
        near = rng.integers(1, 667_000, 50_000) * (np.pi / 2)  # k pi/2 within the bound
        x += [near, np.nextafter(near, 0.0), np.nextafter(near, np.inf)]
    return np.concatenate(x)


def _check_against_numpy(got, x, name, ty):
    """A double within its bound of NumPy; a float within its bound of the exact result
    rounded (NumPy's float64 loop), special values included, and within 3 ulps of NumPy's."""
    want = _reference(name)(x)
    if ty == "double":
        _check(got, want, BOUND[ty][name])
    else:
        _check(got, _reference(name)(x.astype(np.float64)).astype(np.float32), BOUND[ty][name])
        assert _worst_ulps(got, want) <= NUMPY_FLOAT_BOUND


@pytest.mark.parametrize(("name", "ty"), PAIRS)
def test_within_bound_on_dense_samples(ours, name, ty):
    with np.errstate(all="ignore"):
        x = _dense(name).astype(TYPES[ty])
        _check_against_numpy(ours(name, ty, x), x, name, ty)


def _near_multiples_of_pio2(dtype):
    k = np.concatenate([np.arange(1, 200), 2.0 ** np.arange(8, 40), [667_000, 667_544, 1e7]])
    nearest = (k * np.pi / 2).astype(dtype)
    return np.concatenate([nearest, np.nextafter(nearest, 0), -nearest])


def _edges(name, dtype):
    info = np.finfo(dtype)
    tiny, huge, sub = float(info.tiny), float(info.max), float(info.smallest_subnormal)
    values = [0.0, -0.0, sub, -sub, tiny / 3, tiny, -tiny, huge, -huge, np.inf, -np.inf, np.nan]
    values += [0.5, 1.0, -1.0, 2.0, 3.0, 10.0, 100.0, -0.5, 1e-8, -1e-8]
    values += [1 + float(info.eps), 1 - float(info.epsneg), -1 + float(info.epsneg), 1e30, -1e30]
    # overflow and underflow thresholds of exp and its relatives, in both precisions
    values += [709.78, 709.7827128933840, 709.79, 710.0, 710.4758, 710.48, -708.39, -745.13]
    values += [-745.14, -746.0, 88.72, 88.7228, 88.73, 89.42, 89.5, -87.33, -103.97, -104.0]
    values += [1023.99, 1024.0, -1022.0, -1074.0, -1075.0, 127.99, 128.0, -126.0, -149.0, -150.0]
    values += [19.99, 20.01, 22.0, 36.0, 37.0, 40.0, -37.0, -40.0, 2.0**20, 2.0**20 + 1]
    x = np.concatenate([np.array(values).astype(dtype), _near_multiples_of_pio2(dtype)])
    return x


@pytest.mark.parametrize(("name", "ty"), PAIRS)
def test_edges(ours, name, ty):
    with np.errstate(all="ignore"):
        x = _edges(name, TYPES[ty])
        # all at once (the vector loop) and one at a time (the scalar remainder loop)
        _check_against_numpy(ours(name, ty, x), x, name, ty)
        alone = np.concatenate([ours(name, ty, x[i : i + 1]) for i in range(x.size)])
        _check_against_numpy(alone, x, name, ty)


def _vector_body(ir):
    start = ir.index("vector.body:")
    return ir[start : ir.index("middle.block:", start)]


@pytest.mark.parametrize(("name", "ty"), PAIRS)
def test_loop_is_vectorized_without_libm(ours, name, ty):
    body = _vector_body(ours.ir(name, ty))
    assert re.search(rf"<(\d+) x {ty}>", body)
    callees = set(re.findall(r"call [^@]*(@[\w.]+)", body))
    # intrinsics, and for sin and cos the masked call to libm of the lanes beyond 2**20
    assert all(re.fullmatch(r"@llvm\.[\w.]+|@ad\.\w+\.f(32|64)\.big\.v\d+", c) for c in callees)


def test_declarations_once_each():
    lines = mathlib.declarations(PAIRS).splitlines()
    assert len(lines) == len(set(lines))
    assert all(line.startswith("declare ") for line in lines)
    assert mathlib.declarations([]) == ""
    with pytest.raises(KeyError):
        mathlib.definition("gamma", "double")
    with pytest.raises(KeyError):
        mathlib.definition("exp", "half")


def _best_ns(run, n, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) / n * 1e9


def test_print_timings(ours):
    libm = Compiled(libm=True)
    n = 2**20
    rng = np.random.default_rng(0)
    print(f"\nns/element, {n} elements, min of 5: ours, libm loop, NumPy ufunc (SciPy's expit)")
    for name, ty in PAIRS:
        low = 0.1 if name.startswith("log") else -5.0
        x = rng.uniform(low, 5.0, n).astype(TYPES[ty])
        y = np.empty_like(x)
        timings = [_best_ns(lambda c=c: c(name, ty, x, y), n) for c in (ours, libm)]
        ufunc = scipy.special.expit if name == "expit" else getattr(np, name)
        timings.append(_best_ns(lambda: ufunc(x, out=y), n))
        print(f"{name:6} {ty:6} " + "  ".join(f"{t:6.2f}" for t in timings))


# ---- the vector versions a short loop's calls map to (mathlib.variant_module) ----

VECTOR_LOOP = """
define void @{loop}(ptr noalias %x, ptr noalias %y, i64 %n) {{
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%next, %body]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %exit
body:
  %px = getelementptr {ty}, ptr %x, i64 %i
  %v = load <{lanes} x {ty}>, ptr %px, align 4
  %r = call <{lanes} x {ty}> @"{variant}"(<{lanes} x {ty}> %v)
  %py = getelementptr {ty}, ptr %y, i64 %i
  store <{lanes} x {ty}> %r, ptr %py, align 4
  %next = add i64 %i, {lanes}
  br label %head
exit:
  ret void
}}
"""


@pytest.fixture(scope="module")
def variants():
    """Each function's vector version of the host's width, compiled and bound as the backend
    does (module.py), called by its symbol a vector at a time by a loop (`n` a multiple of
    the width)."""
    bits = engine.vector_bits()
    lanes = {ty: bits // (8 * np.dtype(TYPES[ty]).itemsize) for ty in TYPES}
    parts = []
    for name, ty in PAIRS:
        variant = mathlib.variant_symbol(name, ty, lanes[ty])
        module._define(variant, engine.header() + mathlib.variant_module(name, ty, lanes[ty]))
        parts.append(f'declare <{lanes[ty]} x {ty}> @"{variant}"(<{lanes[ty]} x {ty}>)')
        parts.append(
            VECTOR_LOOP.format(loop=f"loop.{name}.{ty}", ty=ty, lanes=lanes[ty], variant=variant)
        )
    ir = engine.header() + "\n".join(parts)
    names = [f"loop.{name}.{ty}" for name, ty in PAIRS]
    compiled = engine.load_object(engine.optimize_to_object(ir), names, ir)

    def run(name, ty, x):
        n = -(-x.size // lanes[ty]) * lanes[ty]
        padded = np.zeros(n, TYPES[ty])
        padded[: x.size] = x
        out = np.empty_like(padded)
        function = LOOP_TYPE(compiled.addresses[f"loop.{name}.{ty}"])
        function(padded.ctypes.data, out.ctypes.data, n)
        return out[: x.size]

    run.compiled = compiled
    return run


@pytest.mark.parametrize(("name", "ty"), PAIRS)
def test_vector_version_within_bound(variants, name, ty):
    with np.errstate(all="ignore"):
        x = np.concatenate([_dense(name)[::7].astype(TYPES[ty]), _edges(name, TYPES[ty])])
        _check_against_numpy(variants(name, ty, x), x, name, ty)


def test_vector_version_is_straight_vector_code():
    text = engine.header() + mathlib.variant_module("exp", "double", 8)
    parsed = llvm.parse_assembly(text)
    tuning = llvm.create_pipeline_tuning_options(speed_level=2)
    tuning.loop_vectorization = True
    machine = llvm.Target.from_default_triple().create_target_machine()
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(parsed, builder)
    body = str(parsed.get_function(mathlib.variant_symbol("exp", "double", 8)))
    assert "<8 x double>" in body and "br " not in body  # (one vector, no loop left)


def test_vector_mapping_names_the_masked_version():
    lines, attribute = mathlib.vector_mapping("sin", "float", 16, "autodiff.libm.sinf")
    symbols = dict(lines)
    slot = mathlib.variant_symbol("sin", "float", 16) + ".slot"
    assert slot == "autodiff.vec.sin.f32.v16.slot"
    assert symbols[slot] == f'@"{slot}" = external global ptr'
    masked = next(s for s in symbols if s != slot)
    assert "<16 x i1> %m" in symbols[masked] and slot in symbols[masked]
    # (a lane at a time through the C library's function while the slot is null)
    assert symbols[masked].count('call float @"autodiff.libm.sinf"') == 16
    assert attribute == (
        f' "vector-function-abi-variant"="_ZGV_LLVM_M16v_autodiff.libm.sinf({masked})"'
    )
