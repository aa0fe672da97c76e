"""Run the benchmark suite: one child process per framework, then the comparison tables.

The parent imports no framework. Each child sets up its one framework (threads
pinned to 1, float64), then for every workload (and every alternative API the
workload lists for that framework): builds the call, times its first call, warms
up (at least 3 calls and 2.5 s, a loop's steady state), finds how many calls take
at least `min_time`, and keeps the minimum per-call time over `repeat` such loops
(timeit-style, garbage collector on). The first result is compared with the
workload's float64 reference; the child writes its results as JSON to a file the
parent reads. Last, the startup section (`startup.py`) runs its own fresh
processes.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.frameworks import (
    FRAMEWORKS,
    THREAD_ENV,
    bind_to_child_cpu,
    child_cpu,
    child_environment,
)
from benchmarks.startup import startup_report
from benchmarks.suite import WORKLOADS
from benchmarks.tables import format_table, format_time

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = "autodiff"  # the ratio columns are autodiff's time over each other column's
TOLERANCE = 1e-6  # max |result - reference| / max |reference|, per array
BUSY_SHARE = 0.9  # below this CPU share in its best loop, a time is marked "~" (machine busy)
STARTUP = "startup"  # the name of the startup section in --only
STARTUP_FRAMEWORKS = ("autodiff", "autograd", "numpy-fwd")  # the rows of its peak-memory table


@dataclass(frozen=True)
class Settings:
    """How long each measurement runs."""

    repeat: int  # timed loops; the minimum is reported
    min_time: float  # seconds each timed loop lasts at least
    warmup: int  # untimed calls after the first, at least
    warmup_time: float  # seconds those untimed calls last, at least (a loop's steady state)
    child_timeout: float  # seconds a child process may take in all
    startup_repeat: int  # fresh processes per row of the startup section
    rounds: int = 1  # processes per framework, run round-robin; each cell keeps its best

    @classmethod
    def of(cls, quick: bool, repeat: int | None, rounds: int | None = None) -> Settings:
        if quick:
            return cls(repeat or 2, 0.01, 0, 0.0, 120.0, repeat or 1, rounds or 1)
        return cls(repeat or 5, 0.2, 3, 2.5, 3600.0, repeat or 5, rounds or 2)


# ---------------------------------------------------------------------------------------------
# Child: one framework, every selected workload.


def _loop(call, number: int, collect: bool = True) -> tuple[float, float]:
    """(wall seconds, CPU share): the share drops below 1 when other processes take the core."""
    if collect:
        gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
        call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu / wall


def measure(call, settings: Settings) -> dict:
    """First-call time, then the minimum per-call time over `repeat` loops of >= `min_time` each."""
    gc.collect()
    start = time.perf_counter()
    result = call()
    first = time.perf_counter() - start
    # Warm up like a loop of calls would: caches, JIT compilers, and autodiff's tiered
    # kernels (which load Numba, and compile a hot fused program, once they have paid).
    warm, calls = time.perf_counter(), 0
    while calls < settings.warmup or time.perf_counter() - warm < settings.warmup_time:
        call()
        calls += 1
    number = 1
    while (elapsed := _loop(call, number, collect=False)[0]) < settings.min_time:
        number = max(2 * number, math.ceil(1.2 * number * settings.min_time / max(elapsed, 1e-9)))
    best, share = min(_loop(call, number) for _ in range(settings.repeat))
    return {
        "result": result,
        "first": first,
        "best": best / number,
        "number": number,
        "share": share,
    }


def _leaves(tree) -> list[np.ndarray]:
    """The arrays of a result pytree as NumPy arrays, in order."""
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
    if hasattr(tree, "detach"):
        tree = tree.detach()
    return [np.asarray(tree)]


def compare(result, expected) -> tuple[float, str | None]:
    """(worst relative error, problem or None): shapes, float64 dtype, values vs the reference."""
    got, want = _leaves(result), _leaves(expected)
    if len(got) != len(want):
        return math.nan, f"{len(got)} result arrays, expected {len(want)}"
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return math.nan, f"shape {g.shape}, expected {w.shape}"
        if g.dtype != np.float64:
            return math.nan, f"dtype {g.dtype}, expected float64"
        if not np.all(np.isfinite(g)):
            return math.nan, "non-finite values"
        scale = max(float(np.max(np.abs(w), initial=0.0)), np.finfo(np.float64).tiny)
        worst = max(worst, float(np.max(np.abs(g - w), initial=0.0)) / scale)
    if not worst <= TOLERANCE:
        return worst, f"differs from the float64 reference: relative error {worst:.1e}"
    return worst, None


def _describe(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:200]


def run_program(program, framework, workload, quick: bool, settings: Settings) -> dict:
    """One cell: the timing of `program` on fresh inputs, and its check against the reference."""
    args, static = workload.make_inputs(quick), workload.static_sizes(quick)
    try:
        timing = measure(program(args, **static), settings)
    except (NotImplementedError, AttributeError) as e:
        return {"status": "n/a", "reason": _describe(e)}
    except Exception as e:  # noqa: BLE001  (one broken cell must not stop the suite)
        return {"status": "error", "reason": _describe(e)}
    out = {"status": "ok", **{k: timing[k] for k in ("first", "best", "number", "share")}}
    if framework.checked:
        out["error"], out["problem"] = compare(
            timing["result"], workload.reference(*args, **static)
        )
    return out


def run_workload(framework, workload, quick: bool, settings: Settings) -> dict:
    """The framework's cell of the workload, with its alternatives (other APIs) if any."""
    program = workload.programs.get(framework.name)
    if program is None:
        return {"status": "n/a", "reason": "no program for this framework"}
    out = run_program(program, framework, workload, quick, settings)
    alternatives = workload.alternatives.get(framework.name, {})
    if alternatives:
        out["alternatives"] = {
            label: run_program(p, framework, workload, quick, settings)
            for label, p in alternatives.items()
        }
    return out


