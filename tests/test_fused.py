"""Fused cotangents (kernels/fused.py): lazy expressions evaluate to what their operations give
one by one (NumPy blocks and compiled loops alike, bitwise, dtype kept), large expressions
split, compiled loops are cached on disk, and a fused backward pass gives the gradients of a
rule-by-rule one, with hooks, retain_grad and retained graphs."""

import os
import subprocess
import sys

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core import buffers
from autodiff.kernels import _numba, fused

RNG = np.random.default_rng(7)
N = 1003  # (not a multiple of any block or SIMD width)


def _expression(dtype):
    """A lazy expression using every operation, constants, a broadcast scalar and a shared
    part, and the same operations done one by one in NumPy."""
    x, y, z = (RNG.uniform(0.5, 2.0, N).astype(dtype) for _ in range(3))
    g = np.broadcast_to(dtype(1.5), (N,))
    shared = fused.multiply(fused.subtract(1.0, fused.multiply(x, x)), g)
    lazy = fused.add(shared, shared)
    lazy = fused.add(lazy, fused.negative(fused.divide(fused.multiply(y, 0.1), z)))
    lazy = fused.divide(lazy, fused.add(2, fused.multiply(z, y)))
    one = dtype(1.5) * (dtype(1) - x * x)
    want = (one + one - (y * dtype(0.1)) / z) / (dtype(2) + z * y)
    return lazy, want


@pytest.fixture
def numba_on():
    if _numba._import_numba() is None:
        pytest.skip("Numba is not installed")
    previous = _numba.set_numba_enabled(True)
    yield
    _numba.set_numba_enabled(previous)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_blocks_compute_each_operation_as_numpy_does(dtype, monkeypatch):
    monkeypatch.setattr(fused, "NUMPY_BLOCK", 64)
    monkeypatch.setattr(_numba, "_enabled", False)
    lazy, want = _expression(dtype)
    got = fused.evaluate(lazy)
    assert got.dtype == dtype and got.shape == (N,) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_loops_compute_each_operation_as_numpy_does(dtype, numba_on, monkeypatch):
    monkeypatch.setattr(fused, "COMPILE_NS", 0.0)  # (compile at the first evaluation)
    monkeypatch.setattr(fused, "_kernels", {})
    lazy, want = _expression(dtype)
    got = fused.evaluate(lazy)
    assert len(fused._kernels) == 1
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    again, _ = _expression(dtype)  # other arrays and constants: the same loop
    fused.evaluate(again)
    assert len(fused._kernels) == 1


def test_floating_point_errors_are_raised_as_numpy_raises_them(numba_on, monkeypatch):
    """Under `np.errstate(divide="raise")` a fused division by zero raises, as NumPy's does,
    also once the expression has a compiled loop (which would not)."""
    monkeypatch.setattr(fused, "COMPILE_NS", 0.0)
    x = np.linspace(-1.0, 1.0, 2 * N + 1)
    x[N] = 0.0
    lazy = fused.divide(fused.multiply(x, 2.0), x)
    with np.errstate(divide="ignore", invalid="ignore"):
        fused.evaluate(lazy)
    with np.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
        fused.evaluate(lazy)


def test_compiled_loops_wait_until_they_have_paid(numba_on, monkeypatch):
    monkeypatch.setattr(fused, "_kernels", {})
    monkeypatch.setattr(fused, "_fused_source_dir", lambda: None)  # (nothing cached on disk)
    monkeypatch.setattr(fused, "_sources", {})
    monkeypatch.setattr(fused._savings, "ns", {})
    lazy, want = _expression(np.float64)
    operations = len(fused._postorder(lazy))
    per_call = N * fused._NS_SAVED_PER_ELEMENT_OP * operations
    monkeypatch.setattr(fused, "COMPILE_NS", 2.5 * per_call)
    for _ in range(2):
        np.testing.assert_array_equal(fused.evaluate(lazy), want)
        assert not fused._kernels
    np.testing.assert_array_equal(fused.evaluate(lazy), want)
    assert len(fused._kernels) == 1


def test_compiled_loops_without_a_writable_cache(numba_on, monkeypatch):
    monkeypatch.setattr(fused, "COMPILE_NS", 0.0)
    monkeypatch.setattr(fused, "_kernels", {})
    monkeypatch.setattr(fused, "_sources", {})
    monkeypatch.setattr(fused, "_fused_source_dir", lambda: None)
    lazy, want = _expression(np.float64)
    np.testing.assert_array_equal(fused.evaluate(lazy), want)
    assert len(fused._kernels) == 1


