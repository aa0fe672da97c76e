"""`autodiff.lax`'s elementwise, structural, reduction and sorting functions, by JAX's names.

Each is a composite of `autodiff.numpy` functions, so it differentiates, batches and stages
as they do. Where lax's semantics differ from NumPy's (integer `div` rounds toward zero,
`pad` takes negative and interior padding, `sort` sorts several operands by keys), the
composite follows lax.
"""

from __future__ import annotations

import builtins

import numpy as onp

import autodiff.numpy as anp
from autodiff.control import associative_scan
from autodiff.scipy import special


def _is_integer(x) -> bool:
    return anp.issubdtype(anp.result_type(x), anp.integer)


def add(x, y):
    """`x + y`.

    Example:
        >>> float(add(1.0, 2.0))
        3.0
    """
    return anp.add(x, y)


def sub(x, y):
    """`x - y`.

    Example:
        >>> float(sub(1.0, 2.0))
        -1.0
    """
    return anp.subtract(x, y)


def mul(x, y):
    """`x * y`.

    Example:
        >>> float(mul(3.0, 2.0))
        6.0
    """
    return anp.multiply(x, y)


def div(x, y):
    """`x / y`; integers divide rounding toward zero (C's division), as lax does.

    Example:
        >>> int(div(-7, 2)), float(div(7.0, 2.0))
        (-3, 3.5)
    """
    if _is_integer(x) and _is_integer(y):
        q = anp.floor_divide(x, y)
        return anp.where((anp.remainder(x, y) != 0) & ((x < 0) != (y < 0)), q + 1, q)
    return anp.true_divide(x, y)


def rem(x, y):
    """The remainder of `div`: the sign of `x` (C's `%`, NumPy's `fmod`).

    Example:
        >>> int(rem(-7, 2))
        -1
    """
    return anp.fmod(x, y)


def neg(x):
    """`-x`.

    Example:
        >>> float(neg(2.0))
        -2.0
    """
    return anp.negative(x)


def max(x, y):
    """The elementwise maximum (NaN-propagating).

    Example:
        >>> float(max(1.0, 2.0))
        2.0
    """
    return anp.maximum(x, y)


def min(x, y):
    """The elementwise minimum (NaN-propagating).

    Example:
        >>> float(min(1.0, 2.0))
        1.0
    """
    return anp.minimum(x, y)


def rsqrt(x):
    """`1 / sqrt(x)`.

    Example:
        >>> float(rsqrt(4.0))
        0.5
    """
    return 1.0 / anp.sqrt(x)


def logistic(x):
    """The logistic sigmoid `1 / (1 + exp(-x))`.

    Example:
        >>> float(logistic(0.0))
        0.5
    """
    return special.expit(x)


def integer_pow(x, y: int):
    """`x ** y` for a Python integer `y`.

    Example:
        >>> float(integer_pow(3.0, 2))
        9.0
    """
    if not isinstance(y, (int, onp.integer)):
        raise TypeError(f"integer_pow: y must be a Python integer, got {type(y).__name__}")
    return anp.power(x, int(y))


def clamp(min, x, max):
    """`x` clipped to `[min, max]` (lax's argument order).

    Example:
        >>> float(clamp(0.0, 3.0, 2.0))
        2.0
    """
    return anp.minimum(anp.maximum(x, min), max)


def select(pred, on_true, on_false):
    """`on_true` where `pred`, else `on_false`.

    Example:
        >>> select(anp.array([True, False]), anp.ones(2), anp.zeros(2)).tolist()
        [1.0, 0.0]
    """
    return anp.where(pred, on_true, on_false)


def select_n(which, *cases):
    """`cases[which]` elementwise (`which` boolean with two cases, or integer).

    Example:
        >>> select_n(anp.array([0, 2]), anp.zeros(2), anp.ones(2), anp.full(2, 2.0)).tolist()
        [0.0, 2.0]
    """
    if not cases:
        raise ValueError("select_n: needs at least one case")
    out = cases[0]
    for i, case in enumerate(cases[1:], 1):
        out = anp.where(anp.asarray(which) == i, case, out)
    return out


