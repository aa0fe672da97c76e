"""`x.at[index]`: JAX's functional indexed updates — get, set, add, multiply, min, max.

`set` is `index_set` (the last of repeated writes wins) and `add` a `scatter_add`
(repeats accumulate, like `np.add.at`). `multiply`, `min` and `max` are the primitives
here, `np.multiply.at`, `np.minimum.at` and `np.maximum.at` (repeats combine), batched
like `index_set`. Values are cast to `x`'s dtype and broadcast to `x[index]`'s shape;
indices may vary under vmap (slices with vmapped bounds update the block they span).
Out-of-bounds indices raise IndexError as in NumPy (JAX's `mode=` choices are not
supported). Tensors have `.at`; a raw NumPy array cannot get it: wrap it with
`autodiff.tensor`, or call `at(x)` or the functions directly.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import same_aval
from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import sparsity as sp
from autodiff.ops.elementwise import add, astype, equal, greater, where
from autodiff.ops.gather_scatter import (
    TracedSliceBounds,
    conform_value,
    fill_index,
    filled,
    gather,
    scatter,
    selection_shape,
    split_index,
    update_batch_rule,
)
from autodiff.ops.index import dynamic_parts, getitem, index_set, slice_block, update_block
from autodiff.ops.structural import shape_of


def _update_sparsity(ctx, ins, *, index):
    """x's element, and the values written to its position."""
    x, value, arrays = ins[0], ins[1], [p.value for p in ins[2:]]
    if any(a is None for a in arrays):
        return sp.conservative(ctx, ins)
    shape = ctx.out_avals[0].shape
    target = np.asarray(sp.ids(shape)[fill_index(index, arrays)])
    value = sp.broadcast(value, target.shape)
    written = sp.combine([(value, target.ravel(), np.arange(value.size))], shape, ctx.n)
    return [sp.union([sp.broadcast(x, shape), written], shape, ctx.n)]


def _update_primitive(name: str, ufunc) -> Primitive:
    """`prim(x, value, *index_arrays, index=...)`: a copy of x with `ufunc.at(x, index, value)`."""

    def impl(x, value, *arrays, index):
        out = np.array(x, copy=True)
        ufunc.at(out, fill_index(index, arrays), value)
        return out

    prim = Primitive(name)
    prim.impl = impl
    prim.abstract_eval = same_aval  # (a copy of x, updated in place)
    prim.batch = update_batch_rule(prim)
    prim.sparsity = sp.SparsityRule(_update_sparsity, sp.itself)
    return prim


# ---------------------------------------------------------------------------------------------
# multiply: out = x * P, P the product of the values written to each position (1 elsewhere).


def _products(value, shape: tuple, index: tuple, arrays):
    """P: at each position of an array of `shape`, the product of the values written there."""
    return bind(index_multiply_p, filled(shape, 1, dtype_of(value)), value, *arrays, index=index)


def _may_repeat(shape: tuple, index: tuple, arrays, selected: tuple) -> bool:
    """Whether two elements of x[index] may write one position (always, for traced indices)."""
    if arrays:
        return True
    counts = scatter(np.ones(selected, np.intp), shape, index)
    return counts.size > 0 and counts.max() > 1


def _others_product(value, shape: tuple, index: tuple, arrays):
    """For each element of `value`, the product of the other values written to its position
    (None when no position repeats). Without dividing by zero: a factor that is 0 is left out
    of the product, and the result is 0 where another 0 shares the position."""
    if not _may_repeat(shape, index, arrays, shape_of(value)):
        return None
    zero = equal(value, 0)
    nonzero = where(zero, 1.0, value)
    product = gather(_products(nonzero, shape, index, arrays), index, arrays)
    zeros = astype(zero, np.intp)
    zeros_here = gather(scatter(zeros, shape, index, arrays), index, arrays)
    return where(greater(zeros_here, zeros), 0.0, product / nonzero)


def _multiply_jvp(primals, tangents, *, out, index):
    x, value, *arrays = primals
    tx, tv = tangents[:2]
    if tx is None and tv is None:
        return None
    shape = shape_of(x)
    t = None if tx is None else tx * _products(value, shape, index, arrays)
    if tv is not None:
        others = _others_product(value, shape, index, arrays)
        t_value = x * scatter(tv if others is None else tv * others, shape, index, arrays)
        t = t_value if t is None else t + t_value
    return t


def _multiply_vjp(g, x, value, *arrays, out, index):
    shape = shape_of(x)
    ct_value = gather(g * x, index, arrays)
    others = _others_product(value, shape, index, arrays)
    if others is not None:
        ct_value = ct_value * others
    return (g * _products(value, shape, index, arrays), ct_value) + (None,) * len(arrays)


index_multiply_p = _update_primitive("index_multiply", np.multiply)
index_multiply_p.jvp = _multiply_jvp
index_multiply_p.vjp = _multiply_vjp

