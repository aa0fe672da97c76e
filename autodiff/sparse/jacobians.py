"""Compressed sparse Jacobians and Hessians: `sparse_jacfwd`, `sparse_jacrev`,
`sparse_jacobian` and `sparse_hessian`.

Columns (forward mode), rows (reverse mode) or vertices (Hessians, star coloring) that share
a color are seeded together (coloring.py): k colors cost k Jacobian-vector, vector-Jacobian
or Hessian-vector products, evaluated as one `vmap` over the k seeds, and each stored entry
of the pattern is read off the compressed product by one gather. The products and the gather
are one `jit`-compiled function of the arguments, the seeds and the gather indices; the
pattern, its coloring and that function are cached per signature (the arguments' pytree
structure, shapes and dtypes, as `jit` keys its traces), so a later call costs the k
compressed passes, the gather, and wrapping the values in a `scipy.sparse.csr_array` that
shares the pattern's index arrays.

Pytrees: the matrix is over the flattened concatenations — rows are the output's leaves
flattened row-major and concatenated in `tree_flatten` order, columns the leaves of
`args[argnums]` (in `argnums` order) likewise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import autodiff.numpy as anp
from autodiff.core.dtypes import is_inexact
from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.forward_ad.transforms import jvp
from autodiff.reverse.transforms import _fname, check_argnums, check_callable, grad, vjp
from autodiff.sparse.coloring import ORDERS, Coloring, color
from autodiff.sparse.detect import hessian_sparsity, jacobian_sparsity
from autodiff.staging.api import CACHE_SIZE, _leaf_aval, jit, make_graph
from autodiff.staging.call import run_graph
from autodiff.vmap.transform import vmap

MODES = ("auto", "forward", "reverse")
OUTPUTS = ("matrix", "values")

# The coloring each kind of product uses.
_COLORING_KIND = {"forward": "column", "reverse": "row", "hessian": "star"}


def _scipy_sparse():
    import scipy.sparse

    return scipy.sparse


def _detect(kind: str, f: Callable, argnums, args: tuple):
    """The global sparsity pattern of `f`'s Jacobian ("jacobian") or Hessian ("hessian") at
    the signature of `args` (autodiff/sparse/detect.py)."""
    if kind == "hessian":
        return hessian_sparsity(f, argnums)(*args)
    return jacobian_sparsity(f, argnums)(*args)


class _Problem:
    """What a signature fixes: the arguments' structures, the differentiated leaves (their
    shapes and dtypes) and the flattened output's size and dtype."""

    def __init__(self, fun: Callable, nums: tuple, args: tuple, name: str, hessian: bool):
        self.fun, self.nums, self.name = fun, nums, name
        flat = [tree_flatten(a) for a in args]
        self.defs = [d for _, d in flat]
        self.sizes = [len(leaves) for leaves, _ in flat]
        in_leaves = [x for i in nums for x in flat[i][0]]
        self.in_avals = [_leaf_aval(x) for x in in_leaves]
        for aval in self.in_avals:
            if not is_inexact(aval.dtype) or np.dtype(aval.dtype).kind == "c":
                raise TypeError(
                    f"{name}: the differentiated arguments must be real floating arrays; got "
                    f"{aval.dtype} (argnums={nums if len(nums) > 1 else nums[0]})"
                )
        self.n = sum(int(np.prod(a.shape, dtype=np.int64)) for a in self.in_avals)
        leaves = [x for leaves, _ in flat for x in leaves]
        out_avals = make_graph(self.outputs)(*leaves).out_avals
        self.m = sum(int(np.prod(a.shape, dtype=np.int64)) for a in out_avals)
        self.out_dtype = np.result_type(*[a.dtype for a in out_avals])
        if hessian and self.m != 1:
            raise ValueError(f"{name}: f must return a scalar; it returns {self.m} values")

    def split(self, leaves: Sequence) -> tuple[tuple, list]:
        """The arguments rebuilt from their flat leaves, and the differentiated leaves."""
        args, start = [], 0
        for d, size in zip(self.defs, self.sizes):
            args.append(tree_unflatten(d, list(leaves[start : start + size])))
            start += size
        return tuple(args), [x for i in self.nums for x in tree_flatten(args[i])[0]]

    def call(self, args: tuple, xs: Sequence):
        """`fun` at `args` with the differentiated leaves replaced by `xs`, flattened."""
        args, it = list(args), iter(xs)
        for i in self.nums:
            leaves, d = tree_flatten(args[i])
            args[i] = tree_unflatten(d, [next(it) for _ in leaves])
        return _concatenate(self.fun(*args), self.name)

    def outputs(self, *leaves):
        return _output_leaves(self.fun(*self.split(leaves)[0]), self.name)