def child(name: str, workload_names: list[str], quick: bool, settings: Settings, out: Path) -> None:
    framework = FRAMEWORKS[name]
    bind_to_child_cpu()
    framework.setup()
    results = {w: run_workload(framework, WORKLOADS[w], quick, settings) for w in workload_names}
    out.write_text(json.dumps(results))


# ---------------------------------------------------------------------------------------------
# Parent: one child per framework, then the tables.


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001  (informational only)
        return "unknown BLAS"


def _git_revision() -> str:
    def git(*cmd):
        return subprocess.run(
            ["git", "-C", str(ROOT), *cmd], capture_output=True, text=True, timeout=10
        ).stdout.strip()

    try:
        rev = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    return f"{rev or 'unknown revision'}{' + uncommitted changes' if dirty else ''}"


def machine_info(quick: bool, settings: Settings) -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpu = child_cpu()
    binding = f"bound to CPU {cpu}" if cpu is not None else "not bound to a CPU"
    mode = "quick run" if quick else "full run"
    now = datetime.datetime.now().isoformat(timespec="seconds")
    return "\n".join(
        [
            f"autodiff benchmarks, {now}, {mode}: min over {settings.rounds} round(s) of one "
            f"process per framework x {settings.repeat} repeats of >= {settings.min_time:g} s each",
            f"CPU: {_cpu_model()} ({os.cpu_count()} logical CPUs, {usable} usable, load average "
            f"{os.getloadavg()[0]:.2f}); each framework in its own process, {binding}, 1 thread",
            f"Python {platform.python_version()} on {platform.platform()}",
            f"numpy {np.__version__} ({_blas()}), numba {_version('numba')}, "
            f"autograd {_version('autograd')}, torch {_version('torch')}, "
            f"jax {_version('jax')} (jaxlib {_version('jaxlib')})",
            f"autodiff: {ROOT} at {_git_revision()}",
        ]
    )


def _run_child(name: str, workload_names: list[str], quick: bool, settings: Settings) -> dict:
    env = child_environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        cmd = [
            sys.executable,
            "-m",
            "benchmarks",
            "--child",
            name,
            "--only",
            ",".join(workload_names),
        ]
        cmd += ["--repeat", str(settings.repeat), "--out", str(out)] + (
            ["--quick"] if quick else []
        )
        try:
            proc = subprocess.run(
                cmd,
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=settings.child_timeout,
            )
            reason = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            reason = f"timed out after {settings.child_timeout:g} s"
        if out.exists():
            return json.loads(out.read_text())
    return {
        w: {"status": "error", "reason": f"child process failed: {reason}"[:200]}
        for w in workload_names
    }


