"""The sparse benchmarks (benchmarks/bench_sparse.py): their hand-derived references are the
derivatives of their models, the CasADi models are the same functions, and a quick run
finishes with every result checked."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.sparse_workloads import SPARSE_WORKLOADS

ROOT = Path(__file__).resolve().parent.parent
STEP = 1e-30  # complex step: exact to rounding for these analytic models


def complex_step_jacobian(f, x):
    columns = []
    for j in range(len(x)):
        shifted = x.astype(complex)
        shifted[j] += STEP * 1j
        columns.append(np.atleast_1d(np.imag(f(shifted))) / STEP)
    return np.array(columns).T


def finite_difference_hessian(f, x, h=1e-4):
    """Central differences of the complex-step gradient (second order in h)."""
    gradient = lambda z: complex_step_jacobian(f, z)[0]
    columns = []
    for j in range(len(x)):
        step = np.zeros(len(x))
        step[j] = h
        columns.append((gradient(x + step) - gradient(x - step)) / (2 * h))
    return np.array(columns).T


@pytest.mark.parametrize("w", SPARSE_WORKLOADS, ids=lambda w: w.name)
def test_references_are_the_models_derivatives(w):
    size = w.sizes["quick"][0]
    x = w.inputs(size)
    f = w.function(np, size)
    reference = w.reference(size, x)
    if w.kind == "jacobian":
        expected = complex_step_jacobian(f, x)
        assert reference.nnz == np.count_nonzero(expected)
        np.testing.assert_allclose(reference.toarray(), expected, rtol=0, atol=1e-13)
    else:
        expected = finite_difference_hessian(f, x)
        assert reference.nnz == np.count_nonzero(np.abs(expected) > 1e-6)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(reference.toarray(), expected, rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("w", SPARSE_WORKLOADS, ids=lambda w: w.name)
def test_casadi_models_are_the_same_functions(w):
    ca = pytest.importorskip("casadi")
    size = w.sizes["quick"][0]
    x = w.inputs(size)
    symbols = ca.SX.sym("x", w.n(size))
    value = ca.Function("f", [symbols], [w.casadi(ca, symbols, size)])(ca.DM(x))
    expected = np.atleast_1d(w.function(np, size)(x))
    np.testing.assert_allclose(np.array(value).ravel(), expected, rtol=1e-13)


def test_quick_run_checks_every_result():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "benchmarks.bench_sparse", "--quick", "--repeat=1"]
    command += ["--frameworks=autodiff,autodiff-dense"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Every result matched its reference" in done.stdout, done.stdout
    for w in SPARSE_WORKLOADS:
        assert f"{w.name} " in done.stdout
