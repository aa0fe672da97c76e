"""Elementwise primitives: arithmetic, exp/log, trig and hyperbolic, comparisons, where, casts.

Each primitive's impl is a NumPy ufunc (NumPy broadcasting and NEP 50 dtype rules
apply as they are), except the fused derivative formulas `tanh_backward` and
`log1p_backward`, whose impls run a Numba kernel on large arrays. Derivative rules
use the functions of this module, so they differentiate again. Binary rules reduce
cotangents to each input's shape and dtype with `unbroadcast`; Python-number
arguments are constants and get no cotangent at all.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy import ndarray  # (`np.ndarray` is an unspecialized lookup: numpy has a __getattr__)

from autodiff.core import buffers
from autodiff.core.dtypes import is_inexact
from autodiff.core.primitive import Primitive, bind, bind_binary, bind_unary
from autodiff.core.tensor import SHAPE_OF_VALUE
from autodiff.kernels import elementwise as kernels
from autodiff.kernels import fused as lazy
from autodiff.ops.batching import broadcasting_batch_rule, unary_batch_rule
from autodiff.ops.broadcast import (
    _add_reduce,
    _sum_to_shape_impl,
    broadcast_to,
    shape_of,
    sum_to_shape,
)

_NUMBER = frozenset((int, float, complex, bool))


def _const(x) -> bool:
    """Python numbers are never traced: rules skip their cotangent (NumPy scalars are not)."""
    return type(x) in _NUMBER


def unbroadcast(g, x):
    """Reduce a cotangent `g` of a broadcast result to the shape and dtype of input `x`."""
    gv, xv = g, x  # (what holds their shapes and dtypes: one walk down the levels each)
    while type(gv) in SHAPE_OF_VALUE:
        gv = gv._value
    while type(xv) in SHAPE_OF_VALUE:
        xv = xv._value
    try:  # arrays, NumPy scalars and Tensors all have shape and dtype: the common case
        shape, dt = xv.shape, xv.dtype
        if gv.shape == shape and gv.dtype == dt:
            return g
    except AttributeError:
        shape, dt = shape_of(x), np.asarray(x).dtype
    if shape_of(g) != shape:
        g = sum_to_shape(g, shape)
    if g.dtype != dt and is_inexact(dt):
        g = astype(g, dt)
    return g


def _tangent_like(t, out):
    """A tangent broadcast to the output's shape (None stays a symbolic zero)."""
    if t is None:
        return None
    return broadcast_to(t, shape_of(out)) if shape_of(t) != shape_of(out) else t


def _sum_tangents(a, b, out):
    if a is None:
        return _tangent_like(b, out)
    if b is None:
        return _tangent_like(a, out)
    return _tangent_like(add(a, b), out)


# ---------------------------------------------------------------------------------------------
# Unary ops defined by their derivative d(x, out): jvp = t * d, vjp = g * d.


def _unary(name: str, impl, deriv):
    p = Primitive(name)
    p.impl = impl
    # (Rules bind primitives directly: `multiply` would be one more call per op.)
    p.jvp = lambda primals, tangents, *, out: bind_binary(
        multiply_p, tangents[0], deriv(primals[0], out)
    )
    p.vjp = lambda g, x, *, out: (bind_binary(multiply_p, g, deriv(x, out)),)
    return p


def _nondiff(name: str, impl):
    p = Primitive(name, differentiable=False)
    p.impl = impl
    return p


negative_p = Primitive("neg")
negative_p.impl = np.negative
negative_p.jvp = lambda primals, tangents, *, out: negative(tangents[0])
negative_p.vjp = lambda g, x, *, out: (bind_unary(negative_p, g),)

exp_p = _unary("exp", np.exp, lambda x, out: out)
_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))

exp2_p = _unary("exp2", np.exp2, lambda x, out: out * _LN2)
expm1_p = _unary("expm1", np.expm1, lambda x, out: out + 1.0)
log_p = _unary("log", np.log, lambda x, out: reciprocal(x))
log2_p = _unary("log2", np.log2, lambda x, out: reciprocal(x * _LN2))
log10_p = _unary("log10", np.log10, lambda x, out: reciprocal(x * _LN10))
log1p_p = Primitive("log1p")
log1p_p.impl = np.log1p
log1p_p.jvp = lambda primals, tangents, *, out: log1p_backward(tangents[0], primals[0])
log1p_p.vjp = lambda g, x, *, out: (log1p_backward(g, x),)
log1p_p.node_name = "Log1PBackward0"
sqrt_p = _unary("sqrt", np.sqrt, lambda x, out: 0.5 / out)
cbrt_p = _unary("cbrt", np.cbrt, lambda x, out: reciprocal(3.0 * out * out))
square_p = _unary("square", np.square, lambda x, out: 2.0 * x)
reciprocal_p = _unary("reciprocal", np.reciprocal, lambda x, out: negative(out * out))
sin_p = _unary("sin", np.sin, lambda x, out: cos(x))
cos_p = _unary("cos", np.cos, lambda x, out: negative(sin(x)))
tan_p = _unary("tan", np.tan, lambda x, out: 1.0 + out * out)
arcsin_p = _unary("asin", np.arcsin, lambda x, out: reciprocal(sqrt(1.0 - x * x)))
arccos_p = _unary("acos", np.arccos, lambda x, out: negative(reciprocal(sqrt(1.0 - x * x))))
arctan_p = _unary("atan", np.arctan, lambda x, out: reciprocal(1.0 + x * x))
sinh_p = _unary("sinh", np.sinh, lambda x, out: cosh(x))
cosh_p = _unary("cosh", np.cosh, lambda x, out: sinh(x))
tanh_p = Primitive("tanh")
tanh_p.impl = np.tanh
tanh_p.jvp = lambda primals, tangents, *, out: tanh_backward(tangents[0], out)
tanh_p.vjp = lambda g, x, *, out: (tanh_backward(g, out),)
arcsinh_p = _unary("asinh", np.arcsinh, lambda x, out: reciprocal(sqrt(x * x + 1.0)))
arccosh_p = _unary("acosh", np.arccosh, lambda x, out: reciprocal(sqrt(x * x - 1.0)))
arctanh_p = _unary("atanh", np.arctanh, lambda x, out: reciprocal(1.0 - x * x))
# abs: derivative sign(x), 0 at the origin (the subgradient JAX and PyTorch use).
abs_p = Primitive("abs")
abs_p.impl = np.abs


