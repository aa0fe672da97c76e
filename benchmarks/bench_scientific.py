"""Derivatives beyond the chain rule, autodiff beside JAX (issue 36): Taylor mode, implicit
differentiation of a solver, ODE adjoints. Prints tables; asserts nothing.

Run (from the repository's root):

    python -m benchmarks.bench_scientific                  # all three parts
    python -m benchmarks.bench_scientific --only taylor    # one part (taylor, newton, ode)
    python -m benchmarks.bench_scientific --quick          # smoke run: small sizes, short loops

Every cell runs in a fresh process bound to one CPU, one thread per pool (frameworks.py), so
that its peak resident memory is its own: it builds its program, times the first call
(tracing and compiling included), then the per-call time (the min over `--repeat` loops of
at least `--min-time` each, after a warm-up), and checks its result against the reference
cell of its part.

- **taylor**: the k-th derivative of f(x) = tanh(sin(x) * x) at x = 0.7, for k = 1..10:
  `derivatives(f, order=k)` (Taylor mode, eager and under `jit`), k nested `grad`s (eager and
  under `jit`), and JAX's `jet` and nested `grad` under `jax.jit`. Reference: the Taylor
  coefficients of JAX's jet.
- **newton**: x*(p) solving F(x, p) = x + 0.5 tanh(W x) - p = 0 (n = 1,000, W random with
  spectral radius < 1, so Newton converges from 0), by 20 Newton steps with dense solves;
  the gradient of sum(x*(p)^2) w.r.t. p: implicit (`custom_root`, one transposed solve),
  unrolled (backpropagation through the 20 steps), JAX's `lax.custom_root` under `jax.jit`;
  beside the forward solve alone and one linear solve of the size.
- **ode**: the Van der Pol oscillator (mu = 5) over t in [0, 400] with 10^4 requested times:
  the gradient of sum(y(t_i)^2) w.r.t. y0 and mu by the adjoint method
  (`odeint(..., adjoint=True)` under `jit`), by backpropagation through the steps
  (`adjoint=False`, eager: its steps are chosen from values), and by
  `jax.experimental.ode.odeint` under `jax.jit`; beside the forward integration alone
  (under `jit`). Memory: the process's peak resident memory above its peak after setup.

A cell whose first call takes over `SLOW_CALL_S` is timed by that call alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

ORDERS = tuple(range(1, 11))
X0 = 0.7
NEWTON_N, NEWTON_STEPS = 1000, 20
ODE_MU, ODE_T, ODE_POINTS = 5.0, 400.0, 10_000
RTOL = ATOL = 1e-8
SLOW_CALL_S = 5.0  # a first call slower than this is timed once


# ---------------------------------------------------------------------------------------------
# The programs: build(framework, size) -> (call, result-of-interest as NumPy).


def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    return jax


def _taylor_f(xp):
    return lambda x: xp.tanh(xp.sin(x) * x)


def taylor(framework: str, order: int) -> Callable:
    if framework.startswith("jax"):
        jax = _jax()
        import jax.numpy as jnp
        from jax.experimental import jet

        f = _taylor_f(jnp)
        if framework == "jax-jet":
            series = [1.0] + [0.0] * (order - 1)

            def kth(x):
                return jet.jet(f, (x,), ((*series,),))[1][-1]  # (derivatives, not scaled)

            return jax.jit(kth)
        g = f
        for _ in range(order):
            g = jax.grad(g)
        return jax.jit(g)
    import autodiff as ad
    import autodiff.numpy as anp

    f = _taylor_f(anp)
    if framework.startswith("autodiff-jet"):
        kth = lambda x: ad.derivatives(f, order=order)(x)[-1]
    else:
        kth = f
        for _ in range(order):
            kth = ad.grad(kth)
    return ad.jit(kth) if framework.endswith("-jit") else kth


def _newton_problem(xp):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((NEWTON_N, NEWTON_N)) / (2.0 * math.sqrt(NEWTON_N))
    p0 = rng.standard_normal(NEWTON_N)

    def residual(x, p):
        return x + 0.5 * xp.tanh(w @ x) - p

    def jacobian(x):  # dF/dx = I + 0.5 diag(1 - tanh(Wx)^2) W
        s = 1.0 - xp.tanh(w @ x) ** 2
        return xp.eye(NEWTON_N) + 0.5 * s[:, None] * w

    def newton(x, p):
        return newton_of(lambda x: residual(x, p), x)

    def newton_of(f, x):  # (the solver custom_root calls: of f, whatever p is)
        for _ in range(NEWTON_STEPS):
            x = x - xp.linalg.solve(jacobian(x), f(x))
        return x

    return w, p0, residual, jacobian, newton, newton_of


def newton(framework: str, _size: int) -> Callable:
    if framework.startswith("jax"):
        jax = _jax()
        import jax.numpy as jnp

        _, p0, residual, jacobian, _, newton_of = _newton_problem(jnp)

        def solution(p):
            return jax.lax.custom_root(
                lambda x: residual(x, p),
                jnp.zeros(NEWTON_N),
                newton_of,
                lambda g, y: jnp.linalg.solve(jax.jacobian(g)(y), y),
            )

        grad = jax.jit(jax.grad(lambda p: jnp.sum(solution(p) ** 2)))
        return lambda: grad(p0)
    import autodiff as ad
    import autodiff.numpy as anp

    _, p0, residual, jacobian, solve_steps, newton_of = _newton_problem(anp)
    x0 = np.zeros(NEWTON_N)
    if framework == "autodiff-forward":
        return lambda: solve_steps(x0, p0)
    if framework == "autodiff-linear-solve":
        a, b = np.asarray(jacobian(x0 + 0.1)), p0
        return lambda: anp.linalg.solve(a, b)
    if framework == "autodiff-unrolled":
        grad = ad.grad(lambda p: anp.sum(solve_steps(x0, p) ** 2))
        return lambda: grad(p0)

    def solution(p):  # (as JAX's below: the linearized system solved densely)
        return ad.custom_root(
            lambda x: residual(x, p),
            x0,
            newton_of,
            lambda g, y: anp.linalg.solve(ad.jacfwd(g)(y), y),
        )

    grad = ad.grad(lambda p: anp.sum(solution(p) ** 2))
    return lambda: grad(p0)


def _vdp(xp):
    def rhs(y, t, mu):
        return xp.stack([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])

    return rhs


def ode(framework: str, _size: int) -> Callable:
    ts = np.linspace(0.0, ODE_T, ODE_POINTS)
    y0 = np.array([2.0, 0.0])
    if framework.startswith("jax"):
        jax = _jax()
        import jax.numpy as jnp
        from jax.experimental.ode import odeint

        rhs = _vdp(jnp)

        def loss(y0, mu):
            return jnp.sum(odeint(rhs, y0, ts, mu, rtol=RTOL, atol=ATOL) ** 2)

        grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
        return lambda: grad(y0, ODE_MU)
    import autodiff as ad
    import autodiff.numpy as anp
    from autodiff.scipy.integrate import odeint

    rhs = _vdp(anp)
    if framework == "autodiff-forward":
        forward = ad.jit(lambda y0, mu: odeint(rhs, y0, ts, args=(mu,), rtol=RTOL, atol=ATOL))
        return lambda: forward(y0, ODE_MU)
    adjoint = framework == "autodiff-adjoint"

    def loss(y0, mu):
        ys = odeint(rhs, y0, ts, args=(mu,), rtol=RTOL, atol=ATOL, adjoint=adjoint)
        return anp.sum(ys**2)

    grad = ad.grad(loss, argnums=(0, 1))
    if adjoint:  # (backpropagation through the steps needs the values: eager)
        grad = ad.jit(grad)
    return lambda: grad(y0, ODE_MU)


PARTS = {
    "taylor": (
        taylor,
        ["autodiff-jet", "autodiff-jet-jit", "autodiff-nested", "autodiff-nested-jit"]
        + ["jax-jet", "jax-nested"],
        ORDERS,
    ),
    "newton": (
        newton,
        ["autodiff-implicit", "autodiff-unrolled", "autodiff-forward", "autodiff-linear-solve"]
        + ["jax-custom_root"],
        (NEWTON_N,),
    ),
    "ode": (
        ode,
        ["autodiff-adjoint", "autodiff-backprop", "autodiff-forward", "jax-odeint"],
        (ODE_POINTS,),
    ),
}


# ---------------------------------------------------------------------------------------------
# One cell, in its own process.


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _as_numpy(value):
    if isinstance(value, (tuple, list)):
        return [_as_numpy(v) for v in value]
    return np.asarray(value, dtype=np.float64).tolist()


def run_cell(part: str, framework: str, size: int, min_time: float, repeat: int) -> dict:
    build, _, _ = PARTS[part]
    if part == "taylor":
        program = build(framework, size)
        call = lambda: program(X0)
    else:
        call = build(framework, size)
    setup_peak = _peak_rss_mib()
    start = time.perf_counter()
    first = call()
    first_time = time.perf_counter() - start
    if first_time > SLOW_CALL_S:  # (one call is the measurement)
        return {
            "first": first_time,
            "min": first_time,
            "peak_mib": _peak_rss_mib() - setup_peak,
            "result": _as_numpy(first),
        }
    warm = time.perf_counter()
    while time.perf_counter() - warm < min_time:
        call()
    number, times = 1, []
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        if time.perf_counter() - start >= min_time:
            break
        number *= 2
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - start) / number)
    return {
        "first": first_time,
        "min": min(times),
        "peak_mib": _peak_rss_mib() - setup_peak,
        "result": _as_numpy(first),
    }


def spawn_cell(part: str, framework: str, size: int, args) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    command = [sys.executable, "-m", "benchmarks.bench_scientific", "--cell", part, framework]
    command += [str(size), str(args.min_time), str(args.repeat)]
    if hasattr(os, "sched_setaffinity"):
        command = ["taskset", "-c", "0", *command]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=args.timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over {args.timeout:.0f} s"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no output)"]
        return {"error": lines[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Tables.


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _table(header: list, rows: list) -> str:
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]
    line = lambda r: " | ".join(str(c).rjust(w) for c, w in zip(r, widths))
    return "\n".join([line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])


def _cell_text(cell: dict, key: str) -> str:
    return cell.get("error", "") or _time(cell.get(key))


def _flat(result) -> np.ndarray:
    """A result's numbers (nested lists of arrays) as one vector."""
    if isinstance(result, list):
        return np.concatenate([_flat(r) for r in result]) if result else np.zeros(0)
    return np.ravel(np.asarray(result, dtype=np.float64))


