"""Run the benchmark suite: one worker process per framework, their timed loops interleaved.

The parent imports no framework. It starts one worker per framework (`--child`),
which sets up its one framework (threads pinned to 1, float64) and then serves
the parent's requests over a pipe, one JSON line each way. Per workload, every
worker first prepares its cells (the workload's program and any alternative API
it lists for that framework): builds the call, times its first call, warms up
(at least 3 calls and 2.5 s, a loop's steady state), finds how many calls take
at least `min_time`, and compares the first result with the workload's float64
reference. Then the parent asks the workers in turn, `repeat` times round-robin,
for one timed loop of each cell (timeit-style, garbage collector on), and keeps
each cell's fastest. A shared machine's speed drifts over seconds to minutes;
with the frameworks' loops interleaved a few tenths of a second apart, a slow
spell falls on every column alike instead of on one. Last, the startup section
(`startup.py`) runs its own fresh processes.

`--baseline DIR` adds the column `autodiff@base`: one more autodiff worker, whose `autodiff`
is imported from the checkout at DIR (an older commit's worktree, say), interleaved with the
others like every column, and the ratio `ad/autodiff@base` (this checkout's time over DIR's).
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
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.frameworks import (
    BASELINE,
    FRAMEWORKS,
    THREAD_ENV,
    bind_to_child_cpu,
    child_cpu,
    child_environment,
    import_autodiff_from,
    is_autodiff_checkout,
)
from benchmarks.startup import startup_report
from benchmarks.suite import WORKLOADS
from benchmarks.tables import format_table, format_time

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = "autodiff"  # the ratio columns are autodiff's time over each other column's
JIT = "autodiff.jit"  # ... and autodiff.jit's over jax.jit's and over eager autodiff's
TOLERANCE = 1e-6  # max |result - reference| / max |reference|, per array
BUSY_SHARE = 0.9  # below this CPU share in its best loop, a time is marked "~" (machine busy)
STARTUP = "startup"  # the name of the startup section in --only
STARTUP_FRAMEWORKS = ("autodiff", "autograd", "numpy-fwd")  # the rows of its peak-memory table


@dataclass(frozen=True)
class Settings:
    """How long each measurement runs."""

    repeat: int  # timed loops per cell, interleaved with the other frameworks'; the fastest counts
    min_time: float  # seconds each timed loop lasts at least
    warmup: int  # untimed calls after the first, at least
    warmup_time: float  # seconds those untimed calls last, at least (a loop's steady state)
    request_timeout: float  # seconds a worker may take to answer one request
    startup_repeat: int  # fresh processes per row of the startup section

    @classmethod
    def of(cls, quick: bool, repeat: int | None) -> Settings:
        if quick:
            return cls(repeat or 2, 0.01, 0, 0.0, 120.0, repeat or 1)
        return cls(repeat or 8, 0.2, 3, 2.5, 1800.0, repeat or 5)


# ---------------------------------------------------------------------------------------------
# Worker: one framework; prepares a workload's cells, then times them loop by loop on request.


def _loop(call, number: int, collect: bool = True) -> tuple[float, float]:
    """(wall seconds, CPU share): the share drops below 1 when other processes take the core."""
    if collect:
        gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
        call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu / wall


def prepare(call, settings: Settings) -> tuple[object, float, int]:
    """(first result, first-call time, calls per timed loop): the first call, a warm-up, and how
    many calls take at least `min_time`."""
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
    return result, first, number


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


def prepare_cell(program, framework, workload, quick: bool, settings: Settings):
    """(cell, call): a cell's first call, warm-up and check; `call` is None unless it runs."""
    args, static = workload.make_inputs(quick), workload.static_sizes(quick)
    try:
        call = program(args, **static)
        result, first, number = prepare(call, settings)
    except (NotImplementedError, AttributeError) as e:
        return {"status": "n/a", "reason": _describe(e)}, None
    except Exception as e:
        return {"status": "error", "reason": _describe(e)}, None
    cell = {"status": "ok", "first": first, "best": math.inf, "number": number, "share": 1.0}
    if framework.checked:
        cell["error"], cell["problem"] = compare(result, workload.reference(*args, **static))
    return cell, call