def _conj_sgn(x, out):
    """conj(z / |z|), 0 at the origin; differentiable (sign is constant pieces only for reals)."""
    safe = where(out == 0, 1.0, out)
    return where(out == 0, 0.0, conj(x) / safe)


# d|z| = Re(conj(sgn z) dz); its transpose gives g * conj(sgn z) (real x: g * sign x).
abs_p.jvp = lambda primals, tangents, *, out: (
    real(_conj_sgn(primals[0], out) * tangents[0])
    if np.iscomplexobj(primals[0])
    else tangents[0] * sign(primals[0])
)
abs_p.vjp = lambda g, x, *, out: ((g * _conj_sgn(x, out) if np.iscomplexobj(x) else g * sign(x)),)

# Piecewise-constant functions: zero derivative everywhere they have one.
sign_p = _nondiff("sign", np.sign)
floor_p = _nondiff("floor", np.floor)
ceil_p = _nondiff("ceil", np.ceil)
trunc_p = _nondiff("trunc", np.trunc)
rint_p = _nondiff("rint", np.rint)
round_p = _nondiff("round", lambda x, decimals: np.round(x, decimals))
floor_divide_p = _nondiff("floor_divide", np.floor_divide)
stop_gradient_p = _nondiff("stop_gradient", lambda x: x)
isnan_p = _nondiff("isnan", np.isnan)
isinf_p = _nondiff("isinf", np.isinf)
isfinite_p = _nondiff("isfinite", np.isfinite)
logical_not_p = _nondiff("logical_not", np.logical_not)
signbit_p = _nondiff("signbit", np.signbit)

equal_p = _nondiff("eq", np.equal)
not_equal_p = _nondiff("ne", np.not_equal)
less_p = _nondiff("lt", np.less)
less_equal_p = _nondiff("le", np.less_equal)
greater_p = _nondiff("gt", np.greater)
greater_equal_p = _nondiff("ge", np.greater_equal)
logical_and_p = _nondiff("logical_and", np.logical_and)
logical_or_p = _nondiff("logical_or", np.logical_or)
logical_xor_p = _nondiff("logical_xor", np.logical_xor)

# ---------------------------------------------------------------------------------------------
# Binary ops. vjp returns one cotangent per input, reduced to that input's shape.

add_p = Primitive("add")
add_p.impl = np.add
add_p.scalar_impl = operator.add
add_p.jvp = lambda primals, tangents, *, out: _sum_tangents(tangents[0], tangents[1], out)
add_p.vjp = lambda g, x, y, *, out: (
    None if type(x) in _NUMBER else unbroadcast(g, x),  # (`_const`, inline)
    None if type(y) in _NUMBER else unbroadcast(g, y),
)

subtract_p = Primitive("sub")
subtract_p.impl = np.subtract
subtract_p.scalar_impl = operator.sub
subtract_p.jvp = lambda primals, tangents, *, out: _sum_tangents(
    tangents[0], None if tangents[1] is None else negative(tangents[1]), out
)
subtract_p.vjp = lambda g, x, y, *, out: (
    None if type(x) in _NUMBER else unbroadcast(g, x),
    None if type(y) in _NUMBER else unbroadcast(bind_unary(negative_p, g), y),
)

multiply_p = Primitive("mul")
multiply_p.impl = np.multiply
multiply_p.scalar_impl = operator.mul


# x * x: both terms of the jvp, and both cotangents, are computed once.
def _multiply_jvp(primals, tangents, *, out):
    (x, y), (tx, ty) = primals, tangents
    dx = None if tx is None else multiply(tx, y)
    dy = dx if x is y and tx is ty else None if ty is None else multiply(x, ty)
    return _sum_tangents(dx, dy, out)


def _multiply_vjp(g, x, y, *, out):
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER  # (`_const`, inline)
    if x is y and not cx:
        ct = unbroadcast(bind_binary(multiply_p, g, x), x)
        return ct, ct
    return (
        None if cx else unbroadcast(bind_binary(multiply_p, g, y), x),
        None if cy else unbroadcast(bind_binary(multiply_p, g, x), y),
    )