def _best_cell(a: dict | None, b: dict) -> dict:
    """Of two rounds' results for one cell, the faster (first-call time: the lower too)."""
    if a is None or a.get("status") != "ok":
        return b
    if b.get("status") != "ok":
        return a
    best, other = (a, b) if a["best"] <= b["best"] else (b, a)
    merged = dict(best, first=min(a["first"], b["first"]))
    if "alternatives" in a or "alternatives" in b:
        alt_a, alt_b = a.get("alternatives", {}), b.get("alternatives", {})
        merged["alternatives"] = {
            k: _best_cell(alt_a.get(k), alt_b[k]) if k in alt_b else alt_a[k]
            for k in {**alt_a, **alt_b}
        }
    return merged


def _best_of(previous: dict | None, run: dict) -> dict:
    """Per workload, the better of two rounds of one framework's process."""
    if previous is None:
        return run
    return {w: _best_cell(previous.get(w), r) for w, r in run.items()}


def _time_cell(r: dict, key: str = "best") -> str:
    if r["status"] != "ok":
        return r["status"]
    busy = key == "best" and r["share"] < BUSY_SHARE
    return format_time(r[key]) + ("!" if r.get("problem") else "~" if busy else "")


def _ratio_cell(ours: dict, theirs: dict) -> str:
    if ours["status"] != "ok" or theirs["status"] != "ok":
        return "-"
    mark = "!" if ours.get("problem") or theirs.get("problem") else ""
    return f"{ours['best'] / theirs['best']:.2f}x{mark}"


def _cells(results: dict[str, dict], names: list[str], workload_names: list[str]):
    """(framework, workload, label, result) for every cell, then its alternatives (labelled)."""
    for n in names:
        for w in workload_names:
            yield n, w, "", results[n][w]
            for label, r in results[n][w].get("alternatives", {}).items():
                yield n, w, label, r


def _alternatives_table(
    results: dict[str, dict], names: list[str], workload_names: list[str]
) -> str | None:
    rows = [
        [w, n, label, _time_cell(r), _time_cell(r, "first"), _ratio_cell(r, results[n][w])]
        for w in workload_names
        for n in names
        for label, r in results[n][w].get("alternatives", {}).items()
    ]
    if not rows:
        return None
    header = ["workload", "framework", "other API", "time", "first call", "/column"]
    return (
        "Other APIs for the same computation (not in the table; /column = this time / the "
        "column's time):\n" + format_table(header, rows)
    )


def report(
    results: dict[str, dict], workload_names: list[str], quick: bool, settings: Settings
) -> str:
    names = list(results)
    peers = [n for n in names if n != REFERENCE] if REFERENCE in results else []
    header = ["workload", *names, *(f"ad/{p}" for p in peers)]
    rows = [
        [w]
        + [_time_cell(results[n][w]) for n in names]
        + [_ratio_cell(results[REFERENCE][w], results[p][w]) for p in peers]
        for w in workload_names
    ]
    first = [[w] + [_time_cell(results[n][w], "first") for n in names] for w in workload_names]

    notes = [f"{w}: {WORKLOADS[w].describe(quick)}" for w in workload_names]
    notes += [
        f"{w} / {n}: {WORKLOADS[w].notes[n]}"
        for w in workload_names
        for n in names
        if n in WORKLOADS[w].notes
    ]
    notes.append(
        f"Times are per call: the minimum over {settings.rounds} round(s) (one process per "
        f"framework each, run round-robin) of {settings.repeat} repeats, each looping for >= "
        f"{settings.min_time:g} s. ad/X = autodiff time / X time (above 1: autodiff is slower)."
    )
    cells = list(_cells(results, names, workload_names))
    if any(r.get("share", 1.0) < BUSY_SHARE for *_, r in cells):
        notes.append(
            f"~ = in its best loop the process had less than {BUSY_SHARE:.0%} of a CPU: other "
            "processes were running, so that time is inflated. Rerun on an idle machine."
        )
    if "numpy-fwd" in names:
        notes.append(
            "numpy-fwd = the plain NumPy forward pass alone (no gradient): ad/numpy-fwd is the "
            "cost of a gradient relative to its function (the 'cheap gradient' bound: a small "
            "constant)."
        )
    checked, failed, worst = 0, 0, 0.0
    for n, w, label, r in cells:
        cell = f"{n} / {w}" + (f" ({label})" if label else "")
        if r["status"] != "ok":
            notes.append(f"{cell}: {r['status']} ({r['reason']})")
        elif r.get("problem"):
            notes.append(f"{cell}: ! result {r['problem']}")
        if "problem" in r:
            checked += 1
            failed += bool(r["problem"])
            worst = max(worst, r["error"]) if math.isfinite(r["error"]) else worst
    if checked:
        notes.append(
            f"{checked} results checked against float64 references worked out by hand (relative "
            f"tolerance {TOLERANCE:g}): {failed} failed ('!'); worst finite error {worst:.1e}."
        )
    sections = [
        format_table(header, rows),
        "First call (includes tracing, compilation and caches warming up):\n"
        + format_table(["workload", *names], first),
        _alternatives_table(results, names, workload_names),
        "\n".join(notes),
    ]
    return "\n\n".join(filter(None, sections))