def worker(name: str, quick: bool, settings: Settings, autodiff_from: str | None = None) -> None:
    """Serve the parent: one JSON request per line on stdin, one JSON answer per line.

    `{"prepare": workload}` prepares the framework's cells of the workload (labelled "" for
    its program, else by alternative API) and answers with them; `{"time": true}` runs one
    timed loop of each cell that runs and answers `{label: [seconds per call, CPU share]}`
    (or an error cell). Anything the framework prints goes to stderr, never to the answers.
    `autodiff_from`: the checkout whose `autodiff` this worker imports (the baseline column).
    """
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    framework = FRAMEWORKS[name]
    bind_to_child_cpu()
    if autodiff_from is not None:
        import_autodiff_from(autodiff_from)
    framework.setup()

    def answer(message) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

    calls: dict = {}  # label -> (call, number)
    answer({"ready": name})
    for line in sys.stdin:
        request = json.loads(line)
        if "prepare" in request:
            calls.clear()
            gc.collect()
            workload = WORKLOADS[request["prepare"]]
            program = workload.programs.get(name)
            if program is None:
                answer({"": {"status": "n/a", "reason": "no program for this framework"}})
                continue
            programs = {"": program, **workload.alternatives.get(name, {})}
            cells = {}
            for label, p in programs.items():
                cells[label], call = prepare_cell(p, framework, workload, quick, settings)
                if call is not None:
                    calls[label] = (call, cells[label]["number"])
            answer(cells)
        else:
            times = {}
            for label, (call, number) in list(calls.items()):
                try:
                    wall, share = _loop(call, number)
                except Exception as e:
                    times[label] = {"status": "error", "reason": _describe(e)}
                    del calls[label]
                else:
                    times[label] = [wall / number, share]
            answer(times)


# ---------------------------------------------------------------------------------------------
# Parent: one worker per framework, their loops interleaved, then the tables.


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
    except Exception:
        return "unknown BLAS"


def _git_revision(checkout: Path = ROOT) -> str:
    def git(*cmd):
        return subprocess.run(
            ["git", "-C", str(checkout), *cmd], capture_output=True, text=True, timeout=10
        ).stdout.strip()

    try:
        rev = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    return f"{rev or 'unknown revision'}{' + uncommitted changes' if dirty else ''}"


def machine_info(quick: bool, settings: Settings, baseline: Path | None = None) -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpu = child_cpu()
    binding = f"bound to CPU {cpu}" if cpu is not None else "not bound to a CPU"
    mode = "quick run" if quick else "full run"
    now = datetime.datetime.now().isoformat(timespec="seconds")
    return "\n".join(
        [
            f"autodiff benchmarks, {now}, {mode}: per cell, the fastest of {settings.repeat} "
            f"loops of >= {settings.min_time:g} s, one process per framework, their loops "
            "interleaved round-robin",
            f"CPU: {_cpu_model()} ({os.cpu_count()} logical CPUs, {usable} usable, load average "
            f"{os.getloadavg()[0]:.2f}); each framework in its own process, {binding}, 1 thread",
            f"Python {platform.python_version()} on {platform.platform()}",
            f"numpy {np.__version__} ({_blas()}), numba {_version('numba')}, "
            f"autograd {_version('autograd')}, torch {_version('torch')}, "
            f"jax {_version('jax')} (jaxlib {_version('jaxlib')})",
            f"autodiff: {ROOT} at {_git_revision()}",
            *([f"{BASELINE}: {baseline} at {_git_revision(baseline)}"] if baseline else []),
        ]
    )


class _Worker:
    """The parent's end of one column's worker process (see `worker`): framework `name`'s, or
    with `autodiff_from`, the baseline column's (autodiff imported from that checkout)."""

    def __init__(
        self,
        name: str,
        quick: bool,
        settings: Settings,
        log_dir: Path,
        autodiff_from: Path | None = None,
    ):
        env = child_environment()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        framework = "autodiff" if autodiff_from is not None else name
        cmd = [sys.executable, "-m", "benchmarks", "--child", framework]
        cmd += ["--repeat", str(settings.repeat)] + (["--quick"] if quick else [])
        cmd += ["--autodiff-from", str(autodiff_from)] if autodiff_from is not None else []
        self.name, self.timeout = name, settings.request_timeout
        self.log = open(log_dir / f"{name}.stderr", "w+")
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.failure: str | None = None
        self.request(None)  # its "ready"

    def request(self, message) -> dict | None:
        """Send `message` (None: none) and return the answer, or None once the worker failed
        (`failure` then says why)."""
        if self.failure is not None:
            return None
        try:
            if message is not None:
                self.proc.stdin.write(json.dumps(message) + "\n")
                self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
            line = self.proc.stdout.readline() if ready else None
        except OSError:  # (a broken pipe: the worker died)
            line = ""
        if line:
            return json.loads(line)
        if line is None:
            self.failure = f"worker timed out after {self.timeout:g} s"
        else:
            self.proc.wait(timeout=30)
            self.log.seek(0)
            last = (self.log.read().strip().splitlines() or [""])[-1]
            self.failure = f"worker failed: {last or f'exit status {self.proc.returncode}'}"
        self.proc.kill()
        return None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _failed(worker: _Worker) -> dict:
    return {"status": "error", "reason": worker.failure[:200]}


