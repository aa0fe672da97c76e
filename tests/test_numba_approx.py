"""The Numba backend's vectorizable exp and tanh (autodiff/staging/numba/approx.py): within
3 ulp of NumPy on a dense sample of float64, exact at the edges, and used by jit."""

import numpy as np
import pytest

pytest.importorskip("numba")

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging.numba import approx, cache

LOOPS = """
import numpy as np


def exp_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


def tanh_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = _tanh(x[i])
"""
ULP_BOUND = 3


@pytest.fixture(scope="module")
def loops():
    source = "import numpy as np\n" + approx.SOURCE + LOOPS
    names = [*approx.FUNCTIONS, "exp_loop", "tanh_loop"]
    return cache.load(source, names, {"error_model": "numpy"}, approx.FUNCTIONS)


def _run(loop, x):
    out = np.empty_like(x)
    loop(x, out)
    return out


def _ulps(got, want):
    """Distance in units in the last place of `want` (finite, nonzero values)."""
    ok = np.isfinite(want) & (want != 0)
    return np.abs(got[ok] - want[ok]) / np.spacing(np.abs(want[ok]))


def test_tanh_within_bound_everywhere(loops):
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.linspace(-30.0, 30.0, 1_000_001),
            rng.standard_normal(200_000) * 4,
            np.geomspace(1e-310, 1.0, 100_001),
            -np.geomspace(1e-310, 1.0, 100_001),
        ]
    )
    got = _run(loops["tanh_loop"], x)
    assert _ulps(got, np.tanh(x)).max() <= ULP_BOUND
    assert np.all(np.abs(got) <= 1.0)


def test_exp_within_bound_everywhere(loops):
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            np.linspace(-745.0, 709.78, 1_000_001),
            rng.standard_normal(200_000) * 30,
            np.geomspace(1e-300, 1.0, 50_001),
            -np.geomspace(1e-300, 1.0, 50_001),
        ]
    )
    got, want = _run(loops["exp_loop"], x), np.exp(x)
    normal = want >= np.finfo(np.float64).tiny
    assert _ulps(got[normal], want[normal]).max() <= ULP_BOUND
    # subnormal results: one rounding, so within one subnormal step
    assert np.abs(got[~normal] - want[~normal]).max() <= np.spacing(0.0)


@pytest.mark.parametrize(
    "x", [0.0, -0.0, np.inf, -np.inf, np.nan, 19.99, 20.01, 1e-320, -1e-320, 5e-324, 0.5]
)
def test_tanh_edges(loops, x):
    got = _run(loops["tanh_loop"], np.array([x]))[0]
    want = np.tanh(x)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, rel=4e-16, abs=0.0)
        assert np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize(
    "x",
    [0.0, -0.0, np.inf, -np.inf, np.nan, 709.78, 709.7827, 709.79, 710.0, 1e4, -745.1, -745.2]
    + [-746.0, -1e4, 1e-300, -708.5, -720.0],
)
def test_exp_edges(loops, x):
    got = _run(loops["exp_loop"], np.array([x]))[0]
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x)
    if np.isnan(want):
        assert np.isnan(got)
    elif want == 0.0 or np.isinf(want) or want < np.finfo(np.float64).tiny:
        assert got == want or abs(got - want) <= np.spacing(0.0)
    else:
        assert abs(got - want) <= ULP_BOUND * np.spacing(want)


def test_jit_uses_them_and_agrees(monkeypatch):
    monkeypatch.setattr("autodiff.staging.numba.executor.numpy_simd", lambda: False)
    x = np.linspace(-5.0, 5.0, 4096)
    f = ad.jit(lambda x: anp.tanh(x) * anp.exp(-x * x), backend="numba")
    got = f(x)
    graph = f.graph(x)
    assert graph.numba_failure is None
    assert "_tanh(" in graph.compiled.source and "_exp(" in graph.compiled.source
    want = np.tanh(x) * np.exp(-x * x)
    np.testing.assert_allclose(got, want, rtol=8e-16, atol=1e-300)
    x32 = x.astype(np.float32)
    f32 = f(x32)
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, np.tanh(x32) * np.exp(-x32 * x32), rtol=3e-7, atol=1e-38)
