"""SecAgg roles as agent behaviours: the client and the server of Bonawitz et al.
(CCS 2017), Figure 4, honest-but-curious version (four rounds: AdvertiseKeys,
ShareKeys, MaskedInputCollection, Unmasking), over a communication graph (SecAgg+,
Bell et al. 2020: the client talks to its neighbours only; SecAgg: the complete graph).
A client answers the Unmasking request only for a survivor list that names it and t
of the clients whose shares it holds (Round 4's "|U3| ≥ t"); there is no
ConsistencyCheck round, so an active server (``SecAggPlan.isolation``) may send each
client its own list (:mod:`~privsim.kit.secagg.isolation`).

After every round the server recomputes the live set U_r and checks the threshold:
every client whose secrets may be needed keeps at least t live holders of its shares
(for SecAgg, |U_r| ≥ t); otherwise it aborts with a named reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from privsim.kit.secagg.crypto import (
    KEY_BYTES,
    SEED_BYTES,
    TAG_BYTES,
    open_shares,
)
from privsim.kit.secagg.graph import Graph
from privsim.kit.secagg.isolation import Isolation, Route
from privsim.kit.secagg.isolation import route as isolation_route
from privsim.kit.secagg.keybook import KeyBook
from privsim.kit.secagg.maths import (
    B_WORDS,
    RECORD_BYTES,
    SK_WORDS,
    decode_sum,
    modulus_mask,
    pack_records,
    unpack_records,
    wire_dtype,
)
from privsim.kit.secagg.messages import (
    AdvertiseKeys,
    Directory,
    EncryptedShares,
    MaskedInput,
    Survivors,
    UnmaskShares,
)
from privsim.kit.secagg.outcome import STAGE_ABORT, AbortReason, Outcome, Stage
from privsim.kit.secagg.sharing import ShareBook, interpolate_at_zero, words_to_bytes
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.messages import Message

__all__ = ["ClientInput", "SecAggPlan", "client", "live_mask", "server"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

#: x_u for a client index, drawing any noise from the generator the factory gives:
#: (z_u, η_u, x_u), z_u its input as given (real or integer), η_u its noise share, x_u
#: the two encoded mod 2^b (:func:`privsim.kit.secagg.inputs.client_inputs`).
ClientInput = Callable[[int, Callable[[], np.random.Generator]], tuple[npt.NDArray[Any], I64, U64]]

_CIPHERTEXT = RECORD_BYTES + TAG_BYTES


@dataclass(frozen=True, slots=True, kw_only=True)
class SecAggPlan:
    """Public parameters every party knows, and the simulation's shared helpers.

    ``threshold`` t trades robustness (rounds survive while t holders live) against
    collusion (t colluding holders and the server unmask a client). ``round_timeout``
    trades latency against stragglers cut off. ``keys`` holds each client's key pairs,
    key agreements and masks (computed in bulk, on worker processes for large rounds);
    ``book`` makes every client's Shamir shares in one vectorised pass; ``inputs`` gives
    each client its encoded input. ``first`` is the role index of the first client
    (the parties of role ``client`` added to the world before the round's).
    ``isolation``: the server is active and isolates a client in the Unmasking round
    (:mod:`~privsim.kit.secagg.isolation`); None: honest-but-curious.
    """

    clients: tuple[str, ...]
    server: str
    graph: Graph
    threshold: int
    dimension: int
    bits: int
    fraction_bits: int
    round_timeout: float
    keys: KeyBook
    book: ShareBook
    inputs: ClientInput
    first: int = 0
    isolation: Isolation | None = None


def client(agent: Agent, plan: SecAggPlan) -> Behaviour:
    """Client u: AdvertiseKeys, ShareKeys, MaskedInputCollection, Unmasking."""
    me = agent.role_index - plan.first
    bits, wait, keys = plan.bits, 10.0 * plan.round_timeout, plan.keys
    # Round 0 (AdvertiseKeys): (c_u^PK, c_u^SK), (s_u^PK, s_u^SK) <- KA.gen().
    agent.send(
        plan.server,
        AdvertiseKeys(c_public=keys.public(b"c", me), s_public=keys.public(b"s", me)),
    )

    # Round 1 (ShareKeys): t-of-(k+1) shares of b_u and s_u^SK, each encrypted to its holder.
    directory = yield from agent.receive(Directory, deadline=agent.now + wait)
    if directory is None:
        return None
    peers = directory.message.clients
    c_peers = keys.directory(me, b"c", peers, directory.message.c_public)
    s_peers = keys.directory(me, b"s", peers, directory.message.s_public)

    graph_holders, rows = plan.book.shares(me)
    take = graph_holders == me  # holders sorted, peers a sorted subset of them
    take[np.searchsorted(graph_holders, peers)] = True
    holders, shares = graph_holders[take], rows[take]
    own = shares[holders == me]  # f_u(u + 1): u holds a share of its own secrets
    others = holders != me
    to = holders[others]
    # e_{u,v} = AE.enc(KA.agree(c_u^SK, c_v^PK), u ‖ v ‖ shares) (the records are made
    # only if the book has not sealed them)
    sealed = c_peers.seal(to, partial(pack_records, me, to, shares[others]))
    agent.send(plan.server, EncryptedShares(peers=to, ciphertexts=sealed))
    # a waiting client keeps only what later rounds need (10^4 clients wait at once)
    del graph_holders, rows, take, shares, sealed, directory

    # Round 2 (MaskedInputCollection): decrypt the shares held for U2, send y_u.
    forwarded = yield from agent.receive(EncryptedShares, deadline=agent.now + wait)
    if forwarded is None:
        return None
    came = forwarded.message.peers
    senders = came.tolist()
    blob = forwarded.message.ciphertexts
    plain = open_shares(me, senders, c_peers.agree(came), blob, _CIPHERTEXT)
    owners, held = np.array([me], dtype=np.int64), own  # the shares u holds, by owner
    if senders:
        ids, words = unpack_records(plain)
        ok = (ids[:, 0] == came) & (ids[:, 1] == me)  # the record names its owner and holder
        owners, held = np.concatenate([owners, came[ok]]), np.concatenate([held, words[ok]])
        order = np.argsort(owners)
        owners, held = owners[order], held[order]
        del ids, words, ok, order
    z, eta, x = plan.inputs(me, lambda: agent.rng("noise"))
    agent.remember("input", z)
    agent.remember("noise", eta)
    # p_u = PRG(b_u) and p_{u,v} = Δ_{u,v} PRG(s_{u,v}), Δ = +1 if u > v else −1
    y = x + s_peers.masks(came)
    y &= modulus_mask(bits)
    agent.send(plan.server, MaskedInput(values=y.astype(wire_dtype(bits))))
    del forwarded, blob, plain, x, y, z, eta, c_peers, s_peers

    # Round 3 (Unmasking): b-shares of survivors, s^SK-shares of the dropped, never both.
    listed = yield from agent.receive(Survivors, deadline=agent.now + wait)
    if listed is None:
        return None
    named = _isin_sorted(owners, listed.message.clients)
    if not named[owners == me].any() or int(named.sum()) < plan.threshold:
        return None  # a list without u, or of fewer than t: refused (Figure 4, Round 4)
    dropped = ~named
    rows = np.zeros((owners.size, SK_WORDS), dtype=np.uint64)
    rows[~dropped, :B_WORDS] = held[~dropped, :B_WORDS]
    rows[dropped] = held[dropped, B_WORDS:]
    agent.send(
        plan.server,
        UnmaskShares(owners=owners, kinds=dropped.astype(np.uint8), shares=rows),
    )
    return None


def _isin_sorted(values: I64, members: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """``np.isin(values, members)`` by binary search when ``members`` is sorted (as every
    list the server sends is); np.isin itself otherwise."""
    members = np.asarray(members)
    if members.ndim != 1 or members.size == 0 or (members[1:] < members[:-1]).any():
        return np.isin(values, members)
    at = np.minimum(np.searchsorted(members, values), members.size - 1)
    return members[at] == values  # type: ignore[no-any-return]


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
    first = np.empty(owners.size + 1, dtype=bool)  # where each owner's run of shares starts
    first[0] = first[-1] = True  # (and where the last one ends)
    np.not_equal(owners[1:], owners[:-1], out=first[1:-1])
    bounds = np.flatnonzero(first)
    starts, counts = bounds[:-1], bounds[1:] - bounds[:-1]
    rank = np.arange(owners.size) - np.repeat(starts, counts)
    full = np.repeat(counts >= t, counts) & (rank < t)
    owners, holders, rows = owners[full], holders[full], rows[full]
    m = owners.size // t
    if m == 0:
        return np.empty(0, dtype=np.int64), np.empty((0, rows.shape[1]), dtype=np.uint64)
    xs = (holders + 1).reshape(m, t)
    secret = interpolate_at_zero(xs, rows.reshape(m, t, -1))
    return owners[::t], secret


def live_mask(n: int, members: I64) -> npt.NDArray[np.bool_]:
    """alive[u]: whether client u is among ``members`` (a live set U_r)."""
    alive = np.zeros(n, dtype=bool)
    alive[members] = True
    return alive


class RoundLog:
    """What the server records as it closes each round: the live sets U1, U2, U3, U5 and
    when it closed them, and the outcome they lead to (an abort with its reason, or the
    release)."""

    def __init__(self, n: int, graph: Graph, threshold: int) -> None:
        self.n, self.graph, self.threshold = n, graph, threshold
        self.sets: list[I64] = []
        self.closed: list[float] = []

    def close(self, agent: Agent, stage: Stage, owners: I64, alive: I64) -> Outcome | None:
        """Record round ``stage`` closed now with live set ``alive``; an abort if no
        message came, or if a client among ``owners`` (whose secrets may be needed) has
        fewer than t live holders of its shares; None to go on."""
        n, t = self.n, self.threshold
        self.sets.append(alive)
        self.closed.append(agent.now)
        if alive.size == 0:  # no client's message arrived: nothing to aggregate
            return self._aborted(
                stage,
                f"no client's message reached the server (0 of {n} clients live: every "
                "client absent, crashed or its messages lost)",
            )
        short, fewest = short_of_threshold(self.graph, t, owners, live_mask(n, alive))
        if not short:
            return None
        return self._aborted(
            stage,
            f"{short} client(s) have fewer than t = {t} live share holders (fewest "
            f"{fewest}; {alive.size} of {n} clients live)",
        )

    def _aborted(self, stage: Stage, detail: str) -> Outcome:
        return Outcome(
            released=None,
            survivors=tuple(self.sets),
            closed_at=tuple(self.closed),
            abort=STAGE_ABORT[stage],
            detail=f"after {stage.name}: {detail}",
        )

    def missing_shares(self, missing: int) -> Outcome:
        """The abort of an Unmasking that left ``missing`` secrets short of t shares."""
        return Outcome(
            released=None,
            survivors=tuple(self.sets),
            closed_at=tuple(self.closed),
            abort=AbortReason.TOO_FEW_UNMASKING_SHARES,
            detail=f"after UNMASKING: {missing} secret(s) have fewer than t = "
            f"{self.threshold} shares",
        )

    def released(self, value: npt.NDArray[np.float64], seeds: int, keys: int) -> Outcome:
        """The release, with the ``seeds`` b_u and ``keys`` s_v^SK reconstructed."""
        return Outcome(
            released=value,
            survivors=tuple(self.sets),
            closed_at=tuple(self.closed),
            seeds_reconstructed=seeds,
            keys_reconstructed=keys,
        )


def server(agent: Agent, plan: SecAggPlan) -> Behaviour:
    """The server: relays keys and shares, sums masked inputs, unmasks Σ_{u ∈ U3} x_u."""
    n, t, graph = len(plan.clients), plan.threshold, plan.graph
    index = {c: i for i, c in enumerate(plan.clients)}
    log = RoundLog(n, graph, t)
    check = partial(log.close, agent)

    # Round 0: collect public keys, U1.
    keys = yield from _collect(
        agent, AdvertiseKeys, set(range(n)), index, agent.now + plan.round_timeout
    )
    u1 = np.array(sorted(keys), dtype=np.int64)
    if (stop := check(Stage.ADVERTISE_KEYS, u1, u1)) is not None:
        return stop
    alive = live_mask(n, u1)
    for u in u1.tolist():
        peers = graph.neighbours(u)
        peers = peers[alive[peers]]
        listed = [keys[v] for v in peers.tolist()]
        agent.send(
            plan.clients[u],
            Directory(
                clients=peers,
                c_public=b"".join([k.c_public for k in listed]),
                s_public=b"".join([k.s_public for k in listed]),
            ),
        )

    # Round 1: collect encrypted shares, U2; forward each holder its ciphertexts.
    up = yield from _collect(
        agent, EncryptedShares, set(u1.tolist()), index, agent.now + plan.round_timeout
    )
    u2 = np.array(sorted(up), dtype=np.int64)
    if (stop := check(Stage.SHARE_KEYS, u2, u2)) is not None:
        return stop
    alive = live_mask(n, u2)
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
    del up, senders, receivers, blobs, order, keep  # forwarded: the server keeps none

    # Round 2: collect masked inputs, U3; tell each survivor the survivors it shares with.
    masked = yield from _collect(
        agent, MaskedInput, set(u2.tolist()), index, agent.now + plan.round_timeout
    )
    u3 = np.array(sorted(masked), dtype=np.int64)
    if (stop := check(Stage.MASKED_INPUT, u2, u3)) is not None:
        return stop
    attack = None
    if plan.isolation is not None:
        attack = isolation_route(graph, t, u2, u3, plan.isolation)
        if attack is not None and not attack.keeps_round:
            opened = yield from _isolating(agent, plan, log, index, keys, masked, u2, attack)
            return opened
    alive3 = live_mask(n, u3)
    total = np.zeros(plan.dimension, dtype=np.uint64)
    for u in u3.tolist():
        total += masked[u].values.astype(np.uint64)
    kept = {} if attack is None else {w: masked[w] for w in attack.opened.tolist()}
    del masked
    if attack is None:
        closed_sets = None if graph.complete else graph.holder_matrix()
        for u in u3.tolist():
            mine = graph.holders(u) if closed_sets is None else closed_sets[u]
            agent.send(plan.clients[u], Survivors(clients=mine[alive3[mine]]))
    else:  # the honest lists, some without the target (isolation.py)
        for w, told in zip(attack.recipients.tolist(), attack.lists, strict=True):
            agent.send(plan.clients[w], Survivors(clients=told))

    # Round 3: collect unmasking shares, U5; reconstruct and remove the masks.
    reveals = yield from _collect(
        agent, UnmaskShares, set(u3.tolist()), index, agent.now + plan.round_timeout
    )
    u5 = np.array(sorted(reveals), dtype=np.int64)
    if attack is not None:  # open the target if the answers allow, else the honest sum
        opened = _open(agent, plan, log, keys, kept, u2, u5, reveals, attack)
        if opened.ok:
            return opened
    if (stop := check(Stage.UNMASKING, u2, u5)) is not None:
        return stop
    owners, holders, kinds, rows = _revealed(reveals, u5)
    dropped = u2[~_isin_sorted(u2, u3)]  # U2 \ U3 (both sorted, without repeats)
    b_take = (kinds == 0) & alive3[owners]
    s_take = (kinds == 1) & ~alive3[owners]
    b_owners, b_words = _first_t(owners[b_take], holders[b_take], rows[b_take, :B_WORDS], t)
    s_owners, s_words = _first_t(owners[s_take], holders[s_take], rows[s_take], t)
    missing = int((~_isin_sorted(u3, b_owners)).sum() + (~_isin_sorted(dropped, s_owners)).sum())
    if missing:
        return log.missing_shares(missing)
    # − PRG(b_u) for the survivors; − Δ_{u,v} PRG(s_{u,v}) for each dropped v and survivor
    # u next to it, s_{u,v} = KA.agree(s_v^SK, s_u^PK) from the rebuilt s_v^SK
    secrets = words_to_bytes(s_words, KEY_BYTES)
    pair_secret, pair_peer, pair_public, pair_sign = [], [], [], []
    for j, v in enumerate(s_owners.tolist()):
        peers = graph.neighbours(v)
        for u in peers[alive3[peers]].tolist():
            pair_secret.append(j)
            pair_peer.append(u)
            pair_public.append(keys[u].s_public)
            pair_sign.append(-1 if u > v else 1)
    which = np.array(pair_secret, dtype=np.int64)
    total += plan.keys.unmasking(
        words_to_bytes(b_words, SEED_BYTES),
        secrets[which],
        np.frombuffer(b"".join(pair_public), dtype=np.uint8).reshape(-1, KEY_BYTES),
        np.array(pair_sign, dtype=np.int8),
        pairs=(s_owners[which], np.array(pair_peer, dtype=np.int64)),
    )
    total &= modulus_mask(plan.bits)
    return log.released(
        decode_sum(total, plan.fraction_bits, plan.bits), int(b_owners.size), int(s_owners.size)
    )


def _isolating(
    agent: Agent,
    plan: SecAggPlan,
    log: RoundLog,
    index: dict[str, int],
    keys: dict[int, AdvertiseKeys],
    masked: dict[int, MaskedInput],
    u2: I64,
    attack: Route,
) -> Generator[simpy.Event, Any, Outcome]:
    """The Unmasking round of a server that tells the target and its colluders the list
    L and the other clients nothing (:mod:`~privsim.kit.secagg.isolation`, ``isolate``
    or ``refused``): it opens Σ_{w ∈ L} y_w, or aborts when the answers fall short (the
    others, told nothing, cannot be asked again)."""
    assert plan.isolation is not None
    for w, listed in zip(attack.recipients.tolist(), attack.lists, strict=True):
        agent.send(plan.clients[w], Survivors(clients=listed))
    honest = set(attack.recipients.tolist()) - set(plan.isolation.colluders)
    reveals = yield from _collect(
        agent, UnmaskShares, honest, index, agent.now + plan.round_timeout
    )
    u5 = np.array(sorted(reveals), dtype=np.int64)
    kept = {w: masked[w] for w in attack.opened.tolist()}
    return _open(agent, plan, log, keys, kept, u2, u5, reveals, attack)


def _open(
    agent: Agent,
    plan: SecAggPlan,
    log: RoundLog,
    keys: dict[int, AdvertiseKeys],
    masked: dict[int, MaskedInput],
    u2: I64,
    u5: I64,
    reveals: dict[int, UnmaskShares],
    attack: Route,
) -> Outcome:
    """Σ_{w ∈ L} x_w from the masked inputs of L, the honest answers and the colluders'
    shares and secrets, reported with U3 = L; an abort naming the secrets short of t
    shares when they do not suffice."""
    assert plan.isolation is not None
    n, t, graph = len(plan.clients), plan.threshold, plan.graph
    target, colluders = plan.isolation.target, np.array(plan.isolation.colluders, dtype=np.int64)
    opened = attack.opened
    total = np.zeros(plan.dimension, dtype=np.uint64)
    for w in opened.tolist():
        total += masked[w].values.astype(np.uint64)
    colluding = np.zeros(n, dtype=bool)
    colluding[colluders] = True
    owners, holders, kinds, rows = _revealed(reveals, u5)
    honest = ~colluding[holders]  # the colluders' shares come from the book, once
    owners, holders, kinds, rows = owners[honest], holders[honest], kinds[honest], rows[honest]
    # the live colluders hand over every share they hold, of both kinds
    alive2, alive3 = live_mask(n, u2), live_mask(n, opened)
    book_holders, book_rows = plan.book.table()
    held = (colluding & alive3)[book_holders] & alive2[:, None]
    c_owners = np.nonzero(held)[0].astype(np.int64)
    c_holders, c_rows = book_holders[held], book_rows[held].astype(np.uint64)
    mine, theirs = (kinds == 0) & (owners == target), c_owners == target
    b_owners, b_words = _first_t(
        np.concatenate([owners[mine], c_owners[theirs]]),
        np.concatenate([holders[mine], c_holders[theirs]]),
        np.concatenate([rows[mine, :B_WORDS], c_rows[theirs, :B_WORDS]]),
        t,
    )
    s_take = ~colluding[c_owners]
    s_owners, s_words = _first_t(
        np.concatenate([owners[kinds == 1], c_owners[s_take]]),
        np.concatenate([holders[kinds == 1], c_holders[s_take]]),
        np.concatenate([rows[kinds == 1], c_rows[s_take, B_WORDS:]]),
        t,
    )
    # the colluders' own secrets (b_c, s_c^SK), which they know: read back from the book
    m = book_holders.shape[1]
    own_owners, own_words = _first_t(
        np.repeat(colluders, m),
        book_holders[colluders].reshape(-1),
        book_rows[colluders].reshape(colluders.size * m, book_rows.shape[2]).astype(np.uint64),
        t,
    )
    seeds = {int(o): w[:B_WORDS] for o, w in zip(own_owners.tolist(), own_words, strict=True)}
    seeds.update((int(o), w) for o, w in zip(b_owners.tolist(), b_words, strict=True))
    secret = {int(o): w[B_WORDS:] for o, w in zip(own_owners.tolist(), own_words, strict=True)}
    secret.update((int(o), w) for o, w in zip(s_owners.tolist(), s_words, strict=True))
    missing = sum(1 for w in opened.tolist() if w not in seeds)
    # Σ_{w ∈ L} y_w − PRG(b_w) − Δ_{w,v} PRG(s_{w,v}) for each v ∈ U2 \ L next to w
    inside = np.zeros(n, dtype=bool)
    inside[opened] = True
    pair_secret: list[npt.NDArray[np.uint64]] = []
    pair_owner, pair_peer, pair_public, pair_sign = [], [], [], []
    for w in opened.tolist():
        peers = graph.neighbours(w)
        for v in peers[alive2[peers] & ~inside[peers]].tolist():
            side = w if w in secret else v if v in secret else None
            if side is None:
                missing += 1
                continue
            other = v if side == w else w
            pair_secret.append(secret[side])
            pair_owner.append(side)
            pair_peer.append(other)
            pair_public.append(keys[other].s_public)
            pair_sign.append(-1 if w > v else 1)
    if missing:
        return dataclasses.replace(log.missing_shares(missing), isolated=target, route=attack.kind)
    b_rows_opened = np.stack([seeds[w] for w in opened.tolist()])
    s_rows = np.stack(pair_secret) if pair_secret else np.empty((0, SK_WORDS), dtype=np.uint64)
    total += plan.keys.unmasking(
        words_to_bytes(b_rows_opened, SEED_BYTES),
        words_to_bytes(s_rows, KEY_BYTES),
        np.frombuffer(b"".join(pair_public), dtype=np.uint8).reshape(-1, KEY_BYTES),
        np.array(pair_sign, dtype=np.int8),
        pairs=(np.array(pair_owner, dtype=np.int64), np.array(pair_peer, dtype=np.int64)),
    )
    total &= modulus_mask(plan.bits)
    return Outcome(
        released=decode_sum(total, plan.fraction_bits, plan.bits),
        survivors=(log.sets[0], log.sets[1], opened, u5),
        closed_at=(*log.closed, agent.now),
        seeds_reconstructed=int(b_owners.size),
        keys_reconstructed=int(s_owners.size),
        isolated=target,
        route=attack.kind,
    )