def _output_leaves(tree, name: str) -> list:
    """The leaves of `f`'s output, checked: real floating arrays."""
    leaves = tree_flatten(tree)[0]
    for leaf in leaves:
        if type(leaf) not in TENSOR_TYPES and not isinstance(leaf, (np.ndarray, np.generic)):
            raise TypeError(
                f"{name}: f must return an array or a pytree of arrays; got a leaf of type "
                f"{type(leaf).__name__}"
            )
        if not is_inexact(leaf.dtype) or np.dtype(leaf.dtype).kind == "c":
            raise TypeError(f"{name}: f must return real floating arrays; got {leaf.dtype}")
    return leaves


def _concatenate(tree, name: str):
    """A pytree of arrays as one vector: its leaves flattened row-major, concatenated."""
    flat = [anp.reshape(leaf, (-1,)) for leaf in _output_leaves(tree, name)]
    return flat[0] if len(flat) == 1 else anp.concatenate(flat)


def _split_rows(seeds: np.ndarray, avals: Sequence) -> list:
    """The k x n seed matrix's columns split per leaf: k x leaf-shaped arrays of its dtype."""
    out, start = [], 0
    for aval in avals:
        size = int(np.prod(aval.shape, dtype=np.int64))
        block = seeds[:, start : start + size].reshape((len(seeds), *aval.shape))
        out.append(np.ascontiguousarray(block, dtype=aval.dtype))
        start += size
    return out


def _compressed_forward(problem: _Problem, leaves, seeds):
    """J @ S, k x m: one vmap of jvp over the seeds (one array per differentiated leaf)."""
    args, xs = problem.split(leaves)

    def push(*ts):
        return jvp(lambda *x: problem.call(args, x), tuple(xs), ts)[1]

    return vmap(push)(*seeds)


def _compressed_reverse(problem: _Problem, leaves, seeds):
    """S^T J, k x n: one vmap of the pullback over the seeds' rows."""
    args, xs = problem.split(leaves)
    _, pullback = vjp(lambda *x: problem.call(args, x), *xs)
    return vmap(lambda u: _concatenate(pullback(u), problem.name))(seeds[0])


def _compressed_hessian(problem: _Problem, leaves, seeds):
    """H @ S transposed, k x n: one vmap of Hessian-vector products (forward-over-reverse)."""
    args, xs = problem.split(leaves)
    gradient = grad(
        lambda *x: anp.reshape(problem.call(args, x), ()), argnums=tuple(range(len(xs)))
    )

    def hvp(*ts):
        return _concatenate(jvp(gradient, tuple(xs), ts)[1], problem.name)

    return vmap(hvp)(*seeds)


_COMPRESSED = {
    "forward": _compressed_forward,
    "reverse": _compressed_reverse,
    "hessian": _compressed_hessian,
}


def _flat_index(coloring: Coloring, kind: str, m: int, n: int) -> np.ndarray:
    """Where each stored entry sits in the compressed product flattened, k x (m or n)."""
    if kind == "forward":  # (color of column j, row i)
        return coloring.gather_cols * m + coloring.gather_rows
    if kind == "reverse":  # (color of row i, column j)
        return coloring.gather_rows * n + coloring.gather_cols
    return coloring.gather_cols * n + coloring.gather_rows  # (color of j, vertex i)


