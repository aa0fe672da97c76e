"""Sparsity detection (autodiff/sparse/detect.py): patterns of the op table, control flow, pytrees,
the Brusselator and Rosenbrock patterns, errors, and which primitives have no rule.

Every case of the op table (tests/cases_*.py) is checked in float64: its detected global
pattern contains every nonzero of the dense Jacobian at two random points, the local pattern
at a point contains that point's nonzeros and lies within the global one, and, for cases
whose every primitive's rule is exact, the global pattern equals the union of the nonzeros.
Hessian patterns of `sum(f(x)**2)` contain the dense Hessian's nonzeros.
"""

import importlib
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.ops.sparsity import BUDGET
from autodiff.sparse.detect import _propagate, hessian_sparsity, jacobian_sparsity

CASES = []
for path in sorted(pathlib.Path(__file__).parent.glob("cases_*.py")):
    CASES.extend(importlib.import_module(path.stem).CASES)


def _flat(fun, args):
    """`fun` as a function of one flat vector (its arguments joined), with one flat output (its
    leaves joined), and that vector."""

    def g(v):
        parts, start = [], 0
        for a in args:
            parts.append(anp.reshape(v[start : start + a.size], a.shape))
            start += a.size
        leaves = ad.tree_util.tree_leaves(fun(*parts))
        return anp.concatenate([anp.ravel(leaf) for leaf in leaves])

    return g, np.concatenate([np.ravel(a) for a in args])


def _points(case):
    rng = np.random.default_rng(len(case.name))
    moved = tuple(a * (1 + 0.05 * rng.uniform(-1, 1, np.shape(a))) for a in case.args)
    return [tuple(np.asarray(a, np.float64) for a in case.args), moved]


def _nonzeros(matrix) -> np.ndarray:
    return np.abs(np.asarray(matrix)) > 0


def _exact(fun, args, argnums) -> bool:
    """Whether detection took only exact steps (every rule exact, no conservative fallback)."""
    return _propagate(fun, args, argnums, False, False, "jacobian_sparsity")[1].exact


def _dense_jacobian(fun, args):
    g, v = _flat(fun, args)
    return _nonzeros(ad.jacfwd(g)(v))


def _argnums(case):
    return tuple(range(len(case.args)))


# Cases whose arguments sit where a structural nonzero vanishes (a product with a zero
# factor computed from x, cancellations such as -|x| + x, ties, -inf): their patterns contain
# the nonzeros but not equal them.
VALUE_ZEROS = {
    "argsort_constant",
    "searchsorted_constant",
    "neg_abs_ops",
    "fftfreq_rfftfreq",
    "prod-one-zero",
    "prod-two-zeros",
    "angle_real",
    "xlogy_zeros",
    "xlog1py_zeros",
    "logsumexp_neg_inf",
    "var()-axisNone-keepdimsFalse",
    "var()-axisNone-keepdimsTrue",
}

# Cases whose dense reference fails: vmap of a matmul contracting an empty axis (the full
# SVD's empty blocks) raises in ops/products.py's batch rule.
DENSE_FAILS = {
    "svd_full(3, 2)",
    "svd_full(2, 3)",
    "svd_complex_full(3, 2)",
    "svd_complex_full(2, 3)",
}


def _checkable(case) -> bool:
    """Cases of real, non-empty arguments (what the dense Jacobian of the flat form handles)."""
    real = all(np.isrealobj(a) and np.size(a) > 0 for a in case.args)
    return real and case.name not in DENSE_FAILS


OP_CASES = [pytest.param(c, id=c.name, marks=c.marks) for c in CASES if _checkable(c)]


@pytest.mark.parametrize("case", OP_CASES)
def test_op_table_patterns(case):
    points = _points(case)
    if any(np.size(leaf) == 0 for leaf in ad.tree_util.tree_leaves(case.fun(*points[0]))):
        pytest.skip("an empty output (no Jacobian entries)")
    detect = jacobian_sparsity(case.fun, _argnums(case))
    local = jacobian_sparsity(case.fun, _argnums(case), local=True)
    pattern = detect(*points[0]).toarray()
    assert pattern.dtype == bool
    seen = np.zeros_like(pattern)
    for args in points:
        dense = _dense_jacobian(case.fun, args)
        assert dense.shape == pattern.shape
        assert not (dense & ~pattern).any(), "the global pattern misses a nonzero"
        at = local(*args).toarray()
        assert not (dense & ~at).any(), "the local pattern misses a nonzero"
        assert not (at & ~pattern).any(), "the local pattern is not within the global one"
        seen |= dense
    if case.name not in VALUE_ZEROS and _exact(case.fun, points[0], _argnums(case)):
        np.testing.assert_array_equal(pattern, seen)