# ---------------------------------------------------------------------------------------------
# min / max: the derivative goes to whatever attains the result; ties share it equally.


def _winners(x, value, arrays, out, index):
    """Where x and each value equal the result, and how many of them do at each position."""
    dt = dtype_of(out)
    at_x = equal(x, out)
    at_value = equal(value, gather(out, index, arrays))
    count = astype(at_x, dt) + scatter(astype(at_value, dt), shape_of(x), index, arrays)
    return at_x, at_value, where(equal(count, 0), 1.0, count)  # no winner only next to NaN


def _extreme_jvp(primals, tangents, *, out, index):
    x, value, *arrays = primals
    tx, tv = tangents[:2]
    if tx is None and tv is None:
        return None
    at_x, at_value, count = _winners(x, value, arrays, out, index)
    t = None if tx is None else where(at_x, tx, 0.0)
    if tv is not None:
        t_value = scatter(where(at_value, tv, 0.0), shape_of(x), index, arrays)
        t = t_value if t is None else t + t_value
    return t / count


def _extreme_vjp(g, x, value, *arrays, out, index):
    at_x, at_value, count = _winners(x, value, arrays, out, index)
    g = g / count
    ct_value = where(at_value, gather(g, index, arrays), 0.0)
    return (where(at_x, g, 0.0), ct_value) + (None,) * len(arrays)


index_min_p = _update_primitive("index_min", np.minimum)
index_max_p = _update_primitive("index_max", np.maximum)
for _p in (index_min_p, index_max_p):
    _p.jvp = _extreme_jvp
    _p.vjp = _extreme_vjp

# ---------------------------------------------------------------------------------------------
# The `.at` helper.


def _check_options(mode, fill_value=None) -> None:
    if mode not in (None, "promise_in_bounds") or fill_value is not None:
        raise NotImplementedError(
            "x.at[...] follows NumPy's bounds (out-of-bounds indices raise IndexError): "
            "mode= and fill_value= are not supported"
        )


class _IndexUpdateRef:
    """`x.at[index]`: each method returns an updated copy of `x` (`x` itself is unchanged).

    `indices_are_sorted` and `unique_indices` are accepted for JAX compatibility and ignored.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def _in_block(self, update):
        """`update` (a function of an `_IndexUpdateRef`) applied where the index has slices
        with traced bounds: to the block they span, written back (`x[i:i + 3]` under vmap)."""
        starts, sizes, rest = dynamic_parts(self.array, self.index)
        block = update(_IndexUpdateRef(slice_block(self.array, starts, sizes), rest))
        return update_block(self.array, block, starts)

    def _apply(self, prim: Primitive, values):
        shape = shape_of(self.array)
        try:
            index, arrays = split_index(shape, self.index)
        except TracedSliceBounds:
            return self._in_block(lambda ref: ref._apply(prim, values))
        values = conform_value(values, self.array, selection_shape(shape, index, arrays))
        return bind(prim, self.array, values, *arrays, index=index)

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        """`x[index]`."""
        _check_options(mode, fill_value)
        return getitem(self.array, self.index)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[index] = values`, functionally: of repeated indices the last write wins."""
        _check_options(mode)
        return index_set(self.array, self.index, values)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[index] += values`, with repeated indices accumulating (`np.add.at`)."""
        _check_options(mode)
        x = self.array
        shape = shape_of(x)
        try:
            index, arrays = split_index(shape, self.index)
        except TracedSliceBounds:
            return self._in_block(lambda ref: ref.add(values))
        values = conform_value(values, x, selection_shape(shape, index, arrays))
        return add(x, scatter(values, shape, index, arrays))

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[index] *= values`, with repeated indices multiplying (`np.multiply.at`)."""
        _check_options(mode)
        return self._apply(index_multiply_p, values)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[index] = minimum(x[index], values)`, over repeats too (`np.minimum.at`)."""
        _check_options(mode)
        return self._apply(index_min_p, values)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[index] = maximum(x[index], values)`, over repeats too (`np.maximum.at`)."""
        _check_options(mode)
        return self._apply(index_max_p, values)


class _IndexUpdateHelper:
    """`x.at`: index it to choose the positions to update."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


def at(x) -> _IndexUpdateHelper:
    """`x.at` (a Tensor property; also usable on raw arrays): functional indexed updates.

    Example:
        >>> import numpy as np
        >>> at(np.zeros(4))[np.array([0, 0, 2])].add(1.0)
        array([2., 0., 1., 0.])
        >>> at(np.ones(3))[1:].multiply(np.array([2.0, 3.0]))
        array([1., 2., 3.])
        >>> at(np.array([5.0, 5.0]))[[0, 0]].min(np.array([7.0, 4.0]))
        array([4., 5.])
    """
    return _IndexUpdateHelper(x)
