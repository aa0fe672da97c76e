"""Coloring of sparsity patterns (autodiff.sparse): valid colorings for every kind and order,
exact decompression, the Numba kernels equal to their Python references, clear errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from autodiff.sparse import Coloring, check_coloring, color, greedy
from autodiff.sparse.coloring import ORDERS, _canonical_csr, _identity, _structure, _vertex_order

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def patterns(draw, symmetric=False, max_size=12):
    """A dense boolean pattern: random shape (zero sizes included) and density."""
    m = draw(st.integers(0, max_size))
    n = m if symmetric else draw(st.integers(0, max_size))
    density = draw(st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    pattern = np.random.default_rng(seed).random((m, n)) < density
    if symmetric:
        pattern = pattern | pattern.T
        if draw(st.booleans()):
            pattern |= np.eye(n, dtype=bool)
    return pattern


def values_on(pattern: np.ndarray, seed: int = 0) -> np.ndarray:
    """Random values on the pattern (a few of them exactly zero), zero elsewhere."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(pattern.shape)
    values[rng.random(pattern.shape) < 0.1] = 0.0
    return np.where(pattern, values, 0.0)


def assert_exact(coloring: Coloring, pattern: np.ndarray, matrix: np.ndarray, compressed):
    recovered = coloring.decompress(compressed)
    assert isinstance(recovered, sp.csr_array)
    assert recovered.shape == pattern.shape
    expected = sp.csr_array(pattern)
    np.testing.assert_array_equal(recovered.indptr, expected.indptr)
    np.testing.assert_array_equal(recovered.indices, expected.indices)  # explicit zeros kept
    np.testing.assert_array_equal(recovered.toarray(), matrix)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["column", "row"])
@SETTINGS
@given(pattern=patterns())
def test_jacobian_colorings_are_valid_and_decompress_exactly(kind, order, pattern):
    coloring = color(pattern, kind, order)
    check_coloring(pattern, coloring)
    J = values_on(pattern)
    seeds = coloring.seeds()
    assert seeds.dtype == np.float64
    assert_exact(coloring, pattern, J, J @ seeds if kind == "column" else seeds.T @ J)


@pytest.mark.parametrize("order", ORDERS)
@SETTINGS
@given(pattern=patterns(symmetric=True))
def test_star_colorings_are_valid_and_decompress_exactly(order, pattern):
    coloring = color(sp.coo_array(pattern), "star", order)
    check_coloring(pattern, coloring)
    lower = np.tril(values_on(pattern))
    H = lower + np.tril(lower, -1).T
    recovered = coloring.decompress(H @ coloring.seeds())
    assert_exact(coloring, pattern, H, H @ coloring.seeds())
    assert (recovered != recovered.T).nnz == 0  # one value for (i, j) and (j, i)


SPECIAL = {
    "empty rows and columns": np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]]),
    "dense": np.ones((4, 5)),
    "diagonal": np.eye(5),
    "1x1": np.ones((1, 1)),
    "1x1 zero": np.zeros((1, 1)),
    "0x0": np.zeros((0, 0)),
    "0x3": np.zeros((0, 3)),
    "3x0": np.zeros((3, 0)),
    "all zero": np.zeros((3, 4)),
}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["column", "row", "star"])
@pytest.mark.parametrize("name", SPECIAL)
def test_special_patterns(name, kind, order):
    pattern = SPECIAL[name] != 0
    if kind == "star" and pattern.shape[0] != pattern.shape[1]:
        pytest.skip("star colorings are of square patterns")
    coloring = color(pattern, kind, order)
    check_coloring(pattern, coloring)
    M = values_on(pattern)
    M = M + M.T - np.diag(np.diag(M)) if kind == "star" else M
    compressed = coloring.seeds().T @ M if kind == "row" else M @ coloring.seeds()
    assert_exact(coloring, pattern, M, compressed)
    if name == "dense" and kind != "star":
        assert coloring.ncolors == (pattern.shape[1] if kind == "column" else pattern.shape[0])
    if name == "diagonal":
        assert coloring.ncolors == 1


