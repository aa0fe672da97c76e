"""`import autodiff` loads no compiler and nothing else it does not need (issue 40's startup
target): Numba, llvmlite, SciPy, the distributed extra and the slow standard-library modules
load on first use. Checked in a fresh process, by what `import autodiff` adds to
`sys.modules`; no timing is asserted (benchmarks/startup.py and bench_compile.py measure it).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Top-level packages (a name covers its submodules) that `import autodiff` must not load.
NOT_AT_IMPORT = (
    "numba",  # the compiler: the kernels' tiering and jit's backend load it
    "llvmlite",
    "scipy",  # autodiff/sparse/ and the tests use it
    "dask",  # the distributed extra
    "distributed",
    "cloudpickle",
    "tqdm",
    "torch",  # the peers: autodiff never imports them
    "jax",
)
# Modules of the standard library (or NumPy's) that `import autodiff` does not need: loaded by
# the functions that use them. (hashlib and uuid are loaded by the jit's disk cache,
# autodiff/staging/numba/cache.py, at import.)
SLOW_MODULES = (
    "numpy.random",  # the torch face's generators make their streams on first use
    "concurrent.futures",  # executor=
    "logging",  # (with concurrent.futures)
    "traceback",  # anomaly mode's stacks
    "string",
)

PROBE = """
import json, sys
import numpy
before = set(sys.modules)
import autodiff
print(json.dumps({"numpy": sorted(before), "autodiff": sorted(set(sys.modules) - before)}))
"""


@pytest.fixture(scope="module")
def loaded() -> dict:
    """{"numpy": modules loaded by `import numpy`, "autodiff": those `import autodiff` adds}."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODIFF_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_loads_no_compiler_and_no_optional_package(loaded):
    found = [m for m in loaded["autodiff"] if m.split(".")[0] in NOT_AT_IMPORT]
    assert not found, f"`import autodiff` loaded {found}"


def test_import_loads_no_slow_module_it_does_not_need(loaded):
    expected = [m for m in SLOW_MODULES if m not in loaded["numpy"]]
    found = [m for m in loaded["autodiff"] if m in expected]
    assert not found, f"`import autodiff` loaded {found}"


def test_numpy_random_and_generators_on_first_use():
    """`autodiff.numpy.random` is NumPy's, and the default generator draws its seeded stream,
    once asked for."""
    import numpy as np

    import autodiff
    import autodiff.numpy as anp

    assert anp.random.default_rng is np.random.default_rng  # (numpy.random's own functions)
    from autodiff.numpy import random

    assert random is anp.random and random.RandomState is np.random.RandomState
    with pytest.raises(AttributeError):
        anp.no_such_name  # noqa: B018
    g = autodiff.Generator().manual_seed(5)
    state = g.get_state()
    first = g.random((3,))
    assert np.array_equal(first, np.random.Generator(np.random.PCG64(5)).random(3))
    g.set_state(state)
    assert np.array_equal(g.random((3,)), first)
    assert g.manual_seed(-1).initial_seed() == -1
    expected = np.random.Generator(np.random.PCG64(-1 & 0xFFFFFFFFFFFFFFFF)).random(2)
    assert np.array_equal(g.random((2,)), expected)
