"""The table-driven op harness: every case of every family, float64 and float32, fwd and rev to order 2."""
import importlib
import pathlib

import numpy as np
import pytest

from autodiff.core.pytree import tree_flatten
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
