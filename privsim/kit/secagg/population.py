"""A SecAgg or SecAgg+ round whose clients are a population without processes (batched
delivery), for rounds of 10^5–10^6 clients: the same four rounds as
:mod:`.behaviours` (Bonawitz et al. 2017, Figure 4; Bell et al. 2020), the same
messages on the wire, and the same release, byte for byte.

The server is the one process. Every client's behaviour is a pure reaction to what
reaches it: it sends its next message the instant the server's arrives, if that is by its
own deadline (ten round timeouts after its previous step) and it is alive, and ends at
that deadline otherwise. So when the server sends a round's messages
(:meth:`~privsim.sim.bus.MessageBus.scatter_batch`), it knows when each reaches its
client, and it sends the clients' answers for them at those instants
(:meth:`~privsim.sim.bus.MessageBus.send_batch` with ``send_at``): the same queueing,
latency, loss and crash draws, message for message, as the per-client processes make,
each message charged its exact encoded size (a linear function of the number of peers it
lists, :class:`WireSizes`).

What the messages carry is computed as the clients would, shard by shard on the engine's
workers (:mod:`.shard`, through the key book): every client's key pairs and pairwise
agreements, the sealing of each share by its owner and its opening by its holder
(ShareKeys), the masks of each surviving client's y_u (MaskedInputCollection), and the
inputs with their noise shares. The server unmasks as in
:func:`.behaviours.server`: it rebuilds b_u of each survivor and s_v^SK of each dropped
client from the t lowest live holders' shares, agrees the dropped pairs' keys from the
rebuilt secrets, and removes the masks; a wrong share, key or mask gives a wrong sum.

The coalition's view is not kept (no client message is made): a round with a colluding
server or client runs per client (:func:`.round.launch` refuses ``batched``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from privsim.kit.secagg.behaviours import RoundLog, SecAggPlan, live_mask
from privsim.kit.secagg.crypto import KEY_BYTES, SEED_BYTES, TAG_BYTES
from privsim.kit.secagg.keybook import KeyBook
from privsim.kit.secagg.maths import (
    B_WORDS,
    RECORD_BYTES,
    SK_WORDS,
    decode_sum,
    modulus_mask,
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
from privsim.kit.secagg.noise import Noise
from privsim.kit.secagg.outcome import Stage
from privsim.kit.secagg.sharing import ShareBook, interpolate_at_zero, words_to_bytes
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.bus import BatchFlight, BroadcastFlight
from privsim.sim.messages import Message, wire_size

__all__ = ["InputShards", "WireSizes", "server_population"]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]

#: Owners whose secrets are rebuilt together (bounds the gathered shares' memory).
RECONSTRUCT_CHUNK = 1 << 13


@dataclass(frozen=True, slots=True)
class _Affine:
    """Bytes of a message listing m items: ``base + per · m``."""

    base: int
    per: int

    def of(self, m: I64) -> I64:
        return self.base + self.per * m


def _affine(make: Callable[[int], Message]) -> _Affine:
    """The encoded size of ``make(m)`` as a linear function of m (every field is a
    fixed header plus a fixed size per item)."""
    zero, one, two = (wire_size(make(m)) for m in (0, 1, 2))
    if two - one != one - zero:
        raise AssertionError("a SecAgg message's size is not linear in its items")
    return _Affine(zero, one - zero)


@dataclass(frozen=True, slots=True)
class WireSizes:
    """The encoded size of each SecAgg message, by the number of peers it lists."""

    advertise: int
    directory: _Affine
    shares: _Affine
    masked: int
    survivors: _Affine
    unmask: _Affine

    @classmethod
    def of(cls, dimension: int, bits: int) -> WireSizes:
        """The sizes for vectors of ``dimension`` words of ``bits`` bits."""
        ids = lambda m: np.zeros(m, dtype=np.int64)  # noqa: E731
        return cls(
            advertise=wire_size(
                AdvertiseKeys(c_public=bytes(KEY_BYTES), s_public=bytes(KEY_BYTES))
            ),
            directory=_affine(
                lambda m: Directory(
                    clients=ids(m), c_public=bytes(KEY_BYTES * m), s_public=bytes(KEY_BYTES * m)
                )
            ),
            shares=_affine(
                lambda m: EncryptedShares(
                    peers=ids(m), ciphertexts=bytes((RECORD_BYTES + TAG_BYTES) * m)
                )
            ),
            masked=wire_size(MaskedInput(values=np.zeros(dimension, dtype=wire_dtype(bits)))),
            survivors=_affine(lambda m: Survivors(clients=ids(m))),
            unmask=_affine(
                lambda m: UnmaskShares(
                    owners=ids(m),
                    kinds=np.zeros(m, dtype=np.uint8),
                    shares=np.zeros((m, SK_WORDS), dtype=np.uint64),
                )
            ),
        )


def _no_view(k: int) -> Message:
    raise RuntimeError("a batched SecAgg round keeps no coalition view (run it per client)")


class _Clients:
    """The population's state: each client's crash time, the deadline of the receive it
    waits in (NaN: not waiting), and when its behaviour ended (NaN: not yet, or never)."""

    def __init__(self, agent: Agent, plan: SecAggPlan, wait: float) -> None:
        world, n = agent.world, len(plan.clients)
        self.world, self.plan, self.wait, self.first = world, plan, wait, plan.first
        self.crash = np.full(n, np.inf)
        for party, when in world.faults.crash_times.items():
            a = world.agents[party]
            if a.role == "client" and 0 <= a.role_index - plan.first < n:
                self.crash[a.role_index - plan.first] = when
        running = world.running("client") - plan.first
        self.running = running[(running >= 0) & (running < n)]
        self.deadline = np.full(n, np.nan)
        self.deadline[self.running] = agent.now + wait  # waiting for their Directory
        self.ended = np.full(n, np.nan)
        self.timed_out = np.zeros(n, dtype=bool)

    def reached(self, clients: I64, flight: BroadcastFlight | None) -> tuple[I64, F64]:
        """Of ``clients`` (the receivers of ``flight``, None: nobody was sent anything),
        those whose message arrived alive by their deadline, and when. Every waiting
        client that is not among them times out at its deadline."""
        if flight is None:
            got, when = np.zeros(0, dtype=np.int64), np.zeros(0)
        else:
            ok = flight.delivered & (flight.arrival <= self.deadline[clients])
            got, when = clients[ok], flight.arrival[ok]
        waiting = np.isfinite(self.deadline)
        waiting[got] = False
        late = np.flatnonzero(waiting)
        self.ended[late] = self.deadline[late]
        self.timed_out[late] = True
        self.deadline[late] = np.nan
        return got, when

    def answer(
        self, clients: I64, when: F64, kind: type[Message], sizes: int | I64, *, last: bool = False
    ) -> BatchFlight:
        """``clients`` send their ``kind`` message to the server at ``when``, then wait
        for the next one (or end, when it is their ``last``)."""
        flight = self.world.bus.send_batch(
            "client", clients + self.first, self.plan.server, kind, sizes, send_at=when
        )
        if last:
            self.ended[clients] = when
            self.deadline[clients] = np.nan
        else:
            self.deadline[clients] = when + self.wait
        return flight

    def settle(self) -> None:
        """The clients still waiting time out at their deadlines; mark when each client
        that ended before it crashed, and is not otherwise seen to be busy, ended (one
        that timed out, or that crashes later: the per-client path's ``finished_at``)."""
        self.reached(np.zeros(0, dtype=np.int64), None)
        ended = np.isfinite(self.ended) & (self.ended < self.crash)
        mark = ended & (self.timed_out | np.isfinite(self.crash))
        for i in np.flatnonzero(mark).tolist():
            self.world.agents[self.plan.clients[i]].finished_at = float(self.ended[i])


@dataclass(frozen=True, slots=True)
class InputShards:
    """Where the clients' inputs come from: ``rows`` of the clients at given indices
    (:func:`~privsim.kit.secagg.inputs.row_source`), each client's integer ``noise``
    share (None: none), drawn from its own stream of the run's ``root`` seed."""

    rows: Callable[[I64], npt.NDArray[Any]]
    noise: Noise | None
    root: np.random.SeedSequence

    def total(self, keys: KeyBook, plan: SecAggPlan, clients: I64) -> Future[U64]:
        """Σ_{u ∈ clients} x_u, shard by shard on the workers (:func:`.shard.input_total`)."""
        step = max(1, INPUTS_PER_TASK // plan.dimension)
        noise = None if self.noise is None else (self.noise.kind, self.noise.parameter)

        def calls() -> Iterator[tuple[Any, ...]]:
            for a in range(0, clients.size, step):
                shard = clients[a : a + step]
                names = [plan.clients[u] for u in shard.tolist()]
                rows = self.rows(shard)
                yield rows, names, self.root, noise, plan.fraction_bits, plan.bits

        return keys.sum_in_background("input_total", calls())


#: Input coordinates per task (with their noise draws: about a quarter of a second).
INPUTS_PER_TASK = 1 << 18


def server_population(agent: Agent, plan: SecAggPlan, inputs: InputShards) -> Behaviour:
    """The server of :func:`.behaviours.server`, driving the clients as a population."""
    world = agent.world
    round_parties = [plan.server, *(plan.clients if len(world.coalition) else ())]
    if any(p in world.coalition for p in round_parties):
        raise ValueError(
            "a batched SecAgg round keeps no coalition view: a round with a colluding "
            "server or client runs per client (delivery = 'per_client')"
        )
    clients = _Clients(agent, plan, 10.0 * plan.round_timeout)
    try:
        outcome = yield from _rounds(agent, plan, clients, inputs)
    except simpy.Interrupt:
        clients.settle()
        raise
    clients.settle()
    return outcome


def _collect(agent: Agent, plan: SecAggPlan, kind: type[Message], count: int) -> Any:
    """The clients whose ``kind`` message arrives by the round's deadline (all
    ``count`` expected ones, or fewer), sorted."""
    got = yield from agent.receive_batch(kind, count=count, deadline=agent.now + plan.round_timeout)
    return np.sort(got.senders - plan.first)


def _rounds(agent: Agent, plan: SecAggPlan, clients: _Clients, inputs: InputShards) -> Any:
    """The four rounds; the outcome."""
    n, graph, keys, bus = len(plan.clients), plan.graph, plan.keys, agent.world.bus
    sizes = WireSizes.of(plan.dimension, plan.bits)
    nb = keys.neighbours
    log = RoundLog(n, graph, plan.threshold)

    # Round 0 (AdvertiseKeys): every running client sends its public keys now.
    clients.answer(
        clients.running, np.full(clients.running.size, agent.now), AdvertiseKeys, sizes.advertise
    )
    u1 = yield from _collect(agent, plan, AdvertiseKeys, n)
    if (stop := log.close(agent, Stage.ADVERTISE_KEYS, u1, u1)) is not None:
        return stop
    alive1 = live_mask(n, u1)
    listed = alive1[nb[u1]].sum(axis=1)  # |N(u) ∩ U1|: each Directory's entries
    sent = bus.scatter_batch(
        agent, "client", u1 + plan.first, Directory, sizes.directory.of(listed), _no_view
    )
    r1, when = clients.reached(u1, sent)
    keys.mark_used(b"c", r1, alive1)  # each seals its shares for its directory
    sealing = keys.seal_checks(r1, alive1, plan.book)
    clients.answer(r1, when, EncryptedShares, sizes.shares.of(listed[np.searchsorted(u1, r1)]))

    # Round 1 (ShareKeys): U2; forward each v the shares sealed for it by N(v) ∩ U2.
    u2 = yield from _collect(agent, plan, EncryptedShares, u1.size)
    if (stop := log.close(agent, Stage.SHARE_KEYS, u2, u2)) is not None:
        return stop
    alive2 = live_mask(n, u2)
    came = alive2[nb[u2]].sum(axis=1)
    sent = bus.scatter_batch(
        agent, "client", u2 + plan.first, EncryptedShares, sizes.shares.of(came), _no_view
    )
    r2, when = clients.reached(u2, sent)
    keys.mark_used(b"s", r2, alive2)  # each masks with the peers whose shares it got
    flight = clients.answer(r2, when, MaskedInput, sizes.masked)
    # the y_u that will reach the server by its deadline (if it lives): their masks and
    # inputs are summed while the round goes on
    expected = r2[flight.deliverable & (flight.arrival <= agent.now + plan.round_timeout)]
    masks = keys.mask_totals(expected, alive2)
    summed = inputs.total(keys, plan, expected)
    sealed = sealing.result()  # ShareKeys's sealing, opened and checked

    # Round 2 (MaskedInputCollection): U3; tell each survivor its live holders.
    u3 = yield from _collect(agent, plan, MaskedInput, u2.size)
    if (stop := log.close(agent, Stage.MASKED_INPUT, u2, u3)) is not None:
        return stop
    if not np.array_equal(u3, expected):
        masks = keys.mask_totals(u3, alive2)
        summed = inputs.total(keys, plan, u3)
    total = summed.result() + masks.result()
    alive3 = live_mask(n, u3)
    holders = plan.book.holders
    sent = bus.scatter_batch(
        agent,
        "client",
        u3 + plan.first,
        Survivors,
        sizes.survivors.of(alive3[holders[u3]].sum(axis=1)),
        _no_view,
    )
    r3, when = clients.reached(u3, sent)
    held = 1 + came[np.searchsorted(u2, r3)]  # its own shares and those forwarded to it
    clients.answer(r3, when, UnmaskShares, sizes.unmask.of(held), last=True)

    # Round 3 (Unmasking): U5; rebuild b_u of U3 and s_v^SK of U2 \ U3, remove the masks.
    u5 = yield from _collect(agent, plan, UnmaskShares, u3.size)
    if (stop := log.close(agent, Stage.UNMASKING, u2, u5)) is not None:
        return stop
    alive5 = live_mask(n, u5)
    dropped = u2[~alive3[u2]]
    b_owners, b_words, b_short = _rebuild(u3, plan.book, alive5, plan.threshold, B_WORDS)
    s_owners, s_words, s_short = _rebuild(dropped, plan.book, alive5, plan.threshold, None)
    if b_short + s_short:
        return log.missing_shares(b_short + s_short)
    pairs = nb[s_owners]
    live_pairs = alive3[pairs]
    which = np.repeat(np.arange(s_owners.size), live_pairs.sum(axis=1))
    peer = pairs[live_pairs]
    secrets = words_to_bytes(s_words, KEY_BYTES)
    total += keys.unmasking(
        words_to_bytes(b_words, SEED_BYTES),
        secrets[which],
        keys.public_keys(b"s")[peer],
        np.where(peer > s_owners[which], -1, 1).astype(np.int8),
        pairs=(s_owners[which], peer),
    )
    total &= modulus_mask(plan.bits)
    keys.sealed_and_opened = int(sealed)
    return log.released(
        decode_sum(total, plan.fraction_bits, plan.bits), int(b_owners.size), int(s_owners.size)
    )


def _rebuild(
    owners: I64, book: ShareBook, alive: Mask, t: int, words: int | None
) -> tuple[I64, U64, int]:
    """Each owner's secret from the shares of its t lowest live holders (b_u: the first
    ``words`` of a share; s^SK: the rest, ``words`` None): (owners rebuilt, their secret
    words, how many owners had fewer than t live holders)."""
    cols = slice(0, B_WORDS) if words is not None else slice(B_WORDS, B_WORDS + SK_WORDS)
    width = cols.stop - cols.start
    done: list[I64] = []
    secrets: list[U64] = []
    short = 0
    for a in range(0, owners.size, RECONSTRUCT_CHUNK):
        mine = owners[a : a + RECONSTRUCT_CHUNK]
        rows = book.holders[mine]
        live = alive[rows]
        rank = np.cumsum(live, axis=1)
        enough = rank[:, -1] >= t if rows.shape[1] else np.zeros(mine.size, dtype=bool)
        short += int((~enough).sum())
        pick = live & (rank <= t) & enough[:, None]
        m = int(enough.sum())
        xs = (rows[pick] + 1).reshape(m, t)
        ys = book.rows(mine)[pick][:, cols]
        done.append(mine[enough])
        secrets.append(interpolate_at_zero(xs, ys.reshape(m, t, width)))
    if not done:
        return np.zeros(0, dtype=np.int64), np.zeros((0, width), dtype=np.uint64), short
    return np.concatenate(done), np.concatenate(secrets), short
