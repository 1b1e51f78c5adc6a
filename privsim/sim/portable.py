"""Elementary functions that give the same bits on every machine.

NumPy picks a SIMD implementation of ``exp``, ``log`` and ``log1p`` by the CPU it runs on
(AVX-512 kernels where the CPU has them, the C library's elsewhere); they may round the
last bit differently, so a simulated time computed with ``np.exp`` on one laptop can differ
from a colleague's. The functions here use only IEEE-754 basic operations (add, subtract,
multiply, divide, ``rint`` and ``floor``, and bit moves), which every conforming machine
rounds alike, whatever the vector width. They are accurate to a few units in the last place
(the tests measure it against NumPy) and vectorised; the engine uses them for the values
that decide event times and for the secure sum's keyed Gaussian draws.

- :func:`exp`: Cody–Waite reduction x = k·ln 2 + r, |r| ≤ ln 2 / 2, with ln 2 split in
  two so that k·ln2_hi is exact, then the Taylor series of e^r to r¹³ (remainder below
  2⁻⁵⁸) and an exact scaling by 2^k.
- :func:`log`: y = m·2^e with m in [√½, √2), s = (m − 1)/(m + 1), ln m = 2·atanh s =
  2 Σ s^(2j+1)/(2j+1) to s²³ (|s| ≤ 0.172: remainder below 2⁻⁵⁸), plus e·ln 2 split.
- :func:`sin_cos_turns`: sin and cos of 2π·t for t in turns, reduced exactly to the
  nearest quarter turn, then the Taylor series on [−π/4, π/4].
"""

from __future__ import annotations

import math
from decimal import Context, Decimal

import numpy as np
import numpy.typing as npt

__all__ = ["exp", "exp_one", "log", "sin_cos_turns"]

F64 = npt.NDArray[np.float64]

#: ln 2 split: the high part has 32 significant bits, so k·LN2_HI is exact for |k| < 2²¹.
_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
#: ln 2 − LN2_HI, from 60 decimal digits of ln 2 (the double nearest to it).
_LN2_LO = float(Decimal(2).ln(Context(prec=60)) - Decimal(_LN2_HI))
_INV_LN2 = 1.0 / math.log(2.0)
#: e^x overflows above this and is 0 below the other (the smallest subnormal's log, halved up).
_EXP_MAX = 709.782712893384
_EXP_MIN = -745.1332191019412
_EXP_TERMS = tuple(1.0 / math.factorial(n) for n in range(13, -1, -1))  # r¹³/13! … 1
_ATANH_TERMS = tuple(1.0 / (2 * j + 1) for j in range(11, -1, -1))  # s²²/23 … 1
_SIN_TERMS = tuple((-1.0) ** j / math.factorial(2 * j + 1) for j in range(9, -1, -1))
_COS_TERMS = tuple((-1.0) ** j / math.factorial(2 * j) for j in range(9, -1, -1))
_HALF_PI = math.pi / 2.0
_MANTISSA = np.uint64((1 << 52) - 1)
_ONE_BITS = np.uint64(1023 << 52)


def _horner(coefficients: tuple[float, ...], x: F64) -> F64:
    """Σ c_i x^i with the coefficients from the highest power down (Horner's rule)."""
    acc = np.full(x.shape, coefficients[0])
    for c in coefficients[1:]:
        acc *= x
        acc += c
    return acc


def _power_of_two(k: npt.NDArray[np.int64]) -> F64:
    """2^k for integer k in [−1022, 1023], built from its bits (exact)."""
    return ((k + 1023).astype(np.uint64) << np.uint64(52)).view(np.float64)


def exp_one(x: float) -> float:
    """:func:`exp` of one Python float: the same operations in the same order as the
    array path (Python floats are IEEE doubles, ``round`` rounds half to even like
    ``rint``), so the same bits, at a twentieth of the array path's overhead (one
    message's latency is one value)."""
    if x != x:
        return math.nan
    if x > _EXP_MAX:
        return math.inf
    if x < _EXP_MIN:
        return 0.0
    k = round(x * _INV_LN2)
    kf = float(k)
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    acc = _EXP_TERMS[0]
    for c in _EXP_TERMS[1:]:
        acc = acc * r + c
    half = k // 2
    return acc * math.ldexp(1.0, half) * math.ldexp(1.0, k - half)


