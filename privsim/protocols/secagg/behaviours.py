"""SecAgg roles as agent behaviours: the client and the server of Bonawitz et al.
(CCS 2017), Figure 4, honest-but-curious version (four rounds: AdvertiseKeys,
ShareKeys, MaskedInputCollection, Unmasking), over a communication graph (SecAgg+,
Bell et al. 2020: the client talks to its neighbours only; SecAgg: the complete graph).

After every round the server recomputes the live set U_r and checks the threshold:
every client whose secrets may be needed keeps at least t live holders of its shares
(for SecAgg, |U_r| ≥ t); otherwise it aborts with a named reason.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from privsim.protocols.secagg.crypto import (
    KEY_BYTES,
    SEED_BYTES,
    TAG_BYTES,
    KeyPair,
    PairKeys,
    agree,
    open_share,
    seal_share,
)
from privsim.protocols.secagg.graph import Graph
from privsim.protocols.secagg.maths import (
    B_WORDS,
    RECORD_BYTES,
    SK_WORDS,
    apply_mask,
    decode_sum,
    modulus_mask,
    pack_records,
    unpack_records,
    wire_dtype,
)
from privsim.protocols.secagg.messages import (
    AdvertiseKeys,
    Directory,
    EncryptedShares,
    MaskedInput,
    Survivors,
    UnmaskShares,
)
from privsim.protocols.secagg.outcome import STAGE_ABORT, AbortReason, Outcome, Stage
from privsim.protocols.secagg.sharing import ShareBook, interpolate_at_zero, words_to_bytes
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.messages import Message

__all__ = ["ClientInput", "SecAggPlan", "client", "server"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

#: x_u for a client index, drawing any noise from the generator the factory gives:
#: (z_u, η_u, x_u).
ClientInput = Callable[
    [int, Callable[[], np.random.Generator]], tuple[npt.NDArray[np.float64], I64, U64]
]

_CIPHERTEXT = RECORD_BYTES + TAG_BYTES


@dataclass(frozen=True, slots=True, kw_only=True)
class SecAggPlan:
    """Public parameters every party knows, and the simulation's shared helpers.

    ``threshold`` t trades robustness (rounds survive while t holders live) against
    collusion (t colluding holders and the server unmask a client). ``round_timeout``
    trades latency against stragglers cut off. ``secrets`` holds each client's key
    material (row u: 10 words from its counter-based stream); ``pair_keys`` memoises the KA value
    both ends of a pair compute; ``book`` makes every client's Shamir shares in one
    vectorised pass; ``inputs`` gives each client its encoded input.
    """

    clients: tuple[str, ...]
    server: str
    graph: Graph
    threshold: int
    dimension: int
    bits: int
    fraction_bits: int
    round_timeout: float
    secrets: U64
    book: ShareBook
    pair_keys: PairKeys
    inputs: ClientInput


def _keys(words: U64) -> tuple[KeyPair, KeyPair, bytes]:
    raw = np.asarray(words, dtype="<u8").tobytes()
    c = KeyPair.from_secret(raw[:KEY_BYTES])
    s = KeyPair.from_secret(raw[KEY_BYTES : 2 * KEY_BYTES])
    return c, s, raw[2 * KEY_BYTES : 2 * KEY_BYTES + 16]


def client(agent: Agent, plan: SecAggPlan) -> Behaviour:
    """Client u: AdvertiseKeys, ShareKeys, MaskedInputCollection, Unmasking."""
    me = agent.role_index
    bits, wait = plan.bits, 10.0 * plan.round_timeout
    # Round 0 (AdvertiseKeys): (c_u^PK, c_u^SK), (s_u^PK, s_u^SK) <- KA.gen().
    c, s, b_seed = _keys(plan.secrets[me])
    agent.send(plan.server, AdvertiseKeys(c_public=c.public, s_public=s.public))

    # Round 1 (ShareKeys): t-of-(k+1) shares of b_u and s_u^SK, each encrypted to its holder.
    directory = yield from agent.receive(Directory, deadline=agent.now + wait)
    if directory is None:
        return None
    peers = directory.message.clients
    peer_ids = peers.tolist()
    c_blob, s_blob = directory.message.c_public, directory.message.s_public
    c_pub = {v: c_blob[KEY_BYTES * j : KEY_BYTES * (j + 1)] for j, v in enumerate(peer_ids)}
    s_pub = {v: s_blob[KEY_BYTES * j : KEY_BYTES * (j + 1)] for j, v in enumerate(peer_ids)}

    graph_holders, rows = plan.book.shares(me)
    take = graph_holders == me  # holders sorted, peers a sorted subset of them
    take[np.searchsorted(graph_holders, peers)] = True
    holders, shares = graph_holders[take], rows[take]
    held: dict[int, U64] = {me: shares[holders == me][0]}
    others = holders != me
    records = pack_records(me, holders[others], shares[others])
    sealed = [
        seal_share(plan.pair_keys.aead(me, v, c.secret, c_pub[v]), me, v, records[j].tobytes())
        for j, v in enumerate(holders[others].tolist())
    ]
    agent.send(
        plan.server, EncryptedShares(peers=holders[holders != me], ciphertexts=b"".join(sealed))
    )

    # Round 2 (MaskedInputCollection): decrypt the shares held for U2, send y_u.
    forwarded = yield from agent.receive(EncryptedShares, deadline=agent.now + wait)
    if forwarded is None:
        return None
    senders = forwarded.message.peers.tolist()
    blob = forwarded.message.ciphertexts
    plain = b"".join(
        open_share(
            plan.pair_keys.aead(me, u, c.secret, c_pub[u]),
            u,
            me,
            blob[_CIPHERTEXT * j : _CIPHERTEXT * (j + 1)],
        )
        for j, u in enumerate(senders)
    )
    if senders:
        ids, words = unpack_records(plain)
        for j, u in enumerate(senders):  # the record names its owner and holder
            if ids[j, 0] == u and ids[j, 1] == me:
                held[u] = words[j]
    z, eta, x = plan.inputs(me, lambda: agent.rng("noise"))
    agent.remember("input", z)
    agent.remember("noise", eta)
    y = x.copy()
    apply_mask(y, b_seed, +1, bits)  # p_u = PRG(b_u)
    for v in senders:  # p_{u,v} = Δ_{u,v} PRG(s_{u,v}), Δ = +1 if u > v else −1
        seed = plan.pair_keys.get(b"s", me, v, s.secret, s_pub[v])
        apply_mask(y, seed, +1 if me > v else -1, bits)
    y &= modulus_mask(bits)
    agent.send(plan.server, MaskedInput(values=y.astype(wire_dtype(bits))))

    # Round 3 (Unmasking): b-shares of survivors, s^SK-shares of the dropped, never both.
    listed = yield from agent.receive(Survivors, deadline=agent.now + wait)
    if listed is None:
        return None
    survivors = set(listed.message.clients.tolist())
    owners = sorted(held)
    kinds = np.array([0 if v in survivors else 1 for v in owners], dtype=np.uint8)
    rows = np.zeros((len(owners), SK_WORDS), dtype=np.uint64)
    for j, v in enumerate(owners):
        share = held[v]
        if kinds[j] == 0:
            rows[j, :B_WORDS] = share[:B_WORDS]
        else:
            rows[j] = share[B_WORDS:]
    agent.send(
        plan.server,
        UnmaskShares(owners=np.array(owners, dtype=np.int64), kinds=kinds, shares=rows),
    )
    return None


def _collect(
    agent: Agent, kind: type[Message], expected: set[int], index: dict[str, int], deadline: float
) -> Generator[simpy.Event, Any, dict[int, Any]]:
    """Messages of ``kind`` from the ``expected`` clients until all came or the deadline."""
    got: dict[int, Any] = {}
    while len(got) < len(expected):
        delivery = yield from agent.receive(kind, deadline=deadline)
        if delivery is None:
            break
        i = index.get(delivery.src)
        if i is not None and i in expected and i not in got:
            got[i] = delivery.message
    return got


def short_of_threshold(
    graph: Graph, threshold: int, owners: I64, alive: npt.NDArray[np.bool_]
) -> tuple[int, int]:
    """(clients among ``owners`` with fewer than t live holders, the fewest holders)."""
    if owners.size == 0:
        return 0, 0
    if graph.complete:
        live = int(alive.sum())
        return (owners.size if live < threshold else 0), live
    counts = alive[graph.matrix[owners]].sum(axis=1) + alive[owners]
    return int((counts < threshold).sum()), int(counts.min())


def _revealed(reveals: dict[int, Any], holders: I64) -> tuple[I64, I64, U64, U64]:
    """Every revealed share as flat arrays: (owner, holder, kind, share row)."""
    msgs = [reveals[h] for h in holders.tolist()]
    if not msgs:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, np.uint8), np.empty((0, SK_WORDS), np.uint64)  # type: ignore[return-value]
    owners = np.concatenate([m.owners for m in msgs])
    by = np.concatenate(
        [
            np.full(m.owners.size, h, dtype=np.int64)
            for h, m in zip(holders.tolist(), msgs, strict=True)
        ]
    )
    kinds = np.concatenate([m.kinds for m in msgs])
    rows = np.concatenate([m.shares for m in msgs]).astype(np.uint64)
    return owners, by, kinds, rows  # type: ignore[return-value]


def _first_t(owners: I64, holders: I64, rows: U64, t: int) -> tuple[I64, U64]:
    """Each owner's secret from the t shares of its lowest holders (owners with fewer
    than t shares are left out): (owners, secret words)."""
    order = np.lexsort((holders, owners))
    owners, holders, rows = owners[order], holders[order], rows[order]
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if owners.size else owners
    counts = np.diff(np.r_[starts, owners.size])
    rank = np.arange(owners.size) - np.repeat(starts, counts)
    full = np.repeat(counts >= t, counts) & (rank < t)
    owners, holders, rows = owners[full], holders[full], rows[full]
    m = owners.size // t
    if m == 0:
        return np.empty(0, dtype=np.int64), np.empty((0, rows.shape[1]), dtype=np.uint64)
    xs = (holders + 1).reshape(m, t)
    secret = interpolate_at_zero(xs, rows.reshape(m, t, -1))
    return owners[::t], secret


def _live(n: int, members: I64) -> npt.NDArray[np.bool_]:
    alive = np.zeros(n, dtype=bool)
    alive[members] = True
    return alive


def server(agent: Agent, plan: SecAggPlan) -> Behaviour:
    """The server: relays keys and shares, sums masked inputs, unmasks Σ_{u ∈ U3} x_u."""
    n, t, graph = len(plan.clients), plan.threshold, plan.graph
    index = {c: i for i, c in enumerate(plan.clients)}
    sets: list[I64] = []
    closed: list[float] = []

    def check(stage: Stage, owners: I64, alive: I64) -> Outcome | None:
        sets.append(alive)
        closed.append(agent.now)
        short, fewest = short_of_threshold(graph, t, owners, _live(n, alive))
        if not short:
            return None
        return Outcome(
            released=None,
            survivors=tuple(sets),
            closed_at=tuple(closed),
            abort=STAGE_ABORT[stage],
            detail=f"after {stage.name}: {short} client(s) have fewer than t = {t} live "
            f"share holders (fewest {fewest}; {alive.size} of {n} clients live)",
        )

    # Round 0: collect public keys, U1.
    keys = yield from _collect(
        agent, AdvertiseKeys, set(range(n)), index, agent.now + plan.round_timeout
    )
    u1 = np.array(sorted(keys), dtype=np.int64)
    if (stop := check(Stage.ADVERTISE_KEYS, u1, u1)) is not None:
        return stop
    alive = _live(n, u1)
    for u in u1.tolist():
        peers = graph.neighbours(u)
        peers = peers[alive[peers]]
        agent.send(
            plan.clients[u],
            Directory(
                clients=peers,
                c_public=b"".join(keys[v].c_public for v in peers.tolist()),
                s_public=b"".join(keys[v].s_public for v in peers.tolist()),
            ),
        )

    # Round 1: collect encrypted shares, U2; forward each holder its ciphertexts.
    up = yield from _collect(
        agent, EncryptedShares, set(u1.tolist()), index, agent.now + plan.round_timeout
    )
    u2 = np.array(sorted(up), dtype=np.int64)
    if (stop := check(Stage.SHARE_KEYS, u2, u2)) is not None:
        return stop
    alive = _live(n, u2)
    senders = np.concatenate([np.full(up[u].peers.size, u, dtype=np.int64) for u in u2.tolist()])
    receivers = np.concatenate([up[u].peers for u in u2.tolist()])
    blobs = np.frombuffer(b"".join(up[u].ciphertexts for u in u2.tolist()), dtype=np.uint8)
    blobs = blobs.reshape(-1, _CIPHERTEXT)
    keep = alive[receivers]
    senders, receivers, blobs = senders[keep], receivers[keep], blobs[keep]
    order = np.lexsort((senders, receivers))
    senders, receivers, blobs = senders[order], receivers[order], blobs[order]
    bounds = np.searchsorted(receivers, u2, side="left"), np.searchsorted(receivers, u2, "right")
    for v, lo, hi in zip(u2.tolist(), *bounds, strict=True):
        agent.send(
            plan.clients[v],
            EncryptedShares(peers=senders[lo:hi].copy(), ciphertexts=blobs[lo:hi].tobytes()),
        )

    # Round 2: collect masked inputs, U3; tell each survivor the survivors it shares with.
    masked = yield from _collect(
        agent, MaskedInput, set(u2.tolist()), index, agent.now + plan.round_timeout
    )
    u3 = np.array(sorted(masked), dtype=np.int64)
    if (stop := check(Stage.MASKED_INPUT, u2, u3)) is not None:
        return stop
    alive3 = _live(n, u3)
    total = np.zeros(plan.dimension, dtype=np.uint64)
    for u in u3.tolist():
        total += masked[u].values.astype(np.uint64)
    for u in u3.tolist():
        mine = graph.holders(u)
        agent.send(plan.clients[u], Survivors(clients=mine[alive3[mine]]))

    # Round 3: collect unmasking shares, U5; reconstruct and remove the masks.
    reveals = yield from _collect(
        agent, UnmaskShares, set(u3.tolist()), index, agent.now + plan.round_timeout
    )
    u5 = np.array(sorted(reveals), dtype=np.int64)
    if (stop := check(Stage.UNMASKING, u2, u5)) is not None:
        return stop
    owners, holders, kinds, rows = _revealed(reveals, u5)
    dropped = np.setdiff1d(u2, u3)
    b_take = (kinds == 0) & alive3[owners]
    s_take = (kinds == 1) & ~alive3[owners]
    b_owners, b_words = _first_t(owners[b_take], holders[b_take], rows[b_take, :B_WORDS], t)
    s_owners, s_words = _first_t(owners[s_take], holders[s_take], rows[s_take], t)
    missing = np.setdiff1d(u3, b_owners).size + np.setdiff1d(dropped, s_owners).size
    if missing:
        sets[-1] = u5
        return Outcome(
            released=None,
            survivors=tuple(sets),
            closed_at=tuple(closed),
            abort=AbortReason.TOO_FEW_UNMASKING_SHARES,
            detail=f"after UNMASKING: {missing} secret(s) have fewer than t = {t} shares",
        )
    seeds = words_to_bytes(b_words, SEED_BYTES)
    for j in range(b_owners.size):  # − PRG(b_u)
        apply_mask(total, seeds[j].tobytes(), -1, plan.bits)
    secrets = words_to_bytes(s_words, KEY_BYTES)
    for j, v in enumerate(s_owners.tolist()):  # − Δ_{u,v} PRG(s_{u,v}), u a survivor next to v
        key = X25519PrivateKey.from_private_bytes(secrets[j].tobytes())
        peers = graph.neighbours(v)
        for u in peers[alive3[peers]].tolist():
            seed = agree(key, keys[u].s_public, b"s")
            apply_mask(total, seed, -1 if u > v else +1, plan.bits)
    total &= modulus_mask(plan.bits)
    return Outcome(
        released=decode_sum(total, plan.fraction_bits, plan.bits),
        survivors=tuple(sets),
        closed_at=tuple(closed),
        seeds_reconstructed=int(b_owners.size),
        keys_reconstructed=int(s_owners.size),
    )
