"""abstract_eval agrees with impl: from the shapes and dtypes of its arguments alone, every
primitive's abstract_eval gives the shape and dtype its impl returns.

Checked by running code with every impl wrapped (`abstract_eval_checked`): the op table
eagerly and through jvp, vjp and vmap (which reaches the primitives only rules use), and a
table of direct binds with the dtypes, broadcasting shapes and params the float table lacks.
A coverage test asks that every primitive has an abstract_eval and was checked.
"""

from __future__ import annotations

import contextlib
import importlib
import pathlib

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.autograd import _function_rules, function
from autodiff.autograd._views import copy_slices_p, invalid_view_p
from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.errors import ConcretizationError
from autodiff.core.primitive import all_primitives, bind
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.ops import (
    at,
    correlate,
    cumulative,
    gather_scatter,
    index,
    rearrange,
    reduce,
    sorting,
    special,
    special_integrals,
    structural,
)
from autodiff.ops.gather_scatter import ARG

CASES = []
for path in sorted(pathlib.Path(__file__).parent.glob("cases_*.py")):
    CASES.extend(importlib.import_module(path.stem).CASES)

# Primitives whose output shape depends on their inputs' values: abstract_eval raises.
DATA_DEPENDENT = {"unique"}
# Higher-order primitives (a function inside their params): staging (jit) gives them their
# abstract_eval by tracing that function, so they have none of their own.
STAGED_LATER: set = set()

# The primitives whose abstract_eval has been checked against impl (by any test).
CHECKED: set = set()


def _library_primitives() -> list:
    """The primitives autodiff defines. An autograd.Function subclass becomes a primitive
    when first applied; its impl runs the user's forward, which staging traces (as it does
    custom_jvp_call's function), so it needs no abstract_eval of its own."""
    return [
        p
        for p in all_primitives()
        if p.impl is not _function_rules._impl and not _defined_by_a_test(p)
    ]


def _defined_by_a_test(prim) -> bool:
    """Tests define primitives of their own (counting ones, in test_checkpoint_policies)."""
    module = getattr(prim.impl, "__module__", None) or ""
    return module.split(".")[0].startswith(("test_", "cases_", "conftest"))


def _assert_agrees(prim, avals, params, want, out) -> None:
    """abstract_eval's `want` has the shape and dtype of impl's `out` (element by element)."""
    wants, outs = (want, out) if prim.multiple_results else ((want,), (out,))
    assert len(wants) == len(outs), f"{prim.name}: {len(wants)} avals for {len(outs)} outputs"
    for w, o in zip(wants, outs):
        got = aval_of(o)
        assert isinstance(w, ShapedArray), f"{prim.name}: abstract_eval gave {w!r}"
        assert (w.shape, w.dtype) == (got.shape, got.dtype), (
            f"{prim.name}{avals} with {params}: abstract_eval gives {w}, impl gives {got}"
        )


def _checking(prim, impl):
    def checked_impl(*args, **params):
        out = impl(*args, **params)
        avals = tuple(aval_of(a) for a in args)
        _assert_agrees(prim, avals, params, prim.abstract_eval(*avals, **params), out)
        CHECKED.add(prim)
        return out

    return checked_impl


@contextlib.contextmanager
def abstract_eval_checked():
    """Every impl call (of a primitive with an abstract_eval) also checks abstract_eval."""
    wrapped = [
        (p, p.impl)
        for p in all_primitives()
        if p.abstract_eval is not None and p.name not in DATA_DEPENDENT
    ]
    try:
        for p, impl in wrapped:
            p.impl = _checking(p, impl)
        yield
    finally:
        for p, impl in wrapped:
            p.impl = impl


# ------------------------------------------------------------------------ 1. the op table


def _random_like(x, rng):
    x = np.asarray(x)
    return rng.standard_normal(x.shape).astype(x.dtype) if x.dtype.kind in "fc" else None


def _run_through_rules(case, args) -> None:
    """The case eagerly, through jvp, vmap and vjp (when its outputs are float)."""
    rng = np.random.default_rng(0)
    out = case.fun(*args)
    ad.jvp(case.fun, args, tuple(_random_like(a, rng) for a in args))
    ad.vmap(case.fun)(*[np.stack([a, a]) for a in args])
    leaves, tree = tree_flatten(out)
    if all(np.asarray(o).dtype.kind in "fc" for o in leaves):
        _, pullback = ad.vjp(case.fun, *args)
        pullback(tree_unflatten(tree, [_random_like(o, rng) for o in leaves]))


