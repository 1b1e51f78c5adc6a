"""The pure maths of SecAgg: fixed-point encoding mod 2^b, share records, masking and
unmasking (Bonawitz et al. 2017, §4 and Figure 4).

Client u holds x_u ∈ Z_R^d with R = 2^b. With its self-mask seed b_u and the pairwise
seeds s_{u,v} = KA.agree(s_u^SK, s_v^PK) it sends

    y_u = x_u + PRG(b_u) + Σ_{v ∈ U2 ∩ N(u)} Δ_{u,v} · PRG(s_{u,v})   (mod R),
    Δ_{u,v} = +1 if u > v, −1 if u < v,

so the pairwise masks of two survivors cancel in Σ y_u, and the server removes the rest:

    z = Σ_{u ∈ U3} y_u − Σ_{u ∈ U3} PRG(b_u) − Σ_{u ∈ U3} Σ_{v ∈ (U2 \\ U3) ∩ N(u)} Δ_{u,v} PRG(s_{u,v}).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.secagg.crypto import KEY_BYTES, SEED_BYTES, expand

__all__ = [
    "B_WORDS",
    "RECORD_BYTES",
    "SK_WORDS",
    "apply_mask",
    "decode_sum",
    "encode_inputs",
    "encode_integers",
    "modulus_mask",
    "pack_records",
    "unpack_records",
    "wire_dtype",
]

U64 = npt.NDArray[np.uint64]

#: Field elements of a shared b_u (16 bytes) and s_u^SK (32 bytes), 7 bytes each.
B_WORDS = -(-SEED_BYTES // 7)
SK_WORDS = -(-KEY_BYTES // 7)
#: Plaintext of one encrypted share: u, v (8 bytes each) and the share words.
RECORD_BYTES = 16 + 8 * (B_WORDS + SK_WORDS)


def modulus_mask(bits: int) -> np.uint64:
    return np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)


def wire_dtype(bits: int) -> type[np.unsignedinteger]:
    """The narrowest unsigned type holding residues mod 2^bits (what travels)."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bits <= 8 * np.dtype(dtype).itemsize:
            return dtype
    return np.uint64


def encode_inputs(
    z: npt.NDArray[np.float64], fraction_bits: int, bits: int, noise: npt.NDArray[np.int64]
) -> U64:
    """x_u = round(z · 2^f) + noise mod 2^b (two's complement for negatives). A value
    past ±2^62 (a malicious client's unclipped update; clipped ones never come near)
    is reduced exactly, as the integer the float holds, not cast (undefined past 2^63)."""
    scaled = np.rint(np.asarray(z, dtype=np.float64) * float(1 << fraction_bits))
    if scaled.size and not np.abs(scaled).max() < _CAST_LIMIT:
        if not np.all(np.isfinite(scaled)):
            raise ValueError("an input to secure aggregation is not finite")
        return (_residue_64(scaled) + noise.astype(np.uint64)) & modulus_mask(bits)
    ints = scaled.astype(np.int64) + noise
    return ints.astype(np.uint64) & modulus_mask(bits)


#: Below this magnitude a rounded input casts to int64 exactly, noise added.
_CAST_LIMIT = float(2**62)
_TWO_32 = float(2**32)


def _residue_64(v: npt.NDArray[np.float64]) -> U64:
    """v mod 2^64 for integer-valued floats of any magnitude, exactly: v = hi·2^32 + lo
    with lo in [0, 2^32) (a power-of-two division and a floor are exact, and so is
    the difference, an integer below 2^32), hi taken mod 2^32 by ``fmod`` (exact)."""
    hi = np.floor(v / _TWO_32)
    lo = v - hi * _TWO_32
    hi = np.fmod(hi, _TWO_32)
    hi = np.where(hi < 0, hi + _TWO_32, hi)
    return (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)


def encode_integers(x: npt.NDArray[np.integer], bits: int, noise: npt.NDArray[np.int64]) -> U64:
    """x_u = x + noise mod 2^b for inputs already encoded as integers (two's complement
    for negatives)."""
    ints = np.asarray(x).astype(np.int64) + noise
    return ints.astype(np.uint64) & modulus_mask(bits)


def encode(z: npt.NDArray[Any], fraction_bits: int, bits: int, noise: npt.NDArray[np.int64]) -> U64:
    """x_u mod 2^b of a client's row: real rows in fixed point (:func:`encode_inputs`),
    integer rows as they are (:func:`encode_integers`), with the noise share added."""
    if z.dtype.kind == "f":
        return encode_inputs(z, fraction_bits, bits, noise)
    return encode_integers(z, bits, noise)


def decode_sum(total: U64, fraction_bits: int, bits: int) -> npt.NDArray[np.float64]:
    """The signed integer sum (residues ≥ 2^(b−1) are negative) divided by 2^f."""
    total = np.asarray(total, dtype=np.uint64) & modulus_mask(bits)
    signed = total.astype(np.int64)  # two's complement: wraps at 2^63 for b = 64
    if bits < 64:
        signed = np.where(signed >= (1 << (bits - 1)), signed - (1 << bits), signed)
    return np.asarray(signed, dtype=np.float64) / float(1 << fraction_bits)


def apply_mask(acc: U64, seed: bytes, sign: int, bits: int) -> None:
    """acc += sign · PRG(seed) (mod 2^64, reduced mod 2^b by the caller)."""
    mask = expand(seed, acc.size, bits)
    if sign > 0:
        acc += mask
    else:
        acc -= mask


def pack_records(
    sender: int | npt.NDArray[np.int64], receivers: npt.NDArray[np.int64], shares: U64
) -> npt.NDArray[np.uint8]:
    """Row j: u ‖ v_j ‖ share words, little-endian (the plaintext of e_{u,v_j}); one
    sender for all rows, or one per row."""
    ids = np.empty((receivers.size, 2), dtype="<i8")
    ids[:, 0], ids[:, 1] = sender, receivers
    words = np.ascontiguousarray(shares, dtype="<u8")
    return np.concatenate([ids.view(np.uint8), words.view(np.uint8)], axis=1)


def unpack_records(plain: bytes) -> tuple[npt.NDArray[np.int64], U64]:
    """Inverse of :func:`pack_records` for concatenated rows: ((u, v) pairs, words)."""
    rows = np.frombuffer(plain, dtype="<u8").reshape(-1, RECORD_BYTES // 8)
    return rows[:, :2].view("<i8").astype(np.int64), rows[:, 2:].astype(np.uint64)