def test_compiled_loops_are_cached_on_disk(tmp_path):
    """A loop compiled in one process is found in the next, which uses it at once."""
    pytest.importorskip("numba")
    code = (
        "import sys, numpy as np\n"
        "from autodiff.kernels import fused, tier_up\n"
        "tier_up()\n"
        "fused.COMPILE_NS = float(sys.argv[1])\n"
        "x = np.linspace(0.5, 2.0, 5000)\n"
        "lazy = fused.divide(fused.multiply(x, 3.0), fused.add(x, 1.0))\n"
        "np.testing.assert_array_equal(fused.evaluate(lazy), (x * 3.0) / (x + 1.0))\n"
        "print(len(fused._kernels))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTODIFF_", "NUMBA_"))}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    env["HOME"] = str(tmp_path)
    outputs = []
    for threshold in ("0", "1e30", "1e30"):  # compile; then found in the cache, twice
        result = subprocess.run(
            [sys.executable, "-c", code, threshold], env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout.split())
    assert outputs == [["1"], ["1"], ["1"]]
    sources = list((tmp_path / "autodiff" / "numba" / "fused").glob("fused_*.py"))
    assert len(sources) == 1


def test_large_expressions_are_evaluated_in_parts():
    arrays = [RNG.standard_normal(N) for _ in range(fused.MAX_INPUTS + 3)]
    lazy, want = fused.multiply(arrays[0], 1.0), arrays[0] * 1.0
    for a in arrays[1:]:
        lazy, want = fused.add(lazy, fused.multiply(a, a)), want + a * a
        assert len(lazy.inputs) <= fused.MAX_INPUTS and lazy.ops <= fused.MAX_OPS
    for _ in range(fused.MAX_OPS):
        lazy, want = fused.multiply(lazy, 0.5), want * 0.5
        assert lazy.ops <= fused.MAX_OPS
    np.testing.assert_array_equal(fused.evaluate(lazy), want)


def test_operands_that_do_not_fit_are_not_fused():
    x = RNG.standard_normal((300, fused.FUSE_MIN_SIZE // 300 + 1))
    assert fused.fusable(x, x, (x, 2.0))
    assert not fused.fusable(x, x, (np.asfortranarray(x),))  # (NumPy would keep F order)
    assert not fused.fusable(x, x, (x[:, :1],))  # broadcasting
    assert not fused.fusable(x, x, (x.astype(np.float32),))
    assert not fused.fusable(x[:2, :2], x[:2, :2], (x[:2, :2],))  # small
    assert not fused.fusable(x.astype(complex), x.astype(complex), ())
    assert fused.fusable(np.broadcast_to(1.0, x.shape), x, (x,))  # (a sum's cotangent)


def _loss(x, w):
    h = anp.tanh(x * w) * anp.exp(-x * x) + anp.log1p(x * x) / (1.0 + anp.sqrt(w * w))
    h = anp.sin(h) - anp.cos(x) * h
    return anp.sum(h * h, axis=1), h  # (a reduction over one axis: not fused)


def _gradients(fuse: bool, x0, w0, monkeypatch):
    monkeypatch.setattr(fused, "FUSE_MIN_SIZE", 1 if fuse else 1 << 62)
    x = ad.tensor(x0, requires_grad=True)
    w = ad.tensor(w0, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    rows, h = _loss(x, w)
    h.retain_grad()
    total = anp.sum(rows * anp.arange(rows.shape[0]))
    total.backward(retain_graph=True)
    total.backward()  # (the retained graph again: gradients accumulate)
    return x.grad.numpy(), w.grad.numpy(), h.grad.numpy(), seen


def test_a_fused_backward_pass_gives_the_rule_by_rule_gradients(monkeypatch):
    x0 = RNG.standard_normal((64, 300))
    w0 = RNG.standard_normal((64, 300))
    want = _gradients(False, x0, w0, monkeypatch)
    got = _gradients(True, x0, w0, monkeypatch)
    for a, b in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(a, b)
    assert len(got[3]) == len(want[3]) == 2
    for a, b in zip(got[3], want[3]):
        np.testing.assert_array_equal(a, b)


def test_a_fused_pass_recycles_the_residuals_it_read(monkeypatch):
    """Residuals a lazy cotangent held, which nothing else holds once it is evaluated, go to
    the pool of recycled memory (core/buffers.py) for the next call."""
    x = RNG.standard_normal(1 << 18)  # 2 MiB: above the pool's 1 MiB
    f = ad.grad(lambda x: anp.sum(anp.tanh(x) * anp.exp(-x * x)))
    buffers.clear()
    try:
        first = f(x)
        assert buffers.pooled_bytes() >= 3 * x.nbytes  # (tanh's and exp's outputs, -x)
        np.testing.assert_array_equal(f(x), first)
    finally:
        buffers.clear()


def test_fused_passes_in_threads(numba_on, monkeypatch):
    """Threads computing fused gradients at once, compiling the same expression's loop
    (`COMPILE_NS` 0) and recycling memory each in its own pool, get the same gradients."""
    import threading

    monkeypatch.setattr(fused, "COMPILE_NS", 0.0)
    monkeypatch.setattr(fused, "_kernels", {})
    x = RNG.standard_normal(fused.FUSE_MIN_SIZE + 17)
    f = ad.grad(lambda x: anp.sum(anp.tanh(x) * anp.exp(-x * x) + anp.log1p(x * x)))
    want = f(x)
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(f(x))
        except Exception as e:  # (reported below)
            errors.append(e)
        finally:
            buffers.clear()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 12
    for r in results:
        np.testing.assert_array_equal(r, want)