class _Plan:
    """One signature's pattern, coloring, seeds and compiled evaluator."""

    __slots__ = (
        "problem",
        "kind",
        "pattern",
        "coloring",
        "seeds",
        "index",
        "evaluate",
        "graph",
        "_dict",
    )

    def __init__(self, problem: _Problem, kind: str, pattern, coloring: Coloring, backend):
        self.problem, self.kind, self.pattern, self.coloring = problem, kind, pattern, coloring
        seeds = coloring.seeds().T  # k x n (k x m in reverse mode)
        if kind == "reverse":
            self.seeds = [np.ascontiguousarray(seeds, dtype=problem.out_dtype)]
        else:
            self.seeds = _split_rows(seeds, problem.in_avals)
        self.index = _flat_index(coloring, kind, problem.m, problem.n).astype(np.intp)
        nleaves, index = sum(problem.sizes), self.index
        compressed = _COMPRESSED[kind]

        def evaluate(*flat):  # (the positions a constant: the compiled gather reads them)
            products = compressed(problem, flat[:nleaves], flat[nleaves:])
            return anp.take(anp.reshape(products, (-1,)), index)

        evaluate.__name__ = f"{problem.name}_compressed"
        self.evaluate = jit(evaluate, backend=backend)
        # The graph `evaluate` runs for arrays of the signature (once it has run on arrays):
        # later calls with arrays run it directly, as `jit` would after looking it up.
        self.graph = None
        self._dict = pattern.__dict__

    def values(self, leaves: list):
        args = (*leaves, *self.seeds)
        values = self.evaluate(*args)
        if self.graph is None and all(type(x) is np.ndarray for x in leaves):
            self.graph = self.evaluate.graph(*args)
        return values

    def matrix(self, values: np.ndarray):
        """The pattern with these values: its index arrays shared, the constructor's checks
        skipped (the pattern passed them when it was built)."""
        cls = type(self.pattern)
        matrix = cls.__new__(cls)
        matrix.__dict__.update(self._dict)
        matrix.data = values
        return matrix


