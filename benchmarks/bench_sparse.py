"""Sparse Jacobians and Hessians, autodiff beside its peers (issue 38): per-call time, one-off
time, colors and peak memory, every result checked against a hand-derived reference.

Run (from the repository's root):

    python -m benchmarks.bench_sparse                       # every workload, size, framework
    python -m benchmarks.bench_sparse --quick               # smoke run: small sizes, short loops
    python -m benchmarks.bench_sparse --only brusselator --frameworks autodiff,asdex,casadi

Every cell (workload, size, framework) runs in a FRESH process (`--cell`), bound to one CPU
with every thread pool at one thread (frameworks.py), `--rounds` times (2 by default): a
row's cells one after the other, round-robin, the order rotating each round, so that the
two sides of a ratio run seconds apart and a slow spell of the shared machine falls on
both; each cell keeps its lowest times and its highest memory over the rounds. The process
times its framework's import, then the one-off cost (building the derivative: detection,
coloring, tracing, compiling, as the framework does them, and the first call, which waits
for its result), then the per-call time timeit-style (warm-up; loops of at least
`min_time`; the min and median per call over `repeat` loops), reads its peak resident memory
(VmHWM, import included; the peak right after the import is reported beside it),
and last checks the first result against the workload's reference (sparse_workloads.py):
the same structural pattern (for the sparse outputs) and values to a relative 1e-10. Disk
caches stay as they are (Numba's, where autodiff's kernels and compiled graphs are kept);
`--empty-numba-cache` gives each cell an empty one, so that its one-off compiles everything.

Columns (a framework that is not installed, or a size it is not run at, shows `n/a`):
- `autodiff`: `sparse_jacobian` / `sparse_hessian` (autodiff/sparse/jacobians.py), detected
  pattern, default backend; `autodiff-eager`: the same with AUTODIFF_NUMBA_EAGER=1 (Numba
  from the first call instead of once it pays).
- `autodiff-dense`: `ad.jit(ad.jacfwd(f))` / `ad.jit(ad.hessian(f))`, n <= 4096.
- `asdex`: `jax.jit` of `asdex.jacobian_from_coloring` / `hessian_from_coloring` after
  `asdex.jacobian_coloring` / `hessian_coloring` (global detection), BCOO output.
- `casadi`: an SX `Function` of `jacobian(f, x)` / `hessian(f, x)`, called on a DM.
- `jax-dense`: `jax.jit(jax.jacfwd(f))` / `jax.jit(jax.hessian(f))`, n <= 4096.
- `sparsejac`: `jax.jit(sparsejac.jacfwd(f, sparsity=P))` with the reference's pattern P
  given by hand (a Hessian: `jacfwd` of `jax.grad(f)`; column coloring, not star).

Colors: asdex's and sparsejac's own; autodiff's recomputed after the measurement with
`autodiff.sparse.color` on the detected pattern (the fewer of column and row colorings for a
Jacobian, as `mode="auto"` picks; star for a Hessian); CasADi's are its coloring of the
derivative's pattern (CasADi builds the derivative as an SX expression with it, and a call
evaluates that expression). The ratios divide per-call minima, or one-off times; "ours" is
the `autodiff` column.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.frameworks import bind_to_child_cpu, child_environment
from benchmarks.sparse_workloads import SPARSE_WORKLOADS, SparseWorkload, pattern_of
from benchmarks.tables import format_table, format_time

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 1e-10  # max |result - reference| / max |reference|
DENSE_MAX_N = 4096  # the dense columns run up to this many unknowns
OURS = "autodiff"
NOT_BUILT = "n/a (not built)"


@dataclass(frozen=True)
class Prepared:
    """A framework's derivative, built: `call()` computes it from the inputs (and waits for
    it); `to_host` turns its result into a SciPy sparse array or a NumPy array."""

    call: Callable[[], Any]
    colors: int | None
    to_host: Callable[[Any], Any]


class Skip(Exception):
    """The cell does not run (its message says why: it goes in the cell)."""


def _dense_only(w: SparseWorkload, size: int) -> None:
    if w.n(size) > DENSE_MAX_N:
        raise Skip(f"n/a (n > {DENSE_MAX_N})")


def _setup_jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    return jax


def _bcoo_to_scipy(out):
    import scipy.sparse as sp

    indices = np.asarray(out.indices)
    return sp.csr_array(
        (np.asarray(out.data), (indices[:, 0], indices[:, 1])), shape=tuple(out.shape)
    )


def prepare_autodiff(w: SparseWorkload, size: int, x: np.ndarray, pattern) -> Prepared:
    import autodiff.numpy as anp
    from autodiff.sparse import jacobians

    f = w.function(anp, size)
    build = jacobians.sparse_jacobian if w.kind == "jacobian" else jacobians.sparse_hessian
    derivative = build(f)
    return Prepared(lambda: derivative(x), None, lambda out: out)


def autodiff_colors(w: SparseWorkload, size: int, x: np.ndarray) -> int:
    """The colors `sparse_jacobian(mode="auto")` / `sparse_hessian` use on the detected
    pattern: the fewer of column and row colorings, or the star coloring (default order)."""
    import autodiff.numpy as anp
    from autodiff.sparse import color
    from autodiff.sparse.detect import hessian_sparsity, jacobian_sparsity

    f = w.function(anp, size)
    if w.kind == "hessian":
        return color(hessian_sparsity(f)(x), "star").ncolors
    pattern = jacobian_sparsity(f)(x)
    return min(color(pattern, kind).ncolors for kind in ("column", "row"))


def prepare_autodiff_dense(w: SparseWorkload, size: int, x: np.ndarray, pattern) -> Prepared:
    _dense_only(w, size)
    import autodiff as ad
    import autodiff.numpy as anp

    f = w.function(anp, size)
    derivative = ad.jit(ad.jacfwd(f) if w.kind == "jacobian" else ad.hessian(f))
    return Prepared(lambda: derivative(x), None, np.asarray)


def prepare_asdex(w: SparseWorkload, size: int, x: np.ndarray, pattern) -> Prepared:
    jax = _setup_jax()
    import asdex
    import jax.numpy as jnp

    f = w.function(jnp, size)
    xj = jnp.asarray(x)
    if w.kind == "jacobian":
        coloring = asdex.jacobian_coloring(f, xj)
        derivative = jax.jit(asdex.jacobian_from_coloring(f, coloring))
    else:
        coloring = asdex.hessian_coloring(f, xj)
        derivative = jax.jit(asdex.hessian_from_coloring(f, coloring))
    return Prepared(
        lambda: jax.block_until_ready(derivative(xj)), coloring.num_colors, _bcoo_to_scipy
    )


def prepare_casadi(w: SparseWorkload, size: int, x: np.ndarray, pattern) -> Prepared:
    import casadi as ca

    symbols = ca.SX.sym("x", w.n(size))
    expression = w.casadi(ca, symbols, size)
    if w.kind == "jacobian":
        derivative = ca.jacobian(expression, symbols)
        structure = derivative.sparsity()
        colors = min(structure.uni_coloring().size2(), structure.T.uni_coloring().size2())
    else:
        derivative = ca.hessian(expression, symbols)[0]
        colors = derivative.sparsity().star_coloring().size2()
    function = ca.Function("derivative", [symbols], [derivative])
    xd = ca.DM(x)
    return Prepared(lambda: function(xd), colors, lambda out: out.sparse())


def prepare_jax_dense(w: SparseWorkload, size: int, x: np.ndarray, pattern) -> Prepared:
    _dense_only(w, size)
    jax = _setup_jax()
    import jax.numpy as jnp

    f = w.function(jnp, size)
    derivative = jax.jit(jax.jacfwd(f) if w.kind == "jacobian" else jax.hessian(f))
    xj = jnp.asarray(x)
    return Prepared(lambda: jax.block_until_ready(derivative(xj)), None, np.asarray)


def prepare_sparsejac(w: SparseWorkload, size: int, x: np.ndarray, pattern) -> Prepared:
    jax = _setup_jax()
    import jax.numpy as jnp
    import sparsejac
    from jax.experimental.sparse import BCOO

    f = w.function(jnp, size)
    target = f if w.kind == "jacobian" else jax.grad(f)
    built = sparsejac.jacfwd(target, sparsity=BCOO.from_scipy_sparse(pattern))
    # sparsejac does not expose its number of colors: it is in the returned closure.
    cells = dict(zip(built.__code__.co_freevars, built.__closure__ or ()))
    colors = cells["ncolors"].cell_contents if "ncolors" in cells else None
    derivative = jax.jit(built)
    xj = jnp.asarray(x)
    return Prepared(lambda: jax.block_until_ready(derivative(xj)), colors, _bcoo_to_scipy)


@dataclass(frozen=True)
class Framework:
    """A column: its name, the modules it imports (timed apart from the one-off cost), how it
    builds its derivative, whether it is given the reference's pattern, and its environment."""

    name: str
    imports: tuple[str, ...]
    prepare: Callable[[SparseWorkload, int, np.ndarray, Any], Prepared]
    given_pattern: bool = False
    env: tuple[tuple[str, str], ...] = ()


