"""Fused elementwise kernels: Numba and NumPy paths agree (values, dtypes, layouts), Numba stays
lazy and can be switched off, and the fused primitives differentiate and batch again."""

import os
import subprocess
import sys

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.kernels import _numba
from autodiff.kernels import elementwise as kernels
from autodiff.ops.elementwise import log1p_backward, tanh_backward
from autodiff.testing import check_grads

RNG = np.random.default_rng(0)
N = 3 * kernels.KERNEL_MIN_SIZE + 5  # above the threshold, and not a multiple of a SIMD width

# (kernel, its NumPy formula, a sampler of its second argument's domain)
KERNELS = {
    "tanh_backward": (
        kernels.tanh_backward,
        kernels.tanh_backward_numpy,
        lambda *s: np.tanh(RNG.standard_normal(s)),
    ),
    "log1p_backward": (
        kernels.log1p_backward,
        kernels.log1p_backward_numpy,
        lambda *s: RNG.uniform(-0.9, 3.0, s),
    ),
}
LOOPS = {
    "tanh_backward": (kernels._tanh_backward_loop, kernels._tanh_backward_scalar_loop),
    "log1p_backward": (kernels._log1p_backward_loop, kernels._log1p_backward_scalar_loop),
}


def _cotangents(shape, dtype):
    """Cotangents in the layouts the kernels meet: plain, broadcast scalar, strided, Fortran."""
    g = RNG.standard_normal(shape).astype(dtype)
    wide = RNG.standard_normal((*shape[:-1], 2 * shape[-1])).astype(dtype)
    return {
        "contiguous": g,
        "broadcast scalar": np.broadcast_to(dtype(1.5), shape),
        "strided": wide[..., ::2],
        "fortran": np.asfortranarray(g),
    }


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(N,), (3, N // 3)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_numba_path_matches_numpy(name, dtype, shape, order):
    _, numpy_impl, sample = KERNELS[name]
    a = np.asarray(sample(*shape), dtype, order=order)
    for layout, g in _cotangents(shape, dtype).items():
        got = kernels.fused_numba(*LOOPS[name], g, a)
        want = numpy_impl(g, a)
        assert got.dtype == want.dtype == dtype, layout
        assert got.shape == shape, layout
        # The same formula in the same dtype: at most rounding differences from instruction order.
        np.testing.assert_array_max_ulp(got, want, maxulp=1)


@pytest.mark.parametrize("name", KERNELS)
def test_dispatch_uses_numpy_when_disabled_small_or_mixed(name, monkeypatch):
    kernel, numpy_impl, sample = KERNELS[name]
    calls = []
    monkeypatch.setattr(kernels, "fused_numba", lambda *args: calls.append(args))
    a = sample(N)
    previous = _numba.set_numba_enabled(True)  # also when the suite runs with Numba disabled
    try:
        kernel(RNG.standard_normal(N), a)
        assert len(calls) == 1
        _numba.set_numba_enabled(False)
        kernel(RNG.standard_normal(N), a)
    finally:
        _numba.set_numba_enabled(previous)
    small = sample(kernels.KERNEL_MIN_SIZE - 1)
    kernel(RNG.standard_normal(small.shape), small)
    kernel(RNG.standard_normal(N).astype(np.float32), a)  # mixed dtypes: NumPy promotion
    kernel(RNG.standard_normal((2, N)), a)  # broadcasting
    kernel(RNG.standard_normal(N).astype(np.complex128), a.astype(np.complex128))
    assert len(calls) == 1


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_paths_give_the_same_values_and_dtype(name, dtype):
    kernel, numpy_impl, sample = KERNELS[name]
    a, g = sample(N).astype(dtype), RNG.standard_normal(N).astype(dtype)
    results = []
    for enabled in (True, False):
        previous = _numba.set_numba_enabled(enabled)
        try:
            results.append(kernel(g, a))
        finally:
            _numba.set_numba_enabled(previous)
    assert results[0].dtype == results[1].dtype == dtype
    np.testing.assert_array_max_ulp(results[0], results[1], maxulp=1)


def test_special_values_follow_numpy():
    y = np.array([np.inf, -np.inf, np.nan, 1.0, -1.0, 0.0] * kernels.KERNEL_MIN_SIZE)
    g = np.ones_like(y)
    np.testing.assert_array_equal(kernels.tanh_backward(g, y), kernels.tanh_backward_numpy(g, y))
    x = np.array([-1.0, -2.0, np.inf, np.nan, 0.0, -0.5] * kernels.KERNEL_MIN_SIZE)
    with np.errstate(divide="ignore"):  # (the Numba path cannot warn; NumPy's would)
        want = kernels.log1p_backward_numpy(g, x)
        got = kernels.log1p_backward(g, x)
    np.testing.assert_array_equal(got, want)


def _loss(x):
    return anp.sum(anp.tanh(x) * anp.exp(-x * x) + anp.log1p(x * x))


def _loss_gradient(x):
    t, e = np.tanh(x), np.exp(-x * x)
    return (1 - t * t) * e - 2 * x * t * e + 2 * x / (1 + x * x)


def test_gradient_without_numba_in_a_subprocess():
    code = (
        "import sys, numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        "x = np.linspace(-3, 3, 10**5)\n"
        "g = ad.grad(lambda x: anp.sum(anp.tanh(x) * anp.log1p(x * x)))(x)\n"
        "t = np.tanh(x)\n"
        "want = (1 - t * t) * np.log1p(x * x) + t * 2 * x / (1 + x * x)\n"
        "assert np.allclose(g, want, rtol=1e-13, atol=1e-13)\n"
        "print('numba' in sys.modules)\n"
    )
    env = dict(os.environ, AUTODIFF_DISABLE_NUMBA="1")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]


