"""NumPy's mathematical functions written as composites of the elementwise and array families:
angle, sinc, copysign, float_power, fabs, the degree/radian conversions, heaviside, ldexp,
modf, divmod, fix, real_if_close and the type tests; trapezoid, gradient, unwrap, ediff1d
and the cumulative functions of the array API.

Values and dtypes are NumPy's (each follows NumPy's own formula); derivatives come from
the parts. Where NumPy's formula has a removable singularity (sinc at 0), the derivatives
there come from its Taylor polynomial, so they are right to every order the tests reach.
"""

from __future__ import annotations

import builtins

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from autodiff.core.abstract import aval_of, ufunc_result_dtype
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.tensor import Tensor
from autodiff.numpy._arguments import concrete_values
from autodiff.numpy._cumulative import cumprod, cumsum
from autodiff.numpy._sequences import diff
from autodiff.ops import elementwise as ew
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype, stop_gradient, where
from autodiff.ops.index import getitem
from autodiff.ops.structural import ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value
_scalar_or_operand = red.listed_operand  # (Python numbers stay weakly typed, as in NumPy)
_F = ew.FUNCTIONS
sin, arctan2, signbit, isinf, isnan, trunc, imag, real = (
    _F[name] for name in ("sin", "arctan2", "signbit", "isinf", "isnan", "trunc", "imag", "real")
)


def _is_complex(x) -> bool:
    return np.issubdtype(dtype_of(x), np.complexfloating)


def _cast_for(ufunc, *xs):
    """`xs` cast to the dtype NumPy's `ufunc` computes them in (its result dtype)."""
    dt = ufunc_result_dtype(ufunc, *(aval_of(x) for x in xs))
    return [astype(x, dt) if isinstance(x, Tensor) or dtype_of(x) != dt else x for x in xs]


# ---------------------------------------------------------------------------------------------
# Elementwise.


def angle(z, deg=False):
    """`numpy.angle`: the argument of complex `z` (0 or pi for real values), differentiable.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(angle(1j)), float(ad.grad(lambda z: angle(z))(1.0 + 1.0j).real)
        (1.5707963267948966, -0.5)
    """
    z = _scalar_or_operand(z)
    if _is_complex(z):
        zimag, zreal = imag(z), real(z)
    else:
        zimag, zreal = 0, z
    a = arctan2(zimag, zreal)
    return a * (180 / np.pi) if deg else a


def real_if_close(a, tol=100):
    """`numpy.real_if_close`: the real part of complex `a` when every imaginary part is
    within `tol` machine epsilons of 0 (which its values decide), else `a`.

    Example:
        >>> import numpy as np
        >>> real_if_close(np.array([2.1 + 4e-16j, 5.2 + 3e-15j]))
        array([2.1, 5.2])
    """
    a = _operand(a)
    if not _is_complex(a):
        return a
    if tol > 1:
        tol = np.finfo(dtype_of(a)).eps * tol
    values = concrete_values(a, "real_if_close")
    if np.all(np.absolute(np.imag(values)) < tol):
        return real(a)
    return a


def sinc(x):
    """`numpy.sinc`, sin(pi x) / (pi x), differentiable to every order (at 0 too).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(sinc(0.5)), float(ad.grad(ad.grad(sinc))(0.0))  # -pi**2 / 3
        (0.6366197723675814, -3.289868133696453)
    """
    x = _scalar_or_operand(x)
    x = np.pi * x
    dt = dtype_of(x)
    eps = np.finfo(dt).eps if np.dtype(dt).kind == "f" else 1e-20
    zero = x == 0
    y = where(zero, eps, x)
    # the Maclaurin polynomial at 0: value 1 (as NumPy's sin(eps) / eps), and the derivatives
    x2 = x * x
    series = 1 + x2 * (-1 / 6 + x2 * (1 / 120 + x2 * (-1 / 5040 + x2 * (1 / 362880))))
    return where(zero, astype(series, dtype_of(y)), sin(y) / y)