multiply_p.jvp = _multiply_jvp
multiply_p.vjp = _multiply_vjp

divide_p = Primitive("div")
divide_p.impl = np.true_divide
divide_p.scalar_impl = operator.truediv
divide_p.jvp = lambda primals, tangents, *, out: _sum_tangents(
    None if tangents[0] is None else tangents[0] / primals[1],
    None if tangents[1] is None else negative(tangents[1] * out / primals[1]),
    out,
)
divide_p.vjp = lambda g, x, y, *, out: (
    None if _const(x) else unbroadcast(g / y, x),
    None if _const(y) else unbroadcast(negative(g * out / y), y),
)


def _power_dx(x, y, out):
    if _const(y):
        return 0.0 if y == 0 else y * power(x, y - 1) if y != 2 else 2.0 * x
    # Where the exponent is 0 the derivative is 0, even at x = 0 (0 * inf would be nan).
    return where(y == 0, 0.0, y * power(x, where(y == 0, 1.0, y - 1)))


def _power_dy(x, y, out):
    # d/dy x**y = log(x) x**y; defined as 0 at x = 0 (the limit for y > 0), double-where safe.
    safe_x = where(x == 0, 1.0, x)
    return where(x == 0, 0.0, out * log(safe_x))


power_p = Primitive("pow")
power_p.impl = np.power
power_p.jvp = lambda primals, tangents, *, out: _sum_tangents(
    None if tangents[0] is None else tangents[0] * _power_dx(*primals, out),
    None if tangents[1] is None else tangents[1] * _power_dy(*primals, out),
    out,
)
power_p.vjp = lambda g, x, y, *, out: (
    None if _const(x) else unbroadcast(g * _power_dx(x, y, out), x),
    None if _const(y) else unbroadcast(g * _power_dy(x, y, out), y),
)


def _binary(name: str, impl, dx, dy):
    """A binary op from its partial derivatives dx(x, y, out), dy(x, y, out)."""
    p = Primitive(name)
    p.impl = impl
    p.jvp = lambda primals, tangents, *, out: _sum_tangents(
        None if tangents[0] is None else multiply(tangents[0], dx(*primals, out)),
        None if tangents[1] is None else multiply(tangents[1], dy(*primals, out)),
        out,
    )
    p.vjp = lambda g, x, y, *, out: (
        None if _const(x) else unbroadcast(multiply(g, dx(x, y, out)), x),
        None if _const(y) else unbroadcast(multiply(g, dy(x, y, out)), y),
    )
    return p


def _select_first(x, y, strict_first, out):
    """Derivative mask of a max/min-like choice: 1 where x wins, 0.5 on ties (as JAX, PyTorch)."""
    return astype(where(strict_first, 1.0, where(x == y, 0.5, 0.0)), out.dtype)


maximum_p = _binary(
    "maximum",
    np.maximum,
    lambda x, y, out: _select_first(x, y, x > y, out),
    lambda x, y, out: _select_first(y, x, y > x, out),
)
minimum_p = _binary(
    "minimum",
    np.minimum,
    lambda x, y, out: _select_first(x, y, x < y, out),
    lambda x, y, out: _select_first(y, x, y < x, out),
)
# fmax/fmin ignore a NaN argument: the other one gets the whole derivative.
fmax_p = _binary(
    "fmax",
    np.fmax,
    lambda x, y, out: where(isnan(y), 1.0, where(isnan(x), 0.0, _select_first(x, y, x > y, out))),
    lambda x, y, out: where(isnan(x), 1.0, where(isnan(y), 0.0, _select_first(y, x, y > x, out))),
)
fmin_p = _binary(
    "fmin",
    np.fmin,
    lambda x, y, out: where(isnan(y), 1.0, where(isnan(x), 0.0, _select_first(x, y, x < y, out))),
    lambda x, y, out: where(isnan(x), 1.0, where(isnan(y), 0.0, _select_first(y, x, y < x, out))),
)
arctan2_p = _binary(
    "atan2",
    np.arctan2,
    lambda y, x, out: x / (x * x + y * y),
    lambda y, x, out: negative(y) / (x * x + y * y),
)
hypot_p = _binary("hypot", np.hypot, lambda x, y, out: x / out, lambda x, y, out: y / out)
logaddexp_p = _binary(
    "logaddexp", np.logaddexp, lambda x, y, out: exp(x - out), lambda x, y, out: exp(y - out)
)
logaddexp2_p = _binary(
    "logaddexp2", np.logaddexp2, lambda x, y, out: exp2(x - out), lambda x, y, out: exp2(y - out)
)
remainder_p = _binary(
    "remainder", np.remainder, lambda x, y, out: 1.0, lambda x, y, out: negative(floor_divide(x, y))
)
fmod_p = _binary(
    "fmod", np.fmod, lambda x, y, out: 1.0, lambda x, y, out: negative(trunc(divide(x, y)))
)

