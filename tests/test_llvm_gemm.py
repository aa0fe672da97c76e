"""The LLVM backend's matrix product (staging/llvm/gemm.py): the kernel called directly
against NumPy's matmul over a table of shapes (edges of its tiles and cache blocks), dtypes,
transposed and strided operands, NaN/inf/-0.0, threads at once, each host shape's code (the
AVX2 and SSE2 fallbacks run here too); then through `ad.jit`, values and gradients against
the NumPy executor."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
from test_llvm_backend import _all_llvm
from test_numba_backend import _numpy_jit

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging.llvm import engine, gemm, module

pytest.importorskip("llvmlite")

_I, _P = ctypes.c_int64, ctypes.c_void_p
_SIGNATURE = ctypes.CFUNCTYPE(None, _I, _I, _I, _P, _I, _I, _P, _I, _I, _P, _I, _P)
# (m, n, k): ones, primes, the tiles' edges (MR 4..8 rows, NR 8..48 columns), k across the
# k-blocks (256 float64, 512 float32), m across the m-blocks (192), n across the n-blocks
SHAPES = [
    (1, 1, 1),
    (1, 17, 3),
    (2, 16, 1),
    (7, 13, 5),
    (8, 24, 1),
    (17, 31, 29),
    (16, 48, 64),
    (24, 96, 7),
    (97, 101, 103),
    (3, 200, 50),
    (200, 3, 50),
    (9, 25, 520),
    (193, 49, 11),
    (5, 1601, 3),
]
TOLERANCE = {np.float64: 1e-12, np.float32: 2e-5}


def _call(function, a, b, out=None):
    (m, k), n = a.shape, b.shape[1]
    size = a.itemsize
    if out is None:
        out = np.empty((m, n), a.dtype)
    work = np.empty(gemm.workspace_bytes(m, n, k, a.dtype), np.uint8)
    strides = [s // size for s in (*a.strides, *b.strides)]
    function(m, n, k, a.ctypes.data, strides[0], strides[1], b.ctypes.data, strides[2],
             strides[3], out.ctypes.data, out.strides[0] // size, work.ctypes.data)  # fmt: skip
    return out


def _kernel(dtype):
    return _SIGNATURE(module.kernel_address(dtype))


def _close(got, a, b) -> None:
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + 1e-300
    assert np.all(np.abs(got - want) <= TOLERANCE[a.dtype.type] * scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shapes_against_numpy(dtype):
    rng = np.random.default_rng(0)
    function = _kernel(dtype)
    for m, n, k in SHAPES:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        _close(_call(function, a, b), a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transposed_and_strided_operands(dtype):
    rng = np.random.default_rng(1)
    function = _kernel(dtype)
    for m, n, k in [(13, 37, 29), (64, 50, 70)]:
        big_a = rng.standard_normal((2 * m + 1, 3 * k)).astype(dtype)
        big_b = rng.standard_normal((3 * k, 2 * n + 3)).astype(dtype)
        reversed_a, broadcast_a = big_a[::-1, ::-3][:m], np.broadcast_to(big_a[0, :k], (m, k))
        for a in (big_a[:m, :k], big_a[: 2 * m : 2, ::3], np.asfortranarray(big_a[:m, :k])):
            for b in (big_b[:k, :n], np.asfortranarray(big_b[:k, :n]), big_b[::3, 1::2][:k, :n]):
                _close(_call(function, a, b), a, b)
        for a in (reversed_a, broadcast_a):  # (negative and zero strides)
            _close(
                _call(function, a, big_b[k - 1 :: -1, ::-2][:, :n]),
                a,
                big_b[k - 1 :: -1, ::-2][:, :n],
            )
        out = np.zeros((m, n + 5), dtype)  # (C with a leading dimension past its width)
        _call(function, big_a[:m, :k], big_b[:k, :n], out[:, :n])
        _close(out[:, :n], big_a[:m, :k], big_b[:k, :n])
        assert not out[:, n:].any()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_inf_and_signed_zeros_as_blas(dtype):
    function = _kernel(dtype)
    m, n, k = 9, 26, 300  # (two k-blocks in float64: the second adds into C)
    a = np.ones((m, k), dtype)
    b = np.ones((k, n), dtype)
    a[1, 5], b[5, :] = np.inf, 0.0  # 0 * inf: NaN in row 1
    b[5, 3] = 1.0
    a[2, 280] = np.nan  # (in the second block)
    a[3, :], b[:, 7] = -0.0, -1.0  # (row 3: products +0.0 but column 7's)
    a[4, :] = -0.0  # row 4 @ a positive column: a sum of -0.0
    b[7, 9] = np.inf
    a[5, 7] = -np.inf  # -inf * inf in one column, -inf * 1 in the others
    got = _call(function, a, b)
    with np.errstate(all="ignore"):
        want = a @ b
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_threads_at_once():
    function = _kernel(np.float64)
    rng = np.random.default_rng(2)
    pairs = [(rng.standard_normal((61, 83)), rng.standard_normal((83, 59))) for _ in range(2)]
    failures: list = []

    def work(a, b):
        want = a @ b
        for _ in range(40):
            if not np.allclose(_call(function, a, b), want, rtol=1e-12, atol=1e-12):
                failures.append(1)

    threads = [threading.Thread(target=work, args=pair) for pair in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.parametrize("name", sorted(gemm.SHAPES))
def test_every_host_shape(name):
    """Each shape's code (the AVX-512 and AVX2 ones need those features: this host's)."""
    shape = gemm.SHAPES[name]
    have = engine.features()
    if gemm.host_shape(have).bits < shape.bits:
        pytest.skip(f"no {name} on this host")
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        ir = gemm.module_ir(dtype, shape, engine.header())
        compiled = engine.load_object(engine.optimize_to_object(ir), [gemm.symbol(dtype)], ir)
        function = _SIGNATURE(compiled.addresses[gemm.symbol(dtype)])
        for m, n, k in [(1, 1, 1), (13, 37, 29), (30, 17, 600)]:
            a = rng.standard_normal((m, k)).astype(dtype)
            b = np.asfortranarray(rng.standard_normal((k, n)).astype(dtype))
            _close(_call(function, a, b), a, b)
        compiled.release()


def test_blocking_and_selection():
    assert gemm.host_shape("+avx2,+fma,+avx512f").name == "avx512"
    assert gemm.host_shape("+avx2,+fma,-avx512f").name == "avx2"
    assert gemm.host_shape("+sse2,+avx2").name == "sse2"
    assert gemm.suits(200, 200, 200) and gemm.suits(2, 256, 256)
    assert not gemm.suits(1, 256, 256) and not gemm.suits(256, 8, 256)
    assert not gemm.suits(4096, 4096, 4096)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_through_jit(dtype):
    """Products that take the kernel (and gemv, and OpenBLAS's gemm for few columns), and a
    gradient through them, against the NumPy executor."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((40, 50)).astype(dtype)
    b = rng.standard_normal((50, 60)).astype(dtype)
    v = rng.standard_normal(50).astype(dtype)

    def f(a, b, v):
        products = (a @ b, a.T.T[::2] @ b, a[::-1] @ b[:, ::-1], (a @ b).T @ a)
        return (*products, a @ v, b.T @ v, v[::-1] @ b, a[:, :8].T @ a[:, :8])

    got, want = _all_llvm(f, a, b, v), _numpy_jit(f, a, b, v)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype] * 10, atol=TOLERANCE[dtype] * 10)
    loss = ad.grad(lambda a, b: anp.sum(anp.tanh(a @ b) * (a @ b)), argnums=(0, 1))
    got, want = _all_llvm(loss, a, b), _numpy_jit(loss, a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype] * 10, atol=TOLERANCE[dtype] * 10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blas_until_the_kernel_is_there(dtype):
    """A module reads the kernel's slot at each product: null (the kernel still compiling
    in the background) it calls BLAS, set it calls the kernel; the same values either way."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 50)).astype(dtype)
    b = rng.standard_normal((50, 60)).astype(dtype)
    address = module.kernel_address(dtype)
    jitted = ad.jit(lambda a, b: (a @ b, a[::-1] @ b.T.T), backend="numba")
    with_kernel = jitted(a, b)
    slot = module._slots[gemm.slot_symbol(dtype)]
    assert slot.value == address
    slot.value = None
    try:
        with_blas = jitted(a, b)
    finally:
        slot.value = module.kernel_address(dtype)
    want = _numpy_jit(lambda a, b: (a @ b, a[::-1] @ b), a, b)
    for kernel, blas, w in zip(with_kernel, with_blas, want):
        np.testing.assert_allclose(
            kernel, w, rtol=TOLERANCE[dtype] * 10, atol=TOLERANCE[dtype] * 10
        )
        np.testing.assert_allclose(blas, w, rtol=TOLERANCE[dtype] * 10, atol=TOLERANCE[dtype] * 10)