def copysign(x1, x2):
    """`numpy.copysign`: the magnitude of `x1` with the sign of `x2`; derivative +-1 in `x1`
    (as JAX), 0 in `x2`.

    Example:
        >>> import autodiff as ad
        >>> float(copysign(2.0, -1.0)), float(ad.grad(copysign)(2.0, -1.0))
        (-2.0, -1.0)
    """
    x1, x2 = _cast_for(np.copysign, _scalar_or_operand(x1), _scalar_or_operand(x2))
    flip = _F["logical_xor"](signbit(x1), signbit(x2))
    return where(flip, -x1, x1)


def float_power(x1, x2):
    """`numpy.float_power`: `x1 ** x2` computed in float64 (complex128), differentiable.

    Example:
        >>> import numpy as np
        >>> float_power(np.float32(2.0), 3).dtype
        dtype('float64')
    """
    x1, x2 = _cast_for(np.float_power, _scalar_or_operand(x1), _scalar_or_operand(x2))
    return _F["power"](x1, x2)


def fabs(x):
    """`numpy.fabs`: the absolute value of real `x` (TypeError for complex, as NumPy).

    Example:
        >>> import autodiff as ad
        >>> float(ad.grad(fabs)(-2.0))
        -1.0
    """
    x = _scalar_or_operand(x)
    if _is_complex(x):
        raise TypeError("ufunc 'fabs' not supported for complex input")
    (x,) = _cast_for(np.fabs, x)
    return _F["absolute"](x)


def _times_ratio(x, num: float, den: float):
    """x * (num / den) as NumPy's loops compute it: the ratio in x's precision (float16 in
    float32 and back)."""
    dt = np.dtype(dtype_of(x))
    if dt == np.float16:
        return astype(astype(x, np.float32) * (np.float32(num) / np.float32(den)), dt)
    return x * (dt.type(num) / dt.type(den))


def deg2rad(x):
    """`numpy.deg2rad` (also `radians`): x * (pi / 180).

    Example:
        >>> float(deg2rad(180.0))
        3.141592653589793
    """
    (x,) = _cast_for(np.deg2rad, _scalar_or_operand(x))
    return _times_ratio(x, np.pi, 180.0)


def rad2deg(x):
    """`numpy.rad2deg` (also `degrees`): x * (180 / pi).

    Example:
        >>> float(rad2deg(np.pi))
        180.0
    """
    (x,) = _cast_for(np.rad2deg, _scalar_or_operand(x))
    return _times_ratio(x, 180.0, np.pi)


def radians(x):
    """`numpy.radians`: `deg2rad`.

    Example:
        >>> float(radians(90.0))
        1.5707963267948966
    """
    return deg2rad(x)


def degrees(x):
    """`numpy.degrees`: `rad2deg`.

    Example:
        >>> float(degrees(np.pi / 2))
        90.0
    """
    return rad2deg(x)


def heaviside(x1, x2):
    """`numpy.heaviside`: 0 for x1 < 0, `x2` at 0, 1 for x1 > 0 (NaN at NaN); derivative 0 in
    `x1`, 1 in `x2` where x1 == 0.

    Example:
        >>> import numpy as np
        >>> heaviside(np.array([-1.0, 0.0, 2.0]), 0.5)
        array([0. , 0.5, 1. ])
    """
    x1, x2 = _cast_for(np.heaviside, _scalar_or_operand(x1), _scalar_or_operand(x2))
    x1 = stop_gradient(x1)
    step = where(x1 < 0, 0, where(x1 > 0, 1, x2))
    step = where(isnan(x1), x1, step)
    return astype(step, dtype_of(x1)) if dtype_of(step) != dtype_of(x1) else step