# ---------------------------------------------------------------------------------------------
# Fused derivative formulas: one pass and no temporaries on large arrays (Numba kernels,
# autodiff/kernels/elementwise.py). Primitives, so that derivatives of derivatives work.

# tanh_backward(g, y) = g * (1 - y*y)
tanh_backward_p = Primitive("tanh_backward")
tanh_backward_p.impl = kernels.tanh_backward
tanh_backward_p.jvp = lambda primals, tangents, *, out: _sum_tangents(
    None if tangents[0] is None else tanh_backward(tangents[0], primals[1]),
    None
    if tangents[1] is None
    else multiply(multiply(multiply(-2.0, primals[0]), primals[1]), tangents[1]),
    out,
)


def _tanh_backward_vjp(ct, g, y, *, out):
    # d/dg = tanh_backward(ct, y); d/dy = -2 ct g y (primitives bound directly, as above)
    ct_g = None if type(g) in _NUMBER else unbroadcast(bind_binary(tanh_backward_p, ct, y), g)
    if type(y) in _NUMBER:
        return ct_g, None
    ct_y = bind_binary(multiply_p, bind_binary(multiply_p, -2.0, ct), g)
    return ct_g, unbroadcast(bind_binary(multiply_p, ct_y, y), y)


tanh_backward_p.vjp = _tanh_backward_vjp

# log1p_backward(g, x) = g / (1 + x); its derivative in x is -out / (1 + x).
log1p_backward_p = Primitive("log1p_backward")
log1p_backward_p.impl = kernels.log1p_backward
log1p_backward_p.jvp = lambda primals, tangents, *, out: _sum_tangents(
    None if tangents[0] is None else log1p_backward(tangents[0], primals[1]),
    None if tangents[1] is None else negative(log1p_backward(out * tangents[1], primals[1])),
    out,
)
log1p_backward_p.vjp = lambda ct, g, x, *, out: (
    None if _const(g) else unbroadcast(log1p_backward(ct, x), g),
    None if _const(x) else unbroadcast(negative(log1p_backward(ct * out, x)), x),
)

# ---------------------------------------------------------------------------------------------
# Selection and casts.


def _where_jvp(primals, tangents, *, out):
    _, tx, ty = tangents
    if tx is None and ty is None:
        return None
    return _tangent_like(
        where(primals[0], 0.0 if tx is None else tx, 0.0 if ty is None else ty), out
    )


where_p = Primitive("where")
where_p.impl = np.where
where_p.jvp = _where_jvp
where_p.vjp = lambda g, c, x, y, *, out: (
    None,
    None if _const(x) else unbroadcast(where(c, g, 0.0), x),
    None if _const(y) else unbroadcast(where(c, 0.0, g), y),
)


def _astype_impl(x, dtype):
    if np.iscomplexobj(x) and not np.issubdtype(dtype, np.complexfloating):
        x = np.real(x)
    return (
        np.asarray(x).astype(dtype, copy=False) if not isinstance(x, np.generic) else dtype.type(x)
    )


astype_p = Primitive("convert_element_type")
astype_p.impl = _astype_impl
astype_p.jvp = lambda primals, tangents, *, out, dtype: astype(tangents[0], dtype)
astype_p.vjp = lambda g, x, *, out, dtype: (astype(g, x.dtype),)

real_p = Primitive("real")
real_p.impl = np.real
real_p.jvp = lambda primals, tangents, *, out: real(tangents[0])
real_p.vjp = lambda g, x, *, out: (astype(g, x.dtype) if np.iscomplexobj(x) else g,)

imag_p = Primitive("imag")
imag_p.impl = np.imag
imag_p.jvp = lambda primals, tangents, *, out: imag(tangents[0])
# Im z = Re(-i z): its transpose sends g to -i g (zero for real inputs).
imag_p.vjp = lambda g, x, *, out: (g * -1j if np.iscomplexobj(x) else None,)

conj_p = Primitive("conj")
conj_p.impl = np.conjugate
conj_p.jvp = lambda primals, tangents, *, out: conj(tangents[0])
conj_p.vjp = lambda g, x, *, out: (conj(g),)

# Linear primitives whose vjp reads only shapes and dtypes: in-place changes to their inputs
# do not invalidate a recorded graph (as in PyTorch).
for _p in (negative_p, add_p, subtract_p, astype_p, real_p, imag_p, conj_p):
    _p.saves_inputs = False
# Rules that read their output only (as torch's saved result), and rules that never read it.
for _p in (exp_p, tanh_p, sqrt_p):
    _p.saves_inputs = False
for _p in (negative_p, add_p, subtract_p, astype_p, real_p, imag_p, conj_p, multiply_p):
    _p.saves_output = False
for _p in (sin_p, cos_p, log_p, log1p_p, square_p, where_p):
    _p.saves_output = False
astype_p.node_name = "ToCopyBackward0"

# ---------------------------------------------------------------------------------------------
# Batch rules: every primitive here maps elementwise (with NumPy broadcasting).

for _p in (astype_p, round_p, stop_gradient_p, real_p, imag_p, conj_p):
    _p.batch = unary_batch_rule(_p)

# ---------------------------------------------------------------------------------------------
# The functions. NumPy names; `autodiff.numpy` re-exports them.


