"""`autodiff.lax`'s windowed operations: `conv_general_dilated`, `reduce_window`, `reduce`.

Composites: a convolution is one contraction of strided slices of the padded (and dilated)
input, one per kernel position, with the kernel; a window reduction folds the reducing
function over the same slices.
"""

from __future__ import annotations

import builtins
import itertools
from typing import NamedTuple

import numpy as onp

import autodiff.numpy as anp
from autodiff.lax._basic import add, max, min, mul, pad

# Reductions a `reduce` over these functions (lax's or NumPy's) runs as one call.
_MONOIDS = {
    add: anp.sum,
    anp.add: anp.sum,
    mul: anp.prod,
    anp.multiply: anp.prod,
    max: anp.max,
    anp.maximum: anp.max,
    min: anp.min,
    anp.minimum: anp.min,
}


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution's operands lie: each
    spec lists (batch or out-feature, feature or in-feature, spatial...) dimension indices."""

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """The `(low, high)` pads of 'SAME', 'SAME_LOWER' or 'VALID' padding, per dimension.

    Example:
        >>> padtype_to_pads((5,), (3,), (1,), "SAME")
        [(1, 1)]
    """
    name = getattr(padding, "name", padding)
    if not isinstance(name, str) or name.upper() not in ("SAME", "SAME_LOWER", "VALID"):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or pairs, got {padding!r}")
    name = name.upper()
    if name == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = builtins.max(0, (-(-n // s) - 1) * s + k - n)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if name == "SAME" else (large, small))
    return pads


def _spec(spec: str, pair: tuple, rhs_spec: str) -> tuple:
    spatial = [i for i, c in enumerate(spec) if c not in pair]
    if spec is not rhs_spec:
        spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1]), *spatial)


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """`dimension_numbers` (None, three layout strings such as `('NHWC', 'HWIO', 'NHWC')`, or
    a ConvDimensionNumbers) as a ConvDimensionNumbers.

    Example:
        >>> conv_dimension_numbers((1, 5, 5, 2), (3, 3, 2, 4), ("NHWC", "HWIO", "NHWC"))
        ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not (
        isinstance(dimension_numbers, (tuple, list))
        and len(dimension_numbers) == 3
        and all(isinstance(s, str) and len(s) == len(lhs_shape) for s in dimension_numbers)
    ):
        raise TypeError(
            "conv_general_dilated: dimension_numbers must be None, a ConvDimensionNumbers or "
            f"three layout strings of the operands' rank, got {dimension_numbers!r}"
        )
    lhs, rhs, out = dimension_numbers
    return ConvDimensionNumbers(
        _spec(lhs, ("N", "C"), rhs), _spec(rhs, ("O", "I"), rhs), _spec(out, ("N", "C"), rhs)
    )


def _window_slices(x, lead: int, offsets, out_shape, strides):
    """`x[..., o : o + (n - 1) * s + 1 : s]` over the trailing dimensions, for each offset."""
    for offset in offsets:
        index = (builtins.slice(None),) * lead + tuple(
            builtins.slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(offset, out_shape, strides)
        )
        yield x[index]


