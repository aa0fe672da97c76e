"""Elementwise primitives: arithmetic, exp/log, trig and hyperbolic, comparisons, where, casts.

Each primitive's impl is a NumPy ufunc (NumPy broadcasting and NEP 50 dtype rules apply as
they are), except the fused derivative formulas `tanh_backward` and `log1p_backward`, whose
impls run a Numba kernel on large arrays.

A differentiable elementwise primitive is its derivative formulas, one per operand: `g`
times the partial derivative of the output in that operand, as an expression of `g`, the
operands `x` (and `y`) and the output `out` — `"g * cos(x)"` for sin. ops/formulas.py
compiles each into every rule: the jvp and vjp with autodiff's functions, and the NumPy and
lazy forms the backward engine runs on plain arrays (bitwise the same results). Binary rules
reduce cotangents to each operand's shape and dtype (`unbroadcast`); Python-number operands
are constants and get no cotangent at all.
"""

from __future__ import annotations

import functools
import operator
from functools import partial

import numpy as np

from autodiff.core import buffers
from autodiff.core.abstract import ShapedArray, all_weak, result_type, same_aval, ufunc_operand
from autodiff.core.dtypes import dtype_of, is_inexact, number_as
from autodiff.core.primitive import Primitive, bind, bind_binary, bind_unary
from autodiff.core.tensor import SHAPE_OF_VALUE
from autodiff.kernels import elementwise as kernels
from autodiff.kernels import fused
from autodiff.ops.formulas import FORMS, Formulas, binary_rule, unary_rule
from autodiff.ops.sparsity import LINEAR_ELEMENTWISE, MULTIPLY, WHERE, elementwise, selection
from autodiff.ops.structural import (
    _add_reduce,
    _sum_to_shape_impl,
    broadcast_to,
    broadcasting_batch_rule,
    shape_of,
    sum_to_shape,
    unary_batch_rule,
)

_NUMBER = frozenset((int, float, complex, bool))


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


def unbroadcast_numpy(g, x):
    """`unbroadcast` for NumPy values: `g` summed to the shape of `x`, in its dtype."""
    try:
        shape, dt = x.shape, x.dtype
        reduce = g.shape != shape
    except AttributeError:  # a list or other array-like operand
        return unbroadcast(g, x)
    if reduce:
        g = _sum_to_shape_impl(g, shape)
    gdt = g.dtype
    if gdt is not dt and gdt != dt and is_inexact(dt):  # (`is`: the common case, no compare)
        g = _astype_impl(g, dt)
    return g


def cotangent_of(ct, x):
    """Cotangent `ct` reduced to the shape and dtype of primal `x` (`unbroadcast`); None for a
    symbolic zero and for integer and bool primals, which are constants."""
    if ct is None or not is_inexact(dtype_of(x)):
        return None
    return unbroadcast(ct, x)


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
# Shapes and dtypes: NumPy's own broadcasting and ufunc type resolution (NEP 50 included).


def ufunc_abstract_eval(ufunc):
    """The abstract_eval of a primitive whose impl is `ufunc` (or computes as it does).
    Results are remembered per operand types (staging asks for the same ones again and
    again: NumPy's resolution costs ~20 us a call)."""

    @functools.lru_cache(maxsize=1024)
    def abstract_eval(*avals):
        shape = np.broadcast_shapes(*[a.shape for a in avals])
        dtype = ufunc.resolve_dtypes((*[ufunc_operand(a) for a in avals], None))[-1]
        return ShapedArray(shape, dtype, weak_type=dtype.kind != "b" and all_weak(*avals))

    return abstract_eval


