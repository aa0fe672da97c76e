"""Reductions: sum, prod, max/min primitives; mean/var/std/ptp/average composites; arg/logical ones.

Every reduction primitive takes `axes` (a sorted tuple of non-negative ints, see
`normalize_axes`) and `keepdims`. `reduce_sum` and `expand_reduced` are each other's
transpose: a reduction's cotangent is its output cotangent broadcast back over the
reduced axes. max/min split the derivative evenly among tied extrema; prod's rule
never divides by a zero factor.
"""

from __future__ import annotations

import builtins
import math
from functools import partial

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.abstract import ShapedArray, accumulation_dtype, shaped_like
from autodiff.core.dtypes import dtype_of, is_inexact, reduction
from autodiff.core.graph import name_node
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import elementwise, series, shape
from autodiff.ops.elementwise import astype, equal_p, logical_and_p, logical_not_p, logical_or_p
from autodiff.ops.sparsity import MOVEMENT, REDUCTION, accumulation, itself, reduction_targets
from autodiff.ops.structural import (
    axis_in_batched,
    batch_in_front,
    broadcast_to,
    move_to_front,
    reshape,
    shape_of,
)

_ALL_AXES = [tuple(range(n)) for n in range(33)]


def normalize_axes(axis, ndim: int) -> tuple:
    """`axis` (None, an int, possibly negative, or a tuple of them) as a sorted tuple of axes.

    Example:
        >>> normalize_axes((-1, 0), 3)
        (0, 2)
    """
    if axis is None:
        return _ALL_AXES[ndim] if ndim < len(_ALL_AXES) else tuple(range(ndim))
    axes = normalize_axis_tuple(axis, ndim, allow_duplicate=True)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")  # numpy.sum's message
    return tuple(sorted(axes))


def _group_size(shape: tuple, axes: tuple) -> int:
    """How many elements each output element of a reduction over `axes` combines."""
    return math.prod(shape[a] for a in axes)


def _reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    """The shape of a reduction over `axes` of an array of `shape`."""
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def reduction_abstract_eval(out_dtype=None):
    """abstract_eval of a reduction with params `axes`, `keepdims` whose result dtype is
    `out_dtype(input dtype)` (None: the input's)."""

    def rule(x, *, axes, keepdims):
        dtype = x.dtype if out_dtype is None else out_dtype(x.dtype)
        return shaped_like(x, _reduced_shape(x.shape, axes, keepdims), dtype)

    return rule


def _reduce(p, a, axis, keepdims):
    """`p` over NumPy's `axis` (None, an int or a tuple of them) of `a`."""
    return bind(p, a, axes=normalize_axes(axis, len(shape_of(a))), keepdims=bool(keepdims))


def listed_operand(a):
    """A list or tuple (holding Tensors, perhaps) as one array, as NumPy reads it: stacked,
    and differentiable in the Tensors; anything else as it is."""
    return shape.array(a) if type(a) is list or type(a) is tuple else a


def _reject(fname: str, **unsupported) -> None:
    for name, value in unsupported.items():
        if value is not None:
            raise TypeError(f"autodiff.numpy.{fname} does not support the argument {name}=")


# ---------------------------------------------------------------------------------------------
# sum and its transpose, expand_reduced.


def reduce_sum(x, axes: tuple, keepdims: bool):
    """Sum over normalized `axes`; summing over no axis is the identity."""
    if not axes:
        return x
    return bind(reduce_sum_p, x, axes=axes, keepdims=keepdims)


def expand_reduced(g, axes: tuple, keepdims: bool, shape: tuple):
    """Broadcast `g`, a reduction over `axes` of an array of `shape`, back to `shape`."""
    if keepdims or len(axes) == len(shape):
        return broadcast_to(g, shape)
    if not axes:
        return g
    return bind(expand_reduced_p, g, axes=axes, shape=shape)


reduce_sum_p = Primitive("reduce_sum")
reduce_sum_p.saves_inputs = False  # its vjp reads only shapes and dtypes
reduce_sum_p.saves_output = False
# np.add.reduce (bfloat16 accumulated in float32: NumPy's would round after every term)
reduce_sum_p.impl = reduction(np.add)
reduce_sum_p.sparsity = REDUCTION
reduce_sum_p.abstract_eval = reduction_abstract_eval(accumulation_dtype)
reduce_sum_p.jvp = lambda primals, tangents, *, out, axes, keepdims: (
    None if tangents[0] is None else reduce_sum(tangents[0], axes, keepdims)
)
reduce_sum_p.vjp = lambda g, x, *, out, axes, keepdims: (
    expand_reduced(g, axes, keepdims, shape_of(x)),
)