_AUTODIFF = ("autodiff", "autodiff.numpy", "scipy.sparse")
_AUTODIFF_SPARSE = (*_AUTODIFF, "autodiff.sparse.jacobians", "autodiff.sparse.detect")
_JAX = ("jax", "jax.numpy")
FRAMEWORKS = (
    Framework(OURS, _AUTODIFF_SPARSE, prepare_autodiff),
    Framework(
        "autodiff-eager", _AUTODIFF_SPARSE, prepare_autodiff, env=(("AUTODIFF_NUMBA_EAGER", "1"),)
    ),
    Framework("autodiff-dense", _AUTODIFF, prepare_autodiff_dense),
    Framework("asdex", (*_JAX, "asdex", "scipy.sparse"), prepare_asdex),
    Framework("casadi", ("casadi", "scipy.sparse"), prepare_casadi),
    Framework("jax-dense", _JAX, prepare_jax_dense),
    Framework(
        "sparsejac",
        (*_JAX, "jax.experimental.sparse", "sparsejac", "scipy.sparse"),
        prepare_sparsejac,
        given_pattern=True,
    ),
)
BY_NAME = {f.name: f for f in FRAMEWORKS}
WORKLOADS = {w.name: w for w in SPARSE_WORKLOADS}
SPARSE_AUTODIFF = (OURS, "autodiff-eager")  # the columns whose colors autodiff_colors gives