def test_small_problems_never_import_numba():
    code = (
        "import sys, numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        "x = np.linspace(-3, 3, 1000)\n"
        "ad.grad(lambda x: anp.sum(anp.tanh(x) * anp.log1p(x * x)))(x)\n"
        "print('numba' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AUTODIFF_DISABLE_NUMBA"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]


def test_kernels_tier_up_once_they_would_have_paid_for_numba():
    """Large problems run NumPy first, then load Numba once the kernels' savings reach
    TIER_UP_NS; AUTODIFF_NUMBA_EAGER=1 loads it on the first eligible call."""
    code = (
        "import sys, numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        "from autodiff.kernels import _numba\n"
        "_numba.TIER_UP_NS = 4e6\n"  # (the default would take about 2,300 calls here)
        "x = np.linspace(-3, 3, 1 << 17)\n"
        "f = ad.grad(lambda x: anp.sum(anp.tanh(x) * anp.log1p(x * x)))\n"
        "first = f(x)\n"
        "print('numba' in sys.modules)\n"
        "calls = 1\n"
        "while 'numba' not in sys.modules and calls < 10**4:\n"
        "    assert np.array_equal(f(x), first)\n"
        "    calls += 1\n"
        "print('numba' in sys.modules, _numba.tiered_up())\n"
        "np.testing.assert_array_max_ulp(f(x), first, maxulp=1)\n"
        "per_call = _numba._savings.ns / calls\n"  # (the same savings counted per call)
        "print(per_call > 0 and abs(calls - _numba.TIER_UP_NS / per_call) <= 1)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODIFF_")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "True", "True"]
    eager = (
        "import sys, numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        + code.split("\n", 1)[1].split("first = f(x)")[0]
        + "f(x)\nprint('numba' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", eager],
        env=dict(env, AUTODIFF_NUMBA_EAGER="1"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"]


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_gradient_both_paths(enabled, dtype):
    x = RNG.standard_normal(N).astype(dtype)
    previous = _numba.set_numba_enabled(enabled)
    try:
        g = ad.grad(_loss)(x)
        hvp = ad.jvp(ad.grad(_loss), (x,), (np.ones_like(x),))[1]
    finally:
        _numba.set_numba_enabled(previous)
    assert g.dtype == hvp.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(g, _loss_gradient(x.astype(np.float64)), rtol=tol, atol=tol)
    # The Hessian is diagonal: its action on ones is the derivative of the gradient.
    h = 1e-5
    x64 = x.astype(np.float64)
    want = (_loss_gradient(x64 + h) - _loss_gradient(x64 - h)) / (2 * h)
    np.testing.assert_allclose(hvp, want, rtol=1e-3 if dtype == np.float32 else 1e-7, atol=1e-4)


# ---- the fused primitives' own rules (second order, broadcasting, vmap) ----

PRIMITIVES = {
    "tanh_backward": (tanh_backward, lambda *s: RNG.uniform(-0.9, 0.9, s)),
    "log1p_backward": (log1p_backward, lambda *s: RNG.uniform(-0.5, 2.0, s)),
}
SHAPES = [((5,), (5,)), ((3, 1), (4,)), ((), (3, 2))]


@pytest.mark.parametrize("name", PRIMITIVES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("size", ["small", "large"])
def test_fused_primitive_derivatives(name, dtype, size):
    fun, sample = PRIMITIVES[name]
    shapes = SHAPES if size == "small" else [((N,), (N,))]
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float32 else {}
    for g_shape, a_shape in shapes:
        args = (RNG.standard_normal(g_shape).astype(dtype), sample(*a_shape).astype(dtype))
        check_grads(fun, args, order=2, modes=("fwd", "rev"), **tol)


@pytest.mark.parametrize("name", PRIMITIVES)
def test_fused_primitive_vmap_matches_loop(name):
    fun, sample = PRIMITIVES[name]
    g, a = RNG.standard_normal((3, 4)), sample(3, 4)
    cases = [  # in_axes, batched arguments, the arguments of example i
        ((0, 0), (g, a), lambda i: (g[i], a[i])),
        ((0, None), (g, a[0]), lambda i: (g[i], a[0])),
        ((None, 1), (g[0], a.T), lambda i: (g[0], a[i])),
    ]
    for in_axes, args, example in cases:
        got = ad.vmap(fun, in_axes=in_axes)(*args)
        want = np.stack([fun(*example(i)) for i in range(3)])
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_fused_primitive_vmap_of_vjp_matches_loop():
    x = RNG.standard_normal((2, 5))
    cts = RNG.standard_normal((3, 2, 5))

    def pull(ct):
        return ad.vjp(lambda x: anp.tanh(x) * anp.log1p(x * x), x)[1](ct)[0]

    np.testing.assert_allclose(
        ad.vmap(pull)(cts), np.stack([pull(c) for c in cts]), rtol=1e-14, atol=1e-15
    )