expand_reduced_p = Primitive("expand_reduced")
expand_reduced_p.saves_inputs = False  # its vjp reads only shapes and dtypes
expand_reduced_p.saves_output = False
expand_reduced_p.impl = lambda g, *, axes, shape: np.broadcast_to(np.expand_dims(g, axes), shape)
expand_reduced_p.abstract_eval = lambda g, *, axes, shape: shaped_like(g, shape)
expand_reduced_p.jvp = lambda primals, tangents, *, out, axes, shape: (
    None if tangents[0] is None else expand_reduced(tangents[0], axes, False, shape)
)
expand_reduced_p.vjp = lambda g, x, *, out, axes, shape: (reduce_sum(g, axes, False),)


def _expand_reduced_batch(values, dims, *, axes, shape):
    # g's batch axis lands just before the output axis that g's following axis becomes, so
    # the other axes keep their order.
    g, bdim = values[0], dims[0]
    kept = [i for i in range(len(shape)) if i not in axes]
    at = kept[bdim] if bdim < len(kept) else len(shape)
    size = shape_of(g)[bdim]
    out_shape = shape[:at] + (size,) + shape[at:]
    axes = tuple(axis_in_batched(a, at) for a in axes)
    return bind(expand_reduced_p, g, axes=axes, shape=out_shape), at


def _reduction_batch(p):
    """Batch rule of a reduction with params `axes`, `keepdims`: the batch axis stays put."""

    def rule(values, dims, *, axes, keepdims):
        bdim = dims[0]
        axes = tuple(axis_in_batched(a, bdim) for a in axes)
        out_dim = bdim if keepdims else bdim - len([a for a in axes if a < bdim])
        return bind(p, values[0], axes=axes, keepdims=keepdims), out_dim

    return rule


reduce_sum_p.batch = _reduction_batch(reduce_sum_p)
reduce_sum_p.taylor = series.linear_rule(reduce_sum_p)
expand_reduced_p.sparsity = MOVEMENT
expand_reduced_p.batch = _expand_reduced_batch
expand_reduced_p.taylor = series.linear_rule(expand_reduced_p)

# ---------------------------------------------------------------------------------------------
# max and min. The derivative is split evenly among the elements equal to the extremum (ties
# share it, as in JAX and HIPS autograd); a NaN extremum sends it to the NaN elements.


def _tie_weights_impl(x, out, *, axes, keepdims):
    x = np.asarray(x)
    out = out if keepdims else np.expand_dims(out, axes)
    hit = x == out
    if x.dtype.kind in "fc" and np.isnan(out).any():
        hit |= np.isnan(x)
    weights = hit.astype(x.dtype)
    return weights / weights.sum(axis=axes, keepdims=True)


# The weights are a constant: max is locally linear in the selected elements.
tie_weights_p = Primitive("tie_weights", differentiable=False)
tie_weights_p.impl = _tie_weights_impl
# (weights / their sum: the true division of x's dtype by its sum's)
tie_weights_p.abstract_eval = lambda x, out, *, axes, keepdims: ShapedArray(
    x.shape, np.true_divide.resolve_dtypes((x.dtype, accumulation_dtype(x.dtype), None))[2]
)


def _tie_weights_batch(values, dims, *, axes, keepdims):
    x, out = batch_in_front(values, dims)
    axes = tuple(a + 1 for a in axes)
    return bind(tie_weights_p, x, out, axes=axes, keepdims=keepdims), 0


tie_weights_p.batch = _tie_weights_batch


def weighted_reduction(name: str, impl, weights) -> Primitive:
    """A reduction over `axes` whose derivative is elementwise weights `weights(x, out, axes,
    keepdims)` (same shape as x): jvp = sum(t * w), vjp = expand(g) * w. Max/min (tie weights),
    prod (product of the others) and logsumexp (softmax) are all of this form."""
    p = Primitive(name)
    p.impl = impl

    def jvp(primals, tangents, *, out, axes, keepdims):
        if tangents[0] is None:
            return None
        return reduce_sum(tangents[0] * weights(primals[0], out, axes, keepdims), axes, keepdims)

    def vjp(g, x, *, out, axes, keepdims):
        w = weights(x, out, axes, keepdims)
        return (expand_reduced(g, axes, keepdims, shape_of(x)) * w,)

    p.jvp = jvp
    p.vjp = vjp
    p.batch = _reduction_batch(p)
    p.sparsity = accumulation(reduction_targets, itself)
    return p


