"""Sparsity detection: the Jacobian's and Hessian's patterns of a function, from its staged graph.

`f` is staged once (autodiff/staging/trace.py's `stage`, as `make_graph` does) and index
sets are propagated through its graph, each equation by its primitive's `sparsity` rule
(autodiff/ops/sparsity.py): per value, which input elements each of its elements depends
on. Constants have empty patterns; a primitive without a rule makes each output element
depend on all of its inputs' elements (never wrong). Hessian patterns add, per equation
reaching the output, the pairs of input elements its rule says interact to second order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autodiff.core.dtypes import is_inexact
from autodiff.core.pytree import tree_flatten
from autodiff.ops import sparsity as sp
from autodiff.reverse.transforms import (
    _as_input,
    _fname,
    check_argnums,
    check_callable,
    check_inexact_inputs,
)
from autodiff.staging.api import _leaf_aval
from autodiff.staging.ir import Graph, Literal, Var
from autodiff.staging.trace import stage


class _Context:
    """What a rule sees of its equation and of the detection (see autodiff/ops/sparsity.py)."""

    __slots__ = ("detector", "prim", "in_avals", "out_avals")

    def __init__(self, detector: _Detector, eqn):
        self.detector = detector
        self.prim = eqn.prim
        self.in_avals = [x.aval for x in eqn.inputs]
        self.out_avals = [v.aval for v in eqn.outputs]

    @property
    def n(self) -> int:
        return self.detector.n

    @property
    def multiple_results(self) -> bool:
        return self.prim.multiple_results

    def inexact(self) -> None:
        """Say the pattern found is a superset of the structure (a conservative step)."""
        self.detector.exact = False

    def impl(self, *args, **params):
        return self.prim.impl(*args, **params)

    def run(self, graph: Graph, ins: list, second: bool = True) -> list:
        """The output patterns of `graph` for input patterns `ins` (its Hessian terms joined
        unless `second` is False)."""
        return self.detector.run(graph, ins, second)

    def stage(self, fun: Callable) -> Graph:
        """The graph of `fun` (flat in, flat out) for the equation's input types."""
        graph, _ = stage(fun, self.in_avals, tree_flatten(tuple(self.in_avals))[1])
        return graph


class _Detector:
    """One propagation: `n` input elements, with or without Hessian terms (a local one starts
    from inputs carrying their values)."""

    def __init__(self, n: int, hessian: bool):
        self.n = n
        self.hessian = hessian
        self.exact = True  # (no rule took a conservative step)
        self.rows: list = []  # Hessian entries found so far (arrays of rows and columns)
        self.cols: list = []

    def run(self, graph: Graph, ins: list, second: bool = True) -> list:
        env: dict = {}
        for var, p in zip(graph.in_vars, ins):
            env[var] = p
        for var, value in graph.consts:
            env[var] = sp.empty(var.aval.shape, self.n, np.asarray(value))
        for eqn in _live(graph):
            patterns = [self._read(env, x) for x in eqn.inputs]
            outs = self._equation(eqn, patterns, second)
            for var, p in zip(eqn.outputs, outs):
                env[var] = p
        return [self._read(env, x) for x in graph.out_vars]

    def _read(self, env: dict, x) -> sp.Pattern:
        if type(x) is Literal:
            return sp.empty(x.aval.shape, self.n, np.asarray(x.value))
        return env[x]

    def _equation(self, eqn, ins: list, second: bool) -> list:
        values = self._values(eqn, ins)
        if not eqn.prim.differentiable or all(p.nnz == 0 for p in ins):
            return [sp.empty(v.aval.shape, self.n, val) for v, val in zip(eqn.outputs, values)]
        ctx = _Context(self, eqn)
        rule = eqn.prim.sparsity or sp.DENSE
        outs = rule.first(ctx, ins, **eqn.params)
        self.exact = self.exact and rule.exact
        outs = [  # (fresh patterns: a rule may return one it was given)
            sp.Pattern(v.aval.shape, p.indptr, p.indices, self.n, value)
            if is_inexact(v.aval.dtype)
            else sp.empty(v.aval.shape, self.n, value)
            for p, v, value in zip(outs, eqn.outputs, values)
        ]
        if self.hessian and second and not rule.linear:
            terms = (rule.second or sp.itself)(ctx, ins, outs, **eqn.params)
            for left, right in terms:
                if left.nnz and right.nnz:
                    a, b = sp.pairs(left, right)
                    self.rows.append(a)
                    self.cols.append(b)
        return outs

    def _values(self, eqn, ins: list) -> list:
        """The outputs' values when every input's is known (constants; local patterns)."""
        n_out = len(eqn.outputs)
        if any(p.value is None for p in ins):
            return [None] * n_out
        out = eqn.prim.impl(*[p.value for p in ins], **eqn.params)
        out = out if eqn.prim.multiple_results else (out,)
        return [np.asarray(v) for v in out]

    def hessian_pattern(self):
        rows = np.concatenate(self.rows + self.cols + [np.zeros(0, np.int64)])
        cols = np.concatenate(self.cols + self.rows + [np.zeros(0, np.int64)])
        p = sp.from_entries(rows, cols, (self.n,), self.n, self.n)
        return p.indptr, p.indices


