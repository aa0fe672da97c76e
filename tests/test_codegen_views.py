"""Data movement read in place by compiled loops (autodiff/staging/numba/views.py).

Slices, rolls, reshapes, concatenations, stacks, flips, transposes and broadcasts whose
readers are all loops of one segment get no array and no loop of their own: each reader
reads their operands at the composed index. Every case here is compared bit for bit (values,
dtypes, signed zeros) with the NumPy executor, on the LLVM backend and on the Numba
reference (`AUTODIFF_LLVM=0`), and the generated source is checked to hold no loop for
them; the Brusselator's sparse Jacobian equals its dense one.
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging.numba.executor import set_llvm_enabled
from autodiff.staging.numba.views import paren, reshape_access, roll_access


def _compiled(f, *args, llvm: bool):
    previous = set_llvm_enabled(llvm)
    try:
        jitted = ad.jit(f, backend="numba")
        outs = jitted(*args)
        graph = jitted.graph(*args)
    finally:
        set_llvm_enabled(previous)
    assert graph.numba_failure is None, graph.numba_failure
    return outs, graph


def _flat(outs) -> list:
    return [np.asarray(o) for o in (outs if isinstance(outs, (tuple, list)) else [outs])]


def _same(got, want, rtol: float) -> None:
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        if rtol:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=0)
            continue
        np.testing.assert_array_equal(g, w)
        if w.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def check(f, *args, loops: int | None = None, rtol: float = 0.0) -> str:
    """`f` compiled, on both backends, equals the NumPy executor's (bit for bit; within
    `rtol` where a reduction adds in another order than NumPy's pairwise sums); the segment
    source has at most `loops` loop nests. Returns the source."""
    want = ad.jit(f, backend="numpy")(*args)
    source = ""
    for llvm in (True, False):
        got, graph = _compiled(f, *args, llvm=llvm)
        _same(got, want, rtol)
        source = graph.compiled.source
        if llvm:
            assert graph.compiled.numba_segments == 0, graph.compiled.llvm_fallbacks
    if loops is not None:
        assert source.count("\n    for ") <= loops, source
    return source


RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 8))
Y = RNG.standard_normal((6, 8))
V = RNG.standard_normal(48)


# ---- index expressions ----


def test_reshape_access_splits_and_refuses_merges():
    assert reshape_access((12, 1024), (12, 32, 32), ["a", "b", "c"]) == ["a", "b * 32 + c"]
    assert reshape_access((6,), (1, 2, 1, 3), ["a", "b", "c", "d"]) == ["b * 3 + d"]
    assert reshape_access((2, 1, 3), (6,), ["a"]) is None  # (a merge: a division)
    assert reshape_access((4, 6), (6, 4), ["a", "b"]) is None
    assert reshape_access((1, 1), (1,), ["a"]) == ["0", "0"]


def test_roll_access_wraps_around():
    expr = roll_access([(0, 7), (1, 0)], "i")  # (np.roll by 1 of 8: parts x[7:], x[:7])
    assert [eval(expr, {"i": i}) for i in range(8)] == [7, 0, 1, 2, 3, 4, 5, 6]
    assert paren("i1") == "i1" and paren("(a + b)") == "(a + b)" and paren("a + b") == "(a + b)"
    assert paren("(a) + (b)") == "((a) + (b))"


# ---- slices ----


@pytest.mark.parametrize(
    "index",
    [
        (slice(1, 5), slice(None, None, 2)),
        (slice(None, None, -1), slice(6, 1, -2)),
        (2, slice(1, None)),
        (slice(None), -1),
        (slice(-3, None), slice(None, None, -3)),
        (None, slice(1, 4), 3),
    ],
)
def test_slices_read_in_place(index):
    check(lambda x, y: x[index] * x[index] + y[index] * 2.0, X, Y, loops=1)


def test_slices_of_slices_and_reductions():
    def f(x):
        a = x[1:, ::-1][::2, 1:-1]
        return anp.sum(a * a, axis=1), anp.max(x[:, 2:5]), anp.sum(x[::-1] * 3.0, axis=0)
        # (rows of at most 7: NumPy adds them in order, as the loops do)

    check(f, X)


def test_slices_of_computed_values_fuse_across_shapes():
    def f(x):
        e = x * x + 1.0
        return e[1:, :-1] - e[:-1, 1:]

    check(f, X, loops=2)


# ---- rolls ----


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("shift", [1, -1, 3, -5])
def test_rolls_along_each_axis(axis, shift):
    source = check(lambda x: anp.roll(x, shift, axis) * 2.0 + x, X, loops=1)
    assert " if " in source  # (one read at a wrapped index)


def test_rolls_of_both_axes_and_whole_arrays():
    def f(x, v):
        return (
            anp.roll(anp.roll(x, 2, 0), -3, 1) + anp.roll(x, (1, 1), (0, 1)),
            anp.roll(v, 5) - v,
            anp.roll(x, 7) * 1.5,  # (axis None: a roll of the flattened array)
        )

    check(f, X, V)


def test_roll_gradients():
    def loss(x):
        lap = anp.roll(x, 1, 0) + anp.roll(x, -1, 0) + anp.roll(x, 1, 1) - 3 * x
        return anp.sum(lap * lap * x)

    check(ad.grad(loss), X)


# ---- reshapes ----


def test_reshapes_split_axes_in_place():
    def f(v):
        a = v.reshape(6, 8)
        b = v[:24].reshape(2, 3, 4)
        return a * 0.5 + 1.0, b * b, v.reshape(1, 48, 1)[0] - 1.0

    check(f, V, loops=3)


def test_merging_reshapes_and_outputs_keep_arrays():
    def f(x):
        flat = (x * 2.0).reshape(-1)
        return flat[::3] + 1.0, x.reshape(8, 6), (x - 1.0).reshape(2, 24)

    check(f, X)


def test_chains_slice_reshape_slice():
    def f(v):
        return anp.sqrt(anp.abs(v[4:40].reshape(3, 12)[1:, ::-2].reshape(2, 2, 3)))

    check(f, V, loops=1)


# ---- concatenations, stacks and other movement ----


def test_concatenations_of_mixed_parts():
    def f(x, y):
        a = anp.concatenate([x[:2], y[1:3] * y[1:3], x[::-1][:1] * 2.0], axis=0)
        b = anp.concatenate([x[:, :3], y[:, ::2]], axis=1)
        return a * 3.0, anp.sum(b, axis=0), anp.stack([x[0], y[1], x[2]]) + 1.0

    check(f, X, Y, rtol=1e-15)


def test_loops_store_into_concatenations():
    def f(x, y):
        a = anp.concatenate([(x * y).reshape(-1), (x - y).reshape(48), y[0] * 2.0])
        b = anp.concatenate([x[:, :2] * 2.0, y[:, 1:2] + 1.0, x[:, 3:] - y[:, 3:]], axis=1)
        return a, b

    source = check(f, X, Y, loops=5)  # (a loop per part's shape, none for the whole)
    assert " if " not in source, source  # (no choice between parts: each loop stores its own)


def test_concatenation_parts_read_elsewhere_or_repeated():
    def f(x, y, s):
        p = x * y
        q = (x + 1.0).reshape(-1)
        return (
            anp.concatenate([p, p], axis=0),
            anp.concatenate([p, y], axis=1) * p.sum(),
            anp.concatenate([q, (s * 2.0).reshape(1)]),
            anp.concatenate([q.astype(np.float32), V[:3].astype(np.float32) * 2]),
        )

    check(f, X, Y, np.float64(1.5), rtol=1e-15)


def test_nested_concatenations_stay_small():
    def f(v):
        for _ in range(12):  # (each level reads the last twice: 4096 reads if all in place)
            v = anp.concatenate([v[:3], v])[2:]
        return v * 2.0

    source = check(f, V)
    assert len(source) < 20000, len(source)


def test_concatenation_of_many_parts_is_an_array():
    parts = lambda x: [x[k : k + 1] for k in range(6)]
    check(lambda x: anp.concatenate(parts(x), axis=0) * 2.0 + 1.0, X)


def test_broadcasts_flips_transposes():
    def f(x, y):
        row = anp.broadcast_to(x[0], (6, 8))
        return (
            row * y + anp.flip(x, 1),
            anp.transpose(x[:, :6]) * y[:, :6],
            anp.expand_dims(x[2], 0) - y,
        )

    check(f, X, Y)


def test_movement_read_by_statements_and_control_flow():
    def f(x):
        a = anp.roll(x, 1, 0)
        m = a[:, :6] @ x[:, 2:].T
        carry = ad.fori_loop(0, 3, lambda i, c: c * 0.5 + a[:, :4], x[:, 1:5])
        return m, carry

    check(f, X, rtol=1e-14)  # (BLAS's order of the products' sums)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_dtypes(dtype):
    x = (X * 10).astype(dtype)

    def f(x):
        r = anp.roll(x, 2, 1) + x.reshape(48)[::-1].reshape(6, 8)
        return r * 3, anp.sum(anp.concatenate([x[:, :2], r[:, 5:]], axis=1), axis=1)

    check(f, x, rtol=1e-6 if dtype == np.float32 else 0.0)


def test_gradients_through_movement():
    def loss(x, v):
        a = anp.concatenate([x[:, ::-1], v.reshape(6, 8)[:, :2]], axis=1)
        return anp.sum(a * a * anp.roll(a, 1, 1)) + anp.sum(v[::3] ** 2)

    check(ad.grad(loss, (0, 1)), X, V)


# ---- the Brusselator ----


def test_brusselator_sparse_jacobian():
    from benchmarks.sparse_workloads import brusselator, brusselator_inputs

    for size in (8, 32):
        f = brusselator(anp, size)
        y = brusselator_inputs(size)
        sparse = ad.sparse_jacobian(f)(y).toarray()
        dense = np.asarray(ad.jacfwd(f)(y))
        np.testing.assert_array_equal(sparse, dense)
        numpy = ad.sparse_jacobian(f, backend="numpy")(y).toarray()
        np.testing.assert_array_equal(sparse, numpy)


# ---- random chains ----


def _random_movement(rng, x):
    """One random data movement of `x` (2-D or 1-D), staying non-empty."""
    rows = x.shape[0]
    choice = rng.integers(7)
    if choice == 0:
        start = int(rng.integers(rows - 1))
        step = int(rng.choice([1, 2, -1, -2]))
        return x[start:] if step > 0 else x[::step]
    if choice == 1:
        return anp.roll(x, int(rng.integers(-5, 6)), int(rng.integers(x.ndim)))
    if choice == 2:
        return anp.flip(x, int(rng.integers(x.ndim)))
    if choice == 3:
        return anp.concatenate([x[1:], x[:1] * 2.0], axis=0)
    if choice == 4 and x.ndim == 2:
        return x.T * 1.0
    if choice == 5 and x.ndim == 2:
        return x.reshape(-1)[::-1].reshape(x.shape)
    return x + 1.0


@pytest.mark.parametrize("seed", range(12))
def test_random_chains_of_movement(seed):
    rng = np.random.default_rng(seed)
    moves = [int(s) for s in rng.integers(1 << 30, size=5)]

    def f(x):
        y = x * 0.5
        for s in moves:
            moved = _random_movement(np.random.default_rng(s), y)
            y = moved + x[:1, : moved.shape[-1]]
        return y, anp.sum(y, axis=0)

    want = ad.jit(f, backend="numpy")(X)
    got, graph = _compiled(f, X, llvm=True)
    _same(got[:1], want[:1], 0.0)
    _same(got[1:], want[1:], 1e-15)