_EXAMPLE_1 = """

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> x = np.array({sample})
        >>> bool(np.allclose(anp.{name}(x), np.{doc}(x), equal_nan=True))
        True
"""
_EXAMPLE_2 = """

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> x1, x2 = np.array([0.25, 0.5]), np.array([1.5, 2.0])
        >>> bool(np.allclose(anp.{name}(x1, x2), np.{doc}(x1, x2), equal_nan=True))
        True
"""
_GRAD_1 = """        >>> ad.grad(lambda x: anp.sum(anp.{name}(x)))(x).shape
        (2,)
"""
_GRAD_2 = """        >>> grads = ad.grad(lambda a, b: anp.sum(anp.{name}(a, b)), (0, 1))(x1, x2)
        >>> [g.shape for g in grads]
        [(2,), (2,)]
"""


def _fn1(p, name, doc):
    def f(x):
        return bind_unary(p, x)

    f.__name__ = f.__qualname__ = name
    example = _EXAMPLE_1 + (_GRAD_1 if p.differentiable else "")
    sample = "[1.25, 1.5]" if name == "arccosh" else "[0.25, 0.5]"  # inside the domain
    f.__doc__ = f"`numpy.{doc}`, differentiable." + example.format(
        name=name, doc=doc, sample=sample
    )
    return f


def _fn2(p, name, doc):
    def f(x1, x2):
        return bind_binary(p, x1, x2)

    f.__name__ = f.__qualname__ = name
    example = _EXAMPLE_2 + (_GRAD_2 if p.differentiable else "")
    f.__doc__ = f"`numpy.{doc}`, differentiable (broadcasting)." + example.format(
        name=name, doc=doc
    )
    return f


# ---------------------------------------------------------------------------------------------
# NumPy vjp rules (Primitive.vjp_numpy) of the most common primitives: the same results as
# their vjp rules above, for plain NumPy residuals and cotangents, without dispatching each
# op inside the rule. Python numbers are constants and get no cotangent, as above.


def _reduce_numpy(g, x):
    """`unbroadcast` for NumPy values: `g` summed to the shape of `x`, in its dtype."""
    try:
        shape, dt = x.shape, x.dtype
        reduce = g.shape != shape
    except AttributeError:  # a list or other array-like operand
        return unbroadcast(g, x)
    if reduce:
        g = _sum_to_shape_impl(g, shape)
    gdt = g.dtype
    if gdt is not dt and gdt != dt and dt.kind in "fc":  # (`is`: the common case, no compare)
        g = _astype_impl(g, dt)
    return g


# The binary rules first try the commonest case of small arrays (a tape of many small ops,
# where these calls are much of a backward pass): operands that are arrays or NumPy scalars
# of g's very dtype (the singleton dtype objects, compared by `is`) and of g's shape, or a
# scalar operand (a 0-d array or NumPy scalar: a parameter) against one of g's shape. Anything
# else takes the general path (`_reduce_numpy`: broadcasting, dtypes, array-likes).
_ARRAYS = frozenset((ndarray, np.float64, np.float32))


def _add_vjp_numpy(g, out, x, y):
    if type(x) in _ARRAYS and type(y) in _ARRAYS and type(g) in _ARRAYS:
        dt, shape = g.dtype, g.shape
        if x.dtype is dt and y.dtype is dt:
            if x.shape == shape:
                if y.shape == shape:
                    return g, g
                if not y.shape:
                    return g, _add_reduce(g, axis=None)
            elif not x.shape and y.shape == shape:
                return _add_reduce(g, axis=None), g
    return (
        None if type(x) in _NUMBER else _reduce_numpy(g, x),
        None if type(y) in _NUMBER else _reduce_numpy(g, y),
    )


def _subtract_vjp_numpy(g, out, x, y):
    # (add's fast path, negated, written out: calling add's rule costs a frame, +0.9% of the
    # instructions of ode's gradient under callgrind)
    if type(x) in _ARRAYS and type(y) in _ARRAYS and type(g) in _ARRAYS:
        dt, shape = g.dtype, g.shape
        if x.dtype is dt and y.dtype is dt:
            if x.shape == shape:
                if y.shape == shape:
                    return g, -g
                if not y.shape:
                    return g, -_add_reduce(g, axis=None)
            elif not x.shape and y.shape == shape:
                return _add_reduce(g, axis=None), -g
    return (
        None if type(x) in _NUMBER else _reduce_numpy(g, x),
        None if type(y) in _NUMBER else _reduce_numpy(-g, y),
    )


def _multiply_vjp_numpy(g, out, x, y):
    tx, ty = type(x), type(y)
    if tx in _ARRAYS and ty in _ARRAYS and type(g) in _ARRAYS and x is not y:
        dt, shape = g.dtype, g.shape
        if x.dtype is dt and y.dtype is dt:
            if x.shape == shape:
                if y.shape == shape:
                    return g * y, g * x
                if not y.shape:
                    return g * y, _add_reduce(g * x, axis=None)
            elif not x.shape and y.shape == shape:
                return _add_reduce(g * y, axis=None), g * x
    elif (tx is float or tx is int) and ty is ndarray and type(g) is ndarray:  # (`0.5 * y`)
        if y.dtype is g.dtype and y.shape == g.shape:
            return None, g * x
    cx, cy = tx in _NUMBER, ty in _NUMBER
    if x is y and not cx:
        ct = _reduce_numpy(g * x, x)
        return ct, ct
    return (
        None if cx else _reduce_numpy(g * y, x),
        None if cy else _reduce_numpy(g * x, y),
    )


