"""Op table: NumPy's remaining mathematical functions (angle, sinc, copysign, degrees, ...),
calculus (trapezoid, gradient, unwrap), polynomials, histograms, r_/c_, and the array
functions added with them (rot90, insert, block, select, apply_along_axis, ...).

Written once as `f(module, *arrays)` for autodiff.numpy and numpy; outputs are squared (most
of these are linear). Functions whose result's shape depends on values (roots, polymul,
trim_zeros, compress of a traced mask) cannot be vmapped or staged: tests/test_numpy_breadth.py
checks them.
"""

import numpy as np
from optable import OpCase, _square, squared_case

import autodiff.numpy as anp

case = squared_case
_RNG = np.random.default_rng(2828)  # (own generator: the shared stream stays as it was)


def a(*shape, low=-2.0, high=2.0):
    return _RNG.uniform(low, high, size=shape)


def p(*shape):
    return _RNG.uniform(0.5, 2.0, size=shape)


def _partition_ref(x, k, axis):
    """NumPy's partition with the parts in sorted order (autodiff's is fully sorted)."""
    out = np.partition(x, k, axis)
    return np.sort(out, axis)


def partition_case(name, k, axis, x):
    return OpCase(
        name,
        lambda v: _square(anp.partition(v, k, axis)),
        (x,),
        ref=lambda v: _square(_partition_ref(v, k, axis)),
    )


SINC_AT = np.array([0.0, 0.3, -1.7, 2.5])  # sinc at 0 too (its Taylor polynomial there)
STEPS = np.array([0.0, 1.0, 3.0, 4.5, 5.0])
PHASE = np.array([[0.1, 3.0, 6.5, 0.5, -2.0], [1.0, -2.9, 3.3, -0.4, 5.9]])
PHASE2 = np.array([[0.3, 1.0], [2.9, -1.2], [1.1, 2.6], [-0.4, 0.9]])  # (steps off the edges)
SIGNS = np.array([-1.5, 0.4, 1.2, -0.3])
CONDS = [np.array([True, False, False, True]), np.array([False, True, False, True])]
MASK = np.array([[True, False, True], [False, True, True]])
ROWS = np.array([True, False, True])