def _out_shape(in_shape, window, strides, what: str) -> tuple:
    shape = tuple((n - k) // s + 1 if n >= k else 0 for n, k, s in zip(in_shape, window, strides))
    if any(n <= 0 for n in shape):
        raise ValueError(f"{what}: the window does not fit the padded input (output shape {shape})")
    return shape


def _pads(padding, in_shape, window, strides) -> list:
    if isinstance(padding, str) or hasattr(padding, "name"):
        return padtype_to_pads(in_shape, window, strides, padding)
    pads = [tuple(int(v) for v in p) for p in padding]
    if len(pads) != len(in_shape) or any(len(p) != 2 for p in pads):
        raise ValueError(
            f"padding must give (low, high) for each of {len(in_shape)} dimensions, got {padding!r}"
        )
    return pads


def _dilated(shape, dilation) -> tuple:
    return tuple(0 if n == 0 else (n - 1) * d + 1 for n, d in zip(shape, dilation))


def conv_general_dilated(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """The general N-d convolution (a cross-correlation, as in lax): strides, padding
    ('SAME', 'SAME_LOWER', 'VALID' or `(low, high)` pairs), input (`lhs_dilation`) and kernel
    (`rhs_dilation`) dilation, layouts, and feature groups.

    Example:
        >>> x, w = anp.ones((1, 1, 4)), anp.ones((1, 1, 2))
        >>> conv_general_dilated(x, w, (1,), "VALID").tolist()
        [[[2.0, 2.0, 2.0]]]
    """
    if batch_group_count != 1:
        raise NotImplementedError("conv_general_dilated: batch_group_count > 1 is not supported")
    lhs, rhs = anp.asarray(lhs), anp.asarray(rhs)
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    x, w = anp.transpose(lhs, dn.lhs_spec), anp.transpose(rhs, dn.rhs_spec)
    nd = x.ndim - 2
    strides = tuple(window_strides)
    lhs_dilation = (1,) * nd if lhs_dilation is None else tuple(lhs_dilation)
    rhs_dilation = (1,) * nd if rhs_dilation is None else tuple(rhs_dilation)
    groups = feature_group_count
    (n, c), (o, i) = x.shape[:2], w.shape[:2]
    if c != i * groups or o % groups:
        raise ValueError(
            f"conv_general_dilated: {c} input features, kernel of {i} in and {o} out features "
            f"and feature_group_count={groups} do not match"
        )
    window = _dilated(w.shape[2:], rhs_dilation)
    pads = _pads(padding, x.shape[2:], window, strides)
    zero = anp.zeros((), x.dtype)
    x = pad(x, zero, [(0, 0, 0)] * 2 + [(lo, hi, d - 1) for (lo, hi), d in zip(pads, lhs_dilation)])
    out_shape = _out_shape(x.shape[2:], window, strides, "conv_general_dilated")
    offsets = [
        tuple(p * d for p, d in zip(position, rhs_dilation))
        for position in itertools.product(*map(range, w.shape[2:]))
    ]
    patches = anp.stack(list(_window_slices(x, 2, offsets, out_shape, strides)))
    patches = anp.reshape(patches, (len(offsets), n, groups, i, -1))
    kernel = anp.reshape(w, (groups, o // groups, i, len(offsets)))
    out = anp.einsum("pngil,goip->ngol", patches, kernel)
    out = anp.transpose(anp.reshape(out, (n, o, *out_shape)), tuple(onp.argsort(dn.out_spec)))
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """`conv_general_dilated` with the NCHW/OIHW layouts and no dilation.

    Example:
        >>> conv(anp.ones((1, 1, 3, 3)), anp.ones((1, 1, 2, 2)), (1, 1), "VALID").shape
        (1, 1, 2, 2)
    """
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, preferred_element_type=preferred_element_type
    )


def reduce_window(
    operand,
    init_value,
    computation,
    window_dimensions,
    window_strides=None,
    padding="VALID",
    base_dilation=None,
    window_dilation=None,
):
    """`computation` (a binary function such as `lax.add` or `lax.max`) folded over each
    window of `operand`, starting from `init_value`; padding and the holes of `base_dilation`
    take no part.

    Example:
        >>> reduce_window(anp.arange(5.0), 0.0, anp.add, (2,), (1,)).tolist()
        [1.0, 3.0, 5.0, 7.0]
    """
    x = anp.asarray(operand)
    nd = x.ndim
    window = tuple(window_dimensions)
    strides = (1,) * nd if window_strides is None else tuple(window_strides)
    base = (1,) * nd if base_dilation is None else tuple(base_dilation)
    dilation = (1,) * nd if window_dilation is None else tuple(window_dilation)
    if not len(window) == len(strides) == len(base) == len(dilation) == nd:
        raise ValueError(f"reduce_window: window arguments must each have {nd} entries")
    extent = _dilated(window, dilation)
    pads = _pads(padding, x.shape, extent, strides)
    init = anp.asarray(init_value, dtype=x.dtype)
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(pads, base)]
    # Padding and dilation holes take no part in the reduction (as in XLA): masked out.
    real = pad(onp.ones(x.shape, bool), False, config)
    x = pad(x, anp.zeros((), x.dtype), config)
    out_shape = _out_shape(x.shape, extent, strides, "reduce_window")
    offsets = [
        tuple(p * d for p, d in zip(position, dilation))
        for position in itertools.product(*map(range, window))
    ]
    acc = anp.broadcast_to(init, out_shape)
    parts = _window_slices(x, 0, offsets, out_shape, strides)
    for part, mask in zip(parts, _window_slices(real, 0, offsets, out_shape, strides)):
        step = computation(acc, part)
        acc = step if mask.all() else anp.where(mask, step, acc)
    return acc


def reduce(operands, init_values, computation, dimensions):
    """`computation` folded over `dimensions` of `operands`, starting from `init_values`
    (single arrays, or matching sequences with a `computation` on tuples).

    Example:
        >>> reduce(anp.arange(6.0).reshape(2, 3), 0.0, anp.add, (1,)).tolist()
        [3.0, 12.0]
    """
    single = not isinstance(operands, (tuple, list))
    if single and computation in _MONOIDS:
        reduced = _MONOIDS[computation](operands, axis=tuple(dimensions))
        return computation(reduced, anp.asarray(init_values, dtype=anp.result_type(operands)))
    ops = [anp.asarray(operands)] if single else [anp.asarray(op) for op in operands]
    inits = [init_values] if single else list(init_values)
    step = (lambda a, b: (computation(a[0], b[0]),)) if single else computation
    dims = sorted({d % ops[0].ndim for d in dimensions})
    kept = [d for d in range(ops[0].ndim) if d not in dims]
    ops = [
        anp.reshape(anp.transpose(op, dims + kept), (-1,) + tuple(op.shape[d] for d in kept))
        for op in ops
    ]
    acc = tuple(
        anp.broadcast_to(anp.asarray(v, dtype=op.dtype), op.shape[1:]) for v, op in zip(inits, ops)
    )
    for k in range(ops[0].shape[0]):
        acc = tuple(step(acc, tuple(op[k] for op in ops)))
    return acc[0] if single else acc
