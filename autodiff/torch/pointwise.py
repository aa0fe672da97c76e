"""torch's pointwise functions: arithmetic with torch's signatures (`alpha=`, `out=`),
elementwise math, comparisons, complex numbers, and the functions without a derivative."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
import autodiff.scipy.special as _special
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.torch._args import _array, _cast, _concrete, fused, write_out
from autodiff.torch.indexing import torch_nonzero

exp = anp.exp
log = anp.log
log1p = anp.log1p
expm1 = anp.expm1
sqrt = anp.sqrt
sin = anp.sin
cos = anp.cos
tan = anp.tan
tanh = anp.tanh
sinh = anp.sinh
cosh = anp.cosh
abs = anp.abs  # (torch's names shadow the builtins in this module: `builtins.<name>` for them)
sign = anp.sign
floor = anp.floor
ceil = anp.ceil
trunc = anp.trunc
square = anp.square
reciprocal = anp.reciprocal
maximum = anp.maximum
minimum = anp.minimum


def matmul(input, other):
    """`torch.matmul(input, other)`: the matrix product, broadcast over batch dimensions
    (torch's keyword names: `matmul(input=a, other=b)`)."""
    return anp.matmul(input, other)


def pow(input, exponent):
    """`torch.pow(input, exponent)`: `input ** exponent` (either may be a number)."""
    return anp.power(input, exponent)


def where(condition, input=None, other=None):
    """`torch.where(condition, input, other)`; `torch.where(condition)`: the indices of the
    nonzero entries, as `nonzero(as_tuple=True)`."""
    if input is None and other is None:
        return torch_nonzero(condition, as_tuple=True)
    return anp.where(condition, input, other)


def where_method(self: Tensor, condition, other) -> Tensor:
    """`Tensor.where(condition, other)`: `where(condition, self, other)`."""
    return anp.where(condition, self, other)


def sigmoid(x):
    """`torch.sigmoid`: 1 / (1 + exp(-x)) (bfloat16 computed in float32, rounded once)."""
    return fused(_sigmoid, x)


def _sigmoid(x):
    return 1.0 / (1.0 + anp.exp(-x))


def relu(x):
    """`torch.relu`: max(x, 0) (derivative 0 at 0, as torch)."""
    return anp.where(x > 0, x, 0.0)


def clamp(x, min=None, max=None):
    """`torch.clamp(input, min=None, max=None)`: bounds may be numbers or tensors; the
    derivative is 1 where `min <= x <= max` (torch's)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = x
    if min is not None:
        out = anp.where(
            out < min,
            anp.asarray(min, dtype=x.dtype) if not isinstance(min, Tensor) else _cast(min, x.dtype),
            out,
        )
    if max is not None:
        out = anp.where(
            out > max,
            anp.asarray(max, dtype=x.dtype) if not isinstance(max, Tensor) else _cast(max, x.dtype),
            out,
        )
    return out


def clamp_min(x, min):
    """`torch.clamp_min`."""
    return clamp(x, min=min)


def clamp_max(x, max):
    """`torch.clamp_max`."""
    return clamp(x, max=max)


def add(input, other, *, alpha=1, out=None):
    """`torch.add(input, other, *, alpha=1, out=None)`: `input + alpha * other`."""
    result = anp.add(input, other if alpha == 1 else anp.multiply(other, alpha))
    return result if out is None else write_out("add", out, result, (input, other))


def sub(input, other, *, alpha=1, out=None):
    """`torch.sub(input, other, *, alpha=1, out=None)`: `input - alpha * other`."""
    result = anp.subtract(input, other if alpha == 1 else anp.multiply(other, alpha))
    return result if out is None else write_out("sub", out, result, (input, other))


def mul(input, other, *, out=None):
    """`torch.mul(input, other, *, out=None)`."""
    result = anp.multiply(input, other)
    return result if out is None else write_out("mul", out, result, (input, other))


def div(input, other, *, rounding_mode=None, out=None):
    """`torch.div(input, other, *, rounding_mode=None, out=None)`: true division, or rounded
    toward zero ('trunc') or down ('floor')."""
    if out is not None:
        return write_out("div", out, div(input, other, rounding_mode=rounding_mode), (input, other))
    if rounding_mode is None:
        return anp.true_divide(input, other)
    if rounding_mode == "floor":
        return anp.floor_divide(input, other)
    if rounding_mode == "trunc":
        q = anp.true_divide(input, other)
        out = anp.trunc(q)
        kind = np.result_type(
            *(a.dtype if isinstance(a, Tensor) else a for a in (input, other))
        ).kind
        return (
            anp.astype(
                out,
                np.result_type(
                    input.dtype if isinstance(input, Tensor) else input,
                    other if not isinstance(other, Tensor) else other.dtype,
                ),
            )
            if kind in "iu"
            else out
        )
    raise RuntimeError(
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def neg(input):
    """`torch.neg`."""
    return anp.negative(input)


def rsqrt(input):
    """`torch.rsqrt`: 1 / sqrt(x)."""
    return anp.reciprocal(anp.sqrt(input))


def frac(input):
    """`torch.frac`: x - trunc(x) (derivative 1)."""
    return input - anp.trunc(input)


def lerp(input, end, weight):
    """`torch.lerp(input, end, weight)`: input + weight * (end - input)."""
    return input + weight * (end - input)


def addcmul(input, tensor1, tensor2, *, value=1):
    """`torch.addcmul(input, tensor1, tensor2, *, value=1)`."""
    return input + value * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """`torch.addcdiv(input, tensor1, tensor2, *, value=1)`."""
    return input + value * tensor1 / tensor2


def float_power(input, exponent):
    """`torch.float_power`: the power in double precision."""
    return anp.power(
        _cast(
            anp.asarray(input) if not isinstance(input, Tensor) else input,
            np.complex128 if np.iscomplexobj(_concrete(input)) else np.float64,
        ),
        exponent,
    )


def fmod(input, other):
    """`torch.fmod`: C's remainder (the sign of the dividend)."""
    return anp.fmod(input, other)


def remainder(input, other):
    """`torch.remainder`: Python's remainder (the sign of the divisor)."""
    return anp.remainder(input, other)


def xlogy(input, other):
    """`torch.xlogy`: x * log(y), 0 where x is 0."""
    return _special.xlogy(input, other)


def logit(input, eps=None):
    """`torch.logit(input, eps=None)`."""
    if eps is not None:
        input = clamp(input, eps, 1 - eps)
    return _special.logit(input)


def sgn(input):
    """`torch.sgn`: x / |x| (0 at 0), the sign of complex numbers too."""
    if (
        np.iscomplexobj(_concrete(input))
        if not isinstance(input, Tensor)
        else input.dtype.kind == "c"
    ):
        a = anp.abs(input)
        return anp.where(a == 0, 0, input / anp.where(a == 0, 1, a))
    return anp.sign(input)


def _binary_method(f: Callable, name: str) -> Callable:
    def method(self, other):
        return f(self, other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}(other)`."
    return method


def _unary(f: Callable, name: str) -> Callable:
    def method(self):
        return f(self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`Tensor.{name}()`."
    return method


# ---- complex numbers ----


def complex(real, imag):
    """`torch.complex(real, imag)`: real + i imag (both float tensors of one dtype)."""
    for part in (real, imag):
        if not isinstance(part, Tensor) or part.dtype.kind != "f":
            raise RuntimeError("Expected both inputs to be Half, Float or Double tensors")
    if real.dtype != imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {real.dtype} but got scalar type {imag.dtype} for "
            "second argument"
        )
    return anp.add(
        real, anp.multiply(imag, np.array(1j, dtype=np.result_type(real.dtype, np.complex64)))
    )


def real(input):
    """`torch.real(input)`."""
    return anp.real(input)


def imag(input):
    """`torch.imag(input)`: the imaginary part of a complex tensor."""
    if input.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return anp.imag(input)


def conj(input):
    """`torch.conj(input)`."""
    return anp.conj(input)


def angle(input):
    """`torch.angle(input)`."""
    return (
        anp.angle(input) if hasattr(anp, "angle") else anp.arctan2(anp.imag(input), anp.real(input))
    )


def polar(abs, angle):
    """`torch.polar(abs, angle)`: abs * (cos(angle) + i sin(angle))."""
    return complex(abs * anp.cos(angle), abs * anp.sin(angle))


def view_as_real(input):
    """`torch.view_as_real(input)`: a complex tensor as (..., 2) real and imaginary parts."""
    if input.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return anp.stack([anp.real(input), anp.imag(input)], axis=-1)


def view_as_complex(input):
    """`torch.view_as_complex(input)`: a (..., 2) float tensor as complex numbers."""
    if input.dtype.kind != "f" or not input.ndim or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return complex(input[..., 0], input[..., 1])


clip = clamp


# ---- elementwise (torch's names) ----

absolute = anp.abs
negative = anp.negative
true_divide = anp.true_divide
divide = div
multiply = mul
subtract = sub
floor_divide = anp.floor_divide
atan2 = anp.arctan2
arctan2 = anp.arctan2
hypot = anp.hypot
fmax = anp.fmax
fmin = anp.fmin
exp2 = anp.exp2
log2 = anp.log2
log10 = anp.log10
asin = arcsin = anp.arcsin
acos = arccos = anp.arccos
atan = arctan = anp.arctan
asinh = arcsinh = anp.arcsinh
acosh = arccosh = anp.arccosh
atanh = arctanh = anp.arctanh
round = anp.round
erf = _special.erf
erfc = _special.erfc
erfinv = _special.erfinv
lgamma = _special.gammaln
digamma = _special.digamma
polygamma = _special.polygamma
signbit = anp.signbit
isnan = anp.isnan
isinf = anp.isinf
isfinite = anp.isfinite
logical_and = anp.logical_and
logical_or = anp.logical_or
logical_xor = anp.logical_xor
logical_not = anp.logical_not
eq = anp.equal
ne = anp.not_equal
lt = anp.less
le = anp.less_equal
gt = anp.greater
ge = anp.greater_equal
greater = anp.greater
greater_equal = anp.greater_equal
less = anp.less
less_equal = anp.less_equal
not_equal = anp.not_equal
logaddexp = anp.logaddexp
logaddexp2 = anp.logaddexp2


def deg2rad(input):
    """`torch.deg2rad`."""
    return input * (np.pi / 180.0)


def rad2deg(input):
    """`torch.rad2deg`."""
    return input * (180.0 / np.pi)


def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):
    """`torch.nan_to_num(input, nan=0.0, posinf=None, neginf=None)`."""
    return anp.nan_to_num(input, nan=nan, posinf=posinf, neginf=neginf)


def positive(input):
    """`torch.positive(input)`: `input` itself."""
    return input


# ---- functions without a derivative (as in torch and JAX) ----


def nextafter(input, other):
    """`torch.nextafter(input, other)`: the next floating-point value after `input` towards
    `other`, elementwise. It has no derivative (nor in torch or JAX): given a value that
    carries one (a tensor that requires grad, or a traced value), it raises
    NotImplementedError (torch raises when the backward pass reaches it).

    Example:
        >>> import autodiff as torch
        >>> bool(torch.nextafter(torch.tensor([1.0]), torch.tensor([2.0])) > 1.0)
        True
    """
    for x in (input, other):
        if isinstance(x, Tensor) and (
            x._trace is not EVAL_TRACE or (x.requires_grad and state().grad_enabled)
        ):
            raise NotImplementedError(
                "the derivative for 'nextafter' is not implemented (use it on values that "
                "do not require grad, e.g. under torch.no_grad() or on x.detach())."
            )
    return Tensor._from(np.nextafter(_array(input), _array(other)))


def igamma(input, other):
    """`torch.igamma(input, other)`: the regularized lower incomplete gamma function
    P(input, other) (scipy.special.gammainc), differentiable in both arguments."""
    return _special.gammainc(input, other)


def igammac(input, other):
    """`torch.igammac(input, other)`: the regularized upper incomplete gamma function
    Q(input, other) = 1 - P(input, other) (scipy.special.gammaincc)."""
    return _special.gammaincc(input, other)