CASES = [
    # elementwise
    case("angle", lambda m, z: m.angle(z), a(4) + 1j * a(4)),
    case("angle_deg", lambda m, z: m.angle(z, deg=True), a(3) + 1j * a(3)),
    case("angle_real", lambda m, x: m.angle(x), a(3)),
    case("sinc", lambda m, x: m.sinc(x), SINC_AT),
    case("copysign", lambda m, x, y: m.copysign(x, y), a(4), a(4)),
    case("copysign_scalar", lambda m, x: m.copysign(x, -1.0), a(2, 2)),
    case("float_power", lambda m, x, y: m.float_power(x, y), p(3), a(3)),
    case("fabs", lambda m, x: m.fabs(x), a(5)),
    case("deg2rad", lambda m, x: m.deg2rad(x), a(3) * 90),
    case("rad2deg", lambda m, x: m.rad2deg(x), a(3)),
    case("radians", lambda m, x: m.radians(x), a(2) * 90),
    case("degrees", lambda m, x: m.degrees(x), a(2)),
    case("heaviside_at_zero", lambda m, y: m.heaviside(np.array([-1.0, 0.0, 2.0]), y), a(3)),
    case("ldexp", lambda m, x: m.ldexp(x, np.array([2, -1, 0])), a(3)),
    case("modf", lambda m, x: m.modf(x), a(4) * 3),
    case("divmod", lambda m, x, y: m.divmod(x, y), a(3) * 3 + 0.1, p(3)),
    case("positive", lambda m, x: m.positive(x), a(3)),
    case("acos", lambda m, x: m.acos(x), a(3, low=-0.9, high=0.9)),
    case("atan2", lambda m, x, y: m.atan2(x, y), a(3), p(3)),
    # calculus
    case("trapezoid", lambda m, y: m.trapezoid(y), a(5)),
    case("trapezoid_x", lambda m, y, x: m.trapezoid(y, x, axis=0), a(4, 2), np.cumsum(p(4))),
    case("trapezoid_dx_axis0", lambda m, y: m.trapezoid(y, dx=0.5, axis=0), a(3, 2)),
    case("gradient", lambda m, f: m.gradient(f), a(5)),
    case("gradient_2d", lambda m, f: m.gradient(f, 0.5, STEPS), a(3, 5)),
    case("gradient_edge2", lambda m, f: m.gradient(f, STEPS, edge_order=2), a(5)),
    case("gradient_spacing", lambda m, f, x: m.gradient(f, x, axis=1), a(2, 4), np.cumsum(p(4))),
    case("unwrap", lambda m, ph: m.unwrap(ph), PHASE),
    case("unwrap_period", lambda m, ph: m.unwrap(ph, period=4.0, axis=0), PHASE2),
    case("ediff1d", lambda m, x: m.ediff1d(x, to_begin=[1.0], to_end=-2.0), a(2, 3)),
    case("cumulative_sum", lambda m, x: m.cumulative_sum(x, axis=1, include_initial=True), a(2, 3)),
    case("cumulative_prod", lambda m, x: m.cumulative_prod(x), a(4)),
    # polynomials
    case("poly", lambda m, r: m.poly(r), a(3)),
    case("polyadd", lambda m, x, y: m.polyadd(x, y), a(2), a(4)),
    case("polysub", lambda m, x, y: m.polysub(x, y), a(3), a(2)),
    case("polyder", lambda m, x: m.polyder(x, 2), a(5)),
    case("polyint", lambda m, x, k: m.polyint(x, 2, k), a(3), a(2)),
    case("polyfit", lambda m, x, y: m.polyfit(x, y, 2), np.linspace(-1, 1, 6) + a(6) * 0.05, a(6)),
    case("polyfit_w", lambda m, y, w: m.polyfit(STEPS, y, 1, w=w), a(5, 2), p(5)),
    # histograms: weights, densities and the range's edges are differentiable
    case(
        "histogram_density",
        lambda m, x, w: m.histogram(x, 3, weights=w, density=True),
        np.array([0.1, 0.45, 0.9, 1.6, 2.2, 0.7]),
        p(6),
    ),
    case("histogram_edges", lambda m, x: m.histogram_bin_edges(x, 4), a(7)),
    case("r_", lambda m, x, y: m.r_[x, 0.5, y], a(2), a(3)),
    case("r_directive", lambda m, x, y: m.r_["0,2", x, y], a(3), a(3)),
    case("c_", lambda m, x, y: m.c_[x, y], a(3), a(3)),
    # shapes and rearrangements
    case("rot90", lambda m, x: m.rot90(x), a(2, 3)),
    case("rot90_k3_axes", lambda m, x: m.rot90(x, 3, (2, 0)), a(2, 3, 2)),
    case("rollaxis", lambda m, x: m.rollaxis(x, 2, 1), a(2, 3, 4)),
    case("matrix_transpose", lambda m, x: m.matrix_transpose(x), a(2, 3, 4)),
    case("append", lambda m, x, y: m.append(x, y), a(2, 2), a(3)),
    case("append_axis", lambda m, x, y: m.append(x, y, axis=0), a(2, 3), a(1, 3)),
    case("insert", lambda m, x, v: m.insert(x, [1, 3], v), a(4), a(2)),
    case("insert_axis", lambda m, x, v: m.insert(x, 1, v, axis=1), a(2, 3), a(2)),
    case("delete", lambda m, x: m.delete(x, [0, 2], axis=1), a(2, 4)),
    case("resize", lambda m, x: m.resize(x, (3, 3)), a(2, 2)),
    case("block", lambda m, x, y: m.block([[x, y], [y, x]]), a(1, 1), a(1, 2)),
    case("diagflat", lambda m, x: m.diagflat(x, 1), a(1, 3)),
    case("select", lambda m, x, y: m.select(CONDS, [x, y], -0.5), a(4), a(4)),
    case("choose", lambda m, x, y: m.choose(np.array([1, 0, 1]), [x, y]), a(3), a(3)),
    case(
        "piecewise",
        lambda m, x: m.piecewise(x, [SIGNS > 0.0], [lambda v: v * v, lambda v: -v]),
        np.array([-1.5, 0.4, 1.2, -0.3]),
    ),
    case("compress", lambda m, x: m.compress(ROWS, x, axis=0), a(3, 2)),
    case("extract", lambda m, x: m.extract(MASK, x), a(2, 3)),
    partition_case("partition", 2, -1, a(5)),
    partition_case("partition_axis0", [0, 2], 0, a(4, 2)),
    case(
        "sort_complex",
        lambda m, x: (lambda s: m.real(s) + 2.0 * m.imag(s))(m.sort_complex(x)),
        np.array([1.5 + 1j, -0.5 - 2j, 0.7 - 1j]),
    ),
    case(
        "apply_along_axis",
        lambda m, x: m.apply_along_axis(lambda r: m.stack([m.sum(r * r), m.max(r)]), 1, x),
        a(3, 4),
    ),
    case("apply_over_axes", lambda m, x: m.apply_over_axes(m.sum, x, [0, 2]), a(2, 3, 2)),
    case("vecdot", lambda m, x, y: m.vecdot(x, y), a(2, 3), a(3)),
    case("matvec", lambda m, x, y: m.matvec(x, y), a(2, 3), a(3)),
    case("vecmat", lambda m, x, y: m.vecmat(x, y), a(3), a(3, 2)),
    case("asanyarray", lambda m, x: m.ascontiguousarray(m.asanyarray(x)), a()),
]