def ldexp(x1, x2):
    """`numpy.ldexp`: x1 * 2**x2 for integer `x2`, differentiable in `x1`.

    Example:
        >>> float(ldexp(3.0, 2))
        12.0
    """
    x1, x2 = _scalar_or_operand(x1), _scalar_or_operand(x2)
    if is_inexact(dtype_of(x2)):
        raise TypeError(
            "ufunc 'ldexp' not supported for the input types: the exponent must be an integer"
        )
    dt = ufunc_result_dtype(np.ldexp, aval_of(x1), aval_of(x2))
    scale = _F["power"](np.asarray(2.0, dt), astype(x2, dt))
    return astype(x1, dt) * scale


def modf(x, /):
    """`numpy.modf`: (fractional part, integral part) of `x`; derivatives 1 and 0.

    Example:
        >>> import numpy as np
        >>> modf(np.array([2.5, -1.25]))
        (array([ 0.5 , -0.25]), array([ 2., -1.]))
    """
    x = _scalar_or_operand(x)
    x = astype(x, np.modf.resolve_dtypes((aval_of(x).dtype, None, None))[1])
    whole = trunc(x)
    fraction = where(isinf(x), copysign(0.0, x), x - whole)
    return fraction, whole


def divmod(x1, x2, /):
    """`numpy.divmod`: (floor_divide, remainder).

    Example:
        >>> divmod(7.0, 2.0)
        (np.float64(3.0), np.float64(1.0))
    """
    return ew.FUNCTIONS["floor_divide"](x1, x2), ew.FUNCTIONS["remainder"](x1, x2)


def fix(x, out=None):
    """`numpy.fix`: rounding towards zero (a zero derivative).

    Example:
        >>> import numpy as np
        >>> fix(np.array([2.7, -2.7]))
        array([ 2., -2.])
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.fix does not support out=")
    return trunc(_scalar_or_operand(x))


def positive(x, /):
    """`numpy.positive`: `x` (a copy).

    Example:
        >>> positive(-1.5)
        np.float64(-1.5)
    """
    x = _scalar_or_operand(x)
    return shp.copy(x) if isinstance(x, Tensor) else np.positive(x)


def iscomplex(x):
    """`numpy.iscomplex`: whether each imaginary part is nonzero (a boolean constant).

    Example:
        >>> import numpy as np
        >>> iscomplex(np.array([1.0 + 1j, 2.0 + 0j])).tolist()
        [True, False]
    """
    x = _scalar_or_operand(x)
    if not _is_complex(x):
        return np.zeros(shape_of(x), bool) if shape_of(x) else np.False_
    return imag(x) != 0


def isreal(x):
    """`numpy.isreal`: whether each imaginary part is 0 (a boolean constant).

    Example:
        >>> import numpy as np
        >>> isreal(np.array([1.0 + 1j, 2.0 + 0j])).tolist()
        [False, True]
    """
    if isinstance(x, (int, float, complex)):
        return x.imag == 0  # (NumPy's: imag(x) == 0 of a Python number)
    x = _scalar_or_operand(x)
    if not _is_complex(x):
        return np.ones(shape_of(x), bool) if shape_of(x) else np.True_
    return imag(x) == 0


def isposinf(x, out=None):
    """`numpy.isposinf` (a boolean constant).

    Example:
        >>> import numpy as np
        >>> isposinf(np.array([np.inf, -np.inf, 1.0])).tolist()
        [True, False, False]
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.isposinf does not support out=")
    x = _scalar_or_operand(x)
    if _is_complex(x):
        raise TypeError(
            "This operation is not supported for complex values because it would be ambiguous."
        )
    return isinf(x) & ~signbit(x)


def isneginf(x, out=None):
    """`numpy.isneginf` (a boolean constant).

    Example:
        >>> import numpy as np
        >>> isneginf(np.array([np.inf, -np.inf, 1.0])).tolist()
        [False, True, False]
    """
    if out is not None:
        raise NotImplementedError("autodiff.numpy.isneginf does not support out=")
    x = _scalar_or_operand(x)
    if _is_complex(x):
        raise TypeError(
            "This operation is not supported for complex values because it would be ambiguous."
        )
    return isinf(x) & signbit(x)


