"""Shamir t-of-n secret sharing over the prime field F_p, p = 2^61 − 1 (Shamir 1979).

A secret s ∈ F_p^d is hidden as the constant term of a random polynomial of degree t − 1,

    f(x) = s + a_1 x + a_2 x² + … + a_{t−1} x^{t−1}   (mod p),   a_j uniform in F_p^d,

and holder j receives the share f(x_j) at its public, distinct, non-zero abscissa x_j.
Any t shares determine f, hence s = f(0), by Lagrange interpolation at zero:

    s = Σ_{j ∈ S} λ_j f(x_j),   λ_j = Π_{m ∈ S, m ≠ j} x_m / (x_m − x_j)   (mod p),

while any t − 1 shares are jointly uniform and say nothing about s.

The arithmetic is vectorised in ``uint64`` without object arrays: p is a Mersenne prime,
so 2^61 ≡ 1 (mod p) and a product of two 61-bit residues is reduced from four 31-bit
partial products that each fit in 64 bits (:func:`mul`). Shares are arrays of shape
``(holders, *secret.shape)``; a secret of several words (a 32-byte seed, say) is
shared coordinate-wise with independent polynomials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "PRIME",
    "ShamirError",
    "add",
    "decode_bytes",
    "decode_signed",
    "encode_bytes",
    "encode_signed",
    "evaluate",
    "lagrange_at_zero",
    "mul",
    "reconstruct",
    "residues_from_words",
    "split",
    "sub",
    "sum_mod",
]

#: The field modulus p = 2^61 − 1 (a Mersenne prime).
PRIME = (1 << 61) - 1

U64 = npt.NDArray[np.uint64]

_P = np.uint64(PRIME)
_LOW31 = np.uint64((1 << 31) - 1)
_LOW30 = np.uint64((1 << 30) - 1)
#: Bytes per field element when packing byte strings (56 bits < 61 bits).
_CHUNK = 7


class ShamirError(ValueError):
    """Bad sharing parameters or too few / inconsistent shares to reconstruct."""


def _reduce(s: U64) -> U64:
    """s mod p for any s < 2^64, using 2^61 ≡ 1: fold the top bits down twice."""
    s = (s & _P) + (s >> np.uint64(61))
    s = (s & _P) + (s >> np.uint64(61))
    return s - _P * (s >= _P).astype(np.uint64)


def add(a: npt.ArrayLike, b: npt.ArrayLike) -> U64:
    """(a + b) mod p for residues a, b < p (the sum is below 2^62, no overflow)."""
    return _reduce(np.add(a, b, dtype=np.uint64))


def sub(a: npt.ArrayLike, b: npt.ArrayLike) -> U64:
    """(a − b) mod p for residues a, b < p."""
    return _reduce(np.add(a, _P - np.asarray(b, dtype=np.uint64), dtype=np.uint64))


def mul(a: npt.ArrayLike, b: npt.ArrayLike) -> U64:
    """(a · b) mod p for residues a, b < p, elementwise with broadcasting.

    With a = a₁2³¹ + a₀ and b = b₁2³¹ + b₀ (a₀, b₀ < 2³¹; a₁, b₁ < 2³⁰):
    a·b = a₁b₁2⁶² + (a₁b₀ + a₀b₁)2³¹ + a₀b₀. Since 2⁶¹ ≡ 1, 2⁶² ≡ 2, and with the
    middle term c = c₁2³⁰ + c₀, c·2³¹ ≡ c₁ + c₀2³¹. Every term fits in 64 bits and
    their sum is below 2⁶⁴, so one :func:`_reduce` finishes the job.
    """
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    a0, a1 = a & _LOW31, a >> np.uint64(31)
    b0, b1 = b & _LOW31, b >> np.uint64(31)
    mid = a1 * b0 + a0 * b1  # < 2^62
    total = (a1 * b1) << np.uint64(1)  # < 2^61
    total = total + (mid >> np.uint64(30)) + ((mid & _LOW30) << np.uint64(31)) + a0 * b0
    return _reduce(total)


def _check_points(xs: Sequence[int]) -> list[int]:
    points = [int(x) for x in xs]
    if len(set(points)) != len(points):
        raise ShamirError(f"holder abscissas must be distinct, got {points}")
    bad = [x for x in points if not 0 < x < PRIME]
    if bad:
        raise ShamirError(f"holder abscissas must be in [1, p − 1], got {bad}")
    return points


def split(
    secret: npt.ArrayLike,
    threshold: int,
    holders: int | Sequence[int],
    rng: np.random.Generator,
) -> U64:
    """Shares of ``secret`` (residues mod p) for ``holders``, any ``threshold`` of which
    reconstruct it: f(x_j) for f(x) = s + Σ_{k=1}^{t−1} a_k x^k with uniform a_k drawn
    from ``rng`` (see :func:`evaluate`).

    ``holders`` is either a count n (abscissas 1 … n) or the abscissas themselves.
    Returns an array of shape ``(len(holders), *secret.shape)``: row j is holder j's share.
    """
    s = np.asarray(secret, dtype=np.uint64)
    n = holders if isinstance(holders, int) else len(holders)
    if not 1 <= threshold <= max(n, 1):
        raise ShamirError(f"threshold must be in [1, {n}] (the number of holders), got {threshold}")
    coeffs = rng.integers(0, PRIME, size=(threshold - 1, *s.shape), dtype=np.uint64)
    return evaluate(s, coeffs, holders)


def evaluate(secret: npt.ArrayLike, coeffs: U64, holders: int | Sequence[int]) -> U64:
    """f(x_j) = s + Σ_{k=1}^{t−1} a_k x_j^k (mod p) for every holder, by Horner's rule
    f(x) = (…(a_{t−1} x + a_{t−2}) x + …) x + s; ``coeffs[k − 1]`` is a_k (same shape as
    the secret; t = len(coeffs) + 1). Returns shape ``(len(holders), *secret.shape)``.
    """
    s = np.asarray(secret, dtype=np.uint64)
    if s.size and int(s.max()) >= PRIME:
        raise ShamirError("secret entries must be residues in [0, p) with p = 2^61 − 1")
    xs = _check_points(range(1, holders + 1) if isinstance(holders, int) else holders)
    if len(coeffs) + 1 > len(xs):
        raise ShamirError(
            f"threshold must be in [1, {len(xs)}] (the number of holders), got {len(coeffs) + 1}"
        )
    x = np.asarray(xs, dtype=np.uint64).reshape((len(xs),) + (1,) * s.ndim)
    acc = np.zeros((len(xs), *s.shape), dtype=np.uint64)
    if max(xs) < 1 << 29:  # small abscissas (the usual 1 … n): lazily reduced Horner steps
        for a in [*coeffs[::-1], s]:
            acc = _horner_step(acc, x, a)
        return _reduce(acc)
    for a in coeffs[::-1]:
        acc = add(mul(acc, x), a)
    return add(mul(acc, x), s)


def _horner_step(acc: U64, x: U64, a: npt.ArrayLike) -> U64:
    """acc·x + a, folded once (2^61 ≡ 1) but not fully reduced. With acc = h·2³² + l,
    acc·x = (hx)·2³² + lx and (hx)·2³² ≡ (hx ≫ 29) + ((hx mod 2²⁹) ≪ 32). For
    acc < 2^61 + 8, x < 2^29 and a < p every term fits in 64 bits and the result is
    below 2^61 + 8 again, so steps chain and one :func:`_reduce` at the end gives the
    residue."""
    hx = acc >> np.uint64(32)
    hx *= x  # < 2^58 + x
    lx = acc & np.uint64(0xFFFFFFFF)
    lx *= x  # < 2^61
    out = hx >> np.uint64(29)
    hx &= np.uint64((1 << 29) - 1)
    hx <<= np.uint64(32)
    out += hx
    out += lx
    out += np.asarray(a, dtype=np.uint64)  # < 2^63 + 2^61
    top = out >> np.uint64(61)
    out &= _P
    out += top
    return out


def residues_from_words(words: U64) -> U64:
    """Uniform 64-bit words as residues mod p: the top 61 bits, with 2^61 − 1 ↦ 0. The
    result is uniform on F_p up to a statistical distance of 2^−61 (one value of 2^61
    doubles up), negligible beside the simulation's other approximations."""
    r = np.asarray(words, dtype=np.uint64) >> np.uint64(3)
    return r - _P * (r == _P).astype(np.uint64)


