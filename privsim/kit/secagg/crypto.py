"""The cryptographic primitives of SecAgg (Bonawitz et al., CCS 2017, §3 and Figure 4):
key agreement, authenticated encryption of shares, and the mask PRG.

- KA: X25519 (RFC 7748); KA.agree(sk_u, pk_v) = SHA-256(label ‖ X25519(sk_u, pk_v)),
  the Diffie–Hellman value composed with a hash as the paper prescribes (§3.3).
- AE: AES-128-GCM under the 16-byte key KA.agree(c_u^SK, c_v^PK); each key encrypts
  one message per direction, so the nonce is the direction and no nonce repeats.
- PRG: AES-128-CTR keyed by a 16-byte seed, expanded in one call per seed into a whole
  vector of d words mod 2^b (the masks p_u = PRG(b_u) and p_{u,v} = PRG(s_{u,v})). The
  keystream is computed through the AES-GCM primitive: GCM's ciphertext of zeros under
  nonce 0^96 is exactly the AES-CTR keystream from counter block 0^96‖2 (the tag is
  discarded); ``cryptography`` sets that up about 4× faster than ``Cipher(AES, CTR)``.

Both ends of a pair compute the same KA value; :class:`~.keybook.KeyBook` computes it
once per pair and kind and gives the second end the same bytes it would have computed (a
simulation shortcut that changes no value, only the wall time).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "KEY_BYTES",
    "SEED_BYTES",
    "TAG_BYTES",
    "KeyPair",
    "agree",
    "expand",
    "keystream",
    "keystreams",
    "open_share",
    "open_shares",
    "seal_batch",
    "seal_share",
]

KEY_BYTES = 32  # an X25519 private or public key
SEED_BYTES = 16  # a PRG seed (b_u) and an AES-128 key
TAG_BYTES = 16  # the AES-GCM tag

_NONCE = {True: b"\x01" + bytes(11), False: b"\x02" + bytes(11)}
_GCM_NONCE = bytes(12)
_IDS = struct.Struct("<qq")
_ZEROS: dict[int, bytes] = {}


@dataclass(frozen=True, slots=True)
class KeyPair:
    """An X25519 key pair from 32 secret bytes: (sk, pk) = KA.gen()."""

    secret: X25519PrivateKey
    public: bytes

    @classmethod
    def from_secret(cls, secret: bytes) -> KeyPair:
        sk = X25519PrivateKey.from_private_bytes(secret)
        return cls(secret=sk, public=sk.public_key().public_bytes_raw())


def agree(secret: X25519PrivateKey | bytes, peer_public: bytes, label: bytes) -> bytes:
    """KA.agree(sk, pk): the X25519 shared value hashed with ``label`` to 16 bytes."""
    if isinstance(secret, bytes):
        secret = X25519PrivateKey.from_private_bytes(secret)
    shared = secret.exchange(X25519PublicKey.from_public_bytes(peer_public))
    return hashlib.sha256(label + shared).digest()[:SEED_BYTES]


def seal_share(cipher: AESGCM, sender: int, receiver: int, plaintext: bytes) -> bytes:
    """AE.enc(KA.agree(c_u^SK, c_v^PK), u ‖ v ‖ shares) (Figure 4, ShareKeys); the
    ids are authenticated as associated data and inside the plaintext."""
    return cipher.encrypt(_NONCE[sender < receiver], plaintext, _ids(sender, receiver))


def seal_batch(
    senders: list[int], receivers: list[int], keys: bytes, blob: bytes, size: int
) -> bytes:
    """The :func:`seal_share` ciphertexts of the ``size``-byte plaintexts in ``blob``,
    plaintext i from ``senders[i]`` to ``receivers[i]`` under the i-th 16-byte key of
    ``keys``, concatenated."""
    nonce, pack, key = _NONCE, _IDS.pack, SEED_BYTES
    # u's share for v and v's for u are sealed under the pair's one key (with different
    # nonces): each key's cipher is set up once
    ciphers: dict[bytes, AESGCM] = {}
    out = []
    for i, (u, v) in enumerate(zip(senders, receivers, strict=True)):
        k = keys[key * i : key * (i + 1)]
        cipher = ciphers.get(k)
        if cipher is None:
            cipher = ciphers[k] = AESGCM(k)
        out.append(cipher.encrypt(nonce[u < v], blob[size * i : size * (i + 1)], pack(u, v)))
    return b"".join(out)


def open_share(cipher: AESGCM, sender: int, receiver: int, ciphertext: bytes) -> bytes:
    """AE.dec of :func:`seal_share` (raises ``InvalidTag`` if tampered with)."""
    return cipher.decrypt(_NONCE[sender < receiver], ciphertext, _ids(sender, receiver))


def open_shares(
    receiver: int, senders: list[int], keys: list[bytes], blob: bytes, size: int
) -> bytes:
    """The plaintexts of the ``size``-byte ciphertexts in ``blob`` (in the order of
    ``senders``), each :func:`open_share` under its sender's key, concatenated."""
    nonce, pack = _NONCE, _IDS.pack
    return b"".join(
        [
            AESGCM(key).decrypt(
                nonce[u < receiver], blob[size * j : size * (j + 1)], pack(u, receiver)
            )
            for j, (u, key) in enumerate(zip(senders, keys, strict=True))
        ]
    )


def _ids(sender: int, receiver: int) -> bytes:
    return _IDS.pack(sender, receiver)


def _zeros(nbytes: int) -> bytes:
    z = _ZEROS.get(nbytes)
    if z is None:
        z = bytes(nbytes)
        if len(_ZEROS) < 64:
            _ZEROS[nbytes] = z
    return z


def keystream(seed: bytes, nbytes: int) -> bytes:
    """The first ``nbytes`` of the AES-128-CTR keystream under ``seed`` from counter
    block 0^96‖2, followed by 16 bytes to ignore (GCM's tag)."""
    return AESGCM(seed[:SEED_BYTES]).encrypt(_GCM_NONCE, _zeros(nbytes), None)


def keystreams(seeds: bytes, nbytes: int) -> bytes:
    """:func:`keystream` of each 16-byte seed of ``seeds`` (``nbytes`` and the 16 bytes
    to ignore), concatenated."""
    zeros, key = _zeros(nbytes), SEED_BYTES
    return b"".join(
        [
            AESGCM(seeds[i : i + key]).encrypt(_GCM_NONCE, zeros, None)
            for i in range(0, len(seeds), key)
        ]
    )


def expand(seed: bytes, dimension: int, bits: int) -> npt.NDArray[np.uint64]:
    """PRG(seed): d words uniform mod 2^bits from one AES-128-CTR keystream (counter
    block 0^96‖2 onwards; a seed is never reused for another vector)."""
    width = 4 if bits <= 32 else 8
    stream = keystream(seed, width * dimension)
    words = np.frombuffer(stream, dtype="<u4" if width == 4 else "<u8", count=dimension)
    words = words.astype(np.uint64)
    if bits < 64 and bits != 32:
        words &= np.uint64((1 << bits) - 1)
    return words
