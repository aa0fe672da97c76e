"""Rearranging arrays: pad and roll; insert, delete, resize, block; select, choose,
piecewise, compress, extract, trim_zeros; apply_along_axis and apply_over_axes.

Where NumPy computes a result from positions alone, NumPy lays out the element ids and the
result gathers the values from them (one differentiable take). Where the values decide the
result's shape (compress, extract, trim_zeros, piecewise's conditions), they must be
concrete (not under vmap or jit).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.abstract import shape_with_length
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.tensor import Tensor
from autodiff.numpy._arguments import at_axis, concrete_values, no_out
from autodiff.ops import elementwise as ew
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype, where
from autodiff.ops.index import getitem, index_set
from autodiff.ops.sorting import take_along
from autodiff.ops.structural import broadcast_to, ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value


# ---------------------------------------------------------------------------------------------
# Padding and rolling.

_PAD_KWARGS = {
    "empty": (),
    "edge": (),
    "wrap": (),
    "constant": ("constant_values",),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "minimum": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def _as_pairs(x, ndim: int, as_index: bool = False) -> list:
    """NumPy's reading of a pad argument: one (before, after) pair per axis."""
    if x is None:
        return [(None, None)] * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return [(x[0].item(), x[0].item())] * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return [(x[0].item(), x[1].item())] * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return [tuple(p) for p in np.broadcast_to(x, (ndim, 2)).tolist()]


def _pad_widths(pad_width, ndim: int) -> list:
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            seq[axis] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = seq
    pad_width = np.asarray(pad_width)
    if pad_width.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    return _as_pairs(pad_width, ndim, as_index=True)


def _axis_block(x, axis: int, length: int) -> tuple:
    return shape_with_length(shape_of(x), axis, length)


def _pad_with(x, axis: int, before, after):
    """`x` with the arrays `before` and `after` (of the right shapes) around it on `axis`."""
    return shp.concatenate([before, x, after], axis)


def _pad_reflect_odd(x, axis: int, before: int, after: int, include_edge: bool):
    """NumPy's iterative odd reflection: each chunk is 2 * edge - (the reflected values)."""
    n = shape_of(x)[axis]
    offset = 1 if include_edge else 0
    while before > 0 or after > 0:
        cur = shape_of(x)[axis]
        period = cur // n * n if include_edge else (cur - 1) // (n - 1) * (n - 1)
        left = right = None
        if before > 0:
            c = min(period, before)
            start = 1 - offset
            chunk = shp.flip(getitem(x, at_axis(axis, slice(start, start + c))), axis)
            left = 2 * getitem(x, at_axis(axis, slice(0, 1))) - chunk
            before -= c
        if after > 0:
            c = min(period, after)
            stop = cur - 1 + offset
            chunk = shp.flip(getitem(x, at_axis(axis, slice(stop - c, stop))), axis)
            right = 2 * getitem(x, at_axis(axis, slice(cur - 1, cur))) - chunk
            after -= c
        x = shp.concatenate([p for p in (left, x, right) if p is not None], axis)
    return x