@pytest.mark.parametrize("case", [p for p in OP_CASES if p.values[0].order >= 2])
def test_op_table_hessian_patterns(case):
    def scalar(*args):
        leaves = ad.tree_util.tree_leaves(case.fun(*args))
        return sum(anp.sum(anp.real(leaf) ** 2) for leaf in leaves)

    args = _points(case)[0]
    if any(np.size(leaf) == 0 for leaf in ad.tree_util.tree_leaves(case.fun(*args))):
        pytest.skip("an empty output (no Hessian terms)")
    pattern = hessian_sparsity(scalar, _argnums(case))(*args).toarray()
    np.testing.assert_array_equal(pattern, pattern.T)
    g, v = _flat(scalar, args)
    dense = _nonzeros(ad.hessian(lambda v: g(v)[0])(v))
    assert not (dense & ~pattern).any(), "the Hessian pattern misses a nonzero"


# ---------------------------------------------------------------------------------------------
# Exact patterns of composite functions.


def _brusselator(n: int):
    """The 2-D Brusselator reaction-diffusion residual on an n x n periodic grid (two species)."""
    alpha, a, b = 10.0, 3.4, 1.0

    def laplacian(u):
        return (
            anp.roll(u, 1, 0) + anp.roll(u, -1, 0) + anp.roll(u, 1, 1) + anp.roll(u, -1, 1) - 4 * u
        )

    def f(y):
        u, v = y[0], y[1]
        du = b + u * u * v - (a + 1) * u + alpha * laplacian(u)
        dv = a * u - u * u * v + alpha * laplacian(v)
        return anp.stack([du, dv])

    return f


def _brusselator_pattern(n: int) -> np.ndarray:
    idx = np.arange(2 * n * n).reshape(2, n, n)
    want = np.zeros((2 * n * n, 2 * n * n), bool)
    for s in range(2):
        for i in range(n):
            for j in range(n):
                row = idx[s, i, j]
                for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
                    want[row, idx[s, (i + di) % n, (j + dj) % n]] = True
                want[row, idx[1 - s, i, j]] = True
    return want


def test_brusselator_pattern_is_exact():
    n = 6
    y = np.random.default_rng(0).uniform(0.5, 2, (2, n, n))
    pattern = jacobian_sparsity(_brusselator(n))(y)
    assert pattern.shape == (2 * n * n, 2 * n * n)
    np.testing.assert_array_equal(pattern.toarray(), _brusselator_pattern(n))
    np.testing.assert_array_equal(
        pattern.toarray(), _nonzeros(ad.jacfwd(_brusselator(n))(y)).reshape(72, 72)
    )


def _rosenbrock(x):
    return anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_rosenbrock_hessian_pattern_is_tridiagonal():
    n = 7
    pattern = hessian_sparsity(_rosenbrock)(np.linspace(-1, 1, n)).toarray()
    want = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    np.testing.assert_array_equal(pattern, want)
    assert jacobian_sparsity(_rosenbrock)(np.ones(n)).toarray().all()


def test_patterns_at_scale():
    import time

    y = np.ones((2, 32, 32))
    jacobian_sparsity(_brusselator(32))(y)  # (warm: staging's first use)
    start = time.perf_counter()
    pattern = jacobian_sparsity(_brusselator(32))(y)
    assert time.perf_counter() - start < 1.0
    assert pattern.nnz == 2 * 32 * 32 * 6
    start = time.perf_counter()
    h = hessian_sparsity(_rosenbrock)(np.ones(100_000))
    assert time.perf_counter() - start < 10.0
    assert h.nnz == 3 * 100_000 - 2


# ---------------------------------------------------------------------------------------------
# Control flow, staged calls, pytrees.


def _check_contains(f, *args, argnums=0, jacobian=ad.jacfwd):
    """Global and local patterns contain the dense Jacobian's nonzeros; local within global."""
    pattern = jacobian_sparsity(f, argnums)(*args).toarray()
    local = jacobian_sparsity(f, argnums, local=True)(*args).toarray()
    dense = _nonzeros(jacobian(f, argnums)(*args)).reshape(pattern.shape)
    assert not (dense & ~local).any()
    assert not (local & ~pattern).any()
    return pattern, local, dense


