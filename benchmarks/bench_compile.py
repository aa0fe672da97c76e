"""Compilation (issue 40): first calls, steady state, pauses and memory of `autodiff.jit`, beside
jax.jit's, in one run.

Run (from the repository's root):

    python -m benchmarks.bench_compile                  # every section
    python -m benchmarks.bench_compile --quick          # smoke run (small sizes, short loops)
    python -m benchmarks.bench_compile --only first,steady --workloads chain,mlp
    python -m benchmarks.bench_compile --ode            # also the unrolled `ode` (minutes)

Sections (`--only`):
- `import`: `import numpy`, `import autodiff` (min and median over fresh processes).
- `first`: the first call of each workload's jitted program in a NEW process, each with an
  empty Numba cache (a fresh `NUMBA_CACHE_DIR`): autodiff.jit compiled at once
  (`AUTODIFF_NUMBA_EAGER=1`), autodiff.jit under the default backend, and jax.jit (which keeps
  no disk cache by default); then a second process on the eager run's cache (warm): its
  import and first call together. Beside each autodiff run: where its staged graph ran after
  that call (the graph's executor, `graph.numba_failure`, and the segment counts
  `graph.llvm_segments` / `graph.numba_segments` where the backend records them).
- `steady`: each workload's jitted call under the default backend and jax.jit's, from the
  first call on with no warm-up: loops of calls, timeit-style, for a fixed time (4 s; the
  loops grow to 0.2 s each); the fastest loop's time per call, against issue 25's targets.
- `slowest`: the slowest call of a loop of `jit(grad(chain))` calls under the default backend
  (its 99.9th percentile, and the call at which the graph's executor changed) against the
  median call of the same graph on the NumPy executor (`backend="numpy"`).
- `ode200`: `jit(grad(ode), backend="numba")` of the `ode` workload's loss with 200 RK4 steps
  in a process limited to 8 GiB of address space (RLIMIT_AS), with a timeout: its outcome
  (compiled, fell back with a warning, MemoryError, killed, timeout), time and peak RSS.
- `memory`: one process compiles N distinct small graphs with `backend="numba"`; its resident
  memory (VmRSS) after each N.

The unrolled `ode`'s autodiff processes (`--ode`) run under `ode200`'s address-space limit
too. Every measurement runs in its own process, bound to one CPU with every thread pool at one
thread (frameworks.py), with fresh cache directories under a temporary directory removed
afterwards. The tables report; nothing is asserted. Times on a shared machine are noisy: the
first-call cells keep their minimum over `--repeat` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.frameworks import bind_to_child_cpu, child_environment
from benchmarks.tables import format_table, format_time

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("import", "first", "steady", "slowest", "ode200", "memory")
FIRST_WORKLOADS = ("chain", "scalar4", "hessian", "hvp", "mlp", "per_example", "ode_loop")
# Issue 25's targets for autodiff.jit / jax.jit at steady state, and issue 40's for ode and
# elementwise; the first call, compiled at once with an empty cache, against jax.jit's.
STEADY_TARGETS = {
    "chain": 0.5,
    "scalar4": 0.5,
    "jvp_chain": 0.5,
    "hessian": 0.7,
    "hvp": 0.7,
    "per_example": 1.0,
    "jacrev": 1.0,
    "jacfwd": 1.0,
    "batched_vjp": 1.0,
    "ode_loop": 1.0,
    "mlp": 1.2,
    "elementwise": 1.0,
    "ode": 1.5,
}
FIRST_TARGETS = {"ode": 0.5}  # (every other workload: 1.0)
SLOWEST_TARGET = 2.0  # the slowest call / the NumPy executor's median call
AUTODIFF_FLAGS = ("AUTODIFF_NUMBA_EAGER", "AUTODIFF_DISABLE_NUMBA")
GIB = 2**30
# A staged graph's compiled segments per backend, where the backend counts them.
SEGMENT_COUNTS = ("llvm_segments", "numba_segments")


@dataclass(frozen=True)
class Settings:
    """How much each section measures."""

    quick: bool
    repeat: int  # processes per first-call cell (the minimum counts)
    timeout: float  # seconds per process
    ode_timeout: float  # seconds per process of the unrolled `ode` cells
    steady_seconds: float  # how long each steady-state loop runs (first call included)
    steady_min_loop: float  # seconds each timed loop lasts at least, once calibrated
    calls: int  # calls of the `slowest` loop
    reference_calls: int  # calls of the NumPy executor timed (its median, its slowest)
    ode_steps: int  # RK4 steps of the `ode200` section
    ode_budget: float  # seconds the `ode200` process may take
    address_space: int  # bytes of address space the `ode200` process may take
    memory_counts: tuple[int, ...]  # numbers of distinct graphs after which RSS is read

    @classmethod
    def of(cls, args: argparse.Namespace) -> Settings:
        quick = args.quick
        counts = args.memory_counts or ("20,50" if quick else "100,300,1000")
        return cls(
            quick=quick,
            repeat=args.repeat or (1 if quick else 3),
            timeout=args.timeout,
            ode_timeout=args.ode_timeout,
            steady_seconds=0.3 if quick else 4.0,
            steady_min_loop=0.02 if quick else 0.2,
            calls=args.calls,
            reference_calls=500 if quick else 20_000,
            ode_steps=args.ode200_steps or (5 if quick else 200),
            ode_budget=args.ode200_timeout or (60.0 if quick else 600.0),
            address_space=int(args.address_space * GIB),
            memory_counts=tuple(int(n) for n in counts.split(",")),
        )


# ---------------------------------------------------------------------------------------------
# Children: one measurement each, answering with one JSON line on stdout.


def executor_kind(graph) -> str:
    """What runs a staged graph now: "numba" (the Numba driver), "numpy" (the NumPy executor),
    "tiered: numpy" (the default backend before tier-up), "numpy (interpreted)", "not run", or
    the name of another backend's callable."""
    run = getattr(graph, "compiled", None)
    if run is None:
        return "numpy (interpreted)" if getattr(graph, "interpreted", None) else "not run"
    if type(run).__name__ == "_Tiered":
        return "tiered: numpy"
    code = getattr(run, "__code__", None)
    if code is None:
        return type(run).__name__
    source = code.co_filename.strip("<>")
    if source.startswith("staged"):
        return "numpy"
    if source.startswith("numba driver"):
        return "numba"
    return source.split()[0] if source else type(run).__name__


