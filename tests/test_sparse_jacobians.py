"""Compressed sparse Jacobians and Hessians (autodiff/sparse/jacobians.py): equal to the dense
ones, every mode and order, pytrees, jit/vmap composition, the debug check, errors, caching,
and the SciPy solvers that take them."""

import importlib
import pathlib

import numpy as np
import pytest
import scipy.integrate
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.pytree import tree_flatten
from autodiff.sparse.coloring import ORDERS
from autodiff.sparse.jacobians import (
    sparse_hessian,
    sparse_jacfwd,
    sparse_jacobian,
    sparse_jacrev,
)

MODES = ["forward", "reverse", "auto"]


def laplacian(w):
    """The periodic 5-point Laplacian on a 2-D grid (unit spacing)."""
    rolled = anp.roll(w, 1, 0) + anp.roll(w, -1, 0) + anp.roll(w, 1, 1) + anp.roll(w, -1, 1)
    return rolled - 4.0 * w


def brusselator(y, alpha=10.0):
    """The 2-D Brusselator's reaction-diffusion right-hand side, y = (u, v) flattened."""
    side = int(round(np.sqrt(y.shape[0] // 2)))
    u = anp.reshape(y[: side * side], (side, side))
    v = anp.reshape(y[side * side :], (side, side))
    fu = 1.0 + u * u * v - 4.4 * u + alpha * laplacian(u)
    fv = 3.4 * u - u * u * v + alpha * laplacian(v)
    return anp.concatenate([anp.reshape(fu, (-1,)), anp.reshape(fv, (-1,))])


def brusselator_pattern(side: int):
    eye = sp.identity(side, format="csr")
    ring = sp.diags_array(
        [np.ones(1), np.ones(side - 1), np.ones(side), np.ones(side - 1), np.ones(1)],
        offsets=[-side + 1, -1, 0, 1, side - 1],
    )
    grid = sp.kron(ring, eye) + sp.kron(eye, ring)
    coupling = sp.identity(side * side)
    return sp.csr_array(sp.block_array([[grid, coupling], [coupling, grid]]) != 0)


def rosenbrock(x):
    """The chained Rosenbrock function: a tridiagonal Hessian."""
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def tridiagonal(n: int):
    return sp.csr_array(
        sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1]) != 0
    )


def brusselator_point(side: int, dtype=np.float64):
    return np.random.default_rng(side).uniform(0.5, 1.5, 2 * side * side).astype(dtype)


def assert_exact_pattern(matrix, pattern):
    assert isinstance(matrix, sp.csr_array)
    pattern = sp.csr_array(pattern)
    assert matrix.shape == pattern.shape
    np.testing.assert_array_equal(matrix.indptr, pattern.indptr)
    np.testing.assert_array_equal(matrix.indices, pattern.indices)


# ---------------------------------------------------------------------------------------------
# Sparse equals dense


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ORDERS)
def test_brusselator_jacobian_equals_dense(mode, order):
    y = brusselator_point(6)
    pattern = brusselator_pattern(6)
    jac = sparse_jacobian(brusselator, mode=mode, order=order, sparsity=pattern)(y)
    assert_exact_pattern(jac, pattern)
    np.testing.assert_allclose(jac.toarray(), ad.jacfwd(brusselator)(y), rtol=1e-13, atol=1e-13)


def test_brusselator_colors():
    pattern = brusselator_pattern(8)
    coloring = sparse_jacobian(brusselator, sparsity=pattern).coloring(brusselator_point(8))
    assert coloring.ncolors <= 12


def test_jacfwd_and_jacrev_are_the_modes():
    y = brusselator_point(4)
    pattern = brusselator_pattern(4)
    assert sparse_jacfwd(brusselator, sparsity=pattern).coloring(y).kind == "column"
    assert sparse_jacrev(brusselator, sparsity=pattern).coloring(y).kind == "row"
    dense = ad.jacfwd(brusselator)(y)
    for transform in (sparse_jacfwd, sparse_jacrev):
        got = transform(brusselator, sparsity=pattern)(y).toarray()
        np.testing.assert_allclose(got, dense, rtol=1e-13, atol=1e-13)


