"""Runs JAX's own test files, unmodified, on autodiff through the `jax` facade; prints pass counts.

Not run by CI. The test files are JAX 0.10.2's (needs absl-py)::

    for f in api_test lax_control_flow_test batching_test; do
        git -C <jax checkout> show jax-v0.10.2:tests/$f.py > <dir>/$f.py; done
    python tools/jax_suite/run.py --tests <dir> [--modes real,nojit,jit] [-k EXPR] [--clusters]
    python tools/jax_suite/run.py --report [--modes nojit,jit] --clusters   # counts again

Modes: ``real`` runs the files on the installed jax (with x64 enabled: autodiff computes in
float64 as NumPy does) and records the cases that pass there in real_passes.json; ``nojit``
runs them through the facade (facade/jax/, first on sys.path) with ``jax.jit`` the identity;
``jit`` with ``jax.jit`` = ``autodiff.jit``. A case is in scope when it passes on real JAX and
no pattern of OUT_OF_SCOPE names it; one the facade run lacks counts as failed. Outcomes and
first error lines go to --out; ``--clusters`` groups the failures by their error.
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REAL_PASSES = os.path.join(HERE, "real_passes.json")

# What the checker ran: file -> the test classes (None: all of them).
SELECTION = {
    "api_test.py": ["APITest", "RematTest"],
    "batching_test.py": None,
    "lax_control_flow_test.py": None,
}

# Cases outside the scope, by the reason: a regular expression on the case id.
OUT_OF_SCOPE = {
    "sharding, pmap, devices": r"[Pp]map|[Ss]hard|[Dd]evice|[Mm]esh|xla_computation|donat",
    "named-axis collectives (the pmap model)": r"Collective|AllToAll|AllGather|ArgAllReduce|"
    r"[Pp]sum|[Pp]max|[Pp]min|[Pp]permute|AxisIndex|axis_index|ReduceScatter|[Pp]swapaxes",
    "AOT lowering, compile counts and caches": r"lower|compiler_ir|[Cc]ompil|[Cc]ach|retrac",
}


def _run_file(tests_dir, name, classes, mode, out_dir, k):
    out = os.path.join(out_dir, f"{mode}-{name}.json")
    if tests_dir is None:  # --report: the outcomes of an earlier run
        with open(out) as f:
            return json.load(f)
    paths = [name] if classes is None else [f"{name}::{c}" for c in classes]
    env = dict(os.environ, JAX_SUITE_OUT=out, JAX_SUITE_JIT="1" if mode == "jit" else "0")
    # autodiff computes in float64 as NumPy does: the reference is JAX with x64 enabled.
    env["JAX_ENABLE_X64"] = "1"
    path = [HERE] if mode == "real" else [os.path.join(HERE, "facade"), ROOT, HERE]
    env["PYTHONPATH"] = os.pathsep.join(path)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "outcomes", "-p", "no:randomly"]
    command += ["-p", "no:cacheprovider", "-n", "0", "--noconftest", "--tb=no", "-rN"]
    command += ["-k", k] if k else []
    subprocess.run(command + paths, cwd=tests_dir, env=env, stdout=subprocess.DEVNULL, check=False)
    with open(out) as f:
        return json.load(f)


def _in_scope(case):
    return not any(re.search(p, case) for p in OUT_OF_SCOPE.values())


def _excluded(real_passes):
    for reason, pattern in OUT_OF_SCOPE.items():
        print(f"out of scope: {sum(bool(re.search(pattern, c)) for c in real_passes):4}  {reason}")


def _report(mode, results, real_passes):
    total_pass = total = 0
    for name, outcomes in results.items():
        cases = [c for c in real_passes if c.startswith(name + "::") and _in_scope(c)]
        passed = sum(outcomes.get(c) == "passed" for c in cases)
        print(f"{mode:6} {name:28} {passed:4} / {len(cases):4}")
        total_pass, total = total_pass + passed, total + len(cases)
    print(f"{mode:6} {'total':28} {total_pass:4} / {total:4}")


def _clusters(mode, out_dir, real_passes):
    """The in-scope failures grouped by their first error line (addresses blanked)."""
    groups: dict[str, list[str]] = {}
    for name in SELECTION:
        with open(os.path.join(out_dir, f"{mode}-{name}.json.errors")) as f:
            errors = json.load(f)
        for case in real_passes:
            if case.startswith(name + "::") and _in_scope(case) and case in errors:
                key = re.sub(r"0x[0-9a-f]+|\d+", "N", errors[case])[:110]
                groups.setdefault(key, []).append(case.split("::")[-1])
    for key, cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(cases):4}  {key}\n      e.g. {', '.join(sorted(cases)[:3])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", help="directory holding JAX's test files")
    parser.add_argument("--report", action="store_true", help="count the outcomes in --out")
    parser.add_argument("--modes", default="nojit,jit")
    parser.add_argument("--out", default="/tmp/jax_suite_out", help="outcome files go here")
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument("--clusters", action="store_true", help="group the failures")
    args = parser.parse_args()
    if (args.tests is None) != args.report:
        parser.error("give either --tests or --report")
    os.makedirs(args.out, exist_ok=True)
    if os.path.exists(REAL_PASSES):
        with open(REAL_PASSES) as f:
            _excluded(json.load(f))
    for mode in args.modes.split(","):
        results = {
            n: _run_file(args.tests, n, c, mode, args.out, args.k) for n, c in SELECTION.items()
        }
        if mode == "real":
            passes = sorted(c for r in results.values() for c, o in r.items() if o == "passed")
            with open(REAL_PASSES, "w") as f:
                json.dump(passes, f, indent=0)
        if not os.path.exists(REAL_PASSES):
            sys.exit(f"{REAL_PASSES} is missing: run --modes real first")
        with open(REAL_PASSES) as f:
            real_passes = json.load(f)
        _report(mode, results, real_passes)
        if args.clusters:
            _clusters(mode, args.out, real_passes)


if __name__ == "__main__":
    main()