_LOGICAL = {"bitwise_and": "logical_and", "bitwise_or": "logical_or", "bitwise_xor": "logical_xor"}


def _constant_ufunc(ufunc):
    """NumPy's `ufunc` of the values (integer and bit operations, float spacing): a constant
    (piecewise constant, so its derivative is 0 where it has one). On booleans the bit
    operations are the logical ones, which vmap and jit see through."""
    logical = _F.get(_LOGICAL.get(ufunc.__name__, "logical_not" if ufunc is np.invert else ""))

    def f(*args, **kwargs):
        if kwargs.get("out") is not None:
            raise NotImplementedError(f"autodiff.numpy.{ufunc.__name__} does not support out=")
        operands = [_scalar_or_operand(a) for a in args]
        if (
            logical is not None
            and not kwargs
            and all(isinstance(a, bool) or dtype_of(a) == np.bool_ for a in operands)
        ):
            return logical(*operands)
        values = [concrete_values(a, ufunc.__name__) for a in operands]
        return ufunc(*values, **kwargs)

    f.__name__ = f.__qualname__ = ufunc.__name__
    f.__doc__ = f"""`numpy.{ufunc.__name__}` of the values (a constant; not under vmap or jit).

    Example:
        >>> import numpy as np
        >>> {ufunc.__name__}({", ".join(["np.array([6, 4])"] * ufunc.nin)}).dtype.kind in "iufb"
        True
    """
    return f


_CONSTANT_UFUNCS: dict = {
    u.__name__: _constant_ufunc(u)
    for u in (
        np.gcd,
        np.lcm,
        np.bitwise_and,
        np.bitwise_or,
        np.bitwise_xor,
        np.invert,
        np.left_shift,
        np.right_shift,
        np.bitwise_count,
        np.spacing,
    )
}
_CONSTANT_UFUNCS.update(
    {
        "bitwise_not": _CONSTANT_UFUNCS["invert"],
        "bitwise_invert": _CONSTANT_UFUNCS["invert"],
        "bitwise_left_shift": _CONSTANT_UFUNCS["left_shift"],
        "bitwise_right_shift": _CONSTANT_UFUNCS["right_shift"],
    }
)


# ---------------------------------------------------------------------------------------------
# Differences, integrals and unwrapping, with NumPy's formulas.