def test_auto_picks_the_mode_with_fewer_colors():
    # A dense row: reverse needs 2 colors, forward n.
    def f(x):
        return anp.stack([anp.sum(x * x), x[0] * 2.0])

    pattern = np.zeros((2, 6), bool)
    pattern[0] = True
    pattern[1, 0] = True
    jac = sparse_jacobian(f, sparsity=pattern)
    x = np.arange(1.0, 7.0)
    assert jac.coloring(x).kind == "row"
    np.testing.assert_allclose(jac(x).toarray(), ad.jacfwd(f)(x), rtol=1e-13)
    # Its transpose: a dense column, forward needs 2.
    jac = sparse_jacobian(lambda x: x * x[0], sparsity=np.eye(6, dtype=bool) | (np.arange(6) == 0))
    assert jac.coloring(x).kind == "column"
    np.testing.assert_allclose(jac(x).toarray(), ad.jacfwd(lambda x: x * x[0])(x), rtol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_float32(mode):
    y = brusselator_point(5, np.float32)
    jac = sparse_jacobian(brusselator, mode=mode, sparsity=brusselator_pattern(5))(y)
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac.toarray(), ad.jacfwd(brusselator)(y), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("order", ORDERS)
def test_rosenbrock_hessian_equals_dense(order):
    x = np.random.default_rng(1).uniform(-1, 1, 30)
    hess = sparse_hessian(rosenbrock, order=order, sparsity=tridiagonal(30))
    h = hess(x)
    assert_exact_pattern(h, tridiagonal(30))
    np.testing.assert_allclose(h.toarray(), ad.hessian(rosenbrock)(x), rtol=1e-13, atol=1e-13)
    assert (abs(h - h.T)).max() == 0
    assert hess.coloring(x).ncolors <= 3


def test_hessian_float32():
    x = np.random.default_rng(1).uniform(-1, 1, 20).astype(np.float32)
    h = sparse_hessian(rosenbrock, sparsity=tridiagonal(20))(x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h.toarray(), ad.hessian(rosenbrock)(x), rtol=1e-5, atol=1e-3)


def test_hessian_of_a_composite():
    def f(x):
        return anp.sum(anp.sin(x[:-2] * x[2:])) + anp.sum(anp.exp(x) * x) + x[0] * x[-1]

    x = np.random.default_rng(2).normal(size=12)
    dense = ad.hessian(f)(x)
    h = sparse_hessian(f, sparsity=dense != 0)(x)
    np.testing.assert_allclose(h.toarray(), dense, rtol=1e-13, atol=1e-13)


def test_explicit_zeros_are_kept():
    # The pattern holds an entry whose value is zero at this point: it is stored.
    pattern = np.ones((2, 2), bool)
    jac = sparse_jacobian(lambda x: x * x, sparsity=pattern)(np.array([1.0, 2.0]))
    assert jac.nnz == 4
    np.testing.assert_array_equal(jac.toarray(), [[2.0, 0.0], [0.0, 4.0]])


# ---------------------------------------------------------------------------------------------
# The op table: a sample of its rows, the pattern the dense Jacobian's nonzeros


def _op_cases():
    cases = []
    for path in sorted(pathlib.Path(__file__).parent.glob("cases_*.py")):
        cases.extend(importlib.import_module(path.stem).CASES)
    return cases[::7]


def _flat_output(case):
    def f(*args):
        leaves = tree_flatten(case.fun(*args))[0]
        return anp.concatenate([anp.reshape(leaf, (-1,)) for leaf in leaves])

    return f


def _dense_jacobian(case):
    """The Jacobian of the case's flattened outputs in its flattened inputs, or None when
    it has none (integer or complex values)."""
    if any(np.asarray(a).dtype.kind != "f" for a in case.args):
        return None
    args = tuple(np.asarray(a, np.float64) for a in case.args)
    try:
        outs = tree_flatten(case.fun(*args))[0]
        if not outs or any(np.asarray(o).dtype.kind != "f" for o in outs):
            return None
        blocks = ad.jacfwd(_flat_output(case), argnums=tuple(range(len(args))))(*args)
    except (TypeError, ValueError, NotImplementedError):
        return None
    m = blocks[0].shape[0]
    return np.concatenate([np.reshape(b, (m, np.size(a))) for b, a in zip(blocks, args)], axis=1)


OP_CASES = _op_cases()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in OP_CASES])
def test_op_table_sample(case):
    dense = _dense_jacobian(case)
    if dense is None:
        pytest.skip("no real Jacobian")
    args = tuple(np.asarray(a, np.float64) for a in case.args)
    argnums = tuple(range(len(args)))
    for mode in ("forward", "reverse"):
        jac = sparse_jacobian(case.fun, argnums, mode=mode, sparsity=dense != 0)(*args)
        np.testing.assert_allclose(jac.toarray(), dense, rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------------------------
# Pytrees


def test_pytree_inputs_and_outputs():
    def f(params, scale):
        a, b = params["a"], params["b"]
        return {"sum": a[1:] + b[:-1] * scale, "prod": (a * b)[:2]}

    params = {"a": np.arange(1.0, 5.0), "b": np.arange(5.0, 9.0)}

    def flat(x):  # columns: a then b; rows: "prod" then "sum" (tree_flatten's dict order)
        out = f({"a": x[:4], "b": x[4:]}, 3.0)
        return anp.concatenate([out["prod"], out["sum"]])

    x = np.concatenate([params["a"], params["b"]])
    dense = ad.jacfwd(flat)(x)
    for mode in MODES:
        jac = sparse_jacobian(f, mode=mode, sparsity=dense != 0)(params, 3.0)
        np.testing.assert_allclose(jac.toarray(), dense, rtol=1e-13)


def test_argnums_tuple_concatenates_in_argnums_order():
    def f(x, y, z):
        return x * z[0] + y[:3] ** 2

    x, y, z = np.arange(1.0, 4.0), np.arange(4.0, 8.0), np.array([2.0])

    def flat(v):  # columns: y, then x
        return f(v[4:], v[:4], z)

    dense = ad.jacfwd(flat)(np.concatenate([y, x]))
    jac = sparse_jacobian(f, argnums=(1, 0), sparsity=dense != 0)(x, y, z)
    np.testing.assert_allclose(jac.toarray(), dense, rtol=1e-13)


def test_hessian_of_a_pytree():
    def f(p):
        return anp.sum(p["w"] ** 3) + anp.sum(p["w"] * p["b"][:3])

    p = {"w": np.arange(1.0, 4.0), "b": np.arange(4.0, 8.0)}

    def flat(v):
        return f({"b": v[:4], "w": v[4:]})  # columns: "b", then "w"

    dense = ad.hessian(flat)(np.concatenate([p["b"], p["w"]]))
    h = sparse_hessian(f, sparsity=dense != 0)(p)
    np.testing.assert_allclose(h.toarray(), dense, rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# Composition: the values form traces, batches and differentiates


@pytest.mark.parametrize("mode", MODES)
def test_vmap_over_a_batch_equals_a_loop(mode):
    pattern = brusselator_pattern(4)
    values = sparse_jacobian(brusselator, mode=mode, sparsity=pattern, output="values")
    batch = np.stack([brusselator_point(4) * s for s in (1.0, 1.5, 2.0)])
    got = ad.vmap(values)(batch)
    np.testing.assert_allclose(got, np.stack([values(y) for y in batch]), rtol=1e-13)
    matrix = sparse_jacobian(brusselator, mode=mode, sparsity=pattern)(batch[1])
    np.testing.assert_allclose(got[1], matrix.data, rtol=1e-13)


def test_hessian_values_under_vmap_and_jit():
    values = sparse_hessian(rosenbrock, sparsity=tridiagonal(8), output="values")
    batch = np.random.default_rng(3).normal(size=(4, 8))
    loop = np.stack([values(x) for x in batch])
    np.testing.assert_allclose(ad.vmap(values)(batch), loop, rtol=1e-13)
    np.testing.assert_allclose(ad.jit(values)(batch[0]), loop[0], rtol=1e-13)


def test_jit_of_the_values_form():
    values = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4), output="values")
    y = brusselator_point(4)
    np.testing.assert_allclose(ad.jit(lambda y: values(y) * 2.0)(y), 2.0 * values(y), rtol=1e-13)
    pattern = values.sparsity(y)
    assert pattern.dtype == bool and pattern.shape == (32, 32)