TABLE = [
    pytest.param(case, dtype, id=f"{case.name}-{np.dtype(dtype).name}", marks=case.marks)
    for case in CASES
    for dtype in (np.float64, np.float32)
    if dtype == np.float64 or case.float32
]


@pytest.mark.parametrize("case, dtype", TABLE)
def test_op_table_agrees_with_impl(case, dtype):
    args = tuple(np.asarray(a, dtype=dtype) for a in case.args)
    with abstract_eval_checked():
        _run_through_rules(case, args)


# ------------------------------------------------------ 2. dtypes and params, bound directly

_DTYPES = "float64 float32 int64 int32 int8 uint8 bool complex128 complex64".split()


def _values(shape, dtype, seed: int = 0):
    """Small values of `dtype` (nonzero-ish and varied, so that no op fails on them)."""
    values = np.random.default_rng(seed).integers(-3, 4, size=shape)
    if np.dtype(dtype).kind == "c":
        return (values + 0.5j).astype(dtype)
    if np.dtype(dtype).kind == "u":
        return np.abs(values).astype(dtype)
    return values.astype(dtype)


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{value.shape}"
    if isinstance(value, tuple):
        return f"({','.join(map(_describe, value))})"
    return getattr(value, "__name__", repr(value))


def _bind(prim, *args, **params):
    """A row of the table: `bind(prim, *args, **params)`."""
    text = ",".join(_describe(np.asarray(a)) for a in args)
    settings = ",".join(f"{k}={_describe(v)}" for k, v in params.items())
    return pytest.param(prim, args, params, id=f"{prim.name}({text};{settings})")


def _reductions():
    layouts = [((), ()), ((5,), (0,)), ((3, 4), ()), ((3, 4), (1,)), ((3, 4), (0, 1))]
    layouts.append(((2, 3, 4), (0, 2)))
    prims = (reduce.reduce_sum_p, reduce.reduce_prod_p, reduce.reduce_max_p, reduce.reduce_min_p)
    prims += (reduce.all_p, reduce.any_p, reduce.count_nonzero_p)
    for dtype in _DTYPES:
        for shp, axes in layouts:
            x = _values(shp, dtype)
            for keepdims in (False, True):
                for p in prims:
                    yield _bind(p, x, axes=axes, keepdims=keepdims)
                out = np.max(x, axis=axes, keepdims=keepdims)
                yield _bind(reduce.tie_weights_p, x, out, axes=axes, keepdims=keepdims)
            for p in (reduce.argmax_p, reduce.argmin_p):
                for axis in (None, 0, -1):
                    if axis is None or shp:
                        yield _bind(p, x, axis=axis, keepdims=True)
                        yield _bind(p, x, axis=axis, keepdims=False)
            if axes:
                g = np.sum(x, axis=axes)
                yield _bind(reduce.expand_reduced_p, g, axes=axes, shape=shp)
    yield _bind(reduce.reduce_sum_p, 2.0, axes=(), keepdims=False)  # a Python scalar


def _broadcasting():
    for dtype in ("float32", "int8", "bool", "complex64"):
        for small, big in [((4,), (3, 4)), ((3, 1), (3, 4)), ((), (2, 3)), ((3, 4), (3, 4))]:
            yield _bind(structural.broadcast_to_p, _values(small, dtype), shape=big)
            yield _bind(structural.sum_to_shape_p, _values(big, dtype), shape=small)


def _shapes():
    for dtype in ("float32", "int32", "bool", "complex64"):
        x = _values((2, 3, 4), dtype)
        for new, order in [((6, 4), "C"), ((-1,), "C"), ((4, -1, 2), "F"), ((24, 1), "A")]:
            yield _bind(structural.reshape_p, x, shape=new, order=order)
        for axes in (None, (2, 0, 1), (-1, 0, 1)):
            yield _bind(structural.transpose_p, x, axes=axes)
        for axis in (None, 1, -1, (0, 2)):
            yield _bind(rearrange.flip_p, x, axis=axis)
        yield _bind(rearrange.copy_p, x)
        yield _bind(rearrange.split_p, x, ranges=((0, 1), (1, 3), (3, 3)), axis=1)
        yield _bind(rearrange.unstack_p, x, axis=2)
        for repeats, axis in [(2, 0), ((1, 0, 2), 1), (3, None)]:
            yield _bind(rearrange.repeat_p, x, repeats=repeats, axis=axis)
        for counts in [(2, 2), (1, 0, 3)]:
            yield _bind(rearrange.segment_sum_p, x, counts=counts, axis=2)
        yield _bind(function._delayed_error_p, x)
    mixed = (_values((2, 3), "int32"), _values((2, 1), "float32"), _values((2, 2), "bool"))
    joined = dict(dtype=None, casting="same_kind")
    yield _bind(rearrange.concatenate_p, *mixed, axis=-1, **joined)
    yield _bind(rearrange.concatenate_p, *mixed, axis=1, dtype=np.float32, casting="unsafe")
    same = (_values((2, 3), "int8"), _values((2, 3), "float32"), _values((2, 3), "complex64"))
    for axis in (0, 1, 2, -1):
        yield _bind(rearrange.stack_p, *same, axis=axis, **joined)
    yield _bind(rearrange.stack_p, *same, axis=0, dtype=np.complex128, casting="same_kind")
    yield _bind(rearrange.stack_p, np.float32(1.0), 2.0, axis=0, **joined)  # a Python scalar


