"""The startup section: what a new process pays before autodiff runs at full speed.

Every measurement runs in a fresh Python process, bound to the children's CPU
with their thread settings, and prints one JSON line:

- the wall time of `import numpy` and of `import autodiff` (which imports NumPy);
- the latency of the first `grad` call of a function whose backward is large enough
  for the Numba kernels (a scatter-add and tanh's derivative): by default (kernels are
  tiered, autodiff/kernels/_numba.py: the first calls run NumPy), with Numba eager
  (`AUTODIFF_NUMBA_EAGER=1`: the first call loads the kernels) with an empty Numba cache
  (`NUMBA_CACHE_DIR` a fresh directory: Numba compiles) and a warm one (a second
  process, same directory), and with Numba disabled (`AUTODIFF_DISABLE_NUMBA=1`); and,
  by default, how many calls run before the kernels are loaded and what that call costs;
- the peak resident memory (`ru_maxrss`) of one `elementwise` gradient, per framework.

Python's own bytecode caches and the OS file cache are warm in every case: each
probe runs several times, and the minimum and median are reported.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.frameworks import bind_to_child_cpu, child_environment
from benchmarks.tables import format_table, format_time

ROOT = Path(__file__).resolve().parent.parent

IMPORT_PROBE = """
import json, time
start = time.perf_counter()
import {module}
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""

# The gradient of x[index] scatter-adds GATHERED rows of COLUMNS values: with GATHERED * COLUMNS
# at least the KERNEL_MIN_SIZE of autodiff/kernels/scatter.py, its Numba kernel does it; the
# tanh backward (a broadcast cotangent, from the sum) is big enough for any elementwise kernel.
ROWS, COLUMNS, GATHERED = 4096, 64, 4096
FIRST_GRAD_PROBE = f"""
import json, sys, time
import numpy as np
import autodiff, autodiff.numpy as anp
rng = np.random.default_rng(0)
x = rng.standard_normal(({ROWS}, {COLUMNS}))
index = rng.integers(0, {ROWS}, {GATHERED})
gradient = autodiff.grad(lambda x: anp.sum(anp.tanh(x[index])))
start = time.perf_counter()
g = gradient(x)
first = time.perf_counter() - start
start = time.perf_counter()
gradient(x)
second = time.perf_counter() - start
numba_after_first = "numba" in sys.modules
calls, tier_up = 2, None
while UNTIL_TIER_UP and "numba" not in sys.modules and calls < 10**4:
    start = time.perf_counter()
    gradient(x)
    tier_up = time.perf_counter() - start
    calls += 1
expected = np.zeros_like(x)
np.add.at(expected, index, 1.0 - np.tanh(x[index]) ** 2)
print(json.dumps({{
    "first": first,
    "second": second,
    "numba": numba_after_first,
    "calls": calls,
    "tier_up": tier_up,
    "error": float(np.max(np.abs(g - expected)) / np.max(np.abs(expected))),
}}))
"""

# A jitted identity's call, one float64 array of 8: what a call costs besides its work.
JIT_CALL_PROBE = """
import json, time
import numpy as np
{setup}
x = {array}(np.arange(8.0))
f = {jit}(lambda x: x)
{finish}(f(x))
best = 1e9
for _ in range(20):
    start = time.perf_counter()
    for _ in range(2000):
        {finish}(f(x))
    best = min(best, (time.perf_counter() - start) / 2000)
print(json.dumps({{"seconds": best}}))
"""
JIT_CALL = {
    "autodiff.jit": {
        "setup": "import autodiff",
        "array": "np.asarray",
        "jit": "autodiff.jit",
        "finish": "",
    },
    "jax.jit": {
        "setup": "import jax, jax.numpy as jnp; jax.config.update('jax_enable_x64', True)",
        "array": "jnp.asarray",
        "jit": "jax.jit",
        "finish": "jax.block_until_ready",
    },
}