def graph_report(graph) -> dict:
    """Where a staged graph runs: its executor, size, Numba failure and compiled segments."""
    return {
        "kind": executor_kind(graph),
        "equations": graph.count_equations(),
        "failure": getattr(graph, "numba_failure", None),
        **{key: getattr(graph, key, None) for key in SEGMENT_COUNTS},
    }


def _spy_on_jit(made: list) -> None:
    """Make `autodiff.jit` record every jitted function it makes in `made`."""
    import autodiff

    real = autodiff.jit

    def spy(*args, **kwargs):
        jitted = real(*args, **kwargs)
        made.append(jitted)
        return jitted

    autodiff.jit = spy


def _graphs(made: list) -> list:
    return [entry.graph for jitted in made for entry in getattr(jitted, "_cache", {}).values()]


def _program(framework: str, workload: str, quick: bool):
    """(call, check): the workload's program in `framework`, and `check(result)`, the relative
    error against its reference (or a problem)."""
    from benchmarks.frameworks import FRAMEWORKS
    from benchmarks.run import compare
    from benchmarks.suite import WORKLOADS

    fw, w = FRAMEWORKS[framework], WORKLOADS[workload]
    fw.setup()
    args, static = w.make_inputs(quick), w.static_sizes(quick)
    call = w.programs[framework](args, **static)
    return call, lambda result: compare(result, w.reference(*args, **static))


def child_first(framework: str, workload: str, quick: bool) -> dict:
    """The import (and program building), then the first call, timed apart."""
    made: list = []
    start = time.perf_counter()
    if framework.startswith("autodiff"):
        _spy_on_jit(made)
    call, check = _program(framework, workload, quick)
    built = time.perf_counter()
    result = call()
    done = time.perf_counter()
    error, problem = check(result)
    graphs = [graph_report(g) for g in _graphs(made)]
    return {
        "import": built - start,
        "first": done - built,
        "total": done - start,
        "problem": problem,
        "graphs": graphs,
    }


