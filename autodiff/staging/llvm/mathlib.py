"""Branch-free LLVM IR definitions of exp, log, sin, cos, ... for the LLVM backend, as IR text.

A loop that calls libm's `exp` runs one element at a time (the PyPI llvmlite has no vector
math library). These functions are written in arithmetic LLVM vectorizes — `fma`, `fabs`,
`copysign`, `select`, integers made from a double's bits — and marked `alwaysinline`, so
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

How each is computed (in double; the float versions widen to double, run the same code and
round once, so they inherit its special cases and are within 1 ulp of the exact result):

- exp: x = k ln2 + r (ln2 in two parts, so that k * ln2_hi is exact), exp(r) by Taylor's
  polynomial of degree 13, times 2**k as two powers of two made from bits (a subnormal
  result rounds once). exp2 alike with r = x - rint(x). exp(x)/2 for sinh and cosh scales
  by 2**(k-1), so that they overflow where exp(x)/2 does, not where exp(x) does.
- expm1: the same reduction, 2**k expm1(r) + (2**k - 1) (no cancellation); tanh from it,
  tanh|x| = e / (e + 2) with e = expm1(2|x|), like approx.py's.
- log: x = 2**e m with m in [sqrt(1/2), sqrt(2)) taken from the bits (subnormals scaled by
  2**54 first), log m = 2 atanh(s) with s = f/(2 + f), f = m - 1, as fdlibm arranges the
  sum; log1p computes log(1 + x) and adds the rounding error of 1 + x, (x - (u - 1)) / u.
  log2 and log10 combine e and log(m) with their constants.
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

Bounds vs NumPy, asserted by tests/test_llvm_mathlib.py on dense samples and the edges, in
units in the last place of NumPy's result (expit's: of the sigmoid in long double):
    double: exp 1, exp2 1, expm1 2, log 1, log2 2, log10 2, log1p 2, sin 1, cos 1,
            tanh 3, expit 2, sinh 3, cosh 1
    float:  within 1 ulp of the exact result rounded to float (0 measured on the samples);
            against NumPy's float32 ufuncs, which are less exact, 2 (log and log10: 3)
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Iterable, Sequence

# ln2 in two parts (fdlibm's): k * LN2_HI is exact for |k| < 2**11.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.4426950408889634
_INV_LN10 = 0.4342944819032518
# log10(2) in two parts: e * LOG10_2_HI is exact for |e| < 2**11.
_LOG10_2_HI = float.fromhex("0x1.34413509f7800p-2")
_LOG10_2_LO = math.log10(2.0) - _LOG10_2_HI
# pi/2 = P1 + P2 + P3 + P4 to 152 bits; P1..P3 have 33 bits, so k * Pi is exact for k < 2**20.
_PIO2 = (
    float.fromhex("0x1.921fb54400000p+0"),
    float.fromhex("0x1.0b4611a600000p-34"),
    float.fromhex("0x1.3198a2e000000p-69"),
    float.fromhex("0x1.b839a252049c1p-104"),
)
_TWO_OVER_PI = 0.6366197723675814
_SIN_BOUND = 2.0**20
# Adding 1.5 * 2**52 rounds to an integer k held in the low bits of the sum's bits.
_SHIFTER = 6755399441055744.0
_SHIFTER_BITS = 0x4338000000000000
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD
_TINY = 2.0**-1022
_INF = math.inf
_NAN_BITS = 0x7FF8000000000000
_LANES = (2, 4, 8, 16)

_EXP = [1.0 / math.factorial(n) for n in range(14)]  # exp(r), |r| <= ln2/2
_EXPM1 = [1.0 / math.factorial(n) for n in range(1, 15)]  # expm1(r) / r
_EXP2 = [math.log(2.0) ** n / math.factorial(n) for n in range(15)]  # 2**r, |r| <= 1/2
_ATANH = [2.0 / (2 * n + 1) for n in range(1, 12)]  # (2 atanh(s) / s - 2) / z, z = s*s
_SIN = [(-1.0) ** n / math.factorial(2 * n + 1) for n in range(1, 10)]  # (sin r / r - 1) / z
_COS = [(-1.0) ** n / math.factorial(2 * n) for n in range(2, 11)]  # (cos r - 1 + z/2) / z**2

_DECLARES = {
    "fma": "declare double @llvm.fma.f64(double, double, double)",
    "fabs": "declare double @llvm.fabs.f64(double)",
    "copysign": "declare double @llvm.copysign.f64(double, double)",
    "sin": "declare double @sin(double)",
    "cos": "declare double @cos(double)",
}
_SUFFIX = {"double": "f64", "float": "f32"}


def _d(value: float) -> str:
    """A double constant, written as its bits (exact)."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


