"""Pure maths of DCA: fixed-point encoding, additive secret sharing, noise scaling.

No SimPy here; every function takes arrays (and a ``numpy.random.Generator``).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = [
    "FixedPointRangeError",
    "client_noise_std",
    "complete_shares",
    "decode_fixed",
    "decode_sum",
    "encode_fixed",
    "fixed_point_bound",
    "reconstruct",
    "split_additive",
]

U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]


class FixedPointRangeError(ValueError):
    """A value does not fit the fixed-point representation."""


def fixed_point_bound(fraction_bits: int) -> float:
    """Largest magnitude (exclusive) representable with ``fraction_bits`` in signed 64 bits."""
    if not 0 <= fraction_bits <= 62:
        raise ValueError(f"fraction_bits must be in [0, 62], got {fraction_bits}")
    return float(2 ** (63 - fraction_bits))


def encode_fixed(x: npt.ArrayLike, fraction_bits: int) -> U64:
    """Round ``x * 2^f`` to the nearest integer and map it into Z_{2^64} (two's complement).

    Raises :class:`FixedPointRangeError` naming the bound if any |x| ≥ 2^(63−f).
    """
    arr = np.asarray(x, dtype=np.float64)
    bound = fixed_point_bound(fraction_bits)
    # Two reductions instead of |x| and a finiteness mask (the share round's hot path):
    # max and min propagate a NaN, and an infinity is not finite either.
    peak = max(float(arr.max()), -float(arr.min())) if arr.size else 0.0
    if not math.isfinite(peak):
        raise FixedPointRangeError("fixed-point encoding got a NaN or infinite value")
    if peak >= bound:
        raise FixedPointRangeError(
            f"value {peak:.6g} is outside the fixed-point range (-{bound:.6g}, {bound:.6g}) "
            f"= ±2^{63 - fraction_bits} for fraction_bits = {fraction_bits}; lower fraction_bits "
            "or scale the data down"
        )
    scaled = np.multiply(arr, float(2**fraction_bits))
    np.rint(scaled, out=scaled)
    return scaled.astype(np.int64).view(np.uint64)


def decode_fixed(u: npt.ArrayLike, fraction_bits: int) -> F64:
    """Inverse of :func:`encode_fixed` for a (possibly summed) element of Z_{2^64}."""
    arr = np.asarray(u, dtype=np.uint64)
    return arr.view(np.int64).astype(np.float64) / float(2**fraction_bits)


def decode_sum(u: npt.ArrayLike, fraction_bits: int, modulus_bits: int = 64) -> F64:
    """A summed element of Z_{2^64} read as a sum mod 2^b: reduced mod 2^b, taken in the
    centred range [−2^(b−1), 2^(b−1)) and divided by 2^f. With b = 64 this is
    :func:`decode_fixed` (sums in Z_{2^64} reduce mod any 2^b, as 2^b divides 2^64)."""
    if modulus_bits == 64:
        return decode_fixed(u, fraction_bits)
    # Imported here: the intnoise package brings its accountant (dp-accounting, scipy),
    # which the share round's worker processes do not need.
    from privsim.kit.intnoise.modulus import from_modular

    return from_modular(u, modulus_bits).astype(np.float64) / float(2**fraction_bits)


def split_additive(x: U64, n_shares: int, rng: np.random.Generator) -> U64:
    """Algorithm 1, steps 1–2: ``n_shares`` vectors uniform in Z_{2^64}^d summing to ``x``.

    With r_1 … r_{M−1} uniform and r_M = −Σ_{k<M} r_k, the messages are
    m_1 = x + r_1 and m_k = r_k (k ≥ 2); any M − 1 of them are jointly uniform.
    Returns an array of shape ``(n_shares, *x.shape)``.
    """
    if n_shares < 1:
        raise ValueError(f"n_shares must be >= 1, got {n_shares}")
    x = np.asarray(x, dtype=np.uint64)
    shares = np.empty((n_shares, *x.shape), dtype=np.uint64)
    if n_shares == 1:
        shares[0] = x
        return shares
    r = rng.bit_generator.random_raw(size=(n_shares - 1, *x.shape)).astype(np.uint64, copy=False)
    shares[0] = x + r[0]
    shares[1:-1] = r[1:]
    shares[-1] = np.uint64(0) - r.sum(axis=0, dtype=np.uint64)
    return shares


def complete_shares(x: U64, shares: U64) -> None:
    """Algorithm 1's messages for many clients at once, in place and without copies.

    ``shares`` is ``(n, M, d)`` with uniform words in ``[:, :M-1]`` (r_1 … r_{M−1});
    ``x`` is ``(n, d)``. Afterwards ``shares[:, 0] = x + r_1``, ``shares[:, k] = r_{k+1}``
    and ``shares[:, M-1] = −Σ_{k<M} r_k``, so that Σ_k shares[:, k] = x.
    """
    m = shares.shape[1]
    if m == 1:
        shares[:, 0] = x
        return
    np.sum(shares[:, : m - 1], axis=1, dtype=np.uint64, out=shares[:, m - 1])
    np.subtract(np.uint64(0), shares[:, m - 1], out=shares[:, m - 1])
    shares[:, 0] += x


def reconstruct(shares: U64) -> U64:
    """Sum of shares in Z_{2^64} (exact: unsigned arithmetic wraps modulo 2^64)."""
    return np.asarray(shares, dtype=np.uint64).sum(axis=0, dtype=np.uint64)


def client_noise_std(sigma_std: float, n_clients: int, tolerated: int) -> float:
    """Theorem 1: each client's noise std σ_std / sqrt(N − T − 1), so that any N − T − 1
    honest contributions together carry the trusted-aggregator variance σ²_std."""
    if n_clients - tolerated - 1 <= 0:
        raise ValueError(f"need N - T - 1 > 0, got N = {n_clients}, T = {tolerated}")
    return sigma_std / math.sqrt(n_clients - tolerated - 1)