def child_steady(framework: str, workload: str, quick: bool, seconds: float, min_loop: float):
    """Loops of calls from the first on, for `seconds`: each loop's time per call."""
    made: list = []
    if framework.startswith("autodiff"):
        _spy_on_jit(made)
    call, check = _program(framework, workload, quick)
    start = time.perf_counter()
    result = call()
    first = time.perf_counter() - start
    per_call: list[float] = []
    number, calls = 1, 1
    while time.perf_counter() - start < seconds or len(per_call) < 3:
        loop = time.perf_counter()
        for _ in range(number):
            call()
        elapsed = time.perf_counter() - loop
        per_call.append(elapsed / number)
        calls += number
        if elapsed < min_loop:
            number *= 2
    return {
        "first": first,
        "best": min(per_call),
        "last": per_call[-1],
        "calls": calls,
        "problem": check(result)[1],
        "graphs": [graph_report(g) for g in _graphs(made)],
    }


def child_slowest(calls: int, reference_calls: int) -> dict:
    """Every call of `jit(grad(chain))` under the default backend timed, the calls at which
    its graph's executor changed, and the NumPy executor's median call of the same graph."""
    import numpy as np

    import autodiff
    import autodiff.numpy as anp
    from benchmarks.workloads import CHAIN, chain_loss

    (x,) = CHAIN.make_inputs(quick=False)
    loss = lambda x: chain_loss(anp, x)
    f = autodiff.jit(autodiff.grad(loss))
    f(x)
    graph = f.graph(x)
    times = np.empty(calls)
    changes = [[1, executor_kind(graph)]]
    run = graph.compiled
    for i in range(calls):
        start = time.perf_counter()
        f(x)
        times[i] = time.perf_counter() - start
        if graph.compiled is not run:
            run = graph.compiled
            changes.append([i + 2, executor_kind(graph)])  # (call numbers count the first)
    reference = autodiff.jit(autodiff.grad(loss), backend="numpy")
    reference(x)
    reference_times = []
    for _ in range(reference_calls):
        start = time.perf_counter()
        reference(x)
        reference_times.append(time.perf_counter() - start)
    slowest = int(np.argmax(times))
    switch = changes[-1][0] - 2 if len(changes) > 1 else calls  # (index of the first compiled)
    return {
        "slowest": float(times[slowest]),
        "slowest_call": slowest + 2,
        "slowest_before": float(times[:switch].max()) if switch > 0 else 0.0,
        "slowest_after": float(times[switch:].max()) if switch < calls else 0.0,
        "p999": float(np.percentile(times, 99.9)),
        "median": float(np.median(times)),
        "numpy_median": statistics.median(reference_times),
        "numpy_slowest": max(reference_times),
        "numpy_p999": float(np.percentile(reference_times, 99.9)),
        "changes": changes,
        "graph": graph_report(graph),
    }


def child_ode(steps: int) -> dict:
    """`jit(grad(ode), backend="numba")` with `steps` RK4 steps: compiled or fallen back (the
    warnings it gave), or the MemoryError."""
    import warnings

    import autodiff
    import autodiff.numpy as anp
    from benchmarks.workloads import ODE, lorenz_loss

    p, state = ODE.make_inputs(quick=False)
    f = autodiff.jit(
        autodiff.grad(lambda p: lorenz_loss(anp, p, state, steps=steps)), backend="numba"
    )
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            f(p)
        except MemoryError as e:
            return {"outcome": "MemoryError", "seconds": time.perf_counter() - start, "why": str(e)}
    seconds = time.perf_counter() - start
    report = graph_report(f.graph(p))
    compiled = report["kind"] not in ("numpy", "numpy (interpreted)") and not report["failure"]
    return {
        "outcome": "compiled" if compiled else "fell back",
        "seconds": seconds,
        "warnings": [f"{w.category.__name__}: {w.message}"[:300] for w in caught],
        "graph": report,
    }


def _rss() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process, in bytes."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def child_memory(counts: list[int]) -> dict:
    """Distinct small graphs compiled with `backend="numba"`, one per static k: resident
    memory after each count in `counts`."""
    import numpy as np

    import autodiff

    x = np.arange(8.0)
    f = autodiff.jit(lambda x, k: x * k + k, static_argnums=1, backend="numba")
    f(x, -1)  # (Numba loaded and its first graph compiled: the baseline)
    rows = [[0, *_rss(), 0.0]]
    start, k = time.perf_counter(), 0
    for count in counts:
        while k < count:
            out = f(x, k)
            k += 1
        rows.append([count, *_rss(), time.perf_counter() - start])
    graph = f.graph(x, k - 1)
    return {
        "rows": rows,
        "graph": graph_report(graph),
        "correct": bool(np.array_equal(out, x * (k - 1) + (k - 1))),
    }


