"""The op table's jit columns: every row staged and run compiled — `jit(f)` against `f` (values
and dtypes), `jit(grad)`, `jit(jvp)`, `jit(vmap)` and `grad(jit)` against their eager forms."""

import numpy as np
import pytest
from test_ops import CASES, PARAMS, _cast

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.errors import ConcretizationError
from autodiff.core.pytree import tree_flatten
from autodiff.core.trace import trace_stack_depth
from autodiff.staging.api import jit

# Rows whose output shape depends on their values (a boolean mask, unique): under jit they
# raise ConcretizationError, as JAX does; checked by test_data_dependent_rows_raise.
DATA_DEPENDENT = {
    case.name for case in CASES if any(k in case.name for k in ("unique", "mask", "nonzero"))
}


def _flat(x) -> list:
    return [np.asarray(v) for v in tree_flatten(x)[0]]


def _assert_close(got, want, rtol=1e-12, atol=1e-14):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _staged_or_skip(fun, *args):
    try:
        return fun(*args)
    except ConcretizationError:
        pytest.skip("an output shape that depends on values (see test_data_dependent_rows)")


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_jit_matches_eager(case, dtype):
    args = _cast(case.args, dtype)
    got = _staged_or_skip(jit(case.fun), *args)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _assert_close(got, case.fun(*args), rtol=tol, atol=tol * 1e-2)
    assert trace_stack_depth() == 1


def _projection(case, args):
    """A scalar function of the case's arguments: its real outputs on fixed random weights."""
    outs = _flat(case.fun(*args))
    if not all(np.issubdtype(o.dtype, np.floating) for o in outs):
        pytest.skip("a non-real output")
    rng = np.random.default_rng(7)
    weights = [rng.standard_normal(o.shape) for o in outs]

    def projection(*a):
        return sum(anp.sum(o * w) for o, w in zip(tree_flatten(case.fun(*a))[0], weights))

    return projection


SINGLE = [pytest.param(c, id=c.name, marks=c.marks) for c in CASES]


@pytest.mark.parametrize("case", SINGLE)
def test_jit_of_grad_and_grad_of_jit(case):
    args = _cast(case.args, np.float64)
    projection = _projection(case, args)
    argnums = tuple(range(len(args)))
    want = ad.grad(projection, argnums)(*args)
    _assert_close(_staged_or_skip(jit(ad.grad(projection, argnums)), *args), want, rtol=1e-10)
    _assert_close(_staged_or_skip(ad.grad(jit(projection), argnums), *args), want, rtol=1e-10)


@pytest.mark.parametrize("case", SINGLE)
def test_jit_of_jvp(case):
    args = _cast(case.args, np.float64)
    rng = np.random.default_rng(3)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)

    def f_jvp(*a):
        return ad.jvp(case.fun, a, tangents)

    _assert_close(_staged_or_skip(jit(f_jvp), *args), f_jvp(*args), rtol=1e-10)


@pytest.mark.parametrize("case", SINGLE)
def test_jit_of_vmap(case):
    args = _cast(case.args, np.float64)
    batched = tuple(np.stack([a, a * 0.9]) for a in args)
    f = ad.vmap(case.fun)
    _assert_close(_staged_or_skip(jit(f), *batched), f(*batched), rtol=1e-12)