class SparseDerivative:
    """A compressed sparse Jacobian or Hessian of `fun` (see `sparse_jacobian`).

    Calling it returns a `scipy.sparse.csr_array` (or, with `output="values"`, its values
    in CSR order); `sparsity(*args)` and `coloring(*args)` give the pattern and the
    coloring used at those arguments' signature. `traces` counts how many times an
    evaluator was staged and `colorings` how many colorings were computed (once per new
    signature each; "auto" mode colors twice).
    """

    def __init__(self, fun, argnums, kind, sparsity, order, check, output, backend, name):
        check_callable(fun, name)
        if order not in ORDERS:
            raise ValueError(f"{name}: order must be one of {_names(ORDERS)}; got {order!r}")
        if output not in OUTPUTS:
            raise ValueError(f"{name}: output must be one of {_names(OUTPUTS)}; got {output!r}")
        if backend not in (None, "numpy", "numba"):
            raise ValueError(f"{name}: unknown jit backend {backend!r}: use 'numba' or 'numpy'")
        self.fun, self.argnums, self.kind, self.order = fun, argnums, kind, order
        self.given = sparsity
        self.check, self.output, self.backend, self.name = bool(check), output, backend, name
        self._plans: dict = {}
        self.colorings = 0
        self.__name__ = f"{name}({_fname(fun)})"

    def __repr__(self) -> str:
        return f"<{self.__name__}>"

    @property
    def traces(self) -> int:
        return sum(plan.evaluate.traces for plan in self._plans.values())

    def __call__(self, *args):
        if len(args) == 1 and type(args[0]) is np.ndarray and not self.check:
            # The commonest call, one array of a known signature: its compiled graph at once.
            plan = self._plans.get((args[0].shape, args[0].dtype))
            if plan is not None and plan.graph is not None:
                values = run_graph(plan.graph, args[0], *plan.seeds)[0]
                return values if self.output == "values" else plan.matrix(values)
        leaves, plan = self._plan(args)
        values = plan.values(leaves)
        if self.check:
            _check(plan, args, values)
        if self.output == "values":
            return values
        if type(values) is not np.ndarray:
            raise TypeError(
                f"{self.name}: a scipy.sparse matrix cannot be a traced value (inside jit, "
                "vmap or another transform); use output='values' for the values in CSR order "
                "and .sparsity(*args) for the pattern"
            )
        return plan.matrix(values)

    def sparsity(self, *args):
        """The pattern (a boolean `scipy.sparse.csr_array`) at these arguments' signature."""
        return self._plan(args)[1].pattern

    def coloring(self, *args) -> Coloring:
        """The coloring used at these arguments' signature."""
        return self._plan(args)[1].coloring

    def _plan(self, args: tuple) -> tuple[list, _Plan]:
        if len(args) == 1 and type(args[0]) is np.ndarray:
            key: tuple = (args[0].shape, args[0].dtype)  # (as `__call__` looks it up)
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = self._new_plan(args)
            return list(args), plan
        flat = [tree_flatten(a) for a in args]
        leaves = [x for leaves, _ in flat for x in leaves]
        if all(type(x) is np.ndarray for x in leaves):
            avals = tuple([(x.shape, x.dtype) for x in leaves])
        else:
            avals = tuple([_leaf_aval(x) for x in leaves])
        key = (tuple([d for _, d in flat]), avals)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._new_plan(args)
        return leaves, plan

    def _new_plan(self, args: tuple) -> _Plan:
        if len(self._plans) >= CACHE_SIZE:  # (as jit bounds its traces; the oldest goes)
            del self._plans[next(iter(self._plans))]
        nums = check_argnums(self.argnums, len(args), _fname(self.fun))
        problem = _Problem(self.fun, nums, args, self.name, self.kind == "hessian")
        shape = (problem.n, problem.n) if self.kind == "hessian" else (problem.m, problem.n)
        if self.given is None:
            what = "hessian" if self.kind == "hessian" else "jacobian"
            pattern = _detect(what, self.fun, self.argnums, args)
        else:
            pattern = self.given
        pattern = _pattern(pattern, shape, self.name)
        kind, coloring = self._color(pattern)
        pattern = _scipy_sparse().csr_array(
            (np.ones(len(coloring.indices), bool), coloring.indices, coloring.indptr),
            shape=shape,
            copy=False,
        )
        pattern.has_canonical_format = True
        return _Plan(problem, kind, pattern, coloring, self.backend)

    def _color(self, pattern) -> tuple[str, Coloring]:
        if self.kind != "auto":
            self.colorings += 1
            return self.kind, color(pattern, _COLORING_KIND[self.kind], self.order)
        self.colorings += 2
        columns = color(pattern, "column", self.order)
        rows = color(pattern, "row", self.order)
        return ("forward", columns) if columns.ncolors <= rows.ncolors else ("reverse", rows)


def _names(options: Sequence[str]) -> str:
    return ", ".join(map(repr, options))


def _pattern(pattern, shape: tuple[int, int], name: str):
    """A given or detected pattern, checked: a sparse or dense array of the expected shape."""
    sparse = _scipy_sparse()
    if not sparse.issparse(pattern):
        pattern = np.asarray(pattern)
        if pattern.dtype == object:
            raise TypeError(f"{name}: sparsity must be a scipy.sparse array or a dense array")
    if pattern.shape != shape:
        raise ValueError(
            f"{name}: sparsity has shape {tuple(pattern.shape)}; the "
            f"{'Hessian' if name == 'sparse_hessian' else 'Jacobian'} at these arguments is "
            f"{shape[0]}x{shape[1]}"
        )
    return pattern


# ---------------------------------------------------------------------------------------------
# check=True: the given pattern against dense products with random vectors.