def test_sparse_inputs_any_format_duplicates_and_explicit_zeros():
    # Stored entries are the structure: an explicit zero counts, duplicates count once.
    coo = sp.coo_array(([1.0, 0.0, 2.0, 3.0], ([0, 0, 1, 1], [0, 2, 1, 1])), shape=(2, 3))
    expected = np.array([[1, 0, 1], [0, 1, 0]], bool)
    for pattern in (coo, coo.tocsc(), sp.csr_matrix(coo), coo.tolil()):
        coloring = color(pattern)
        assert coloring.ncolors == 2
        assert len(coloring.indices) == 3
        check_coloring(expected, coloring)
    unsorted = sp.csr_array((np.ones(3), np.array([2, 0, 1]), np.array([0, 2, 3])), shape=(2, 3))
    coloring = color(unsorted)
    np.testing.assert_array_equal(coloring.indices, [0, 2, 1])
    np.testing.assert_array_equal(unsorted.indices, [2, 0, 1])  # the input is left alone


def test_decompress_values_reads_batches():
    pattern = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool)
    coloring = color(pattern)
    Js = np.stack([values_on(pattern, seed) for seed in range(4)]).reshape(2, 2, 3, 3)
    values = coloring.decompress_values(Js @ coloring.seeds())
    assert values.shape == (2, 2, 6)
    np.testing.assert_array_equal(values[1, 0], Js[1, 0][pattern])
    with pytest.raises(ValueError, match="decompress_values reads batches"):
        coloring.decompress(Js @ coloring.seeds())


def test_coloring_repr_plan_and_read_only_structure():
    coloring = color(np.eye(3) + np.eye(3, k=1), "row", "largest_first")
    assert repr(coloring) == (
        "Coloring(kind='row', order='largest_first', shape=(3, 3), nnz=5, ncolors=2)"
    )
    assert coloring.compressed_shape == (2, 3)
    compressed = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(
        coloring.decompress(compressed).data,
        compressed[coloring.gather_rows, coloring.gather_cols],
    )
    with pytest.raises(ValueError):
        coloring.indices[0] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        coloring.ncolors = 1


def brusselator_pattern(n: int) -> np.ndarray:
    """The 2-D Brusselator Jacobian's pattern on an n x n periodic grid, unknowns ordered
    (i, j, species): each species' 5-point Laplacian, the two species coupled pointwise."""
    size = 2 * n * n
    pattern = np.zeros((size, size), bool)
    for i in range(n):
        for j in range(n):
            for species in (0, 1):
                row = 2 * (i * n + j) + species
                pattern[row, row - species + 1 - species] = True  # the other species
                for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
                    pattern[row, 2 * (((i + di) % n) * n + (j + dj) % n) + species] = True
    return pattern


def test_brusselator_and_chained_rosenbrock_color_counts():
    pattern = brusselator_pattern(8)
    assert (pattern.sum(axis=1) == 6).all()
    counts = {order: color(pattern, "column", order).ncolors for order in ORDERS}
    assert min(counts.values()) <= 12, counts
    band = np.eye(1000, dtype=bool) | np.eye(1000, k=1, dtype=bool) | np.eye(1000, k=-1, dtype=bool)
    for order in ORDERS:
        coloring = color(band, "star", order)
        check_coloring(band, coloring)
        assert coloring.ncolors <= 3


@pytest.mark.parametrize("order", ORDERS)
@SETTINGS
@given(pattern=patterns(max_size=30))
def test_kernels_equal_references_on_jacobian_patterns(order, pattern):
    csr = _canonical_csr(pattern)
    rows, cols = _structure(csr), _structure(csr.tocsc())
    for outer, inner in ((cols, rows), (rows, cols)):
        visit = _vertex_order(outer, inner, order, kernels=True)
        np.testing.assert_array_equal(visit, _vertex_order(outer, inner, order, kernels=False))
        np.testing.assert_array_equal(
            greedy.greedy_distance2(outer, inner, visit, kernels=True),
            greedy.greedy_distance2(outer, inner, visit, kernels=False),
        )