def exp(x: npt.ArrayLike) -> F64:
    """e^x, elementwise, with the same bits on every IEEE-754 machine (±0 → 1, −∞ → 0,
    +∞ and overflow → ∞, NaN → NaN)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 1:
        return np.full(x.shape, exp_one(float(x.reshape(-1)[0])))
    flat = np.atleast_1d(x).ravel()
    clipped = np.clip(np.nan_to_num(flat, nan=0.0), _EXP_MIN, _EXP_MAX)
    k = np.rint(clipped * _INV_LN2)
    r = (clipped - k * _LN2_HI) - k * _LN2_LO
    poly = _horner(_EXP_TERMS, r)
    ki = k.astype(np.int64)
    # 2^k in two exact factors, so that k down to −1075 (subnormal results) and up to 1024
    # stay in the representable range of each factor; the last product rounds once.
    half = ki // 2
    with np.errstate(over="ignore"):
        out = poly * _power_of_two(half) * _power_of_two(ki - half)
    out[flat > _EXP_MAX] = np.inf
    out[flat < _EXP_MIN] = 0.0
    out[np.isnan(flat)] = np.nan
    return out.reshape(x.shape)


def log(y: npt.ArrayLike) -> F64:
    """ln y, elementwise, with the same bits on every IEEE-754 machine, for y > 0 normal
    (0 → −∞, +∞ → ∞, negative or NaN → NaN; subnormal y are scaled up exactly first)."""
    y = np.asarray(y, dtype=np.float64)
    flat = np.atleast_1d(y).ravel().copy()
    bad = ~(flat > 0.0) | np.isinf(flat)
    work = np.where(bad, 1.0, flat)
    tiny = work < 2.2250738585072014e-308
    work[tiny] *= 2.0**54  # exact
    bits = work.view(np.uint64)
    e = (bits >> np.uint64(52)).astype(np.int64) - 1023 - np.where(tiny, 54, 0)
    m = ((bits & _MANTISSA) | _ONE_BITS).view(np.float64)  # [1, 2)
    high = m > math.sqrt(2.0)
    m[high] *= 0.5  # exact: m in [√½, √2)
    e[high] += 1
    s = (m - 1.0) / (m + 1.0)
    series = _horner(_ATANH_TERMS, s * s)
    ef = e.astype(np.float64)
    out = (ef * _LN2_HI + (2.0 * s * series + ef * _LN2_LO)).astype(np.float64)
    out[flat == 0.0] = -np.inf
    out[flat == np.inf] = np.inf
    out[~(flat >= 0.0)] = np.nan
    return out.reshape(y.shape)


def sin_cos_turns(t: npt.ArrayLike) -> tuple[F64, F64]:
    """(sin 2πt, cos 2πt), elementwise, with the same bits on every IEEE-754 machine, for
    finite t (Box–Muller's angle is 2π times a uniform in [0, 1)). The reduction to the
    nearest quarter turn, q = rint(4t), is exact for |t| < 2⁵⁰; the rest, θ = (π/2)(4t − q)
    in [−π/4, π/4], goes through the Taylor series of sin and cos to θ¹⁹ and θ¹⁸."""
    t = np.asarray(t, dtype=np.float64)
    four = 4.0 * t  # exact
    q = np.rint(four)
    theta = _HALF_PI * (four - q)
    theta2 = theta * theta
    s = theta * _horner(_SIN_TERMS, theta2)
    c = _horner(_COS_TERMS, theta2)
    quadrant = q.astype(np.int64)
    odd = (quadrant & 1).astype(bool)
    # sin: (s, c, −s, −c) and cos: (c, −s, −c, s) by quadrant; a sign change is exact.
    sin = np.where(odd, c, s)
    cos = np.where(odd, s, c)
    sin[(quadrant & 2) != 0] *= -1.0
    cos[((quadrant + 1) & 2) != 0] *= -1.0
    return sin, cos