def _along(axis: int, nd: int, part) -> tuple:
    return (slice(None),) * axis + (part,) + (slice(None),) * (nd - axis - 1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """`numpy.trapezoid`: the trapezoidal rule along `axis`, differentiable in `y`, `x`, `dx`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> float(trapezoid(np.array([1.0, 2.0, 3.0]), dx=2.0))
        8.0
        >>> ad.grad(trapezoid)(np.array([1.0, 2.0, 3.0]))
        array([0.5, 1. , 0.5])
    """
    y = _operand(y)
    nd = ndim_of(y)
    axis = normalize_axis_index(axis, nd)
    if x is None:
        d = dx
    else:
        x = _operand(x)
        if ndim_of(x) == 1:
            d = diff(x)
            shape = [1] * nd
            shape[axis] = shape_of(d)[0]
            d = shp.reshape(d, tuple(shape))
        else:
            d = diff(x, axis=axis)
    upper = getitem(y, _along(axis, nd, slice(1, None)))
    lower = getitem(y, _along(axis, nd, slice(None, -1)))
    return red.sum(d * (upper + lower) / 2.0, axis)


def _spacings(f, varargs, axes):
    """numpy.gradient's spacing per axis: a scalar, or the differences of 1-d coordinates
    (a scalar again where they are evenly spaced, which their values decide)."""
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and ndim_of(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if n != len(axes):
        raise TypeError("invalid number of arguments")
    dx = list(varargs)
    for i, distances in enumerate(dx):
        distances = _operand(distances)
        if ndim_of(distances) == 0:
            continue
        if ndim_of(distances) != 1:
            raise ValueError("distances must be either scalars or 1d")
        if shape_of(distances)[0] != shape_of(f)[axes[i]]:
            raise ValueError(
                "when 1d, distances must match the length of the corresponding dimension"
            )
        if np.issubdtype(dtype_of(distances), np.integer):
            distances = astype(distances, np.float64)
        diffx = diff(distances)
        even = red.all(diffx == getitem(diffx, 0))
        if isinstance(even, (np.ndarray, np.generic)) and even:
            diffx = getitem(diffx, 0)
        dx[i] = diffx
    return dx


def _edges(f, axis: int, nd: int, ax_dx, uniform: bool, edge_order: int):
    """numpy.gradient's one-sided differences at the first and last positions of `axis`."""

    def at(i):
        return getitem(f, _along(axis, nd, slice(i, i + 1) if i != -1 else slice(-1, None)))

    if edge_order == 1:
        first = (at(1) - at(0)) / (ax_dx if uniform else getitem(ax_dx, 0))
        last = (at(-1) - at(-2)) / (ax_dx if uniform else getitem(ax_dx, -1))
        return first, last
    if uniform:
        a, b, c = -1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx
    else:
        dx1, dx2 = getitem(ax_dx, 0), getitem(ax_dx, 1)
        a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
        b = (dx1 + dx2) / (dx1 * dx2)
        c = -dx1 / (dx2 * (dx1 + dx2))
    first = a * at(0) + b * at(1) + c * at(2)
    if uniform:
        a, b, c = 0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx
    else:
        dx1, dx2 = getitem(ax_dx, -2), getitem(ax_dx, -1)
        a = dx2 / (dx1 * (dx1 + dx2))
        b = -(dx2 + dx1) / (dx1 * dx2)
        c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
    last = a * at(-3) + b * at(-2) + c * at(-1)
    return first, last


def gradient(f, *varargs, axis=None, edge_order=1):
    """`numpy.gradient`: central differences inside, one-sided ones (first or second order)
    at the ends, for even or uneven spacing; differentiable in `f` and the spacings.

    Example:
        >>> import numpy as np
        >>> gradient(np.array([1.0, 2.0, 4.0, 7.0]))
        array([1. , 1.5, 2.5, 3. ])
    """
    f = _operand(f)
    nd = ndim_of(f)
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    dx = _spacings(f, varargs, axes)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = dtype_of(f)
    if not is_inexact(otype):
        f = astype(f, np.float64)
        otype = np.dtype(np.float64)
    outvals = []
    for ax, ax_dx in zip(axes, dx):
        if shape_of(f)[ax] < edge_order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, "
                "at least (edge_order + 1) elements are required."
            )
        uniform = ndim_of(ax_dx) == 0
        lower = getitem(f, _along(ax, nd, slice(None, -2)))
        middle = getitem(f, _along(ax, nd, slice(1, -1)))
        upper = getitem(f, _along(ax, nd, slice(2, None)))
        if uniform:
            inner = (upper - lower) / (2.0 * ax_dx)
        else:
            dx1, dx2 = getitem(ax_dx, slice(0, -1)), getitem(ax_dx, slice(1, None))
            shape = [1] * nd
            shape[ax] = -1
            a = shp.reshape(-dx2 / (dx1 * (dx1 + dx2)), tuple(shape))
            b = shp.reshape((dx2 - dx1) / (dx1 * dx2), tuple(shape))
            c = shp.reshape(dx1 / (dx2 * (dx1 + dx2)), tuple(shape))
            inner = a * lower + b * middle + c * upper
        first, last = _edges(f, ax, nd, ax_dx, uniform, edge_order)
        parts = [astype(p, otype) for p in (first, inner, last)]
        outvals.append(shp.concatenate(parts, ax))
    return outvals[0] if len(axes) == 1 else tuple(outvals)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """`numpy.unwrap`: `p` with jumps larger than `discont` replaced by their `period`
    complements; the corrections are locally constant (derivative 1 in `p`).

    Example:
        >>> import numpy as np
        >>> unwrap(np.array([0.0, 3.0, 6.5, 0.5]))
        array([0.        , 3.        , 0.21681469, 0.5       ])
    """
    p = _operand(p)
    nd = ndim_of(p)
    axis = normalize_axis_index(axis, nd)
    dd = stop_gradient(diff(p, axis=axis))
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dtype_of(dd), period)
    if np.issubdtype(dtype, np.integer):
        interval_high, rem = builtins.divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = ew.FUNCTIONS["remainder"](dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        ddmod = where((ddmod == interval_low) & (dd > 0), interval_high, ddmod)
    ph_correct = ddmod - dd
    ph_correct = where(_F["absolute"](dd) < discont, 0, ph_correct)
    up = astype(p, dtype)
    head = getitem(up, _along(axis, nd, slice(0, 1)))
    tail = getitem(p, _along(axis, nd, slice(1, None))) + cumsum(ph_correct, axis)
    return shp.concatenate([head, astype(tail, dtype)], axis)


def ediff1d(ary, to_end=None, to_begin=None):
    """`numpy.ediff1d`: the differences of the flattened array, with values around them.

    Example:
        >>> import numpy as np
        >>> ediff1d(np.array([1.0, 2.0, 4.0]), to_begin=-1.0)
        array([-1.,  1.,  2.])
    """
    ary = shp.ravel(_operand(ary))
    dtype = dtype_of(ary)
    parts = [diff(ary)] if shape_of(ary)[0] else [ary]
    for where_, extra in ((0, to_begin), (1, to_end)):
        if extra is None:
            continue
        extra = shp.ravel(_operand(extra))
        if not np.can_cast(dtype_of(extra), dtype, casting="same_kind"):
            raise TypeError(
                "dtype of `to_begin` must be compatible with input `ary` under the "
                "`same_kind` rule."
                if where_ == 0
                else "dtype of `to_end` must be compatible with input `ary` under the "
                "`same_kind` rule."
            )
        extra = astype(extra, dtype)
        parts = [extra, *parts] if where_ == 0 else [*parts, extra]
    return shp.concatenate(parts) if len(parts) > 1 else parts[0]


def _cumulative(name: str, cumulate, identity):
    def f(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if out is not None:
            raise NotImplementedError(f"autodiff.numpy.{name} does not support out=")
        x = _operand(x)
        if axis is None:
            if ndim_of(x) > 1:
                raise ValueError(
                    "For arrays which have more than one dimension ``axis`` argument is required."
                )
            axis = 0
        x = shp.atleast_1d(x)
        axis = normalize_axis_index(axis, ndim_of(x))
        result = cumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(shape_of(result))
            shape[axis] = 1
            first = np.full(tuple(shape), identity, dtype_of(result))
            result = shp.concatenate([first, result], axis)
        return result

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""`numpy.{name}`: `{cumulate.__name__}` along `axis` (required for more
    than one dimension), with the identity first if `include_initial`.

    Example:
        >>> import numpy as np
        >>> {name}(np.array([1.0, 2.0, 3.0]), include_initial=True).tolist()
        {[0.0, 1.0, 3.0, 6.0] if identity == 0 else [1.0, 1.0, 2.0, 6.0]}
    """
    return f


cumulative_sum = _cumulative("cumulative_sum", cumsum, 0)
cumulative_prod = _cumulative("cumulative_prod", cumprod, 1)


FUNCTIONS = {
    f.__name__: f
    for f in (
        angle,
        real_if_close,
        sinc,
        copysign,
        float_power,
        fabs,
        deg2rad,
        rad2deg,
        radians,
        degrees,
        heaviside,
        ldexp,
        modf,
        divmod,
        fix,
        positive,
        iscomplex,
        isreal,
        isposinf,
        isneginf,
        trapezoid,
        gradient,
        unwrap,
        ediff1d,
        cumulative_sum,
        cumulative_prod,
    )
}
FUNCTIONS.update(_CONSTANT_UFUNCS)
