"""Scalar numerics of the special functions NumPy lacks, mapped over arrays as ufuncs.

erf, erfc, erfinv, ndtri, log_ndtr, gammaln, gamma, digamma and polygamma are scalar float64
routines here (Taylor and asymptotic series, recurrences, Euler-Maclaurin sums and Newton
steps, after Cephes and SciPy), each wrapped in a `ScalarKernel`. Arrays are computed by
SciPy's own ufunc of the same function where it has one (`scipy.special`, imported at the
first call, not at import: compiled C, tens of nanoseconds per element), else by a Numba
ufunc of the scalar code compiled on first use (`cache=True`, Numba imported lazily and
tiered, see `_numba.py`), else by `np.vectorize` of the scalar code
(`AUTODIFF_DISABLE_NUMBA=1`, Numba missing, or not tiered up yet). The scalar code is the
readable reference (`ScalarKernel.reference`), which the tests compare with SciPy; it is
what runs for the functions SciPy lacks. Results follow SciPy's values (including the edge
cases at poles and infinities) and keep float32 as float32 (computed in float64, then
rounded). The primitives built on these kernels, with their derivatives, are in
`autodiff/ops/special.py`.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from autodiff.core.dtypes import dtype_of, is_bfloat16
from autodiff.kernels._numba import kernels_ready

_SQRT2 = 1.4142135623730951
_SQRT1_2 = 0.7071067811865476
_TWO_OVER_SQRT_PI = 1.1283791670955126
_MACHEP = 1.1102230246251565e-16  # 2**-53
_LOG_MAX = 709.782712893384  # log of the largest float64
_MAX_GAMMA_ARG = 171.6243769563027  # gamma overflows above this
_MAX_LGAMMA_ARG = 2.556348e305  # gammaln overflows above this

# ---------------------------------------------------------------------------------------------
# Scalar kernels: Python floats in and out, no exceptions (every pole, overflow and domain
# error is turned into inf or nan first, since Python's math raises where C returns inf).


def _horner(coeffs, z):
    """The polynomial with `coeffs` (highest degree first) at `z`."""
    acc = 0.0
    for c in coeffs:
        acc = acc * z + c
    return acc


def _is_integer(x):
    """True for finite integral floats (`x % 1.0` is nan for infinities)."""
    return x % 1.0 == 0.0


def _pow(a, b):
    """`a ** b` for `a > 0`, inf on overflow."""
    if b * math.log(a) > _LOG_MAX:
        return math.inf
    return a**b


def _erf(x):
    return math.erf(x)


def _erfc(x):
    return math.erfc(x)


def _ndtr(a):
    """The standard normal CDF, as SciPy (Cephes) computes it."""
    x = a * _SQRT1_2
    z = abs(x)
    if z < 1.0:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if x > 0.0 else y


def _log_ndtr(a):
    """log of the normal CDF: log1p(-ndtr(-a)) for a > 0, log(ndtr(a)) down to -20, then the
    asymptotic series of log(erfc) (SciPy's algorithm)."""
    if math.isnan(a):
        return a
    if a > 0.0:
        return math.log1p(-_ndtr(-a))
    if a > -20.0:
        return math.log(_ndtr(a))
    log_lhs = -0.5 * a * a - math.log(-a) - 0.5 * math.log(2.0 * math.pi)
    last_total = 0.0
    right_hand_side = 1.0
    numerator = 1.0
    denom_factor = 1.0
    denom_cons = 1.0 / (a * a)
    sgn = 1.0
    for i in range(1, 100):
        if abs(last_total - right_hand_side) <= 2.220446049250313e-16:
            break
        last_total = right_hand_side
        sgn = -sgn
        denom_factor *= denom_cons
        numerator *= 2 * i - 1
        right_hand_side += sgn * numerator * denom_factor
    return log_lhs + math.log(right_hand_side)


def _erfinv_parts(x, q):
    """The y >= 0 with erf(y) = x and erfc(y) = q, for 0 <= x <= 1 and q = 1 - x, each
    accurate where it is small: Giles' single-precision approximation (an asymptotic guess
    far in the tail), refined by Newton steps on whichever residual is well conditioned."""
    if q <= 0.0:
        return math.inf
    if x <= 0.0:
        return 0.0
    w = -math.log(q * (1.0 + x))
    if w < 5.0:
        w -= 2.5
        y = x * _horner(_GILES_CENTRAL, w)
    elif w < 16.0:
        w = math.sqrt(w) - 3.0
        y = x * _horner(_GILES_TAIL, w)
    else:  # erfc(y) ~ exp(-y^2) / (y sqrt(pi))
        t = -math.log(q)
        y = math.sqrt(t - 0.5 * math.log(math.pi * t))
    # erf is concave on y >= 0, so Newton's iterates approach the root monotonically.
    for _ in range(12):
        slope = _TWO_OVER_SQRT_PI * math.exp(-y * y)
        if slope == 0.0:
            break
        residual = math.erf(y) - x if x < 0.5 else q - math.erfc(y)
        step = residual / slope
        y -= step
        if abs(step) <= _MACHEP * y:
            break
    return y


_GILES_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def _erfinv(x):
    a = abs(x)
    if not a <= 1.0:
        return math.nan
    return math.copysign(_erfinv_parts(a, 1.0 - a), x)


def _ndtri(p):
    """The inverse normal CDF, -sqrt(2) erfcinv(2p), with 2p or 2(1 - p) kept exact."""
    if not (p > 0.0 and p < 1.0):
        if p == 0.0:
            return -math.inf
        if p == 1.0:
            return math.inf
        return math.nan
    if p < 0.5:
        q = 2.0 * p
        return -_SQRT2 * _erfinv_parts(1.0 - q, q)
    q = 2.0 * (1.0 - p)
    return _SQRT2 * _erfinv_parts(1.0 - q, q)


def _gamma(x):
    if math.isnan(x) or x == math.inf:
        return x
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x < 0.0 and (x == -math.inf or _is_integer(x)):
        return math.nan
    if x > _MAX_GAMMA_ARG:
        return math.inf
    if abs(x) < 1e-306:  # gamma(x) = 1/x - euler_gamma + O(x), and 1/x may overflow
        return 1.0 / x
    return math.gamma(x)


def _lgamma(x):
    """log|gamma(x)|: Taylor series around 1 and 2, where it vanishes, keep it accurate; so
    does log((x-1)!) at small integers. Elsewhere libm's lgamma (Numba's own when compiled)."""
    if math.isnan(x) or math.isinf(x):
        return x
    if x <= 0.0 and _is_integer(x):
        return math.inf
    if abs(x - 1.0) < 0.2:
        z = x - 1.0
        return z * _horner(_LGAMMA_AT_ONE, z)
    if abs(x - 2.0) < 0.2:
        z = x - 2.0
        return z * _horner(_LGAMMA_AT_TWO, z)
    if x > _MAX_LGAMMA_ARG:
        return math.inf
    if x <= 23.0 and _is_integer(x):  # log((x - 1)!), the factorial exact in float64
        factorial = 1.0
        for k in range(2, int(x)):
            factorial *= k
        return math.log(factorial)
    return math.lgamma(x)


def _digamma(x):
    """psi(x): reflection for x < 0, then the recurrence psi(x + 1) = psi(x) + 1/x into
    [1, 2] (below 10), where a Taylor series at the positive root is exact to rounding, or
    the asymptotic series (from 10 up). A second series covers the root in (-1, 0).
    The approach of SciPy (after Cephes)."""
    if math.isnan(x) or x == math.inf:
        return x
    if x == 0.0:
        return -math.copysign(math.inf, x)
    if x < 0.0 and (x == -math.inf or _is_integer(x)):
        return math.nan
    if abs(x - _NEGROOT) < 0.1:
        d = x - _NEGROOT
        return _NEGROOT_VALUE + d * _horner(_NEGROOT_SERIES, d)
    result = 0.0
    if x < 0.0:  # psi(x) = psi(1 - x) - pi / tan(pi x), with pi x reduced to [-pi/2, pi/2]
        r = x - math.floor(x + 0.5)
        result = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    elif x < 1.0:
        result = -1.0 / x
        x += 1.0
    if x >= 10.0:
        z = 1.0 / (x * x) if x < 1e150 else 0.0
        return result + (math.log(x) - 0.5 / x - z * _horner(_DIGAMMA_ASYMPTOTIC, z))
    while x > 2.0:
        x -= 1.0
        result += 1.0 / x
    d = x - _POSROOT
    return result + (_POSROOT_VALUE + d * _horner(_POSROOT_SERIES, d))


_DIGAMMA_ASYMPTOTIC = (  # B_2k / 2k, k = 7..1
    1.0 / 12.0,
    -691.0 / 32760.0,
    1.0 / 132.0,
    -1.0 / 240.0,
    1.0 / 252.0,
    -1.0 / 120.0,
    1.0 / 12.0,
)


def _hurwitz_zeta(s, q):
    """sum over k >= 0 of (k + q)**-s for s > 1 (q < 0 needs an integral s): direct terms
    until q + k > 9, then Euler-Maclaurin (Cephes' algorithm)."""
    if math.isnan(s) or math.isnan(q) or s < 1.0:
        return math.nan
    if s == 1.0:
        return math.inf
    if q <= 0.0:
        if q == -math.inf or _is_integer(q):
            return math.inf
        if not _is_integer(s):
            return math.nan
    if q > 1e8:
        return (1.0 / (s - 1.0) + 0.5 / q) * q ** (1.0 - s)
    return _hurwitz_zeta_sum(s, q)


def _hurwitz_zeta_sum(s, q):
    """`_hurwitz_zeta` inside its domain: the direct terms, then the Euler-Maclaurin tail."""
    odd = s % 2.0 == 1.0
    total = _pow(abs(q), -s)
    if q < 0.0 and odd:
        total = -total
    a = q
    b = 0.0
    i = 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = _pow(abs(a), -s)
        if a < 0.0 and odd:
            b = -b
        total += b
        if abs(b) < _MACHEP * abs(total):
            return total
    return _zeta_euler_maclaurin(s, a, b, total)


def _zeta_euler_maclaurin(s, w, b, total):
    """`total`, the direct terms up to `w` (the last of them `b`), plus the Euler-Maclaurin
    estimate of the terms beyond."""
    total += b * w / (s - 1.0)
    total -= 0.5 * b
    fac = 1.0
    k = 0.0
    for j in range(12):
        fac *= s + k
        b /= w
        t = fac * b / _ZETA_EULER_MACLAURIN[j]
        total += t
        if abs(t) < _MACHEP * abs(total):
            break
        k += 1.0
        fac *= s + k
        b /= w
        k += 1.0
    return total


_ZETA_EULER_MACLAURIN = (  # (2k)! / B_2k, k = 1..12
    12.0,
    -720.0,
    30240.0,
    -1209600.0,
    47900160.0,
    -1892437580.3183792,
    74724249600.0,
    -2950130727918.164,
    116467828143500.67,
    -4597978722407473.0,
    1.8152105401943546e17,
    -7.166165256175667e18,
)


def _polygamma(n, x):
    """(-1)**(n+1) n! zeta(n + 1, x) for integers n >= 1, digamma for n = 0, nan otherwise."""
    if not (n >= 0.0 and _is_integer(n)):
        return math.nan
    if n == 0.0:
        return _digamma(x)
    if not x < _REFLECT_BELOW or _is_integer(x) or x == -math.inf:  # (also for nan)
        return _polygamma_series(n, x)
    # psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x): bounded work, where the
    # series would first sum about -x terms
    r = x - math.floor(x + 0.5)
    reflected = _polygamma_series(n, 1.0 - x)
    if n % 2.0 == 1.0:
        reflected = -reflected
    cot = 1.0 / math.tan(math.pi * r)
    return reflected - _pow(math.pi, n + 1.0) * _cot_derivative(int(n), cot)


def _polygamma_series(n, x):
    factorial = math.inf if n > 170.0 else math.gamma(n + 1.0)
    sgn = 1.0 if n % 2.0 == 1.0 else -1.0
    return sgn * factorial * _hurwitz_zeta(n + 1.0, x)


_REFLECT_BELOW = -1000.0


def _cot_derivative(n, c):
    """The n-th derivative of cot at t, from c = cot(t): P_n(c), where P_0(c) = c and
    P_(k+1)(c) = -(1 + c^2) P_k'(c)."""
    coeffs = np.zeros(n + 2)
    coeffs[1] = 1.0
    for k in range(n):
        derived = np.zeros(n + 2)
        for j in range(k + 1):  # P_k has degree k + 1
            dj = (j + 1) * coeffs[j + 1]
            derived[j] -= dj
            derived[j + 2] -= dj
        coeffs = derived
    acc = 0.0
    for j in range(n + 1, -1, -1):
        acc = acc * c + coeffs[j]
    return acc


# Series coefficients, highest degree first, computed with mpmath at 50 digits.
_POSROOT = 1.4616321449683622  # the positive root of digamma (nearest double)
_POSROOT_VALUE = -9.241265521729427e-17  # digamma there
_POSROOT_SERIES = (  # digamma^(k)(root) / k!, k = 40..1
    -1.7443695117727793e-07,
    2.549626552021561e-07,
    -3.726616128343832e-07,
    5.446941930669458e-07,
    -7.96142543124199e-07,
    1.163667536354887e-06,
    -1.7008538854332646e-06,
    2.4860227331295433e-06,
    -3.6336507898010536e-06,
    5.3110609208898746e-06,
    -7.76281766846211e-06,
    1.1346384584663872e-05,
    -1.6584242271854165e-05,
    2.4240066118601362e-05,
    -3.543007094765967e-05,
    5.17857579522209e-05,
    -7.569179582195078e-05,
    0.00011063372768747428,
    -0.00016170622091974827,
    0.00023635601564027086,
    -0.0003454680251063082,
    0.0005049532658346027,
    -0.000738070938996006,
    0.0010788252019162978,
    -0.001576936771430199,
    0.00230512632673493,
    -0.0033698016554393312,
    0.004926781395729858,
    -0.007204534386356875,
    0.010538791616612184,
    -0.01542476590494897,
    0.022597648232218118,
    -0.033161126474847376,
    0.04880428816414313,
    -0.07219956125645474,
    0.10782405069126241,
    -0.16394270544240658,
    0.2584997609556511,
    -0.4427631689835922,
    0.9676722454476212,
)
_NEGROOT = -0.5040830082644554  # the root of digamma in (-1, 0)
_NEGROOT_VALUE = 7.289763902976895e-17
_NEGROOT_SERIES = (
    -256915093.7987531,
    551481251.8585448,
    -59721085.41129418,
    137373435.87411496,
    -13807481.99726386,
    34228316.69580112,
    -3172131.31557447,
    8530604.878543982,
    -723318.8861804291,
    2126602.372596875,
    -163451.7934270022,
    530280.3912420176,
    -36529.945969485576,
    132262.95480834588,
    -8051.818155363481,
    32997.785655255044,
    -1743.3646088673593,
    8234.667099203069,
    -368.5783503832184,
    2055.5357119463315,
    -75.37700066344615,
    513.2704629562861,
    -14.706721735530332,
    128.27342343090902,
    -2.7610116487908227,
    32.258572064915505,
    -0.8093454625306499,
    8.939798558792134,
)
_LGAMMA_AT_ONE = (  # lgamma(1 + z) / z: (-1)^k zeta(k) / k, k = 24..2, then -euler_gamma
    0.04166666915034121,
    -0.04347826605304026,
    0.04545455629320467,
    -0.047619070330142226,
    0.05000004769810169,
    -0.05263167937961666,
    0.055555767627403614,
    -0.058823978658684585,
    0.06250095514121304,
    -0.06666870588242046,
    0.07143294629536133,
    -0.0769325164113522,
    0.083353840546109,
    -0.09095401714582904,
    0.1000994575127818,
    -0.11133426586956469,
    0.12550966952474304,
    -0.1440498967688461,
    0.1695571769974082,
    -0.20738555102867398,
    0.27058080842778454,
    -0.40068563438653143,
    0.8224670334241132,
    -0.5772156649015329,
)
_LGAMMA_AT_TWO = (  # lgamma(2 + z) / z: (-1)^k (zeta(k) - 1) / k, k = 24..2, then 1 - euler_gamma
    2.4836745438024785e-09,
    -5.183475041970047e-09,
    1.0838659214896955e-08,
    -2.2711094608943164e-08,
    4.7698101693639804e-08,
    -1.0043224823968099e-07,
    2.1207184805554665e-07,
    -4.492469198764566e-07,
    9.55141213040742e-07,
    -2.039215753801366e-06,
    4.374866789907488e-06,
    -9.439488275268397e-06,
    2.050721277567069e-05,
    -4.492623673813314e-05,
    9.945751278180853e-05,
    -0.00022315475845357939,
    0.0005096695247430425,
    -0.001192753911703261,
    0.0028905103307415234,
    -0.007385551028673986,
    0.020580808427784546,
    -0.0673523010531981,
    0.3224670334241132,
    0.42278433509846713,
)

# Scalar routines called by other kernels: Numba compiles them inline once registered.


# ---------------------------------------------------------------------------------------------
# Exponentially scaled modified Bessel functions i0e, i1e: the power series (positive terms)
# up to |x| = 30, the asymptotic series of e^-x I_nu(x) beyond (its smallest term there is
# about e^-60).

_BESSEL_SERIES_BELOW = 30.0


def _bessel_ie(nu, x):
    """e^-|x| I_nu(|x|) for nu in {0, 1} and x >= 0."""
    if x <= _BESSEL_SERIES_BELOW:
        half = 0.5 * x
        q = half * half
        term = 1.0 if nu == 0.0 else half
        total = term
        k = 0.0
        while True:
            k += 1.0
            term *= q / (k * (k + nu))
            total += term
            if term <= _MACHEP * total:  # (at x = 0 at once)
                break
        return total * math.exp(-x)
    mu = 4.0 * nu * nu
    term = 1.0
    total = 1.0
    k = 0.0
    while k < 60.0:
        k += 1.0
        odd = 2.0 * k - 1.0
        term *= -(mu - odd * odd) / (k * 8.0 * x)
        total += term
        if abs(term) < _MACHEP * abs(total):
            break
    return total / math.sqrt(2.0 * math.pi * x)


def _i0e(x):
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0
    return _bessel_ie(0.0, abs(x))


def _i1e(x):
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0
    value = _bessel_ie(1.0, abs(x))
    return -value if x < 0.0 else value


# ---------------------------------------------------------------------------------------------
# Regularized incomplete gamma functions P(a, x) = gammainc, Q = 1 - P = gammaincc: the series
# of P below x = a + 1, the continued fraction of Q above (modified Lentz), each evaluated with
# its derivative in a, so that d/da is as accurate as the value (the derivative in x is the
# integrand, in autodiff/ops/special.py).

_TINY = 1e-300


def _gamma_prefactor(a, x):
    """x^a e^-x / gamma(a), from logs."""
    return math.exp(a * math.log(x) - x - _lgamma(a))


def _gamma_series(a, x):
    """(P, dP/da) by the series P = x^a e^-x / gamma(a + 1) * sum x^n / ((a+1)...(a+n))."""
    term = 1.0
    dterm = 0.0  # d term / da
    total = 1.0
    dtotal = 0.0
    n = 0.0
    while n < 10000.0:
        n += 1.0
        ratio = x / (a + n)
        dterm = dterm * ratio - term * ratio / (a + n)
        term *= ratio
        total += term
        dtotal += dterm
        if term < _MACHEP * total and abs(dterm) <= _MACHEP * abs(dtotal):
            break
    front = math.exp(a * math.log(x) - x - _lgamma(a + 1.0))
    dfront = front * (math.log(x) - _digamma(a + 1.0))
    return front * total, dfront * total + front * dtotal


def _gamma_fraction(a, x):
    """(Q, dQ/da) by the continued fraction Q = x^a e^-x / gamma(a) / (x + 1 - a - 1(1-a)/(x +
    3 - a - ...)), differentiated along the modified Lentz iteration."""
    b = x + 1.0 - a
    db = -1.0
    c = 1.0 / _TINY
    dc = 0.0
    d = 1.0 / b
    dd = -db * d * d
    h = d
    dh = dd
    i = 0.0
    while i < 10000.0:
        i += 1.0
        an = -i * (i - a)
        dan = i
        b += 2.0
        # d = 1 / (an d + b), c = b + an / c, h *= c d
        den = an * d + b
        dden = dan * d + an * dd + db
        if abs(den) < _TINY:
            den = _TINY
        d = 1.0 / den
        dd = -dden * d * d
        cc = b + an / c
        dcc = db + dan / c - an * dc / (c * c)
        if abs(cc) < _TINY:
            cc = _TINY
        c = cc
        dc = dcc
        delta = c * d
        ddelta = dc * d + c * dd
        dh = dh * delta + h * ddelta
        h *= delta
        if abs(delta - 1.0) < _MACHEP and abs(h * ddelta) <= _MACHEP * abs(dh):
            break
    front = _gamma_prefactor(a, x)
    dfront = front * (math.log(x) - _digamma(a))
    return front * h, dfront * h + front * dh


def _gammainc_parts(a, x):
    """(P, Q, dP/da) for a > 0, x > 0 finite."""
    if x < a + 1.0:
        p, dp = _gamma_series(a, x)
        return p, 1.0 - p, dp
    q, dq = _gamma_fraction(a, x)
    return 1.0 - q, q, -dq


def _gammainc_edge(a, x):
    """P(a, x) where the series do not apply (nan if none: the value is finite then)."""
    if math.isnan(a) or math.isnan(x) or a < 0.0 or x < 0.0 or (a == 0.0 and x == 0.0):
        return math.nan
    if a == 0.0:
        return 1.0
    if x == 0.0:
        return 0.0
    if x == math.inf:
        return 1.0
    if a == math.inf:
        return 0.0
    return -1.0  # not an edge


def _gammainc(a, x):
    edge = _gammainc_edge(a, x)
    if edge != -1.0:
        return edge
    return _gammainc_parts(a, x)[0]


def _gammaincc(a, x):
    edge = _gammainc_edge(a, x)
    if edge != -1.0:
        return 1.0 - edge
    return _gammainc_parts(a, x)[1]


def _gammainc_da(a, x):
    """dP(a, x)/da (0 at the edges where P is constant in a, nan where P is)."""
    edge = _gammainc_edge(a, x)
    if edge != -1.0:
        return edge * 0.0
    return _gammainc_parts(a, x)[2]


# ---------------------------------------------------------------------------------------------
# Regularized incomplete beta function I_x(a, b): its continued fraction (modified Lentz), on
# whichever of x, 1 - x makes it converge fast (I_x(a, b) = 1 - I_{1-x}(b, a)).


def _beta_fraction(a, b, x):
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    m = 0.0
    while m < 10000.0:
        m += 1.0
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _MACHEP:
            break
    return h


def _betainc(a, b, x):
    if math.isnan(a) or math.isnan(b) or math.isnan(x):
        return math.nan
    if a < 0.0 or b < 0.0 or (a == 0.0 and b == 0.0) or x < 0.0 or x > 1.0:
        return math.nan
    if a == 0.0 or x == 1.0:
        return 1.0
    if b == 0.0 or x == 0.0:
        return 0.0
    if math.isinf(a) or math.isinf(b):
        return math.nan
    log_front = _lgamma(a + b) - _lgamma(a) - _lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


# ---------------------------------------------------------------------------------------------
# Riemann zeta for every real s (scipy.special.zeta(s) without q): the Hurwitz sum at q = 1
# for s > 1, the functional equation for s < 0, and Borwein's accelerated alternating series
# of the Dirichlet eta function on [0, 1).

_BORWEIN_N = 40


def _eta_borwein(s):
    """eta(s) = sum (-1)^k / (k+1)^s, by Borwein's algorithm 2 with n terms:
    -1/d_n sum_{k<n} (-1)^k (d_k - d_n) / (k+1)^s, d_k = n sum_{i<=k} (n+i-1)! 4^i/((n-i)! (2i)!),
    the d_k built by term ratios (twice: d_n first)."""
    n = _BORWEIN_N
    term = 1.0 / n  # i = 0: (n - 1)! / n!
    dn = term
    for i in range(1, n + 1):
        term *= 4.0 * (n + i - 1) * (n - i + 1) / ((2.0 * i) * (2.0 * i - 1.0))
        dn += term
    term = 1.0 / n
    dk = term
    total = 0.0
    for k in range(n):
        if k > 0:
            term *= 4.0 * (n + k - 1) * (n - k + 1) / ((2.0 * k) * (2.0 * k - 1.0))
            dk += term
        sign = 1.0 if k % 2 == 0 else -1.0
        total += sign * (dk - dn) / (k + 1.0) ** s
    return -total / dn


def _riemann_zeta(s):
    if math.isnan(s):
        return s
    if s == 1.0:
        return math.inf
    if s > 1.0:
        return _hurwitz_zeta(s, 1.0)
    if s == -math.inf:
        return math.nan
    if s >= -1.0:  # (reflecting from just below 0 would meet the pole at 1)
        return _eta_borwein(s) / (1.0 - 2.0 ** (1.0 - s))
    if _is_integer(0.5 * s):  # the trivial zeros
        return 0.0
    # zeta(s) = 2^s pi^(s-1) sin(pi s / 2) gamma(1 - s) zeta(1 - s)
    one_minus = 1.0 - s
    if one_minus > _MAX_GAMMA_ARG:
        log_mag = s * math.log(2.0) + (s - 1.0) * math.log(math.pi) + _lgamma(one_minus)
        sgn = math.sin(0.5 * math.pi * (s % 4.0))
        return math.copysign(math.inf, sgn) if log_mag > _LOG_MAX else sgn * math.exp(log_mag)
    return (
        2.0**s
        * math.pi ** (s - 1.0)
        * math.sin(0.5 * math.pi * (s % 4.0))
        * math.gamma(one_minus)
        * _hurwitz_zeta(one_minus, 1.0)
    )


_HELPERS = (
    _horner,
    _is_integer,
    _pow,
    _ndtr,
    _erfinv_parts,
    _digamma,
    _hurwitz_zeta,
    _hurwitz_zeta_sum,
    _zeta_euler_maclaurin,
    _cot_derivative,
    _polygamma_series,
    _bessel_ie,
    _gamma_prefactor,
    _gamma_series,
    _gamma_fraction,
    _gammainc_parts,
    _gammainc_edge,
    _beta_fraction,
    _eta_borwein,
    _lgamma,
)
_compile_lock = threading.Lock()
# What a compiled ufunc saves against np.vectorize of the same Python code, for tiering
# (kernels_ready): per call, and per element (between erf's saving and digamma's).
_NS_SAVED_PER_CALL = 2000.0
_NS_SAVED_PER_ELEMENT = 300.0
_helpers_registered = False


class ScalarKernel:
    """A scalar float64 routine mapped over NumPy-broadcast arguments: a Numba ufunc compiled
    on the first call (cached on disk), else `np.vectorize` of the same Python code.

    The result dtype follows the last argument (`result_dtype`). 0-d results are NumPy
    scalars, as from a ufunc.

    Example:
        >>> float(erf(0.5)), digamma(np.array([1.0, 2.0], np.float32)).dtype
        (0.520499877813, dtype('float32'))
    """

    def __init__(self, name: str, scalar, nin: int = 1, scipy: str | None = None):
        self.name = name
        self.scalar = scalar
        self.signature = f"float64({', '.join(['float64'] * nin)})"
        self.vectorized = np.vectorize(scalar, otypes=[np.float64])
        self.ufunc = None
        self.scipy = scipy  # the name of SciPy's ufunc of the same function, if it has one
        self._scipy_ufunc = None

    def reference(self, *args):
        """The scalar code mapped over the arguments (float64 arrays): what the fast paths
        are compared with."""
        with np.errstate(all="ignore"):
            return self.vectorized(*[np.asarray(a, dtype=np.float64) for a in args])

    def result_dtype(self, dtype) -> np.dtype:
        """The dtype of the result for a last argument of `dtype`: floats keep their dtype
        (float16 and bfloat16 too, as JAX; SciPy gives float32), bools and small integers
        give float32, wider integers float64; complex is refused."""
        dtype = np.dtype(dtype)
        if dtype.kind == "c":
            raise TypeError(f"autodiff.scipy.special.{self.name} does not support complex input")
        if dtype == np.float16 or is_bfloat16(dtype):
            return dtype
        return np.result_type(dtype, np.float32)

    def __call__(self, *args):
        dtype = self.result_dtype(dtype_of(args[-1]))
        args = [np.asarray(a, dtype=np.float64) for a in args]
        # Like SciPy's ufuncs, poles and domain errors give inf and nan silently.
        with np.errstate(all="ignore"):
            size = max(a.size for a in args)
            ufunc = self._scipy_ufunc if self.scipy else None
            if ufunc is None and self.scipy:
                ufunc = self._scipy_ufunc = _scipy_ufunc(self.scipy)
            if ufunc:
                out = ufunc(*args)
            elif kernels_ready(size, _NS_SAVED_PER_ELEMENT, _NS_SAVED_PER_CALL):
                out = (self.ufunc or self._compile())(*args)
            else:
                out = self.vectorized(*args)
        if out.dtype != dtype:
            out = out.astype(dtype)
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out

    def _compile(self):
        global _helpers_registered
        import numba
        from numba.extending import register_jitable

        with _compile_lock:
            if not _helpers_registered:
                for helper in _HELPERS:
                    register_jitable(helper)
                _helpers_registered = True
            if self.ufunc is None:
                try:
                    self.ufunc = numba.vectorize([self.signature], cache=True)(self.scalar)
                except RuntimeError:  # no usable cache locator: compile without caching
                    self.ufunc = numba.vectorize([self.signature])(self.scalar)
        return self.ufunc


def _scipy_ufunc(name: str):
    """SciPy's ufunc `scipy.special.<name>`, or False when SciPy is not there."""
    try:
        import scipy.special
    except ImportError:
        return False
    return getattr(scipy.special, name, False)


erf = ScalarKernel("erf", _erf, scipy="erf")
erfc = ScalarKernel("erfc", _erfc, scipy="erfc")
erfinv = ScalarKernel("erfinv", _erfinv, scipy="erfinv")
ndtri = ScalarKernel("ndtri", _ndtri, scipy="ndtri")
log_ndtr = ScalarKernel("log_ndtr", _log_ndtr, scipy="log_ndtr")
gammaln = ScalarKernel("gammaln", _lgamma, scipy="gammaln")
gamma = ScalarKernel("gamma", _gamma, scipy="gamma")
digamma = ScalarKernel("digamma", _digamma, scipy="psi")
polygamma = ScalarKernel("polygamma", _polygamma, nin=2)  # (SciPy's takes integer orders)
i0e = ScalarKernel("i0e", _i0e, scipy="i0e")
i1e = ScalarKernel("i1e", _i1e, scipy="i1e")
gammainc = ScalarKernel("gammainc", _gammainc, nin=2, scipy="gammainc")
gammaincc = ScalarKernel("gammaincc", _gammaincc, nin=2, scipy="gammaincc")
gammainc_da = ScalarKernel("gammainc_da", _gammainc_da, nin=2)
betainc = ScalarKernel("betainc", _betainc, nin=3, scipy="betainc")
zeta = ScalarKernel("zeta", _hurwitz_zeta, nin=2)
riemann_zeta = ScalarKernel("riemann_zeta", _riemann_zeta)