def convert_element_type(operand, new_dtype):
    """`operand` cast to `new_dtype` (floats to integers round toward zero).

    Example:
        >>> int(convert_element_type(2.7, anp.int32))
        2
    """
    return anp.asarray(operand).astype(new_dtype)


def reshape(operand, new_sizes, dimensions=None):
    """`operand` (transposed by `dimensions` first, if given) reshaped to `new_sizes`.

    Example:
        >>> reshape(anp.arange(6), (2, 3)).shape
        (2, 3)
    """
    operand = anp.asarray(operand)
    if dimensions is not None:
        operand = anp.transpose(operand, tuple(dimensions))
    return anp.reshape(operand, tuple(new_sizes))


def broadcast(operand, sizes):
    """`operand` broadcast with the leading dimensions `sizes` added.

    Example:
        >>> broadcast(anp.ones(3), (2,)).shape
        (2, 3)
    """
    operand = anp.asarray(operand)
    return anp.broadcast_to(operand, tuple(sizes) + operand.shape)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """`operand` broadcast to `shape`, its dimension i landing on `broadcast_dimensions[i]`.

    Example:
        >>> broadcast_in_dim(anp.arange(3), (3, 2), (0,)).tolist()
        [[0, 0], [1, 1], [2, 2]]
    """
    operand = anp.asarray(operand)
    dims = tuple(broadcast_dimensions)
    if len(dims) != operand.ndim:
        raise ValueError(
            f"broadcast_in_dim: broadcast_dimensions must name each of operand's {operand.ndim} "
            f"dimensions, got {dims}"
        )
    lifted = [1] * len(shape)
    for i, d in enumerate(dims):
        lifted[d] = operand.shape[i]
    return anp.broadcast_to(anp.reshape(operand, tuple(lifted)), tuple(shape))


def squeeze(array, dimensions):
    """`array` without the size-1 `dimensions`.

    Example:
        >>> squeeze(anp.ones((1, 3, 1)), (0, 2)).shape
        (3,)
    """
    return anp.squeeze(array, axis=tuple(dimensions))


def expand_dims(array, dimensions):
    """`array` with size-1 dimensions inserted at `dimensions`.

    Example:
        >>> expand_dims(anp.ones(3), (0, 2)).shape
        (1, 3, 1)
    """
    return anp.expand_dims(array, tuple(dimensions))


def transpose(operand, permutation):
    """`operand`'s dimensions permuted.

    Example:
        >>> transpose(anp.ones((2, 3)), (1, 0)).shape
        (3, 2)
    """
    return anp.transpose(operand, tuple(permutation))


def rev(operand, dimensions):
    """`operand` reversed along `dimensions`.

    Example:
        >>> rev(anp.arange(3), (0,)).tolist()
        [2, 1, 0]
    """
    return anp.flip(operand, axis=tuple(dimensions)) if len(dimensions) else anp.asarray(operand)


def concatenate(operands, dimension: int):
    """`operands` joined along `dimension`.

    Example:
        >>> concatenate([anp.ones(2), anp.zeros(1)], 0).tolist()
        [1.0, 1.0, 0.0]
    """
    return anp.concatenate(operands, axis=dimension)


def _interior(x, axis: int, interior: int, value):
    """`x` with `interior` copies of `value` between neighbours along `axis`."""
    n = x.shape[axis]
    if interior == 0 or n <= 1:
        return x
    moved = anp.moveaxis(x, axis, -1)
    fill = anp.broadcast_to(anp.asarray(value, dtype=x.dtype), moved.shape + (interior,))
    spread = anp.concatenate([moved[..., None], fill], axis=-1)
    spread = anp.reshape(spread, moved.shape[:-1] + (n * (interior + 1),))
    return anp.moveaxis(spread[..., : (n - 1) * (interior + 1) + 1], -1, axis)


