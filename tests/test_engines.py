"""The op table through the reference engine: every row's derivatives, computed by the plain
backward loop (reverse/engine.py's `reference_backward_pass`), agree with finite differences
as the full engine's do (tests/test_ops.py), and with the full engine itself."""

import numpy as np
import pytest
from test_ops import CASES, PARAMS, _cast

from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.trace import trace_stack_depth
from autodiff.reverse.engine import use_reference_engine
from autodiff.testing import check_grads


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_derivatives_with_the_reference_engine(case, dtype):
    args = _cast(case.args, dtype)
    tol = {} if case.rtol is None else {"rtol": case.rtol, "atol": case.atol or case.rtol}
    if dtype == np.float32 and case.rtol is not None:
        tol = {"rtol": max(case.rtol, 2e-3), "atol": max(case.atol or case.rtol, 2e-3)}
    with use_reference_engine():
        check_grads(case.fun, args, order=case.order, modes=("rev",), **tol)
    assert trace_stack_depth() == 1


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_reference_engine_matches_the_engine(case):
    """The same pullback of a random cotangent through both engines (float64)."""
    import autodiff as ad

    args = _cast(case.args, np.float64)
    leaves, tree = tree_flatten(case.fun(*args))
    if not all(np.issubdtype(np.asarray(o).dtype, np.inexact) for o in leaves):
        pytest.skip("a non-float output")
    rng = np.random.default_rng(4)
    ct = tree_unflatten(tree, [rng.standard_normal(np.shape(o)) for o in leaves])
    want = tree_flatten(ad.vjp(case.fun, *args)[1](ct))[0]
    with use_reference_engine():
        got = tree_flatten(ad.vjp(case.fun, *args)[1](ct))[0]
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-14)
