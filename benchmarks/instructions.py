"""Instruction counts of autodiff's programs, this checkout against another, under callgrind.

Wall-clock times of two checkouts differ by noise of several percent on a shared machine;
instruction counts do not (the same binary, inputs and environment give the same count). For
each workload, a fresh process imports autodiff from the given checkout, builds the
workload's autodiff program, runs it `--warmup` times, then `--repeat` times more: the
difference between a run of `warmup + repeat` calls and one of `warmup` calls, divided by
`repeat`, is the count of one call, free of import and warm-up costs. The Numba kernels are
switched off (`AUTODIFF_DISABLE_NUMBA=1`) so that no compile lands in a count.

    python -m benchmarks.instructions --baseline ../base
    python -m benchmarks.instructions --only chain,scalar4 --baseline ../base

Needs valgrind (`apt-get install valgrind`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("chain", "scalar4", "mlp", "train_step", "double_backward", "hessian")

# The child: build one workload's autodiff program and call it `calls` times. It runs from
# this checkout's benchmarks package, with autodiff imported from `PYTHONPATH`'s checkout.
CHILD = """
import gc
import sys
sys.path.insert(1, {bench_root!r})
from benchmarks.suite import WORKLOADS
workload = WORKLOADS[{name!r}]
args = workload.make_inputs(False)
call = workload.programs["autodiff"](args, **workload.static_sizes(False))
call()
gc.collect()
gc.disable()  # (a collection falls on whichever call crosses its threshold)
for _ in range({calls}):
    call()
"""


def count(checkout: Path, name: str, calls: int) -> int:
    """Instructions of a whole process running `calls` calls of workload `name`."""
    env = dict(os.environ, PYTHONPATH=str(checkout), AUTODIFF_DISABLE_NUMBA="1", PYTHONHASHSEED="0")
    # One BLAS thread: a pool's start-up and spinning make the counts vary between runs.
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        script = CHILD.format(bench_root=str(ROOT), name=name, calls=calls)
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
            + [sys.executable, "-c", script],
            env=env,
            check=True,
            capture_output=True,
            cwd=tmp,
        )
        summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        if summary is None:
            raise RuntimeError(f"callgrind wrote no summary for {name}")
        return int(summary.group(1))


def per_call(checkout: Path, name: str, warmup: int, repeat: int) -> float:
    """Instructions of one call of workload `name`, import and warm-up subtracted."""
    count(checkout, name, 0)  # (writes the checkout's bytecode caches, which the others read)
    return (count(checkout, name, warmup + repeat) - count(checkout, name, warmup)) / repeat


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    parser.add_argument("--only", default=",".join(DEFAULT), help="comma-separated workloads")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args(argv)
    print(f"instructions per call (callgrind), {options.repeat} calls after {options.warmup}")
    print(f"{'workload':<18}{'baseline':>16}{'this':>16}{'this/base':>12}")
    for name in options.only.split(","):
        base = per_call(options.baseline.resolve(), name, options.warmup, options.repeat)
        this = per_call(ROOT, name, options.warmup, options.repeat)
        print(f"{name:<18}{base:>16,.0f}{this:>16,.0f}{this / base:>12.3f}")


if __name__ == "__main__":
    main()
