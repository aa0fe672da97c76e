"""Sparsity rules: index-set patterns of staged values, and the generic rules built on them.

A `Pattern` says, for each element of a value (flattened row-major), the set of input
elements (columns 0..n-1) it depends on: a CSR-like boolean structure (`indptr`, `indices`)
in plain NumPy. A primitive's `sparsity` slot holds a `SparsityRule`: `first(ctx, ins,
**params)` gives the output patterns from the input patterns; `second(ctx, ins, outs,
**params)` gives the pairs `(L, R)` of patterns (one row per output element) whose
elements interact to second order (`L^T R + R^T L` joins the Hessian's pattern); `exact`
says the first-order pattern is the structure itself, not a superset. `ctx` (built by
autodiff/sparse/detect.py) gives `n`, `in_avals`, `out_avals`, `multiple_results`, `impl`,
`run(graph, ins)` and `stage(fun)` for sub-computations, and `inexact()`, which a rule calls
when it takes a conservative step. An input pattern's `value` is the concrete value when it
is known (constants, and every value of a local detection): rules use it to be exact
(index arrays, a constant factor's zeros, the operand `where` or `maximum` picks).
"""

from __future__ import annotations

import numpy as np

# The most stored indices a pattern may hold: beyond, detection stops with a clear error
# rather than exhausting the machine's memory.
BUDGET = 50_000_000


class Pattern:
    """The dependence of each element of a value (of `shape`) on the n input elements."""

    __slots__ = ("shape", "indptr", "indices", "n", "value")

    def __init__(self, shape: tuple, indptr, indices, n: int, value=None):
        self.shape = tuple(shape)
        self.indptr = indptr
        self.indices = indices
        self.n = n
        self.value = value  # the concrete value, when known (constants; local patterns)

    @property
    def size(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def lengths(self):
        return np.diff(self.indptr)

    def reshaped(self, shape: tuple) -> Pattern:
        return Pattern(shape, self.indptr, self.indices, self.n)

    def __repr__(self):
        return f"Pattern(shape={self.shape}, nnz={self.nnz}, n={self.n})"


def empty(shape: tuple, n: int, value=None) -> Pattern:
    """No element depends on any input (constants, integer values)."""
    size = int(np.prod(shape, dtype=np.int64))
    return Pattern(shape, np.zeros(size + 1, np.int64), np.zeros(0, np.int64), n, value)


def identity(shape: tuple, n: int, offset: int) -> Pattern:
    """Element i depends on input element offset + i (an input of the function)."""
    size = int(np.prod(shape, dtype=np.int64))
    return Pattern(shape, np.arange(size + 1, dtype=np.int64), np.arange(size) + offset, n)


def _check_budget(total: int) -> None:
    if total > BUDGET:
        raise MemoryError(
            f"Sparsity detection stopped: a pattern would store {total} indices (more than "
            f"{BUDGET}); the function's Jacobian is too dense for sparse differentiation."
        )


def ranges(starts, lengths):
    """The concatenation of `arange(s, s + l)` for each start and length, vectorised."""
    lengths = np.asarray(lengths, np.int64)
    offsets = np.cumsum(lengths) - lengths
    total = int(offsets[-1] + lengths[-1]) if lengths.size else 0
    return np.arange(total, dtype=np.int64) + np.repeat(
        np.asarray(starts, np.int64) - offsets, lengths
    )


def gather(p: Pattern, src, shape: tuple) -> Pattern:
    """Element i of the result has the row `src[i]` of `p` (none where `src[i] < 0`)."""
    src = np.asarray(src, np.int64).ravel()
    if src.size == p.size and (
        src.size == 0 or (src[0] == 0 and np.array_equal(src, np.arange(src.size)))
    ):
        return p.reshaped(shape)
    valid = src >= 0
    safe = np.where(valid, src, 0)
    lengths = np.where(valid, np.diff(p.indptr)[safe] if p.size else 0, 0)
    _check_budget(int(lengths.sum()))
    indptr = np.zeros(src.size + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = p.indices[ranges(p.indptr[safe], lengths)] if src.size else p.indices[:0]
    return Pattern(shape, indptr, indices, p.n)


def combine(parts: list, shape: tuple, n: int) -> Pattern:
    """Row r of the result is the union of rows `in_rows[k]` of `p` where `out_rows[k] == r`,
    over the parts `(p, out_rows, in_rows)` (rows as int64 arrays of one length)."""
    size = int(np.prod(shape, dtype=np.int64))
    rows, cols = [], []
    for p, out_rows, in_rows in parts:
        lengths = np.diff(p.indptr)[in_rows]
        _check_budget(int(lengths.sum()))
        cols.append(p.indices[ranges(p.indptr[in_rows], lengths)])
        rows.append(np.repeat(out_rows, lengths))
    return from_entries(
        np.concatenate(rows or [np.zeros(0, np.int64)]),
        np.concatenate(cols or [np.zeros(0, np.int64)]),
        shape,
        size,
        n,
    )


def from_entries(rows, cols, shape: tuple, size: int, n: int, *, runs: bool = False) -> Pattern:
    """The pattern with the entries (rows[k], cols[k]), duplicates merged. `runs`: the entries
    are a few runs each sorted by (row, column), which a merging sort joins in linear time."""
    _check_budget(rows.size)
    width = np.int64(max(n, 1))
    keys = rows * width + cols
    keys.sort(kind="stable" if runs else None)
    if keys.size:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    rows, cols = np.divmod(keys, width)
    indptr = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=size), out=indptr[1:])
    return Pattern(shape, indptr, cols, n)


