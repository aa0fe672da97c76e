"""What the compiled backend makes of a graph's shape beyond its equations: math in short
loops (vector versions through the loop vectorizer), constants of one value or of one
diagonal band (read as scalars and formulas, not memory), and views ending a segment (run by
NumPy on its output, not copied into it). Each against the NumPy executor."""

from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging.llvm import mathlib
from autodiff.staging.numba.codegen import Band
from autodiff.staging.numba.executor import _band, _repeats_one_value, llvm_enabled

pytestmark = pytest.mark.skipif(not llvm_enabled(), reason="the LLVM backend is off")

FUNCTIONS = sorted(mathlib.NAMES - {"expit"})


def _compiled(fun, *args):
    jitted = ad.jit(fun, backend="numba")
    outs = jitted(*args)
    graph = jitted.graph(*args)
    assert graph.numba_failure is None, graph.numba_failure
    return outs, graph


def _numpy(fun, *args):
    return ad.jit(fun, backend="numpy")(*args)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [3, 8, 12, 16, 24])
def test_math_in_short_loops(n, dtype):
    """Every function with a vector version, in loops shorter than the inlining threshold
    (some of them vectorized through the mapping, some too short for a vector)."""

    def f(x):
        y = anp.tanh(x) + anp.exp(x / 4) - anp.expm1(x / 8) + anp.sinh(x / 3) * anp.cosh(x / 5)
        z = anp.log(anp.abs(x) + 1) + anp.log1p(x * x) + anp.log2(x * x + 2) + anp.log10(x + 9)
        return anp.sin(y) * anp.cos(z) + anp.exp2(x / 7)

    x = np.linspace(-3.0, 3.0, n).astype(dtype)
    got, _ = _compiled(f, x)
    want = _numpy(f, x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=64 * np.finfo(dtype).eps, atol=0)


def test_short_loop_gradient_and_edges():
    """The chain benchmark's shape (one loop of 8 calling sin 50 times), its gradient, and
    the special values through the vector versions."""

    def f(x):
        for _ in range(50):
            x = anp.sin(x) * 1.01 + 0.1 * x
        return anp.sum(x)

    x = np.linspace(0.1, 0.9, 8)
    got, _ = _compiled(ad.grad(f), x)
    np.testing.assert_allclose(got, _numpy(ad.grad(f), x), rtol=1e-13)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**21, -(2.0**30), 1e-300])
    for name in ("sin", "cos", "exp", "log", "tanh"):
        fun = getattr(anp, name)
        with np.errstate(all="ignore"):
            got, _ = _compiled(fun, edges)
            want = _numpy(fun, edges)
        np.testing.assert_allclose(got, want, rtol=4e-16, atol=0, err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


def _rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_hessian_reads_its_basis_as_formulas():
    x = np.random.default_rng(0).standard_normal(40)
    got, graph = _compiled(ad.hessian(_rosenbrock), x)
    want = _numpy(ad.hessian(_rosenbrock), x)
    np.testing.assert_array_equal(got, want)  # (the same operations: the same bits)
    assert "else 0.0)" in graph.compiled.source and " == 0)" in graph.compiled.source
    # the transpose ending the graph is NumPy's view of the segment's output, as NumPy's is
    assert got.flags.f_contiguous and not got.flags.c_contiguous
    assert want.flags.f_contiguous


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.eye(5)[:, 1:], (0, 1, -1, 1, 5, 1.0)),
        (np.eye(6)[1:, :] * 2.0, (0, 1, 1, 0, 5, 2.0)),
        (np.where(np.eye(4, 7, k=2) > 0, -3.0, 0.0)[:, None, :], (0, 2, 2, 0, 4, -3.0)),
        (np.zeros((4, 9)), (0, 1, 0, 0, 0, 0)),
        (np.eye(8, dtype=np.int64)[2:6], (0, 1, 2, 0, 4, 1)),
    ],
)
def test_band_found(value, expected):
    band = _band(value)
    assert isinstance(band, Band)
    got = (band.row, band.col, band.offset, band.lo, band.hi, band.value)
    assert got == expected


def _with(value, index, entry):
    value = value.copy()
    value[index] = entry
    return value


@pytest.mark.parametrize(
    "value",
    [
        np.eye(5) + np.eye(5, k=1),  # two diagonals
        _with(np.eye(5), (2, 2), 3.0),  # two values
        _with(np.eye(5), (2, 2), 0.0),  # a gap
        _with(np.eye(5), (0, 3), -0.0),  # a negative zero off the band
        np.eye(5) * np.nan,  # NaN (never equal to itself)
        np.ones((3, 4, 5)),  # three long axes
        np.ones(7),  # one
        np.eye(3, dtype=np.complex128),
    ],
)
def test_band_refused(value):
    assert _band(value) is None


def test_one_repeated_value_bit_for_bit():
    assert _repeats_one_value(np.broadcast_to(2.0, (3, 4)))
    assert _repeats_one_value(np.full((3, 4), 100.0))
    assert _repeats_one_value(np.full(5, np.nan))
    assert not _repeats_one_value(np.array([0.0, -0.0]))
    assert not _repeats_one_value(np.array([1.0, 1.0 + 2**-52]))
    assert not _repeats_one_value(np.float64(3.0))
    assert not _repeats_one_value(np.zeros((0, 3)))


def test_written_out_uniform_constant_is_a_scalar():
    c = np.full((1, 30), 7.0)

    def f(x):
        return anp.sin(x * c) + c

    x = np.linspace(-1.0, 1.0, 30).reshape(1, 30)
    got, graph = _compiled(f, x)
    np.testing.assert_array_equal(got, _numpy(f, x))
    segment = graph.compiled.source.split("def segment", 1)[1]
    assert "v1[" in segment and "v2[" not in segment  # (x read by index, c a scalar)