def _tie_weights(x, out, axes, keepdims):
    return bind(tie_weights_p, x, out, axes=axes, keepdims=keepdims)


def _without_identity_abstract_eval(name: str, rule):
    """`rule` for a reduction without an identity (max, argmax): an empty group is an error."""

    def checked(x, **params):
        axis = params.get("axes", params.get("axis"))
        if builtins.any(x.shape[a] == 0 for a in normalize_axes(axis, x.ndim)):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        return rule(x, **params)

    return checked


def _extrema(ufunc, x, *, axes, keepdims):
    """Where x reaches its group's extremum (or the group's is NaN)."""
    best = ufunc.reduce(x, axis=axes, keepdims=True)
    with np.errstate(invalid="ignore"):
        return (x == best) | np.isnan(best)


def _extremum(name: str, ufunc):
    p = weighted_reduction(
        name,
        lambda x, *, axes, keepdims: ufunc.reduce(x, axis=axes, keepdims=keepdims),
        _tie_weights,
    )
    p.abstract_eval = _without_identity_abstract_eval(ufunc.__name__, reduction_abstract_eval())
    # (no second-order term; locally, the extrema only, all of them on ties)
    p.sparsity = accumulation(reduction_targets, exact=False, select=partial(_extrema, ufunc))
    return p


reduce_max_p = _extremum("reduce_max", np.maximum)
reduce_min_p = _extremum("reduce_min", np.minimum)

# ---------------------------------------------------------------------------------------------
# Non-differentiable reductions: integer or boolean results.


def _nondiff(name: str, impl, abstract_eval):
    p = Primitive(name, differentiable=False)
    p.impl = impl
    p.abstract_eval = abstract_eval
    return p


def _arg_abstract_eval(x, *, axis, keepdims):
    shape = _reduced_shape(x.shape, normalize_axes(axis, x.ndim), keepdims)
    return ShapedArray(shape, np.intp)


argmax_p = _nondiff(
    "argmax",
    lambda x, *, axis, keepdims: np.argmax(x, axis, keepdims=keepdims),
    _without_identity_abstract_eval("argmax", _arg_abstract_eval),
)
argmin_p = _nondiff(
    "argmin",
    lambda x, *, axis, keepdims: np.argmin(x, axis, keepdims=keepdims),
    _without_identity_abstract_eval("argmin", _arg_abstract_eval),
)
_truth_abstract_eval = reduction_abstract_eval(lambda dtype: np.dtype(bool))
all_p = _nondiff(
    "all",
    lambda x, *, axes, keepdims: np.all(x, axis=axes, keepdims=keepdims),
    _truth_abstract_eval,
)
any_p = _nondiff(
    "any",
    lambda x, *, axes, keepdims: np.any(x, axis=axes, keepdims=keepdims),
    _truth_abstract_eval,
)
count_nonzero_p = _nondiff(
    "count_nonzero",
    lambda x, *, axes, keepdims: np.count_nonzero(x, axis=axes, keepdims=keepdims),
    reduction_abstract_eval(lambda dtype: np.dtype(np.intp)),
)
for _p in (all_p, any_p, count_nonzero_p):
    _p.batch = _reduction_batch(_p)


def _arg_batch(p):
    def rule(values, dims, *, axis, keepdims):
        x, bdim = values[0], dims[0]
        if axis is None:  # an index into each example's flattened array
            x = move_to_front(x, bdim)
            shape = shape_of(x)
            i = bind(p, reshape(x, (shape[0], -1)), axis=1, keepdims=False)
            return (reshape(i, (shape[0],) + (1,) * (len(shape) - 1)) if keepdims else i), 0
        axis = axis_in_batched(axis, bdim)
        return bind(p, x, axis=axis, keepdims=keepdims), bdim - (not keepdims and axis < bdim)

    return rule


argmax_p.batch = _arg_batch(argmax_p)
argmin_p.batch = _arg_batch(argmin_p)

