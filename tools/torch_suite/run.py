"""Run PyTorch's own autograd tests on autodiff and score them (see README.md here).

    python tools/torch_suite/run.py --pytorch /path/to/pytorch [--json out.json] [-k name] [-v]

`--pytorch` is a PyTorch source checkout (its `test/` directory is read, never copied):
`test/test_autograd.py` (classes TestAutograd, TestAutogradForwardMode) and
`test/autograd/test_functional.py` (TestAutogradFunctional) run unmodified, with `torch`
resolved to autodiff by the shim (shim/torch, torchshim/). `--oracle` runs the same files on
the installed PyTorch instead, to tell which cases fail there too.

Scoring: a test is excluded by design when it is skipped for a device this machine lacks,
when it raises the shim's OutOfScope (a `__torch_dispatch__` mode, LoggingTensor, the flop
counter, profiler internals, C++ extensions), or when its name or its error names one of the
clusters in EXCLUDED (CUDA, sparse, profiler internals, nested tensors, mkldnn, aten,
named tensors, C++ extensions, multiprocessing). A test's LoggingTensor variant is scored
as its plain variant. Expected failures count as passes, unexpected successes as failures
(as torch's runner counts them).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import re
import signal
import sys
import time
import traceback
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {
    "test_autograd.py": ("TestAutograd", "TestAutogradForwardMode"),
    "autograd/test_functional.py": ("TestAutogradFunctional",),
}
# category -> pattern on the test's name or on its error
EXCLUDED = {
    "cuda": r"cuda|gpu|_stream|multi_device|device_count",
    "sparse": r"sparse|coalesce|_coo|_csr",
    "profiler": r"profil|record_function|emit_nvtx|emit_itt|kineto|flop_count",
    "nested": r"nested_tensor|nestedtensor|jagged|\bnjt\b|torch\.nested",
    "mkldnn": r"mkldnn",
    "torch_dispatch": r"torch_dispatch|dispatch_mode|logging_tensor_mode|TorchDispatch|"
    r"python_dispatch|__torch_function__|torch_function",
    "aten": r"\baten\b|torch\.ops|has no attribute 'ops'",
    "named_tensors": r"named_tensor|refine_names|\bnames\b.*tensor|has no attribute 'names'",
    "cpp_extension": r"cpp_extension|load_inline|cpp_",
    "multiprocessing": r"multiprocessing",
}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout("test timed out")


class _Result(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.outcomes: dict[str, tuple[str, str]] = {}

    def _name(self, test) -> str:
        return f"{type(test).__name__}.{test._testMethodName}"

    def addSuccess(self, test):
        self.outcomes[self._name(test)] = ("pass", "")

    def addExpectedFailure(self, test, err):
        self.outcomes[self._name(test)] = ("pass", "expected failure")

    def addUnexpectedSuccess(self, test):
        self.outcomes[self._name(test)] = ("fail", "unexpected success (torch: expected failure)")

    def addSkip(self, test, reason):
        self.outcomes[self._name(test)] = ("skip", str(reason))

    def addFailure(self, test, err):
        self.outcomes[self._name(test)] = ("fail", _describe(err))

    def addError(self, test, err):
        self.outcomes[self._name(test)] = ("fail", _describe(err))

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self.outcomes[self._name(test)] = ("fail", _describe(err))


def _describe(err) -> str:
    exc_type, exc, tb = err
    if getattr(exc, "category", None):
        return f"OutOfScope[{exc.category}]: {exc}"
    frames = traceback.extract_tb(tb)
    where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    text = str(exc).strip()
    first = text.splitlines()[0][:300] if text else ""
    return f"{exc_type.__name__}: {first} [{where}]"


def _setup(oracle: bool, test_dir: str) -> None:
    if not oracle:
        sys.path.insert(0, os.path.join(HERE, "shim"))
        import torch  # noqa: F401  (the shim: torch is autodiff from here on)
    sys.path.insert(0, test_dir)


def _load(test_dir: str, relpath: str):
    path = os.path.join(test_dir, relpath)
    name = os.path.splitext(relpath)[0].replace("/", ".")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run(test_dir: str, oracle: bool, pattern: str | None, timeout: int) -> dict:
    """Run the files' classes; return {class: {test: (outcome, detail)}}."""
    _setup(oracle, test_dir)
    results: dict[str, dict] = {}
    signal.signal(signal.SIGALRM, _alarm)
    for relpath, classes in FILES.items():
        if not os.path.exists(os.path.join(test_dir, relpath)):
            print(f"(not found, skipped: test/{relpath})")
            continue
        module = _load(test_dir, relpath)
        for cls_name in classes:
            suite = unittest.TestLoader().loadTestsFromTestCase(getattr(module, cls_name))
            result = _Result()
            for test in suite:
                if pattern and pattern not in test._testMethodName:
                    continue
                signal.alarm(timeout)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        test.run(result)
                except _Timeout:
                    result.outcomes[result._name(test)] = ("fail", "timeout")
                finally:
                    signal.alarm(0)
            results[cls_name] = {k.split(".", 1)[1]: v for k, v in result.outcomes.items()}
    return results