def _indexing():
    mask = np.array([[True, False, True, False]] * 3)
    cols, rows = np.array([3, 0, 3]), np.array([[2], [0]])
    for dtype in ("float32", "int64", "bool", "complex64"):
        x = _values((3, 4, 2), dtype)
        for idx in [(1,), (slice(None), None, -1), (Ellipsis, 0), (mask,), (rows, slice(1, 3), 0)]:
            selected = x[idx]
            yield _bind(gather_scatter.getitem_p, x, index=idx)
            yield _bind(gather_scatter.scatter_add_p, selected, shape=x.shape, index=idx)
            yield _bind(
                gather_scatter.index_set_p, x, _values(selected.shape, "float64"), index=idx
            )
        traced = (slice(None), ARG, ARG)  # index arrays that are arguments
        args = (cols, np.array([[1], [0]]))
        selected = x[:, cols, args[1]]
        yield _bind(gather_scatter.getitem_p, x, *args, index=traced)
        yield _bind(gather_scatter.scatter_add_p, selected, *args, shape=x.shape, index=traced)
        for p in (gather_scatter.index_set_p, at.index_multiply_p, at.index_min_p, at.index_max_p):
            if dtype != "complex64" or p is gather_scatter.index_set_p:  # (no order on complex)
                yield _bind(p, x, _values(selected.shape, dtype), *args, index=traced)
        # Dynamic slices: starts of any integer type (Python ints weak), clamped.
        yield _bind(index.dynamic_slice_p, x, 1, np.int32(-1), np.uint8(5), sizes=(2, 3, 1))
        yield _bind(index.dynamic_update_slice_p, x, x[:2, 1:3], 2, 0, np.int64(1))
        # the torch face's CopySlices (an in-place write into a view): of the whole tensor,
        # and of the elements at `positions`
        positions = np.array([[1, 3], [0, 5]])
        mask = np.zeros(x.size, bool)
        mask[positions.ravel()] = True
        shape = x.shape
        yield _bind(copy_slices_p, x, x, positions=None, mask=None, shape=shape)
        part = _values(positions.shape, dtype)
        mask = mask.reshape(shape)
        yield _bind(copy_slices_p, x, part, positions=positions, mask=mask, shape=shape)
    # the grad_fn of a view whose base was written while it could not follow (its vjp raises)
    yield _bind(invalid_view_p, message="an invalid view")


def _array_functions():
    for dtype in _DTYPES:
        x = _values((3, 4), dtype)
        cast = np.complex64 if np.dtype(dtype).kind == "c" else np.float32
        for axis, reverse, acc in [(0, False, None), (1, True, None), (1, False, cast)]:
            yield _bind(cumulative.cumsum_p, x, axis=axis, reverse=reverse, dtype=acc)
            yield _bind(cumulative.cumprod_p, x, axis=axis, dtype=acc)
        if dtype != "complex64":
            yield _bind(sorting.argsort_p, x, axis=-1, kind=None, stable=None)
            yield _bind(sorting.searchsorted_p, np.sort(x[0]), x, side="left", batch_dims=0)
            yield _bind(sorting.searchsorted_p, np.sort(x, 1), x[:, :2], side="right", batch_dims=1)
            yield _bind(sorting.searchsorted_p, np.sort(x[0]), 1.5, side="left", batch_dims=0)
        idx = np.array([[2], [0], [3]])
        yield _bind(sorting.gather_p, x, idx, axis=1)
        yield _bind(sorting.gather_p, x[:1], np.array([[0], [0]]), axis=0)  # (axis 1 broadcasts)
        yield _bind(sorting.scatter_add_along_p, x[:, :1], idx, axis=1, shape=(3, 4))
        for other in ("float32", "int8", "complex128"):
            for mode in ("full", "same", "valid"):
                yield _bind(correlate.correlate_p, x[0], _values((3,), other), mode=mode)
                yield _bind(correlate.correlate_p, x[0, :2], _values((3,), other), mode=mode)
        a = _values((4, 3), dtype)
        yield _bind(
            cumulative.linear_recurrence_p, a, _values((1, 3), "float32"), axis=0, reverse=True
        )
        yield _bind(cumulative.linear_recurrence_p, a, 2.0, axis=1, reverse=False)