def test_cond_takes_the_union_of_branches_and_locally_the_branch_taken():
    def f(x):
        return ad.cond(x[0] > 0, lambda v: v * 2.0, lambda v: anp.roll(v, 1), x)

    pattern, local, _ = _check_contains(f, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(
        pattern, np.eye(3, dtype=bool) | np.roll(np.eye(3, dtype=bool), 1, 0)
    )
    np.testing.assert_array_equal(local, np.eye(3, dtype=bool))


def test_switch():
    def f(x):
        return ad.switch(1, [lambda v: v[::-1], lambda v: anp.sin(v)], x)

    pattern, _, dense = _check_contains(f, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(pattern, dense)  # (a constant index: its branch only)


def test_fori_loop_static_bounds_is_exact():
    def f(x):
        return ad.fori_loop(0, 3, lambda i, v: v + anp.roll(v, 1) * v, x)

    pattern, local, dense = _check_contains(f, np.linspace(1, 2, 6))
    np.testing.assert_array_equal(pattern, dense)


def test_fori_loop_indexing_by_the_counter():
    def f(x):
        return ad.fori_loop(0, 4, lambda i, v: v.at[i + 1].set(v[i] * v[i + 1]), x)

    pattern, _, dense = _check_contains(f, np.linspace(1, 2, 5))
    np.testing.assert_array_equal(pattern, dense)


def test_scan_with_xs_and_long_scans():
    def f(x, length):
        def step(c, xi):
            c = c * xi + anp.roll(c, 1)
            return c, c[0]

        carry, ys = ad.scan(step, x[:3], anp.reshape(anp.tile(x[3:], length), (length, 3)))
        return anp.concatenate([carry, ys])

    x = np.linspace(1, 2, 6)
    _check_contains(lambda x: f(x, 4), x)
    _check_contains(lambda x: f(x, 300), x)  # (iterated to a fixed point)


def test_while_loop_iterates_to_a_fixed_point():
    def f(x):
        def body(c):
            i, v = c
            return i + 1, v + anp.roll(v, 1) * 0.5

        return ad.while_loop(lambda c: (c[0] < 2) & (c[1][0] < 100.0), body, (0, x))[1]

    x = np.linspace(1, 2, 5)
    pattern, local, dense = _check_contains(f, x)
    assert pattern.all()  # (globally: any number of steps)
    np.testing.assert_array_equal(local, dense)


def test_while_loop_with_a_known_trip_count_is_exact():
    def f(x):
        body = lambda c: (c[0] + 1, c[1] * anp.roll(c[1], 1))
        return ad.while_loop(lambda c: c[0] < 2, body, (0, x))[1]

    pattern, _, dense = _check_contains(f, np.linspace(1, 2, 5))
    np.testing.assert_array_equal(pattern, dense)
    assert not pattern.all()


def test_jit_checkpoint_custom_rules_pass_through_their_graphs():
    @ad.custom_jvp
    def g(x):
        return anp.sin(x[::-1])

    g.defjvp(
        lambda primals, tangents: (g(primals[0]), anp.cos(primals[0][::-1]) * tangents[0][::-1])
    )

    @ad.custom_vjp
    def h(x):
        return x * x[0]

    h.defvjp(
        lambda x: (h(x), x), lambda x, ct: (ct * x[0] + anp.sum(ct * x) * (anp.arange(5) == 0),)
    )

    def f(x):
        y = ad.jit(lambda v: v[1:] * v[:-1])(x)
        return ad.checkpoint(lambda v: anp.exp(v))(y) + g(x)[:-1] + h(x)[1:]

    pattern, _, dense = _check_contains(f, np.linspace(1, 2, 5), jacobian=ad.jacrev)
    np.testing.assert_array_equal(pattern, dense)


def test_pytrees_and_argnums():
    def f(p, scale):
        return {"a": p["w"] * scale, "b": anp.sum(p["v"])}

    p = {"w": np.ones(3), "v": np.ones(2)}
    pattern = jacobian_sparsity(f)(p, 2.0).toarray()
    want = np.zeros((4, 5), bool)
    want[3, 0:2] = True  # (leaves in key order: v then w)
    want[0:3, 2:5] = np.eye(3, dtype=bool)
    np.testing.assert_array_equal(pattern, want)
    both = jacobian_sparsity(f, (0, 1))(p, np.array(2.0)).toarray()
    assert both.shape == (4, 6)
    assert both[:3, 5].all() and not both[3, 5]


def test_products_with_a_constant_matrix_keep_its_sparsity():
    n = 6
    laplacian = np.diag(-2 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    for f in (
        lambda x: laplacian @ x,
        lambda x: anp.dot(x, laplacian),
        lambda x: anp.einsum("ij,jk->ik", laplacian, anp.reshape(x, (n, 1)) * np.ones((1, 2))),
        lambda x: laplacian[None] @ anp.reshape(x, (1, n, 1)),
    ):
        pattern, _, dense = _check_contains(f, np.linspace(1, 2, n))
        np.testing.assert_array_equal(pattern, dense)


def test_matmul_with_a_constant_and_contractions():
    def f(x):
        return anp.einsum("ij,jk->ik", x, x.T) @ x + anp.dot(x[0], x[1]) + x @ np.eye(3)

    _check_contains(f, np.arange(6.0).reshape(2, 3))


def test_hessian_of_products_and_where():
    def f(x):
        return anp.sum(
            x[0] * x[1] + anp.where(x[2] > 0, anp.sin(x[3]), x[4]) + anp.maximum(x[5], 0.0) ** 2
        )

    pattern = hessian_sparsity(f)(np.ones(6)).toarray()
    want = np.zeros((6, 6), bool)
    want[0, 1] = want[1, 0] = want[3, 3] = want[5, 5] = True
    np.testing.assert_array_equal(pattern, want)
    local = hessian_sparsity(f, local=True)(-np.ones(6)).toarray()
    assert not local[5, 5] and not (local & ~pattern).any()


def test_hessian_patterns_through_control_flow():
    def f(x):
        y = ad.fori_loop(0, 2, lambda i, v: v * anp.roll(v, 1), x[:4])
        z = ad.cond(x[4] > 0, lambda v: anp.sin(v), lambda v: v * 2.0, y)
        body = lambda c: (c[0] + 1, c[1] + 0.1 * c[1] * c[1])
        w = ad.while_loop(lambda c: c[0] < 2, body, (0, x[5:6]))[1]
        (s, _), _ = ad.scan(lambda c, xi: ((c[0] * xi, c[1]), None), (x[6], 0.0), x[7:])
        return anp.sum(z**2) + anp.sum(w) + s

    x = np.linspace(0.5, 1.5, 9)
    pattern = hessian_sparsity(f)(x).toarray()
    dense = _nonzeros(ad.jacfwd(ad.jacfwd(f))(x))
    np.testing.assert_array_equal(pattern, pattern.T)
    assert not (dense & ~pattern).any()
    np.testing.assert_array_equal(pattern[:4, :4], dense[:4, :4])
    assert not pattern[:5, 5:].any() and not pattern[5, 6:].any() and not pattern[6, 6]


def test_indexed_updates():
    def f(x):
        y = x.at[np.array([0, 2, 2])].multiply(x[3:6])
        return y.at[1].max(x[4]).at[::2].add(x[5])

    pattern, local, dense = _check_contains(f, np.linspace(1, 2, 6))
    dense[1, 1] = True  # (max(x[1], x[4]) takes x[4] here: x[1] only where it is larger)
    np.testing.assert_array_equal(pattern, dense)


# ---------------------------------------------------------------------------------------------
# Errors and limits.


def test_integer_inputs_are_refused_as_jacfwd_refuses_them():
    with pytest.raises(TypeError, match="requires real- or complex-valued inputs"):
        jacobian_sparsity(lambda x: x * 2)(np.arange(3))


def test_non_array_outputs_are_refused():
    with pytest.raises(TypeError, match="not a valid array type"):
        jacobian_sparsity(lambda x: "no")(np.ones(3))


def test_hessian_of_a_non_scalar_function_is_refused():
    with pytest.raises(TypeError, match="scalar-output functions"):
        hessian_sparsity(lambda x: x * x)(np.ones(3))


def test_a_pattern_over_budget_is_a_clear_error():
    n = int(np.sqrt(2 * BUDGET)) + 10
    with pytest.raises(MemoryError, match="Sparsity detection stopped"):
        jacobian_sparsity(lambda x: anp.cumsum(x))(np.ones(n))


# Primitives without a sparsity rule (each output element then depends on every input
# element): the torch face's view bookkeeping, never staged by the functional transforms.
WITHOUT_RULE = {
    "copy_slices",
    "invalid_view",
    "delayed_error",
}


def test_primitives_without_a_sparsity_rule():
    # (in a fresh interpreter: tests define primitives of their own)
    code = (
        "import autodiff, autodiff.autograd, autodiff.torch.nn\n"
        "from autodiff.core.primitive import all_primitives\n"
        "print(sorted({p.name for p in all_primitives() "
        "if p.differentiable and p.sparsity is None}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sorted(WITHOUT_RULE))