@dataclass(frozen=True)
class Settings:
    """How long the per-call measurement runs."""

    warmup_time: float  # seconds of untimed calls (at least 3) after the first
    min_time: float  # seconds each timed loop lasts at least
    repeat: int  # timed loops; the min and the median per call are reported
    timeout: float  # seconds a cell's process may take

    @classmethod
    def of(cls, quick: bool, repeat: int | None, timeout: float | None) -> Settings:
        if quick:
            return cls(0.0, 0.005, repeat or 2, timeout or 120.0)
        return cls(1.0, 0.2, repeat or 7, timeout or 1200.0)


def time_calls(call: Callable[[], Any], settings: Settings) -> tuple[float, float]:
    """The min and the median seconds per call over `settings.repeat` timed loops."""
    start, calls = time.perf_counter(), 0
    while calls < 3 or time.perf_counter() - start < settings.warmup_time:
        call()
        calls += 1
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        if time.perf_counter() - start >= settings.min_time:
            break
        number *= 2
    per_call = []
    for _ in range(settings.repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        per_call.append((time.perf_counter() - start) / number)
    return min(per_call), statistics.median(per_call)


def _peak_rss_mib() -> float:
    """This process's peak resident memory, MiB. On Linux, VmHWM: `ru_maxrss` would count the
    parent's peak too, which it keeps across the exec that started this process."""
    status = Path("/proc/self/status")
    if status.exists():
        line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kiB (Linux)


def check(result: Any, reference) -> tuple[int | None, str | None]:
    """(the result's stored entries, or None if dense; what is wrong with it, or None): the
    same pattern as the reference if sparse, float64 values within TOLERANCE of it."""
    import scipy.sparse as sp

    if sp.issparse(result):
        matrix = sp.csr_array(result)
        matrix.sum_duplicates()
        matrix.sort_indices()
        nnz = matrix.nnz
        if matrix.shape != reference.shape:
            return nnz, f"shape {matrix.shape}, reference {reference.shape}"
        same = np.array_equal(matrix.indptr, reference.indptr) and np.array_equal(
            matrix.indices, reference.indices
        )
        if not same:
            return nnz, f"pattern differs from the reference's ({nnz} entries, {reference.nnz})"
        values, expected = matrix.data, reference.data
    else:
        nnz, values, expected = None, np.asarray(result), reference.toarray()
        if values.shape != expected.shape:
            return nnz, f"shape {values.shape}, reference {expected.shape}"
    if values.dtype != np.float64:
        return nnz, f"dtype {values.dtype}"
    error = np.max(np.abs(values - expected)) / np.max(np.abs(expected))
    if not np.isfinite(error) or error > TOLERANCE:
        return nnz, f"max relative error {error:.2e} against the reference"
    return nnz, None


def _import(framework: Framework) -> str | None:
    """Import the framework's modules; None, or why the cell does not run."""
    for module in framework.imports:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            # autodiff's own modules missing: the sparse ones, before issue 38's merge.
            ours = (error.name or "").startswith("autodiff")
            return NOT_BUILT if ours else f"n/a ({error.name} not installed)"
    return None


def run_cell(framework: Framework, w: SparseWorkload, size: int, settings: Settings) -> dict:
    """Measure one cell in this (fresh) process; the fields of the parent's tables."""
    bind_to_child_cpu()
    start = time.perf_counter()
    if (missing := _import(framework)) is not None:
        return {"status": missing}
    cell: dict[str, Any] = {"import": time.perf_counter() - start, "rss_import": _peak_rss_mib()}
    x = w.inputs(size)
    pattern = pattern_of(w.reference(size, x)) if framework.given_pattern else None
    try:
        start = time.perf_counter()
        prepared = framework.prepare(w, size, x, pattern)
        first = prepared.call()
        cell["oneoff"] = time.perf_counter() - start
    except Skip as skip:
        return {"status": str(skip)}
    cell["min"], cell["median"] = time_calls(prepared.call, settings)
    cell["rss_peak"] = _peak_rss_mib()
    cell["colors"] = prepared.colors
    if framework.name in SPARSE_AUTODIFF:
        cell["colors"] = autodiff_colors(w, size, x)
    reference = w.reference(size, x)
    cell["reference_nnz"] = reference.nnz
    cell["nnz"], cell["error"] = check(prepared.to_host(first), reference)
    cell["status"] = "ok"
    return cell


def spawn_cell(framework: Framework, w: SparseWorkload, size: int, args) -> dict:
    """Run one cell in a fresh process; its result, or why it failed."""
    if importlib.util.find_spec(framework.imports[0]) is None:
        return {"status": f"n/a ({framework.imports[0]} not installed)"}
    settings = Settings.of(args.quick, args.repeat, args.timeout)
    command = [sys.executable, "-m", "benchmarks.bench_sparse", "--cell", framework.name]
    command += [w.name, str(size)] + ["--quick"] * args.quick
    command += [f"--repeat={settings.repeat}"]
    env = child_environment() | dict(framework.env)
    try:
        with tempfile.TemporaryDirectory() as cache:
            if args.empty_numba_cache:
                env["NUMBA_CACHE_DIR"] = cache
            done = subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=settings.timeout
            )
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"no result within {settings.timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"status": "error", "error": reason}
    return json.loads(lines[-1])


