"""The disk cache of generated Numba code (autodiff/staging/numba/cache.py).

Numba reads NUMBA_CACHE_DIR when it is imported, so the tests about what a new process finds
on disk run children (`run_children`) with their own environment; the others set both the
variable and this process's `numba.config.CACHE_DIR`.
"""

import os
import subprocess
import sys
import tempfile
import threading

import numba
import numpy as np
import pytest

from autodiff.staging.call import wait_for_tier_up
from autodiff.staging.numba import cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ("inner", "run")
SOURCE = """
import numpy as np

def inner(x):
    return x * 2.0

def run(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += inner(x[i])
    return s
"""
X = np.arange(4.0)  # run(X) == 12.0

CHILD = """
import os, sys, time
import numpy as np
from autodiff.staging.call import wait_for_tier_up
from autodiff.staging.numba import cache

barrier, count = sys.argv[1], int(sys.argv[2])  # start loading together
open(os.path.join(barrier, str(os.getpid())), "w").close()
while len(os.listdir(barrier)) < count:
    time.sleep(0.001)
functions = cache.load({source!r}, {names!r})
value = functions["run"](np.arange(4.0))
stats = functions["run"].stats
print(value, sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def run_children(numba_cache_dir, count=1):
    """Start `count` processes loading SOURCE at once; each one's (run(X), hits, misses)."""
    barrier = tempfile.mkdtemp(dir=numba_cache_dir.parent)
    pythonpath = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(numba_cache_dir), PYTHONPATH=pythonpath)
    code = CHILD.format(source=SOURCE, names=NAMES)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code, barrier, str(count)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        value, hits, misses = out.split()
        results.append((float(value), int(hits), int(misses)))
    return results


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty NUMBA_CACHE_DIR, for autodiff and for this process's Numba, and an empty
    in-memory cache (once no background compile of an earlier test can write to them)."""
    assert wait_for_tier_up(timeout=600.0)
    directory = tmp_path / "numba-cache"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(directory))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(directory))
    monkeypatch.setattr(cache, "_modules", {})
    return directory


def module_files(directory):
    return sorted((directory / "autodiff-jit").glob("adjit_*.py"))


def numba_files(directory):
    return sorted(p for p in directory.rglob("adjit_*") if p.suffix in (".nbi", ".nbc"))


def test_values_and_identity_in_process(cache_dir):
    functions = cache.load(SOURCE, NAMES)
    assert all(isinstance(functions[name], numba.core.dispatcher.Dispatcher) for name in NAMES)
    assert functions["run"](X) == 12.0
    assert functions["inner"](1.5) == 3.0
    again = cache.load(SOURCE, NAMES)
    assert all(again[name] is functions[name] for name in NAMES)
    assert cache.load(SOURCE, ["run"])["run"] is functions["run"]
    other = cache.load(SOURCE.replace("2.0", "3.0"), NAMES)
    assert other["run"] is not functions["run"] and other["run"](X) == 18.0
    fast = cache.load(SOURCE, NAMES, {"fastmath": True})
    assert fast["run"] is not functions["run"] and fast["run"](X) == 12.0
    assert len(module_files(cache_dir)) == 3


def test_threads_get_the_same_dispatchers(cache_dir):
    results = [None] * 8

    def load(i):
        results[i] = cache.load(SOURCE, NAMES)["run"]

    threads = [threading.Thread(target=load, args=(i,)) for i in range(len(results))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result is results[0] for result in results)


def test_new_process_loads_from_disk(tmp_path):
    directory = tmp_path / "numba-cache"
    assert run_children(directory) == [(12.0, 0, 1)]
    assert run_children(directory) == [(12.0, 1, 0)]


def test_numba_cache_dir_is_respected(tmp_path):
    directory = tmp_path / "numba-cache"
    run_children(directory)
    (module,) = module_files(directory)
    assert module.read_text() == SOURCE
    indexes = [p for p in numba_files(directory) if p.suffix == ".nbi"]
    assert {p.name.split(".")[1].split("-")[0] for p in indexes} == set(NAMES)
    assert all(p.name.startswith(module.stem + ".") for p in indexes)
    assert not (module.parent / "__pycache__").exists()


def test_unwritable_directory_falls_back_to_temp(tmp_path, cache_dir, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "numba-cache"))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(blocker / "numba-cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    directory = cache.cache_directory()
    assert directory == str(tmp_path / "tmp" / f"autodiff-jit-{os.getuid()}")
    functions = cache.load(SOURCE, NAMES)
    assert functions["run"](X) == 12.0
    assert sys.modules[functions["run"].__module__].__file__.startswith(directory)
    # Numba, finding no NUMBA_CACHE_DIR, caches beside the module.
    assert functions["run"].stats.cache_path == os.path.join(directory, "__pycache__")


def test_no_writable_directory_runs_in_memory(tmp_path, cache_dir, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "numba-cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    assert cache.cache_directory() is None
    functions = cache.load(SOURCE, NAMES)
    assert functions["run"](X) == 12.0
    assert functions["run"].stats.cache_path is None  # compiled without cache
    assert not hasattr(sys.modules[functions["run"].__module__], "__file__")


def test_no_place_for_numba_files_compiles_uncached(tmp_path, cache_dir, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(blocker / "numba-cache"))
    monkeypatch.setattr(numba.config, "CACHE_LOCATOR_CLASSES", "UserProvidedCacheLocator")
    functions = cache.load(SOURCE, NAMES)
    assert functions["run"](X) == 12.0
    assert functions["run"].stats.cache_path is None
    assert len(module_files(cache_dir)) == 1


def test_concurrent_cold_start(tmp_path):
    directory = tmp_path / "numba-cache"
    assert [value for value, _, _ in run_children(directory, count=2)] == [12.0, 12.0]
    assert len(module_files(directory)) == 1
    assert not list(directory.rglob("*.tmp*"))
    assert run_children(directory) == [(12.0, 1, 0)]


def test_correct_module_file_is_not_rewritten(cache_dir, monkeypatch):
    cache.load(SOURCE, NAMES)
    (module,) = module_files(cache_dir)
    os.utime(module, ns=(0, 0))
    monkeypatch.setattr(cache, "_modules", {})
    assert cache.load(SOURCE, NAMES)["run"](X) == 12.0
    assert module.stat().st_mtime_ns == 0


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_module_file_is_replaced(cache_dir, monkeypatch, damage):
    cache.load(SOURCE, NAMES)
    (module,) = module_files(cache_dir)
    module.write_bytes(SOURCE.encode()[:40] if damage == "truncate" else os.urandom(64))
    monkeypatch.setattr(cache, "_modules", {})
    assert cache.load(SOURCE, NAMES)["run"](X) == 12.0
    assert module.read_text() == SOURCE


def damage_file(path, how):
    data = path.read_bytes()
    path.write_bytes({"garbage": os.urandom(len(data)), "truncate": data[: len(data) // 2]}[how])


@pytest.mark.parametrize("how", ["garbage", "truncate"])
@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
def test_corrupt_numba_files_are_rebuilt(cache_dir, monkeypatch, suffix, how):
    assert cache.load(SOURCE, NAMES)["run"](X) == 12.0
    damaged = [p for p in numba_files(cache_dir) if p.suffix == suffix]
    assert damaged
    for path in damaged:
        damage_file(path, how)
    monkeypatch.setattr(cache, "_modules", {})
    run = cache.load(SOURCE, NAMES)["run"]
    assert run(X) == 12.0
    assert sum(run.stats.cache_misses.values()) == 1
    monkeypatch.setattr(cache, "_modules", {})
    run = cache.load(SOURCE, NAMES)["run"]
    assert run(X) == 12.0
    assert sum(run.stats.cache_hits.values()) == 1


def test_corrupt_numba_files_across_processes(tmp_path):
    directory = tmp_path / "numba-cache"
    run_children(directory)
    for path in numba_files(directory):
        damage_file(path, "garbage")
    assert run_children(directory) == [(12.0, 0, 1)]
    assert run_children(directory) == [(12.0, 1, 0)]


def test_versions_are_in_the_key(cache_dir, monkeypatch):
    run = cache.load(SOURCE, NAMES)["run"]
    monkeypatch.setattr(cache, "_autodiff_version", lambda: "99.0")
    assert cache.load(SOURCE, NAMES)["run"] is not run
    monkeypatch.setattr(numba, "__version__", "0.0.0")
    cache.load(SOURCE, NAMES)
    assert len(module_files(cache_dir)) == 3