def lagrange_at_zero(xs: Sequence[int]) -> U64:
    """λ_j = Π_{m ≠ j} x_m / (x_m − x_j) mod p for the given distinct abscissas.

    Computed as λ_j = (Π_m x_m) · x_j⁻¹ · (Π_{m ≠ j} (x_m − x_j))⁻¹, the products over
    rows of the difference matrix taken in vectorised blocks (O(t²) field products).
    """
    points = _check_points(xs)
    t = len(points)
    x = np.asarray(points, dtype=np.uint64)
    numerator = 1
    for xm in points:
        numerator = numerator * xm % PRIME
    dens: list[int] = []
    rows = max(1, (1 << 21) // max(t, 1))
    for start in range(0, t, rows):
        block = sub(x[None, :], x[start : start + rows, None])
        block[np.arange(block.shape[0]), np.arange(start, start + block.shape[0])] = 1
        dens.extend(int(v) for v in _prod_mod(block.T))
    lam = [
        numerator * pow(xj * den % PRIME, -1, PRIME) % PRIME
        for xj, den in zip(points, dens, strict=True)
    ]
    return np.array(lam, dtype=np.uint64)


def _prod_mod(factors: U64) -> U64:
    """Π over axis 0 mod p, by pairwise halving."""
    while factors.shape[0] > 1:
        half = factors.shape[0] // 2
        folded = mul(factors[:half], factors[half : 2 * half])
        if factors.shape[0] % 2:
            folded = np.concatenate([folded, factors[2 * half :]])
        factors = folded
    return factors[0]


def sum_mod(terms: U64) -> U64:
    """Σ over axis 0 mod p: seven residues (< 2^61 each) sum below 2^64, so add groups
    of seven in uint64, reduce, and repeat."""
    terms = np.asarray(terms, dtype=np.uint64)
    while terms.shape[0] > 1:
        groups = -(-terms.shape[0] // 7)
        padded = np.zeros((groups * 7, *terms.shape[1:]), dtype=np.uint64)
        padded[: terms.shape[0]] = terms
        terms = _reduce(padded.reshape(groups, 7, *terms.shape[1:]).sum(axis=1, dtype=np.uint64))
    return terms[0] if terms.shape[0] else np.zeros(terms.shape[1:], dtype=np.uint64)


def reconstruct(shares_by_x: Mapping[int, npt.ArrayLike], threshold: int | None = None) -> U64:
    """s = f(0) = Σ_j λ_j f(x_j) from a mapping abscissa → share.

    With ``threshold`` given, fewer shares raise :class:`ShamirError` and only the first
    ``threshold`` (in abscissa order) are used; without it every given share is used
    (t − 1 shares then interpolate a wrong value, not an error: Shamir cannot tell).
    """
    xs = sorted(int(x) for x in shares_by_x)
    if not xs:
        raise ShamirError("no shares to reconstruct from")
    if threshold is not None:
        if len(xs) < threshold:
            raise ShamirError(
                f"{len(xs)} shares cannot reconstruct a {threshold}-of-n secret; need {threshold}"
            )
        xs = xs[:threshold]
    stacked = np.stack([np.asarray(shares_by_x[x], dtype=np.uint64) for x in xs])
    lam = lagrange_at_zero(xs).reshape((len(xs),) + (1,) * (stacked.ndim - 1))
    return sum_mod(mul(lam, stacked))


def encode_signed(values: npt.ArrayLike) -> U64:
    """Signed integers |v| < p/2 as residues: v ↦ v mod p (negatives become p − |v|)."""
    v = np.asarray(values, dtype=np.int64)
    half = PRIME // 2
    if v.size and int(np.max(np.abs(v))) > half:
        raise ShamirError(f"signed values must satisfy |v| <= (p − 1)/2 = {half}")
    return np.where(v < 0, _P - (-v).astype(np.uint64), v.astype(np.uint64)).astype(np.uint64)


def decode_signed(residues: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Inverse of :func:`encode_signed`: residues above (p − 1)/2 are negatives."""
    r = np.asarray(residues, dtype=np.uint64)
    neg = r > np.uint64(PRIME // 2)
    return np.where(neg, -((_P - r).astype(np.int64)), r.astype(np.int64))


def encode_bytes(data: bytes) -> U64:
    """A byte string (a seed, a key) as field elements, 7 bytes (56 bits) per element,
    big-endian, the last chunk zero-padded; decode with the length."""
    padded = data + b"\x00" * (-len(data) % _CHUNK)
    return np.array(
        [int.from_bytes(padded[i : i + _CHUNK], "big") for i in range(0, len(padded), _CHUNK)],
        dtype=np.uint64,
    )


def decode_bytes(elements: npt.ArrayLike, length: int) -> bytes:
    """Inverse of :func:`encode_bytes` for a string of ``length`` bytes."""
    words = np.asarray(elements, dtype=np.uint64).tolist()
    if any(w >> (8 * _CHUNK) for w in words):
        raise ShamirError("element too large to be a packed byte chunk (wrong reconstruction?)")
    return b"".join(int(w).to_bytes(_CHUNK, "big") for w in words)[:length]
