"""Authenticated encrypted channels between parties: X25519 + HKDF-SHA256 + AES-256-GCM.

Each party holds an X25519 key pair (public keys are assumed distributed out of band,
as by a PKI). The first message between two parties triggers one key agreement for the
pair; HKDF expands the shared secret into one AES-256-GCM key per direction. Nonces are
96-bit per-direction counters, the header ``src>dst`` is authenticated as associated
data, and the receiver keeps the counters it has accepted, so a modified, re-addressed
or replayed ciphertext is rejected.

Private keys are drawn from the party's named random stream rather than the operating
system so that a run stays a pure function of ``(scenario, seed)``; the cryptography is
otherwise the real thing, and the wire size is the real ciphertext length.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["NONCE_BYTES", "OVERHEAD_BYTES", "TAG_BYTES", "ChannelError", "SecureChannels"]

NONCE_BYTES = 12
TAG_BYTES = 16
#: Bytes an encrypted envelope adds to the plaintext: the nonce travels with the ciphertext.
OVERHEAD_BYTES = NONCE_BYTES + TAG_BYTES
_HKDF_INFO = b"privsim/channel/v1"


class ChannelError(Exception):
    """A ciphertext failed authentication or was a replay; the receiver drops it."""


@dataclass(slots=True)
class _Direction:
    aead: AESGCM
    next_counter: int = 0


class SecureChannels:
    """Key material and per-direction AEAD state for every pair that has talked."""

    def __init__(self, private_key_bytes: dict[str, bytes] | None = None) -> None:
        self._private: dict[str, X25519PrivateKey] = {}
        self._public: dict[str, X25519PublicKey] = {}
        self._directions: dict[tuple[str, str], _Direction] = {}
        self._accepted: dict[tuple[str, str], set[int]] = {}
        #: Wall-clock seconds spent in X25519 + HKDF (reported apart from protocol time).
        self.key_agreement_seconds = 0.0
        self.pairs_agreed = 0
        for party, key in (private_key_bytes or {}).items():
            self.add_party(party, key)

    def add_party(self, party: str, private_key: bytes) -> None:
        """Register ``party`` with 32 bytes of private key material."""
        sk = X25519PrivateKey.from_private_bytes(private_key)
        self._private[party] = sk
        self._public[party] = sk.public_key()

    def add_party_from_rng(self, party: str, rng: np.random.Generator) -> None:
        self.add_party(party, rng.bytes(32))

    def _direction(self, src: str, dst: str) -> _Direction:
        d = self._directions.get((src, dst))
        if d is None:
            self._agree(src, dst)
            d = self._directions[(src, dst)]
        return d

    def _agree(self, a: str, b: str) -> None:
        try:
            sk, peer = self._private[a], self._public[b]
        except KeyError as exc:
            raise ChannelError(f"no key pair registered for party {exc.args[0]!r}") from None
        start = time.perf_counter()
        shared = sk.exchange(peer)
        lo, hi = sorted((a, b))
        okm = HKDF(
            algorithm=hashes.SHA256(),
            length=64,
            salt=None,
            info=_HKDF_INFO + b"|" + lo.encode() + b"|" + hi.encode(),
        ).derive(shared)
        self._directions[(lo, hi)] = _Direction(AESGCM(okm[:32]))
        self._directions[(hi, lo)] = _Direction(AESGCM(okm[32:]))
        self.key_agreement_seconds += time.perf_counter() - start
        self.pairs_agreed += 1

    def seal(self, src: str, dst: str, plaintext: bytes) -> bytes:
        """Encrypt ``plaintext`` from ``src`` to ``dst``: ``nonce || ciphertext || tag``."""
        d = self._direction(src, dst)
        nonce = d.next_counter.to_bytes(NONCE_BYTES, "big")
        d.next_counter += 1
        return nonce + d.aead.encrypt(nonce, plaintext, f"{src}>{dst}".encode())

    def open(self, src: str, dst: str, envelope: bytes) -> bytes:
        """Authenticate and decrypt an envelope; raise :class:`ChannelError` if it is
        tampered with, addressed to someone else, or a replay."""
        if len(envelope) < OVERHEAD_BYTES:
            raise ChannelError("envelope shorter than nonce and tag")
        d = self._direction(src, dst)
        nonce = envelope[:NONCE_BYTES]
        counter = int.from_bytes(nonce, "big")
        seen = self._accepted.setdefault((src, dst), set())
        if counter in seen:
            raise ChannelError(f"replayed message {src}>{dst} (nonce {counter})")
        try:
            plaintext = d.aead.decrypt(nonce, envelope[NONCE_BYTES:], f"{src}>{dst}".encode())
        except InvalidTag:
            raise ChannelError(f"authentication failed for message {src}>{dst}") from None
        seen.add(counter)
        return plaintext