def run_workload(workers: dict[str, _Worker], workload: str, settings: Settings) -> dict:
    """{framework: cell (alternatives included)} for one workload: every worker prepares its
    cells, then `repeat` rounds of one timed loop per cell, framework after framework (the
    order rotating), each cell keeping its fastest loop."""
    cells: dict[str, dict] = {}
    for name, w in workers.items():
        cells[name] = w.request({"prepare": workload}) or {"": _failed(w)}
    names = list(workers)
    for round_ in range(settings.repeat):
        k = round_ % len(names)
        for name in names[k:] + names[:k]:
            running = [c for c in cells[name].values() if c["status"] == "ok"]
            if not running:
                continue
            times = workers[name].request({"time": True})
            if times is None:
                for cell in running:
                    cell.clear()
                    cell.update(_failed(workers[name]))
                continue
            for label, t in times.items():
                cell = cells[name][label]
                if isinstance(t, dict):  # (the call raised)
                    cell.clear()
                    cell.update(t)
                elif t[0] < cell["best"]:
                    cell["best"], cell["share"] = t
    results = {}
    for name, c in cells.items():
        main_cell = dict(c[""])
        alternatives = {label: cell for label, cell in c.items() if label}
        if alternatives:
            main_cell["alternatives"] = alternatives
        results[name] = main_cell
    return results


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
    results: dict[str, dict],
    workload_names: list[str],
    quick: bool,
    settings: Settings,
    baseline: Path | None = None,
) -> str:
    names = list(results)
    peers = [n for n in names if n not in (REFERENCE, JIT)] if REFERENCE in results else []
    # autodiff.jit's own ratios: against jax.jit, and against eager autodiff
    jit_peers = [n for n in ("jax.jit", REFERENCE) if n in results] if JIT in results else []
    header = [
        "workload",
        *names,
        *(f"ad/{p}" for p in peers),
        *(f"ad.jit/{'ad' if p == REFERENCE else p}" for p in jit_peers),
    ]
    rows = [
        [w]
        + [_time_cell(results[n][w]) for n in names]
        + [_ratio_cell(results[REFERENCE][w], results[p][w]) for p in peers]
        + [_ratio_cell(results[JIT][w], results[p][w]) for p in jit_peers]
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
        f"Times are per call: the fastest of {settings.repeat} loops of >= {settings.min_time:g} "
        "s each, one process per framework, the frameworks' loops interleaved round-robin. "
        "ad/X = autodiff time / X time (above 1: autodiff is slower)."
    )
    if BASELINE in names:
        notes.append(
            f"{BASELINE} = autodiff's programs with autodiff imported from {baseline}: "
            f"ad/{BASELINE} = this checkout's time / the baseline's (below 1: this checkout is "
            "faster)."
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


def _columns(framework_names: list[str], baseline: Path | None) -> list[str]:
    """The installed frameworks in order, and the baseline column right after autodiff's."""
    names = list(filter(_installed, framework_names))
    if baseline is not None:
        at = names.index(REFERENCE) + 1 if REFERENCE in names else len(names)
        names.insert(at, BASELINE)
    return names


def parent(
    workload_names: list[str],
    framework_names: list[str],
    startup: bool,
    quick: bool,
    settings: Settings,
    baseline: Path | None = None,
) -> None:
    print(machine_info(quick, settings, baseline), flush=True)
    print(f"thread settings: {' '.join(f'{k}={v!r}' for k, v in THREAD_ENV.items())}\n", flush=True)
    start = time.perf_counter()
    if workload_names:
        names = _columns(framework_names, baseline)
        results: dict[str, dict] = {n: {} for n in names}
        with tempfile.TemporaryDirectory() as logs:
            workers = {}
            try:
                for name in names:
                    source = baseline if name == BASELINE else None
                    workers[name] = _Worker(name, quick, settings, Path(logs), source)
                for w in workload_names:
                    t = time.perf_counter()
                    for name, cell in run_workload(workers, w, settings).items():
                        results[name][w] = cell
                    print(f"{w}: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
            finally:
                for worker_ in workers.values():
                    worker_.close()
        print(report(results, workload_names, quick, settings, baseline), flush=True)
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
    """`python -m benchmarks [--quick] [--only W,...] [--frameworks F,...] [--repeat N]
    [--baseline DIR]`.

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
        help="timed loops per cell, interleaved with the other frameworks' (default 8, quick 2), "
        "and processes per startup row "
        "(default 5, quick 1)",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        type=Path,
        help=f"add a column {BASELINE}: autodiff's programs with autodiff imported from the "
        f"checkout at DIR (e.g. a git worktree of an older commit), and the ratio "
        f"ad/{BASELINE}",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--autodiff-from", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.baseline is not None:
        args.baseline = args.baseline.resolve()
        if not is_autodiff_checkout(str(args.baseline)):
            parser.error(f"--baseline: no autodiff package in {args.baseline}")
    settings = Settings.of(args.quick, args.repeat)
    names = _names(args.only, [*WORKLOADS, STARTUP], "workload")
    workload_names = [n for n in names if n != STARTUP]
    if args.child:
        worker(args.child, args.quick, settings, args.autodiff_from)
    else:
        frameworks = _names(args.frameworks, FRAMEWORKS, "framework")
        parent(workload_names, frameworks, STARTUP in names, args.quick, settings, args.baseline)
    return 0