def _agrees(cell: dict, reference: dict, rtol: float) -> bool:
    if "result" not in cell or "result" not in reference:
        return True
    got, want = _flat(cell["result"]), _flat(reference["result"])
    return got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=rtol)


def report(part: str, cells: dict) -> str:
    _, frameworks, sizes = PARTS[part]
    out = [f"## {part}"]
    for key, title in (("min", "per call (min)"), ("first", "first call")):
        rows = [[size, *[_cell_text(cells[f, size], key) for f in frameworks]] for size in sizes]
        out += [f"\n{title}\n", _table(["size", *frameworks], rows)]
    rows = [
        [size, *[f"{cells[f, size].get('peak_mib', float('nan')):.0f}" for f in frameworks]]
        for size in sizes
    ]
    out += ["\npeak memory above setup (MiB)\n", _table(["size", *frameworks], rows)]
    reference = {"taylor": "jax-jet", "newton": "autodiff-unrolled", "ode": "jax-odeint"}[part]
    rtol = {"taylor": 1e-9, "newton": 1e-8, "ode": 1e-4}[part]
    comparable = [f for f in frameworks if not f.endswith(("forward", "linear-solve"))]
    bad = [
        f"{f} at {s}"
        for f in comparable
        for s in sizes
        if not _agrees(cells[f, s], cells[reference, s], rtol)
    ]
    out.append(
        f"\nresults against {reference}: "
        + ("all agree" if not bad else "DIFFER: " + ", ".join(bad))
    )
    out.append(ratios(part, cells))
    return "\n".join(out)