def union(patterns: list, shape: tuple, n: int) -> Pattern:
    """Elementwise union of patterns of one size."""
    nonempty = [p for p in patterns if p.nnz]
    if not nonempty:
        return empty(shape, n)
    if len(nonempty) == 1:
        return nonempty[0].reshaped(shape)
    size = int(np.prod(shape, dtype=np.int64))
    rows = np.concatenate([np.repeat(np.arange(size), p.lengths()) for p in nonempty])
    cols = np.concatenate([p.indices for p in nonempty])
    return from_entries(rows, cols, shape, size, n, runs=True)


def concat_rows(patterns: list) -> Pattern:
    """The rows of `patterns`, one after the other (a flat pattern)."""
    n = patterns[0].n
    offsets = np.cumsum([0] + [p.nnz for p in patterns])
    indptr = np.concatenate([[0]] + [p.indptr[1:] + o for p, o in zip(patterns, offsets)])
    indices = np.concatenate([p.indices for p in patterns])
    return Pattern((len(indptr) - 1,), indptr.astype(np.int64), indices, n)


def item(p: Pattern, i: int) -> Pattern:
    """`p[i]` (along the first axis), with its value when known."""
    inner = p.shape[1:]
    size = int(np.prod(inner, dtype=np.int64))
    out = gather(p, np.arange(i * size, (i + 1) * size), inner)
    out.value = None if p.value is None else p.value[i]
    return out


def stacked(patterns: list, shape: tuple) -> Pattern:
    """The patterns stacked along a new first axis (of `shape`)."""
    if not patterns:
        return empty(shape, 0)
    return concat_rows(patterns).reshaped(shape)


def same(old: list, new: list) -> bool:
    """Whether patterns that can only grow (`new` contains `old`) stayed the same."""
    return all(a.nnz == b.nnz for a, b in zip(old, new))


def pairs(left: Pattern, right: Pattern):
    """The pairs (a, b) with a in row i of `left` and b in row i of `right`, for every row i."""
    llen, rlen = left.lengths(), right.lengths()
    row_of = np.repeat(np.arange(left.size), llen)
    counts = rlen[row_of]
    _check_budget(int(counts.sum()))
    a = np.repeat(left.indices, counts)
    b = right.indices[ranges(right.indptr[row_of], counts)]
    return a, b