# The first call of a workload's jitted program in a fresh process (staging and compiling
# included; Numba's import included for autodiff): autodiff.jit compiling with Numba at once
# (AUTODIFF_NUMBA_EAGER=1), with an empty and a warm disk cache, beside jax.jit's first call.
JIT_FIRST_PROBE = """
import json, time
from benchmarks.frameworks import FRAMEWORKS
from benchmarks.suite import WORKLOADS
framework = FRAMEWORKS["{framework}"]
framework.setup()
w = WORKLOADS["{workload}"]
args = w.make_inputs(False)
call = w.programs["{framework}"](args, **w.static_sizes(False))
start = time.perf_counter()
call()
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""
JIT_FIRST_WORKLOADS = ("chain", "scalar4", "hessian", "ode_loop")


def _jit_first_rows(repeat: int) -> list:
    rows = []
    for workload in JIT_FIRST_WORKLOADS:
        empty, warm, jax_first = [], [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="autodiff-jit-") as cache:
                script = JIT_FIRST_PROBE.format(framework="autodiff.jit", workload=workload)
                env = {"NUMBA_CACHE_DIR": cache, "AUTODIFF_NUMBA_EAGER": "1"}
                empty.append(probe(script, **env)["seconds"])
                warm.append(probe(script, **env)["seconds"])
            try:
                script = JIT_FIRST_PROBE.format(framework="jax.jit", workload=workload)
                jax_first.append(probe(script)["seconds"])
            except RuntimeError:  # (jax not installed)
                pass
        label = f"first call of jit({workload}), "
        rows.append([label + "Numba, cache empty", *_min_median(empty)])
        rows.append([label + "Numba, cache warm", *_min_median(warm)])
        if jax_first:
            rows.append([label + "jax.jit", *_min_median(jax_first)])
    return rows


# The size of each workload's staged graph (equations, sub-graphs' included) under
# autodiff.jit, and a hand-written gradient of chain staged the same way.
GRAPH_SIZE_PROBE = """
import json
import numpy as np
import autodiff, autodiff.numpy as anp
from benchmarks.frameworks import FRAMEWORKS
from benchmarks.suite import WORKLOADS
from benchmarks.workloads import chain_gradient
sizes = {{}}
real_jit = autodiff.jit
staged = []
def spy(fun, *a, **k):
    jitted = real_jit(fun, *a, **k)
    staged.append(jitted)
    return jitted
autodiff.jit = spy
for name, w in WORKLOADS.items():
    program = w.programs.get("autodiff.jit")
    if program is None:
        continue
    staged.clear()
    args = w.make_inputs({quick})
    call = program(args, **w.static_sizes({quick})) if w.static else program(args)
    call()
    sizes[name] = sum(
        entry.graph.count_equations() for j in staged for entry in j._cache.values()
    )
by_hand = lambda x: chain_gradient(x, anp)
sizes["chain, by hand"] = real_jit(by_hand).graph(np.zeros(8)).count_equations()
print(json.dumps(sizes))
"""

# RSS: the first call's high-water mark (lazy imports, Numba included). Arrays: tracemalloc's
# peak (NumPy reports its buffers to it) during a second call.
PEAK_MEMORY_PROBE = """
import json, resource, tracemalloc
from benchmarks.frameworks import FRAMEWORKS
from benchmarks.workloads import ELEMENTWISE, elementwise_loss
framework = FRAMEWORKS[{name!r}]
framework.setup()
args = ELEMENTWISE.make_inputs(quick=False)
call = framework.grad(elementwise_loss, 0, args)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
call()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
call()
arrays = tracemalloc.get_traced_memory()[1]
print(json.dumps({{
    "before": before * 1024, "after": after * 1024, "arrays": arrays, "input": args[0].nbytes
}}))
"""


def probe(script: str, **env: str) -> dict:
    """Run `script` in a fresh process bound to the children's CPU; its JSON line, parsed."""
    environment = child_environment() | env
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), environment.get("PYTHONPATH")])
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=bind_to_child_cpu,
    )
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise RuntimeError(f"probe failed: {lines[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _min_median(seconds: list[float]) -> list[str]:
    return [format_time(min(seconds)), format_time(statistics.median(seconds))]


def _first_grad_runs(repeat: int) -> dict[str, list[dict]]:
    """Per mode and cache state, `repeat` probes; each empty cache is a new directory."""
    runs: dict[str, list[dict]] = {
        "tiered": [],
        "empty": [],
        "warm": [],
        "disabled": [],
        "files": [],
    }
    once = FIRST_GRAD_PROBE.replace("UNTIL_TIER_UP", "False")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="autodiff-numba-") as cache:
            runs["empty"].append(probe(once, NUMBA_CACHE_DIR=cache, AUTODIFF_NUMBA_EAGER="1"))
            runs["files"].append(sum(len(files) for *_, files in os.walk(cache)))
            runs["warm"].append(probe(once, NUMBA_CACHE_DIR=cache, AUTODIFF_NUMBA_EAGER="1"))
            tiered = FIRST_GRAD_PROBE.replace("UNTIL_TIER_UP", "True")
            runs["tiered"].append(probe(tiered, NUMBA_CACHE_DIR=cache))
        runs["disabled"].append(probe(once, AUTODIFF_DISABLE_NUMBA="1"))
    return runs


def _col(runs: dict, state: str, key: str) -> list:
    return [r[key] for r in runs[state] if r[key] is not None] or [float("nan")]


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def _peak_memory_table(frameworks: list[str]) -> str:
    cases = [(name, name, {}) for name in frameworks]
    if "autodiff" in frameworks:
        cases[1:1] = [
            ("autodiff, Numba eager", "autodiff", {"AUTODIFF_NUMBA_EAGER": "1"}),
            ("autodiff, Numba disabled", "autodiff", {"AUTODIFF_DISABLE_NUMBA": "1"}),
        ]
    rows = []
    for label, name, env in cases:
        try:
            r = probe(PEAK_MEMORY_PROBE.format(name=name), **env)
        except RuntimeError as e:
            rows.append([label, "error", str(e)[:60], "-", "-"])
            continue
        increase = r["after"] - r["before"]
        rows.append(
            [
                label,
                _mib(r["before"]),
                _mib(r["after"]),
                f"{_mib(increase)} ({increase / r['input']:.1f}x)",
                f"{_mib(r['arrays'])} ({r['arrays'] / r['input']:.1f}x)",
            ]
        )
    header = ["framework", "RSS before", "RSS peak", "first call: increase", "warm call: arrays"]
    return format_table(header, rows)