def _specials():
    # special functions with no derivative to put them in the op table (Riemann's zeta in
    # its exponent, the sign of gamma): their dtypes, by the kernels' rule
    for dtype in _DTYPES:
        if np.dtype(dtype).kind != "c":
            x = _values((3,), dtype)
            yield _bind(special_integrals.riemann_zeta_p, x)
            yield _bind(special.gammasgn_p, x)
    yield _bind(special_integrals.riemann_zeta_p, np.float16(2.5))


VARIANTS = [
    *_reductions(),
    *_broadcasting(),
    *_shapes(),
    *_indexing(),
    *_array_functions(),
    *_specials(),
]


@pytest.mark.parametrize("prim, args, params", VARIANTS)
def test_variants_agree_with_impl(prim, args, params):
    CHECKED.discard(prim)
    with abstract_eval_checked():
        bind(prim, *args, **params)
    assert prim in CHECKED  # (the impl ran, and so did the check)


def _comparisons():
    """Comparisons and logical functions, which the float table reaches only inside rules."""
    names = "equal not_equal less less_equal greater greater_equal logical_and logical_or"
    for dtype in ("float32", "int64", "uint8", "bool"):
        x, y = _values((3, 1), dtype), _values((4,), dtype, seed=1)
        for name in names.split():
            for args in [(x, y), (x, 2)]:
                text = ",".join(_describe(np.asarray(a)) for a in args)
                yield pytest.param(getattr(anp, name), args, id=f"{name}({text})")


COMPARISONS = list(_comparisons())


@pytest.mark.parametrize("fun, args", COMPARISONS)
def test_comparisons_agree_with_impl(fun, args):
    with abstract_eval_checked():
        fun(*args)


def test_weak_types_pass_through_unchanged_dtypes_only():
    weak_float, weak_int = aval_of(2.0), aval_of(3)
    assert reduce.reduce_sum_p.abstract_eval(weak_float, axes=(), keepdims=False).weak_type
    assert reduce.reduce_max_p.abstract_eval(weak_int, axes=(), keepdims=True).weak_type
    assert not reduce.all_p.abstract_eval(weak_float, axes=(), keepdims=False).weak_type
    assert not cumulative.cumsum_p.abstract_eval(
        weak_int, axis=0, reverse=False, dtype=np.float32
    ).weak_type
    assert not reduce.reduce_sum_p.abstract_eval(
        ShapedArray((3,), np.int32), axes=(0,), keepdims=False
    ).weak_type


# -------------------------------------------- 2b. the staged primitives of control flow


def test_while_loop_agrees_with_impl():
    """while_loop has no row in the op table (reverse mode raises through it): its forward
    mode and batching, checked here."""
    import autodiff.control as control

    def f(x):
        return control.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, x))[1]

    x = np.array([0.5, 1.5])
    with abstract_eval_checked():
        ad.jvp(f, (x,), (np.ones(2),))
        ad.vmap(f)(np.stack([x, 2 * x]))
        ad.vmap(lambda v: control.while_loop(lambda c: c < 4.0, lambda c: c * 2.0, v))(x)


def test_custom_rules_and_checkpoint_agree_with_impl():
    """custom_jvp_call, custom_vjp_call and checkpoint stage the user's function for their
    abstract_eval; checked with only their impls wrapped (wrapping every impl would check
    the primitives inside the user's function against themselves while staging them)."""
    names = ("custom_jvp_call", "custom_vjp_call", "checkpoint")
    targets = [p for p in all_primitives() if p.name in names]
    saved = [(p, p.impl) for p in targets]

    @ad.custom_jvp
    def f(x):
        return anp.sin(x) * 2.0

    f.defjvp(lambda p, t: (f(p[0]), 2.0 * anp.cos(p[0]) * t[0]))

    @ad.custom_vjp
    def g(x, y):
        return x * y, anp.sum(x)

    g.defvjp(lambda x, y: (g(x, y), (x, y)), lambda r, ct: (ct[0] * r[1] + ct[1], None))
    h = ad.checkpoint(lambda z: (anp.exp(z), anp.sum(z)))
    x = np.arange(3.0, dtype=np.float32)
    for prim in targets:
        CHECKED.discard(prim)
    try:
        for p, impl in saved:
            p.impl = _checking(p, impl)
        for fun in (f, lambda z: g(z, np.int64(2))[0], lambda z: h(z)[0]):
            fun(ad.Tensor(x))
            ad.vmap(fun)(np.stack([x, x]))
    finally:
        for p, impl in saved:
            p.impl = impl
    assert set(targets) <= CHECKED


