"""Seed-compressed additive shares: M − 1 shares travel as 32-byte seeds.

Instead of sending node k ≥ 1 the uniform vector r_{i,k} ∈ Z_{2^64}^d, client i sends a
seed s_{i,k} of 32 bytes, and the node expands r_{i,k} = G(s_{i,k}) itself with a
pseudo-random generator; node 0 receives the explicit correction

    c_i = x_i − Σ_{k=1}^{M−1} G(s_{i,k})   (mod 2^64),

so Σ_k m_{i,k} = x_i exactly as with full shares, and any M − 1 shares are
(computationally) uniform. G is AES-256 in counter mode keyed by the seed, read as
little-endian 64-bit words (a standard PRG from a PRF). A client's upload drops from
M·d·8 bytes to d·8 + 32(M − 1).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["SEED_BYTES", "SEED_WORDS", "add_expansions", "expand", "expand_into", "seeded_shares"]

U64 = npt.NDArray[np.uint64]

#: Bytes of one seed.
SEED_BYTES = 32
#: 64-bit words of one seed.
SEED_WORDS = SEED_BYTES // 8
_NONCE = bytes(16)


def expand_into(seed: bytes, out: U64) -> None:
    """Write G(seed) into ``out`` (a C-contiguous uint64 vector): AES-256-CTR under
    ``seed`` from counter 0, applied to zeros."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"a share seed is {SEED_BYTES} bytes, got {len(seed)}")
    view = out.data.cast("B")
    ctr = Cipher(algorithms.AES(seed), modes.CTR(_NONCE)).encryptor()
    ctr.update_into(_zeros(len(view)), view)


_ZEROS: dict[int, bytes] = {}


def _zeros(nbytes: int) -> bytes:
    zeros = _ZEROS.get(nbytes)
    if zeros is None:
        zeros = _ZEROS.setdefault(nbytes, bytes(nbytes))
    return zeros


def expand(seed: bytes, dimension: int) -> U64:
    """G(seed) as ``dimension`` words of Z_{2^64}."""
    out = np.empty(dimension, dtype=np.uint64)
    expand_into(seed, out)
    return out


def seeded_shares(x: U64, seeds: U64, shares: U64) -> None:
    """Fill ``shares`` (n, M, d) from the encoded inputs ``x`` (n, d) and the seeds
    (n, M − 1, 4 words): ``shares[:, k] = G(s_k)`` for k ≥ 1, and the correction
    ``shares[:, 0] = x − Σ_{k≥1} G(s_k)``, so that Σ_k shares[:, k] = x."""
    n, m, _ = shares.shape
    for i in range(n):
        for k in range(1, m):
            expand_into(seeds[i, k - 1].tobytes(), shares[i, k])
    if m > 1:
        np.sum(shares[:, 1:], axis=1, dtype=np.uint64, out=shares[:, 0])
        np.subtract(x, shares[:, 0], out=shares[:, 0])
    else:
        shares[:, 0] = x


def add_expansions(x: U64, seeds: U64, node_sums: U64) -> U64:
    """The seeded round's sums without its (n, M, d) share array: add
    Σ_i G(s_{i,k}) into ``node_sums[k − 1]`` for k = 1 .. M − 1 (what node k computes
    from the seeds it received), and return the corrections c_i = x_i − Σ_{k≥1} G(s_{i,k})
    (n, d), all in Z_{2^64}. The same words as :func:`seeded_shares`; each expansion is
    made once, for a chunk of clients at a time, and stays in cache while it is used."""
    n, m1, _ = seeds.shape
    corrections = x.copy()
    expanded = np.empty_like(x)
    raw = seeds.tobytes()
    for k in range(m1):
        for i in range(n):
            at = (i * m1 + k) * SEED_BYTES
            expand_into(raw[at : at + SEED_BYTES], expanded[i])
        node_sums[k] += expanded.sum(axis=0, dtype=np.uint64)
        corrections -= expanded
    return corrections
