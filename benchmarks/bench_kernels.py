"""Fused elementwise backward kernels (autodiff/kernels/elementwise.py): Numba vs NumPy.

Run: python -m benchmarks.bench_kernels [--quick]
Prints
1. the first-call cost of each kernel: Numba import, compile into an empty cache, and load
   from a warm cache, each measured in a fresh process;
2. best-of-N microseconds of the NumPy formula and the Numba loop (through `fused_numba`,
   allocation included) by size and dtype, with an array or a broadcast-scalar cotangent:
   the crossover behind KERNEL_MIN_SIZE;
3. end to end, each in its own process on one CPU: the `elementwise` workload's gradient with
   the kernels on and off, and the plain NumPy forward evaluation it is compared with.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
KERNEL_NAMES = ("tanh_backward", "log1p_backward")
WORKLOAD_SIZE = 2**21


def best_seconds(f, repeat: int, min_time: float = 0.02) -> tuple[float, float]:
    """(best per-call seconds over `repeat` loops of >= min_time, CPU share of that loop)."""
    f()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            f()
        if time.perf_counter() - start >= min_time:
            break
        number *= 2
    best, share = float("inf"), 1.0
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(number):
            f()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if wall / number < best:
            best, share = wall / number, cpu / wall
    return best, share


def _run(code: str, *args: str, env: dict | None = None) -> str:
    """The stdout of `code` run in a fresh Python process, with `args` as sys.argv[1:]."""
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, cwd=ROOT
    )
    if result.returncode:
        raise RuntimeError(result.stderr)
    return result.stdout.strip()


FIRST_CALL = """
import time, numpy as np
from autodiff.kernels import _numba, elementwise as k
start = time.perf_counter(); _numba.numba_enabled(); imported = time.perf_counter() - start
g, a = np.ones(2 * k.KERNEL_MIN_SIZE), np.full(2 * k.KERNEL_MIN_SIZE, 0.5)
times = []
for kernel in (k.tanh_backward, k.log1p_backward):
    for dtype in (np.float64, np.float32):
        for gg in (g.astype(dtype), np.broadcast_to(dtype(1), a.shape)):
            start = time.perf_counter(); kernel(gg, a.astype(dtype))
            times.append(time.perf_counter() - start)
print(imported, *times)
"""


def first_call_costs() -> None:
    print("1. First call, each in a fresh process (ms)")
    cols = [f"{d}/{g}" for d in ("f64", "f32") for g in ("array g", "scalar g")]
    print(f"   {'':16s} {'import numba':>12s}  " + "  ".join(f"{c:>12s}" for c in cols))
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty cache", "warm cache"):
            ms = [1e3 * float(v) for v in _run(FIRST_CALL, env={"NUMBA_CACHE_DIR": cache}).split()]
            for i, name in enumerate(KERNEL_NAMES):
                row = ms[1 + 4 * i : 5 + 4 * i]
                imported = f"{ms[0]:12.0f}" if i == 0 else f"{'':12s}"
                print(
                    f"   {label if i == 0 else '':12s} {name:16s} {imported}  "
                    + "  ".join(f"{v:12.1f}" for v in row)
                )
    print()


def micro(quick: bool) -> None:
    from autodiff.kernels import elementwise as k

    loops = {
        "tanh_backward": (
            k._tanh_backward_loop,
            k._tanh_backward_scalar_loop,
            k.tanh_backward_numpy,
        ),
        "log1p_backward": (
            k._log1p_backward_loop,
            k._log1p_backward_scalar_loop,
            k.log1p_backward_numpy,
        ),
    }
    sizes = (2**8, 2**13, 2**21) if quick else (2**6, 2**8, 2**10, 2**12, 2**13, 2**16, 2**21)
    repeat = 3 if quick else 7
    print(
        f"2. Kernels alone: best of {repeat}, microseconds per call "
        f"(KERNEL_MIN_SIZE = {k.KERNEL_MIN_SIZE})"
    )
    print(
        f"   {'kernel':16s} {'dtype':8s} {'g':7s} {'size':>8s} {'numpy':>10s} {'numba':>10s}"
        f" {'speedup':>8s}"
    )
    rng = np.random.default_rng(0)
    for name, (loop, scalar_loop, numpy_impl) in loops.items():
        for dtype in (np.float64, np.float32):
            for kind in ("array", "scalar"):
                for n in sizes:
                    a = np.tanh(rng.standard_normal(n)).astype(dtype)
                    g = (
                        rng.standard_normal(n).astype(dtype)
                        if kind == "array"
                        else np.broadcast_to(dtype(1), (n,))
                    )
                    t_np, s_np = best_seconds(lambda: numpy_impl(g, a), repeat)
                    t_nb, s_nb = best_seconds(
                        lambda: k.fused_numba(loop, scalar_loop, g, a), repeat
                    )
                    busy = "~" if min(s_np, s_nb) < 0.9 else ""
                    print(
                        f"   {name:16s} {np.dtype(dtype).name:8s} {kind:7s} {n:8d} "
                        f"{1e6 * t_np:10.2f} {1e6 * t_nb:10.2f} {t_np / t_nb:7.1f}x{busy}"
                    )
    print()


END_TO_END = """
import os, sys, numpy as np
from benchmarks.bench_kernels import best_seconds
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
which, n, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.random.default_rng(0).standard_normal(n)
def loss(xp, x):
    return xp.sum(xp.tanh(x) * xp.exp(-x * x) + xp.log1p(x * x))
if which == "numpy-fwd":
    call = lambda: loss(np, x)
else:
    import autodiff as ad, autodiff.numpy as anp
    from autodiff.kernels import _numba
    _numba.set_numba_enabled(which == "kernels on")
    grad = ad.grad(lambda x: loss(anp, x))
    call = lambda: grad(x)
print(*best_seconds(call, repeat, 0.2))
"""


def end_to_end(quick: bool) -> None:
    n, repeat = (2**16, 2) if quick else (WORKLOAD_SIZE, 5)
    print(f"3. grad of sum(tanh(x)*exp(-x*x) + log1p(x*x)), x of {n:,} float64: ms per call,")
    print(f"   best of {repeat} loops of >= 0.2 s, each column in its own process on one CPU")
    times = {}
    for which in ("numpy-fwd", "kernels on", "kernels off"):
        best, share = map(float, _run(END_TO_END, which, str(n), str(repeat)).split())
        times[which] = best
        busy = "  ~ (busy machine: less than 90% of a CPU)" if share < 0.9 else ""
        print(f"   {which:12s} {1e3 * best:8.2f} ms{busy}")
    for which in ("kernels on", "kernels off"):
        print(f"   {which}: {times[which] / times['numpy-fwd']:.2f}x the NumPy forward")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args()
    first_call_costs()
    micro(args.quick)
    end_to_end(args.quick)


if __name__ == "__main__":
    main()