def _live(graph: Graph) -> list:
    """The equations whose outputs reach the graph's outputs, in order."""
    needed = {x for x in graph.out_vars if type(x) is Var}
    live = []
    for eqn in reversed(graph.equations):
        if any(v in needed for v in eqn.outputs):
            live.append(eqn)
            needed.update(x for x in eqn.inputs if type(x) is Var)
    live.reverse()
    return live


# (jacfwd's: an integer input has no derivative)
_INTEGER_HINT = (
    "convert it to a float dtype, or leave it out of argnums (an integer input has no "
    "derivative, so no pattern)"
)


def _staged(f: Callable, args: tuple, nums: tuple, transform: str):
    """f's graph with the leaves of `args[nums]` as inputs (the other arguments closed over)."""
    fname = _fname(f)
    check_inexact_inputs(transform, args, nums, fname, _INTEGER_HINT)
    trees = tuple(args[i] for i in nums)
    leaves, in_tree = tree_flatten(trees)
    leaves = [_as_input(x, f"argument of {fname}") for x in leaves]

    def partial(*dynamic):
        full = list(args)
        for i, value in zip(nums, dynamic):
            full[i] = value
        return f(*full)

    graph, captured = stage(
        lambda *t: partial(*t), [_leaf_aval(x) for x in leaves], in_tree, name=fname
    )
    return graph, leaves, captured


def _propagate(f, args, argnums, local: bool, hessian: bool, transform: str):
    nums = check_argnums(argnums, len(args), _fname(f))
    graph, leaves, captured = _staged(f, args, nums, transform)
    if hessian:
        _check_scalar(graph)
    n = sum(int(np.size(x)) for x in leaves)
    detector = _Detector(n, hessian)
    ins, offset = [], 0
    for x in leaves:
        p = sp.identity(np.shape(x), n, offset)
        if local:
            p.value = np.asarray(x)
        ins.append(p)
        offset += p.size
    ins += [sp.empty(np.shape(c), n, np.asarray(c)) for c in captured]
    outs = detector.run(graph, ins)
    return graph, detector, outs, n


def _check_scalar(graph: Graph) -> None:
    """TypeError (grad's) unless the graph returns one real scalar."""
    avals = graph.out_avals
    if len(avals) != 1 or avals[0].shape != () or not is_inexact(avals[0].dtype):
        what = avals[0] if len(avals) == 1 else f"{len(avals)} values"
        raise TypeError(
            "Gradient only defined for scalar-output functions. "
            f"Output was {what}. hessian_sparsity needs f to return one real scalar."
        )


def _csr(shape: tuple, indptr, indices):
    from scipy.sparse import csr_array  # (SciPy is loaded on first use only)

    data = np.ones(indices.size, bool)
    return csr_array((data, indices, indptr), shape=shape)


def jacobian_sparsity(f: Callable, argnums=0, *, local: bool = False) -> Callable:
    """A function of `f`'s arguments returning the pattern of `f`'s Jacobian: a boolean
    `scipy.sparse.csr_array` of shape (m, n), rows the output's leaves flattened row-major
    one after the other, columns those of `args[argnums]`. Global (valid at every input)
    unless `local`: the pattern at the given point.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> from autodiff.sparse.detect import jacobian_sparsity
        >>> p = jacobian_sparsity(lambda x: x[1:] * anp.sin(x[:-1]))(np.ones(4))
        >>> p.toarray().astype(int)
        array([[1, 1, 0, 0],
               [0, 1, 1, 0],
               [0, 0, 1, 1]])
    """
    check_callable(f, "jacobian_sparsity")

    def pattern(*args):
        graph, _, outs, n = _propagate(f, args, argnums, local, False, "jacobian_sparsity")
        whole = sp.concat_rows(outs) if outs else sp.empty((0,), n)
        return _csr((whole.size, n), whole.indptr, whole.indices)

    return pattern


def hessian_sparsity(f: Callable, argnums=0, *, local: bool = False) -> Callable:
    """A function of `f`'s arguments returning the pattern of the Hessian of the scalar
    `f`: a symmetric boolean `scipy.sparse.csr_array` of shape (n, n), n the number of
    elements of `args[argnums]`. Global unless `local` (see `jacobian_sparsity`).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> from autodiff.sparse.detect import hessian_sparsity
        >>> f = lambda x: anp.sum((x[1:] - x[:-1] ** 2) ** 2)
        >>> hessian_sparsity(f)(np.ones(3)).toarray().astype(int)
        array([[1, 1, 0],
               [1, 1, 1],
               [0, 1, 1]])
    """
    check_callable(f, "hessian_sparsity")

    def pattern(*args):
        _, detector, _, n = _propagate(f, args, argnums, local, True, "hessian_sparsity")
        indptr, indices = detector.hessian_pattern()
        return _csr((n, n), indptr, indices)

    return pattern


__all__ = ["hessian_sparsity", "jacobian_sparsity"]
