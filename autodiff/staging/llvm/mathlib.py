"""Branch-free LLVM IR definitions of exp, log, sin, cos, ... for the LLVM backend, as IR text.

A loop that calls libm's `exp` runs one element at a time (the PyPI llvmlite has no vector
math library). These functions are written in arithmetic LLVM vectorizes — `fma`, `fabs`,
`copysign`, `select`, integers made from a float's bits — and marked `alwaysinline`, so
once inlined into a fused loop the loop vectorizer turns them into SIMD code.

Contract (how a module uses them):

- `NAMES`: the functions provided, by NumPy ufunc name ("expit" is the logistic sigmoid).
- `definition(name, ty)` for `ty` "double" or "float" returns `(text, callee)`: `text`
  holds only `define`s (the function `@ad.<name>.f64` / `@ad.<name>.f32` and any helper it
  needs, every name unique to that pair), `callee` the name to `call`. Two different pairs
  can go in one module; each pair at most once.
- `declarations(pairs)` returns the `declare` lines (intrinsics, libm) the definitions of
  `pairs` need, each once, one per line, in the form `declare <ret> @<name>(<args>)`
  exactly; a module that declares some of them itself should merge the lines as a set.

How each is computed (the same code for both types, with each type's constants, thresholds
and polynomial lengths; but sin and cos of a float widen to double, run the double code and
round once):

- exp: x = k ln2 + r (ln2 in two parts, so that k * ln2_hi is exact), exp(r) by Taylor's
  polynomial (degree 13 in double, 7 in float), times 2**k as two powers of two made from
  bits (a subnormal result rounds once). exp2 alike with r = x - rint(x). exp(x)/2 for
  sinh and cosh scales by 2**(k-1), so that they overflow where exp(x)/2 does.
- sinh: its Taylor polynomial below 1, (e + e / (e + 1)) / 2 with e = expm1|x| above,
  exp(|x|)/2 where exp(-|x|) no longer counts; cosh = exp(|x|)/2 + 1 / (4 exp(|x|)/2).
- expm1: the same reduction, 2**k expm1(r) + (2**k - 1) (no cancellation); tanh from it,
  tanh|x| = e / (e + 2) with e = expm1(2|x|), like approx.py's.
- log: x = 2**e m with m in [sqrt(1/2), sqrt(2)) taken from the bits (subnormals scaled
  by 2**(mantissa bits + 2) first), log m = 2 atanh(s) with s = f/(2 + f), f = m - 1, the
  sum arranged as fdlibm's; log1p computes log(u), u = 1 + x, and adds the rounding error
  of u, (x - (u - 1)) / u. log2 and log10 combine e and log(m) with their constants.
- sin, cos: x = k pi/2 + r with pi/2 in four parts (three of 33 bits, so that k * part is
  exact for k < 2**20, then 53 bits: 152 bits in all), r carried as a double-double; then
  Taylor's polynomials of sin and cos on |r| <= pi/4 and a select on k mod 4. This is right
  for |x| <= 2**20. Beyond it, a lane calls libm: the function branches to
  `@ad.<f>.<t>.big`, a call whose `vector-function-abi-variant` attribute names masked
  vector versions (2, 4, 8, 16 lanes) that call libm only when a lane of the mask is set;
  so the vectorizer if-converts the branch into one such call per vector, which costs a
  test of the mask when no |x| exceeds the bound.
- expit = 1 / (1 + exp(-x)) for x >= 0 and e / (1 + e) with e = exp(x) otherwise.

Special values follow NumPy: NaN in gives NaN out, exp's and expm1's overflow to inf and
underflow to 0 or -1, log of 0 is -inf and of a negative is NaN, sin and cos of inf are
NaN, -0.0 keeps its sign where NumPy's does. `fma` is expected in hardware (x86-64-v3).

Bounds, asserted by tests/test_llvm_mathlib.py on dense samples and the edges, in units in
the last place of NumPy's result (expit's: of the sigmoid computed in long double):
    double: exp 1, exp2 1, expm1 2, log 1, log2 2, log10 2, log1p 2, sin 1, cos 1,
            tanh 3, expit 2, sinh 2, cosh 1
A float's is against the exact result rounded to float (NumPy's float64 ufunc, rounded):
    float:  expm1, log2, log10, tanh, expit 2; the others 1
and against NumPy's float32 ufuncs, themselves up to ~2 ulp off, 3.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class _Format:
    """A floating-point type's layout, and the constants and thresholds that depend on it."""

    ty: str
    suffix: str
    int_ty: str
    packing: str  # struct's codes of the float and of the integer of its bits
    mantissa: int  # explicit mantissa bits
    bias: int
    # ln2 and log10(2) in two parts: k * hi is exact for every k that occurs
    ln2: tuple[float, float]
    log10_2: tuple[float, float]
    exp_clamp: tuple[float, float]  # exp is 0 below and inf above
    exp2_clamp: tuple[float, float]
    expm1_clamp: tuple[float, float]  # expm1 is -1 below and inf above
    tanh_clamp: float  # tanh(y/2) is +-1 for |y| above
    sinh_cut: float  # exp(-|x|) is below half an ulp of exp(|x|) above
    scale_low: int  # p * 2**k as (p * 2**(k - s)) * 2**s with this s when 2**k is subnormal
    terms: dict[str, int]  # the polynomials' lengths

    def round(self, value: float) -> float:
        return struct.unpack(self.packing[0], struct.pack(self.packing[0], value))[0]

    def bits(self, value: float) -> int:
        return struct.unpack(self.packing[1], struct.pack(self.packing[0], value))[0]