def _real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a value's real part (a complex dtype's component, else itself)."""
    return np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype


# ---------------------------------------------------------------------------------------------
# Elementwise primitives from their derivative formulas (ops/formulas.py).

# The names formulas see, filled at the end of the module (once the functions exist).
FORMULAS = Formulas()


def _elementwise(name: str, impl, make_rule, batch_rule) -> Primitive:
    p = Primitive(name)
    p.impl = impl
    _rules_on_first_use(p, make_rule)
    p.batch = batch_rule(p)
    if isinstance(impl, np.ufunc):
        p.abstract_eval = ufunc_abstract_eval(impl)
        p.fast.pooled_ufunc = impl  # (float ufuncs: same-shaped float operands give their dtype)
    return p


def _rules_on_first_use(p: Primitive, make_rule) -> None:
    """Give `p` each form of its rules (formulas.FORMS) compiled from its formulas the first
    time that form is called (compiling every primitive's at import would make `import
    autodiff` 0.1 s slower, and a first call compile forms it does not use).
    `make_rule(form, sibling)` compiles one form; `sibling(form)` gives another, compiled once."""
    compiled: dict = {}

    def rule(form: str):
        f = compiled.get(form)
        if f is None:
            f = compiled[form] = make_rule(form, rule)
            _set_rule(p, form, f)
        return f

    for form in FORMS:
        _set_rule(p, form, partial(_first_call, rule, form))


def _first_call(rule, form: str, *args, **kwargs):
    return rule(form)(*args, **kwargs)


def _set_rule(p: Primitive, form: str, f) -> None:
    if form == "jvp":
        p.jvp = f
    elif form == "vjp":
        p.vjp = f
    elif form == "numpy_vjp":
        p.fast.vjp = f
    else:
        p.fast.fused_vjp = f


def unary(name: str, impl, d: str) -> Primitive:
    """A differentiable elementwise primitive of one operand `x`: `impl` (a NumPy ufunc), and
    `d`, the formula of `g` times d out / d x (see ops/formulas.py)."""
    make_rule = partial(unary_rule, name, d, FORMULAS)
    p = _elementwise(name, impl, make_rule, unary_batch_rule)
    p.sparsity = elementwise()  # (x with itself to second order)
    return p


def binary(name: str, impl, dx: str, dy: str, *, symmetric: bool = False) -> Primitive:
    """A differentiable elementwise primitive of two broadcasting operands `x` and `y`: `impl`
    (a NumPy ufunc), and `dx`, `dy`, the formulas of `g` times the partial derivatives in `x`
    and in `y` (see ops/formulas.py). `symmetric`: `dy` is `dx` with the operands swapped."""
    make_rule = partial(binary_rule, name, dx, dy, FORMULAS, symmetric)
    p = _elementwise(name, impl, make_rule, broadcasting_batch_rule)
    p.sparsity = elementwise("all")  # (every pair of operands, unless said otherwise)
    return p


def _factor(name: str, deriv) -> str:
    """A derivative factor `deriv(*operands, out)` written with autodiff's functions, as a
    name formulas can call (computed with those functions in every namespace)."""
    FORMULAS.define(name, ad=deriv, numpy=deriv, lazy=_now(deriv))
    return name


def _unary(name: str, impl, deriv) -> Primitive:
    """`unary` from a derivative factor `deriv(x, out)` (see `_factor`)."""
    return unary(name, impl, f"g * {_factor(f'd_{name}', deriv)}(x, out)")


def _binary(name: str, impl, dx, dy) -> Primitive:
    """`binary` from derivative factors `dx(x, y, out)`, `dy(x, y, out)` (see `_factor`)."""
    fx, fy = _factor(f"dx_{name}", dx), _factor(f"dy_{name}", dy)
    return binary(name, impl, f"g * {fx}(x, y, out)", f"g * {fy}(x, y, out)")


def nondiff(name: str, impl, *, batch_rule=unary_batch_rule) -> Primitive:
    """A primitive whose derivative is zero wherever it has one (comparisons, rounding, ...):
    its results are constants under every transform."""
    p = Primitive(name, differentiable=False)
    p.impl = impl
    if isinstance(impl, np.ufunc):
        p.abstract_eval = ufunc_abstract_eval(impl)
    p.batch = batch_rule(p)
    return p


# ---------------------------------------------------------------------------------------------
# Unary primitives: each derivative formula, `g` times d out / d x.

_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))

# Negation, exponentials and logarithms
negative_p = unary("negative", np.negative, "-g")
negative_p.sparsity = LINEAR_ELEMENTWISE
exp_p = unary("exp", np.exp, "g * out")
exp2_p = unary("exp2", np.exp2, "g * (out * LN2)")
expm1_p = unary("expm1", np.expm1, "g * (out + 1.0)")

log_p = unary("log", np.log, "g * reciprocal(x)")
log2_p = unary("log2", np.log2, "g * reciprocal(x * LN2)")
log10_p = unary("log10", np.log10, "g * reciprocal(x * LN10)")
log1p_p = unary("log1p", np.log1p, "log1p_backward(g, x)")

# Powers and roots
sqrt_p = unary("sqrt", np.sqrt, "g * (0.5 / out)")
cbrt_p = unary("cbrt", np.cbrt, "g * reciprocal(3.0 * out * out)")
square_p = unary("square", np.square, "g * (2.0 * x)")
reciprocal_p = unary("reciprocal", np.reciprocal, "g * -(out * out)")

# Circular functions and their inverses
sin_p = unary("sin", np.sin, "g * cos(x)")
cos_p = unary("cos", np.cos, "g * -sin(x)")
tan_p = unary("tan", np.tan, "g * (1.0 + out * out)")

arcsin_p = unary("arcsin", np.arcsin, "g * reciprocal(sqrt(1.0 - x * x))")
arccos_p = unary("arccos", np.arccos, "g * -reciprocal(sqrt(1.0 - x * x))")
arctan_p = unary("arctan", np.arctan, "g * reciprocal(1.0 + x * x)")

# Hyperbolic functions and their inverses
sinh_p = unary("sinh", np.sinh, "g * cosh(x)")
cosh_p = unary("cosh", np.cosh, "g * sinh(x)")
tanh_p = unary("tanh", np.tanh, "tanh_backward(g, out)")

arcsinh_p = unary("arcsinh", np.arcsinh, "g * reciprocal(sqrt(x * x + 1.0))")
arccosh_p = unary("arccosh", np.arccosh, "g * reciprocal(sqrt(x * x - 1.0))")
arctanh_p = unary("arctanh", np.arctanh, "g * reciprocal(1.0 - x * x)")

# abs: derivative sign(x), 0 at the origin (the subgradient JAX and PyTorch use). For complex
# z, d|z| = Re(conj(sgn z) dz), not a product with dz: its jvp and vjp are written apart.
abs_p = Primitive("absolute")
abs_p.impl = np.abs
abs_p.abstract_eval = ufunc_abstract_eval(np.abs)
abs_p.sparsity = LINEAR_ELEMENTWISE  # (its second derivative: zero almost everywhere)


def _conj_sgn(x, out):
    """conj(z / |z|), 0 at the origin; differentiable (sign is constant pieces only for reals)."""
    safe = where(out == 0, 1.0, out)
    return where(out == 0, 0.0, conj(x) / safe)


abs_p.jvp = lambda primals, tangents, *, out: (
    real(_conj_sgn(primals[0], out) * tangents[0])
    if np.iscomplexobj(primals[0])
    else tangents[0] * sign(primals[0])
)
# (the transpose of the jvp: g * conj(sgn z); real x: g * sign x)
abs_p.vjp = lambda g, x, *, out: ((g * _conj_sgn(x, out) if np.iscomplexobj(x) else g * sign(x)),)
abs_p.batch = unary_batch_rule(abs_p)

# Piecewise-constant functions: zero derivative everywhere they have one.
sign_p = nondiff("sign", np.sign)
floor_p = nondiff("floor", np.floor)
ceil_p = nondiff("ceil", np.ceil)
trunc_p = nondiff("trunc", np.trunc)
rint_p = nondiff("rint", np.rint)
round_p = nondiff("round", lambda x, decimals: np.round(x, decimals))
round_p.abstract_eval = same_aval
stop_gradient_p = nondiff("stop_gradient", lambda x: x)
stop_gradient_p.abstract_eval = same_aval
isnan_p = nondiff("isnan", np.isnan)
isinf_p = nondiff("isinf", np.isinf)
isfinite_p = nondiff("isfinite", np.isfinite)
logical_not_p = nondiff("logical_not", np.logical_not)
signbit_p = nondiff("signbit", np.signbit)

_broadcasting = broadcasting_batch_rule
floor_divide_p = nondiff("floor_divide", np.floor_divide, batch_rule=_broadcasting)
equal_p = nondiff("equal", np.equal, batch_rule=_broadcasting)
not_equal_p = nondiff("not_equal", np.not_equal, batch_rule=_broadcasting)
less_p = nondiff("less", np.less, batch_rule=_broadcasting)
less_equal_p = nondiff("less_equal", np.less_equal, batch_rule=_broadcasting)
greater_p = nondiff("greater", np.greater, batch_rule=_broadcasting)
greater_equal_p = nondiff("greater_equal", np.greater_equal, batch_rule=_broadcasting)
logical_and_p = nondiff("logical_and", np.logical_and, batch_rule=_broadcasting)
logical_or_p = nondiff("logical_or", np.logical_or, batch_rule=_broadcasting)
logical_xor_p = nondiff("logical_xor", np.logical_xor, batch_rule=_broadcasting)

# ---------------------------------------------------------------------------------------------
# Binary primitives.

add_p = binary("add", np.add, "g", "g")
subtract_p = binary("subtract", np.subtract, "g", "-g")
multiply_p = binary("multiply", np.multiply, "g * y", "g * x", symmetric=True)
divide_p = binary("divide", np.true_divide, "g / y", "-(g * out / y)")
for _p in (add_p, subtract_p):
    _p.sparsity = LINEAR_ELEMENTWISE
multiply_p.sparsity = MULTIPLY
divide_p.sparsity = elementwise(((0, 1), (1, 1)))
# Python's scalar operators on NumPy scalars (Primitive.fast.scalar_impl).
for _p, _op in (
    (add_p, operator.add),
    (subtract_p, operator.sub),
    (multiply_p, operator.mul),
    (divide_p, operator.truediv),
):
    _p.fast.scalar_impl = _op


# (power_dx, power_dy and chosen: helpers of the formulas, defined at the end of the module)
power_p = binary("power", np.power, "g * power_dx(x, y)", "g * power_dy(x, out)")


def _selection(name: str, impl, chooser: str, op: str) -> Primitive:
    """A primitive that returns the operand `x op y` selects: the derivative goes to that
    operand; `chooser` (a formula helper) says how ties and NaNs split it."""
    dx = f"g * {chooser}(x, y, x {op} y, out)"
    p = binary(name, impl, dx, f"g * {chooser}(y, x, y {op} x, out)")
    p.sparsity = selection(np.greater if op == ">" else np.less)
    return p


# maximum & co: the derivative goes to the chosen operand, half to each on ties; fmax and
# fmin ignore a NaN operand: the other one gets the whole derivative.
maximum_p = _selection("maximum", np.maximum, "chosen", ">")
minimum_p = _selection("minimum", np.minimum, "chosen", "<")
fmax_p = _selection("fmax", np.fmax, "chosen_unless_nan", ">")
fmin_p = _selection("fmin", np.fmin, "chosen_unless_nan", "<")
arctan2_p = binary(  # arctan2(x, y) is the angle of the point (y, x)
    "arctan2",
    np.arctan2,
    "g * (y / (y * y + x * x))",
    "g * (-x / (y * y + x * x))",
)
hypot_p = binary("hypot", np.hypot, "g * (x / out)", "g * (y / out)")
logaddexp_p = binary("logaddexp", np.logaddexp, "g * exp(x - out)", "g * exp(y - out)")
logaddexp2_p = binary("logaddexp2", np.logaddexp2, "g * exp2(x - out)", "g * exp2(y - out)")
remainder_p = binary("remainder", np.remainder, "g * 1.0", "g * -floor_divide(x, y)")
fmod_p = binary("fmod", np.fmod, "g * 1.0", "g * -trunc(x / y)")

# ---------------------------------------------------------------------------------------------
# Fused derivative formulas: one pass and no temporaries on large arrays (Numba kernels,
# autodiff/kernels/elementwise.py). Primitives, so that derivatives of derivatives work.

# tanh_backward(g, y) = g * (1 - y*y): d/dg = tanh_backward(ct, y), d/dy = -2 ct g y.
# (In the formulas, `g` is the cotangent, `x` and `y` the operands.)
tanh_backward_p = binary(
    "tanh_backward", kernels.tanh_backward, "tanh_backward(g, y)", "-2.0 * g * x * y"
)
# log1p_backward(g, x) = g / (1 + x): d/dg = log1p_backward(ct, x), d/dx = -ct out / (1 + x).
log1p_backward_p = binary(
    "log1p_backward",
    kernels.log1p_backward,
    "log1p_backward(g, y)",
    "-log1p_backward(g * out, y)",
)
for _p in (tanh_backward_p, log1p_backward_p):
    _p.abstract_eval = ufunc_abstract_eval(np.multiply)  # (`g * ...` in g's and x's dtypes)

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
where_p.impl = lambda c, x, y: np.where(c, number_as(x, y), y)
where_p.abstract_eval = lambda c, x, y: ShapedArray(
    np.broadcast_shapes(c.shape, x.shape, y.shape), result_type(x, y), all_weak(x, y)
)
where_p.jvp = _where_jvp
where_p.sparsity = WHERE
where_p.vjp = lambda g, c, x, y, *, out: (
    None,
    None if type(x) in _NUMBER else unbroadcast(where(c, g, 0.0), x),
    None if type(y) in _NUMBER else unbroadcast(where(c, 0.0, g), y),
)
where_p.batch = broadcasting_batch_rule(where_p)


def _astype_impl(x, dtype):
    if np.iscomplexobj(x) and not np.issubdtype(dtype, np.complexfloating):
        x = np.real(x)
    return (
        np.asarray(x).astype(dtype, copy=False) if not isinstance(x, np.generic) else dtype.type(x)
    )


astype_p = Primitive("astype")
astype_p.impl = _astype_impl
astype_p.abstract_eval = lambda x, *, dtype: ShapedArray(x.shape, dtype)
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
for _p in (real_p, imag_p):
    _p.abstract_eval = lambda x: ShapedArray(x.shape, _real_dtype(x.dtype), x.weak_type)

conj_p = Primitive("conj")
conj_p.impl = np.conjugate
conj_p.abstract_eval = ufunc_abstract_eval(np.conjugate)
conj_p.jvp = lambda primals, tangents, *, out: conj(tangents[0])
conj_p.vjp = lambda g, x, *, out: (conj(g),)
for _p in (astype_p, real_p, imag_p, conj_p):
    _p.batch = unary_batch_rule(_p)
    _p.sparsity = LINEAR_ELEMENTWISE
imag_p.sparsity = elementwise((), exact=False)  # (the imaginary part of a real x is 0)

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

FUNCTIONS = {name: _fn1(p, name, name) for name, p in UNARY.items()}
FUNCTIONS.update({name: _fn2(p, name, name) for name, p in BINARY.items()})
# The functions the rules below and other modules call by name.
negative = FUNCTIONS["negative"]
exp = FUNCTIONS["exp"]
exp2 = FUNCTIONS["exp2"]
log = FUNCTIONS["log"]
log1p = FUNCTIONS["log1p"]
log10 = FUNCTIONS["log10"]
sqrt = FUNCTIONS["sqrt"]
reciprocal = FUNCTIONS["reciprocal"]
sin = FUNCTIONS["sin"]
cos = FUNCTIONS["cos"]
sinh = FUNCTIONS["sinh"]
cosh = FUNCTIONS["cosh"]
sign = FUNCTIONS["sign"]
trunc = FUNCTIONS["trunc"]
floor = FUNCTIONS["floor"]
isnan = FUNCTIONS["isnan"]
signbit = FUNCTIONS["signbit"]
real = FUNCTIONS["real"]
imag = FUNCTIONS["imag"]
conj = _fn1(conj_p, "conj", "conjugate")
add = FUNCTIONS["add"]
subtract = FUNCTIONS["subtract"]
multiply = FUNCTIONS["multiply"]
divide = FUNCTIONS["divide"]
power = FUNCTIONS["power"]
floor_divide = FUNCTIONS["floor_divide"]
equal = FUNCTIONS["equal"]
greater = FUNCTIONS["greater"]
less = FUNCTIONS["less"]


def tanh_backward(g, y):
    """`g * (1 - y*y)`: the derivative of tanh at output `y` applied to `g`, in one pass.

    Example:
        >>> import numpy as np
        >>> tanh_backward(np.array([2.0, 2.0]), np.array([0.0, 0.5]))
        array([2. , 1.5])
    """
    return bind_binary(tanh_backward_p, g, y)


def log1p_backward(g, x):
    """`g / (1 + x)`, the derivative of log1p at `x` applied to `g`, in one pass (as
    `tanh_backward`: log1p_backward([2, 2], [0, 3]) is [2, 0.5])."""
    return bind_binary(log1p_backward_p, g, x)


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
    its jvp, and so do the functional transforms (grad, vjp, jacrev, custom_vjp). The
    torch face (`.grad`, autograd.grad, hooks, Function.backward) follows PyTorch's
    conjugate convention, which for any real-linear map is `conj(vjp(conj(ct)))`: its
    API boundary applies this.
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


def round(a, decimals: int = 0):
    """`numpy.round`: a constant (zero derivative)."""
    return bind(round_p, a, decimals=decimals)


# ---------------------------------------------------------------------------------------------
# What the formulas compute with (ops/formulas.py): autodiff's functions for the jvp and vjp
# rules; NumPy for plain arrays (Python's operators are NumPy's ufuncs on arrays and its fast
# scalar math on NumPy scalars: what `bind` runs on plain values, without its dispatch); lazy
# arithmetic for large arrays (kernels/fused.py), NumPy computing the transcendental
# functions (faster than any loop of ours), comparisons and selections at once.


def _now(function, pooled: bool = False):
    """`function` computed at once, on its operands' values (a lazy one is evaluated first);
    with `pooled`, a float ufunc's result goes into recycled memory (core/buffers.py)."""
    if pooled:
        return lambda *args: buffers.ufunc_into(function, tuple(map(fused.materialize, args)))
    return lambda *args: function(*map(fused.materialize, args))


for _name, _p, _numpy, _lazy in (
    ("add", add_p, operator.add, fused.add),
    ("sub", subtract_p, operator.sub, fused.subtract),
    ("mul", multiply_p, operator.mul, fused.multiply),
    ("div", divide_p, operator.truediv, fused.divide),
    ("power", power_p, np.power, _now(np.power, pooled=True)),
    ("floor_divide", floor_divide_p, np.floor_divide, _now(np.floor_divide, pooled=True)),
    ("greater", greater_p, operator.gt, _now(np.greater)),
    ("less", less_p, operator.lt, _now(np.less)),
    ("equal", equal_p, operator.eq, _now(np.equal)),
):  # (the AD functions bind directly: a partial calls no Python function of its own)
    FORMULAS.define(_name, ad=partial(bind_binary, _p), numpy=_numpy, lazy=_lazy)
for _name, _p, _numpy, _lazy in (
    ("neg", negative_p, operator.neg, fused.negative),
    ("reciprocal", reciprocal_p, np.reciprocal, lambda x: fused.divide(1.0, x)),  # (IEEE: the same)
    ("sqrt", sqrt_p, np.sqrt, _now(np.sqrt, pooled=True)),
    ("exp", exp_p, np.exp, _now(np.exp, pooled=True)),
    ("exp2", exp2_p, np.exp2, _now(np.exp2, pooled=True)),
    ("log", log_p, np.log, _now(np.log, pooled=True)),
    ("sin", sin_p, np.sin, _now(np.sin, pooled=True)),
    ("cos", cos_p, np.cos, _now(np.cos, pooled=True)),
    ("sinh", sinh_p, np.sinh, _now(np.sinh, pooled=True)),
    ("cosh", cosh_p, np.cosh, _now(np.cosh, pooled=True)),
    ("trunc", trunc_p, np.trunc, _now(np.trunc, pooled=True)),
    ("isnan", isnan_p, np.isnan, _now(np.isnan)),
):
    FORMULAS.define(_name, ad=partial(bind_unary, _p), numpy=_numpy, lazy=_lazy)
FORMULAS.define("where", ad=where, numpy=np.where, lazy=_now(np.where))
FORMULAS.define("astype", ad=astype, numpy=_astype_impl, lazy=_now(_astype_impl))
FORMULAS.define(  # (the same operations, in the same order, as the kernels)
    "tanh_backward",
    ad=tanh_backward,
    numpy=kernels.tanh_backward,
    lazy=lambda g, y: fused.multiply(g, fused.subtract(1.0, fused.multiply(y, y))),
)
FORMULAS.define(
    "log1p_backward",
    ad=log1p_backward,
    numpy=kernels.log1p_backward,
    lazy=lambda g, x: fused.divide(g, fused.add(1.0, x)),
)
FORMULAS.define("unbroadcast", ad=unbroadcast, numpy=unbroadcast_numpy, lazy=unbroadcast_numpy)
FORMULAS.define("add_reduce", ad=None, numpy=_add_reduce, lazy=None)
FORMULAS.define("sum_tangents", ad=_sum_tangents, numpy=None, lazy=None)
FORMULAS.define("LN2", ad=_LN2, numpy=_LN2, lazy=_LN2)
FORMULAS.define("LN10", ad=_LN10, numpy=_LN10, lazy=_LN10)


def _power_dx(ops, x, y):
    """d/dx x**y (times nothing: `power`'s formula multiplies by g)."""
    if type(y) in _NUMBER:  # a constant exponent
        if y == 0:
            return 0.0
        return ops.mul(2.0, x) if y == 2 else ops.mul(y, ops.power(x, y - 1))
    # Where the exponent is 0 the derivative is 0, even at x = 0 (0 * inf would be nan).
    zero = ops.equal(y, 0)
    return ops.where(zero, 0.0, ops.mul(y, ops.power(x, ops.where(zero, 1.0, ops.sub(y, 1)))))


def _power_dy(ops, x, out):
    """d/dy x**y = log(x) x**y; defined as 0 at x = 0 (the limit for y > 0), double-where safe."""
    zero = ops.equal(x, 0)
    return ops.where(zero, 0.0, ops.mul(out, ops.log(ops.where(zero, 1.0, x))))


FORMULAS.define_with("power_dx", _power_dx)
FORMULAS.define_with("power_dy", _power_dy)
# Derivative mask of a max/min-like choice of x: 1 where `strict` (x wins), 0.5 on ties (as
# JAX and PyTorch), 0 elsewhere, in the output's dtype; fmax/fmin also ignore a NaN operand.
FORMULAS.helper(
    "chosen", "x, y, strict, out", "astype(where(strict, 1.0, where(x == y, 0.5, 0.0)), out.dtype)"
)
FORMULAS.helper(
    "chosen_unless_nan",
    "x, y, strict, out",
    "where(isnan(y), 1.0, where(isnan(x), 0.0, chosen(x, y, strict, out)))",
)
del _name, _p, _numpy, _lazy