def test_implicit_solvers_agree_with_impl():
    """custom_root and custom_linear_solve (autodiff/implicit.py): the solution has the
    guess's (b's) types, aux's those of staging the solver (has_aux); checked with only
    their impls wrapped, as above."""
    targets = [p for p in all_primitives() if p.name in ("custom_root", "custom_linear_solve")]
    saved = [(p, p.impl) for p in targets]
    x = np.array([1.0, 4.0, 9.0], dtype=np.float32)

    def root(a):  # (the solver computes in float64; the solution keeps the guess's dtype)
        def solve(f, guess):
            return anp.sqrt(anp.astype(guess, np.float64)), np.int32(1)

        return ad.custom_root(lambda y: y * y - a, a, solve, lambda g, y: y / 2.0, has_aux=True)[0]

    def linear(b):
        return ad.custom_linear_solve(lambda y: 2.0 * y, b, lambda mv, c: c / 2.0, symmetric=True)

    for prim in targets:
        CHECKED.discard(prim)
    try:
        for p, impl in saved:
            p.impl = _checking(p, impl)
        for fun in (root, linear):
            fun(ad.Tensor(x))
            ad.vmap(fun)(np.stack([x, x]))
    finally:
        for p, impl in saved:
            p.impl = impl
    assert set(targets) <= CHECKED


def test_compile_only_primitives_agree_with_impl():
    """gather_known, which only the compiled form of a graph holds (staging/numba/
    executor.py: a gather by known in-bounds positions)."""
    from autodiff.staging.numba.executor import gather_known_p

    saved = gather_known_p.impl
    CHECKED.discard(gather_known_p)
    try:
        gather_known_p.impl = _checking(gather_known_p, saved)
        x = np.arange(5.0, dtype=np.float32)
        bind(gather_known_p, x, np.array([[4, 0], [1, 1]], np.int32))
    finally:
        gather_known_p.impl = saved
    assert gather_known_p in CHECKED


# ------------------------------------------------------------- 3. every primitive, checked


def test_every_primitive_has_an_abstract_eval():
    missing = [
        p.name
        for p in _library_primitives()
        if p.abstract_eval is None and p.name not in STAGED_LATER
    ]
    assert not missing, f"primitives without an abstract_eval: {sorted(missing)}"


def test_every_abstract_eval_was_checked_against_impl():
    """Runs after the tests above, which fill CHECKED; run alone, it runs their checks itself."""
    expected = {
        p
        for p in _library_primitives()
        if p.abstract_eval is not None and p.name not in DATA_DEPENDENT | STAGED_LATER
    }
    if not expected <= CHECKED:
        with abstract_eval_checked():
            for case in CASES:
                _run_through_rules(case, tuple(np.asarray(a) for a in case.args))
            for row in VARIANTS:
                prim, args, params = row.values
                bind(prim, *args, **params)
            for row in COMPARISONS:
                fun, args = row.values
                fun(*args)
        test_while_loop_agrees_with_impl()
        test_custom_rules_and_checkpoint_agree_with_impl()
        test_implicit_solvers_agree_with_impl()
        test_compile_only_primitives_agree_with_impl()
    # (a primitive sharing a checked one's impl and abstract_eval, as torch.compile's saving
    # call shares jit's call's, is checked with it)
    same_rules = {(p.impl, p.abstract_eval) for p in CHECKED}
    unchecked = sorted(
        p.name for p in expected - CHECKED if (p.impl, p.abstract_eval) not in same_rules
    )
    assert not unchecked, f"abstract_eval never checked against impl for: {unchecked}"


# ----------------------------------------------------- 4. data-dependent output shapes


def test_data_dependent_shapes_raise_concretization_error():
    """No shape is made up where it depends on the values: the error says why and the way out."""
    assert DATA_DEPENDENT == {"unique"}
    params = dict(return_index=False, return_inverse=False, return_counts=False, axis=None)
    message = "unique.*depends on the values.*outside the staged function"
    with pytest.raises(ConcretizationError, match=message):
        sorting.unique_p.abstract_eval(ShapedArray((5,), np.float64), **params)