def ids(shape: tuple, start: int = 0):
    """Element ids start, start + 1, ... in an array of `shape`."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.arange(start, start + size, dtype=np.int64).reshape(shape)


def broadcast(p: Pattern, shape: tuple) -> Pattern:
    """`p` broadcast to `shape` (NumPy's rules)."""
    if p.shape == tuple(shape):
        return p
    return gather(p, np.broadcast_to(ids(p.shape), shape), shape)


def reduce_axes(p: Pattern, axes: tuple, keepdims: bool = False) -> Pattern:
    """The union of `p`'s rows over `axes`."""
    ndim = len(p.shape)
    axes = tuple(sorted(a % ndim for a in axes)) if ndim else ()
    if not axes:
        return p
    kept = tuple(1 if a in axes else d for a, d in enumerate(p.shape))
    shape = kept if keepdims else tuple(d for a, d in enumerate(p.shape) if a not in axes)
    target = np.broadcast_to(ids(kept), p.shape).ravel()
    return combine([(p, target, np.arange(p.size))], shape, p.n)


class SparsityRule:
    """A primitive's sparsity rule: `first` (output patterns), `second` (the interacting
    pairs for Hessians; `None`: each output element with itself, conservative) and whether
    the first-order pattern is exact. `linear`: no second-order term."""

    __slots__ = ("first", "second", "exact", "linear")

    def __init__(self, first, second=None, *, exact: bool = False, linear: bool = False):
        self.first = first
        self.second = second
        self.exact = exact
        self.linear = linear


def conservative(ctx, ins: list, **params) -> list:
    """Every output element depends on every element of every input: never wrong."""
    ctx.inexact()
    return [broadcast(_everything(ctx, ins), a.shape) for a in ctx.out_avals]


def _everything(ctx, ins: list) -> Pattern:
    """The union of every element's pattern of every input (one row)."""
    return union([reduce_axes(p, tuple(range(len(p.shape)))) for p in ins], (), ctx.n)


# Without a rule: each output element with every input element, which all interact.
DENSE = SparsityRule(conservative, lambda ctx, ins, outs, **params: [(_everything(ctx, ins),) * 2])


# Staged calls (jit's, remat's): the patterns through the graph they hold, whose equations
# add their own second-order terms; custom_jvp/custom_vjp: through their function's graph
# (the custom rules do not change which inputs an output depends on).
THROUGH_GRAPH = SparsityRule(
    lambda ctx, ins, *, graph, **params: ctx.run(graph, ins), exact=True, linear=True
)
THROUGH_FUNCTION = SparsityRule(
    lambda ctx, ins, *, fun, **params: ctx.run(ctx.stage(fun), ins), exact=True, linear=True
)


# ---------------------------------------------------------------------------------------------
# Elementwise: each output element depends on the elements of the inputs at its position.


def elementwise(interacting=((0, 0),), select=None, *, exact: bool = True) -> SparsityRule:
    """The rule of a broadcasting elementwise primitive. `interacting`: the pairs of input
    positions with a nonzero second derivative ("all": every pair); `select(*values)`: from
    the inputs' values (None where unknown), a boolean mask per input of the output elements
    whose derivative can reach it (None: all), or None (constants select globally, every
    value locally)."""

    def chosen(ctx, ins):
        shape = ctx.out_avals[0].shape
        spread = [broadcast(p, shape) if p.nnz else empty(shape, ctx.n) for p in ins]
        masks = None if select is None else select(*[p.value for p in ins])
        if masks is None:
            return spread
        out = []
        for p, mask in zip(spread, masks):
            if mask is not None and p.nnz:
                keep = np.broadcast_to(mask, shape).ravel()
                p = gather(p, np.where(keep, np.arange(p.size), -1), shape)
            out.append(p)
        return out

    def first(ctx, ins, **params):
        return [union(chosen(ctx, ins), ctx.out_avals[0].shape, ctx.n)]

    def second(ctx, ins, outs, **params):
        spread = chosen(ctx, ins)
        k = len(ins)
        which = interacting
        if interacting == "all":
            which = [(i, j) for i in range(k) for j in range(i, k)]
        return [(spread[i], spread[j]) for i, j in which if i < k and j < k]

    return SparsityRule(first, second, exact=exact, linear=not interacting)


LINEAR_ELEMENTWISE = elementwise(())


def _choose(x, y, op):
    if x is None or y is None:
        return None
    with np.errstate(invalid="ignore"):
        both = (x == y) | np.isnan(x) | np.isnan(y)  # (ties, and NaNs: either way)
        return op(x, y) | both, op(y, x) | both


def selection(op) -> SparsityRule:
    """maximum-like primitives: the derivative goes to the operand chosen by `op` (both on
    ties), known from the values; no second-order term (zero almost everywhere)."""
    return elementwise((), lambda x, y: _choose(x, y, op), exact=False)


def _where_select(c, x, y):
    return None if c is None else (None, np.asarray(c, bool), ~np.asarray(c, bool))


# where: the operand its condition picks when the condition is known (a constant mask: for
# every input), else either.
WHERE = elementwise((), _where_select, exact=False)


def _nonzero_factors(x, y):
    """A product's operand matters only where the other one, when known, is nonzero."""
    if x is None and y is None:
        return None
    return (None if y is None else y != 0, None if x is None else x != 0)


MULTIPLY = elementwise(((0, 1),), _nonzero_factors)


# ---------------------------------------------------------------------------------------------
# Data movement: every output element is a copy of one input element (or a constant).


def _id_arrays(ctx, ins):
    """Per input: its element ids (1-based, offset per input) or, for integer operands, the
    value (None when it is not known)."""
    arrays, offset = [], 1
    for p, aval in zip(ins, ctx.in_avals):
        if np.dtype(aval.dtype).kind in "biu":
            arrays.append(p.value)
        else:
            arrays.append(ids(p.shape, offset))
            offset += p.size
    return arrays


def _movement_first(ctx, ins, **params):
    arrays = _id_arrays(ctx, ins)
    if any(a is None for a in arrays):
        return conservative(ctx, ins)
    if params.get("dtype") is not None:  # (ids stay int64: a cast could round them)
        params = {**params, "dtype": None}
    results = ctx.impl(*arrays, **params)
    if not ctx.multiple_results:
        results = (results,)
    data = [p for p, a in zip(ins, ctx.in_avals) if np.dtype(a.dtype).kind not in "biu"]
    source = concat_rows(data)
    return [
        gather(source, np.real(np.asarray(r)).astype(np.int64).ravel() - 1, aval.shape)
        for r, aval in zip(results, ctx.out_avals)
    ]


MOVEMENT = SparsityRule(_movement_first, exact=True, linear=True)


# ---------------------------------------------------------------------------------------------
# Accumulation: each element of the first input adds into (at most) one output element.


def accumulation(targets, second=None, *, exact: bool = True, select=None) -> SparsityRule:
    """The rule of a reduction-like primitive: `targets(out_ids, *inputs, **params)` gives,
    for each element of the first input, the id of the output element it goes into (the
    transpose's data movement applied to the output's ids; `inputs`: the values of integer
    operands, `ShapedArray`s of others). `second`: as in `SparsityRule` (None: linear).
    `select(x, **params)`: from the first input's value, when known, the mask of its elements
    whose derivative is not zero (max: the maxima)."""

    def first(ctx, ins, **params):
        args = [
            p.value if np.dtype(a.dtype).kind in "biu" else a for p, a in zip(ins, ctx.in_avals)
        ]
        if any(a is None for a in args[1:]):
            return conservative(ctx, ins)
        out_shape = ctx.out_avals[0].shape
        target = np.asarray(targets(ids(out_shape), *args, **params))
        p = broadcast(ins[0], target.shape)  # (scattered values may broadcast)
        rows = np.arange(p.size)
        if select is not None and ins[0].value is not None:
            rows = rows[np.broadcast_to(select(ins[0].value, **params), target.shape).ravel()]
        return [combine([(p, target.ravel()[rows], rows)], out_shape, ctx.n)]

    return SparsityRule(first, second, exact=exact, linear=second is None)


def reduction_targets(out_ids, x, *, axes, keepdims):
    """For each element of x, the id of the reduction's output element it goes into."""
    return np.broadcast_to(out_ids if keepdims else np.expand_dims(out_ids, axes), x.shape)


REDUCTION = accumulation(reduction_targets)


def itself(ctx, ins, outs, **params) -> list:
    """Second order: each output element's inputs interact with each other (conservative)."""
    return [(p, p) for p in outs]


# ---------------------------------------------------------------------------------------------
# Cumulative ops: output k along the axis depends on inputs 0..k (k..end reversed).


def prefix(axis_of, reverse_of=lambda params: False, *, linear: bool = True) -> SparsityRule:
    """The rule of cumsum-like primitives (`axis_of(params)`); every input is scanned. Not
    `linear` (cumprod): the elements of a line interact with each other."""

    def first(ctx, ins, **params):
        shape = ctx.out_avals[0].shape
        axis = axis_of(params) % max(len(shape), 1)
        grid = np.moveaxis(ids(shape), axis, -1).reshape(-1, shape[axis] if shape else 1)
        _check_budget(grid.shape[0] * grid.shape[1] * (grid.shape[1] + 1) // 2)
        k, j = np.tril_indices(grid.shape[1])
        if reverse_of(params):
            k, j = j, k
        parts = []
        for p in ins:
            if p.nnz:
                p = broadcast(p, shape)
                parts.append((p, grid[:, k].ravel(), grid[:, j].ravel()))
        return [combine(parts, shape, ctx.n)]

    def second(ctx, ins, outs, **params):
        shape = ctx.out_avals[0].shape
        axis = axis_of(params) % max(len(shape), 1)
        line = reduce_axes(union([broadcast(p, shape) for p in ins], shape, ctx.n), (axis,))
        return [(line, line)]

    return SparsityRule(first, second, linear=linear)


# ---------------------------------------------------------------------------------------------
# Contractions (einsum, matmul, dot): an output element depends on the operand elements that
# share its kept indices.


def _positions(coords: tuple, shape: tuple, count: int):
    """Flat positions in an array of `shape` of `count` elements' coordinates."""
    if not shape:
        return np.zeros(count, np.int64)
    return np.ravel_multi_index(coords, shape).astype(np.int64)


def _coordinates(shape: tuple) -> tuple:
    size = int(np.prod(shape, dtype=np.int64))
    return np.unravel_index(np.arange(size), shape) if shape else ()


def _contracted(p: Pattern, letters: str, out_letters: str, out_shape: tuple) -> Pattern:
    """Operand `p` (its axes named by `letters`) as seen by each output element."""
    kept = [c for c in dict.fromkeys(letters) if c in out_letters]
    dims = dict(zip(letters, p.shape))
    reduced_shape = tuple(dims[c] for c in kept)
    coords = _coordinates(p.shape)
    target = _positions(tuple(coords[letters.index(c)] for c in kept), reduced_shape, p.size)
    reduced = combine([(p, target, np.arange(p.size))], reduced_shape, p.n)
    out_coords = _coordinates(out_shape)
    size = int(np.prod(out_shape, dtype=np.int64))
    picked = tuple(np.minimum(out_coords[out_letters.index(c)], dims[c] - 1) for c in kept)
    return gather(reduced, _positions(picked, reduced_shape, size), out_shape)


def _sizes(*named) -> dict:
    """Each letter's size over (letters, shape) pairs (size-1 axes broadcast)."""
    sizes: dict = {}
    for letters, shape in named:
        for c, d in zip(letters, shape):
            sizes[c] = max(sizes.get(c, 1), d)
    return sizes


def _through_constant(p: Pattern, letters: str, known, known_letters: str, out: str, out_shape):
    """Operand `p` as seen by each output element of its product with the constant `known`:
    only through known's nonzeros (a constant matrix's sparsity carries over)."""
    sizes = _sizes((known_letters, known.shape), (letters, p.shape), (out, out_shape))
    known = np.broadcast_to(known, tuple(sizes[c] for c in known_letters))
    nonzero = np.nonzero(known)
    coords: dict = {}
    keep = np.ones(nonzero[0].size, bool)
    for c, axis in zip(known_letters, nonzero):
        keep &= coords.setdefault(c, axis) == axis  # (a repeated letter: its diagonal)
    free = [c for c in dict.fromkeys(letters + out) if c not in coords]
    width = int(np.prod([sizes[c] for c in free], dtype=np.int64))
    count = int(keep.sum())
    _check_budget(count * width)
    grid = np.unravel_index(np.arange(width), tuple(sizes[c] for c in free)) if free else ()
    coords = {c: np.repeat(axis[keep], width) for c, axis in coords.items()}
    coords.update({c: np.tile(axis, count) for c, axis in zip(free, grid)})
    total = count * width
    in_rows = _positions(
        tuple(np.minimum(coords[c], d - 1) for c, d in zip(letters, p.shape)), p.shape, total
    )
    out_rows = _positions(tuple(coords[c] for c in out), tuple(out_shape), total)
    return combine([(p, out_rows, in_rows)], tuple(out_shape), p.n)


def contraction(letters_of) -> SparsityRule:
    """The rule of a multilinear contraction: `letters_of(shapes, **params)` gives each
    operand's axis letters and the output's (or None: then every element depends on all)."""

    def spread(ctx, ins, params):
        out_shape = ctx.out_avals[0].shape
        letters = letters_of([p.shape for p in ins], **params)
        if letters is None:
            return None
        ops, out = letters
        if len(ins) == 2 and any(p.nnz == 0 and p.value is not None for p in ins):
            k = 0 if ins[0].nnz == 0 and ins[0].value is not None else 1
            p, s = ins[1 - k], ops[1 - k]
            part = _through_constant(p, s, ins[k].value, ops[k], out, out_shape)
            return [part, empty(out_shape, ctx.n)] if k else [empty(out_shape, ctx.n), part]
        return [
            _contracted(p, s, out, out_shape) if p.nnz else empty(out_shape, ctx.n)
            for p, s in zip(ins, ops)
        ]

    def first(ctx, ins, **params):
        parts = spread(ctx, ins, params)
        if parts is None:
            return conservative(ctx, ins)
        return [union(parts, ctx.out_avals[0].shape, ctx.n)]

    def second(ctx, ins, outs, **params):
        parts = spread(ctx, ins, params)
        if parts is None:
            return itself(ctx, ins, outs)
        k = len(parts)
        return [(parts[i], parts[j]) for i in range(k) for j in range(i + 1, k)]

    return SparsityRule(first, second)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def matmul_letters(shapes) -> tuple:
    """The axes of `x @ y` as einsum letters (batch axes aligned on the right)."""
    (xs, ys), batch = shapes, _LETTERS[:24]
    nb = max(len(xs), len(ys)) - 2
    x = batch[nb - (len(xs) - 2) : nb] + "y" + "z" if len(xs) >= 2 else "z"
    y = batch[nb - (len(ys) - 2) : nb] + "z" + "w" if len(ys) >= 2 else "z"
    out = batch[: max(nb, 0)] + ("y" if len(xs) >= 2 else "") + ("w" if len(ys) >= 2 else "")
    return (x, y), out


def dot_letters(shapes) -> tuple:
    """The axes of `np.dot(a, b)` as einsum letters."""
    a, b = (_LETTERS[: len(s)] for s in shapes)
    if not a or not b:
        return (a, b.upper()), a or b.upper()
    b = b.upper()[:-2] + a[-1] + b.upper()[-1:] if len(b) >= 2 else a[-1]
    out = a[:-1] + (b[:-2] + b[-1] if len(b) >= 2 else "")
    return (a, b), out


def einsum_letters(shapes, *, subscripts, optimize):
    inputs, out = subscripts.split("->")
    return None if "." in subscripts else (inputs.split(","), out)


# ---------------------------------------------------------------------------------------------
# Dense blocks: linear algebra, FFTs.


def dense_blocks(core_of=lambda shapes, **params: [2] * len(shapes)) -> SparsityRule:
    """Every output element of a batch member depends on all of that member's input
    elements: `core_of(shapes, **params)` gives each input's number of trailing (matrix)
    axes; the outputs carry the broadcast batch axes in front."""

    def blocks(ctx, ins, params):
        """Each batch member's pattern (the union of its inputs' elements), or None."""
        cores = core_of([p.shape for p in ins], **params)
        if any(len(p.shape) < c for p, c in zip(ins, cores)):
            return None
        batches = [p.shape[: len(p.shape) - c] for p, c in zip(ins, cores)]
        batch = np.broadcast_shapes(*batches)
        members = [
            broadcast(reduce_axes(p, tuple(range(len(b), len(p.shape)))), batch)
            for p, b in zip(ins, batches)
        ]
        return union(members, batch, ctx.n)

    def first(ctx, ins, **params):
        block = blocks(ctx, ins, params)
        if block is None:
            return conservative(ctx, ins)
        batch = block.shape
        outs = []
        for aval in ctx.out_avals:
            if aval.shape[: len(batch)] != batch:
                return conservative(ctx, ins)
            core = (1,) * (len(aval.shape) - len(batch))
            outs.append(broadcast(block.reshaped(batch + core), aval.shape))
        return outs

    def second(ctx, ins, outs, **params):
        block = blocks(ctx, ins, params)
        return [(_everything(ctx, ins),) * 2] if block is None else [(block, block)]

    return SparsityRule(first, second)


def along_axes(axes_of) -> SparsityRule:
    """Linear maps mixing the elements along `axes_of(shape, **params)` (FFTs): each output
    element depends on its line (plane) of the input, the other axes kept."""

    def first(ctx, ins, **params):
        p = ins[0]
        axes = axes_of(p.shape, **params)
        reduced = reduce_axes(p, axes, keepdims=True)
        return [broadcast(reduced, ctx.out_avals[0].shape)]

    return SparsityRule(first, linear=True)


__all__ = [
    "BUDGET",
    "DENSE",
    "LINEAR_ELEMENTWISE",
    "MOVEMENT",
    "MULTIPLY",
    "REDUCTION",
    "WHERE",
    "Pattern",
    "THROUGH_FUNCTION",
    "THROUGH_GRAPH",
    "SparsityRule",
    "accumulation",
    "along_axes",
    "broadcast",
    "combine",
    "concat_rows",
    "conservative",
    "contraction",
    "dense_blocks",
    "dot_letters",
    "einsum_letters",
    "matmul_letters",
    "reduction_targets",
    "elementwise",
    "empty",
    "gather",
    "identity",
    "ids",
    "item",
    "itself",
    "pairs",
    "prefix",
    "reduce_axes",
    "same",
    "selection",
    "stacked",
    "union",
]