def startup_report(repeat: int, frameworks: list[str]) -> str:
    """The startup section: import time, first-call latency per Numba cache state, peak memory.

    `frameworks`: the rows of the peak-memory table (names in `frameworks.FRAMEWORKS`).
    """
    imports = {
        m: [probe(IMPORT_PROBE.format(module=m))["seconds"] for _ in range(repeat)]
        for m in ("numpy", "numba", "autodiff")
    }
    runs = _first_grad_runs(repeat)
    rows = [
        ["import numpy", *_min_median(imports["numpy"])],
        ["import numba (NumPy included; autodiff defers it)", *_min_median(imports["numba"])],
        ["import autodiff (NumPy included)", *_min_median(imports["autodiff"])],
        ["first grad call (default: tiered kernels)", *_min_median(_col(runs, "tiered", "first"))],
        ["first grad call, Numba eager, cache empty", *_min_median(_col(runs, "empty", "first"))],
        ["first grad call, Numba eager, cache warm", *_min_median(_col(runs, "warm", "first"))],
        ["first grad call, Numba disabled", *_min_median(_col(runs, "disabled", "first"))],
        [
            "second grad call (default, before tier-up)",
            *_min_median(_col(runs, "tiered", "second")),
        ],
        ["second grad call (Numba eager, cache warm)", *_min_median(_col(runs, "warm", "second"))],
        ["second grad call (Numba disabled)", *_min_median(_col(runs, "disabled", "second"))],
        ["default: the call that loads the kernels", *_min_median(_col(runs, "tiered", "tier_up"))],
    ]
    for name, parts in JIT_CALL.items():
        try:
            seconds = [probe(JIT_CALL_PROBE.format(**parts))["seconds"] for _ in range(repeat)]
        except (RuntimeError, KeyError, ValueError):  # (a framework not installed)
            continue
        rows.append([f"call of {name}(lambda x: x) on an array of 8", *_min_median(seconds)])
    rows += _jit_first_rows(repeat)
    eager = runs["empty"] + runs["warm"]
    worst = max(
        r["error"] for state in ("tiered", "empty", "warm", "disabled") for r in runs[state]
    )
    notes = [
        f"grad call: autodiff.grad of sum(tanh(x[index])), x of {ROWS}x{COLUMNS}, {GATHERED} "
        f"random rows gathered; its backward runs tanh's derivative on {GATHERED * COLUMNS:,} "
        "values and scatter-adds them, large enough for autodiff's Numba kernels "
        "(autodiff/kernels/). By default the first calls run NumPy and count what the kernels "
        "would have saved; Numba is loaded once that reaches the cost of loading it (here at "
        f"call {sorted(set(_col(runs, 'tiered', 'calls')))}, with a warm cache). With "
        "AUTODIFF_NUMBA_EAGER=1 the first call loads it.",
        f"Numba imported by the first call in {sum(r['numba'] for r in runs['tiered'])} of "
        f"{len(runs['tiered'])} default processes, {sum(r['numba'] for r in eager)} of "
        f"{len(eager)} eager ones, {sum(r['numba'] for r in runs['disabled'])} of "
        f"{len(runs['disabled'])} with it disabled; files written to each fresh cache directory "
        f"(an index and a data file per compiled kernel): {sorted(set(runs['files']))}; worst "
        f"relative error of the gradient {worst:.1e}.",
    ]
    memory = (
        "Peak memory of the elementwise gradient, x of 2**21 float64 (16 MiB), one process per "
        "row. RSS (ru_maxrss): before = after the import and the input, peak = after the first "
        "gradient call (any lazy import; Numba's only where eager: by default one call does "
        "not load it); warm call: the peak of NumPy "
        "buffers alive during a second call (tracemalloc). (Nx) = N times the input's size:\n"
        + _peak_memory_table(frameworks)
    )
    return "\n\n".join(
        [
            f"Startup (autodiff; each a fresh process; min and median over {repeat} process(es) "
            "per row):\n" + format_table(["measure", "min", "median"], rows),
            "\n".join(notes),
            memory,
            _graph_sizes(),
        ]
    )


def _graph_sizes() -> str:
    try:
        sizes = probe(GRAPH_SIZE_PROBE.format(quick=False))
    except (RuntimeError, KeyError, ValueError) as e:
        return f"Staged graph sizes: not measured ({e})"
    rows = [[name, str(n)] for name, n in sizes.items()]
    return "Staged graphs under autodiff.jit (equations, sub-graphs' included):\n" + format_table(
        ["workload", "equations"], rows
    )