def child_import(module: str) -> dict:
    start = time.perf_counter()
    __import__(module)
    return {"seconds": time.perf_counter() - start}


CHILDREN: dict[str, Callable[..., dict]] = {
    "import": child_import,
    "first": child_first,
    "steady": child_steady,
    "slowest": child_slowest,
    "ode200": child_ode,
    "memory": child_memory,
}


# ---------------------------------------------------------------------------------------------
# Parent: one process per measurement, with a timeout; its answer, exit and peak RSS.


def _limit_and_bind(address_space: int | None):
    def prepare() -> None:
        bind_to_child_cpu()
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return prepare


def _wait(proc: subprocess.Popen, timeout: float) -> tuple[int | None, int]:
    """(exit status, or None after a timeout killed the process; its peak RSS in bytes)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_maxrss * 1024
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            return None, usage.ru_maxrss * 1024
        time.sleep(0.02)


def run_child(
    kind: str,
    params: dict,
    env: dict | None = None,
    timeout: float = 600.0,
    address_space: int | None = None,
) -> dict:
    """Run the child `kind` with `params` in a new process: {"status": "ok" | "error" |
    "timeout" | "killed", "wall", "maxrss", "result" (its answer) or "reason"}."""
    environment = child_environment()
    for flag in AUTODIFF_FLAGS:
        environment.pop(flag, None)
    environment.update(env or {})
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), environment.get("PYTHONPATH")])
    )
    command = [sys.executable, "-m", "benchmarks.bench_compile", "--child", kind]
    command.append(json.dumps(params))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=_limit_and_bind(address_space),
        )
        code, maxrss = _wait(proc, timeout)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        answer, errors = out.read().strip().splitlines(), err.read().strip().splitlines()
    cell: dict = {"wall": wall, "maxrss": maxrss}
    if code is None:
        return cell | {"status": "timeout", "reason": f"killed after {timeout:g} s"}
    if code < 0:
        reason = f"killed by {signal.Signals(-code).name}"
        return cell | {"status": "killed", "reason": reason}
    if code != 0 or not answer:
        reason = (errors or [f"exit status {code}"])[-1][:200]
        return cell | {"status": "error", "reason": reason}
    return cell | {"status": "ok", "result": json.loads(answer[-1])}


def _fresh_cache(root: str) -> str:
    return tempfile.mkdtemp(prefix="numba-cache-", dir=root)


def _best(cells: list[dict], key: str) -> dict:
    """The cell with the smallest result[key] among those that ran, else the first failure."""
    ran = [c for c in cells if c["status"] == "ok"]
    return min(ran, key=lambda c: c["result"][key]) if ran else cells[0]


def measure_imports(settings: Settings) -> dict:
    repeat = 3 if settings.quick else 10
    return {
        module: [run_child("import", {"module": module}) for _ in range(repeat)]
        for module in ("numpy", "autodiff")
    }


def _limits(workload: str, settings: Settings) -> tuple[float, int | None]:
    """(timeout, address-space limit of autodiff's processes): the unrolled `ode`, which may
    compile for minutes and take gigabytes, gets `ode_timeout` and `ode200`'s limit."""
    if workload == "ode":
        return settings.ode_timeout, settings.address_space
    return settings.timeout, None


def _first_cells(workload: str, settings: Settings, root: str) -> dict:
    """One repeat of a workload's first-call cells, each in a new process."""
    timeout, limit = _limits(workload, settings)
    params = {"workload": workload, "quick": settings.quick}
    ours = dict(params, framework="autodiff.jit")
    eager = {"NUMBA_CACHE_DIR": _fresh_cache(root), "AUTODIFF_NUMBA_EAGER": "1"}
    default = {"NUMBA_CACHE_DIR": _fresh_cache(root)}
    return {
        "eager": run_child("first", ours, eager, timeout, limit),
        "warm": run_child("first", ours, eager, timeout, limit),
        "default": run_child("first", ours, default, timeout, limit),
        "jax": run_child("first", dict(params, framework="jax.jit"), {}, timeout),
    }


def measure_first(workloads: list[str], settings: Settings, root: str) -> dict:
    results = {}
    for workload in workloads:
        t = time.perf_counter()
        runs = [_first_cells(workload, settings, root) for _ in range(settings.repeat)]
        results[workload] = {
            mode: _best([r[mode] for r in runs], "total" if mode == "warm" else "first")
            for mode in ("eager", "warm", "default", "jax")
        }
        _progress(f"first {workload}", t)
    return results


def measure_steady(workloads: list[str], settings: Settings, root: str) -> dict:
    results = {}
    for workload in workloads:
        t = time.perf_counter()
        timeout, limit = _limits(workload, settings)
        params = {
            "workload": workload,
            "quick": settings.quick,
            "seconds": settings.steady_seconds,
            "min_loop": settings.steady_min_loop,
        }
        env = {"NUMBA_CACHE_DIR": _fresh_cache(root)}
        ours = dict(params, framework="autodiff.jit")
        results[workload] = {
            "ours": run_child("steady", ours, env, timeout, limit),
            "jax": run_child("steady", dict(params, framework="jax.jit"), {}, timeout),
        }
        _progress(f"steady {workload}", t)
    return results


def measure_slowest(settings: Settings, root: str) -> dict:
    params = {"calls": settings.calls, "reference_calls": settings.reference_calls}
    return run_child("slowest", params, {"NUMBA_CACHE_DIR": _fresh_cache(root)}, settings.timeout)


def measure_ode200(settings: Settings, root: str) -> dict:
    return run_child(
        "ode200",
        {"steps": settings.ode_steps},
        {"NUMBA_CACHE_DIR": _fresh_cache(root)},
        settings.ode_budget,
        settings.address_space,
    )


def measure_memory(settings: Settings, root: str) -> dict:
    params = {"counts": list(settings.memory_counts)}
    timeout = max(settings.timeout, 2.0 * max(settings.memory_counts))
    return run_child("memory", params, {"NUMBA_CACHE_DIR": _fresh_cache(root)}, timeout)


def _progress(what: str, since: float) -> None:
    print(f"{what}: {time.perf_counter() - since:.1f} s", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Tables.


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.0f} MiB"


def _failed(cell: dict) -> str | None:
    """A failed cell's text, or None if it ran."""
    if cell["status"] == "ok":
        return None
    return "timeout" if cell["status"] == "timeout" else cell["status"]


def _seconds(cell: dict, key: str) -> str:
    return _failed(cell) or format_time(cell["result"][key])


def _ratio(ours: dict, theirs: dict, key: str) -> str:
    if _failed(ours) or _failed(theirs):
        return "-"
    return f"{ours['result'][key] / theirs['result'][key]:.2f}x"


def _where(cell: dict) -> str:
    """Where an autodiff run's graphs ran after its first call (and what failed)."""
    if _failed(cell):
        return "-"
    parts = []
    for g in cell["result"]["graphs"]:
        text = g["kind"]
        counts = [f"{g[k]} {k.split('_')[0]}" for k in SEGMENT_COUNTS if g.get(k)]
        if counts:
            text += f" ({', '.join(counts)} segments)"
        if g["failure"]:
            text += " [failed: " + g["failure"][:60] + "]"
        parts.append(text)
    return "; ".join(parts) or "no graph"


def _equations(cell: dict) -> str:
    if _failed(cell):
        return "-"
    return str(sum(g["equations"] for g in cell["result"]["graphs"]))


def imports_table(results: dict) -> str:
    rows = []
    for module, cells in results.items():
        seconds = [c["result"]["seconds"] for c in cells if c["status"] == "ok"]
        if not seconds:
            rows.append([f"import {module}", _failed(cells[0]) or "-", "-"])
            continue
        rows.append(
            [
                f"import {module}",
                format_time(min(seconds)),
                format_time(statistics.median(seconds)),
            ]
        )
    return "Import, each a new process (min and median):\n" + format_table(
        ["measure", "min", "median"], rows
    )


def first_table(results: dict, repeat: int) -> str:
    header = [
        "workload",
        "equations",
        "ours, eager",
        "ours, default",
        "jax.jit",
        "eager/jax",
        "target",
        "warm: import+first",
        "warm: first",
        "eager: where",
        "default: where",
    ]
    rows = []
    for w, r in results.items():
        rows.append(
            [
                w,
                _equations(r["eager"]),
                _seconds(r["eager"], "first"),
                _seconds(r["default"], "first"),
                _seconds(r["jax"], "first"),
                _ratio(r["eager"], r["jax"], "first"),
                f"<= {FIRST_TARGETS.get(w, 1.0):g}x",
                _seconds(r["warm"], "total"),
                _seconds(r["warm"], "first"),
                _where(r["eager"]),
                _where(r["default"]),
            ]
        )
    notes = _problems({(w, m): c for w, r in results.items() for m, c in r.items()})
    return "\n".join(
        [
            f"First call in a new process, empty cache (min over {repeat} process(es)); "
            "eager = AUTODIFF_NUMBA_EAGER=1; warm = a second process on the eager run's cache "
            "(import + first call, and the first call alone):",
            format_table(header, rows),
            *notes,
        ]
    )


def _problems(cells: dict) -> list[str]:
    """A note per failed cell or wrong result."""
    notes = []
    for (w, mode), c in cells.items():
        if c["status"] != "ok":
            notes.append(
                f"{w} / {mode}: {c['status']} ({c['reason']}) after {format_time(c['wall'])}, "
                f"peak RSS {_mib(c['maxrss'])}"
            )
        elif c["result"].get("problem"):
            notes.append(f"{w} / {mode}: result {c['result']['problem']}")
    return notes


def steady_table(results: dict) -> str:
    header = [
        "workload",
        "ours (default)",
        "jax.jit",
        "ours/jax",
        "target",
        "met",
        "ours: calls",
        "ours: last loop",
        "ours: where",
    ]
    rows = []
    for w, r in results.items():
        ratio = _ratio(r["ours"], r["jax"], "best")
        met = "-" if ratio == "-" else "yes" if float(ratio[:-1]) <= STEADY_TARGETS[w] else "no"
        rows.append(
            [
                w,
                _seconds(r["ours"], "best"),
                _seconds(r["jax"], "best"),
                ratio,
                f"<= {STEADY_TARGETS[w]:g}x",
                met,
                _failed(r["ours"]) or str(r["ours"]["result"]["calls"]),
                _seconds(r["ours"], "last"),
                _where(r["ours"]),
            ]
        )
    notes = _problems({(w, m): c for w, r in results.items() for m, c in r.items()})
    return "\n".join(
        [
            "Steady state: per call, the fastest loop of the calls from the first on (no "
            "warm-up); autodiff.jit under the default backend; calls = how many ran, last loop "
            "= the last loop's time per call (a compile inside it included), where = its "
            "graph's executor at the end:",
            format_table(header, rows),
            *notes,
        ]
    )


def slowest_table(cell: dict, calls: int) -> str:
    title = f"Slowest call of {calls:,} calls of jit(grad(chain)), default backend:"
    if _failed(cell):
        return f"{title} {cell['status']} ({cell['reason']})"
    r = cell["result"]
    changes = ", ".join(f"call {n}: {kind}" for n, kind in r["changes"])
    rows = [
        ["slowest call", format_time(r["slowest"]), f"call {r['slowest_call']}"],
        ["slowest before the switch (compiling)", format_time(r["slowest_before"]), ""],
        ["slowest after the switch", format_time(r["slowest_after"]), ""],
        ["99.9th percentile", format_time(r["p999"]), ""],
        ["median call", format_time(r["median"]), ""],
        ["NumPy executor's median call", format_time(r["numpy_median"]), ""],
        [
            "NumPy executor alone: slowest, 99.9th (the machine's noise)",
            format_time(r["numpy_slowest"]),
            format_time(r["numpy_p999"]),
        ],
        [
            "slowest / NumPy median",
            f"{r['slowest'] / r['numpy_median']:.1f}x",
            f"target <= {SLOWEST_TARGET:g}x",
        ],
    ]
    return "\n".join(
        [title, format_table(["measure", "time", ""], rows), f"executor from: {changes}"]
    )


def ode200_table(cell: dict, settings: Settings) -> str:
    title = (
        f"jit(grad(ode, {settings.ode_steps} steps), backend='numba') under RLIMIT_AS "
        f"{settings.address_space / GIB:g} GiB, timeout {settings.ode_budget:g} s:"
    )
    rows = [["wall (process)", format_time(cell["wall"])], ["peak RSS", _mib(cell["maxrss"])]]
    if _failed(cell):
        rows.insert(0, ["outcome", f"{cell['status']} ({cell['reason']})"])
        return title + "\n" + format_table(["measure", "value"], rows)
    r = cell["result"]
    rows.insert(0, ["outcome", r["outcome"]])
    rows.insert(1, ["first call (compile + run)", format_time(r["seconds"])])
    if "graph" in r:
        rows.append(["equations", str(r["graph"]["equations"])])
        rows.append(["executor", _where({"status": "ok", "result": {"graphs": [r["graph"]]}})])
    lines = [title, format_table(["measure", "value"], rows)]
    lines += [f"warning: {w}" for w in r.get("warnings", [])]
    if r.get("why"):
        lines.append(f"MemoryError: {r['why'][:200]}")
    return "\n".join(lines)


def memory_table(cell: dict) -> str:
    title = "Distinct small graphs compiled with backend='numba' in one process (RSS after N):"
    if _failed(cell):
        return f"{title} {cell['status']} ({cell['reason']})"
    r = cell["result"]
    rows = [
        [str(n), _mib(rss), _mib(hwm), format_time(seconds) if n else "-"]
        for n, rss, hwm, seconds in r["rows"]
    ]
    rows[0][0] = "0 (Numba loaded, one graph)"
    lines = [title, format_table(["graphs", "VmRSS", "VmHWM", "compile time"], rows)]
    if not r["correct"]:
        lines.append("! the last graph's result was wrong")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Command line.


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, short loops")
    parser.add_argument("--only", help="comma-separated sections: " + ",".join(SECTIONS))
    parser.add_argument(
        "--workloads",
        help="comma-separated workloads of the first and steady sections (default: "
        + ",".join(FIRST_WORKLOADS)
        + " for first; every workload with a target for steady)",
    )
    parser.add_argument(
        "--ode", action="store_true", help="add the unrolled ode to first and steady"
    )
    parser.add_argument("--repeat", type=int, help="processes per first-call cell (3; quick 1)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    parser.add_argument(
        "--ode-timeout", type=float, default=600.0, help="seconds per unrolled-ode process"
    )
    parser.add_argument("--calls", type=int, default=20_000, help="calls of the slowest loop")
    parser.add_argument("--ode200-steps", type=int, help="RK4 steps of ode200 (200; quick 5)")
    parser.add_argument("--ode200-timeout", type=float, help="seconds for ode200 (600; quick 60)")
    parser.add_argument(
        "--address-space", type=float, default=8.0, help="GiB of address space for ode200"
    )
    parser.add_argument("--memory-counts", help="graph counts of the memory section")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # KIND PARAMS-JSON
    return parser.parse_args(argv)


def _selected(text: str | None, known, what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()] if text else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def run_sections(sections: list[str], args: argparse.Namespace, settings: Settings) -> dict:
    """Every selected section's measurements, in order."""
    extra = ["ode"] if args.ode else []
    first_known = [*FIRST_WORKLOADS, *extra]
    steady_known = [w for w in STEADY_TARGETS if w != "ode"] + extra
    # (--workloads names those of the sections run: a name only one section knows is
    # measured there and skipped by the other)
    both = [*first_known, *(w for w in steady_known if w not in first_known)]
    chosen = _selected(args.workloads, both, "workload")
    first = [w for w in chosen if w in first_known] if args.workloads else first_known
    steady = [w for w in chosen if w in steady_known] if args.workloads else steady_known
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as root:
        for section in sections:
            t = time.perf_counter()
            if section == "import":
                results[section] = measure_imports(settings)
            elif section == "first":
                results[section] = measure_first(first, settings, root)
            elif section == "steady":
                results[section] = measure_steady(steady, settings, root)
            else:
                measure = {"slowest": measure_slowest, "ode200": measure_ode200}.get(
                    section, measure_memory
                )
                results[section] = measure(settings, root)
            _progress(section, t)
    return results


def report(results: dict, settings: Settings) -> str:
    tables = {
        "import": lambda r: imports_table(r),
        "first": lambda r: first_table(r, settings.repeat),
        "steady": steady_table,
        "slowest": lambda r: slowest_table(r, settings.calls),
        "ode200": lambda r: ode200_table(r, settings),
        "memory": memory_table,
    }
    return "\n\n".join(tables[section](r) for section, r in results.items())


def main(argv=None) -> None:
    args = parse(argv)
    if args.child:
        kind, params = args.child
        print(json.dumps(CHILDREN[kind](**json.loads(params))), flush=True)
        return
    settings = Settings.of(args)
    sections = _selected(args.only, SECTIONS, "section")
    start = time.perf_counter()
    results = run_sections(sections, args, settings)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(report(results, settings))
    print(f"\ntotal wall time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
