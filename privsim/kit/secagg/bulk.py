"""The clients' key agreements and masks of one SecAgg round, computed for many clients
at once (Bonawitz et al. 2017, Figure 4; the primitives of :mod:`.crypto`).

These functions take and return plain arrays, so that they can run on worker processes
(:mod:`.pool`); every value is the one a client's behaviour would compute alone. X25519
is libsodium's here (PyNaCl, on raw 32-byte keys: its fixed-base multiplication makes a
public key in about half the time of a key object of ``cryptography``'s, which computes
one when it is loaded), the same function of the same bytes as :func:`~.crypto.agree`
(RFC 7748; the tests check the two against each other):

- :func:`public_keys`: s^PK = X25519(s^SK, 9) (RFC 7748, the base point), per row;
- :func:`agreements`: KA.agree(s_u^SK, s_v^PK) = SHA-256(label ‖ X25519(s_u^SK, s_v^PK))
  truncated to 16 bytes, per row (one row per pair: X25519 is a Diffie–Hellman function,
  X25519(a, X25519(b, 9)) = X25519(b, X25519(a, 9)), so the value of a pair is the same
  from both ends and is computed once);
- :func:`seal_shares`: e_{u,v} = AE.enc(KA.agree(c_u^SK, c_v^PK), u ‖ v ‖ shares),
  AES-128-GCM as in :func:`~.crypto.seal_share`;
- :func:`mask_sums`: for each client u, PRG(b_u) + Σ_j Δ_j · PRG(s_{u,v_j}) over the
  pairwise seeds given (mod 2^32 for b ≤ 32, else mod 2^64: the sum mod 2^b, which is all
  the round uses, is the same, because reducing mod 2^b is a ring homomorphism).
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt
from nacl.bindings import crypto_scalarmult, crypto_scalarmult_base

from privsim.kit.secagg.crypto import KEY_BYTES, SEED_BYTES, TAG_BYTES, keystreams, seal_batch
from privsim.kit.secagg.maths import RECORD_BYTES, pack_records

__all__ = ["agreements", "mask_dtype", "mask_sums", "public_keys", "seal_shares"]

U8 = npt.NDArray[np.uint8]


def public_keys(secrets: U8) -> U8:
    """Row i: the X25519 public key of the 32 secret bytes of row i (shape (m, 32))."""
    _check_keys("secrets", secrets)
    publics = b"".join([crypto_scalarmult_base(raw) for raw in _rows(secrets)])
    return np.frombuffer(publics, dtype=np.uint8).reshape(-1, KEY_BYTES).copy()


def agreements(label: bytes, secrets: U8, publics: U8) -> U8:
    """Row i: KA.agree(secrets[i], publics[i]) with ``label`` (shape (m, 16))."""
    _check_keys("secrets", secrets)
    _check_keys("publics", publics)
    if secrets.shape[0] != publics.shape[0]:
        raise ValueError(f"{secrets.shape[0]} secrets for {publics.shape[0]} public keys")
    sha = hashlib.sha256
    values = [
        sha(label + crypto_scalarmult(raw, peer)).digest()[:SEED_BYTES]
        for raw, peer in zip(_rows(secrets), _rows(publics), strict=True)
    ]
    return np.frombuffer(b"".join(values), dtype=np.uint8).reshape(-1, SEED_BYTES)


def seal_shares(
    owners: npt.NDArray[np.int64],
    peers: npt.NDArray[np.int64],
    shares: npt.NDArray[np.uint64],
    keys: U8,
) -> U8:
    """Row u, column j: e_{u,v} = AE.enc(k_{u,v}, u ‖ v ‖ share of u for v) for v =
    ``peers[u, j]`` (:func:`~.crypto.seal_share` of :func:`~.maths.pack_records`), with
    ``shares`` (m, k, w) and the encryption keys ``keys`` (m, k, 16)."""
    m, k = peers.shape
    senders = np.broadcast_to(np.asarray(owners, dtype=np.int64)[:, None], (m, k))
    records = pack_records(senders.ravel(), peers.ravel(), shares.reshape(m * k, -1))
    sealed = seal_batch(
        senders.ravel().tolist(),
        peers.ravel().tolist(),
        np.ascontiguousarray(keys, dtype=np.uint8).tobytes(),
        records.tobytes(),
        RECORD_BYTES,
    )
    return np.frombuffer(sealed, dtype=np.uint8).reshape(m, k, RECORD_BYTES + TAG_BYTES)


def mask_dtype(bits: int) -> type[np.unsignedinteger]:
    """The words the masks are summed in: 32-bit words for b ≤ 32, else 64-bit."""
    return np.uint32 if bits <= 32 else np.uint64


#: Bytes of keystream :func:`mask_sums` holds at once (the PRGs of several rows, or of
#: part of one row's).
MASK_BLOCK_BYTES = 1 << 22


def mask_sums(
    self_seeds: U8 | None,
    pair_seeds: U8,
    signs: npt.NDArray[np.int8],
    dimension: int,
    bits: int,
) -> npt.NDArray[np.unsignedinteger]:
    """Row u: PRG(b_u) + Σ_j signs[u, j] · PRG(pair_seeds[u, j]) (mod 2^32 or 2^64, see
    :func:`mask_dtype`); ``self_seeds`` (m, 16) or None (no self mask), ``pair_seeds``
    (m, k, 16), ``signs`` (m, k) in {−1, 0, +1} (0: leave the pair out)."""
    dtype = mask_dtype(bits)
    word = np.dtype("<u4" if dtype is np.uint32 else "<u8")
    seeds, sign = np.asarray(pair_seeds, dtype=np.uint8), np.asarray(signs, dtype=np.int8)
    m = seeds.shape[0]
    if self_seeds is not None:  # PRG(b_u) first, with sign +1
        seeds = np.concatenate([np.asarray(self_seeds, np.uint8)[:, None], seeds], axis=1)
        sign = np.concatenate([np.ones((m, 1), dtype=np.int8), sign], axis=1)
    out = np.zeros((m, dimension), dtype=dtype)
    k = sign.shape[1]
    nbytes = np.dtype(dtype).itemsize * dimension
    # blocks of rows × columns whose keystreams fit in MASK_BLOCK_BYTES
    cols = max(1, min(k, MASK_BLOCK_BYTES // (nbytes + TAG_BYTES)))
    rows = max(1, MASK_BLOCK_BYTES // ((nbytes + TAG_BYTES) * cols))
    for r in range(0, m, rows):
        for c in range(0, k, cols):
            block = sign[r : r + rows, c : c + cols]
            raw = np.ascontiguousarray(seeds[r : r + rows, c : c + cols]).tobytes()
            # a pair's seed is in both its clients' rows: each distinct seed is expanded
            # once; a pair left out (sign 0) takes any stream, weighted by 0
            slot: dict[bytes, int] = {}
            at = [
                slot.setdefault(raw[SEED_BYTES * i : SEED_BYTES * (i + 1)], len(slot)) if s else 0
                for i, s in enumerate(block.ravel().tolist())
            ]
            if not slot:
                continue
            blob = keystreams(b"".join(slot), nbytes)
            streams = np.frombuffer(blob, dtype=np.uint8).reshape(len(slot), nbytes + TAG_BYTES)
            # each keystream, its GCM tag left out, as little-endian words; × 2^w − 1
            # (a sign −1 cast to the word type) negates mod 2^w
            terms = streams[:, :nbytes].view(word)[at] * block.astype(dtype).reshape(-1, 1)
            out[r : r + rows] += terms.reshape(*block.shape, dimension).sum(axis=1, dtype=dtype)
    return out


def _check_keys(name: str, keys: U8) -> None:
    """Rows of 32 bytes each (libsodium reads 32 bytes from each row's buffer, whatever
    its length: a shorter row must never reach it)."""
    if np.ndim(keys) != 2 or np.shape(keys)[1] != KEY_BYTES:
        raise ValueError(f"{name} must be rows of {KEY_BYTES} bytes, got shape {np.shape(keys)}")


def _rows(a: U8) -> list[bytes]:
    raw = np.ascontiguousarray(a, dtype=np.uint8).tobytes()
    step = a.shape[1]
    return [raw[i : i + step] for i in range(0, len(raw), step)]