def test_the_values_form_differentiates():
    values = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4), output="values")
    y = brusselator_point(4)
    got = ad.grad(lambda y: anp.sum(values(y) ** 2))(y)
    want = ad.grad(lambda y: anp.sum(ad.jacfwd(brusselator)(y) ** 2))(y)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_matrix_form_is_not_traced():
    jac = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4))
    with pytest.raises(TypeError, match="output='values'"):
        ad.vmap(jac)(np.stack([brusselator_point(4)] * 2))


# ---------------------------------------------------------------------------------------------
# The debug check and bad input


@pytest.mark.parametrize("mode", MODES)
def test_check_finds_a_missed_nonzero(mode):
    y = brusselator_point(4)
    pattern = brusselator_pattern(4).tolil()
    pattern[5, 6] = False  # a neighbour on the grid
    jac = sparse_jacobian(brusselator, mode=mode, sparsity=pattern.tocsr(), check=True)
    with pytest.raises(ValueError, match=r"misses nonzeros: (row|column) \d+"):
        jac(y)
    checked = sparse_jacobian(brusselator, mode=mode, sparsity=brusselator_pattern(4), check=True)
    np.testing.assert_allclose(checked(y).toarray(), ad.jacfwd(brusselator)(y), rtol=1e-13)


def test_check_of_a_hessian():
    x = np.random.default_rng(4).normal(size=10)
    with pytest.raises(ValueError, match="misses nonzeros: row"):
        sparse_hessian(rosenbrock, sparsity=sp.identity(10), check=True)(x)
    h = sparse_hessian(rosenbrock, sparsity=tridiagonal(10), check=True)(x)
    np.testing.assert_allclose(h.toarray(), ad.hessian(rosenbrock)(x), rtol=1e-13)


