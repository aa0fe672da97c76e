"""The LLVM backend of jit (autodiff/staging/llvm/): generated segment code translated to
LLVM IR and compiled with llvmlite, Numba compiling only the segments it cannot translate.

The op table runs through it, every row and column (float64 and float32 values, float64
gradients), against the NumPy executor; its coverage (the share of segments that
translate, and what falls back: complex numbers) is checked; the benchmark workloads
translate whole and agree with the NumPy executor; a graph that translates whole never
imports Numba; the object code's disk cache serves a new process. The edge tables of
tests/test_numba_backend.py run through this backend there (it is the default).
"""

import functools
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from test_numba_backend import _numba_jit, _numpy_jit, _same, _staged
from test_ops import CASES, _cast

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging.executor import compile_graph
from autodiff.staging.llvm.translate import Param, Unsupported, translate
from autodiff.staging.numba.executor import compile_numba, set_llvm_enabled

pytest.importorskip("llvmlite")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = {"float64": (1e-12, 1e-14), "float32": (1e-5, 1e-7), "grad": (1e-10, 1e-12)}


@functools.cache
def _by_column() -> dict:
    """column -> [(case, graph, args)] for every staged row of the op table."""
    cases = {id(case): case for case in CASES}
    rows: dict = {}
    for (column, key), graph in _staged().items():
        case = cases[key]
        args = _cast(case.args, np.float32 if column == "float32" else np.float64)
        rows.setdefault(column, []).append((case, graph, args))
    return rows


def _outputs(run, args) -> list:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [np.asarray(v) for v in run(*args)]


@pytest.mark.parametrize("column", ["float64", "float32", "grad"])
def test_op_table_through_llvm(column):
    """Every row whose segments all translate: the values and dtypes of the NumPy executor."""
    rtol, atol = TOLERANCE[column]
    compiled = 0
    for case, graph, args in _by_column()[column]:
        run = compile_numba(graph)
        if run.numba_segments or not run.llvm_segments:
            continue
        got, want = _outputs(run, args), _outputs(compile_graph(graph), args)
        assert run.graph.numba_failure is None, (case.name, run.graph.numba_failure)
        for k, (g, w) in enumerate(zip(got, want)):
            assert (g.shape, g.dtype) == (w.shape, w.dtype), (case.name, k)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{case.name} {k}")
        compiled += 1
    assert compiled > 300


def test_op_table_coverage():
    """Nine segments in ten translate; what falls back to Numba is complex arithmetic."""
    total = translated = 0
    reasons: set = set()
    for rows in _by_column().values():
        for _, graph, _ in rows:
            run = compile_numba(graph)
            total += run.llvm_segments + run.numba_segments
            translated += run.llvm_segments
            reasons.update(run.llvm_fallbacks.values())
    assert translated / total > 0.9, (translated, total)
    unexpected = {r for r in reasons if "complex" not in r and "real" not in r and "imag" not in r}
    assert unexpected <= {"Unsupported: np.dot dtypes or ranks"}, unexpected


def _all_llvm(fun, *args, **options):
    outs, graph = _numba_jit(fun, *args, **options)
    run = graph.compiled
    assert run.llvm_segments > 0 and run.numba_segments == 0, run.llvm_fallbacks
    return outs