def _pad_stat(x, axis: int, before: int, after: int, lengths, mode: str):
    n = shape_of(x)[axis]
    left_len, right_len = (n if s is None or n < s else s for s in lengths)
    if (left_len == 0 or right_len == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")
    func = {"maximum": red.amax, "minimum": red.amin, "mean": red.mean}[mode]
    dt = dtype_of(x)

    def stat(lo, hi):
        s = func(getitem(x, at_axis(axis, slice(lo, hi))), axis=axis, keepdims=True)
        if mode == "mean" and not is_inexact(dt):  # NumPy rounds into integer arrays
            s = astype(ew.round(s), dt)
        return s

    left = stat(0, left_len)
    right = left if left_len == right_len == n else stat(n - right_len, n)
    return _pad_with(
        x,
        axis,
        broadcast_to(left, _axis_block(x, axis, before)),
        broadcast_to(right, _axis_block(x, axis, after)),
    )


def _check_pad_mode(mode, kwargs: dict) -> None:
    """NumPy's errors for a mode or keyword it does not know; ours for the modes not supported."""
    if callable(mode):
        raise NotImplementedError("autodiff.numpy.pad does not support a function as mode")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode in ("linear_ramp", "median"):
        raise NotImplementedError(f"autodiff.numpy.pad does not support mode '{mode}'")


def _pad_constant(x, widths: list, constant_values):
    """`x` padded with constants, axis by axis."""
    dt = dtype_of(x)
    values = _as_pairs(constant_values, len(widths))
    for axis, (before, after), (v_before, v_after) in zip(range(len(widths)), widths, values):
        if before or after:
            x = _pad_with(
                x,
                axis,
                np.full(_axis_block(x, axis, before), v_before, dt),
                np.full(_axis_block(x, axis, after), v_after, dt),
            )
    return x


def _pad_empty(shape: tuple, widths: list, dtype):
    """A non-constant padding of an empty array: zeros, where no empty axis is extended (only
    constant padding can extend one)."""
    for axis, pair in enumerate(widths):
        if shape[axis] == 0 and any(pair):
            raise ValueError(
                f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
            )
    return np.zeros(tuple(n + b + a for n, (b, a) in zip(shape, widths)), dtype)


def _pad_selection(x, widths: list, mode, reflect_type: str):
    """The modes that repeat elements of `x` ("edge", "wrap", "reflect", "symmetric"): one
    gather per axis, of the positions NumPy's own padding of the positions selects; odd
    reflections are computed from the edge."""
    odd = mode in ("reflect", "symmetric") and reflect_type == "odd"
    shape = shape_of(x)
    for axis, (before, after) in enumerate(widths):
        n = shape[axis]
        if not (before or after):
            continue
        if odd and n > 1:
            x = _pad_reflect_odd(x, axis, before, after, mode == "symmetric")
        else:
            x = getitem(x, at_axis(axis, np.pad(np.arange(n), (before, after), mode=mode)))
    return x


def pad(array, pad_width, mode="constant", **kwargs):
    """`numpy.pad`, differentiable in `array`.

    Modes "constant", "edge", "wrap", "reflect" and "symmetric" (both `reflect_type`s),
    "maximum", "minimum" and "mean" (with `stat_length`), and "empty" (zeros); not
    "linear_ramp", "median" or a function. `constant_values` are constants.
    Selection modes are one gather per axis, so the gradient of a repeated element is the
    sum over its copies.

    Example:
        >>> import numpy as np
        >>> pad(np.array([1.0, 2.0, 3.0]), (2, 1), mode="reflect")
        array([3., 2., 1., 2., 3., 2.])
    """
    array = _operand(array)
    if not isinstance(array, Tensor):
        array = np.array(array)  # NumPy's result is always a fresh array
    shape = shape_of(array)
    widths = _pad_widths(pad_width, len(shape))
    _check_pad_mode(mode, kwargs)
    if mode in ("constant", "empty"):  # NumPy leaves "empty" padding undefined: zeros here
        return _pad_constant(array, widths, kwargs.get("constant_values", 0))
    if math.prod(shape) == 0:
        return _pad_empty(shape, widths, dtype_of(array))
    if mode in ("maximum", "minimum", "mean"):
        lengths = _as_pairs(kwargs.get("stat_length"), len(shape), as_index=True)
        for axis, (before, after) in enumerate(widths):
            array = _pad_stat(array, axis, before, after, lengths[axis], mode)
        return array
    return _pad_selection(array, widths, mode, kwargs.get("reflect_type", "even"))


def roll(a, shift, axis=None):
    """`numpy.roll`, differentiable.

    Example:
        >>> import numpy as np
        >>> roll(np.arange(5.0), 2)
        array([3., 4., 0., 1., 2.])
    """
    a = _operand(a)
    if axis is None:
        return shp.reshape(roll(shp.ravel(a), shift, 0), shape_of(a))
    shape = shape_of(a)
    axes = normalize_axis_tuple(axis, len(shape), allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(len(shape)), 0)
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    out = a
    for ax, offset in shifts.items():
        n = shape[ax]
        offset %= n or 1
        if offset:
            head, tail = shp.array_split(out, [n - offset], axis=ax)
            out = shp.concatenate([tail, head], ax)
    return shp.copy(out) if out is a else out


# ---------------------------------------------------------------------------------------------
# Rearrangements NumPy computes from positions alone: NumPy lays out the element ids and
# the result gathers the values from them (one differentiable take).


def _ids(shape: tuple, start: int = 0) -> np.ndarray:
    return np.arange(start, start + math.prod(shape), dtype=np.intp).reshape(shape)


def _gathered(sources: list, layout: np.ndarray):
    """The elements of `sources` (flattened and joined) at the ids of `layout`."""
    flat = [shp.ravel(s) for s in sources]
    joined = flat[0] if len(flat) == 1 else shp.concatenate(flat)
    return getitem(joined, layout)


def insert(arr, obj, values, axis=None):
    """`numpy.insert`: `values` inserted before the positions `obj`, differentiable in `arr`
    and `values` (cast to `arr`'s dtype, as NumPy).

    Example:
        >>> import numpy as np
        >>> insert(np.array([1.0, 2.0, 3.0]), 1, 9.0)
        array([1., 9., 2., 3.])
    """
    arr, values = _operand(arr), astype(_operand(values), dtype_of(_operand(arr)))
    shape, vshape = shape_of(arr), shape_of(values)
    size = math.prod(shape)
    vids = _ids(vshape, size)
    layout = np.insert(_ids(shape), obj, vids, axis)
    return _gathered([arr, values], layout)


def delete(arr, obj, axis=None):
    """`numpy.delete`: `arr` without the entries `obj` (along `axis`), differentiable.

    Example:
        >>> import numpy as np
        >>> delete(np.array([1.0, 2.0, 3.0]), [0, 2])
        array([2.])
    """
    arr = _operand(arr)
    return _gathered([arr], np.delete(_ids(shape_of(arr)), obj, axis))


def resize(a, new_shape):
    """`numpy.resize`: `a` repeated (flattened, in order) to fill `new_shape`, differentiable.

    Example:
        >>> import numpy as np
        >>> resize(np.array([1.0, 2.0, 3.0]), (2, 2))
        array([[1., 2.],
               [3., 1.]])
    """
    a = _operand(a)
    layout = np.resize(_ids(shape_of(a)), new_shape)
    if layout.size == 0:
        return np.zeros(layout.shape, dtype_of(a))
    return _gathered([a], layout)


def _block_leaves(arrays, leaves: list):
    """numpy.block's nested lists with each array replaced by its ids (`leaves` collects them)."""
    if isinstance(arrays, list):
        return [_block_leaves(a, leaves) for a in arrays]
    if isinstance(arrays, tuple):
        raise TypeError(
            f"{arrays!r} is a tuple. Only lists can be used to arrange blocks, and np.block does "
            "not allow implicit conversion from tuple to ndarray."
        )
    leaf = _operand(arrays)
    start = sum(math.prod(shape_of(x)) for x in leaves)
    leaves.append(leaf)
    return _ids(shape_of(leaf), start)


def block(arrays):
    """`numpy.block`: an array assembled from nested lists of blocks, differentiable.

    Example:
        >>> import numpy as np
        >>> block([[np.eye(2), np.zeros((2, 1))], [np.ones((1, 2)), 5.0 * np.ones((1, 1))]])
        array([[1., 0., 0.],
               [0., 1., 0.],
               [1., 1., 5.]])
    """
    leaves: list = []
    ids = _block_leaves(arrays, leaves)
    dtype = np.result_type(*(dtype_of(x) for x in leaves)) if leaves else np.float64
    layout = np.block(ids)
    return _gathered([astype(x, dtype) for x in leaves], layout)


# ---------------------------------------------------------------------------------------------
# Selections: by conditions, by an index array, by concrete values.


def select(condlist, choicelist, default=0):
    """`numpy.select`: from each position, the choice of the first true condition (else
    `default`), differentiable in the choices and `default`.

    Example:
        >>> import numpy as np
        >>> x = np.arange(4.0)
        >>> select([x < 1, x > 2], [x, x**2], -1.0)
        array([ 0., -1., -1.,  9.])
    """
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(choicelist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [_operand(c) for c in choicelist]
    default = default if isinstance(default, (int, float, complex)) else _operand(default)
    dtype = np.result_type(*(dtype_of(c) for c in choices), default)
    conds = [_operand(c) for c in condlist]
    for i, c in enumerate(conds):
        if dtype_of(c) != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = (
        astype(default, dtype)
        if not isinstance(default, (int, float, complex))
        else (np.asarray(default, dtype))
    )
    for cond, choice in zip(reversed(conds), reversed(choices)):
        result = where(cond, astype(choice, dtype), result)
    shape = np.broadcast_shapes(*(shape_of(x) for x in [*conds, *choices, result]))
    return broadcast_to(result, shape) if shape_of(result) != shape else result


def choose(a, choices, out=None, mode="raise"):
    """`numpy.choose`: from each position, the element of the choice `a` names there,
    differentiable in the choices (`a` is an integer constant).

    Example:
        >>> import numpy as np
        >>> choose(np.array([0, 1, 0]), [np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])])
        array([ 1., 20.,  3.])
    """
    no_out("choose", out)
    a = _operand(a)
    choices = [
        _operand(c)
        for c in (
            choices if isinstance(choices, (list, tuple)) else list(shp.unstack(_operand(choices)))
        )
    ]
    n = len(choices)
    if mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = ew.clip(a, 0, n - 1)
    else:
        known = a if not isinstance(a, Tensor) else None
        if known is not None and known.size and (known.min() < 0 or known.max() >= n):
            raise ValueError("invalid entry in choice array")
    shape = np.broadcast_shapes(shape_of(a), *(shape_of(c) for c in choices))
    dtype = np.result_type(*(dtype_of(c) for c in choices))
    stacked = shp.stack([broadcast_to(astype(c, dtype), shape) for c in choices])
    idx = shp.expand_dims(broadcast_to(astype(a, np.intp), shape), 0)
    return shp.squeeze(take_along(stacked, idx, 0), 0)


def piecewise(x, condlist, funclist, *args, **kw):
    """`numpy.piecewise`: each function applied where its condition holds (the last one,
    given one function more than conditions, where none does); differentiable in `x` and
    in what the functions compute. The functions see only their elements, as in NumPy.

    Example:
        >>> import numpy as np
        >>> piecewise(np.array([-2.0, 3.0]), [np.array([True, False])], [lambda v: -v, 1.0])
        array([2., 1.])
    """
    x = _operand(x)
    n2 = len(funclist)
    if (
        isinstance(condlist, (bool, np.bool_))
        or not isinstance(condlist, (list, tuple))
        and (ndim_of(condlist) == 0)
    ):
        condlist = [condlist]
    conds = [np.asarray(concrete_values(c, "piecewise"), bool) for c in condlist]
    n = len(conds)
    if n == n2 - 1:
        conds.append(~np.any(conds, axis=0))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = np.zeros(shape_of(x), dtype_of(x))
    for cond, func in zip(conds, funclist):
        cond = np.broadcast_to(cond, shape_of(x))
        if not callable(func):
            y = index_set(y, cond, func)
        elif cond.any():
            y = index_set(y, cond, func(getitem(x, cond), *args, **kw))
    return y


def compress(condition, a, axis=None, out=None):
    """`numpy.compress`: the slices of `a` along `axis` where `condition` holds (whose values
    decide the shape), differentiable in `a`.

    Example:
        >>> import numpy as np
        >>> compress([False, True, True], np.array([1.0, 2.0, 3.0]))
        array([2., 3.])
    """
    no_out("compress", out)
    a = _operand(a)
    keep = np.flatnonzero(concrete_values(condition, "compress"))
    if axis is None:
        return getitem(shp.ravel(a), keep)
    axis = normalize_axis_index(axis, ndim_of(a))
    return getitem(a, at_axis(axis, keep))


def extract(condition, arr):
    """`numpy.extract`: the elements of the flattened `arr` where the flattened `condition`
    holds, differentiable in `arr`.

    Example:
        >>> import numpy as np
        >>> x = np.arange(4.0)
        >>> extract(np.array([True, False, True, False]), x)
        array([0., 2.])
    """
    keep = np.flatnonzero(concrete_values(condition, "extract"))
    return getitem(shp.ravel(_operand(arr)), keep)


def trim_zeros(filt, trim="fb", axis=None):
    """`numpy.trim_zeros`: `filt` without its leading and/or trailing zeros along `axis`
    (all axes if None; which its values decide), differentiable.

    Example:
        >>> import numpy as np
        >>> trim_zeros(np.array([0.0, 1.0, 2.0, 0.0]))
        array([1., 2.])
    """
    filt = _operand(filt)
    if not isinstance(filt, Tensor):
        return np.trim_zeros(filt, trim, axis)
    values = concrete_values(filt, "trim_zeros")
    nd = values.ndim
    trimmed = np.trim_zeros(values, trim, axis)  # (NumPy's checks, and the result's shape)
    axes = range(nd) if axis is None else normalize_axis_tuple(axis, nd)
    index = [slice(None)] * nd
    for d in axes:
        others = tuple(j for j in range(nd) if j != d)
        hit = np.flatnonzero(np.any(values != 0, axis=others) if others else values != 0)
        start = int(hit[0]) if hit.size and "f" in trim.lower() else 0
        index[d] = slice(start, start + trimmed.shape[d])
    return getitem(filt, tuple(index))


# ---------------------------------------------------------------------------------------------
# Functions applied along axes.


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`numpy.apply_along_axis`: `func1d` of each 1-d slice along `axis`, its results
    stacked where that axis was (differentiable through `func1d`; one call per slice).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> apply_along_axis(lambda v: anp.sum(v ** 2), 1, np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([ 5., 25.])
    """
    arr = _operand(arr)
    nd = ndim_of(arr)
    axis = normalize_axis_index(axis, nd)
    moved = shp.moveaxis(arr, axis, -1)
    outer = shape_of(moved)[:-1]
    if math.prod(outer) == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    rows = shp.reshape(moved, (-1, shape_of(moved)[-1]))
    results = [
        _operand(func1d(getitem(rows, i), *args, **kwargs)) for i in range(shape_of(rows)[0])
    ]
    out = shp.stack(results)
    res_shape = shape_of(out)[1:]
    out = shp.reshape(out, outer + res_shape)
    # the function's axes go where `axis` was
    n_res = len(res_shape)
    order = (
        list(range(axis))
        + list(range(len(outer), len(outer) + n_res))
        + list(range(axis, len(outer)))
    )
    return shp.transpose(out, order) if order != list(range(len(order))) else out


def apply_over_axes(func, a, axes):
    """`numpy.apply_over_axes`: `func(a, axis)` for each axis in turn, keeping the reduced
    axes (differentiable through `func`).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> apply_over_axes(anp.sum, np.arange(6.0).reshape(2, 3), [0, 1])
        array([[15.]])
    """
    val = _operand(a)
    n = ndim_of(val)
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if ndim_of(res) == ndim_of(val):
            val = res
        else:
            res = shp.expand_dims(res, axis)
            if ndim_of(res) == ndim_of(val):
                val = res
            else:
                raise ValueError("function is not returning an array of the correct shape")
    return val


FUNCTIONS = {
    f.__name__: f
    for f in (
        pad,
        roll,
        insert,
        delete,
        resize,
        block,
        select,
        choose,
        piecewise,
        compress,
        extract,
        trim_zeros,
        apply_along_axis,
        apply_over_axes,
    )
}