def test_check_needs_concrete_values():
    values = sparse_jacobian(anp.sin, sparsity=np.eye(3), output="values", check=True)
    with pytest.raises(TypeError, match="concrete"):
        ad.jit(values)(np.zeros(3))


def test_errors():
    x = np.zeros(4)
    with pytest.raises(ValueError, match=r"sparsity has shape \(3, 4\).*Jacobian.*4x4"):
        sparse_jacobian(anp.sin, sparsity=np.ones((3, 4)))(x)
    with pytest.raises(ValueError, match=r"sparsity has shape \(3, 3\).*Hessian.*4x4"):
        sparse_hessian(rosenbrock, sparsity=np.ones((3, 3)))(x)
    with pytest.raises(TypeError, match="real floating"):
        sparse_jacobian(lambda i: i * 2, sparsity=np.eye(4))(np.arange(4))
    with pytest.raises(TypeError, match="real floating"):
        sparse_jacobian(lambda x: x, sparsity=np.eye(4))(x.astype(complex))
    with pytest.raises(TypeError, match="array or a pytree of arrays; got a leaf of type str"):
        sparse_jacobian(lambda x: (x, "label"), sparsity=np.eye(4))(x)
    with pytest.raises(ValueError, match="f must return a scalar"):
        sparse_hessian(anp.sin, sparsity=np.eye(4))(x)
    with pytest.raises(ValueError, match="mode must be one of"):
        sparse_jacobian(anp.sin, mode="sideways")
    with pytest.raises(ValueError, match="order must be one of"):
        sparse_jacfwd(anp.sin, order="random")
    with pytest.raises(ValueError, match="output must be one of"):
        sparse_hessian(rosenbrock, output="dense")
    with pytest.raises(TypeError):
        sparse_jacobian("not a function")
    with pytest.raises(ValueError, match="structurally symmetric"):
        sparse_hessian(rosenbrock, sparsity=np.triu(np.ones((4, 4))))(x)


# ---------------------------------------------------------------------------------------------
# Caching: a second call neither stages nor colors again