def _multiply_vjp_numpy_large(g, out, x, y):
    """`_multiply_vjp_numpy` for a large `g`: products of its shape into recycled memory."""
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER
    if x is y and not cx:
        ct = _reduce_numpy(_product(g, x), x)
        return ct, ct
    return (
        None if cx else _reduce_numpy(_product(g, y), x),
        None if cy else _reduce_numpy(_product(g, x), y),
    )


def _product(g, a):
    """`g * a` for a large array `g` (core/buffers.py: `ufunc_into` checks the operands)."""
    if type(a) is ndarray or type(a) in _NUMBER:
        return buffers.ufunc_into(np.multiply, (g, a))
    return g * a


def _divide_vjp_numpy(g, out, x, y):
    return (
        None if type(x) in _NUMBER else _reduce_numpy(g / y, x),
        None if type(y) in _NUMBER else _reduce_numpy(-(g * out / y), y),
    )


add_p.vjp_numpy = _add_vjp_numpy
subtract_p.vjp_numpy = _subtract_vjp_numpy
multiply_p.vjp_numpy = _multiply_vjp_numpy
multiply_p.vjp_numpy_large = _multiply_vjp_numpy_large
divide_p.vjp_numpy = _divide_vjp_numpy
negative_p.vjp_numpy = lambda g, out, x: (-g,)
sin_p.vjp_numpy = lambda g, out, x: (g * np.cos(x),)
cos_p.vjp_numpy = lambda g, out, x: (g * -np.sin(x),)
exp_p.vjp_numpy = lambda g, out, x: (g * out,)
log_p.vjp_numpy = lambda g, out, x: (g * np.reciprocal(x),)
sqrt_p.vjp_numpy = lambda g, out, x: (g * (0.5 / out),)
square_p.vjp_numpy = lambda g, out, x: (g * (2.0 * x),)
tanh_p.vjp_numpy = lambda g, out, x: (kernels.tanh_backward(g, out),)
log1p_p.vjp_numpy = lambda g, out, x: (kernels.log1p_backward(g, x),)
exp2_p.vjp_numpy = lambda g, out, x: (g * (out * _LN2),)
expm1_p.vjp_numpy = lambda g, out, x: (g * (out + 1.0),)
reciprocal_p.vjp_numpy = lambda g, out, x: (g * -(out * out),)
tan_p.vjp_numpy = lambda g, out, x: (g * (1.0 + out * out),)
arctan_p.vjp_numpy = lambda g, out, x: (g * np.reciprocal(1.0 + x * x),)


# Their donated forms (Primitive.vjp_numpy_donated): the engine passes a cotangent nothing
# else refers to, so the result is written into it: the same operations in the same order
# (bitwise the same result) and one large array less to allocate and fault in.


def _into(ufunc, g, a):
    """`ufunc(g, a)`, written into the donated `g` when the result has g's dtype (`a` may be
    a Python number, a NumPy value or any array-like operand of the op)."""
    if type(a) in _NUMBER or (isinstance(a, (ndarray, np.generic)) and a.dtype == g.dtype):
        return ufunc(g, a, out=g)
    return ufunc(g, a)


def _multiply_vjp_numpy_donated(g, out, x, y):
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER
    if x is y and not cx:
        ct = _reduce_numpy(_into(np.multiply, g, x), x)
        return ct, ct
    ct_x = None if cx else _reduce_numpy(_product(g, y) if not cy else _into(np.multiply, g, y), x)
    return ct_x, None if cy else _reduce_numpy(_into(np.multiply, g, x), y)


def _divide_vjp_numpy_donated(g, out, x, y):
    ct_y = None if type(y) in _NUMBER else _reduce_numpy(-(g * out / y), y)
    return None if type(x) in _NUMBER else _reduce_numpy(_into(np.divide, g, y), x), ct_y


multiply_p.vjp_numpy_donated = _multiply_vjp_numpy_donated
divide_p.vjp_numpy_donated = _divide_vjp_numpy_donated
negative_p.vjp_numpy_donated = lambda g, out, x: (np.negative(g, out=g),)
sin_p.vjp_numpy_donated = lambda g, out, x: (_into(np.multiply, g, np.cos(x)),)
cos_p.vjp_numpy_donated = lambda g, out, x: (_into(np.multiply, g, -np.sin(x)),)
exp_p.vjp_numpy_donated = lambda g, out, x: (_into(np.multiply, g, out),)
log_p.vjp_numpy_donated = lambda g, out, x: (_into(np.multiply, g, np.reciprocal(x)),)
sqrt_p.vjp_numpy_donated = lambda g, out, x: (_into(np.multiply, g, 0.5 / out),)
square_p.vjp_numpy_donated = lambda g, out, x: (_into(np.multiply, g, 2.0 * x),)
tanh_p.vjp_numpy_donated = lambda g, out, x: (kernels.tanh_backward(g, out, into=g),)
log1p_p.vjp_numpy_donated = lambda g, out, x: (kernels.log1p_backward(g, x, into=g),)