def _cell_time(cell: dict, key: str) -> str:
    if cell["status"] != "ok":
        return cell["status"]
    mark = "!" if cell.get("error") else ""
    return format_time(cell[key]) + mark


def _per_call(cell: dict) -> str:
    if cell["status"] != "ok":
        return cell["status"]
    return f"{_cell_time(cell, 'min')} ({format_time(cell['median'])})"


def _colors(cell: dict) -> str:
    if cell["status"] != "ok":
        return cell["status"]
    return "-" if cell["colors"] is None else str(cell["colors"])


def _memory(cell: dict) -> str:
    if cell["status"] != "ok":
        return cell["status"]
    return f"{cell['rss_peak']:.0f} ({cell['rss_import']:.0f})"


def _ratio(numerator: dict, denominator: dict, key: str) -> str:
    if "ok" != numerator["status"] or "ok" != denominator["status"]:
        return "-"
    return f"{numerator[key] / denominator[key]:.2f}x"


RATIOS = (  # (heading, numerator column, denominator column, measure)
    ("ours/asdex", OURS, "asdex", "min"),
    ("ours/casadi", OURS, "casadi", "min"),
    ("jax-dense/ours", "jax-dense", OURS, "min"),
    ("one-off ours/asdex", OURS, "asdex", "oneoff"),
    ("one-off ours/casadi", OURS, "casadi", "oneoff"),
)


