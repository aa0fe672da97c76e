"""The compilation benchmark (benchmarks/bench_compile.py): it names the executor a staged graph
runs on, its tables print every outcome of a measurement (ran, failed, timed out), its
process runner reports a timeout, and a quick run of its smallest sections completes. No
timing is asserted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import autodiff
import autodiff.numpy as anp
from benchmarks import bench_compile as bc

ROOT = Path(__file__).resolve().parent.parent


def test_executor_kind_names_each_executor():
    x = np.arange(3.0)
    staged = autodiff.jit(lambda x: anp.sin(x) * 2.0, backend="numpy")
    graph = staged.graph(x)
    assert bc.executor_kind(graph) == "not run"
    staged(x)
    assert bc.executor_kind(graph) == "numpy"
    report = bc.graph_report(graph)
    assert report["equations"] == 2 and report["failure"] is None
    assert set(bc.SEGMENT_COUNTS) <= set(report)
    default = autodiff.jit(lambda x: anp.cos(x) + 1.0)
    default(x)
    assert bc.executor_kind(default.graph(x)) in ("tiered: numpy", "numpy", "numba")


def _ok(**result) -> dict:
    return {"status": "ok", "wall": 1.0, "maxrss": 2**30, "result": result}


FAILED = {"status": "timeout", "wall": 5.0, "maxrss": 2**20, "reason": "killed after 5 s"}
GRAPH = {"kind": "numba", "equations": 7, "failure": None, "numba_segments": 2}


def test_tables_print_every_outcome():
    first = {
        "chain": {
            "eager": _ok(first=2.0, total=2.5, graphs=[GRAPH]),
            "warm": _ok(first=0.1, total=0.3, graphs=[GRAPH]),
            "default": _ok(first=0.01, total=0.2, graphs=[dict(GRAPH, kind="tiered: numpy")]),
            "jax": _ok(first=0.25, total=1.0, graphs=[]),
        },
        "ode": {"eager": FAILED, "warm": FAILED, "default": FAILED, "jax": FAILED},
    }
    text = bc.first_table(first, repeat=1)
    assert "8.00x" in text and "2 numba segments" in text and "timeout" in text
    ours = _ok(best=1e-5, last=1e-5, calls=500, graphs=[GRAPH])
    steady = {"chain": {"ours": ours, "jax": _ok(best=4e-5)}}
    assert "0.25x" in bc.steady_table(steady) and "yes" in bc.steady_table(steady)
    slowest = _ok(
        slowest=0.02,
        slowest_call=9,
        slowest_before=0.02,
        slowest_after=3e-4,
        p999=0.001,
        median=1e-4,
        numpy_median=1e-4,
        numpy_slowest=0.005,
        numpy_p999=2e-4,
        changes=[[1, "tiered: numpy"], [9, "numba"]],
    )
    table = bc.slowest_table(slowest, 100)
    assert "200.0x" in table and "5 ms" in table and "300 us" in table
    settings = bc.Settings.of(bc.parse(["--quick"]))
    fell_back = _ok(outcome="fell back", seconds=3.0, warnings=["UserWarning: budget"], graph=GRAPH)
    assert "fell back" in bc.ode200_table(fell_back, settings)
    assert "timeout" in bc.ode200_table(FAILED, settings)
    memory = _ok(rows=[[0, 2**27, 2**27, 0.0], [10, 2**28, 2**28, 1.0]], graph=GRAPH, correct=True)
    assert "256 MiB" in bc.memory_table(memory)
    imports = {"numpy": [_ok(seconds=0.05)], "autodiff": [FAILED]}
    assert "timeout" in bc.imports_table(imports)


def test_run_child_reports_a_timeout():
    cell = bc.run_child("import", {"module": "autodiff"}, timeout=0.0)
    assert cell["status"] == "timeout"


def test_quick_run_of_the_smallest_sections(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "results.json"
    command = [sys.executable, "-m", "benchmarks.bench_compile", "--quick"]
    command += ["--only=import,slowest", "--calls=200", f"--json={out}"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "import autodiff" in done.stdout and "Slowest call of 200 calls" in done.stdout
    results = json.loads(out.read_text())
    assert results["slowest"]["status"] == "ok", results["slowest"]
