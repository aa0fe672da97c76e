"""The greedy loops of graph coloring: each as a Numba kernel beside its plain-Python reference.

A graph is given by two CSR structures `outer` and `inner` (each `(indptr, indices)`): the
neighbours of vertex v are the vertices `w != v` in `inner[r]` for every `r` in `outer[v]`.
Columns of a pattern with outer = its CSC and inner = its CSR give the column intersection
graph (columns sharing a row), rows the other way round; an identity outer gives the
adjacency graph of a square pattern itself. So one set of loops serves every kind.

The loops are sequential by nature (each vertex looks at the colors already given), so the
kernels are Numba loops over marker arrays; the references say the same with Python sets
and lists, for the tests to compare (`kernels=False` runs them): every tie is broken by a
stated rule, so both give equal results. Colors are 0-based; -1 is uncolored.
"""

from __future__ import annotations

import numpy as np

from autodiff.kernels._numba import njit_lazy

Structure = tuple[np.ndarray, np.ndarray]  # (indptr, indices) of a CSR or CSC, intp


def _lists(structure: Structure) -> list[list[int]]:
    indptr, indices = structure
    return [part.tolist() for part in np.split(indices, indptr[1:-1])] if len(indptr) > 1 else []


def _neighbours_python(outer: list, inner: list, v: int) -> list[int]:
    """The neighbours of v in the order the kernels meet them (each once)."""
    return list(dict.fromkeys(w for r in outer[v] for w in inner[r] if w != v))


# Degrees in the graph.


def degrees(outer: Structure, inner: Structure, kernels: bool) -> np.ndarray:
    """The number of neighbours of each vertex."""
    n = len(outer[0]) - 1
    if kernels:
        return _degrees_numba(*outer, *inner, n)
    outer_lists, inner_lists = _lists(outer), _lists(inner)
    found = [len(_neighbours_python(outer_lists, inner_lists, v)) for v in range(n)]
    return np.array(found, dtype=np.intp).reshape(n)


@njit_lazy()
def _degrees_numba(outer_ptr, outer_idx, inner_ptr, inner_idx, n):
    degree = np.zeros(n, np.intp)
    seen = np.full(n, -1, np.intp)
    for v in range(n):
        seen[v] = v
        for p in range(outer_ptr[v], outer_ptr[v + 1]):
            r = outer_idx[p]
            for q in range(inner_ptr[r], inner_ptr[r + 1]):
                w = inner_idx[q]
                if seen[w] != v:
                    seen[w] = v
                    degree[v] += 1
    return degree


# Dynamic orders: smallest-last and incidence-degree.


def dynamic_order(outer: Structure, inner: Structure, score: np.ndarray, kernels: bool):
    """Vertices taken one by one, each time one of least score; taking a vertex lowers the
    score of each of its neighbours not yet taken by one. Scores are in [0, n).

    With score = degree this is the removal sequence of smallest-last (whose order is its
    reverse); with score = n - 1 it is incidence-degree (the most neighbours already taken
    first). Ties: the vertices of one score form a stack, lowest index on top at the start,
    and a vertex whose score drops goes on top of its new stack (Matula and Beck's buckets:
    linear time; the reference leaves a moved vertex's old entry behind, the kernel unlinks
    it).
    """
    n = len(score)
    if kernels:
        return _dynamic_order_numba(*outer, *inner, score.astype(np.intp))
    outer_lists, inner_lists = _lists(outer), _lists(inner)
    current = score.tolist()
    stacks: list[list[int]] = [[] for _ in range(n)]
    for v in reversed(range(n)):
        stacks[current[v]].append(v)
    taken = [False] * n
    order: list[int] = []
    lowest = 0
    while len(order) < n:
        while not stacks[lowest]:
            lowest += 1
        v = stacks[lowest].pop()
        if taken[v] or current[v] != lowest:
            continue  # left behind when its score dropped
        taken[v] = True
        order.append(v)
        for w in _neighbours_python(outer_lists, inner_lists, v):
            if not taken[w]:
                current[w] -= 1
                stacks[current[w]].append(w)
                lowest = min(lowest, current[w])
    return np.array(order, dtype=np.intp).reshape(n)


@njit_lazy()
def _dynamic_order_numba(outer_ptr, outer_idx, inner_ptr, inner_idx, score):
    # The stacks as doubly linked lists through below/above: node v < n is vertex v, node
    # n + s heads the stack of score s, node 2n is the end; no branch for an empty stack.
    n = score.shape[0]
    end = 2 * n
    below = np.full(2 * n + 1, end, np.intp)
    above = np.full(2 * n + 1, end, np.intp)
    for v in range(n - 1, -1, -1):
        head, top = n + score[v], below[n + score[v]]
        below[v], above[v], above[top], below[head] = top, head, v, v
    seen = np.full(n, -1, np.intp)
    order = np.empty(n, np.intp)
    lowest = 0
    for count in range(n):
        while below[n + lowest] == end:
            lowest += 1
        v = below[n + lowest]
        up, down = above[v], below[v]
        below[up], above[down] = down, up
        order[count] = v
        seen[v] = v
        score[v] = -1  # taken
        for p in range(outer_ptr[v], outer_ptr[v + 1]):
            for q in range(inner_ptr[outer_idx[p]], inner_ptr[outer_idx[p] + 1]):
                w = inner_idx[q]
                if seen[w] != v and score[w] >= 0:
                    seen[w] = v
                    up, down = above[w], below[w]
                    below[up], above[down] = down, up
                    score[w] -= 1
                    head, top = n + score[w], below[n + score[w]]
                    below[w], above[w], above[top], below[head] = top, head, w, w
                    lowest = min(lowest, score[w])
    return order


