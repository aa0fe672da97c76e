"""The table-driven op harness: every case of every family, float64 and float32, fwd and rev to order 2."""

import importlib
import pathlib

import numpy as np
import pytest

from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.trace import trace_stack_depth
from autodiff.testing import check_grads

CASES = []
for path in sorted(pathlib.Path(__file__).parent.glob("cases_*.py")):
    CASES.extend(importlib.import_module(path.stem).CASES)

DTYPES = [np.float64, np.float32]
PARAMS = [
    pytest.param(case, dtype, id=f"{case.name}-{np.dtype(dtype).name}", marks=case.marks)
    for case in CASES
    for dtype in DTYPES
    if dtype == np.float64 or case.float32
]


def _cast(args, dtype):
    return tuple(np.asarray(a, dtype=dtype) for a in args)


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_values_match_numpy(case, dtype):
    if case.ref is None:
        pytest.skip("no NumPy reference")
    args = _cast(case.args, dtype)
    got, _ = tree_flatten(case.fun(*args))
    want, _ = tree_flatten(case.ref(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape
        assert g.dtype == w.dtype, f"{case.name}: dtype {g.dtype}, NumPy gives {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=0)


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_derivatives(case, dtype):
    args = _cast(case.args, dtype)
    tol = {} if case.rtol is None else {"rtol": case.rtol, "atol": case.atol or case.rtol}
    if dtype == np.float32 and case.rtol is not None:
        tol = {"rtol": max(case.rtol, 2e-3), "atol": max(case.atol or case.rtol, 2e-3)}
    check_grads(case.fun, args, order=case.order, modes=("fwd", "rev"), **tol)
    assert trace_stack_depth() == 1


# ------------------------------------------------------------------------------------- vmap

SCALES = (1.0, 0.97, 1.03)


def _batch_specs(n_args):
    """Which arguments to map, and along which axis (first and last, given as a negative axis)."""
    subsets = [(i,) for i in range(n_args)] + ([tuple(range(n_args))] if n_args > 1 else [])
    return [(subset, axis) for subset in subsets for axis in (0, -1)]


VMAP_PARAMS = [
    pytest.param(case, subset, axis, id=f"{case.name}-map{subset}-axis{axis}", marks=case.marks)
    for case in CASES
    for subset, axis in _batch_specs(len(case.args))
]


def _stacked(args, subset, axis, size):
    batched = []
    for i, a in enumerate(args):
        if i not in subset:
            batched.append(a)
        elif size == 0:
            batched.append(np.moveaxis(np.empty((0,) + np.shape(a), np.asarray(a).dtype), 0, axis))
        else:
            batched.append(np.stack([a * SCALES[b % 3] for b in range(size)], axis=axis))
    return batched


def _loop(fun, args, subset, size):
    if size == 0:  # the per-example output shapes, with an empty batch axis in front
        return [np.empty((0,) + np.shape(o)) for o in tree_flatten(fun(*args))[0]]
    outs = [
        fun(*[a * SCALES[b % 3] if i in subset else a for i, a in enumerate(args)])
        for b in range(size)
    ]
    flat = [tree_flatten(o)[0] for o in outs]
    return [np.stack([np.asarray(f[j]) for f in flat]) for j in range(len(flat[0]))]


@pytest.mark.parametrize("case, subset, axis", VMAP_PARAMS)
def test_vmap_matches_loop(case, subset, axis):
    _check_vmap(case, subset, axis, 3)


@pytest.mark.parametrize("size", [1, 0])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_vmap_of_size_one_and_zero_batches(case, size):
    _check_vmap(case, tuple(range(len(case.args))), 0, size)


def _check_vmap(case, subset, axis, size):
    import autodiff as ad

    in_axes = tuple(axis if i in subset else None for i in range(len(case.args)))
    got = tree_flatten(
        ad.vmap(case.fun, in_axes=in_axes)(*_stacked(case.args, subset, axis, size))
    )[0]
    want = _loop(case.fun, case.args, subset, size)
    for g, w in zip(got, want):
        assert np.asarray(g).shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-14)
    assert trace_stack_depth() == 1


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_vmap_of_vjp_matches_loop(case):
    """Per-example pullbacks: every backward rule batches (what jacrev and per-example grads use)."""
    import autodiff as ad

    size = 2
    out = case.fun(*case.args)
    rng = np.random.default_rng(0)
    out_flat, out_def = tree_flatten(out)
    cts = [rng.standard_normal((size,) + np.shape(o)) for o in out_flat]

    def pull(*ct):
        return ad.vjp(case.fun, *case.args)[1](tree_unflatten(out_def, list(ct)))

    got = tree_flatten(ad.vmap(pull)(*cts))[0]
    want = [
        np.stack(w)
        for w in zip(*[tree_flatten(pull(*[c[b] for c in cts]))[0] for b in range(size)])
    ]
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- NumPy vjp rules


def _primitives_with_numpy_rules():
    import sys

    from autodiff.core.primitive import Primitive

    found = {}
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("autodiff."):
            for value in list(vars(module).values()):
                if isinstance(value, Primitive) and value.fast.vjp is not None:
                    found[value.name] = value
    assert len(found) >= 10
    return list(found.values())


def _pullback_of_random_cotangent(case, dtype, seed: int):
    """A function computing the case's input cotangents (a flat list) for one fixed random
    output cotangent; skips cases with a non-float output."""
    import autodiff as ad

    args = _cast(case.args, dtype)
    leaves, tree = tree_flatten(case.fun(*args))
    if not all(np.issubdtype(np.asarray(o).dtype, np.inexact) for o in leaves):
        pytest.skip("a non-float output")
    rng = np.random.default_rng(seed)
    ct = tree_unflatten(
        tree, [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in leaves]
    )

    def cotangents():
        _, pullback = ad.vjp(case.fun, *args)
        return tree_flatten(pullback(ct))[0]

    return cotangents


def _gradient_of_random_projection(case, dtype, seed: int):
    """A function computing, with `grad` (whose graph is not retained), the gradient (a flat
    list) of the case's outputs projected on fixed random weights; skips cases with a
    non-real output."""
    import autodiff as ad
    import autodiff.numpy as anp

    args = _cast(case.args, dtype)
    outs = tree_flatten(case.fun(*args))[0]
    if not all(np.issubdtype(np.asarray(o).dtype, np.floating) for o in outs):
        pytest.skip("a non-real output")
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]

    def projection(*a):
        return sum(anp.sum(o * w) for o, w in zip(tree_flatten(case.fun(*a))[0], weights))

    gradient = ad.grad(projection, argnums=tuple(range(len(args))))
    return lambda: tree_flatten(gradient(*args))[0]