# Their fused forms (Primitive.vjp_fused): the same arithmetic, lazily, so that a large
# backward pass computes whole chains of these rules, and the sums of their results, in one
# pass over memory (kernels/fused.py). Transcendental factors (cos for sin) are computed at
# once by NumPy. A cotangent going to two parents is `lazy.shared`.


def _add_vjp_fused(g, out, x, y):
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER
    if not (cx or cy):
        g = lazy.shared(g)
    return None if cx else g, None if cy else g


def _subtract_vjp_fused(g, out, x, y):
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER
    if not (cx or cy):
        g = lazy.shared(g)
    return None if cx else g, None if cy else lazy.negative(g)


def _multiply_vjp_fused(g, out, x, y):
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER
    if x is y and not cx:
        ct = lazy.multiply(g, x)
        return ct, ct
    if not (cx or cy):
        g = lazy.shared(g)
    return None if cx else lazy.multiply(g, y), None if cy else lazy.multiply(g, x)


def _divide_vjp_fused(g, out, x, y):
    cx, cy = type(x) in _NUMBER, type(y) in _NUMBER
    if not (cx or cy):
        g = lazy.shared(g)
    return (
        None if cx else lazy.divide(g, y),
        None if cy else lazy.negative(lazy.divide(lazy.multiply(g, out), y)),
    )


def _pooled(ufunc, x):
    """`ufunc(x)` for a large array `x`, into recycled memory when there is some."""
    return buffers.ufunc_into(ufunc, (x,))


add_p.vjp_fused = _add_vjp_fused
subtract_p.vjp_fused = _subtract_vjp_fused
multiply_p.vjp_fused = _multiply_vjp_fused
divide_p.vjp_fused = _divide_vjp_fused
negative_p.vjp_fused = lambda g, out, x: (lazy.negative(g),)
sin_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, _pooled(np.cos, x)),)
cos_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.negative(_pooled(np.sin, x))),)
exp_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, out),)
exp2_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.multiply(out, _LN2)),)
expm1_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.add(out, 1.0)),)
log_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.divide(1.0, x)),)
sqrt_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.divide(0.5, out)),)
square_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.multiply(2.0, x)),)
reciprocal_p.vjp_fused = lambda g, out, x: (
    lazy.multiply(g, lazy.negative(lazy.multiply(out, out))),
)
tan_p.vjp_fused = lambda g, out, x: (lazy.multiply(g, lazy.add(1.0, lazy.multiply(out, out))),)
arctan_p.vjp_fused = lambda g, out, x: (
    lazy.multiply(g, lazy.divide(1.0, lazy.add(1.0, lazy.multiply(x, x)))),
)
tanh_p.vjp_fused = lambda g, out, x: (
    lazy.multiply(g, lazy.subtract(1.0, lazy.multiply(out, out))),
)
log1p_p.vjp_fused = lambda g, out, x: (lazy.divide(g, lazy.add(1.0, x)),)

# Ufuncs whose result has the shape and float dtype of same-shaped float arguments: recorded
# on large arrays, they write into memory the backward pass recycled (core/buffers.py).
for _p in (
    negative_p, exp_p, exp2_p, expm1_p, log_p, log2_p, log10_p, log1p_p, sqrt_p, cbrt_p,
    square_p, reciprocal_p, sin_p, cos_p, tan_p, arcsin_p, arccos_p, arctan_p, sinh_p, cosh_p,
    tanh_p, arcsinh_p, arccosh_p, arctanh_p, add_p, subtract_p, multiply_p, divide_p,
):  # fmt: skip
    _p.pooled_ufunc = _p.impl
del _p


UNARY = {
    "negative": negative_p,
    "exp": exp_p,
    "exp2": exp2_p,
    "expm1": expm1_p,
    "log": log_p,
    "log2": log2_p,
    "log10": log10_p,
    "log1p": log1p_p,
    "sqrt": sqrt_p,
    "cbrt": cbrt_p,
    "square": square_p,
    "reciprocal": reciprocal_p,
    "sin": sin_p,
    "cos": cos_p,
    "tan": tan_p,
    "arcsin": arcsin_p,
    "arccos": arccos_p,
    "arctan": arctan_p,
    "sinh": sinh_p,
    "cosh": cosh_p,
    "tanh": tanh_p,
    "arcsinh": arcsinh_p,
    "arccosh": arccosh_p,
    "arctanh": arctanh_p,
    "absolute": abs_p,
    "sign": sign_p,
    "floor": floor_p,
    "ceil": ceil_p,
    "trunc": trunc_p,
    "rint": rint_p,
    "isnan": isnan_p,
    "isinf": isinf_p,
    "isfinite": isfinite_p,
    "logical_not": logical_not_p,
    "signbit": signbit_p,
    "real": real_p,
    "imag": imag_p,
    "conjugate": conj_p,
}
BINARY = {
    "add": add_p,
    "subtract": subtract_p,
    "multiply": multiply_p,
    "divide": divide_p,
    "power": power_p,
    "maximum": maximum_p,
    "minimum": minimum_p,
    "fmax": fmax_p,
    "fmin": fmin_p,
    "arctan2": arctan2_p,
    "hypot": hypot_p,
    "logaddexp": logaddexp_p,
    "logaddexp2": logaddexp2_p,
    "remainder": remainder_p,
    "fmod": fmod_p,
    "floor_divide": floor_divide_p,
    "equal": equal_p,
    "not_equal": not_equal_p,
    "less": less_p,
    "less_equal": less_equal_p,
    "greater": greater_p,
    "greater_equal": greater_equal_p,
    "logical_and": logical_and_p,
    "logical_or": logical_or_p,
    "logical_xor": logical_xor_p,
}

