"""A differential fuzz of `jit`: random programs compiled (the LLVM backend, and Numba for
what it leaves) against the NumPy executor, values and gradients, float64 and float32.

Each program is drawn from a seed: a few inputs of shapes that broadcast together, then a
sequence of steps, each applying a random operation (unary, binary with broadcasting, a
reduction kept broadcastable, a slice, a concatenation, a transpose, a product) to values
made so far. Operations whose domain is restricted get operands mapped into it (`log1p`
of `abs`, `sqrt` of `abs`, `exp` of a bounded value), so that every value is finite and the
comparison is of arithmetic, not of NaN handling (the edge tables of test_numba_backend.py
and test_llvm_backend.py cover that).
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.kernels._numba import numba_available

pytestmark = pytest.mark.skipif(not numba_available(), reason="needs Numba (and llvmlite)")

UNARY = {
    "sin": anp.sin,
    "cos": anp.cos,
    "tanh": anp.tanh,
    "exp": lambda x: anp.exp(anp.tanh(x)),
    "log1p": lambda x: anp.log1p(anp.abs(x)),
    "sqrt": lambda x: anp.sqrt(anp.abs(x) + 1.0),
    "square": anp.square,
    "negative": anp.negative,
    "expit": lambda x: 1.0 / (1.0 + anp.exp(-x)),
}
BINARY = {
    "add": anp.add,
    "subtract": anp.subtract,
    "multiply": anp.multiply,
    "maximum": anp.maximum,
    "minimum": anp.minimum,
    "where": lambda x, y: anp.where(x > y, x, y * 0.5),
    "divide": lambda x, y: x / (anp.abs(y) + 1.0),
}
SEEDS = range(48)


def _program(seed: int):
    """(f, input shapes): `f` a random program of 2-3 inputs (see the module docstring)."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 6)), int(rng.integers(3, 40))
    shapes = [(m, n), (n,), (m, 1)][: int(rng.integers(2, 4))]
    steps = []
    for _ in range(int(rng.integers(4, 14))):
        kind = rng.choice(["unary", "binary", "binary", "reduce", "slice", "concat", "matmul"])
        steps.append((str(kind), int(rng.integers(0, 1 << 30))))

    def f(*xs):
        values = list(xs)
        for kind, choice in steps:
            pick = np.random.default_rng(choice)
            x = values[int(pick.integers(len(values)))]
            y = values[int(pick.integers(len(values)))]
            values.append(_step(kind, pick, x, y))
        return anp.sum(values[-1] * values[-1]) + anp.sum(values[-2])

    return f, shapes


def _step(kind: str, pick, x, y):
    if kind == "unary":
        return UNARY[str(pick.choice(sorted(UNARY)))](x)
    if kind == "binary":
        return BINARY[str(pick.choice(sorted(BINARY)))](x, y) if _broadcast(x, y) else x * 0.5
    if kind == "reduce" and x.ndim:
        axis = int(pick.integers(x.ndim))
        reduce = anp.sum if pick.integers(2) else anp.max
        return reduce(x, axis=axis, keepdims=True)
    if kind == "slice" and x.ndim and x.shape[-1] > 2:
        return x[..., 1:] - x[..., :-1]
    if kind == "concat" and x.ndim:
        return anp.concatenate([x, anp.sin(x)], axis=-1)[..., : x.shape[-1]]
    if kind == "matmul" and x.ndim == 2:
        return anp.tanh(x @ anp.transpose(x)) @ x
    return anp.cos(x)


def _broadcast(x, y) -> bool:
    try:
        np.broadcast_shapes(np.shape(x), np.shape(y))
    except ValueError:
        return False
    return True


def _inputs(shapes: list, dtype, seed: int) -> list:
    rng = np.random.default_rng(seed + 1000)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_programs_compiled_agree_with_the_numpy_executor(seed):
    f, shapes = _program(seed)
    for dtype, rtol in ((np.float64, 1e-11), (np.float32, 2e-4)):
        xs = _inputs(shapes, dtype, seed)
        compiled = ad.jit(f, backend="numba")
        want = ad.jit(f, backend="numpy")(*xs)
        got = compiled(*xs)
        graph = compiled.graph(*xs)
        assert graph.numba_failure is None, graph.numba_failure
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-2)
        if dtype == np.float64:
            argnums = tuple(range(len(xs)))
            grads = ad.jit(ad.grad(f, argnums), backend="numba")(*xs)
            expected = ad.jit(ad.grad(f, argnums), backend="numpy")(*xs)
            for g, e in zip(grads, expected):
                np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
