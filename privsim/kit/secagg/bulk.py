"""The clients' key agreements and masks of one SecAgg round, computed for many clients
at once (Bonawitz et al. 2017, Figure 4; the primitives of :mod:`.crypto`).

These functions take and return plain arrays, so that they can run on worker processes
(:mod:`.pool`); every value is the one a client's behaviour would compute alone:

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

import functools
import hashlib

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit.secagg.crypto import KEY_BYTES, SEED_BYTES, TAG_BYTES, keystream, seal_share
from privsim.kit.secagg.maths import RECORD_BYTES, pack_records

__all__ = ["agreements", "mask_dtype", "mask_sums", "public_keys", "seal_shares"]

U8 = npt.NDArray[np.uint8]


def public_keys(secrets: U8) -> U8:
    """Row i: the X25519 public key of the 32 secret bytes of row i (shape (m, 32))."""
    out = np.empty((secrets.shape[0], KEY_BYTES), dtype=np.uint8)
    for i, raw in enumerate(_rows(secrets)):
        sk = _private_key(raw)
        out[i] = np.frombuffer(sk.public_key().public_bytes_raw(), dtype=np.uint8)
    return out


@functools.lru_cache(maxsize=4096)
def _private_key(raw: bytes) -> X25519PrivateKey:
    """The key object of 32 secret bytes, built once per process for a round's recent
    keys (a small round's agreements reuse the objects its public keys were made with;
    the object is a pure function of the bytes)."""
    return X25519PrivateKey.from_private_bytes(raw)


def agreements(label: bytes, secrets: U8, publics: U8) -> U8:
    """Row i: KA.agree(secrets[i], publics[i]) with ``label`` (shape (m, 16)); a run of
    equal secrets (one client's pairs) builds its private key once."""
    out = bytearray(SEED_BYTES * secrets.shape[0])
    sha = hashlib.sha256
    last: bytes | None = None
    sk: X25519PrivateKey | None = None
    peers: dict[bytes, X25519PublicKey] = {}  # a peer's key object, built once per task
    for i, (raw, peer) in enumerate(zip(_rows(secrets), _rows(publics), strict=True)):
        if raw != last:
            sk, last = _private_key(raw), raw
        assert sk is not None
        pk = peers.get(peer)
        if pk is None:
            pk = peers[peer] = X25519PublicKey.from_public_bytes(peer)
        shared = sk.exchange(pk)
        out[SEED_BYTES * i : SEED_BYTES * (i + 1)] = sha(label + shared).digest()[:SEED_BYTES]
    return np.frombuffer(bytes(out), dtype=np.uint8).reshape(-1, SEED_BYTES)


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
    out = bytearray()
    for u in range(m):
        owner = int(owners[u])
        records = pack_records(owner, peers[u], shares[u])
        for j, v in enumerate(peers[u].tolist()):
            out += seal_share(AESGCM(keys[u, j].tobytes()), owner, v, records[j].tobytes())
    return np.frombuffer(bytes(out), dtype=np.uint8).reshape(m, k, RECORD_BYTES + TAG_BYTES)


def mask_dtype(bits: int) -> type[np.unsignedinteger]:
    """The words the masks are summed in: 32-bit words for b ≤ 32, else 64-bit."""
    return np.uint32 if bits <= 32 else np.uint64


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
    width = np.dtype(dtype).itemsize
    m = pair_seeds.shape[0]
    out = np.zeros((m, dimension), dtype=dtype)
    for u in range(m):
        plus = [] if self_seeds is None else [self_seeds[u].tobytes()]
        minus: list[bytes] = []
        for j in np.flatnonzero(signs[u]).tolist():
            (plus if signs[u, j] > 0 else minus).append(pair_seeds[u, j].tobytes())
        if plus:
            out[u] = _summed(plus, dimension, width)
        if minus:
            out[u] -= _summed(minus, dimension, width)
    return out


def _summed(seeds: list[bytes], dimension: int, width: int) -> npt.NDArray[np.unsignedinteger]:
    """Σ PRG(seed) over ``seeds``, in words of ``width`` bytes (wrapping)."""
    nbytes = width * dimension
    blob = b"".join([keystream(seed, nbytes) for seed in seeds])
    rows = np.frombuffer(blob, dtype=np.uint8).reshape(len(seeds), nbytes + TAG_BYTES)
    dtype = np.dtype("<u4" if width == 4 else "<u8")
    words = rows[:, :nbytes].view(dtype)  # each row's keystream, its GCM tag left out
    return words.sum(axis=0, dtype=dtype)  # type: ignore[no-any-return]


def _rows(a: U8) -> list[bytes]:
    raw = np.ascontiguousarray(a, dtype=np.uint8).tobytes()
    step = a.shape[1]
    return [raw[i : i + step] for i in range(0, len(raw), step)]