negative = _fn1(negative_p, "negative", "negative")
exp = _fn1(exp_p, "exp", "exp")
exp2 = _fn1(exp2_p, "exp2", "exp2")
log = _fn1(log_p, "log", "log")
sqrt = _fn1(sqrt_p, "sqrt", "sqrt")
reciprocal = _fn1(reciprocal_p, "reciprocal", "reciprocal")
sin = _fn1(sin_p, "sin", "sin")
cos = _fn1(cos_p, "cos", "cos")
sinh = _fn1(sinh_p, "sinh", "sinh")
cosh = _fn1(cosh_p, "cosh", "cosh")
sign = _fn1(sign_p, "sign", "sign")
trunc = _fn1(trunc_p, "trunc", "trunc")
isnan = _fn1(isnan_p, "isnan", "isnan")
signbit = _fn1(signbit_p, "signbit", "signbit")
real = _fn1(real_p, "real", "real")
imag = _fn1(imag_p, "imag", "imag")
conj = _fn1(conj_p, "conj", "conjugate")
add = _fn2(add_p, "add", "add")
multiply = _fn2(multiply_p, "multiply", "multiply")
divide = _fn2(divide_p, "divide", "divide")
power = _fn2(power_p, "power", "power")
floor_divide = _fn2(floor_divide_p, "floor_divide", "floor_divide")


def tanh_backward(g, y):
    """`g * (1 - y*y)`: the derivative of tanh at output `y` applied to `g`, in one pass.

    Example:
        >>> import numpy as np
        >>> tanh_backward(np.array([2.0, 2.0]), np.array([0.0, 0.5]))
        array([2. , 1.5])
    """
    return bind_binary(tanh_backward_p, g, y)


def log1p_backward(g, x):
    """`g / (1 + x)`: the derivative of log1p at `x` applied to `g`, in one pass.

    Example:
        >>> import numpy as np
        >>> log1p_backward(np.array([2.0, 2.0]), np.array([0.0, 3.0]))
        array([2. , 0.5])
    """
    return bind(log1p_backward_p, g, x)


for _p in UNARY.values():
    _p.batch = _p.batch or unary_batch_rule(_p)
for _p in (*BINARY.values(), where_p, tanh_backward_p, log1p_backward_p):
    _p.batch = broadcasting_batch_rule(_p)

FUNCTIONS = {name: _fn1(p, name, name) for name, p in UNARY.items()}
FUNCTIONS.update({name: _fn2(p, name, name) for name, p in BINARY.items()})


def where(condition, x, y):
    """`numpy.where(condition, x, y)`, differentiable in `x` and `y`.

    Example:
        >>> import numpy as np
        >>> where(np.array([True, False]), np.array([1.0, 2.0]), 0.0)
        array([1., 0.])
    """
    return bind(where_p, condition, x, y)


def astype(x, dtype):
    """Cast `x` to `dtype`; casting to a non-float dtype gives a constant (no derivative)."""
    dtype = np.dtype(dtype)
    if getattr(x, "dtype", None) == dtype:
        return x
    if not is_inexact(dtype):
        x = bind(stop_gradient_p, x)
    return bind(astype_p, x, dtype=dtype)


def conj_complex(x):
    """`conj(x)` for complex values, `x` itself otherwise.

    Rules follow the bilinear (JAX) convention: each vjp is the plain transpose of
    its jvp. User-facing reverse mode follows PyTorch's conjugate convention, which
    for any real-linear map is `conj(vjp(conj(ct)))`: the API boundary applies this.
    """
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return conj(x)
    return x


def stop_gradient(x):
    """The identity, with a zero derivative at every level.

    Example:
        >>> import autodiff as ad
        >>> float(ad.grad(lambda x: x * ad.stop_gradient(x))(3.0))
        3.0
    """
    return bind(stop_gradient_p, x)


def clip(a, a_min=None, a_max=None):
    """`numpy.clip`; the derivative passes to `a` inside [a_min, a_max], bounds included."""
    if a_min is None and a_max is None:
        raise ValueError("One of max or min must be given")
    out = a
    if a_min is not None:
        out = where(bind(less_p, a, a_min), a_min, out)
    if a_max is not None:
        out = where(bind(greater_p, a, a_max), a_max, out)
    return out


def round(a, decimals: int = 0):  # noqa: A001 - NumPy's name
    """`numpy.round`: a constant (zero derivative)."""
    return bind(round_p, a, decimals=decimals)