def pad(operand, padding_value, padding_config):
    """`operand` padded with `padding_value`: `(low, high, interior)` per dimension; negative
    `low`/`high` crop.

    Example:
        >>> pad(anp.array([1.0, 2.0]), 0.0, [(1, -1, 1)]).tolist()
        [0.0, 1.0, 0.0]
    """
    x = anp.asarray(operand)
    config = [tuple(int(v) for v in c) for c in padding_config]
    if len(config) != x.ndim or any(len(c) != 3 for c in config):
        raise ValueError(
            f"pad: padding_config needs one (low, high, interior) per dimension of the "
            f"{x.ndim}-d operand, got {padding_config}"
        )
    if any(c[2] < 0 for c in config):
        raise ValueError(f"pad: interior padding must be nonnegative, got {padding_config}")
    value = anp.asarray(padding_value, dtype=x.dtype)
    for axis, (_, _, interior) in enumerate(config):
        x = _interior(x, axis, interior, value)
    widths = [(builtins.max(lo, 0), builtins.max(hi, 0)) for lo, hi, _ in config]
    if any(w != (0, 0) for w in widths):
        mask = onp.pad(onp.ones(x.shape, bool), widths)
        x = anp.where(mask, anp.pad(x, widths), value)
    crop = tuple(
        builtins.slice(-builtins.min(lo, 0), n + builtins.min(hi, 0))
        for n, (lo, hi, _) in zip(x.shape, config)
    )
    return x[crop]


def slice(operand, start_indices, limit_indices, strides=None):
    """`operand[start:limit:stride]` in every dimension.

    Example:
        >>> slice(anp.arange(10), (1,), (8,), (3,)).tolist()
        [1, 4, 7]
    """
    strides = (1,) * len(start_indices) if strides is None else strides
    index = tuple(builtins.slice(*b) for b in zip(start_indices, limit_indices, strides))
    return anp.asarray(operand)[index]


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """`operand[start_index:limit_index:stride]` along `axis`.

    Example:
        >>> slice_in_dim(anp.arange(6), 1, 5, 2).tolist()
        [1, 3]
    """
    x = anp.asarray(operand)
    index = [builtins.slice(None)] * x.ndim
    index[axis] = builtins.slice(start_index, limit_index, stride)
    return x[tuple(index)]


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """`operand`'s entry `index` along `axis` (kept as a size-1 dimension if `keepdims`).

    Example:
        >>> index_in_dim(anp.arange(6).reshape(2, 3), 1, keepdims=False).tolist()
        [3, 4, 5]
    """
    x = anp.asarray(operand)
    index = index + x.shape[axis] if index < 0 else index
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else anp.squeeze(out, axis=axis)


def reduce_sum(operand, axes):
    """The sum over `axes`.

    Example:
        >>> reduce_sum(anp.ones((2, 3)), (1,)).tolist()
        [3.0, 3.0]
    """
    return anp.sum(operand, axis=tuple(axes))


def reduce_prod(operand, axes):
    """The product over `axes`.

    Example:
        >>> float(reduce_prod(anp.array([2.0, 3.0]), (0,)))
        6.0
    """
    return anp.prod(operand, axis=tuple(axes))


def reduce_max(operand, axes):
    """The maximum over `axes`.

    Example:
        >>> float(reduce_max(anp.array([2.0, 3.0]), (0,)))
        3.0
    """
    return anp.max(operand, axis=tuple(axes))


def reduce_min(operand, axes):
    """The minimum over `axes`.

    Example:
        >>> float(reduce_min(anp.array([2.0, 3.0]), (0,)))
        2.0
    """
    return anp.min(operand, axis=tuple(axes))


def reduce_and(operand, axes):
    """Logical and over `axes`.

    Example:
        >>> bool(reduce_and(anp.array([True, False]), (0,)))
        False
    """
    return anp.all(operand, axis=tuple(axes))


def reduce_or(operand, axes):
    """Logical or over `axes`.

    Example:
        >>> bool(reduce_or(anp.array([True, False]), (0,)))
        True
    """
    return anp.any(operand, axis=tuple(axes))