class _Body:
    """The instructions of one function body, each result a fresh SSA value."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.declares: set[str] = set()
        self._count = 0

    def __call__(self, instruction: str) -> str:
        name = f"%v{self._count}"
        self._count += 1
        self.lines.append(f"  {name} = {instruction}")
        return name

    def op(self, opcode: str, a: str, b: str) -> str:
        return self(f"{opcode} double {a}, {b}")

    def call(self, intrinsic: str, *args: str) -> str:
        self.declares.add(intrinsic)
        arguments = ", ".join(f"double {a}" for a in args)
        return self(f"call double @llvm.{intrinsic}.f64({arguments})")

    def fma(self, a: str, b: str, c: str) -> str:
        return self.call("fma", a, b, c)

    def neg(self, a: str) -> str:
        return self(f"fneg double {a}")

    def fcmp(self, predicate: str, a: str, b: str) -> str:
        return self(f"fcmp {predicate} double {a}, {b}")

    def select(self, condition: str, a: str, b: str, ty: str = "double") -> str:
        return self(f"select i1 {condition}, {ty} {a}, {ty} {b}")

    def bits(self, a: str) -> str:
        return self(f"bitcast double {a} to i64")

    def from_bits(self, a: str) -> str:
        return self(f"bitcast i64 {a} to double")

    def int_op(self, opcode: str, a: str, b: str | int) -> str:
        return self(f"{opcode} i64 {a}, {b}")

    def horner(self, z: str, coefficients: Sequence[float]) -> str:
        value = _d(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            value = self.fma(value, z, _d(c))
        return value

    def clamp(self, x: str, low: float, high: float) -> str:
        x = self.select(self.fcmp("olt", x, _d(high)), x, _d(high))
        return self.select(self.fcmp("ogt", x, _d(low)), x, _d(low))

    def nan_passes(self, x: str, y: str) -> str:
        """y, but x where x is NaN."""
        return self.select(self.fcmp("uno", x, x), x, y)


def _power_of_two(b: _Body, k: str) -> str:
    """2**k for an i64 k in [-1022, 1023]."""
    return b.from_bits(b.int_op("shl", b.int_op("add", k, 1023), 52))


def _scale(b: _Body, p: str, k: str) -> str:
    """p * 2**k for k in [-1075, 1025], rounding once when the result is subnormal."""
    over = b(f"icmp sgt i64 {k}, 1023")
    under = b(f"icmp slt i64 {k}, -1021")
    s = b.select(over, "1", b.select(under, "-537", "0", "i64"), "i64")
    high = _power_of_two(b, b.int_op("sub", k, s))
    return b.op("fmul", b.op("fmul", p, high), _power_of_two(b, s))


def _reduce_ln2(b: _Body, c: str) -> tuple[str, str]:
    """(k, r) with c = k ln2 + r, |r| <= ln2/2: k an i64, r a double."""
    t = b.fma(c, _d(_INV_LN2), _d(_SHIFTER))
    minus_k = b.op("fsub", _d(_SHIFTER), t)
    k = b.int_op("sub", b.bits(t), _SHIFTER_BITS)
    r = b.fma(minus_k, _d(_LN2_HI), c)
    return k, b.fma(minus_k, _d(_LN2_LO), r)


def _exp_scaled(b: _Body, x: str, halve: bool = False) -> str:
    """exp(x) (or exp(x)/2), x clamped to where the result is neither 0 nor inf; NaN lost."""
    c = b.clamp(x, -746.0, 710.5 if halve else 710.0)
    k, r = _reduce_ln2(b, c)
    if halve:
        k = b.int_op("sub", k, 1)
    return _scale(b, b.horner(r, _EXP), k)


def _exp(b: _Body, x: str) -> str:
    return b.nan_passes(x, _exp_scaled(b, x))


def _exp2(b: _Body, x: str) -> str:
    c = b.clamp(x, -1080.0, 1025.0)
    t = b.op("fadd", c, _d(_SHIFTER))
    k = b.int_op("sub", b.bits(t), _SHIFTER_BITS)
    r = b.op("fsub", c, b.op("fsub", t, _d(_SHIFTER)))
    return b.nan_passes(x, _scale(b, b.horner(r, _EXP2), k))


def _expm1_parts(b: _Body, c: str) -> tuple[str, str, str]:
    """(k, 2**k, expm1(r)) with c = k ln2 + r; 2**k is right for k <= 1023 only."""
    k, r = _reduce_ln2(b, c)
    return k, _power_of_two(b, k), b.op("fmul", r, b.horner(r, _EXPM1))


def _expm1_small(b: _Body, c: str) -> str:
    """expm1(c) for c in [-40, 40]: 2**k expm1(r) + (2**k - 1), with no cancellation."""
    _, pk, q = _expm1_parts(b, c)
    return b.fma(pk, q, b.op("fsub", pk, _d(1.0)))


def _expm1(b: _Body, x: str) -> str:
    c = b.clamp(x, -40.0, 710.0)
    k, pk, q = _expm1_parts(b, c)
    small = b.fma(pk, q, b.op("fsub", pk, _d(1.0)))
    large = _scale(b, b.op("fadd", q, _d(1.0)), k)
    y = b.select(b(f"icmp sgt i64 {k}, 56"), large, small)
    return b.nan_passes(x, b.select(b.fcmp("oeq", x, _d(0.0)), x, y))


def _tanh(b: _Body, x: str) -> str:
    y = b.op("fmul", _d(2.0), b.call("fabs", x))
    e = _expm1_small(b, b.select(b.fcmp("olt", y, _d(40.0)), y, _d(40.0)))
    q = b.op("fdiv", e, b.op("fadd", e, _d(2.0)))
    return b.nan_passes(x, b.call("copysign", q, x))


def _expit(b: _Body, x: str) -> str:
    e = _exp_scaled(b, b.neg(b.call("fabs", x)))
    one_plus = b.op("fadd", _d(1.0), e)
    positive = b.op("fdiv", _d(1.0), one_plus)
    negative = b.op("fdiv", e, one_plus)
    y = b.select(b.fcmp("oge", x, _d(0.0)), positive, negative)
    return b.nan_passes(x, y)


def _sinh(b: _Body, x: str) -> str:
    ax = b.call("fabs", x)
    em = _expm1_small(b, b.select(b.fcmp("olt", ax, _d(22.0)), ax, _d(22.0)))
    small = b.op("fmul", _d(0.5), b.op("fadd", em, b.op("fdiv", em, b.op("fadd", em, _d(1.0)))))
    # beyond 22, exp(-|x|) / 2 is below half an ulp of exp(|x|) / 2
    y = b.select(b.fcmp("ogt", ax, _d(22.0)), _exp_scaled(b, ax, halve=True), small)
    return b.nan_passes(x, b.call("copysign", y, x))


def _cosh(b: _Body, x: str) -> str:
    half = _exp_scaled(b, b.call("fabs", x), halve=True)
    return b.nan_passes(x, b.op("fadd", half, b.op("fdiv", _d(0.25), half)))


def _log_parts(b: _Body, x: str) -> tuple[str, str, str, str]:
    """(e, f, f*f/2, s*(f*f/2 + R)) with log x = e ln2 + f - (f*f/2 - s*(f*f/2 + R)), x > 0."""
    tiny = b.fcmp("olt", x, _d(_TINY))
    xs = b.select(tiny, b.op("fmul", x, _d(2.0**54)), x)
    ix = b.bits(xs)
    e = b.int_op("ashr", b.int_op("sub", ix, _SQRT_HALF_BITS), 52)
    m = b.from_bits(b.int_op("sub", ix, b.int_op("shl", e, 52)))
    e = b.int_op("sub", e, b.select(tiny, "54", "0", "i64"))
    f = b.op("fsub", m, _d(1.0))
    s = b.op("fdiv", f, b.op("fadd", f, _d(2.0)))
    z = b.op("fmul", s, s)
    r = b.op("fmul", z, b.horner(z, _ATANH))
    hfsq = b.op("fmul", b.op("fmul", _d(0.5), f), f)
    sr = b.op("fmul", s, b.op("fadd", hfsq, r))
    return b(f"sitofp i64 {e} to double"), f, hfsq, sr


def _log_specials(b: _Body, x: str, y: str, zero: float = 0.0) -> str:
    """y, but log's values at x = zero (-inf), below it (NaN), inf (inf) and NaN (NaN)."""
    y = b.select(b.fcmp("oeq", x, _d(_INF)), _d(_INF), y)
    y = b.select(b.fcmp("oeq", x, _d(zero)), _d(-_INF), y)
    nan = f"0x{_NAN_BITS:016X}"
    y = b.select(b.fcmp("olt", x, _d(zero)), nan, y)
    return b.nan_passes(x, y)