def _assert_bitwise_equal(got: list, want: list) -> None:
    """The same arrays, value for value and dtype for dtype."""
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_numpy_vjp_rules_match_the_vjp_rules(case, dtype):
    """`Primitive.fast.vjp` (used on plain NumPy residuals) gives exactly what `vjp` gives."""
    cotangents = _pullback_of_random_cotangent(case, dtype, seed=1)
    with_rules = cotangents()
    prims = _primitives_with_numpy_rules()
    saved = [p.fast.vjp for p in prims]
    try:
        for p in prims:
            p.fast.vjp = None
        without = cotangents()
    finally:
        for p, rule in zip(prims, saved):
            p.fast.vjp = rule
    assert len(with_rules) == len(without)
    for a, b in zip(with_rules, without):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_memory_savings_give_the_same_results(case, dtype, monkeypatch):
    """What reverse mode does to save memory changes no result, bitwise. With every float
    residual that rules read only the shape and dtype of (saves_inputs / saves_output False)
    replaced by a stand-in, and every node's arrays recycled (core/buffers.py), the same
    cotangents and dtypes."""
    from autodiff.core import graph
    from autodiff.reverse import engine

    cotangents = _pullback_of_random_cotangent(case, dtype, seed=2)
    want = cotangents()
    monkeypatch.setattr(graph, "STAND_IN_MIN_SIZE", 0)
    monkeypatch.setattr(engine, "RECYCLE_MIN_SIZE", 0)
    _assert_bitwise_equal(cotangents(), want)


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_fused_cotangents_give_the_same_results(case, dtype, monkeypatch):
    """With every elementwise cotangent fused (kernels/fused.py: lazy rules and sums, then
    NumPy blocks of 5 elements, so that blocks end mid-array), on top of stand-ins: the same
    gradients and dtypes as rule by rule, bitwise."""
    from autodiff.core import graph
    from autodiff.kernels import fused

    gradient = _gradient_of_random_projection(case, dtype, seed=3)
    want = gradient()
    monkeypatch.setattr(graph, "STAND_IN_MIN_SIZE", 0)
    monkeypatch.setattr(fused, "FUSE_MIN_SIZE", 0)
    monkeypatch.setattr(fused, "NUMPY_BLOCK", 5)
    _assert_bitwise_equal(gradient(), want)


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_recycled_memory_gives_the_same_results(case, dtype, monkeypatch):
    """With every array a backward pass alone holds recycled into the next calls' recorded
    ops and sums (core/buffers.py; grad, whose graph is not retained), on top of stand-ins:
    the same gradients and dtypes, bitwise, call after call."""
    from autodiff.core import buffers, graph
    from autodiff.reverse import engine

    gradient = _gradient_of_random_projection(case, dtype, seed=3)
    want = gradient()
    monkeypatch.setattr(graph, "STAND_IN_MIN_SIZE", 0)
    monkeypatch.setattr(engine, "RECYCLE_MIN_SIZE", 0)
    monkeypatch.setattr(buffers, "POOL_MIN_BYTES", 1)
    buffers.clear()
    try:
        for _ in range(3):  # (the first call fills the pool, the next ones use it)
            _assert_bitwise_equal(gradient(), want)
    finally:
        buffers.clear()
