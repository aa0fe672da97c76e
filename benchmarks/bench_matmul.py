"""The matrix products of the `mlp` gradient: NumPy's BLAS against torch's, product by product;
and the LLVM backend's own product kernel against NumPy's BLAS and jax.

Run: python -m benchmarks.bench_matmul            # the mlp gradient's products
     python -m benchmarks.bench_matmul --kernel   # the kernel (staging/llvm/gemm.py)
The `mlp` workload's gradient makes eight matrix products (three forward, five backward:
the input's cotangent is not needed). autodiff makes them with NumPy's `matmul`, so their
total is a floor for its time; this script prints that floor beside the same products in
torch (when installed), each with one thread, in microseconds per product (best of 9
runs of a loop of at least 0.1 s). It also prints the gradient's own time, by autodiff
and by hand in NumPy, and how much of it is not matrix products.

`--kernel` times gemm.py's kernel (called through ctypes, its packing buffer allocated once)
on square and batched-vjp-like shapes in float64 and float32, beside NumPy's `matmul` (its
OpenBLAS) and jax.jit's `matmul` (when installed, with 64-bit floats enabled): microseconds
per product, GFLOP/s, and the ratios ours/NumPy and ours/jax. Bind the process to one CPU
(`taskset -c 0`) for one-core figures.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import ctypes  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402

import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import autodiff.numpy as anp  # noqa: E402
from autodiff.staging.llvm import gemm, module  # noqa: E402
from benchmarks.workloads import mlp_gradient, mlp_inputs, mlp_loss  # noqa: E402


def best_us(f, repeat: int = 9) -> float:
    """Microseconds per call of `f`: the best of `repeat` loops of at least 0.1 s."""
    f()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < 0.1:
        f()
        n += 1
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def products(params, x, y) -> dict:
    """The mlp gradient's matrix products, as `label: (a, b)` (transposes are views, as the
    rules pass them)."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    d3 = h2 @ w3 + b3 - y
    d2 = d3 @ w3.T
    d1 = d2 @ w2.T
    return {
        "x @ w1": (x, w1),
        "h1 @ w2": (h1, w2),
        "h2 @ w3": (h2, w3),
        "d3 @ w3.T": (d3, w3.T),
        "h2.T @ d3": (h2.T, d3),
        "d2 @ w2.T": (d2, w2.T),
        "h1.T @ d2": (h1.T, d2),
        "x.T @ d1": (x.T, d1),
    }


KERNEL_SHAPES = [(64, 64, 64), (200, 200, 200), (64, 256, 256), (256, 256, 256), (512, 512, 512)]


def _kernel_call(dtype, a, b, out):
    """A call of gemm.py's kernel computing out = a @ b (its arguments prepared once)."""
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    function = ctypes.CFUNCTYPE(None, i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ptr, i64, ptr)(
        module.kernel_address(dtype)
    )
    (m, k), n = a.shape, b.shape[1]
    work = np.empty(gemm.workspace_bytes(m, n, k, dtype), np.uint8)
    args = (m, n, k, a.ctypes.data, k, 1, b.ctypes.data, n, 1, out.ctypes.data, n)
    return lambda: function(*args, work.ctypes.data)


def _jax_matmul():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    product = jax.jit(jax.numpy.matmul)
    return lambda a, b: lambda: product(a, b).block_until_ready()


def kernel_main() -> None:
    jax_product = _jax_matmul()
    print(f"{'dtype':8s} {'m x n x k':16s} {'ours':>8s} {'numpy':>8s} {'jax':>8s}   GFLOP/s")
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        for m, n, k in KERNEL_SHAPES:
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            out = np.empty((m, n), dtype)
            times = [
                best_us(_kernel_call(dtype, a, b, out)),
                best_us(lambda a=a, b=b: np.matmul(a, b, out=out)),
            ]
            if jax_product is not None:
                times.append(best_us(jax_product(a, b)))
            flops = [f"{2e-3 * m * n * k / t:.0f}" for t in times]
            cells = " ".join(f"{t:8.1f}" for t in times) + ("" if jax_product else f" {'-':>8s}")
            ratios = " ".join(
                f"ours/{w} {times[0] / t:.2f}" for w, t in zip(("numpy", "jax"), times[1:])
            )
            label = f"{np.dtype(dtype).name:8s} {f'{m}x{n}x{k}':16s}"
            print(f"{label} {cells}   {'/'.join(flops)}  {ratios}")


def main() -> None:
    params, x, y = mlp_inputs(128, (64, 256, 256, 10))
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    cases = products(params, x, y)
    print(f"{'product':12s} {'shapes':22s} {'numpy':>9s} {'torch':>9s}")
    total_np = total_torch = 0.0
    for label, (a, b) in cases.items():
        t_np = best_us(lambda a=a, b=b: a @ b)
        total_np += t_np
        shapes = f"{a.shape}x{b.shape}"
        if torch is None:
            print(f"{label:12s} {shapes:22s} {t_np:9.1f} {'-':>9s}")
            continue
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        t_torch = best_us(lambda ta=ta, tb=tb: ta @ tb)
        total_torch += t_torch
        print(f"{label:12s} {shapes:22s} {t_np:9.1f} {t_torch:9.1f}")
    line = f"{'total':12s} {'':22s} {total_np:9.1f}"
    print(line + (f" {total_torch:9.1f}" if torch is not None else ""))
    grad = ad.grad(partial(mlp_loss, anp))
    t_ad = best_us(lambda: grad(params, x, y))
    t_hand = best_us(lambda: mlp_gradient(params, x, y))
    print(
        f"\ngradient: autodiff {t_ad:.0f} us, by hand in NumPy {t_hand:.0f} us; "
        f"not matrix products: autodiff {t_ad - total_np:.0f} us"
    )
    if torch is not None:
        tp = [torch.from_numpy(p).requires_grad_() for p in params]
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        t_torch = best_us(lambda: torch.autograd.grad(mlp_loss(torch, tp, tx, ty), tp))
        print(f"torch {t_torch:.0f} us; not matrix products: {t_torch - total_torch:.0f} us")


if __name__ == "__main__":
    kernel_main() if "--kernel" in sys.argv[1:] else main()