# Distance-2 coloring (column and row kinds): neighbours get different colors.


def greedy_distance2(outer: Structure, inner: Structure, order: np.ndarray, kernels: bool):
    """Colors in `order`, each vertex the least color no neighbour has."""
    n = len(order)
    if kernels:
        return _greedy_distance2_numba(*outer, *inner, order)
    outer_lists, inner_lists = _lists(outer), _lists(inner)
    colors = [-1] * n
    for v in order.tolist():
        used = {colors[w] for w in _neighbours_python(outer_lists, inner_lists, v)}
        colors[v] = _least_color_not_in(used)
    return np.array(colors, dtype=np.intp).reshape(n)


def _least_color_not_in(used: set[int]) -> int:
    color = 0
    while color in used:
        color += 1
    return color


@njit_lazy()
def _greedy_distance2_numba(outer_ptr, outer_idx, inner_ptr, inner_idx, order):
    n = order.shape[0]
    colors = np.full(n, -1, np.intp)
    forbidden = np.full(n + 1, -1, np.intp)  # forbidden[c] == v: c is taken near v
    for v in order:
        for p in range(outer_ptr[v], outer_ptr[v + 1]):
            r = outer_idx[p]
            for q in range(inner_ptr[r], inner_ptr[r + 1]):
                w = inner_idx[q]
                if w != v and colors[w] >= 0:
                    forbidden[colors[w]] = v
        color = 0
        while forbidden[color] == v:
            color += 1
        colors[v] = color
    return colors


# Star coloring (Gebremedhin, Manne & Pothen 2005, Algorithm 4.1): a distance-1 coloring in
# which no path on four vertices is bicolored, so every entry of a symmetric matrix is read
# directly off one of its two compressed rows.


def greedy_star(adjacency: Structure, order: np.ndarray, kernels: bool) -> np.ndarray:
    """Colors in `order`: the least color that keeps the coloring a star coloring. A color c
    is forbidden at v when a neighbour w has it, or when c is the color of a vertex x two
    steps away through w, and w is uncolored (conservatively) or x already has another
    neighbour of w's color (then v-w-x-y would be a bicolored path)."""
    n = len(order)
    if kernels:
        return _greedy_star_numba(*adjacency, order)
    neighbours = [set(adjacent) - {v} for v, adjacent in enumerate(_lists(adjacency))]
    colors = [-1] * n
    for v in order.tolist():
        forbidden = set()
        for w in neighbours[v]:
            forbidden.add(colors[w])
            for x in neighbours[w] - {v}:
                if colors[x] < 0:
                    continue
                if colors[w] < 0 or any(colors[y] == colors[w] for y in neighbours[x] if y != w):
                    forbidden.add(colors[x])
        colors[v] = _least_color_not_in(forbidden)
    return np.array(colors, dtype=np.intp).reshape(n)


@njit_lazy()
def _greedy_star_numba(indptr, indices, order):
    # The diagonal needs no test: a vertex met as its own neighbour only forbids colors
    # forbidden already (the coloring stays distance-1 at every step).
    n = order.shape[0]
    colors = np.full(n, -1, np.intp)
    forbidden = np.full(n + 1, -1, np.intp)
    for v in order:
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            color_w = colors[w]
            if color_w >= 0:
                forbidden[color_w] = v
            for q in range(indptr[w], indptr[w + 1]):
                x = indices[q]
                if colors[x] < 0 or forbidden[colors[x]] == v:
                    continue
                if color_w < 0:
                    forbidden[colors[x]] = v
                    continue
                for s in range(indptr[x], indptr[x + 1]):
                    if indices[s] != w and colors[indices[s]] == color_w:
                        forbidden[colors[x]] = v
                        break
        color = 0
        while forbidden[color] == v:
            color += 1
        colors[v] = color
    return colors


# Star recovery: where each entry of a symmetric matrix is read in H @ seeds.


def star_recovery(adjacency: Structure, colors: np.ndarray, ncolors: int, kernels: bool):
    """For each stored entry (i, j), in CSR order, the entry of H @ seeds that holds it:
    (i, colors[j]) when j is the only vertex of its color in row i, else (j, colors[i])."""
    indptr, indices = adjacency
    if kernels:
        return _star_recovery_numba(indptr, indices, colors, ncolors)
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    keys = rows * ncolors + colors[indices]
    _, where, counts = np.unique(keys, return_inverse=True, return_counts=True)
    alone = counts[where] == 1
    return (
        np.where(alone, rows, indices).astype(np.intp),
        np.where(alone, colors[indices], colors[rows]).astype(np.intp),
    )


@njit_lazy()
def _star_recovery_numba(indptr, indices, colors, ncolors):
    nnz = indices.shape[0]
    rows = np.empty(nnz, np.intp)
    cols = np.empty(nnz, np.intp)
    count = np.zeros(max(ncolors, 1), np.intp)
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            count[colors[indices[p]]] += 1
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if count[colors[j]] == 1:
                rows[p] = i
                cols[p] = colors[j]
            else:
                rows[p] = j
                cols[p] = colors[i]
        for p in range(indptr[i], indptr[i + 1]):
            count[colors[indices[p]]] = 0
    return rows, cols
