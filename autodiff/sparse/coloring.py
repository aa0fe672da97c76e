"""Coloring of sparsity patterns: which columns (rows, vertices) share a seed, and how a
compressed Jacobian or Hessian is read back into the pattern.

`color(pattern, kind, order)` groups the columns of a Jacobian pattern that share no row
("column", forward mode: J @ seeds), its rows that share no column ("row", reverse mode:
seeds.T @ J), or the vertices of a symmetric pattern so that each entry is read directly off
H @ seeds ("star", Hessians by Hessian-vector products). The greedy orders and the
recovery rules follow Gebremedhin, Manne & Pothen 2005, "What color is your Jacobian?"
(SIAM Review). The loops run as Numba kernels once Numba pays for itself (`greedy.py`,
beside their references); the recovery plan is index arrays, so decompression is one gather.

SciPy is imported on first use, not at `import autodiff`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autodiff.kernels._numba import kernels_ready
from autodiff.sparse import greedy

KINDS = ("column", "row", "star")
NOT_IMPLEMENTED_KINDS = ("acyclic", "bidirectional")
ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree")

# What a Numba kernel saves against the Python reference per step of a greedy loop, for
# tiering (kernels_ready): a set operation against an array access.
_NS_SAVED_PER_STEP = 150.0

# What the compressed matrix is, per kind (for errors).
_COMPRESSED = {"column": "J @ seeds()", "row": "seeds().T @ J", "star": "H @ seeds()"}


def _scipy_sparse():
    import scipy.sparse

    return scipy.sparse


@dataclass(frozen=True, eq=False, repr=False)
class Coloring:
    """A coloring of a sparsity pattern and the plan that reads a compressed matrix back.

    `colors[j]` is the color (0-based) of column j (kind "column"), row j ("row") or vertex
    j ("star"); `indptr` and `indices` are the pattern's CSR structure (sorted, as SciPy
    stores it); entry p of the decompressed matrix is `compressed[gather_rows[p],
    gather_cols[p]]`.
    """

    kind: str
    order: str
    shape: tuple[int, int]
    colors: np.ndarray
    ncolors: int
    indptr: np.ndarray
    indices: np.ndarray
    gather_rows: np.ndarray
    gather_cols: np.ndarray
    _flat: np.ndarray = field(repr=False)  # gather_rows * compressed width + gather_cols

    def __repr__(self) -> str:
        return (
            f"Coloring(kind={self.kind!r}, order={self.order!r}, shape={self.shape}, "
            f"nnz={len(self.indices)}, ncolors={self.ncolors})"
        )

    @property
    def compressed_shape(self) -> tuple[int, int]:
        """The shape of the compressed matrix `decompress` reads."""
        m, n = self.shape
        k = self.ncolors
        return {"column": (m, k), "row": (k, n), "star": (n, k)}[self.kind]

    def seeds(self) -> np.ndarray:
        """The 0/1 compression matrix (float64): n x k for "column" and "star", m x k for
        "row"; `seeds()[j, c]` is 1 where `colors[j] == c`."""
        out = np.zeros((len(self.colors), self.ncolors))
        out[np.arange(len(self.colors)), self.colors] = 1.0
        return out

    def decompress_values(self, compressed: Any) -> np.ndarray:
        """The stored values of the matrix, in CSR order, from its compressed form; leading
        batch dimensions of `compressed` carry over."""
        compressed = np.asarray(compressed)
        if compressed.ndim < 2 or compressed.shape[-2:] != self.compressed_shape:
            raise ValueError(
                f"decompress: compressed has shape {compressed.shape}; a {self.kind} coloring "
                f"of a {self.shape[0]}x{self.shape[1]} pattern with {self.ncolors} colors "
                f"expects {self.compressed_shape} ({_COMPRESSED[self.kind]})"
            )
        batch = compressed.shape[:-2]
        return np.take(compressed.reshape(batch + (-1,)), self._flat, axis=-1)

    def decompress(self, compressed: Any):
        """The matrix as a `scipy.sparse.csr_array` with exactly the pattern's structure
        (explicit zeros kept), from its compressed form (`compressed_shape`).

        The result shares its (read-only) `indptr` and `indices` with the coloring.
        """
        values = self.decompress_values(compressed)
        if values.ndim != 1:
            raise ValueError(
                f"decompress: compressed has batch dimensions {values.shape[:-1]}; "
                "decompress_values reads batches"
            )
        out = _scipy_sparse().csr_array(
            (values, self.indices, self.indptr), shape=self.shape, copy=False
        )
        out.has_canonical_format = True
        return out


def color(pattern: Any, kind: str = "column", order: str = "natural") -> Coloring:
    """Color a sparsity pattern for compressed evaluation of its Jacobian or Hessian.

    Arguments:
        pattern: the structural pattern, m x n: a `scipy.sparse` array or matrix (its
            stored entries, explicit zeros included) or a dense array (its nonzeros).
        kind: "column" (columns sharing a row get different colors: J @ seeds in forward
            mode), "row" (rows sharing a column: seeds.T @ J in reverse mode) or "star"
            (a square, structurally symmetric pattern: every entry read directly off
            H @ seeds, for Hessians from Hessian-vector products).
        order: the order in which the greedy coloring visits the columns, rows or
            vertices: "natural", "largest_first" (by degree), "smallest_last" (each
            vertex of least degree among those left goes last) or "incidence_degree"
            (each next vertex has the most neighbours already visited).

    Returns:
        A `Coloring`: `colors`, `ncolors`, `seeds()` and `decompress(compressed)`.

    Example:
        >>> import numpy as np
        >>> J = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]])
        >>> c = color(J != 0)
        >>> c
        Coloring(kind='column', order='natural', shape=(2, 3), nnz=4, ncolors=2)
        >>> c.colors
        array([0, 1, 0])
        >>> c.decompress(J @ c.seeds()).toarray()
        array([[1., 2., 0.],
               [0., 3., 4.]])
    """
    if kind in NOT_IMPLEMENTED_KINDS:
        raise NotImplementedError(f"color: kind={kind!r} is not implemented yet")
    if kind not in KINDS:
        raise ValueError(f"color: kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    if order not in ORDERS:
        raise ValueError(
            f"color: order must be one of {', '.join(map(repr, ORDERS))}; got {order!r}"
        )
    csr = _canonical_csr(pattern)
    if kind == "star":
        return _color_star(csr, order)
    return _color_distance2(csr, kind, order)


def _canonical_csr(pattern: Any):
    """The pattern as a CSR array with sorted indices and no duplicates."""
    sparse = _scipy_sparse()
    if sparse.issparse(pattern):
        if pattern.ndim != 2:
            raise ValueError(f"color: the pattern must be 2-D; got shape {pattern.shape}")
        csr = sparse.csr_array(pattern)
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        return csr
    dense = np.asarray(pattern)
    if dense.ndim != 2:
        raise ValueError(f"color: the pattern must be 2-D; got shape {dense.shape}")
    return sparse.csr_array(dense != 0)


def _structure(matrix) -> greedy.Structure:
    return matrix.indptr.astype(np.intp), matrix.indices.astype(np.intp)


def _identity(n: int) -> greedy.Structure:
    return np.arange(n + 1, dtype=np.intp), np.arange(n, dtype=np.intp)


def _vertex_order(outer, inner, order: str, kernels: bool) -> np.ndarray:
    n = len(outer[0]) - 1
    if order == "natural":
        return np.arange(n, dtype=np.intp)
    if order == "incidence_degree":
        return greedy.dynamic_order(outer, inner, np.full(n, n - 1, np.intp), kernels)
    degree = greedy.degrees(outer, inner, kernels)
    if order == "largest_first":
        return np.argsort(-degree, kind="stable").astype(np.intp)
    return greedy.dynamic_order(outer, inner, degree, kernels)[::-1].copy()


def _work(outer_lengths: np.ndarray, inner_lengths: np.ndarray) -> int:
    """About how many steps a greedy pass takes: each inner row is walked once per entry."""
    return int(outer_lengths.sum()) + int(np.dot(inner_lengths, inner_lengths))


def _read_only(*arrays: np.ndarray) -> None:
    for array in arrays:
        array.flags.writeable = False


def _color_distance2(csr, kind: str, order: str) -> Coloring:
    csc = csr.tocsc()
    rows, cols = _structure(csr), _structure(csc)
    outer, inner = (cols, rows) if kind == "column" else (rows, cols)
    kernels = kernels_ready(_work(np.diff(outer[0]), np.diff(inner[0])), _NS_SAVED_PER_STEP)
    visit = _vertex_order(outer, inner, order, kernels)
    colors = greedy.greedy_distance2(outer, inner, visit, kernels)
    ncolors = int(colors.max()) + 1 if len(colors) else 0
    entry_rows = np.repeat(np.arange(csr.shape[0], dtype=np.intp), np.diff(csr.indptr))
    if kind == "column":
        gather_rows, gather_cols, width = entry_rows, colors[rows[1]], ncolors
    else:
        gather_rows, gather_cols, width = colors[entry_rows], rows[1], csr.shape[1]
    return _coloring(csr, kind, order, colors, ncolors, gather_rows, gather_cols, width)


def _coloring(csr, kind, order, colors, ncolors, gather_rows, gather_cols, width) -> Coloring:
    indptr, indices = csr.indptr.copy(), csr.indices.copy()
    flat = gather_rows * width + gather_cols
    _read_only(colors, indptr, indices, gather_rows, gather_cols, flat)
    shape = (int(csr.shape[0]), int(csr.shape[1]))
    return Coloring(
        kind, order, shape, colors, ncolors, indptr, indices, gather_rows, gather_cols, flat
    )


def _color_star(csr, order: str) -> Coloring:
    _require_symmetric(csr, "color")
    adjacency = _structure(csr)
    lengths = np.diff(adjacency[0])
    # The star loop walks three steps out from each vertex, not two.
    kernels = kernels_ready(_work(lengths, lengths) * 3, _NS_SAVED_PER_STEP)
    n = csr.shape[0]
    visit = _vertex_order(_identity(n), adjacency, order, kernels)
    colors = greedy.greedy_star(adjacency, visit, kernels)
    ncolors = int(colors.max()) + 1 if n else 0
    gather_rows, gather_cols = greedy.star_recovery(adjacency, colors, ncolors, kernels)
    return _coloring(csr, "star", order, colors, ncolors, gather_rows, gather_cols, ncolors)


def _require_symmetric(csr, caller: str) -> None:
    if csr.shape[0] != csr.shape[1]:
        raise ValueError(f"{caller}: a star coloring needs a square pattern; got shape {csr.shape}")
    transpose = csr.T.tocsr()
    if not (
        np.array_equal(csr.indptr, transpose.indptr)
        and np.array_equal(csr.indices, transpose.indices)
    ):
        i, j = _asymmetric_entry(csr, transpose)
        raise ValueError(
            f"{caller}: a star coloring needs a structurally symmetric pattern; "
            f"({i}, {j}) is stored but ({j}, {i}) is not"
        )


def _asymmetric_entry(csr, transpose) -> tuple[int, int]:
    """An entry (i, j) stored in `csr` whose mirror (j, i) is not."""
    difference = (csr.astype(bool).astype(np.int8) - transpose.astype(bool).astype(np.int8)).tocoo()
    where = np.flatnonzero(difference.data > 0)[0]
    return int(difference.row[where]), int(difference.col[where])


def check_coloring(pattern: Any, coloring: Coloring) -> None:
    """Raise ValueError naming a violation unless `coloring` is valid for `pattern`:
    structurally orthogonal ("column": no two columns of one color share a row; "row": the
    same for rows) or a star coloring ("star": neighbours differ in color, and no path on
    four vertices has only two colors), with every color in range."""
    csr = _canonical_csr(pattern)
    colors = np.asarray(coloring.colors)
    size = csr.shape[0] if coloring.kind == "row" else csr.shape[1]
    if colors.shape != (size,) or (
        size and not 0 <= colors.min() <= colors.max() < coloring.ncolors
    ):
        raise ValueError(
            f"check_coloring: {coloring.kind} colors of shape {colors.shape} for a pattern of "
            f"shape {csr.shape} must be {size} colors in [0, {coloring.ncolors})"
        )
    if coloring.kind == "star":
        _check_star(csr, colors)
    else:
        matrix = csr if coloring.kind == "column" else csr.T.tocsr()
        clash = _clashes(matrix, colors)
        if clash is not None:
            line, a, b = clash
            names = ("columns", "row") if coloring.kind == "column" else ("rows", "column")
            raise ValueError(
                f"check_coloring: {names[0]} {a} and {b} share {names[1]} {line} and color "
                f"{colors[a]}"
            )


def _clashes(csr, colors: np.ndarray):
    """(row, a, b): two distinct columns a and b of one color stored in one row, or None."""
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    keys = rows * (int(colors.max(initial=0)) + 1) + colors[csr.indices]
    sort = np.argsort(keys, kind="stable")
    same = np.flatnonzero(keys[sort][1:] == keys[sort][:-1])
    if not len(same):
        return None
    first, second = sort[same[0]], sort[same[0] + 1]
    return int(rows[first]), int(csr.indices[first]), int(csr.indices[second])


def _check_star(csr, colors: np.ndarray) -> None:
    _require_symmetric(csr, "check_coloring")
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    off_diagonal = rows != csr.indices
    clash = np.flatnonzero(off_diagonal & (colors[rows] == colors[csr.indices]))
    if len(clash):
        i, j = int(rows[clash[0]]), int(csr.indices[clash[0]])
        raise ValueError(f"check_coloring: neighbours {i} and {j} share color {colors[i]}")
    # Distance-1 colored, an entry (i, j) is read in neither row i nor row j exactly when
    # both rows repeat a color: k - i - j - l is then a path with two colors.
    keys = rows * (int(colors.max(initial=0)) + 1) + colors[csr.indices]
    _, where, counts = np.unique(keys, return_inverse=True, return_counts=True)
    repeated = counts[where] > 1  # entry (i, j): another k in row i has j's color
    mirror = _mirror_positions(csr, rows)
    bad = np.flatnonzero(off_diagonal & repeated & repeated[mirror])
    if len(bad):
        i, j = int(rows[bad[0]]), int(csr.indices[bad[0]])
        k = _other_of_color(csr, i, j, colors)
        l = _other_of_color(csr, j, i, colors)
        raise ValueError(
            f"check_coloring: the path {k} - {i} - {j} - {l} has only colors {colors[k]} "
            f"and {colors[i]} (not a star coloring)"
        )


def _mirror_positions(csr, rows: np.ndarray) -> np.ndarray:
    """For each stored (i, j), the position of (j, i) (the pattern is symmetric)."""
    n = csr.shape[0]
    keys = rows.astype(np.int64) * n + csr.indices  # sorted: CSR order
    return np.searchsorted(keys, csr.indices.astype(np.int64) * n + rows)


def _other_of_color(csr, i: int, j: int, colors: np.ndarray) -> int:
    """A neighbour of i other than j with j's color."""
    row = csr.indices[csr.indptr[i] : csr.indptr[i + 1]]
    return int(next(k for k in row if k != j and k != i and colors[k] == colors[j]))