def _check(plan: _Plan, args: tuple, values) -> None:
    """Raise ValueError if the sparse matrix and a dense jvp/vjp (hvp) disagree on random
    vectors: the pattern misses a nonzero (or the coloring does not fit the function)."""
    problem = plan.problem
    if type(values) is not np.ndarray:
        raise TypeError(f"{problem.name}: check=True needs concrete arguments (outside jit/vmap)")
    matrix = _scipy_sparse().csr_array(
        (values, plan.pattern.indices, plan.pattern.indptr), shape=plan.pattern.shape
    )
    _, xs = problem.split([x for a in args for x in tree_flatten(a)[0]])
    rng = np.random.default_rng(0)
    v = rng.standard_normal(problem.n)
    tangents = tuple(_split_rows(v[None], problem.in_avals))
    tangents = tuple(t[0] for t in tangents)

    def f(*x):
        return problem.call(args, x)

    if plan.kind == "hessian":
        gradient = grad(lambda *x: anp.reshape(f(*x), ()), argnums=tuple(range(len(xs))))
        dense = _concatenate(jvp(gradient, tuple(xs), tangents)[1], problem.name)
        _compare(np.asarray(dense), matrix @ v, "row", problem.name)
        return
    _compare(np.asarray(jvp(f, tuple(xs), tangents)[1]), matrix @ v, "row", problem.name)
    u = rng.standard_normal(problem.m).astype(problem.out_dtype)
    _, pullback = vjp(f, *xs)
    dense = np.asarray(_concatenate(pullback(u), problem.name))
    _compare(dense, u @ matrix, "column", problem.name)


def _compare(dense: np.ndarray, sparse: np.ndarray, line: str, name: str) -> None:
    tolerance = 1e-4 if dense.dtype == np.float32 else 1e-9
    scale = max(float(np.max(np.abs(dense), initial=0.0)), 1.0)
    error = np.abs(dense - sparse)
    if np.max(error, initial=0.0) > tolerance * scale:
        where = int(np.argmax(error))
        raise ValueError(
            f"{name}: the sparsity pattern misses nonzeros: {line} {where} of the dense "
            f"product with a random vector is {dense[where]:.6g}, the sparse one "
            f"{sparse[where]:.6g}"
        )


# ---------------------------------------------------------------------------------------------
# The public functions.


def sparse_jacfwd(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    sparsity: Any = None,
    order: str = "natural",
    check: bool = False,
    output: str = "matrix",
    backend: str | None = None,
) -> SparseDerivative:
    """The sparse Jacobian of `fun` by forward mode: a column coloring of the pattern, one
    Jacobian-vector product per color (J @ seeds, as one vmap of jvp), compiled with `jit`.

    Arguments are those of `sparse_jacobian`, whose mode "forward" this is.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> f = sparse_jacfwd(lambda x: anp.sin(x) * 2.0, sparsity=np.eye(3))
        >>> f(np.zeros(3)).toarray()
        array([[2., 0., 0.],
               [0., 2., 0.],
               [0., 0., 2.]])
        >>> f.coloring(np.zeros(3)).ncolors
        1
    """
    return SparseDerivative(
        fun, argnums, "forward", sparsity, order, check, output, backend, "sparse_jacfwd"
    )


def sparse_jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    sparsity: Any = None,
    order: str = "natural",
    check: bool = False,
    output: str = "matrix",
    backend: str | None = None,
) -> SparseDerivative:
    """The sparse Jacobian of `fun` by reverse mode: a row coloring of the pattern, one
    vector-Jacobian product per color (seeds.T @ J, as one vmap of the pullback).

    Arguments are those of `sparse_jacobian`, whose mode "reverse" this is.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> pattern = np.array([[1, 1, 1], [0, 1, 0]])
        >>> f = sparse_jacrev(lambda x: anp.stack([anp.sum(x * x), x[1]]), sparsity=pattern)
        >>> f(np.array([1.0, 2.0, 3.0])).toarray()
        array([[2., 4., 6.],
               [0., 1., 0.]])
    """
    return SparseDerivative(
        fun, argnums, "reverse", sparsity, order, check, output, backend, "sparse_jacrev"
    )


