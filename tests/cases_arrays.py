"""Op table: array functions (cumulative ops, sort, pad, roll, diagonals, kron, cross, diff,
interp, NaN-aware sums, convolution, meshgrid, vander, polyval).

Each case is written once as `f(m, *arrays)` and run with the autodiff functions and with
numpy for the reference. Outputs are squared: most of these functions are linear, and
without it the second-order checks would only see zeros. Index-like arguments (shifts,
widths, axes) live in the closures.
"""

import warnings

import numpy as np
from optable import OpCase, _square, arr, dispatched_case, distinct, pos, squared_case

from autodiff.ops.cumulative import linear_recurrence

case = squared_case


dispatched = dispatched_case


def quiet(f):
    """`f` with NumPy's deprecation of 2-vectors in cross silenced (both sides warn)."""

    def g(m, *xs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return f(m, *xs)

    return g


def _linear_recurrence_ref(a, b, axis, reverse):
    a, b = np.moveaxis(a, axis, 0), np.moveaxis(b, axis, 0)
    out, h = np.empty_like(b), np.zeros_like(b[0])
    for k in range(len(b) - 1, -1, -1) if reverse else range(len(b)):
        h = a[k] * h + b[k]
        out[k] = h
    return np.moveaxis(out, 0, axis)


def recurrence(name, axis, reverse, shape):
    return OpCase(
        name,
        lambda a, b: _square(linear_recurrence(a, b, axis, reverse)),
        (arr(*shape, low=-1.2, high=1.2), arr(*shape)),
        ref=lambda a, b: _square(_linear_recurrence_ref(a, b, axis, reverse)),
    )


def _with(values, at, fill):
    out = values.copy()
    out[at] = fill
    return out


ZEROS_1D = np.array([1.5, 0.0, -2.0, 0.7, 0.0, 1.2])
ZEROS_2D = _with(arr(3, 4), (np.array([0, 1, 1]), np.array([1, 0, 3])), 0.0)
NANS = _with(arr(3, 4), (np.array([0, 2, 2]), np.array([1, 0, 3])), np.nan)
INFS = _with(arr(2, 4), (np.array([0, 0, 1]), np.array([0, 2, 3])), [np.nan, np.inf, -np.inf])
XP = np.array([-1.5, -0.4, 0.3, 1.1, 2.0])
X_INTERP = np.array([[-2.0, -1.0, 0.0], [0.5, 1.5, 2.5]])  # away from the knots
SORTED = np.array([-1.0, -0.2, 0.5, 1.3])

CASES = [
    # cumulative sums and products
    case("cumsum", lambda m, x: m.cumsum(x), arr(5)),
    case("cumsum_flat", lambda m, x: m.cumsum(x), arr(2, 3)),
    case("cumsum_axis0", lambda m, x: m.cumsum(x, axis=0), arr(3, 4)),
    case("cumsum_axis-1", lambda m, x: m.cumsum(x, axis=-1), arr(3, 4)),
    case("cumsum_3d", lambda m, x: m.cumsum(x, 1), arr(2, 3, 4)),
    case("cumsum_dtype", lambda m, x: m.cumsum(x, 0, dtype=np.float64), arr(3, 2)),
    case("cumprod", lambda m, x: m.cumprod(x), arr(5)),
    case("cumprod_zeros", lambda m, x: m.cumprod(x), ZEROS_1D),
    case("cumprod_axis0_zeros", lambda m, x: m.cumprod(x, axis=0), ZEROS_2D),
    case("cumprod_axis1_zeros", lambda m, x: m.cumprod(x, axis=1), ZEROS_2D),
    case("cumprod_3d", lambda m, x: m.cumprod(x, axis=-2), arr(2, 3, 2)),
    case("cumprod_flat", lambda m, x: m.cumprod(x), arr(2, 2)),
    case("nancumsum", lambda m, x: m.nancumsum(x, axis=1), NANS),
    case("nancumprod", lambda m, x: m.nancumprod(x, axis=0), NANS),
    recurrence("linear_recurrence", 0, False, (5,)),
    recurrence("linear_recurrence_reverse", 0, True, (5,)),
    recurrence("linear_recurrence_axis1", 1, False, (2, 4)),
    recurrence("linear_recurrence_axis0_reverse", 0, True, (3, 2)),
    # sorting and searching
    case("sort", lambda m, x: m.sort(x), distinct(6)),
    case("sort_axis0", lambda m, x: m.sort(x, axis=0), distinct(3, 4)),
    case("sort_axis-1", lambda m, x: m.sort(x, axis=-1), distinct(3, 4)),
    case("sort_flat", lambda m, x: m.sort(x, axis=None), distinct(2, 3)),
    case("sort_3d", lambda m, x: m.sort(x, axis=1, kind="stable"), distinct(2, 3, 2)),
    case("sort_heapsort", lambda m, x: m.sort(x, kind="heapsort"), distinct(5)),
    case("sort_weighted", lambda m, x: m.sort(x) * np.arange(1.0, 6.0), distinct(5)),
    case("argsort_constant", lambda m, x: x * m.argsort(x), distinct(4, 3)),
    case("searchsorted_constant", lambda m, x: x * m.searchsorted(SORTED, x), arr(2, 3)),
    case(
        "searchsorted_traced",
        lambda m, a, v: v * m.searchsorted(m.sort(a), v, side="right"),
        distinct(5),
        arr(4),
    ),
    case(
        "searchsorted_sorter",
        lambda m, a, v: v * m.searchsorted(a, v, sorter=m.argsort(a)),
        distinct(5),
        arr(3),
    ),
    # padding
    case("pad_constant", lambda m, x: m.pad(x, 2), arr(3)),
    case(
        "pad_constant_pairs",
        lambda m, x: m.pad(x, ((1, 0), (2, 3)), constant_values=1.5),
        arr(2, 3),
    ),
    case(
        "pad_constant_values",
        lambda m, x: m.pad(x, (1, 2), constant_values=((1, 2), (3, 4))),
        arr(2, 2),
    ),
    case("pad_edge", lambda m, x: m.pad(x, ((2, 1), (0, 3)), mode="edge"), arr(2, 3)),
    case("pad_wrap", lambda m, x: m.pad(x, (2, 3), mode="wrap"), arr(4)),
    case("pad_wrap_wide", lambda m, x: m.pad(x, ((5, 7), (1, 0)), mode="wrap"), arr(2, 3)),
    case("pad_reflect", lambda m, x: m.pad(x, (2, 1), mode="reflect"), arr(4)),
    case("pad_reflect_wide", lambda m, x: m.pad(x, (7, 9), mode="reflect"), arr(3)),
    case("pad_reflect_2d", lambda m, x: m.pad(x, ((1, 2), (2, 1)), mode="reflect"), arr(3, 3)),
    case(
        "pad_reflect_singleton", lambda m, x: m.pad(x, ((2, 1), (1, 1)), mode="reflect"), arr(1, 3)
    ),
    case(
        "pad_reflect_odd", lambda m, x: m.pad(x, (2, 3), mode="reflect", reflect_type="odd"), arr(4)
    ),
    case(
        "pad_reflect_odd_wide",
        lambda m, x: m.pad(x, ((5, 8), (1, 1)), mode="reflect", reflect_type="odd"),
        arr(3, 2),
    ),
    case("pad_symmetric", lambda m, x: m.pad(x, (3, 2), mode="symmetric"), arr(4)),
    case(
        "pad_symmetric_wide", lambda m, x: m.pad(x, ((4, 6), (1, 0)), mode="symmetric"), arr(2, 3)
    ),
    case(
        "pad_symmetric_odd",
        lambda m, x: m.pad(x, (6, 4), mode="symmetric", reflect_type="odd"),
        arr(3),
    ),
    case("pad_3d", lambda m, x: m.pad(x, 1, mode="edge"), arr(2, 2, 2)),
    case("pad_maximum", lambda m, x: m.pad(x, (2, 1), mode="maximum"), distinct(5)),
    case(
        "pad_minimum_stat_length",
        lambda m, x: m.pad(x, ((1, 1), (2, 2)), mode="minimum", stat_length=2),
        distinct(3, 4),
    ),
    case("pad_mean", lambda m, x: m.pad(x, ((1, 2), (1, 0)), mode="mean"), arr(3, 3)),
    case(
        "pad_mean_stat_length",
        lambda m, x: m.pad(x, (2, 3), mode="mean", stat_length=(1, 3)),
        arr(5),
    ),
    # rolling
    case("roll", lambda m, x: m.roll(x, 2), arr(5)),
    case("roll_negative", lambda m, x: m.roll(x, -7), arr(5)),
    case("roll_flat", lambda m, x: m.roll(x, 4), arr(2, 3)),
    case("roll_axis", lambda m, x: m.roll(x, 1, axis=-1), arr(2, 3)),
    case("roll_axes", lambda m, x: m.roll(x, (1, -2, 1), axis=(0, 1, 0)), arr(3, 4)),
    case("roll_zero", lambda m, x: m.roll(x, 3, axis=0), arr(3, 2)),
    # diagonals and triangles
    case("diag_vector", lambda m, x: m.diag(x), arr(3)),
    case("diag_vector_k", lambda m, x: m.diag(x, 2), arr(3)),
    case("diag_vector_negative_k", lambda m, x: m.diag(x, -1), arr(2)),
    case("diag_matrix", lambda m, x: m.diag(x), arr(3, 3)),
    case("diag_matrix_k", lambda m, x: m.diag(x, 1), arr(3, 4)),
    case("diag_matrix_negative_k", lambda m, x: m.diag(x, -2), arr(4, 3)),
    case("diagonal", lambda m, x: m.diagonal(x), arr(3, 4)),
    case("diagonal_offset", lambda m, x: m.diagonal(x, -1), arr(3, 4)),
    case("diagonal_3d", lambda m, x: m.diagonal(x, 1, 1, 2), arr(2, 3, 4)),
    case("diagonal_axes_reversed", lambda m, x: m.diagonal(x, 0, 2, 0), arr(2, 3, 4)),
    case("diagonal_empty", lambda m, x: m.diagonal(x, 5), arr(3, 3)),
    case("trace", lambda m, x: m.trace(x), arr(3, 3)),
    case("trace_offset", lambda m, x: m.trace(x, -1), arr(3, 4)),
    case("trace_3d", lambda m, x: m.trace(x, 0, 1, 2), arr(2, 3, 3)),
    case("triu", lambda m, x: m.triu(x), arr(3, 3)),
    case("triu_k", lambda m, x: m.triu(x, 1), arr(3, 4)),
    case("triu_3d", lambda m, x: m.triu(x, -1), arr(2, 3, 3)),
    case("triu_1d", lambda m, x: m.triu(x), arr(3)),
    case("tril", lambda m, x: m.tril(x), arr(3, 3)),
    case("tril_k", lambda m, x: m.tril(x, -1), arr(4, 3)),
    case("tril_3d", lambda m, x: m.tril(x, 2), arr(2, 2, 3)),
    # products of arrays
    case("kron_1d", lambda m, a, b: m.kron(a, b), arr(2), arr(3)),
    case("kron_2d", lambda m, a, b: m.kron(a, b), arr(2, 2), arr(2, 3)),
    case("kron_2d_1d", lambda m, a, b: m.kron(a, b), arr(2, 3), arr(2)),
    case("kron_1d_2d", lambda m, a, b: m.kron(a, b), arr(2), arr(3, 2)),
    case("kron_scalar", lambda m, a, b: m.kron(a, b), arr(), arr(2, 2)),
    case("kron_3d", lambda m, a, b: m.kron(a, b), arr(2, 1, 2), arr(2, 2)),
    case("cross", lambda m, a, b: m.cross(a, b), arr(3), arr(3)),
    case("cross_batch", lambda m, a, b: m.cross(a, b), arr(4, 3), arr(3)),
    case("cross_broadcast", lambda m, a, b: m.cross(a, b), arr(2, 1, 3), arr(4, 3)),
    case(
        "cross_axes", lambda m, a, b: m.cross(a, b, axisa=0, axisb=1, axisc=0), arr(3, 2), arr(2, 3)
    ),
    case("cross_axis", lambda m, a, b: m.cross(a, b, axis=0), arr(3, 4), arr(3, 4)),
    case("cross_2d", quiet(lambda m, a, b: m.cross(a, b)), arr(4, 2), arr(4, 2)),
    case("cross_2_3", quiet(lambda m, a, b: m.cross(a, b)), arr(2), arr(3)),
    case("cross_3_2", quiet(lambda m, a, b: m.cross(a, b, axisc=0)), arr(2, 3), arr(2)),
    # differences
    case("diff", lambda m, x: m.diff(x), arr(5)),
    case("diff_n2", lambda m, x: m.diff(x, 2), arr(5)),
    case("diff_axis0", lambda m, x: m.diff(x, axis=0), arr(3, 4)),
    case("diff_n3_axis1", lambda m, x: m.diff(x, 3, axis=1), arr(2, 5)),
    case(
        "diff_prepend_append",
        lambda m, x, p, a: m.diff(x, prepend=p, append=a, axis=0),
        arr(3, 2),
        arr(1, 2),
        arr(2, 2),
    ),
    case("diff_prepend_scalar", lambda m, x: m.diff(x, 2, prepend=0.5), arr(2, 4)),
    # interpolation
    case("interp", lambda m, x, xp, fp: m.interp(x, xp, fp), X_INTERP, XP, arr(5)),
    case("interp_scalar", lambda m, x, fp: m.interp(x, XP, fp), np.array(0.7), arr(5)),
    case(
        "interp_left_right",
        lambda m, x, fp: m.interp(x, XP, fp, left=-3.0, right=4.0),
        X_INTERP,
        arr(5),
    ),
    case("interp_one_point", lambda m, x, fp: m.interp(x, XP[:1], fp), X_INTERP, arr(1)),
    case(
        "interp_two_points", lambda m, x, xp, fp: m.interp(x, xp, fp), X_INTERP, XP[[0, 4]], arr(2)
    ),
    case(
        "interp_period",
        lambda m, x, fp: m.interp(x, np.array([3.0, 0.6, 1.3, 2.3]), fp, period=np.pi),
        X_INTERP,
        arr(4),
    ),
    case(
        "interp_complex",
        lambda m, x, fp, fq: (
            m.real(m.interp(x, XP, fp + 1j * fq)) * m.imag(m.interp(x, XP, fp - 2j * fq))
        ),
        X_INTERP,
        arr(5),
        arr(5),
    ),
    # NaN handling
    case("nan_to_num", lambda m, x: m.nan_to_num(x, posinf=5.0, neginf=-7.0), INFS),
    case("nan_to_num_nan", lambda m, x: m.nan_to_num(x, nan=2.5, posinf=1.0, neginf=-1.0), INFS),
    case("nansum", lambda m, x: m.nansum(x), NANS),
    case("nansum_axis", lambda m, x: m.nansum(x, axis=0, keepdims=True), NANS),
    case("nanprod", lambda m, x: m.nanprod(x, axis=1), NANS),
    case("nanmean", lambda m, x: m.nanmean(x), NANS),
    case("nanmean_axis", lambda m, x: m.nanmean(x, axis=1), NANS),
    case("nanmean_axis_keepdims", lambda m, x: m.nanmean(x, axis=-2, keepdims=True), NANS),
    case(
        "nanmean_where",
        lambda m, x: m.nanmean(x, axis=1, where=np.array([True, False, True, True])),
        NANS,
    ),
    # convolution
    case("convolve", lambda m, a, v: m.convolve(a, v), arr(5), arr(3)),
    case("convolve_same", lambda m, a, v: m.convolve(a, v, "same"), arr(5), arr(2)),
    case("convolve_valid", lambda m, a, v: m.convolve(a, v, mode="valid"), arr(6), arr(3)),
    case("convolve_longer_v", lambda m, a, v: m.convolve(a, v, "same"), arr(2), arr(5)),
    case("correlate", lambda m, a, v: m.correlate(a, v), arr(5), arr(3)),
    case("correlate_full", lambda m, a, v: m.correlate(a, v, "full"), arr(4), arr(3)),
    case("correlate_same", lambda m, a, v: m.correlate(a, v, "same"), arr(6), arr(3)),
    case("correlate_longer_v_same", lambda m, a, v: m.correlate(a, v, "same"), arr(2), arr(5)),
    case("correlate_longer_v_valid", lambda m, a, v: m.correlate(a, v), arr(3), arr(5)),
    # grids and polynomials
    case("meshgrid", lambda m, x, y: m.meshgrid(x, y), arr(3), arr(2)),
    case(
        "meshgrid_ij", lambda m, x, y, z: m.meshgrid(x, y, z, indexing="ij"), arr(2), arr(3), arr(2)
    ),
    case("meshgrid_sparse", lambda m, x, y: m.meshgrid(x, y, sparse=True), arr(3), arr(4)),
    case("meshgrid_2d_input", lambda m, x, y: m.meshgrid(x, y, copy=False), arr(2, 2), arr(3)),
    case("vander", lambda m, x: m.vander(x), arr(4)),
    case("vander_N", lambda m, x: m.vander(x, 3, increasing=True), arr(5)),
    case("vander_zeros", lambda m, x: m.vander(x, 4), ZEROS_1D),
    case("polyval", lambda m, p, x: m.polyval(p, x), arr(4), arr(2, 3)),
    case("polyval_scalar", lambda m, p, x: m.polyval(p, x), arr(3), arr()),
    case("polyval_positive", lambda m, p, x: m.polyval(p, x), arr(1), pos(3)),
    # Tensor methods, and plain numpy code on tracers
    case("cumsum_method", lambda m, x: x.cumsum(axis=1), arr(2, 3)),
    case("cumprod_method", lambda m, x: x.cumprod(), arr(2, 3)),
    case("diagonal_method", lambda m, x: x.diagonal(1), arr(3, 3)),
    case("trace_method", lambda m, x: x.trace(), arr(2, 2)),
    dispatched("np.cumsum", lambda x: np.cumsum(x, axis=0), arr(3, 2)),
    dispatched("np.cumprod", lambda x: np.cumprod(x), ZEROS_1D),
    dispatched("np.sort", lambda x: np.sort(x), distinct(2, 3)),
    dispatched("np.pad", lambda x: np.pad(x, 1, mode="reflect"), arr(2, 3)),
    dispatched("np.roll", lambda x: np.roll(x, 1), arr(4)),
    dispatched("np.diag", lambda x: np.diag(x), arr(3)),
    dispatched("np.trace", lambda x: np.trace(x), arr(3, 3)),
    dispatched("np.triu", lambda x: np.triu(x), arr(3, 3)),
    dispatched("np.kron", lambda a, b: np.kron(a, b), arr(2), arr(2)),
    dispatched("np.cross", lambda a, b: np.cross(a, b), arr(3), arr(3)),
    dispatched("np.diff", lambda x: np.diff(x), arr(4)),
    dispatched("np.interp", lambda x, fp: np.interp(x, XP, fp), X_INTERP, arr(5)),
    dispatched("np.nansum", lambda x: np.nansum(x), NANS),
    dispatched("np.nanmean", lambda x: np.nanmean(x, axis=0), NANS),
    dispatched("np.convolve", lambda a, v: np.convolve(a, v), arr(4), arr(2)),
    dispatched("np.meshgrid", lambda x, y: np.meshgrid(x, y), arr(2), arr(3)),
    dispatched("np.vander", lambda x: np.vander(x), arr(3)),
    dispatched("np.polyval", lambda p, x: np.polyval(p, x), arr(3), arr(4)),
]