_FORMATS = {
    "double": _Format(
        ty="double",
        suffix="f64",
        int_ty="i64",
        packing="dQ",
        mantissa=52,
        bias=1023,
        ln2=(6.93147180369123816490e-01, 1.90821492927058770002e-10),  # fdlibm's
        log10_2=(float.fromhex("0x1.34413509f7800p-2"), 2.8363394551044964e-14),
        exp_clamp=(-746.0, 710.0),
        exp2_clamp=(-1080.0, 1025.0),
        expm1_clamp=(-40.0, 710.0),
        tanh_clamp=40.0,
        sinh_cut=22.0,
        scale_low=-537,
        terms={"exp": 14, "exp2": 15, "expm1": 14, "atanh": 11, "sinh": 8, "sin": 8, "cos": 7},
    ),
    "float": _Format(
        ty="float",
        suffix="f32",
        int_ty="i32",
        packing="fI",
        mantissa=23,
        bias=127,
        ln2=(float.fromhex("0x1.62e4p-1"), 1.4286068203094173e-06),
        log10_2=(float.fromhex("0x1.344p-2"), 4.605038981195214e-06),
        exp_clamp=(-104.0, 89.0),
        exp2_clamp=(-151.0, 129.0),
        expm1_clamp=(-18.0, 89.0),
        tanh_clamp=20.0,
        sinh_cut=9.0,
        scale_low=-89,
        terms={"exp": 8, "exp2": 8, "expm1": 8, "atanh": 4, "sinh": 5, "sin": 4, "cos": 4},
    ),
}
_INV_LN2 = 1.4426950408889634
_INV_LN10 = 0.4342944819032518
_SQRT_HALF = 0.7071067811865476
# pi/2 = P1 + P2 + P3 + P4 to 152 bits; P1..P3 have 33 bits, so k * Pi is exact for k < 2**20.
_PIO2 = (
    float.fromhex("0x1.921fb54400000p+0"),
    float.fromhex("0x1.0b4611a600000p-34"),
    float.fromhex("0x1.3198a2e000000p-69"),
    float.fromhex("0x1.b839a252049c1p-104"),
)
_TWO_OVER_PI = 0.6366197723675814
_SIN_BOUND = 2.0**20
_INF = math.inf
_NAN = "0x7FF8000000000000"
_LANES = (2, 4, 8, 16)

_EXP = [1.0 / math.factorial(n) for n in range(14)]  # exp(r), |r| <= ln2/2
_EXPM1 = [1.0 / math.factorial(n) for n in range(1, 15)]  # expm1(r) / r
_EXP2 = [math.log(2.0) ** n / math.factorial(n) for n in range(15)]  # 2**r, |r| <= 1/2
_ATANH = [2.0 / (2 * n + 1) for n in range(1, 12)]  # (2 atanh(s) / s - 2) / z, z = s*s
_SIN = [(-1.0) ** n / math.factorial(2 * n + 1) for n in range(1, 9)]  # (sin r / r - 1) / z
_SINH = [1.0 / math.factorial(2 * n + 1) for n in range(1, 9)]  # (sinh r / r - 1) / z, |r| <= 1
_COS = [(-1.0) ** n / math.factorial(2 * n) for n in range(2, 9)]  # (cos r - 1 + z/2) / z**2

_ARITY = {"fma": 3, "fabs": 1, "copysign": 2}