def argmax(operand, axis: int, index_dtype=anp.int32):
    """The index of the maximum along `axis` (the first one of ties).

    Example:
        >>> int(argmax(anp.array([1.0, 3.0, 3.0]), 0))
        1
    """
    return anp.argmax(operand, axis=axis).astype(index_dtype)


def argmin(operand, axis: int, index_dtype=anp.int32):
    """The index of the minimum along `axis` (the first one of ties).

    Example:
        >>> int(argmin(anp.array([1.0, 0.0, 0.0]), 0))
        1
    """
    return anp.argmin(operand, axis=axis).astype(index_dtype)


def iota(dtype, size: int):
    """`0, 1, ..., size - 1` of `dtype`.

    Example:
        >>> iota(anp.int32, 3).tolist()
        [0, 1, 2]
    """
    return anp.arange(size, dtype=dtype)


def broadcasted_iota(dtype, shape, dimension: int):
    """An array of `shape` counting along `dimension`.

    Example:
        >>> broadcasted_iota(anp.int32, (2, 2), 1).tolist()
        [[0, 1], [0, 1]]
    """
    return broadcast_in_dim(iota(dtype, shape[dimension]), tuple(shape), (dimension,))


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value`.

    Example:
        >>> full((2,), 3.0).tolist()
        [3.0, 3.0]
    """
    shape = (shape,) if isinstance(shape, (int, onp.integer)) else tuple(shape)
    dtype = anp.result_type(fill_value) if dtype is None else dtype
    return anp.broadcast_to(anp.asarray(fill_value, dtype=dtype), shape)


def empty(shape, dtype=None):
    """An array of `shape` (lax leaves its contents unspecified: zeros here).

    Example:
        >>> empty((2,), anp.float32).tolist()
        [0.0, 0.0]
    """
    return anp.zeros(shape, dtype=dtype)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like `x` (its shape and dtype, unless given) filled with `fill_value`.

    Example:
        >>> full_like(anp.zeros(2, anp.int32), 7).tolist()
        [7, 7]
    """
    x = anp.asarray(x)
    return full(
        x.shape if shape is None else shape, fill_value, x.dtype if dtype is None else dtype
    )


def _cumulative(reduce, operand, axis: int, reverse: bool):
    x = anp.asarray(operand)
    if reverse:
        return anp.flip(reduce(anp.flip(x, axis), axis), axis)
    return reduce(x, axis)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """The running sum along `axis` (from the end if `reverse`).

    Example:
        >>> cumsum(anp.array([1, 2, 3]), reverse=True).tolist()
        [6, 5, 3]
    """
    return _cumulative(lambda x, a: anp.cumsum(x, axis=a), operand, axis, reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """The running product along `axis` (from the end if `reverse`).

    Example:
        >>> cumprod(anp.array([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return _cumulative(lambda x, a: anp.cumprod(x, axis=a), operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """The running maximum along `axis` (from the end if `reverse`).

    Example:
        >>> cummax(anp.array([1, 3, 2])).tolist()
        [1, 3, 3]
    """
    return associative_scan(anp.maximum, anp.asarray(operand), reverse=reverse, axis=axis)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """The running minimum along `axis` (from the end if `reverse`).

    Example:
        >>> cummin(anp.array([3, 1, 2])).tolist()
        [3, 1, 1]
    """
    return associative_scan(anp.minimum, anp.asarray(operand), reverse=reverse, axis=axis)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """The running `log(sum(exp(.)))` along `axis` (from the end if `reverse`).

    Example:
        >>> round(float(cumlogsumexp(anp.zeros(2))[1]), 6)
        0.693147
    """
    return associative_scan(anp.logaddexp, anp.asarray(operand), reverse=reverse, axis=axis)


def _stable_order(keys, dimension: int):
    """The permutation sorting lexicographically by `keys` (the first key first), stable."""
    order = None
    for key in reversed(keys):
        ranked = key if order is None else anp.take_along_axis(key, order, axis=dimension)
        step = anp.argsort(ranked, axis=dimension, stable=True)
        order = step if order is None else anp.take_along_axis(order, step, axis=dimension)
    return order


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """`operand` sorted along `dimension`; a sequence of operands is sorted together by its
    first `num_keys` (lexicographically) and returned as a tuple. NaNs sort last.

    Example:
        >>> sort(anp.array([3.0, 1.0, 2.0])).tolist()
        [1.0, 2.0, 3.0]
    """
    if not isinstance(operand, (tuple, list)):
        return anp.sort(operand, axis=dimension)
    operands = [anp.asarray(op) for op in operand]
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys must be in [1, {len(operands)}], got {num_keys}")
    order = _stable_order(operands[:num_keys], dimension)
    return tuple(anp.take_along_axis(op, order, axis=dimension) for op in operands)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """`keys` sorted along `dimension`, and `values` permuted alike.

    Example:
        >>> k, v = sort_key_val(anp.array([3, 1, 2]), anp.array([0.0, 1.0, 2.0]))
        >>> k.tolist(), v.tolist()
        ([1, 2, 3], [1.0, 2.0, 0.0])
    """
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis`, in descending order, and their indices (the
    lower index first among equal entries).

    Example:
        >>> values, indices = top_k(anp.array([1.0, 3.0, 2.0]), 2)
        >>> values.tolist(), indices.tolist()
        ([3.0, 2.0], [1, 2])
    """
    x = anp.asarray(operand)
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"top_k: k must be in [0, {x.shape[axis]}], got {k}")
    if anp.issubdtype(x.dtype, anp.unsignedinteger) or x.dtype == bool:
        key = -x.astype(anp.int64)
    else:
        key = -x
    order = anp.argsort(key, axis=axis, stable=True)
    order = slice_in_dim(order, 0, k, 1, axis % x.ndim)
    return anp.take_along_axis(x, order, axis=axis), order.astype(anp.int32)


def _dot_dimension_numbers(dimension_numbers):
    try:
        (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(
            "dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}"
        ) from None
    return tuple(map(tuple, (lhs_contract, rhs_contract, lhs_batch, rhs_batch)))


def dot_general(
    lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *, out_sharding=None
):
    """The tensor contraction of `lhs` and `rhs`: `dimension_numbers` is
    `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`. The result's dimensions
    are the batch ones, then `lhs`'s free ones, then `rhs`'s.

    Example:
        >>> dn = (((2,), (1,)), ((0,), (0,)))  # contract 2 with 1, batch over 0 and 0
        >>> dot_general(anp.ones((4, 2, 3)), anp.ones((4, 3, 5)), dn).shape
        (4, 2, 5)
    """
    lhs, rhs = anp.asarray(lhs), anp.asarray(rhs)
    lc, rc, lb, rb = _dot_dimension_numbers(dimension_numbers)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError(f"dot_general: unmatched dimension_numbers {dimension_numbers!r}")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_terms = [next(letters) for _ in range(lhs.ndim)]
    rhs_terms = [next(letters) for _ in range(rhs.ndim)]
    for i, j in zip(lc + lb, rc + rb):
        rhs_terms[j] = lhs_terms[i]
    batch = [lhs_terms[i] for i in lb]
    lhs_free = [t for i, t in enumerate(lhs_terms) if i not in lc + lb]
    rhs_free = [t for j, t in enumerate(rhs_terms) if j not in rc + rb]
    spec = f"{''.join(lhs_terms)},{''.join(rhs_terms)}->{''.join(batch + lhs_free + rhs_free)}"
    out = anp.einsum(spec, lhs, rhs)
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """The vector/matrix product of `lhs` and `rhs` (rank 1 or 2).

    Example:
        >>> float(dot(anp.ones(3), anp.ones(3)))
        3.0
    """
    out = anp.dot(lhs, rhs)
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """The matrix products of stacks of matrices.

    Example:
        >>> batch_matmul(anp.ones((2, 3, 4)), anp.ones((2, 4, 5))).shape
        (2, 3, 5)
    """
    return anp.matmul(lhs, rhs)
