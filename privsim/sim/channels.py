"""Authenticated encrypted channels between parties: X25519 + HKDF-SHA256 + AES-256-GCM.

Each party holds an X25519 key pair (public keys are assumed distributed out of band,
as by a PKI). The pair's shared secret is expanded by HKDF-SHA256 (RFC 5869) into one
AES-256-GCM key per direction. Nonces are 96-bit per-direction counters, the header
``src>dst`` is authenticated as associated data, and the receiver remembers which
counters it has accepted, so a modified, re-addressed or replayed ciphertext is rejected.

Keys are agreed once per pair, lazily on first use or in bulk with
:meth:`SecureChannels.agree`, which a protocol's set-up phase calls so that key agreement
is timed apart from the rounds. Both ends of a pair derive the same secret; the
simulator computes it once. Per-pair state lives in dense tables per pair of roles
(64 bytes of keys and three counters per pair, about 90 bytes per pair: 10^6 client–node
pairs take about 90 MB); role pairs with more than 5·10^6 pairs use a dict instead.

Private keys are drawn from the party's named stream rather than the operating system so
that a run stays a pure function of ``(scenario, seed)``; the cryptography is otherwise
the real thing, and the wire size is the real ciphertext length.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.sim import workers

__all__ = [
    "NONCE_BYTES",
    "OVERHEAD_BYTES",
    "TAG_BYTES",
    "ChannelError",
    "SecureChannels",
    "hkdf_sha256",
    "seal_and_open_batch",
]

NONCE_BYTES = 12
TAG_BYTES = 16
#: Bytes an encrypted envelope adds to the plaintext: the nonce travels with the ciphertext.
OVERHEAD_BYTES = NONCE_BYTES + TAG_BYTES
_HKDF_INFO = b"privsim/channel/v1"
# Role pairs with more pairs than this keep their state in a dict instead of a table.
_DENSE_MAX_PAIRS = 5_000_000
_PRIVATE_CACHE = 256
#: Pairs from which :meth:`SecureChannels.agree` uses worker processes (about a second
#: of X25519 on one core).
PARALLEL_PAIRS = 20_000


class ChannelError(Exception):
    """A ciphertext failed authentication or was a replay; the receiver drops it."""


def hkdf_sha256(secret: bytes, info: bytes, length: int, salt: bytes = b"") -> bytes:
    """HKDF-Extract then HKDF-Expand with HMAC-SHA256 (RFC 5869)."""
    prk = hmac.digest(salt or bytes(32), secret, "sha256")
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.digest(prk, block + info + bytes([counter]), "sha256")
        out += block
        counter += 1
    return out[:length]


class _PairTable:
    """State of every directed pair between two roles: keys, send and receive counters."""

    def __init__(self, n_src: int, n_dst: int) -> None:
        self.dense = n_src * n_dst <= _DENSE_MAX_PAIRS
        if self.dense:
            self.keys = np.zeros((n_src, n_dst, 32), dtype=np.uint8)
            self.agreed = np.zeros((n_src, n_dst), dtype=bool)
            self.next = np.zeros((n_src, n_dst), dtype=np.int64)
            self.floor = np.zeros((n_src, n_dst), dtype=np.int64)
        else:
            self.sparse: dict[tuple[int, int], list[object]] = {}

    def has(self, i: int, j: int) -> bool:
        return bool(self.agreed[i, j]) if self.dense else (i, j) in self.sparse

    def key(self, i: int, j: int) -> bytes:
        return self.keys[i, j].tobytes() if self.dense else self.sparse[(i, j)][0]  # type: ignore[return-value]

    def set_key(self, i: int, j: int, key: bytes) -> None:
        if self.dense:
            self.keys[i, j] = np.frombuffer(key, dtype=np.uint8)
            self.agreed[i, j] = True
        else:
            self.sparse[(i, j)] = [key, 0, 0]

    def take_counter(self, i: int, j: int) -> int:
        if self.dense:
            c = int(self.next[i, j])
            self.next[i, j] = c + 1
            return c
        entry = self.sparse[(i, j)]
        c = int(entry[1])  # type: ignore[call-overload]
        entry[1] = c + 1
        return c

    def get_floor(self, i: int, j: int) -> int:
        return int(self.floor[i, j]) if self.dense else self.sparse[(i, j)][2]  # type: ignore[return-value]

    def set_floor(self, i: int, j: int, value: int) -> None:
        if self.dense:
            self.floor[i, j] = value
        else:
            self.sparse[(i, j)][2] = value


class SecureChannels:
    """Key material and per-direction AEAD state for every pair that has talked."""

    def __init__(self) -> None:
        self._secret: dict[str, bytes] = {}
        self._where: dict[str, tuple[str, int]] = {}
        self._role_sizes: dict[str, int] = {}
        self._public: dict[str, X25519PublicKey] = {}
        self._private_cache: dict[str, X25519PrivateKey] = {}
        self._lock = threading.RLock()
        self._tables: dict[tuple[str, str], _PairTable] = {}
        # Counters accepted ahead of the floor (out-of-order arrivals), per direction.
        self._ahead: dict[tuple[str, str], set[int]] = {}
        #: Wall-clock seconds spent in X25519 + HKDF (reported apart from protocol time).
        self.key_agreement_seconds = 0.0
        self.pairs_agreed = 0

    def add_party(
        self, party: str, private_key: bytes, role: str = "", index: int | None = None
    ) -> None:
        """Register ``party`` (of ``role``, at ``index`` among its role) with 32 bytes of
        private key material."""
        if len(private_key) != 32:
            raise ValueError("an X25519 private key is 32 bytes")
        if index is None:
            index = self._role_sizes.get(role, 0)
        self._secret[party] = private_key
        self._where[party] = (role, index)
        self._role_sizes[role] = max(self._role_sizes.get(role, 0), index + 1)

    def _table(self, src_role: str, dst_role: str) -> _PairTable:
        table = self._tables.get((src_role, dst_role))
        if table is None:
            with self._lock:  # a batched round's threads may ask at once
                table = self._tables.get((src_role, dst_role))
                if table is None:
                    table = _PairTable(self._role_sizes[src_role], self._role_sizes[dst_role])
                    self._tables[(src_role, dst_role)] = table
        return table

    def _public_key(self, party: str) -> X25519PublicKey:
        pk = self._public.get(party)
        if pk is None:
            pk = self._private_key(party).public_key()
            self._public[party] = pk
        return pk

    def _locate(self, src: str, dst: str) -> tuple[_PairTable, int, int]:
        try:
            (src_role, i), (dst_role, j) = self._where[src], self._where[dst]
        except KeyError as exc:
            raise ChannelError(f"no key pair registered for party {exc.args[0]!r}") from None
        return self._table(src_role, dst_role), i, j

    def agree(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Agree keys for ``pairs`` now (a protocol's set-up phase), skipping known pairs;
        many pairs are agreed on worker processes (:mod:`privsim.sim.workers`), with the
        same keys."""
        with self._lock:
            start = time.perf_counter()
            pending: list[tuple[str, str]] = []
            for a, b in pairs:
                table, i, j = self._locate(a, b)
                if not table.has(i, j):
                    pending.append((a, b))
            if len(pending) >= PARALLEL_PAIRS and workers.workers() > 1:
                self._agree_on_workers(list(dict.fromkeys(pending)))
            else:
                for a, b in pending:
                    table, i, j = self._locate(a, b)
                    if not table.has(i, j):
                        self._agree(a, b)
            self.key_agreement_seconds += time.perf_counter() - start

    def _agree_on_workers(self, pairs: list[tuple[str, str]]) -> None:
        """:meth:`_agree` for distinct ``pairs`` on worker processes. Each pair's secret is
        computed from one party's private key and the other's public key, the public side
        being the party in more pairs (a compute node rather than each of its clients), so
        that few public keys are derived; X25519 gives the same secret either way."""
        count: dict[str, int] = {}
        for a, b in pairs:
            count[a] = count.get(a, 0) + 1
            count[b] = count.get(b, 0) + 1
        public: dict[str, bytes] = {}
        items: list[tuple[bytes, bytes, bytes]] = []
        for a, b in pairs:
            mine, theirs = (a, b) if count[b] >= count[a] else (b, a)
            if theirs not in public:
                public[theirs] = self._public_key(theirs).public_bytes_raw()
            lo, hi = sorted((a, b))
            info = _HKDF_INFO + b"|" + lo.encode() + b"|" + hi.encode()
            items.append((self._secret[mine], public[theirs], info))
        n = workers.workers()
        step = -(-len(items) // (4 * n))
        tasks = [(at, items[at : at + step]) for at in range(0, len(items), step)]
        for at, keys in workers.map_unordered(_agree_slice, tasks, n):
            for offset in range(len(keys) // 64):
                a, b = pairs[at + offset]
                okm = keys[64 * offset : 64 * offset + 64]
                first, second = sorted((a, b))
                for (src, dst), key in (((first, second), okm[:32]), ((second, first), okm[32:])):
                    table, i, j = self._locate(src, dst)
                    table.set_key(i, j, key)
                self.pairs_agreed += 1

    def _private_key(self, party: str) -> X25519PrivateKey:
        # Loading a private key costs about as much as an exchange: keep the recent ones.
        sk = self._private_cache.get(party)
        if sk is None:
            sk = X25519PrivateKey.from_private_bytes(self._secret[party])
            if len(self._private_cache) >= _PRIVATE_CACHE:
                self._private_cache.pop(next(iter(self._private_cache)))
            self._private_cache[party] = sk
        return sk

    def _agree(self, a: str, b: str) -> None:
        shared = self._private_key(a).exchange(self._public_key(b))
        lo, hi = sorted((a, b))
        okm = hkdf_sha256(shared, _HKDF_INFO + b"|" + lo.encode() + b"|" + hi.encode(), 64)
        for (src, dst), key in (((lo, hi), okm[:32]), ((hi, lo), okm[32:])):
            table, i, j = self._locate(src, dst)
            table.set_key(i, j, key)
        self.pairs_agreed += 1

    def _key(self, src: str, dst: str) -> tuple[_PairTable, int, int, bytes]:
        table, i, j = self._locate(src, dst)
        if not table.has(i, j):
            with self._lock:  # channels may be used from a batched round's threads
                if not table.has(i, j):
                    start = time.perf_counter()
                    self._agree(src, dst)
                    self.key_agreement_seconds += time.perf_counter() - start
        return table, i, j, table.key(i, j)

    def seal(self, src: str, dst: str, plaintext: bytes) -> bytes:
        """Encrypt ``plaintext`` from ``src`` to ``dst``: ``nonce || ciphertext || tag``."""
        table, i, j, key = self._key(src, dst)
        nonce = table.take_counter(i, j).to_bytes(NONCE_BYTES, "big")
        return nonce + AESGCM(key).encrypt(nonce, plaintext, f"{src}>{dst}".encode())

    def open(self, src: str, dst: str, envelope: bytes) -> bytes:
        """Authenticate and decrypt an envelope; raise :class:`ChannelError` if it is
        tampered with, addressed to someone else, or a replay."""
        if len(envelope) < OVERHEAD_BYTES:
            raise ChannelError("envelope shorter than nonce and tag")
        table, i, j, key = self._key(src, dst)
        nonce = envelope[:NONCE_BYTES]
        counter = int.from_bytes(nonce, "big")
        floor = table.get_floor(i, j)
        ahead = self._ahead.get((src, dst))
        if counter < floor or (ahead is not None and counter in ahead):
            raise ChannelError(f"replayed message {src}>{dst} (nonce {counter})")
        try:
            plaintext = AESGCM(key).decrypt(nonce, envelope[NONCE_BYTES:], f"{src}>{dst}".encode())
        except InvalidTag:
            raise ChannelError(f"authentication failed for message {src}>{dst}") from None
        if counter == floor:
            floor += 1
            while ahead and floor in ahead:
                ahead.discard(floor)
                floor += 1
            table.set_floor(i, j, floor)
        else:
            with self._lock:
                self._ahead.setdefault((src, dst), set()).add(counter)
        return plaintext

    def seal_and_open_rows(
        self,
        sources: list[str],
        dst: str,
        prefix: bytes,
        rows: npt.NDArray[np.uint64],
    ) -> None:
        """Send ``prefix + rows[r]`` from ``sources[r]`` to ``dst`` for every r through the
        channel — seal under the direction's key and next nonce, then authenticate and
        decrypt as the receiver does — and write what the receiver decrypted back into
        ``rows``. Equivalent to :meth:`seal` then :meth:`open` per row, with the per-pair
        bookkeeping vectorised (batched delivery)."""
        if not sources:
            return
        reserved = self.reserve_rows(sources, dst)
        if reserved is None:
            for r, src in enumerate(sources):
                opened = self.open(src, dst, self.seal(src, dst, prefix + rows[r].tobytes()))
                rows[r] = np.frombuffer(opened, dtype=np.uint64, offset=len(prefix))
            return
        seal_and_open_batch(sources, dst, prefix, rows, *reserved)

    def reserve_rows(
        self, sources: list[str], dst: str
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]] | None:
        """Reserve one message ``sources[r] -> dst`` per r: agree missing keys, take each
        direction's next nonce counter and accept it at the receiver, as a seal then an
        open in order would. Returns each row's key ``(n, 32)`` and nonce counter ``(n,)``
        for :func:`seal_and_open_batch` (which needs no channel state, so it can run on
        another process), or None when a row cannot take the bulk path (sparse tables,
        out-of-order arrivals pending, a counter not at the receiver's floor, mixed roles);
        then seal and open those rows one at a time."""
        if not sources:
            return np.zeros((0, 32), dtype=np.uint8), np.zeros(0, dtype=np.int64)
        dst_role, j = self._where[dst]
        where = [self._where[s] for s in sources]
        src_role = where[0][0]
        table = self._table(src_role, dst_role)
        if not (
            table.dense
            and all(role == src_role for role, _ in where)
            and not (self._ahead and any((s, dst) in self._ahead for s in sources))
        ):
            return None
        idx = np.array([i for _, i in where], dtype=np.int64)
        missing = ~table.agreed[idx, j]
        if missing.any():
            self.agree((sources[r], dst) for r in np.flatnonzero(missing).tolist())
        counters = table.next[idx, j]
        if not np.array_equal(counters, table.floor[idx, j]):
            return None
        table.next[idx, j] = counters + 1
        table.floor[idx, j] = counters + 1
        return table.keys[idx, j], counters

    def keys_for(self, src_role: str, dst_role: str) -> npt.NDArray[np.uint8] | None:
        """The dense key table ``(n_src, n_dst, 32)`` of a role pair, if it has one."""
        table = self._tables.get((src_role, dst_role))
        return table.keys if table is not None and table.dense else None


def seal_and_open_batch(
    sources: list[str],
    dst: str,
    prefix: bytes,
    rows: npt.NDArray[np.uint64],
    keys: npt.NDArray[np.uint8],
    counters: npt.NDArray[np.int64],
) -> None:
    """Seal ``prefix + rows[r]`` from ``sources[r]`` to ``dst`` with AES-256-GCM under
    ``keys[r]`` and nonce ``counters[r]`` (header ``src>dst`` as associated data), open it
    as the receiver does, and write the opened values back into ``rows``: the bulk path
    of :meth:`SecureChannels.seal_and_open_rows`, with keys and nonces reserved by
    :meth:`SecureChannels.reserve_rows`."""
    if not sources:
        return
    if rows.shape[1] * 8 <= _SMALL_ROW_BYTES:
        _seal_and_open_small(sources, dst, prefix, rows, keys, counters)
        return
    cut = len(prefix)
    # Reused buffers: allocating and freeing a large buffer per message costs more
    # than encrypting it.
    plain = bytearray(cut + rows.shape[1] * 8)
    plain[:cut] = prefix
    plain_values = np.frombuffer(plain, dtype=np.uint64, offset=cut)
    sealed = bytearray(len(plain) + TAG_BYTES)
    opened_buf = bytearray(len(plain))
    opened_words = np.frombuffer(opened_buf, dtype=np.uint64, offset=cut)
    suffix = f">{dst}".encode()
    key_bytes = keys.tobytes()
    for r, (src, counter) in enumerate(zip(sources, counters.tolist(), strict=True)):
        aead = AESGCM(key_bytes[32 * r : 32 * r + 32])
        nonce = counter.to_bytes(NONCE_BYTES, "big")
        aad = src.encode() + suffix
        plain_values[:] = rows[r]
        aead.encrypt_into(nonce, plain, aad, sealed)
        try:
            aead.decrypt_into(nonce, sealed, aad, opened_buf)
        except InvalidTag:  # pragma: no cover - the same key on both ends
            raise ChannelError(f"authentication failed for message {src}>{dst}") from None
        if opened_buf[:cut] != prefix:
            raise ChannelError(f"{src}>{dst}: unexpected message")
        rows[r] = opened_words


#: Rows up to this many bytes (seeds, short vectors) are sealed from bytes objects and
#: written back in one array operation: per message, NumPy's per-call cost would exceed
#: the encryption's.
_SMALL_ROW_BYTES = 256


def _seal_and_open_small(
    sources: list[str],
    dst: str,
    prefix: bytes,
    rows: npt.NDArray[np.uint64],
    keys: npt.NDArray[np.uint8],
    counters: npt.NDArray[np.int64],
) -> None:
    """:func:`seal_and_open_batch` for short rows: the same messages, keys and nonces."""
    cut, width = len(prefix), rows.shape[1] * 8
    values = np.ascontiguousarray(rows).tobytes()
    key_bytes = keys.tobytes()
    suffix = f">{dst}".encode()
    opened = bytearray()
    for r, (src, counter) in enumerate(zip(sources, counters.tolist(), strict=True)):
        aead = AESGCM(key_bytes[32 * r : 32 * r + 32])
        nonce = counter.to_bytes(NONCE_BYTES, "big")
        aad = src.encode() + suffix
        sealed = aead.encrypt(nonce, prefix + values[width * r : width * (r + 1)], aad)
        try:
            plain = aead.decrypt(nonce, sealed, aad)
        except InvalidTag:  # pragma: no cover - the same key on both ends
            raise ChannelError(f"authentication failed for message {src}>{dst}") from None
        if plain[:cut] != prefix or len(plain) != cut + width:
            raise ChannelError(f"{src}>{dst}: unexpected message")
        opened += plain[cut:]
    rows[:] = np.frombuffer(bytes(opened), dtype=np.uint64).reshape(rows.shape)


def _agree_slice(task: tuple[int, list[tuple[bytes, bytes, bytes]]]) -> tuple[int, bytes]:
    """A worker's share of :meth:`SecureChannels.agree`: for each (private key, peer's
    public key, HKDF info), the 64 bytes of the pair's two direction keys."""
    start, items = task
    out = bytearray()
    private: X25519PrivateKey | None = None
    private_bytes = b""
    for secret, peer, info in items:
        if secret != private_bytes or private is None:  # consecutive pairs share a party
            private, private_bytes = X25519PrivateKey.from_private_bytes(secret), secret
        shared = private.exchange(X25519PublicKey.from_public_bytes(peer))
        out += hkdf_sha256(shared, info, 64)
    return start, bytes(out)
