"""The Numba backend's cost model for transcendental functions: NumPy's ufunc or a compiled loop.

Run: python -m benchmarks.bench_crossover [--quick]

For each transcendental ufunc the jit backend may lower (autodiff/staging/numba/executor.py,
TRANSCENDENTAL), the time of NumPy's ufunc into a preallocated output against a Numba loop
calling the same function per element, by size, float64, on one thread: the ratio
numba/numpy (below 1: the compiled loop is faster). NumPy has SIMD loops for these only
where it dispatches AVX-512 (X86_V4); `numpy_simd()` says which case this machine is, and
the backend sends large transcendental work to NumPy only then. The loop alone is timed
here; inside a fused loop the compiled form also saves writing and re-reading the result.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

FUNCTIONS = (
    "exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh "
    "arcsinh arccosh arctanh cbrt"
).split()


def _loops():
    import numba

    source = "\n".join(
        f"def loop_{n}(x, o):\n    for i in range(x.shape[0]):\n        o[i] = np.{n}(x[i])\n"
        for n in FUNCTIONS
    )
    namespace: dict = {"np": np}
    exec(source, namespace)
    return {n: numba.njit(error_model="numpy")(namespace[f"loop_{n}"]) for n in FUNCTIONS}


def _best(f, x, o, repeat: int) -> float:
    number = max(1, int(2e6 // x.size))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            f(x, o)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    args = parser.parse_args(argv)
    from autodiff.staging.numba.executor import SIMD_MIN_SIZE, numpy_simd

    sizes = (1 << 14,) if args.quick else (1 << 10, 1 << 14, 1 << 21)
    repeat = 2 if args.quick else 5
    loops = _loops()
    print(f"NumPy SIMD (AVX-512) transcendental loops here: {numpy_simd()}")
    print(f"the backend sends them to NumPy from {SIMD_MIN_SIZE} elements when they exist\n")
    print("numba loop time / numpy ufunc time (below 1: the compiled loop is faster)")
    print("function | " + " | ".join(f"n={n:>8}" for n in sizes))
    rng = np.random.default_rng(0)
    for name in FUNCTIONS:
        cells = []
        for n in sizes:
            x = rng.random(n) * 0.9 + (1.05 if name == "arccosh" else 0.0)
            o = np.empty_like(x)
            ufunc, loop = getattr(np, name), loops[name]
            loop(x, o)  # (compiles)
            numpy_time = _best(lambda a, b: ufunc(a, out=b), x, o, repeat)
            cells.append(f"{_best(loop, x, o, repeat) / numpy_time:10.2f}")
        print(f"{name:8} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