Rows = list[tuple[str, int | str, dict[str, dict]]]  # (label, the reference's nnz, {column: cell})


def _ratio_row(label: str, cells: dict[str, dict]) -> list[str]:
    missing = {"status": "-"}
    ratios = [_ratio(cells.get(a, missing), cells.get(b, missing), key) for _, a, b, key in RATIOS]
    return [label, *ratios]


def _import_time(rows: Rows, name: str) -> str:
    times = [cells[name]["import"] for _, _, cells in rows if cells[name]["status"] == "ok"]
    return format_time(statistics.median(times)) if times else "-"


def tables(rows: Rows, names: list[str]) -> str:
    """The report's tables, one column per framework in `names`."""
    table = lambda fmt: format_table(
        ["workload", *names],
        [[label, *(fmt(cells[name]) for name in names)] for label, _, cells in rows],
    )
    colors = format_table(
        ["workload", *names, "nnz"],
        [[label, *(_colors(cells[n]) for n in names), str(nnz)] for label, nnz, cells in rows],
    )
    sections = {
        "Per call: min (median) over the timed loops": table(_per_call),
        "One-off in a fresh process, import excluded (building the derivative: detection, "
        "coloring, tracing, compiling; and the first call)": table(
            lambda c: _cell_time(c, "oneoff")
        ),
        "Import (median over the cells)": format_table(
            ["", *names], [["import", *(_import_time(rows, n) for n in names)]]
        ),
        "Colors (dense: -); nnz: the reference's": colors,
        "Peak resident memory of the fresh process, MiB (right after the import)": table(_memory),
        "Ratios (per call: min; one-off)": format_table(
            ["workload", *(r[0] for r in RATIOS)],
            [_ratio_row(label, cells) for label, _, cells in rows],
        ),
    }
    return "\n\n".join(f"{title}\n\n{body}" for title, body in sections.items())


def notes(rows: Rows) -> list[str]:
    """One line per cell that failed its check or did not finish."""
    lines = []
    for label, _, cells in rows:
        for name, cell in cells.items():
            if cell.get("error"):
                lines.append(f"- {label}, {name}: {cell['status']}: {cell['error']}")
    return lines