# ---------------------------------------------------------------------------------------------
# prod. d prod / d x_i is the product of the other factors of x_i's group: out / x_i when no
# factor is zero; with exactly one zero, the product of the nonzero factors at the zero and 0
# elsewhere; with two or more zeros, 0. Written with autodiff ops, so it differentiates again;
# the higher derivatives are exact wherever a group has at most one zero factor (with two, the
# mixed derivative between the two zero factors is reported as 0).


def _prod_others(x, out, axes: tuple, keepdims: bool):
    """For each element of `x`, the product of the other elements of its group."""
    out_b = expand_reduced(out, axes, keepdims, shape_of(x))
    is_zero = bind(equal_p, x, 0.0)
    # A concrete mask without zeros (the common case) needs no guarding.
    if isinstance(is_zero, (np.ndarray, np.generic)) and not is_zero.any():
        return out_b / x
    safe = elementwise.where(is_zero, 1.0, x)
    zero_count = reduce_sum(is_zero, axes, True)
    nonzero_prod = reduce_prod(safe, axes, True)
    at_zero = elementwise.where(zero_count == 1, nonzero_prod, 0.0)
    return elementwise.where(is_zero, at_zero, out_b / safe)


def reduce_prod(x, axes: tuple, keepdims: bool):
    """Product over `axes` (already normalized)."""
    return bind(reduce_prod_p, x, axes=axes, keepdims=keepdims)


reduce_prod_p = weighted_reduction(
    "reduce_prod",
    reduction(np.multiply),
    _prod_others,
)
reduce_prod_p.abstract_eval = reduction_abstract_eval(accumulation_dtype)


# ---------------------------------------------------------------------------------------------
# The functions. NumPy names and signatures; `autodiff.numpy` re-exports them.


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """`numpy.sum`, differentiable.

    Example:
        >>> import numpy as np
        >>> sum(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)
        array([4., 6.])
    """
    _reject("sum", out=out)
    a = listed_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    if where is not True:
        a = elementwise.where(where, a, 0)
    result = _reduce(reduce_sum_p, a, axis, keepdims)
    if initial is not None:
        result = result + np.asarray(initial).item()
    return result


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """`numpy.prod`, differentiable (also where factors are zero).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.grad(lambda x: prod(x))(np.array([2.0, 0.0, 3.0]))
        array([0., 6., 0.])
    """
    _reject("prod", out=out)
    a = listed_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    if where is not True:
        a = elementwise.where(where, a, 1)
    result = reduce_prod(a, normalize_axes(axis, len(shape_of(a))), bool(keepdims))
    if initial is not None:
        result = result * np.asarray(initial).item()
    return result


def _extremum_fn(p, name: str, doc_name: str):
    ufunc = np.maximum if name.endswith("max") else np.minimum

    def f(a, axis=None, out=None, keepdims=False, initial=None, where=True):
        _reject(name, out=out)
        a = listed_operand(a)
        if where is not True:  # the masked-out elements count as `initial`
            if initial is None:
                raise ValueError(
                    f"reduction operation '{ufunc.__name__}' does not have an identity, so "
                    "to use a where mask one has to specify 'initial'"
                )
            a = elementwise.where(where, a, np.asarray(initial, dtype_of(a)))
        result = _reduce(p, a, axis, keepdims)
        if initial is not None:
            result = elementwise.FUNCTIONS[ufunc.__name__](
                result, np.asarray(initial, dtype_of(result))
            )
        return result

    f.__name__ = f.__qualname__ = name
    rows = [4.0, 3.0] if name.endswith("max") else [1.0, 2.0]
    f.__doc__ = f"""`numpy.{doc_name}`, differentiable: tied extrema share the derivative evenly
    (as in JAX and HIPS autograd).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> anp.{name}(np.array([[1.0, 4.0], [3.0, 2.0]]), axis=1).tolist()
        {rows}
        >>> ad.grad(anp.{name})(np.array([2.0, 2.0, 2.0]))  # a three-way tie
        array([0.33333333, 0.33333333, 0.33333333])
    """
    return f


max = _extremum_fn(reduce_max_p, "max", "max")
min = _extremum_fn(reduce_min_p, "min", "min")
amax = _extremum_fn(reduce_max_p, "amax", "amax")
amin = _extremum_fn(reduce_min_p, "amin", "amin")