def test_second_call_does_not_retrace_or_recolor():
    jac = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4))
    y = brusselator_point(4)
    first = jac(y)
    assert (jac.traces, jac.colorings) == (1, 2)  # "auto" colors rows and columns
    second = jac(y * 2.0)
    assert (jac.traces, jac.colorings) == (1, 2)
    assert second.indices is first.indices  # the pattern's index arrays, not copies
    jac(y.astype(np.float32))  # a new signature
    assert (jac.traces, jac.colorings) == (2, 4)
    hess = sparse_hessian(rosenbrock, sparsity=tridiagonal(6))
    for _ in range(3):
        hess(np.ones(6))
    assert (hess.traces, hess.colorings) == (1, 1)


def test_later_calls_equal_the_first_and_the_dense_jacobian():
    jac = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4))
    values = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4), output="values")
    y = brusselator_point(4)
    for k in range(3):  # (the first call stages; later ones run the compiled graph directly)
        point = y * (1.0 + k)
        dense = np.asarray(ad.jacfwd(brusselator)(point))
        got = jac(point)
        np.testing.assert_allclose(got.toarray(), dense, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(values(point), got.data)
        assert type(got) is type(jac.sparsity(point)) and got.has_canonical_format
    assert jac.traces == 1 and values.traces == 1
    checked = sparse_jacobian(brusselator, sparsity=brusselator_pattern(4), check=True)
    np.testing.assert_array_equal(checked(point).data, got.data)  # (the general path)


def test_detected_pattern():
    pytest.importorskip("autodiff.sparse.detect")
    y = brusselator_point(5)
    jac = sparse_jacobian(brusselator)
    np.testing.assert_allclose(jac(y).toarray(), ad.jacfwd(brusselator)(y), rtol=1e-13)
    assert jac.coloring(y).ncolors <= 12
    x = np.random.default_rng(5).normal(size=9)
    h = sparse_hessian(rosenbrock)(x)
    np.testing.assert_allclose(h.toarray(), ad.hessian(rosenbrock)(x), rtol=1e-13)
    assert h.nnz == 25


# ---------------------------------------------------------------------------------------------
# Where users meet it: SciPy's solvers


@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_solve_ivp_with_the_sparse_jacobian(method):
    side = 6
    pattern = brusselator_pattern(side)
    jac = sparse_jacobian(brusselator, sparsity=pattern)
    y0 = brusselator_point(side)

    def rhs(t, y):
        return np.asarray(brusselator(y))

    ours = scipy.integrate.solve_ivp(
        rhs, (0.0, 1.0), y0, method=method, jac=lambda t, y: jac(y), rtol=1e-8, atol=1e-10
    )
    theirs = scipy.integrate.solve_ivp(
        rhs, (0.0, 1.0), y0, method=method, jac_sparsity=pattern, rtol=1e-8, atol=1e-10
    )
    assert ours.success and theirs.success
    np.testing.assert_allclose(ours.y[:, -1], theirs.y[:, -1], rtol=1e-6)


def test_trust_constr_with_the_sparse_hessian():
    n = 20
    hess = sparse_hessian(rosenbrock, sparsity=tridiagonal(n))
    gradient = ad.jit(ad.grad(rosenbrock))
    result = scipy.optimize.minimize(
        lambda x: float(rosenbrock(x)),
        np.full(n, 0.5),
        method="trust-constr",
        jac=lambda x: np.asarray(gradient(x)),
        hess=hess,
        options={"gtol": 1e-10, "xtol": 1e-14, "maxiter": 2000},
    )
    np.testing.assert_allclose(result.x, np.ones(n), atol=1e-6)


def test_newton_with_spsolve():
    # A discretised 1-D Bratu-like problem: -u'' + u^3 = 1, u(0) = u(1) = 0.
    n = 50
    h2 = (1.0 / (n + 1)) ** 2

    def residual(u):
        padded = anp.concatenate([anp.zeros(1), u, anp.zeros(1)])
        return (2.0 * u - padded[:-2] - padded[2:]) / h2 + u**3 - 1.0

    jac = sparse_jacobian(residual, sparsity=tridiagonal(n))
    u = np.zeros(n)
    for _ in range(20):
        step = scipy.sparse.linalg.spsolve(jac(u).tocsc(), -np.asarray(residual(u)))
        u = u + step
        if np.max(np.abs(step)) < 1e-13:
            break
    assert np.max(np.abs(np.asarray(residual(u)))) < 1e-9