def header(args) -> str:
    versions = []
    for package in ("numpy", "scipy", "numba", "jax", "asdex", "casadi", "sparsejac"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} -")
    settings = Settings.of(args.quick, args.repeat, args.timeout)
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return "\n".join(
        [
            f"autodiff sparse benchmarks, {datetime.datetime.now().isoformat(timespec='seconds')}, "
            f"at {revision or '?'}",
            f"Python {platform.python_version()} on {platform.platform()}; "
            f"load average {os.getloadavg()[0]:.2f}",
            ", ".join(versions),
            f"{args.rounds} round(s) of fresh processes per cell; in each, {settings.repeat} timed "
            f"loops of >= {settings.min_time} s after >= {settings.warmup_time} s of warm-up",
        ]
    )


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, short loops")
    parser.add_argument("--only", help="comma-separated workloads: " + ",".join(WORKLOADS))
    parser.add_argument("--frameworks", help="comma-separated columns: " + ",".join(BY_NAME))
    parser.add_argument("--repeat", type=int, help="timed loops per cell")
    parser.add_argument(
        "--rounds", type=int, help="fresh processes per cell, rows round-robin (default 2; 1 quick)"
    )
    parser.add_argument("--timeout", type=float, help="seconds per cell's process")
    parser.add_argument(
        "--empty-numba-cache",
        action="store_true",
        help="each cell's process compiles with an empty Numba cache (NUMBA_CACHE_DIR)",
    )
    parser.add_argument("--json", help="also write every cell's measurements to this file")
    parser.add_argument("--tables-from", help="print the tables of a --json file, measure nothing")
    parser.add_argument("--cell", help=argparse.SUPPRESS)  # FRAMEWORK WORKLOAD SIZE: a child
    parser.add_argument("cell_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for option, known in (("only", WORKLOADS), ("frameworks", BY_NAME)):
        chosen = getattr(args, option)
        unknown = set(chosen.split(",")) - set(known) if chosen else set()
        if unknown:
            parser.error(f"--{option}: unknown {', '.join(sorted(unknown))}")
    return args


def report(rows: Rows, names: list[str]) -> str:
    """The tables, then the cells that failed their check or did not finish, if any."""
    failures = notes(rows)
    if not failures:
        ending = "Every result matched its reference (pattern, and values to a relative 1e-10)."
    else:
        ending = "Notes:\n" + "\n".join(failures)
    return f"{tables(rows, names)}\n\n{ending}"


_LOWEST = ("import", "oneoff", "min", "median")  # over rounds: the least disturbed
_HIGHEST = ("rss_import", "rss_peak")


def merge(best: dict | None, cell: dict) -> dict:
    """Two rounds of one cell: the lowest times, the highest memory; a failure wins (it is
    never hidden by a round that passed)."""
    if best is None or cell["status"] != "ok" or cell.get("error"):
        return cell
    if best["status"] != "ok" or best.get("error"):
        return best
    merged = dict(cell)
    merged.update({key: min(best[key], cell[key]) for key in _LOWEST})
    merged.update({key: max(best[key], cell[key]) for key in _HIGHEST})
    return merged


def measure_row(w: SparseWorkload, size: int, args) -> dict[str, dict]:
    """A row's cells, `args.rounds` times round-robin (the order rotating), merged."""
    cells: dict[str, Any] = dict.fromkeys(args.names)
    for round_ in range(args.rounds):
        for name in args.names[round_:] + args.names[:round_]:
            cell = spawn_cell(BY_NAME[name], w, size, args)
            print(f"  {w.label(size)}, {name}: {_per_call(cell)}", file=sys.stderr, flush=True)
            cells[name] = merge(cells[name], cell)
    return cells


def measure(args) -> Rows:
    """Every selected cell, each in its fresh process, row by row."""
    workloads = [WORKLOADS[n] for n in args.only.split(",")] if args.only else SPARSE_WORKLOADS
    rows: Rows = []
    for w in workloads:
        for size in w.sizes["quick" if args.quick else "full"]:
            cells = measure_row(w, size, args)
            nnz = next((c["reference_nnz"] for c in cells.values() if c["status"] == "ok"), "-")
            rows.append((w.label(size), nnz, cells))
    return rows


def main(argv=None) -> None:
    args = parse(argv)
    if args.cell:
        workload, size = args.cell_args
        settings = Settings.of(args.quick, args.repeat, args.timeout)
        print(json.dumps(run_cell(BY_NAME[args.cell], WORKLOADS[workload], int(size), settings)))
        return
    args.names = args.frameworks.split(",") if args.frameworks else list(BY_NAME)
    args.rounds = args.rounds or (1 if args.quick else 2)
    if args.tables_from:
        rows = [tuple(row) for row in json.loads(Path(args.tables_from).read_text())]
        print(report(rows, [n for n in args.names if n in rows[0][2]]))
        return
    print(header(args), flush=True)
    rows = measure(args)
    print("\n" + report(rows, args.names))
    if args.json:
        Path(args.json).write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