def sparse_jacobian(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    mode: str = "auto",
    sparsity: Any = None,
    order: str = "natural",
    check: bool = False,
    output: str = "matrix",
    backend: str | None = None,
) -> SparseDerivative:
    """The sparse Jacobian of `fun`, from compressed products: the columns (rows) of its
    pattern colored so that no two of a color share a row (column), one product per color.

    Rows are the output's leaves flattened row-major and concatenated in `tree_flatten`
    order; columns the leaves of `args[argnums]` (in `argnums` order) likewise.

    Arguments:
        fun: a function of arrays or pytrees of arrays returning an array or a pytree of
            arrays (real, floating).
        argnums: the argument (an int) or arguments (a tuple) to differentiate.
        mode: "forward" (column coloring, Jacobian-vector products), "reverse" (row
            coloring, vector-Jacobian products) or "auto", the one with fewer colors
            (forward on a tie).
        sparsity: the pattern, m x n (a `scipy.sparse` array, or a dense array whose
            nonzeros are the pattern); None detects it (`jacobian_sparsity`), once per
            signature.
        order: the greedy coloring's vertex order (see `color`).
        check: compare the result with a dense jvp and vjp against random vectors at each
            call, raising ValueError naming a row (column) when the pattern misses a nonzero.
            A debug check: it costs a dense product each way.
        output: "matrix", a `scipy.sparse.csr_array` with exactly the pattern's entries
            (explicit zeros kept; its index arrays are the pattern's, shared and read-only:
            `.copy()` it before changing its structure in place); or "values", the stored
            values in CSR order as an array, which composes with `jit`, `vmap` and the
            derivative transforms (the pattern is `.sparsity(*args)`).
        backend: `jit`'s backend for the compiled evaluator (None: its default).

    Returns:
        A `SparseDerivative`: a function of `fun`'s positional arguments, with `sparsity(*args)` and
        `coloring(*args)` for the pattern and coloring at those arguments' signature.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> def f(x):  # a tridiagonal Jacobian
        ...     return x[1:] * x[:-1]
        >>> pattern = np.eye(4, k=0)[:3] + np.eye(4, k=1)[:3]
        >>> jac = sparse_jacobian(f, sparsity=pattern)
        >>> jac(np.array([1.0, 2.0, 3.0, 4.0])).toarray()
        array([[2., 1., 0., 0.],
               [0., 3., 2., 0.],
               [0., 0., 4., 3.]])
        >>> jac.coloring(np.zeros(4))
        Coloring(kind='column', order='natural', shape=(3, 4), nnz=6, ncolors=2)
    """
    if mode not in MODES:
        raise ValueError(f"sparse_jacobian: mode must be one of {_names(MODES)}; got {mode!r}")
    return SparseDerivative(
        fun, argnums, mode, sparsity, order, check, output, backend, "sparse_jacobian"
    )


def sparse_hessian(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    sparsity: Any = None,
    order: str = "natural",
    check: bool = False,
    output: str = "matrix",
    backend: str | None = None,
) -> SparseDerivative:
    """The sparse Hessian of scalar `fun`: a star coloring of the symmetric pattern, one
    Hessian-vector product per color (forward-over-reverse, as one vmap), each entry read
    directly off the products; the result is symmetric.

    Rows and columns are the leaves of `args[argnums]` flattened and concatenated.
    `sparsity` is the n x n symmetric pattern (None: `hessian_sparsity`); `check=True`
    compares with a dense Hessian-vector product; the other arguments are as in
    `sparse_jacobian`.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> def f(x):  # chained: a tridiagonal Hessian
        ...     return anp.sum((x[1:] - x[:-1] ** 2) ** 2)
        >>> n = 5
        >>> pattern = np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1)
        >>> hess = sparse_hessian(f, sparsity=pattern)
        >>> h = hess(np.ones(n))
        >>> h.nnz, hess.coloring(np.ones(n)).ncolors
        (13, 3)
        >>> np.allclose(h.toarray(), h.toarray().T)
        True
    """
    return SparseDerivative(
        fun, argnums, "hessian", sparsity, order, check, output, backend, "sparse_hessian"
    )


__all__ = [
    "SparseDerivative",
    "sparse_hessian",
    "sparse_jacfwd",
    "sparse_jacobian",
    "sparse_jacrev",
]