def _installed(name: str) -> bool:
    if importlib.util.find_spec(FRAMEWORKS[name].module) is None:
        print(f"{name}: not installed, skipped", file=sys.stderr, flush=True)
        return False
    return True


def parent(
    workload_names: list[str],
    framework_names: list[str],
    startup: bool,
    quick: bool,
    settings: Settings,
) -> None:
    print(machine_info(quick, settings), flush=True)
    print(f"thread settings: {' '.join(f'{k}={v!r}' for k, v in THREAD_ENV.items())}\n", flush=True)
    start = time.perf_counter()
    if workload_names:
        results: dict[str, dict] = {}
        names = list(filter(_installed, framework_names))
        # Round-robin: each round runs every framework's process once, and each cell keeps its
        # best round, so a slow spell of a shared machine does not land on one column only.
        for round_ in range(settings.rounds):
            for name in names:
                t = time.perf_counter()
                run = _run_child(name, workload_names, quick, settings)
                results[name] = _best_of(results.get(name), run)
                print(
                    f"{name} (round {round_ + 1}/{settings.rounds}): "
                    f"{time.perf_counter() - t:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
        print(report(results, workload_names, quick, settings), flush=True)
    if startup:
        t = time.perf_counter()
        section = startup_report(
            settings.startup_repeat, list(filter(_installed, STARTUP_FRAMEWORKS))
        )
        print(f"startup: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        print(f"\n{section}")
    print(f"\ntotal wall time {time.perf_counter() - start:.1f} s")


def _names(text: str | None, known, what: str) -> list[str]:
    if text is None:
        return list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks [--quick] [--only W,...] [--frameworks F,...] [--repeat N]`.

    `--only` takes workload names and `startup` (the startup section); by default, all of them.
    """
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time autodiff's derivatives against autograd, torch and jax, and its "
        "startup costs; print tables.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repeats (smoke run)"
    )
    parser.add_argument(
        "--only",
        metavar="W,...",
        help=f"workloads, and 'startup' for the startup section (default: all of "
        f"{','.join([*WORKLOADS, STARTUP])})",
    )
    parser.add_argument(
        "--frameworks", metavar="F,...", help=f"columns (default: {','.join(FRAMEWORKS)})"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        help="timed repeats per cell (default 5, quick 2), and processes per startup row "
        "(default 5, quick 1)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        help="processes per framework, run round-robin, each cell keeping its best "
        "(default 2, quick 1)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    settings = Settings.of(args.quick, args.repeat, args.rounds)
    names = _names(args.only, [*WORKLOADS, STARTUP], "workload")
    workload_names = [n for n in names if n != STARTUP]
    if args.child:
        child(args.child, workload_names, args.quick, settings, args.out)
    else:
        frameworks = _names(args.frameworks, FRAMEWORKS, "framework")
        parent(workload_names, frameworks, STARTUP in names, args.quick, settings)
    return 0