def _ratio(a: dict, b: dict, key: str = "min") -> str:
    if key not in a or key not in b or not b[key]:
        return "-"
    return f"{a[key] / b[key]:.2f}x"


def ratios(part: str, cells: dict) -> str:
    if part == "taylor":
        top, one = ORDERS[-1], ORDERS[0]
        jet, jit = cells["autodiff-jet", top], cells["autodiff-jet-jit", top]
        lines = [
            f"order {top}: nested grad / jet (eager) {_ratio(cells['autodiff-nested', top], jet)}",
            f"order {top}: jet, jit / JAX's, jax.jit {_ratio(jit, cells['jax-jet', top])}",
            f"jet (eager) order {top} / order {one}: {_ratio(jet, cells['autodiff-jet', one])}"
            f" (quadratic growth: {top * top // (one * one)}x)",
        ]
    elif part == "newton":
        n = NEWTON_N
        implicit, forward = cells["autodiff-implicit", n], cells["autodiff-forward", n]
        solve = cells["autodiff-linear-solve", n]
        extra = "-"
        if all("min" in c for c in (implicit, forward, solve)):
            extra = f"{(implicit['min'] - forward['min']) / solve['min']:.2f} linear solves"
        lines = [
            f"implicit gradient beyond the forward solve: {extra}",
            f"unrolled / implicit {_ratio(cells['autodiff-unrolled', n], implicit)}",
            f"implicit / JAX custom_root {_ratio(implicit, cells['jax-custom_root', n])}",
        ]
    else:
        n = ODE_POINTS
        adjoint, forward = cells["autodiff-adjoint", n], cells["autodiff-forward", n]
        lines = [
            "adjoint peak memory / forward's: "
            + (
                f"{adjoint['peak_mib'] / max(forward['peak_mib'], 1e-9):.2f}x"
                if "peak_mib" in adjoint and "peak_mib" in forward
                else "-"
            ),
            f"adjoint / jax.experimental.ode.odeint {_ratio(adjoint, cells['jax-odeint', n])}",
            f"backprop / adjoint {_ratio(cells['autodiff-backprop', n], adjoint)}",
        ]
    return "\nratios: " + "; ".join(lines)


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="taylor,newton,ode")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--cell", nargs=5, metavar=("PART", "FW", "SIZE", "MIN", "REPEAT"))
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse(argv)
    if args.cell:
        part, framework, size, min_time, repeat = args.cell
        result = run_cell(part, framework, int(size), float(min_time), int(repeat))
        print(json.dumps(result))
        return
    if args.quick:
        args.min_time, args.repeat = 0.02, 2
    print(
        f"autodiff scientific benchmarks, {datetime.datetime.now().isoformat(timespec='seconds')}"
    )
    print(f"Python {platform.python_version()} on {platform.platform()}; load {os.getloadavg()}")
    for part in args.only.split(","):
        _, frameworks, sizes = PARTS[part]
        cells = {(f, s): spawn_cell(part, f, s, args) for s in sizes for f in frameworks}
        print(report(part, cells), flush=True)


if __name__ == "__main__":
    main()