def test_edges_translate_whole():
    """NaN, inf, -0.0 and integer edges (division by zero, floor semantics, casts) in
    segments that all translate, with NumPy's values."""
    x = np.array([np.nan, -np.inf, -1.5, -0.5, -0.0, 0.0, 0.5, 2.0, np.inf, 3.0, 1e30])
    y = np.roll(x, 3)
    i = np.array([0, 1, -2, 7, -7, 5, 0, -128, 127, 3, -1], np.int8)
    j = np.roll(i, 4)

    def f(x, y, i, j):
        return (
            (x // y, x % y, anp.fmod(x, y), anp.maximum(x, y), anp.minimum(y, x)),
            (anp.logaddexp(x, y), anp.logaddexp2(x, y), anp.sign(x), anp.rint(x * 2.5)),
            (i // j, i % j, i / j, anp.floor_divide(i, j), anp.abs(i), -i),
            (x.astype(np.int32), x.astype(np.int8), x.astype(np.uint8), (x > 0) + (y > 0)),
            (i.astype(np.float32) * 0.1, anp.maximum(i, j), anp.isnan(x), anp.signbit(y)),
        )

    with np.errstate(all="ignore"):
        got = _all_llvm(f, x, y, i, j)
        _same(got, _numpy_jit(f, x, y, i, j), rtol=1e-15)


def test_llvm_and_numba_paths_agree():
    """The same graph through both compilers (AUTODIFF_LLVM=0 for the Numba path)."""
    x = np.linspace(-2.0, 2.0, 7)

    def f(x):
        return anp.sum(anp.tanh(x) * anp.sin(x)), anp.exp(x) // 0.3, anp.sqrt(anp.abs(x)) ** 1.5

    got = _all_llvm(f, x)
    previous = set_llvm_enabled(False)
    try:
        jitted = ad.jit(f, backend="numba")
        want = jitted(x)
        assert jitted.graph(x).compiled.llvm_segments == 0
    finally:
        set_llvm_enabled(previous)
    _same(got, want, rtol=1e-14)


def test_inputs_not_contiguous_or_of_another_dtype():
    x = np.arange(24.0).reshape(4, 6)
    jitted = ad.jit(lambda x, s: anp.sin(x) * s + x.T[0, 0], backend="numba")
    want = jitted(x.copy(), 2.0)
    got = jitted(x[:, ::-1][:, ::-1], np.float64(2.0))
    _same(got, want)
    _same(jitted(np.asfortranarray(x), 2.0), want)


def test_fastmath_through_llvm():
    x = np.linspace(-3.0, 3.0, 50)
    fun = lambda x: (anp.sum(anp.exp(x)), anp.tanh(x), anp.sqrt(x * x + 1.0))
    got = _all_llvm(fun, x, fastmath=True)
    _same(got, _numpy_jit(fun, x), rtol=1e-13)


def test_products_through_blas_and_loops():
    rng = np.random.default_rng(0)
    a, b, v = rng.standard_normal((40, 60)), rng.standard_normal((60, 30)), rng.standard_normal(60)

    def f(a, b, v):
        small = a[:3, :4] @ b[:4, :2]
        return (
            a @ b,
            (a @ b).T @ a,
            a @ v,
            v @ b,
            small,
            (a.astype(np.float32) @ v.astype(np.float32)),
        )

    got = _all_llvm(f, a, b, v)
    want = _numpy_jit(f, a, b, v)
    for g, w in zip(got, want):
        single = g.dtype == np.float32  # (sums of 60 terms, in float32: absolute error)
        np.testing.assert_allclose(g, w, rtol=1e-5 if single else 1e-12, atol=1e-4 if single else 0)


def _workloads() -> dict:
    from benchmarks.transform_workloads import HESSIAN, HVP, PER_EXAMPLE, SCALAR4
    from benchmarks.workloads import CHAIN, MLP, ODE_LOOP

    return {w.name: w for w in (CHAIN, SCALAR4, HESSIAN, HVP, MLP, PER_EXAMPLE, ODE_LOOP)}


@pytest.mark.parametrize(
    "name", ["chain", "scalar4", "hessian", "hvp", "mlp", "per_example", "ode_loop"]
)
def test_workloads_translate_whole(name, monkeypatch):
    """The benchmark workloads' graphs: every segment LLVM's, the NumPy executor's values."""
    workload = _workloads()[name]
    staged = []
    real = ad.jit

    def numba_jit(fun, *args, **options):
        staged.append(real(fun, *args, backend="numba", **options))
        return staged[-1]

    monkeypatch.setattr(ad, "jit", numba_jit)
    args = workload.make_inputs(True)
    got = workload.programs["autodiff.jit"](args, **workload.static_sizes(True))()
    graphs = [entry.graph for jitted in staged for entry in jitted._cache.values()]
    assert graphs
    for graph in graphs:
        assert graph.numba_failure is None, graph.numba_failure
        assert graph.compiled.numba_segments == 0, graph.compiled.llvm_fallbacks
    monkeypatch.setattr(ad, "jit", real)
    want = workload.programs["autodiff"](args, **workload.static_sizes(True))()
    for g, w in zip(ad.tree_util.tree_leaves(got), ad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_unsupported_raises_and_the_segment_falls_back():
    source = "def segment0(v1):\n    t2 = np.complex128(v1)\n    return (t2, )\n"
    from autodiff.staging.llvm.runtime import layout

    with pytest.raises(Unsupported):
        translate(source, "segment0", [Param(np.float64, None)], [(np.float64, ())], layout())
    z = np.array([1 + 2j, 3 - 1j])
    outs, graph = _numba_jit(lambda z: z * z + 1.0, z)
    assert graph.compiled.numba_segments == 1 and graph.compiled.llvm_segments == 0
    _same(outs, z * z + 1.0)


def _child(code: str, **env) -> str:
    pythonpath = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=pythonpath, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


CHILD = """
import sys, numpy as np, autodiff as ad, autodiff.numpy as anp
from autodiff.staging.llvm import engine
f = ad.jit(ad.grad(lambda x: anp.sum(anp.sin(x) * anp.tanh(x) / (1.0 + x * x))), backend="numba")
x = np.linspace(-1.0, 1.0, 9)
g = f(x)
assert f.graph(x).compiled.llvm_segments >= 1
print("numba" in sys.modules, engine.TIMES["optimize"] > 0, float(g.sum()))
"""


def test_a_graph_that_translates_never_imports_numba_and_its_code_is_cached(tmp_path):
    first = _child(CHILD, NUMBA_CACHE_DIR=str(tmp_path)).split()
    second = _child(CHILD, NUMBA_CACHE_DIR=str(tmp_path)).split()
    assert first[:2] == ["False", "True"]  # (no Numba; optimized and compiled)
    assert second[:2] == ["False", "False"]  # (loaded from the disk cache)
    assert first[2] == second[2]
    assert any(name.startswith("llvm_") for name in os.listdir(tmp_path / "autodiff-jit"))


TIERED_CHILD = """
import sys, numpy as np, autodiff as ad, autodiff.numpy as anp
from autodiff.staging.call import wait_for_tier_up

def chain(x):  # (big enough to compile in the background)
    for _ in range(60):
        x = anp.sin(x) * 1.01 + 0.1 * x
    return anp.sum(x)

f = ad.jit(ad.grad(chain))
x = np.linspace(-1.0, 1.0, 9)
for _ in range(200):
    f(x)
    wait_for_tier_up(30.0)
graph = f.graph(x)
assert graph.compiled.llvm_segments >= 1 and type(graph.compiled).__name__ == "function"
print("numba" in sys.modules)
"""


def test_a_background_compile_that_translates_never_imports_numba(tmp_path):
    assert _child(TIERED_CHILD, NUMBA_CACHE_DIR=str(tmp_path)) == "False"


def test_a_damaged_cache_file_is_compiled_again(tmp_path):
    _child(CHILD, NUMBA_CACHE_DIR=str(tmp_path))
    for name in os.listdir(tmp_path / "autodiff-jit"):
        if name.startswith("llvm_"):
            path = tmp_path / "autodiff-jit" / name
            path.write_bytes(path.read_bytes()[:100])
    assert _child(CHILD, NUMBA_CACHE_DIR=str(tmp_path)).split()[:2] == ["False", "True"]


def test_autodiff_llvm_0_uses_numba_only():
    code = (
        "import numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        "f = ad.jit(lambda x: anp.sin(x) * 2.0, backend='numba')\n"
        "x = np.ones(3); f(x); c = f.graph(x).compiled\n"
        "print(c.llvm_segments, c.numba_segments)\n"
    )
    assert _child(code, AUTODIFF_LLVM="0") == "0 1"


def test_threads_compile_at_once():
    errors: list = []

    def work(k: int) -> None:
        try:
            for j in range(4):
                f = ad.jit(
                    lambda x: anp.sin(x) * (k + j + 1.0) + anp.cos(x * x) * j, backend="numba"
                )
                x = np.linspace(0.0, 1.0, 5 + k)
                want = np.sin(x) * (k + j + 1.0) + np.cos(x * x) * j
                np.testing.assert_allclose(f(x), want, rtol=1e-12)
        except Exception as error:  # (reported below, from the main thread)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