def ptp(a, axis=None, out=None, keepdims=False):
    """`numpy.ptp` (max - min), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> x = np.array([3.0, 1.0, 2.0])
        >>> float(ptp(x)), ad.grad(ptp)(x)
        (2.0, array([ 1., -1.,  0.]))
    """
    _reject("ptp", out=out)
    return max(a, axis, keepdims=keepdims) - min(a, axis, keepdims=keepdims)


def _as_float(a, dtype):
    """NumPy's accumulation dtype for mean/var: float64 for integers and bools, else `dtype`."""
    if dtype is not None:
        return astype(a, dtype)
    if not is_inexact(dtype_of(a)):
        return astype(a, np.float64)
    return a


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """`numpy.mean`, differentiable.

    Example:
        >>> import numpy as np
        >>> mean(np.array([[1.0, 2.0], [3.0, 5.0]]), axis=1)
        array([1.5, 4. ])
    """
    _reject("mean", out=out)
    a = listed_operand(a)
    result_dtype = np.dtype(dtype) if dtype is not None else None
    if dtype is None and dtype_of(a) == np.float16:
        dtype = np.float32  # NumPy accumulates float16 in float32
        result_dtype = np.dtype(np.float16)
    x = _as_float(a, dtype)
    shape = shape_of(x)
    axes = normalize_axes(axis, len(shape))
    keepdims = bool(keepdims)
    if where is True:
        count = _group_size(shape, axes)
    else:
        x = elementwise.where(where, x, 0)
        shape = shape_of(x)
        count = reduce_sum(broadcast_to(astype(where, x.dtype), shape), axes, keepdims)
    result = bind(reduce_sum_p, x, axes=axes, keepdims=keepdims) / count
    if result_dtype is not None:
        return astype(result, result_dtype)
    return name_node(result, "MeanBackward0")  # (torch's name of the torch face's node)


def _variance(a, axis, dtype, ddof, keepdims, where, mean, correction):
    """numpy.var's computation (for var and std)."""
    if where is not True:
        raise NotImplementedError("autodiff.numpy.var does not support where=")
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    x = _as_float(listed_operand(a), dtype)
    shape = shape_of(x)
    axes = normalize_axes(axis, len(shape))
    count = _group_size(shape, axes)
    if mean is None:
        mean = bind(reduce_sum_p, x, axes=axes, keepdims=True) / count
    centered = x - mean
    if np.issubdtype(dtype_of(centered), np.complexfloating):
        # |c|^2 as NumPy computes it, re^2 + im^2 (im = real(-1j c) exactly)
        re, im = elementwise.real(centered), elementwise.real(centered * -1j)
        squares = re * re + im * im
    else:
        squares = centered * centered
    return bind(reduce_sum_p, squares, axes=axes, keepdims=bool(keepdims)) / builtins.max(
        count - ddof, 0
    )


def _spread_fn(name: str, of_variance, doc: str):
    """numpy.var (`of_variance` the identity) or numpy.std (sqrt): one signature for both."""

    def f(
        a,
        axis=None,
        dtype=None,
        out=None,
        ddof=0,
        keepdims=False,
        *,
        where=True,
        mean=None,
        correction=None,
    ):
        _reject(name, out=out)
        return of_variance(_variance(a, axis, dtype, ddof, keepdims, where, mean, correction))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


var = _spread_fn(
    "var",
    lambda v: v,
    """`numpy.var`, differentiable.

    Example:
        >>> import numpy as np
        >>> var(np.array([1.0, 2.0, 3.0, 4.0]), ddof=1)
        np.float64(1.6666666666666667)
    """,
)


def sqrt_with_zero_derivative(v):
    """sqrt(v) for a variance `v`, with a zero derivative where `v` is 0: a spread of 0 is
    the minimum of the standard deviation (of one value, a constant), where torch and HIPS
    autograd also give 0 (JAX gives NaN)."""
    zero = bind(equal_p, v, 0)
    if isinstance(zero, (np.ndarray, np.generic)) and not zero.any():  # known: no guard needed
        return elementwise.sqrt(v)
    return elementwise.where(zero, 0, elementwise.sqrt(elementwise.where(zero, 1, v)))