def _log(b: _Body, x: str) -> str:
    e, f, hfsq, sr = _log_parts(b, x)
    inner = b.op("fsub", hfsq, b.fma(e, _d(_LN2_LO), sr))
    y = b.fma(e, _d(_LN2_HI), b.op("fsub", f, inner))
    return _log_specials(b, x, y)


def _log_m(b: _Body, x: str) -> tuple[str, str]:
    """(e, log m) with x = 2**e m."""
    e, f, hfsq, sr = _log_parts(b, x)
    return e, b.op("fsub", f, b.op("fsub", hfsq, sr))


def _log2(b: _Body, x: str) -> str:
    e, log_m = _log_m(b, x)
    return _log_specials(b, x, b.fma(log_m, _d(_INV_LN2), e))


def _log10(b: _Body, x: str) -> str:
    e, log_m = _log_m(b, x)
    low = b.fma(log_m, _d(_INV_LN10), b.op("fmul", e, _d(_LOG10_2_LO)))
    return _log_specials(b, x, b.fma(e, _d(_LOG10_2_HI), low))


def _log1p(b: _Body, x: str) -> str:
    u = b.op("fadd", _d(1.0), x)
    e, f, hfsq, sr = _log_parts(b, u)
    # the rounding error of 1 + x, as a correction to log(u)
    c = b.op("fdiv", b.op("fsub", x, b.op("fsub", u, _d(1.0))), u)
    inner = b.op("fsub", hfsq, b.op("fadd", sr, b.fma(e, _d(_LN2_LO), c)))
    y = b.fma(e, _d(_LN2_HI), b.op("fsub", f, inner))
    y = b.select(b.fcmp("oeq", x, _d(0.0)), x, y)
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
    t = b.fma(x, _d(_TWO_OVER_PI), _d(_SHIFTER))
    quadrant = b.int_op("and", b.bits(t), 3)
    k = b.op("fsub", t, _d(_SHIFTER))
    minus_k = b.neg(k)
    p1, p2, p3, p4 = (_d(p) for p in _PIO2)
    a = b.fma(minus_k, p1, x)
    s, e = _two_sum(b, a, b.op("fmul", minus_k, p2))
    s, e2 = _two_sum(b, s, b.op("fmul", minus_k, p3))
    lo = b.fma(minus_k, p4, b.op("fadd", e, e2))
    hi = b.op("fadd", s, lo)
    return quadrant, hi, b.op("fadd", b.op("fsub", s, hi), lo)


