"""Every client's keys, pairwise key agreements, sealed shares and masks for one SecAgg
round, computed in bulk (Bonawitz et al. 2017, Figure 4: KA.gen, KA.agree, the AE.enc of
ShareKeys and the masks of MaskedInputCollection), on worker processes for large rounds.

Client u's key material is a function of the round's seed (row u of the round's
``(*label, "client-secrets")`` stream, :func:`privsim.kit.secagg.round.launch`): c_u^SK, s_u^SK (32 bytes each) and b_u. So
every value a client will compute from it is known before the round starts, and the
book computes them all at once (:mod:`.bulk`) while the simulation runs:

- (c_u^PK, s_u^PK) = KA.gen(): the X25519 public keys;
- for each edge {u, v} of the communication graph and each kind (``c``: the encryption
  key of ShareKeys; ``s``: the mask seed s_{u,v}), KA.agree, computed **once per pair**:
  X25519 is a Diffie–Hellman function, X25519(sk_u, pk_v) = X25519(sk_v, pk_u) (RFC 7748,
  §6.1), so both ends derive the same bytes and the book gives the second end the value
  the first computed (a simulation shortcut that changes no value, only the wall time;
  the tests check both ends' own computation on a sample of pairs);
- e_{u,v} = AE.enc(KA.agree(c_u^SK, c_v^PK), u ‖ v ‖ shares of b_u and s_u^SK for v)
  (ShareKeys) for every neighbour v: AES-GCM is deterministic given key, nonce and
  plaintext, so the ciphertexts a client sends to the neighbours in its directory are
  these bytes (the receivers open what arrives, as the paper's clients do);
- the server's KA.agree(s_v^SK, s_u^PK) in Unmasking, from the s_v^SK it rebuilt for a
  dropped v: when the rebuilt key and the public key are the pair's own, byte for byte,
  this is the pair's value already in the book (the same symmetry; a wrong
  reconstruction is agreed on the spot, and gives the wrong mask it would);
- PRG(b_u) + Σ_{v ∈ N(u)} Δ_{u,v} PRG(s_{u,v}) (Δ_{u,v} = +1 if u > v, else −1) over all
  of u's graph neighbours. A client masks with the neighbours that reached ShareKeys
  (U2 ∩ N(u)) only; it takes the precomputed sum and subtracts the masks of the others
  (expanding them again), which is the same sum mod 2^b.

A client asks the book for a value with the public key its directory gave; a key that
is not the peer's own (never the case with the honest-but-curious server simulated
here) is agreed on the spot. The book counts the pairs the protocol used
(:attr:`agreements`), as if each had been agreed when first needed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit.secagg import bulk
from privsim.kit.secagg.crypto import KEY_BYTES, SEED_BYTES, agree, seal_share
from privsim.kit.secagg.graph import Graph
from privsim.kit.secagg.pool import Executor, windowed
from privsim.kit.secagg.sharing import ShareBook, bytes_to_words
from privsim.sim.keystream import KeyStream

__all__ = [
    "MASK_BYTES",
    "SEALED_BYTES",
    "SECRET_WORDS",
    "KeyBook",
    "Peers",
    "neighbour_matrix",
    "share_book",
]

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

#: Words of a client's key material: c_u^SK (4), s_u^SK (4), b_u (2).
SECRET_WORDS = 10
#: Largest memory (bytes) the precomputed masks of all clients may take; above it each
#: client expands its masks when it sends its masked input.
MASK_BYTES = 256 << 20
#: Largest memory (bytes) the sealed shares of all clients may take (96 bytes per
#: client and neighbour); above it each client seals its shares itself.
SEALED_BYTES = 256 << 20
#: Pairs per agreement task and clients' masks per mask task (about a tenth of a second).
EDGES_PER_TASK = 4096
EXPANSIONS_PER_TASK = 4096
#: Key pairs and pairwise agreements per task of the book: about half a second of work,
#: the same whatever the population, so a worker's memory does not grow with it (a
#: round of 10^6 clients makes about 1,200 agreement tasks of each kind).
KEYS_PER_TASK = 4096
PAIRS_PER_TASK = 16384
#: PRG expansions or AES-GCM operations per shard task of a batched round (about a
#: quarter of a second of work, a few MiB of arguments).
SHARD_WORK = 1 << 16


def _deltas(neighbours: I64, owners: I64 | int) -> I64:
    """Δ_{u,v} = +1 if u > v else −1, for each owner u (an index, or one per row of
    ``neighbours``) and each of its neighbours v."""
    u = np.asarray(owners)
    return np.where(neighbours < (u[:, None] if u.ndim else u), 1, -1)


def _holder_slots(neighbours: I64, owners: I64) -> I64:
    """Where each neighbour v of each owner u sits among u's holders H(u) = N(u) ∪ {u}
    (both sorted): its place among the neighbours, one further past u itself."""
    k = neighbours.shape[1]
    return np.arange(k, dtype=np.int64)[None, :] + (neighbours > owners[:, None])


def neighbour_matrix(graph: Graph) -> I64:
    """Row u: the k neighbours of client u, sorted (the complete graph included)."""
    if not graph.complete:
        return graph.matrix
    n = graph.n
    cols = np.arange(n - 1, dtype=np.int64)[None, :]
    return cols + (cols >= np.arange(n, dtype=np.int64)[:, None])


def share_book(secrets: U64, graph: Graph, threshold: int, coefficients: KeyStream) -> ShareBook:
    """Every client's shares of (b_u, s_u^SK), from the same key material its behaviour
    uses (words 4–7: s_u^SK, words 8–9: b_u), for its graph holders."""
    n = graph.n
    raw = np.ascontiguousarray(secrets, dtype="<u8").view(np.uint8).reshape(n, 8 * SECRET_WORDS)
    words = np.concatenate([bytes_to_words(raw[:, 64:80]), bytes_to_words(raw[:, 32:64])], axis=1)
    if graph.complete:
        holders = np.broadcast_to(np.arange(n, dtype=np.int64), (n, n))
    else:
        holders = graph.holder_matrix()
    return ShareBook(words, holders, threshold, coefficients)


class KeyBook:
    """The round's keys, pair values and masks (see the module docstring); results
    become available as the executor delivers them, and readers wait for them."""

    def __init__(
        self,
        secrets: U64,
        graph: Graph,
        *,
        dimension: int,
        bits: int,
        executor: Executor,
        shares: ShareBook | None = None,
        masks: bool | None = None,
    ) -> None:
        n = graph.n
        raw = np.ascontiguousarray(secrets, dtype="<u8").view(np.uint8).reshape(n, -1)
        self._sk = {b"c": raw[:, 0:KEY_BYTES], b"s": raw[:, KEY_BYTES : 2 * KEY_BYTES]}
        self._b = raw[:, 2 * KEY_BYTES : 2 * KEY_BYTES + SEED_BYTES]
        self.dimension, self.bits = dimension, bits
        self._shape = (dimension, bits)
        self._nb = neighbour_matrix(graph)
        rows = np.arange(n, dtype=np.int64)[:, None]
        upper = self._nb > rows
        self._lo = np.broadcast_to(rows, self._nb.shape)[upper]  # row-major: grouped by lo
        self._hi = self._nb[upper]
        keys = self._lo * n + self._hi  # ascending
        self._pair_keys = keys
        lo, hi = np.minimum(rows, self._nb), np.maximum(rows, self._nb)
        self._edge = np.searchsorted(keys, lo * n + hi)  # (n, k): the pair's edge id
        self._used = {b"c": np.zeros(keys.size, bool), b"s": np.zeros(keys.size, bool)}
        #: Agreements made on the spot (a directory key that was not the peer's own).
        self.extra_agreements = 0
        #: Shares sealed by their owners and opened by their holders in a batched
        #: round's shard tasks (:mod:`.population`; 0 in a round run per client).
        self.sealed_and_opened = 0
        width = np.dtype(bulk.mask_dtype(bits)).itemsize
        self.precomputes_masks = (
            n * dimension * width <= MASK_BYTES if masks is None else bool(masks)
        )
        self._publics: Future[dict[bytes, U8]] = Future()
        self._publics_got: dict[bytes, U8] | None = None  # the result, once read
        self._values: dict[bytes, Future[U8]] = {b"c": Future(), b"s": Future()}
        self._masks: Future[npt.NDArray[Any] | None] = Future()
        self._shares = shares
        self._sealed: Future[U8 | None] = Future()
        self._executor = executor
        if executor.size > 1:
            threading.Thread(target=self._drive, name="secagg-keybook", daemon=True).start()
        else:
            self._drive()

    # -- computation ----------------------------------------------------------------------
    def _drive(self) -> None:
        """Submit the work phase by phase, in the order the round needs it: public keys
        (AdvertiseKeys), encryption keys and sealed shares (ShareKeys), mask seeds and
        masks (MaskedInputCollection)."""
        futures: list[Future[Any]] = [
            self._publics,
            *self._values.values(),
            self._sealed,
            self._masks,
        ]
        try:
            ex, n = self._executor, self._b.shape[0]
            step = KEYS_PER_TASK
            spans = [slice(a, min(a + step, n)) for a in range(0, n, step)]
            publics = {k: np.empty((n, KEY_BYTES), dtype=np.uint8) for k in self._sk}

            def key_tasks() -> Iterator[tuple[tuple[bytes, slice], tuple[U8]]]:
                for kind, sk in self._sk.items():
                    yield from (((kind, s), (sk[s],)) for s in spans)
                    if kind == b"c" and self._shares is not None:
                        self._shares.table()  # the Shamir shares, made while workers work

            windowed(
                ex, "public_keys", key_tasks(), lambda at, r: publics[at[0]].__setitem__(at[1], r)
            )
            self._publics.set_result(publics)
            c_values = self._agreed(b"c", publics)
            self._values[b"c"].set_result(c_values)
            sealing = self._seal_all(c_values)
            s_values = self._agreed(b"s", publics)
            self._sealed.set_result(None if sealing is None else _stack(sealing, (0,), np.uint8))
            self._values[b"s"].set_result(s_values)
            if not self.precomputes_masks:
                self._masks.set_result(None)
                return
            signs = _deltas(self._nb, np.arange(n)).astype(np.int8)
            per = max(1, EXPANSIONS_PER_TASK // max(1, self._nb.shape[1] + 1))
            sums = [
                ex.submit(
                    "mask_sums",
                    self._b[a : a + per],
                    s_values[self._edge[a : a + per]],
                    signs[a : a + per],
                    *self._shape,
                )
                for a in range(0, n, per)
            ]
            self._masks.set_result(np.concatenate([f.result() for f in sums]))
        except BaseException as exc:
            for f in futures:
                if not f.done():
                    f.set_exception(exc)

    def _agreed(self, kind: bytes, publics: dict[bytes, U8]) -> U8:
        """KA.agree of every pair of neighbours for ``kind``, row e for edge e, made on
        the workers a window of tasks at a time (each task's keys gathered as it is
        sent, so the round holds the results, not every task's arguments at once)."""
        e, per = self._lo.size, PAIRS_PER_TASK
        sk, pk = self._sk[kind], publics[kind]
        out = np.empty((e, SEED_BYTES), dtype=np.uint8)
        calls = (
            (span, (kind, sk[self._lo[span]], pk[self._hi[span]]))
            for span in (slice(a, min(a + per, e)) for a in range(0, e, per))
        )
        windowed(self._executor, "agreements", calls, out.__setitem__)
        return out

    def _seal_all(self, keys: U8) -> list[Future[U8]] | None:
        """Submit the sealing of every client's shares for every graph neighbour."""
        if self._shares is None or self._nb.size * (SEED_BYTES + 80) > SEALED_BYTES:
            return None  # each client seals its own
        _, table = self._shares.table()
        n, k = self._nb.shape
        per = max(1, EDGES_PER_TASK // max(1, k))
        tasks = []
        for a in range(0, n, per):
            span = slice(a, min(a + per, n))
            rows = np.arange(span.start, span.stop, dtype=np.int64)[:, None]
            slot = _holder_slots(self._nb[span], rows[:, 0])  # v in H(u)
            tasks.append(
                self._executor.submit(
                    "seal_shares",
                    rows[:, 0],
                    self._nb[span],
                    table[rows, slot],
                    keys[self._edge[span]],
                )
            )
        return tasks

    def close(self, *, abort: bool = False) -> None:
        """Stop the executor (at once with ``abort``)."""
        self._executor.close(abort=abort)

    # -- reading --------------------------------------------------------------------------
    def _public_keys(self) -> dict[bytes, U8]:
        got = self._publics_got
        if got is None:
            got = self._publics_got = self._publics.result()
        return got

    def public(self, kind: bytes, client: int) -> bytes:
        """c_u^PK (``kind`` b"c") or s_u^PK (b"s")."""
        return self._public_keys()[kind][client].tobytes()  # type: ignore[no-any-return]

    def directory(self, me: int, kind: bytes, listed: I64, publics: bytes) -> Peers:
        """Client ``me``'s view of its neighbours' ``kind`` public keys as a directory
        listed them (``listed`` sorted, ``publics`` 32 bytes each in that order)."""
        own = self._public_keys()[kind][listed].tobytes() == publics
        return Peers(self, me, kind, listed, publics, own)

    def _slots(self, me: int, peers: I64) -> I64 | slice:
        """Where ``peers`` (sorted) sit among ``me``'s neighbours: every slot (a slice)
        when they are all of them, as they usually are, else their indices."""
        row = self._nb[me]
        if peers.size == row.size and bool((peers == row).all()):
            return _EVERY
        j = np.searchsorted(row, peers)
        if peers.size and (j.max() >= row.size or (row[j] != peers).any()):
            raise ValueError(f"client {me}: a peer is not one of its graph neighbours")
        return j

    def _book_values(self, kind: bytes, me: int, peers: I64) -> U8:
        """The book's KA values of ``me`` with ``peers``, marked as used."""
        edges = self._edge[me, self._slots(me, peers)]
        self._used[kind][edges] = True
        return self._values[kind].result()[edges]  # type: ignore[no-any-return]

    def _sealed_rows(self, me: int, peers: I64) -> bytes | None:
        sealed = self._sealed.result()
        if sealed is None:
            return None
        slots = self._slots(me, peers)
        self._used[b"c"][self._edge[me, slots]] = True
        return sealed[me, slots].tobytes()  # type: ignore[no-any-return]

    def _masks_from(self, me: int, peers: I64) -> U64 | None:
        """PRG(b_u) + Σ_{v ∈ peers} Δ_{u,v} PRG(s_{u,v}) from the precomputed sum over all
        of u's neighbours, less the neighbours not among ``peers`` (None: not precomputed)."""
        full = self._masks.result()
        if full is None:
            return None
        row = self._nb[me]
        slots = self._slots(me, peers)  # peers ⊆ row: the slots of row among peers
        self._used[b"s"][self._edge[me, slots]] = True
        out = full[me].astype(np.uint64)
        if slots is _EVERY:
            return out
        present = np.zeros(row.size, dtype=bool)
        present[slots] = True
        missing = np.flatnonzero(~present)
        if missing.size:
            values = self._values[b"s"].result()[self._edge[me, missing]]
            sign = _deltas(row[missing], me).astype(np.int8)
            less = bulk.mask_sums(None, values[None], sign[None], *self._shape)[0]
            out -= less.astype(np.uint64)
        return out

    def unmasking(
        self,
        self_seeds: U8,
        secrets: U8,
        publics: U8,
        signs: npt.NDArray[np.int8],
        pairs: tuple[I64, I64] | None = None,
    ) -> U64:
        """The server's correction −Σ_u PRG(b_u) + Σ_i signs_i PRG(KA.agree(secrets_i,
        publics_i, "s")) (mod 2^64; meaningful mod 2^b), from the rebuilt b_u and s_v^SK,
        each agreement computed from the rebuilt key (on the workers for large rounds).

        ``pairs`` (v_i, u_i): the clients whose secret and public key row i claims to
        be. A row whose rebuilt secret is s_v^SK and whose key is s_u^PK, byte for byte,
        for a graph edge {u, v}, takes the pair's value from the book (the same bytes,
        by the Diffie–Hellman symmetry the book rests on); any other is agreed here."""
        ex, step, width = self._executor, EDGES_PER_TASK, EXPANSIONS_PER_TASK
        agreed = np.empty((signs.size, SEED_BYTES), dtype=np.uint8)
        todo = np.arange(signs.size)
        if pairs is not None and signs.size:
            edges, known = self._known_pairs(pairs[0], pairs[1], secrets, publics)
            agreed[known] = self._values[b"s"].result()[edges[known]]
            todo = np.flatnonzero(~known)
        tasks = [
            ex.submit("agreements", b"s", secrets[todo[a : a + step]], publics[todo[a : a + step]])
            for a in range(0, todo.size, step)
        ]
        if todo.size:
            agreed[todo] = _stack(tasks, (0, SEED_BYTES), np.uint8)
        seeds = np.concatenate([self_seeds, agreed])
        sign = np.concatenate([np.full(self_seeds.shape[0], -1, np.int8), signs])
        sums = [
            ex.submit(
                "mask_sums",
                None,
                seeds[None, a : a + width],
                sign[None, a : a + width],
                *self._shape,
            )
            for a in range(0, sign.size, width)
        ]
        out = np.zeros(self.dimension, dtype=np.uint64)
        for f in sums:
            out += f.result()[0].astype(np.uint64)
        return out

    def _known_pairs(
        self, owners: I64, peers: I64, secrets: U8, publics: U8
    ) -> tuple[I64, npt.NDArray[np.bool_]]:
        """(edge id, whether row i is the book's pair {owners_i, peers_i}: a graph edge
        with s_{owner}^SK and s_{peer}^PK as given, byte for byte)."""
        n = self._nb.shape[0]
        v = np.asarray(owners, dtype=np.int64)
        u = np.asarray(peers, dtype=np.int64)
        ok = (v >= 0) & (v < n) & (u >= 0) & (u < n) & (u != v)
        v, u = np.where(ok, v, 0), np.where(ok, u, 0)
        keys = np.minimum(u, v) * n + np.maximum(u, v)
        edges = np.minimum(np.searchsorted(self._pair_keys, keys), self._pair_keys.size - 1)
        if self._pair_keys.size:
            ok &= self._pair_keys[edges] == keys
        else:
            ok[:] = False
        ok &= (self._sk[b"s"][v] == secrets).all(axis=1)
        ok &= (self._public_keys()[b"s"][u] == publics).all(axis=1)
        return edges, ok

    # -- a batched round's shards (:mod:`.population`) ------------------------------------
    def mark_used(self, kind: bytes, clients: I64, present: npt.NDArray[np.bool_]) -> None:
        """Count the ``kind`` agreements of ``clients`` with their neighbours v that are
        ``present[v]`` as used (what those clients' behaviours would have asked for)."""
        nb = self._nb[clients]
        self._used[kind][self._edge[clients][present[nb]]] = True

    def _shards(self, clients: I64, work: int) -> list[I64]:
        """``clients`` in runs of about :data:`SHARD_WORK` units of ``work`` per client."""
        step = max(1, SHARD_WORK // max(1, work))
        return [clients[a : a + step] for a in range(0, clients.size, step)]

    def sum_in_background(self, task: str, calls: Iterable[tuple[Any, ...]]) -> Future[Any]:
        """The sum of ``task`` (a name of :data:`~privsim.kit.secagg.pool.TASKS`) over
        ``calls``, run a window at a time
        (:func:`~privsim.kit.secagg.pool.windowed`) on a thread while the round goes on
        (in this thread with a single worker)."""
        done: Future[Any] = Future()
        total: list[Any] = []

        def run() -> None:
            try:
                windowed(
                    self._executor,
                    task,
                    ((None, args) for args in calls),
                    lambda _, result: total.append(result if not total else total.pop() + result),
                )
                done.set_result(total[0] if total else 0)
            except BaseException as exc:  # the reader re-raises it
                done.set_exception(exc)

        if self._executor.size > 1:
            threading.Thread(target=run, name=f"secagg-{task}", daemon=True).start()
        else:
            run()
        return done

    def mask_totals(self, clients: I64, present: npt.NDArray[np.bool_]) -> Future[U64]:
        """Σ_{u ∈ clients} [PRG(b_u) + Σ_{v ∈ N(u), present[v]} Δ_{u,v} PRG(s_{u,v})] (the
        masks of the clients' y_u, mod 2^64), summed shard by shard on the workers."""
        values = self._values[b"s"].result()

        def calls() -> Iterator[tuple[Any, ...]]:
            for shard in self._shards(clients, self._nb.shape[1] + 1):
                nb = self._nb[shard]
                signs = _deltas(nb, shard) * present[nb]
                yield self._b[shard], values[self._edge[shard]], signs.astype(np.int8), *self._shape

        return self.sum_in_background("mask_total", calls())

    def seal_checks(
        self, clients: I64, present: npt.NDArray[np.bool_], shares: ShareBook
    ) -> Future[int]:
        """ShareKeys shard by shard on the workers: each of ``clients`` seals its share
        records for its present neighbours, and each neighbour opens and checks its own;
        the number of shares sealed."""
        values = self._values[b"c"].result()

        def calls() -> Iterator[tuple[Any, ...]]:
            for shard in self._shards(clients, 2 * self._nb.shape[1]):
                nb = self._nb[shard]
                slot = _holder_slots(nb, shard)
                rows = shares.rows(shard)
                yield (
                    shard,
                    nb,
                    present[nb],
                    rows[np.arange(shard.size)[:, None], slot],
                    values[self._edge[shard]],
                )

        return self.sum_in_background("seal_and_open", calls())

    @property
    def neighbours(self) -> I64:
        """Row u: the k neighbours of client u, sorted."""
        return self._nb

    def public_keys(self, kind: bytes) -> U8:
        """Every client's ``kind`` public key (n, 32), as its AdvertiseKeys carried it."""
        return self._public_keys()[kind]

    @property
    def agreements(self) -> int:
        """Key agreements the round needed: one per pair and kind used, plus any made on
        the spot."""
        return int(sum(int(u.sum()) for u in self._used.values())) + self.extra_agreements


class Peers:
    """Client u's neighbours' public keys of one kind, as its directory listed them: the
    KA values, sealed shares and masks u computes with them. When the keys are the
    peers' own (``own``), they come from the book; otherwise u agrees on the spot."""

    __slots__ = ("_book", "_kind", "_listed", "_me", "_own", "_publics")

    def __init__(
        self, book: KeyBook, me: int, kind: bytes, listed: I64, publics: bytes, own: bool
    ) -> None:
        self._book, self._me, self._kind = book, me, kind
        self._listed, self._publics, self._own = listed, publics, own

    def _given(self, peers: I64) -> list[bytes]:
        at = np.searchsorted(self._listed, peers)
        if peers.size and (
            at.max() >= self._listed.size or not np.array_equal(self._listed[at], peers)
        ):
            raise ValueError(f"client {self._me}: a peer is missing from its directory")
        keys = np.frombuffer(self._publics, dtype=np.uint8).reshape(-1, KEY_BYTES)[at]
        return [k.tobytes() for k in keys]

    def agree(self, peers: I64) -> list[bytes]:
        """KA.agree(u's secret, pk_v) for each of ``peers`` (sorted)."""
        if self._own:
            raw = self._book._book_values(self._kind, self._me, peers).tobytes()
            return [raw[i : i + SEED_BYTES] for i in range(0, len(raw), SEED_BYTES)]
        secret = self._book._sk[self._kind][self._me].tobytes()
        self._book.extra_agreements += peers.size
        return [agree(secret, pk, self._kind) for pk in self._given(peers)]

    def seal(self, peers: I64, records: U8 | Callable[[], U8]) -> bytes:
        """e_{u,v} = AE.enc(KA.agree(c_u^SK, c_v^PK), row of ``records``) for each of
        ``peers`` (sorted), concatenated; ``records`` may be a function making them (not
        called when the book has sealed them)."""
        if self._own:
            sealed = self._book._sealed_rows(self._me, peers)
            if sealed is not None:
                return sealed
        if callable(records):
            records = records()
        keys = self.agree(peers)
        return b"".join(
            seal_share(AESGCM(key), self._me, v, records[i].tobytes())
            for i, (v, key) in enumerate(zip(peers.tolist(), keys, strict=True))
        )

    def masks(self, peers: I64) -> U64:
        """PRG(b_u) + Σ_{v ∈ peers} Δ_{u,v} PRG(s_{u,v}), Δ_{u,v} = +1 if u > v else −1
        (mod 2^64; only its residue mod 2^b is meaningful)."""
        if self._own:
            out = self._book._masks_from(self._me, peers)
            if out is not None:
                return out
        seeds = _seed_rows(self.agree(peers))
        sign = np.where(peers < self._me, 1, -1).astype(np.int8)
        me = self._me
        got = bulk.mask_sums(
            self._book._b[me : me + 1], seeds[None], sign[None], *self._book._shape
        )
        return got[0].astype(np.uint64)


#: Every slot of a client's neighbour row (:meth:`KeyBook._slots`).
_EVERY = slice(None)


def _stack(futures: list[Future[Any]], empty: tuple[int, ...], dtype: type) -> Any:
    """The tasks' results end to end (an empty array of shape ``empty`` if none)."""
    if not futures:
        return np.empty(empty, dtype=dtype)
    return np.concatenate([f.result() for f in futures])


def _seed_rows(seeds: list[bytes]) -> U8:
    if not seeds:
        return np.empty((0, SEED_BYTES), dtype=np.uint8)
    return np.frombuffer(b"".join(seeds), dtype=np.uint8).reshape(-1, SEED_BYTES)