std = _spread_fn(
    "std",
    sqrt_with_zero_derivative,
    """`numpy.std`, differentiable; where the spread is 0 its derivative is 0 (as torch and
    HIPS autograd; JAX gives NaN).

    Example:
        >>> import numpy as np
        >>> std(np.array([1.0, 3.0]))
        np.float64(1.0)
    """,
)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """`numpy.average`, differentiable in `a` and `weights`.

    Example:
        >>> import numpy as np
        >>> average(np.array([1.0, 2.0, 4.0]), weights=np.array([1.0, 1.0, 2.0]))
        np.float64(2.75)
    """
    keepdims = bool(keepdims)
    a = listed_operand(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        shape, avg_shape = shape_of(a), shape_of(avg)
        scale = dtype_of(avg).type(math.prod(shape) / builtins.max(math.prod(avg_shape), 1))
        return avg, np.full(avg_shape, scale) if avg_shape else scale
    weights = listed_operand(weights)
    shape, w_shape = shape_of(a), shape_of(weights)
    axes = normalize_axes(axis, len(shape))
    extra = (np.float64,) if not is_inexact(dtype_of(a)) else ()
    result_dtype = np.result_type(dtype_of(a), dtype_of(weights), *extra)
    if w_shape != shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if len(w_shape) != 1:
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        if len(axes) != 1 or w_shape[0] != shape[axes[0]]:
            raise ValueError("Length of weights not compatible with specified axis.")
        others = tuple(i for i in range(len(shape)) if i != axes[0])
        weights = expand_reduced(weights, others, False, shape)
    weights = astype(weights, result_dtype)
    scale = reduce_sum(weights, axes, keepdims) if axes else weights
    zero = bind(equal_p, scale, 0.0)
    if isinstance(zero, (np.ndarray, np.generic)) and zero.any():  # checked when concrete
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = reduce_sum(astype(a, result_dtype) * weights, axes, keepdims) / scale
    if not returned:
        return avg
    return avg, broadcast_to(scale, shape_of(avg))


def _arg_fn(p, name: str):
    def f(a, axis=None, out=None, *, keepdims=False):
        _reject(name, out=out)
        a = listed_operand(a)
        if axis is not None:
            axis = normalize_axis_index(axis, len(shape_of(a)))
        return bind(p, a, axis=axis, keepdims=bool(keepdims))

    f.__name__ = f.__qualname__ = name
    index = [1, 0] if name == "argmax" else [0, 1]
    f.__doc__ = f"""`numpy.{name}`: integer indices, a constant.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> anp.{name}(np.array([[1.0, 4.0], [3.0, 2.0]]), axis=1).tolist()
        {index}
    """
    return f


argmax = _arg_fn(argmax_p, "argmax")
argmin = _arg_fn(argmin_p, "argmin")


def _truth_fn(p, name: str, masked_as_neutral):
    """numpy.all or numpy.any: `masked_as_neutral(a, where)` is `a` with the elements outside
    `where` set to what leaves the result unchanged (True for all, False for any)."""

    def f(a, axis=None, out=None, keepdims=False, *, where=True):
        _reject(name, out=out)
        a = listed_operand(a)
        if where is not True:
            a = masked_as_neutral(a, where)
        return _reduce(p, a, axis, keepdims)

    f.__name__ = f.__qualname__ = name
    result = [False, True] if name == "all" else [True, True]
    f.__doc__ = f"""`numpy.{name}`: a boolean constant.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> anp.{name}(np.array([[1.0, 0.0], [2.0, 3.0]]), axis=1).tolist()
        {result}
    """
    return f


all = _truth_fn(all_p, "all", lambda a, where: bind(logical_or_p, a, bind(logical_not_p, where)))
any = _truth_fn(any_p, "any", lambda a, where: bind(logical_and_p, a, where))


def count_nonzero(a, axis=None, *, keepdims=False):
    """`numpy.count_nonzero`: an integer constant.

    Example:
        >>> import numpy as np
        >>> int(count_nonzero(np.array([0.0, 1.5, 0.0, -2.0])))
        2
    """
    return _reduce(count_nonzero_p, listed_operand(a), axis, keepdims)


FUNCTIONS = {
    "sum": sum,
    "prod": prod,
    "max": max,
    "min": min,
    "amax": amax,
    "amin": amin,
    "ptp": ptp,
    "mean": mean,
    "var": var,
    "std": std,
    "average": average,
    "argmax": argmax,
    "argmin": argmin,
    "all": all,
    "any": any,
    "count_nonzero": count_nonzero,
}