def _sin_or_cos(b: _Body, x: str, shift: int) -> str:
    """sin(x) (shift 0) or cos(x) = sin(x + pi/2) (shift 1), right for |x| <= 2**20."""
    quadrant, hi, lo = _reduce_pio2(b, x)
    z = b.op("fmul", hi, hi)
    sin_r = b.op("fadd", hi, b.fma(b.op("fmul", hi, z), b.horner(z, _SIN), lo))
    cos_tail = b.fma(z, b.fma(z, b.horner(z, _COS), _d(-0.5)), b.neg(b.op("fmul", hi, lo)))
    cos_r = b.op("fadd", _d(1.0), cos_tail)
    q = b.int_op("add", quadrant, shift)
    odd = b(f"icmp ne i64 {b.int_op('and', q, 1)}, 0")
    negative = b(f"icmp ne i64 {b.int_op('and', q, 2)}, 0")
    y = b.select(odd, cos_r, sin_r)
    y = b.select(negative, b.neg(y), y)
    return b.select(b.fcmp("oeq", x, _d(0.0)), x, y) if shift == 0 else y


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


def _large_argument(name: str, big: str) -> str:
    """`big(x)` = libm's `name`(x), and its masked vector versions."""
    scalar = (
        f"define internal double {big}(double %x) noinline nounwind memory(none) {{\n"
        f"  %y = call double @{name}(double %x)\n  ret double %y\n}}"
    )
    return "\n\n".join([scalar, *(_masked_libm(name, big, n) for n in _LANES)])