def _exclusion(name: str, outcome: str, detail: str) -> str | None:
    m = re.match(r"OutOfScope\[(\w+)\]", detail)
    if m:
        return m.group(1)
    if outcome == "skip":
        return "cuda" if re.search("cuda|device", detail, re.I) else "skipped"
    for category, rx in EXCLUDED.items():
        if re.search(rx, name, re.I) or (outcome == "fail" and re.search(rx, detail)):
            return category
    return None


def _plain_variant(name: str, tests: dict) -> str | None:
    if "logging_tensor" not in name:
        return None
    for plain in (name.replace("logging_", "base_"), name.replace("_logging_tensor", "")):
        if plain in tests and plain != name:
            return plain
    return None


def score(results: dict) -> dict:
    """Per class: passed, in-scope, excluded by category, and the failures."""
    report = {}
    for cls, tests in results.items():
        excluded: collections.Counter = collections.Counter()
        passed, failures, variants = 0, {}, 0
        for name, (outcome, detail) in sorted(tests.items()):
            plain = _plain_variant(name, tests)
            if plain is not None:
                outcome, detail = tests[plain]
                variants += 1
            category = _exclusion(plain or name, outcome, detail)
            if category is not None:
                excluded[category] += 1
            elif outcome == "pass":
                passed += 1
            else:
                failures[name] = detail
        in_scope = len(tests) - sum(excluded.values())
        report[cls] = {
            "passed": passed,
            "in_scope": in_scope,
            "total": len(tests),
            "logging_tensor_variants_scored_by_plain": variants,
            "excluded": dict(excluded),
            "failures": failures,
        }
    return report


def _cluster(failures: dict) -> list[tuple[str, int]]:
    keys = collections.Counter(
        re.sub(r"\d+", "N", re.sub(r"\[.*?\]$", "", d))[:90] for d in failures.values()
    )
    return keys.most_common()


def _print(report: dict, verbose: bool) -> None:
    total_pass = total_in = 0
    excluded: collections.Counter = collections.Counter()
    for cls, r in report.items():
        total_pass += r["passed"]
        total_in += r["in_scope"]
        excluded.update(r["excluded"])
        pct = 100.0 * r["passed"] / max(r["in_scope"], 1)
        print(f"{cls}: {r['passed']}/{r['in_scope']} ({pct:.1f}%), {r['total']} collected, "
              f"excluded {dict(r['excluded'])}")  # fmt: skip
        if verbose:
            for name, detail in r["failures"].items():
                print(f"    FAIL {name}: {detail}")
    print(f"TOTAL: {total_pass}/{total_in} ({100.0 * total_pass / max(total_in, 1):.1f}%)")
    print(f"excluded by design: {sum(excluded.values())} {dict(excluded)}")
    failures = {k: v for r in report.values() for k, v in r["failures"].items()}
    print("failure clusters:")
    for key, n in _cluster(failures):
        print(f"  {n:3d}  {key}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pytorch", required=True, help="a PyTorch source checkout")
    parser.add_argument("--oracle", action="store_true", help="run on the installed torch")
    parser.add_argument("-k", dest="pattern", help="only tests whose name contains this")
    parser.add_argument("--json", help="write the per-test outcomes and the scores here")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every failure")
    args = parser.parse_args(argv)
    test_dir = os.path.join(args.pytorch, "test")
    if not os.path.isdir(test_dir):
        parser.error(f"--pytorch: no test/ directory in {args.pytorch}")
    start = time.time()
    results = run(test_dir, args.oracle, args.pattern, args.timeout)
    report = score(results)
    _print(report, args.verbose)
    print(f"({time.time() - start:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "report": report}, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