@pytest.mark.parametrize("order", ORDERS)
@SETTINGS
@given(pattern=patterns(symmetric=True, max_size=30))
def test_kernels_equal_references_on_symmetric_patterns(order, pattern):
    adjacency = _structure(_canonical_csr(pattern))
    identity = _identity(pattern.shape[0])
    visit = _vertex_order(identity, adjacency, order, kernels=True)
    np.testing.assert_array_equal(visit, _vertex_order(identity, adjacency, order, kernels=False))
    colors = greedy.greedy_star(adjacency, visit, kernels=True)
    np.testing.assert_array_equal(colors, greedy.greedy_star(adjacency, visit, kernels=False))
    ncolors = int(colors.max(initial=-1)) + 1
    for fast, reference in zip(
        greedy.star_recovery(adjacency, colors, ncolors, kernels=True),
        greedy.star_recovery(adjacency, colors, ncolors, kernels=False),
    ):
        np.testing.assert_array_equal(fast, reference)


def test_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of 'column', 'row', 'star'; got 'col'"):
        color(np.eye(2), "col")
    with pytest.raises(ValueError, match="order must be one of 'natural', 'largest_first'"):
        color(np.eye(2), order="random")
    for kind in ("acyclic", "bidirectional"):
        with pytest.raises(NotImplementedError, match=kind):
            color(np.eye(2), kind)
    with pytest.raises(TypeError):
        color(np.eye(2), kinds="row")
    with pytest.raises(ValueError, match="must be 2-D; got shape \\(3,\\)"):
        color(np.ones(3))
    with pytest.raises(ValueError, match="square pattern; got shape \\(2, 3\\)"):
        color(np.ones((2, 3)), "star")
    with pytest.raises(ValueError, match="structurally symmetric pattern; \\(0, 1\\) is stored"):
        color(np.array([[1, 1], [0, 1]]), "star")


def test_decompress_rejects_wrong_shapes():
    coloring = color(np.array([[1, 1, 0], [0, 1, 1]]))
    with pytest.raises(ValueError, match=r"shape \(3, 2\); a column coloring of a 2x3 pattern "):
        coloring.decompress(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"expects \(2, 2\) \(J @ seeds\(\)\)"):
        coloring.decompress(np.zeros(4))
    star = color(np.ones((2, 2)), "star")
    with pytest.raises(ValueError, match=r"expects \(2, 2\) \(H @ seeds\(\)\)"):
        star.decompress(np.zeros((2, 3)))


def test_check_coloring_names_a_violation():
    pattern = np.array([[1, 1, 0], [0, 1, 1]], bool)
    coloring = color(pattern)
    with pytest.raises(ValueError, match="columns 1 and 2 share row 1 and color 0"):
        check_coloring(pattern, dataclasses.replace(coloring, colors=np.array([1, 0, 0])))
    rows = color(pattern, "row")
    with pytest.raises(ValueError, match="rows 0 and 1 share column 1 and color 0"):
        check_coloring(pattern, dataclasses.replace(rows, colors=np.array([0, 0])))
    with pytest.raises(ValueError, match="must be 3 colors in \\[0, 2\\)"):
        check_coloring(pattern, dataclasses.replace(coloring, colors=np.array([0, 1, 2])))
    path = np.eye(4, dtype=bool) | np.eye(4, k=1, dtype=bool) | np.eye(4, k=-1, dtype=bool)
    star = color(path, "star")
    with pytest.raises(ValueError, match="the path 0 - 1 - 2 - 3 has only colors 0 and 1"):
        check_coloring(path, dataclasses.replace(star, colors=np.array([0, 1, 0, 1])))
    with pytest.raises(ValueError, match="neighbours 0 and 1 share color 0"):
        check_coloring(path, dataclasses.replace(star, colors=np.array([0, 0, 1, 2])))


@pytest.mark.parametrize("kind", ["column", "row", "star"])
def test_larger_random_patterns(kind):
    rng = np.random.default_rng(1)
    for density in (0.005, 0.02, 0.1):
        pattern = rng.random((300, 300 if kind == "star" else 240)) < density
        if kind == "star":
            pattern |= pattern.T
        for order in ORDERS:
            coloring = color(sp.csr_array(pattern), kind, order)
            check_coloring(pattern, coloring)
            M = values_on(pattern)
            M = M + M.T if kind == "star" else M
            compressed = coloring.seeds().T @ M if kind == "row" else M @ coloring.seeds()
            assert_exact(coloring, pattern, M, compressed)