def _variants(big: str) -> str:
    scalar = big[1:]
    return ",".join(f"_ZGV_LLVM_M{n}v_{scalar}({scalar}.v{n})" for n in _LANES)


@functools.cache
def _build(name: str, ty: str) -> tuple[str, str, frozenset[str]]:
    if name not in _FUNCTIONS or ty not in _SUFFIX:
        raise KeyError(f"no vectorizable {name} for {ty}")
    callee = f"@ad.{name}.{_SUFFIX[ty]}"
    b = _Body()
    x = "%x" if ty == "double" else b("fpext float %x to double")
    y = _FUNCTIONS[name](b, x)
    tail, extra = [], ""
    if name in _LIBM_BEYOND_BOUND:
        # lanes with 2**20 < |x| < inf take libm's value; see the module docstring
        big = f"{callee}.big"
        ax = b.call("fabs", x)
        beyond = b(f"and i1 {b.fcmp('ogt', ax, _d(_SIN_BOUND))}, {b.fcmp('olt', ax, _d(_INF))}")
        variants = f'"vector-function-abi-variant"="{_variants(big)}"'
        tail = [
            f"  br i1 {beyond}, label %large, label %done",
            "large:",
            f"  %libm = call double {big}(double {x}) {variants}",
            "  br label %done",
            "done:",
            f"  %result = phi double [{y}, %entry], [%libm, %large]",
        ]
        y, extra = "%result", "\n\n" + _large_argument(name, big)
        b.declares.add(name)
    if ty == "float":
        tail.append(f"  %rounded = fptrunc double {y} to float")
        y = "%rounded"
    body = "\n".join(["entry:", *b.lines, *tail, f"  ret {ty} {y}"])
    text = f"define internal {ty} {callee}({ty} %x) alwaysinline nounwind {{\n{body}\n}}{extra}"
    return text, callee, frozenset(_DECLARES[d] for d in b.declares)


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
        >>> declarations([("exp", "double"), ("exp", "float")])
        'declare double @llvm.fma.f64(double, double, double)'
    """
    lines = set().union(*(_build(name, ty)[2] for name, ty in pairs))
    return "\n".join(sorted(lines))


__all__ = ["NAMES", "declarations", "definition"]