def _declare(callee: str) -> str:
    """The declaration of an intrinsic ("fma.f32") or of a libm function ("sin")."""
    if "." not in callee:
        return f"declare double @{callee}(double)"
    name, suffix = callee.split(".")
    ty = "double" if suffix == "f64" else "float"
    return f"declare {ty} @llvm.{callee}({', '.join([ty] * _ARITY[name])})"


class _Body:
    """The instructions of one function body in one format, each result a fresh SSA value."""

    def __init__(self, fmt: _Format, result: _Format) -> None:
        self.fmt = fmt
        self.result = result  # the function's type, narrower than fmt for sin and cos
        self.lines: list[str] = []
        self.declares: set[str] = set()
        self._count = 0

    def __call__(self, instruction: str) -> str:
        name = f"%v{self._count}"
        self._count += 1
        self.lines.append(f"  {name} = {instruction}")
        return name

    def c(self, value: float) -> str:
        """A constant, rounded to the format and written as its double's bits (exact)."""
        return f"0x{_FORMATS['double'].bits(self.fmt.round(value)):016X}"

    def op(self, opcode: str, a: str, b: str) -> str:
        return self(f"{opcode} {self.fmt.ty} {a}, {b}")

    def call(self, intrinsic: str, *args: str) -> str:
        ty = self.fmt.ty
        self.declares.add(f"{intrinsic}.{self.fmt.suffix}")
        arguments = ", ".join(f"{ty} {a}" for a in args)
        return self(f"call {ty} @llvm.{intrinsic}.{self.fmt.suffix}({arguments})")

    def fma(self, a: str, b: str, c: str) -> str:
        return self.call("fma", a, b, c)

    def neg(self, a: str) -> str:
        return self(f"fneg {self.fmt.ty} {a}")

    def fcmp(self, predicate: str, a: str, b: str) -> str:
        return self(f"fcmp {predicate} {self.fmt.ty} {a}, {b}")

    def select(self, condition: str, a: str, b: str, ty: str | None = None) -> str:
        return self(f"select i1 {condition}, {ty or self.fmt.ty} {a}, {ty or self.fmt.ty} {b}")

    def bits(self, a: str) -> str:
        return self(f"bitcast {self.fmt.ty} {a} to {self.fmt.int_ty}")

    def from_bits(self, a: str) -> str:
        return self(f"bitcast {self.fmt.int_ty} {a} to {self.fmt.ty}")

    def int_op(self, opcode: str, a: str, b: str | int) -> str:
        return self(f"{opcode} {self.fmt.int_ty} {a}, {b}")

    def horner(self, z: str, coefficients: Sequence[float]) -> str:
        value = self.c(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            value = self.fma(value, z, self.c(c))
        return value

    def clamp(self, x: str, low: float, high: float) -> str:
        x = self.select(self.fcmp("olt", x, self.c(high)), x, self.c(high))
        return self.select(self.fcmp("ogt", x, self.c(low)), x, self.c(low))

    def nan_passes(self, x: str, y: str) -> str:
        """y, but x where x is NaN."""
        return self.select(self.fcmp("uno", x, x), x, y)


def _power_of_two(b: _Body, k: str) -> str:
    """2**k for an integer k in the normal exponents' range."""
    biased = b.int_op("add", k, b.fmt.bias)
    return b.from_bits(b.int_op("shl", biased, b.fmt.mantissa))


def _scale(b: _Body, p: str, k: str) -> str:
    """p * 2**k for k from below the subnormals to 2 past the largest exponent, rounding once
    when the result is subnormal."""
    fmt = b.fmt
    over = b(f"icmp sgt {fmt.int_ty} {k}, {fmt.bias}")
    under = b(f"icmp slt {fmt.int_ty} {k}, {2 - fmt.bias}")
    s = b.select(over, "1", b.select(under, str(fmt.scale_low), "0", fmt.int_ty), fmt.int_ty)
    high = _power_of_two(b, b.int_op("sub", k, s))
    return b.op("fmul", b.op("fmul", p, high), _power_of_two(b, s))


def _round_to_integer(b: _Body, y: str) -> tuple[str, str]:
    """(k as an integer, k as a float) for k = rint(y), |y| < 2**(mantissa - 1): adding
    1.5 * 2**mantissa rounds to an integer held in the low bits of the sum's bits."""
    shifter = 1.5 * 2.0**b.fmt.mantissa
    t = b.op("fadd", y, b.c(shifter))
    return b.int_op("sub", b.bits(t), b.fmt.bits(shifter)), b.op("fsub", t, b.c(shifter))


def _reduce_ln2(b: _Body, c: str) -> tuple[str, str]:
    """(k, r) with c = k ln2 + r, |r| <= ln2/2: k an integer."""
    k, kf = _round_to_integer(b, b.op("fmul", c, b.c(_INV_LN2)))
    minus_k = b.neg(kf)
    r = b.fma(minus_k, b.c(b.fmt.ln2[0]), c)
    return k, b.fma(minus_k, b.c(b.fmt.ln2[1]), r)


def _exp_scaled(b: _Body, x: str, halve: bool = False) -> str:
    """exp(x) (or exp(x)/2), x clamped to where the result is neither 0 nor inf; NaN lost."""
    low, high = b.fmt.exp_clamp
    c = b.clamp(x, low, high + 0.5 if halve else high)
    k, r = _reduce_ln2(b, c)
    if halve:
        k = b.int_op("sub", k, 1)
    return _scale(b, b.horner(r, _EXP[: b.fmt.terms["exp"]]), k)


def _exp(b: _Body, x: str) -> str:
    return b.nan_passes(x, _exp_scaled(b, x))


def _exp2(b: _Body, x: str) -> str:
    c = b.clamp(x, *b.fmt.exp2_clamp)
    k, kf = _round_to_integer(b, c)
    r = b.op("fsub", c, kf)
    return b.nan_passes(x, _scale(b, b.horner(r, _EXP2[: b.fmt.terms["exp2"]]), k))


def _expm1_parts(b: _Body, c: str) -> tuple[str, str, str]:
    """(k, 2**k, expm1(r)) with c = k ln2 + r; 2**k is right for normal powers only."""
    k, r = _reduce_ln2(b, c)
    q = b.op("fmul", r, b.horner(r, _EXPM1[: b.fmt.terms["expm1"]]))
    return k, _power_of_two(b, k), q


def _expm1_small(b: _Body, c: str) -> str:
    """expm1(c) for 2**k normal and below 2**(mantissa + 1): 2**k expm1(r) + (2**k - 1)."""
    _, pk, q = _expm1_parts(b, c)
    return b.fma(pk, q, b.op("fsub", pk, b.c(1.0)))


def _expm1(b: _Body, x: str) -> str:
    c = b.clamp(x, *b.fmt.expm1_clamp)
    k, pk, q = _expm1_parts(b, c)
    small = b.fma(pk, q, b.op("fsub", pk, b.c(1.0)))
    large = _scale(b, b.op("fadd", q, b.c(1.0)), k)
    y = b.select(b(f"icmp sgt {b.fmt.int_ty} {k}, {b.fmt.mantissa + 1}"), large, small)
    return b.nan_passes(x, b.select(b.fcmp("oeq", x, b.c(0.0)), x, y))


def _tanh(b: _Body, x: str) -> str:
    y = b.op("fmul", b.c(2.0), b.call("fabs", x))
    limit = b.c(b.fmt.tanh_clamp)
    e = _expm1_small(b, b.select(b.fcmp("olt", y, limit), y, limit))
    q = b.op("fdiv", e, b.op("fadd", e, b.c(2.0)))
    return b.nan_passes(x, b.call("copysign", q, x))


def _expit(b: _Body, x: str) -> str:
    e = _exp_scaled(b, b.neg(b.call("fabs", x)))
    one_plus = b.op("fadd", b.c(1.0), e)
    positive = b.op("fdiv", b.c(1.0), one_plus)
    negative = b.op("fdiv", e, one_plus)
    y = b.select(b.fcmp("oge", x, b.c(0.0)), positive, negative)
    return b.nan_passes(x, y)


def _sinh(b: _Body, x: str) -> str:
    ax = b.call("fabs", x)
    z = b.op("fmul", ax, ax)
    below_one = b.fma(b.op("fmul", ax, z), b.horner(z, _SINH[: b.fmt.terms["sinh"]]), ax)
    cut = b.c(b.fmt.sinh_cut)
    em = _expm1_small(b, b.select(b.fcmp("olt", ax, cut), ax, cut))
    middle = b.op("fadd", em, b.op("fdiv", em, b.op("fadd", em, b.c(1.0))))
    middle = b.op("fmul", b.c(0.5), middle)
    y = b.select(b.fcmp("ogt", ax, cut), _exp_scaled(b, ax, halve=True), middle)
    y = b.select(b.fcmp("olt", ax, b.c(1.0)), below_one, y)
    return b.nan_passes(x, b.call("copysign", y, x))


def _cosh(b: _Body, x: str) -> str:
    half = _exp_scaled(b, b.call("fabs", x), halve=True)
    return b.nan_passes(x, b.op("fadd", half, b.op("fdiv", b.c(0.25), half)))


def _log_parts(b: _Body, x: str) -> tuple[str, str, str, str]:
    """(e, f, f*f/2, s*(f*f/2 + R)) with log x = e ln2 + f - (f*f/2 - s*(f*f/2 + R)), x > 0."""
    fmt = b.fmt
    tiny = b.fcmp("olt", x, b.c(2.0 ** (1 - fmt.bias)))
    xs = b.select(tiny, b.op("fmul", x, b.c(2.0 ** (fmt.mantissa + 2))), x)
    ix = b.bits(xs)
    e = b.int_op("ashr", b.int_op("sub", ix, b.bits(b.c(_SQRT_HALF))), fmt.mantissa)
    m = b.from_bits(b.int_op("sub", ix, b.int_op("shl", e, fmt.mantissa)))
    e = b.int_op("sub", e, b.select(tiny, str(fmt.mantissa + 2), "0", fmt.int_ty))
    f = b.op("fsub", m, b.c(1.0))
    s = b.op("fdiv", f, b.op("fadd", f, b.c(2.0)))
    z = b.op("fmul", s, s)
    r = b.op("fmul", z, b.horner(z, _ATANH[: fmt.terms["atanh"]]))
    hfsq = b.op("fmul", b.op("fmul", b.c(0.5), f), f)
    sr = b.op("fmul", s, b.op("fadd", hfsq, r))
    return b(f"sitofp {fmt.int_ty} {e} to {fmt.ty}"), f, hfsq, sr


def _log_specials(b: _Body, x: str, y: str, zero: float = 0.0) -> str:
    """y, but log's values at x = zero (-inf), below it (NaN), inf (inf) and NaN (NaN)."""
    y = b.select(b.fcmp("oeq", x, b.c(_INF)), b.c(_INF), y)
    y = b.select(b.fcmp("oeq", x, b.c(zero)), b.c(-_INF), y)
    y = b.select(b.fcmp("olt", x, b.c(zero)), _NAN, y)
    return b.nan_passes(x, y)


def _log(b: _Body, x: str) -> str:
    e, f, hfsq, sr = _log_parts(b, x)
    ln2_hi, ln2_lo = (b.c(part) for part in b.fmt.ln2)
    inner = b.op("fsub", hfsq, b.fma(e, ln2_lo, sr))
    y = b.fma(e, ln2_hi, b.op("fsub", f, inner))
    return _log_specials(b, x, y)


def _log_m(b: _Body, x: str) -> tuple[str, str]:
    """(e, log m) with x = 2**e m."""
    e, f, hfsq, sr = _log_parts(b, x)
    return e, b.op("fsub", f, b.op("fsub", hfsq, sr))


def _log2(b: _Body, x: str) -> str:
    e, log_m = _log_m(b, x)
    return _log_specials(b, x, b.fma(log_m, b.c(_INV_LN2), e))


def _log10(b: _Body, x: str) -> str:
    e, log_m = _log_m(b, x)
    hi, lo = (b.c(part) for part in b.fmt.log10_2)
    low = b.fma(log_m, b.c(_INV_LN10), b.op("fmul", e, lo))
    return _log_specials(b, x, b.fma(e, hi, low))


def _log1p(b: _Body, x: str) -> str:
    u = b.op("fadd", b.c(1.0), x)
    e, f, hfsq, sr = _log_parts(b, u)
    # the rounding error of 1 + x, as a correction to log(u)
    c = b.op("fdiv", b.op("fsub", x, b.op("fsub", u, b.c(1.0))), u)
    ln2_hi, ln2_lo = (b.c(part) for part in b.fmt.ln2)
    inner = b.op("fsub", hfsq, b.op("fadd", sr, b.fma(e, ln2_lo, c)))
    y = b.fma(e, ln2_hi, b.op("fsub", f, inner))
    y = b.select(b.fcmp("oeq", x, b.c(0.0)), x, y)
    return _log_specials(b, x, y, zero=-1.0)


def _two_sum(b: _Body, a: str, c: str) -> tuple[str, str]:
    """(s, e) with s + e = a + c exactly."""
    s = b.op("fadd", a, c)
    c_part = b.op("fsub", s, a)
    a_part = b.op("fsub", s, c_part)
    e = b.op("fadd", b.op("fsub", a, a_part), b.op("fsub", c, c_part))
    return s, e


def _reduce_pio2(b: _Body, x: str) -> tuple[str, str, str]:
    """(k mod 4 as i64, hi, lo) with x = k pi/2 + hi + lo, |hi| <= pi/4, for |x| <= 2**20."""
    k, kf = _round_to_integer(b, b.op("fmul", x, b.c(_TWO_OVER_PI)))
    quadrant = b.int_op("and", k, 3)
    minus_k = b.neg(kf)
    p1, p2, p3, p4 = (b.c(p) for p in _PIO2)
    a = b.fma(minus_k, p1, x)
    s, e = _two_sum(b, a, b.op("fmul", minus_k, p2))
    s, e2 = _two_sum(b, s, b.op("fmul", minus_k, p3))
    lo = b.fma(minus_k, p4, b.op("fadd", e, e2))
    hi = b.op("fadd", s, lo)
    return quadrant, hi, b.op("fadd", b.op("fsub", s, hi), lo)


def _sin_or_cos(b: _Body, x: str, shift: int) -> str:
    """sin(x) (shift 0) or cos(x) = sin(x + pi/2) (shift 1), right for |x| <= 2**20; for a
    float, the reduction in double and the rest in float."""
    quadrant, hi, lo = _reduce_pio2(b, x)
    q = b.int_op("add", quadrant, shift)
    odd = b(f"icmp ne {b.fmt.int_ty} {b.int_op('and', q, 1)}, 0")
    negative = b(f"icmp ne {b.fmt.int_ty} {b.int_op('and', q, 2)}, 0")
    if b.result is not b.fmt:
        x, hi = (b(f"fptrunc {b.fmt.ty} {v} to {b.result.ty}") for v in (x, hi))
        b.fmt = b.result
        lo = b.c(0.0)
    z = b.op("fmul", hi, hi)
    sin_poly, cos_poly = (
        b.horner(z, c[: b.fmt.terms[f]]) for c, f in [(_SIN, "sin"), (_COS, "cos")]
    )
    sin_r = b.op("fadd", hi, b.fma(b.op("fmul", hi, z), sin_poly, lo))
    cos_tail = b.fma(z, b.fma(z, cos_poly, b.c(-0.5)), b.neg(b.op("fmul", hi, lo)))
    cos_r = b.op("fadd", b.c(1.0), cos_tail)
    y = b.select(odd, cos_r, sin_r)
    y = b.select(negative, b.neg(y), y)
    return b.select(b.fcmp("oeq", x, b.c(0.0)), x, y) if shift == 0 else y


def _sin(b: _Body, x: str) -> str:
    return _sin_or_cos(b, x, 0)


def _cos(b: _Body, x: str) -> str:
    return _sin_or_cos(b, x, 1)


_FUNCTIONS = {
    "exp": _exp,
    "exp2": _exp2,
    "expm1": _expm1,
    "log": _log,
    "log2": _log2,
    "log10": _log10,
    "log1p": _log1p,
    "sin": _sin,
    "cos": _cos,
    "tanh": _tanh,
    "sinh": _sinh,
    "cosh": _cosh,
    "expit": _expit,
}
# Functions whose fast path is right only for |x| <= _SIN_BOUND: libm beyond it.
_LIBM_BEYOND_BOUND = frozenset({"sin", "cos"})
NAMES = frozenset(_FUNCTIONS)


def _masked_libm(name: str, big: str, n: int) -> str:
    """`big`'s masked vector version of n lanes: libm's `name` on each lane if any is set."""
    vector, mask = f"<{n} x double>", f"<{n} x i1>"
    lines = [f"define weak_odr {vector} {big}.v{n}({vector} %x, {mask} %m) noinline nounwind {{"]
    lines += ["entry:", f"  %bits = bitcast {mask} %m to i{n}", f"  %any = icmp ne i{n} %bits, 0"]
    lines += ["  br i1 %any, label %libm, label %done", "libm:"]
    previous = "%x"
    for i in range(n):
        lines.append(f"  %x{i} = extractelement {vector} %x, i64 {i}")
        lines.append(f"  %y{i} = call double @{name}(double %x{i})")
        lines.append(f"  %v{i} = insertelement {vector} {previous}, double %y{i}, i64 {i}")
        previous = f"%v{i}"
    lines += ["  br label %done", "done:"]
    lines.append(f"  %r = phi {vector} [%x, %entry], [{previous}, %libm]")
    return "\n".join([*lines, f"  ret {vector} %r", "}"])


def _large_argument(name: str, big: str, lanes: tuple) -> str:
    """`big(x)` = libm's `name`(x), and its masked vector versions of `lanes`."""
    scalar = (
        f"define internal double {big}(double %x) noinline nounwind memory(none) {{\n"
        f"  %y = call double @{name}(double %x)\n  ret double %y\n}}"
    )
    return "\n\n".join([scalar, *(_masked_libm(name, big, n) for n in lanes)])


def _variants(big: str, lanes: tuple) -> str:
    scalar = big[1:]
    return ",".join(f"_ZGV_LLVM_M{n}v_{scalar}({scalar}.v{n})" for n in lanes)


def _beyond_bound(b: _Body, x: str) -> str:
    """Whether 2**20 < |x| < inf, for a double x."""
    ax = b.call("fabs", x)
    above = b.fcmp("ogt", ax, b.c(_SIN_BOUND))
    return b(f"and i1 {above}, {b.fcmp('olt', ax, b.c(_INF))}")


def _libm_tail(callee: str, beyond: str, x: str, y: str, lanes: tuple) -> list[str]:
    """The lines giving the lanes `beyond` the bound libm's value (see the module docstring),
    ending with `%result`, of the type of y (double or float, x a double)."""
    big = f"{callee}.big"
    variants = f'"vector-function-abi-variant"="{_variants(big, lanes)}"'
    ty = "double" if callee.endswith("f64") else "float"
    lines = [f"  br i1 {beyond}, label %large, label %done", "large:"]
    lines.append(f"  %libm = call double {big}(double {x}) {variants}")
    libm = "%libm"
    if ty == "float":
        lines.append("  %libm.float = fptrunc double %libm to float")
        libm = "%libm.float"
    lines += ["  br label %done", "done:", f"  %result = phi {ty} [{y}, %entry], [{libm}, %large]"]
    return lines


@functools.cache
def _build(name: str, ty: str, lanes: tuple = _LANES) -> tuple[str, str, frozenset[str]]:
    if name not in _FUNCTIONS or ty not in _FORMATS:
        raise KeyError(f"no vectorizable {name} for {ty}")
    callee = f"@ad.{name}.{_FORMATS[ty].suffix}"
    # sin and cos reduce a float's argument in double, for the range of the reduction
    wide = name in _LIBM_BEYOND_BOUND
    b = _Body(_FORMATS["double" if wide else ty], _FORMATS[ty])
    x = "%x" if ty == b.fmt.ty else b(f"fpext {ty} %x to double")
    beyond = _beyond_bound(b, x) if wide else ""
    y = _FUNCTIONS[name](b, x)
    tail, extra = [], ""
    if wide:
        tail, y = _libm_tail(callee, beyond, x, y, lanes), "%result"
        extra = "\n\n" + _large_argument(name, f"{callee}.big", lanes)
        b.declares.add(name)
    body = "\n".join(["entry:", *b.lines, *tail, f"  ret {ty} {y}"])
    text = f"define internal {ty} {callee}({ty} %x) alwaysinline nounwind {{\n{body}\n}}{extra}"
    return text, callee, frozenset(_declare(d) for d in b.declares)


def definition(name: str, ty: str) -> tuple[str, str]:
    """The IR text defining `name` (a ufunc name of `NAMES`) for `ty`, and the callee to call.

    Example:
        >>> text, callee = definition("exp", "double")
        >>> callee
        '@ad.exp.f64'
    """
    text, callee, _ = _build(name, ty)
    return text, callee


def declarations(pairs: Iterable[tuple[str, str]]) -> str:
    """The `declare` lines the definitions of `pairs` ((name, ty), ...) need, each once.

    Example:
        >>> print(declarations([("exp", "double"), ("exp", "float")]))
        declare double @llvm.fma.f64(double, double, double)
        declare float @llvm.fma.f32(float, float, float)
    """
    lines = set().union(*(_build(name, ty)[2] for name, ty in pairs))
    return "\n".join(sorted(lines))


# ---- vector versions, for loops too short to inline into (scalars.math_call) ----
# A loop of a few iterations gains nothing from inlined code (its lanes are few) but pays to
# compile every inlined copy; it calls the C library's function instead, under a mapping (the
# call's `vector-function-abi-variant` attribute) to a vector version of ours that the loop
# vectorizer substitutes: `variant_module` defines it, compiled once per process and bound by
# symbol (module.py), and `vector_mapping` gives a module the masked form LLVM's mapping calls.
VARIANT_PREFIX = "autodiff.vec."


def variant_symbol(name: str, ty: str, lanes: int) -> str:
    """The symbol of `name` on a vector of `lanes` `ty`s, e.g. "autodiff.vec.sin.f64.v8"."""
    return f"{VARIANT_PREFIX}{name}.{_FORMATS[ty].suffix}.v{lanes}"


def variant_module(name: str, ty: str, lanes: int) -> str:
    """The IR (without the target header) of a module defining `variant_symbol(name, ty,
    lanes)`: the scalar definition run on each lane in a loop whose metadata asks for one
    vector of `lanes` (no interleaving), so LLVM compiles it into straight vector code (the
    scalar definition with masked libm versions of that width only: less to compile)."""
    text, callee, _ = _build(name, ty, (lanes,))
    vector = f"<{lanes} x {ty}>"
    symbol = variant_symbol(name, ty, lanes)
    return f"""{text}
{declarations([(name, ty)])}

define {vector} @"{symbol}"({vector} %x) nounwind {{
entry:
  %lanes = alloca [{lanes} x {ty}], align 64
  store {vector} %x, ptr %lanes
  br label %head
head:
  %i = phi i64 [0, %entry], [%next, %body]
  %more = icmp slt i64 %i, {lanes}
  br i1 %more, label %body, label %done
body:
  %at = getelementptr {ty}, ptr %lanes, i64 %i
  %lane = load {ty}, ptr %at
  %y = call {ty} {callee}({ty} %lane)
  store {ty} %y, ptr %at
  %next = add i64 %i, 1
  br label %head, !llvm.loop !0
done:
  %result = load {vector}, ptr %lanes
  ret {vector} %result
}}

!0 = distinct !{{!0, !1, !2, !3}}
!1 = !{{!"llvm.loop.vectorize.width", i32 {lanes}}}
!2 = !{{!"llvm.loop.interleave.count", i32 1}}
!3 = !{{!"llvm.loop.vectorize.enable", i1 true}}
"""


def vector_mapping(name: str, ty: str, lanes: int, scalar: str) -> tuple[list, str]:
    """(module lines as (symbol, text) pairs, call attribute) that let the loop vectorizer
    replace a call of `scalar` (a C library function computing `name` on `ty`) by the vector
    version `variant_symbol(name, ty, lanes)`. LLVM 20 maps such calls to masked vector
    functions only: the lines define one that ignores its mask (the function has no side
    effects: an idle lane's value is computed and dropped) and calls the vector version
    through its slot (`variant_symbol(...) + ".slot"`, a pointer module.py sets once the
    version is compiled), or `scalar` on each lane while the slot is null."""
    vector, mask = f"<{lanes} x {ty}>", f"<{lanes} x i1>"
    slot = variant_symbol(name, ty, lanes) + ".slot"
    masked = f"ad.masked.{name}.{_FORMATS[ty].suffix}.v{lanes}"
    body = [
        f'define weak_odr {vector} @"{masked}"({vector} %x, {mask} %m) nounwind {{',
        "entry:",
        f'  %f = load atomic ptr, ptr @"{slot}" monotonic, align 8',
        "  %ready = icmp ne ptr %f, null",
        "  br i1 %ready, label %vector, label %lanes",
        "vector:",
        f"  %y = call {vector} %f({vector} %x)",
        f"  ret {vector} %y",
        "lanes:",
    ]
    previous = "poison"
    for i in range(lanes):
        body.append(f"  %x{i} = extractelement {vector} %x, i64 {i}")
        body.append(f'  %y{i} = call {ty} @"{scalar}"({ty} %x{i})')
        body.append(f"  %v{i} = insertelement {vector} {previous}, {ty} %y{i}, i64 {i}")
        previous = f"%v{i}"
    body += [f"  ret {vector} {previous}", "}"]
    lines = [(slot, f'@"{slot}" = external global ptr'), (masked, "\n".join(body))]
    return lines, f' "vector-function-abi-variant"="_ZGV_LLVM_M{lanes}v_{scalar}({masked})"'


__all__ = [
    "NAMES",
    "VARIANT_PREFIX",
    "declarations",
    "definition",
    "variant_module",
    "variant_symbol",
    "vector_mapping",
]
