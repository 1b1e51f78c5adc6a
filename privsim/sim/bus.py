"""The message bus: per-party uplink queues, link latency and loss, encrypted envelopes.

``send`` never blocks the sender. The message waits for the sender's earlier messages to
leave its uplink, is transmitted in ``wire_bytes / bandwidth`` seconds, then flies for a
latency drawn from the link's model (both scaled by a straggler's slowdown). On arrival
it is dropped if the receiver is dead, rejected if it fails authentication, and put in
the receiver's inbox otherwise. Every fate is written to the trace.

Three channel modes (``network.encryption``): ``encrypt`` seals and opens every message
with AES-GCM (``aes-gcm``); ``envelope`` without ``encrypt`` (``sized``) passes the message
object as is but charges the bytes of its sealed envelope, ``OVERHEAD_BYTES`` more than its
encoding, so every size and time in the trace is the sealed run's; neither (``none``) charges
the encoding alone.

Network draws come from counter-based streams (:mod:`privsim.sim.keystream`) named
``("net", role, "latency")`` and ``("net", role, "loss")``: the j-th message a party
sends uses word j of its stream. :meth:`MessageBus.send_batch` computes the same draws
for many senders at once, so batched and per-message delivery agree message for message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt
import simpy

from privsim.sim.agent import Agent, Delivery
from privsim.sim.channels import OVERHEAD_BYTES, ChannelError
from privsim.sim.coalition import ViewedMessage
from privsim.sim.inbox import Arrival
from privsim.sim.keystream import KeyStream, uniforms
from privsim.sim.latency import ConstantLatency, delay
from privsim.sim.messages import Message, MessageCodecError, decode, encode, wire_size
from privsim.sim.network import CompleteTopology, LinkSpec, TopologyError
from privsim.sim.trace import Status

if TYPE_CHECKING:
    from privsim.sim.world import World

__all__ = ["BatchFlight", "BroadcastFlight", "MessageBus", "UnknownPartyError"]

#: Uniforms read ahead for a party's per-message draws: its first ones with those of up
#: to ``_FIRST_GROUP`` neighbouring parties (most parties send a few messages), then
#: ``_CACHE_WORDS`` at a time.
_FIRST_WORDS = 8
_FIRST_GROUP = 64
_CACHE_WORDS = 64


class UnknownPartyError(KeyError):
    """A message was addressed to a party that does not exist."""


class _InFlight(NamedTuple):
    """A message on the wire (a named tuple: one is made per message sent)."""

    message_id: int
    src: Agent
    dst: Agent
    payload: Message | bytes
    sent_at: float
    departed_at: float


@dataclass(slots=True)
class BatchFlight:
    """One message from each of ``senders`` (role indices) to ``dst``, sent together.

    ``arrival`` is when each would reach the receiver; ``deliverable`` is False for a
    message lost on the link or still queued when its sender crashed. The receiver takes
    the messages of a flight with :meth:`~privsim.sim.agent.Agent.receive_batch`.
    """

    kind: str
    role: str
    senders: npt.NDArray[np.int64]
    dst: Agent
    #: When the messages were sent: one time for all, or one per sender.
    sent_at: float | npt.NDArray[np.float64]
    departed: npt.NDArray[np.float64]
    arrival: npt.NDArray[np.float64]
    deliverable: npt.NDArray[np.bool_]
    lost: npt.NDArray[np.bool_]
    first_id: int
    settled: bool = False


@dataclass(slots=True)
class BroadcastFlight:
    """One ``message`` from ``src`` to each of ``receivers`` (role indices of ``role``).

    ``arrival`` is when each copy reaches its receiver; ``delivered`` is True for a copy
    that was neither lost nor arrived after its receiver crashed (or was absent).
    """

    #: The message every receiver gets (None: each its own, :meth:`MessageBus.scatter_batch`).
    message: Message | None
    src: Agent
    role: str
    receivers: npt.NDArray[np.int64]
    sent_at: float
    departed: npt.NDArray[np.float64]
    arrival: npt.NDArray[np.float64]
    delivered: npt.NDArray[np.bool_]
    lost: npt.NDArray[np.bool_]
    sender_crashed: npt.NDArray[np.bool_]
    receiver_crash: npt.NDArray[np.float64]
    first_id: int
    settled: bool = False


class _RoleState:
    """Per-role arrays: uplink queues, send counters, slowdowns, crash times."""

    __slots__ = (
        "crash",
        "latency",
        "latency_words",
        "loss",
        "loss_words",
        "sent",
        "size",
        "slowdown",
        "uplink_free",
    )

    def __init__(self, world: World, role: str, parties: Sequence[str]) -> None:
        n = self.size = len(parties)
        self.uplink_free = np.zeros(n)
        self.sent = np.zeros(n, dtype=np.int64)
        # Defaults for everyone, then the (few) parties the fault plan names.
        self.slowdown = np.ones(n)
        self.crash = np.full(n, np.inf)
        agents = world.agents
        plan = world.faults
        for p, factor in plan.slowdown.items():
            if agents[p].role == role:
                self.slowdown[agents[p].role_index] = factor
        for p, when in plan.crash_times.items():
            if agents[p].role == role:
                self.crash[agents[p].role_index] = when
        for p in plan.absent:
            if agents[p].role == role:
                self.crash[agents[p].role_index] = -np.inf
        self.latency = world.streams.keystream("net", role, "latency")
        self.loss = world.streams.keystream("net", role, "loss")
        #: The per-message path's next uniforms of each stream, by party: (first word's
        #: position, the uniforms from there on) (see :meth:`MessageBus._uniform`).
        self.latency_words: dict[int, tuple[int, list[float]]] = {}
        self.loss_words: dict[int, tuple[int, list[float]]] = {}


class MessageBus:
    """Delivers messages between the agents of one :class:`~privsim.sim.world.World`."""

    def __init__(
        self,
        world: World,
        *,
        encrypt: bool,
        envelope: bool | None = None,
        keep_envelopes: bool = False,
    ) -> None:
        if encrypt and envelope is False:
            raise ValueError("a sealed message always carries its envelope: envelope=False")
        self.world = world
        #: Every message is really sealed and opened through the world's channels (whose
        #: keys must then be derived): ``network.encryption = "aes-gcm"``.
        self.encrypt = encrypt
        #: Every message's wire size includes the AEAD envelope (``OVERHEAD_BYTES``: nonce
        #: and tag), so queueing and arrival times are the sealed ones: true when sealing,
        #: and for ``network.encryption = "sized"``, which charges the envelope without
        #: encrypting anything.
        self.envelope = encrypt if envelope is None else envelope
        #: Raw ciphertexts by message id (what an eavesdropper on the wire sees); tests only.
        self.envelopes: dict[int, bytes] | None = {} if keep_envelopes else None
        self.flights: list[BatchFlight] = []
        self.broadcasts: list[BroadcastFlight] = []
        self._roles: dict[str, _RoleState] = {}

    def prepare(self, parties_by_role: Mapping[str, Sequence[str]]) -> None:
        """Set up per-role state once every party is known (called at launch)."""
        self._roles = {
            role: _RoleState(self.world, role, ps) for role, ps in parties_by_role.items()
        }

    # -- per-message path -----------------------------------------------------------------
    @staticmethod
    def _uniform(
        stream: KeyStream, cache: dict[int, tuple[int, list[float]]], size: int, i: int, j: int
    ) -> float:
        """Word ``j`` of party ``i``'s ``stream`` as a uniform on [0, 1), read ahead: a
        party's first draws are made with those of the parties around it that have none
        yet (one AES call for a whole group's first messages), later ones
        ``_CACHE_WORDS`` at a time (a party that sends many messages). The words are
        addressed by position, so what is read ahead changes no draw."""
        got = cache.get(i)
        if got is not None and 0 <= j - got[0] < len(got[1]):
            return got[1][j - got[0]]
        if got is None and j == 0:
            lo = i - i % _FIRST_GROUP
            group = [p for p in range(lo, min(lo + _FIRST_GROUP, size)) if p not in cache]
            count = _FIRST_WORDS
        else:
            group, count = [i], _CACHE_WORDS
        rows = uniforms(stream.words(group, j, count)).tolist()
        for p, row in zip(group, rows, strict=True):
            cache[p] = (j, row)
        return rows[group.index(i)][0]  # type: ignore[no-any-return]

    def _check_route(self, src_id: str, dst_id: str, kind: str) -> Agent:
        dst = self.world.agents.get(dst_id)
        if dst is None:
            raise UnknownPartyError(f"{src_id} sent {kind} to unknown party {dst_id!r}")
        if not self.world.network.topology.allows(src_id, dst_id):
            raise TopologyError(
                f"{src_id} -> {dst_id}: the topology has no such edge; add it to the scenario's "
                "network topology or route the message through a party that has one"
            )
        return dst

    def send(self, src: Agent, dst_id: str, message: Message) -> None:
        world = self.world
        env = world.env
        dst = self._check_route(src.id, dst_id, type(message).__name__)
        payload: Message | bytes
        if self.encrypt:
            payload = world.channels.seal(src.id, dst_id, encode(message))
            size = len(payload)
        else:
            payload = message
            size = wire_size(message) + (OVERHEAD_BYTES if self.envelope else 0)
        now = float(env.now)
        link = world.network.link(src.id, src.role, dst_id, dst.role)
        state = self._roles[src.role]
        i = src.role_index
        slow = float(state.slowdown[i])
        departed = max(now, float(state.uplink_free[i])) + slow * size / link.bandwidth
        state.uplink_free[i] = departed
        j = int(state.sent[i])
        state.sent[i] = j + 1
        # The j-th message's draws: word j of the sender's streams. A draw nothing reads
        # is not made (a constant latency, a lossless link), which shifts no other.
        model = link.latency
        if type(model) is ConstantLatency:
            latency = slow * float(model.value)
        else:
            ahead = state.latency_words.get(i)  # (the read-ahead block's first position, uniforms)
            if ahead is not None and 0 <= j - ahead[0] < len(ahead[1]):
                u = ahead[1][j - ahead[0]]
            else:
                u = self._uniform(state.latency, state.latency_words, state.size, i, j)
            latency = slow * delay(model, u)
        lost = link.loss > 0.0 and (
            self._uniform(state.loss, state.loss_words, state.size, i, j) < link.loss
        )
        mid = world.trace.record_send(src.id, dst_id, type(message).__name__, size, now, departed)
        if self.envelopes is not None and isinstance(payload, bytes):
            self.envelopes[mid] = payload
        if src.id in world.coalition:
            world.viewed.append(
                ViewedMessage(src=src.id, dst=dst_id, send_time=now, message=message)
            )
        if lost:
            world.trace.settle(mid, Status.LOST)
            return
        Arrival(
            env,
            departed + latency - now,
            _InFlight(mid, src, dst, payload, now, departed),
            self._arrive,
        )

    def inject(
        self, src_id: str, dst_id: str, envelope: bytes, *, kind: str, delay: float = 0.0
    ) -> None:
        """Put raw bytes on the wire as if ``src_id`` had sent them (a network attacker's
        forgery or replay); they go through the receiver's checks like any message."""
        world = self.world
        now = float(world.env.now)
        mid = world.trace.record_send(src_id, dst_id, kind, len(envelope), now, now)
        flight = _InFlight(mid, world.agents[src_id], world.agents[dst_id], envelope, now, now)
        Arrival(world.env, delay, flight, self._arrive)

    def _arrive(self, event: simpy.Event) -> None:
        flight = event.value
        assert isinstance(flight, _InFlight)
        world = self.world
        now = float(world.env.now)
        src, dst = flight.src, flight.dst
        if src.crashed_at is not None and src.crashed_at < flight.departed_at:
            world.trace.settle(flight.message_id, Status.SENDER_CRASHED)
            return
        if not dst.alive:
            world.trace.settle(flight.message_id, Status.DROPPED_DEAD_RECEIVER, now)
            return
        received: Message
        if isinstance(flight.payload, bytes):
            try:
                received = decode(world.channels.open(src.id, dst.id, flight.payload))
            except (ChannelError, MessageCodecError):
                world.trace.settle(flight.message_id, Status.REJECTED, now)
                return
        else:
            received = flight.payload
        world.trace.settle(flight.message_id, Status.DELIVERED, now)
        if dst.id in world.coalition and src.id not in world.coalition:
            world.viewed.append(
                ViewedMessage(src=src.id, dst=dst.id, send_time=flight.sent_at, message=received)
            )
        dst.inbox.put(
            Delivery(src=src.id, message=received, sent_at=flight.sent_at, received_at=now)
        )

    # -- batched path ---------------------------------------------------------------------
    def send_batch(
        self,
        role: str,
        senders: npt.ArrayLike,
        dst_id: str,
        kind: type[Message],
        wire_bytes: int | npt.ArrayLike,
        *,
        send_at: npt.ArrayLike | None = None,
    ) -> BatchFlight:
        """Send one ``kind`` message of ``wire_bytes`` (one size for all, or one per
        sender) from each sender (role indices, in the order they send) to ``dst_id``,
        with exactly the queueing, latency and loss draws that as many :meth:`send` calls
        would make. ``send_at``: each sender's simulated send time, now or later (a
        population reacting to what it received; default now for all). Payloads are not
        materialised: the protocol computes them from its own deterministic streams when
        it reads them.
        """
        world = self.world
        idx = np.asarray(senders, dtype=np.int64)
        if idx.size and np.bincount(idx).max() > 1:
            raise ValueError("send_batch sends one message per sender: a sender is repeated")
        parties = world.parties_by_role[role]
        state = self._roles[role]
        dst = world.agents.get(dst_id)
        if dst is None:
            raise UnknownPartyError(
                f"{role} batch of {kind.__name__} sent to unknown party {dst_id!r}"
            )
        # A full mesh allows every send but a self-send; other topologies check every sender.
        check = idx if not isinstance(world.network.topology, CompleteTopology) else idx[:1]
        for i in check.tolist():
            self._check_route(parties[i], dst_id, kind.__name__)
        now = float(world.env.now)
        sent: float | npt.NDArray[np.float64] = now
        if send_at is not None:
            sent = np.asarray(send_at, dtype=np.float64)
            if sent.shape != idx.shape or (sent.size and not float(sent.min()) >= now):
                raise ValueError("send_at needs one time per sender, none before now")
        size: int | npt.NDArray[np.int64] = (
            int(np.asarray(wire_bytes))
            if np.ndim(wire_bytes) == 0
            else np.asarray(wire_bytes, np.int64)
        )
        if np.ndim(size) and np.shape(size) != idx.shape:
            raise ValueError("wire_bytes needs one size, or one per sender")
        if self.envelope:
            size = size + OVERHEAD_BYTES
        links = self._links(role, idx, dst)
        slow = state.slowdown[idx]
        departed = np.maximum(sent, state.uplink_free[idx]) + slow * size / links.bandwidth
        state.uplink_free[idx] = departed
        positions = state.sent[idx]
        state.sent[idx] += 1
        # A draw nothing reads is not made (the streams are addressed by position, so
        # skipping one shifts no other): a constant latency, a lossless link.
        if links.draws_latency:
            latency = slow * links.latency_from(_words_at(state.latency, idx, positions))
        else:
            latency = slow * links.latency_from(np.zeros(idx.size))
        if links.may_lose:
            lost = _words_at(state.loss, idx, positions) < links.loss
        else:
            lost = np.zeros(idx.size, dtype=bool)
        sender_crashed = state.crash[idx] < departed
        first_id = world.trace.record_batch(
            role=role,
            senders=idx,
            dst=dst_id,
            kind=kind.__name__,
            wire_bytes=size,
            send_time=sent,
            depart_time=departed,
        )
        flight = BatchFlight(
            kind=kind.__name__,
            role=role,
            senders=idx,
            dst=dst,
            sent_at=sent,
            departed=departed,
            # exactly the arithmetic of the per-message path: sent + (delay computed from sent)
            arrival=sent + ((departed + latency) - sent),
            deliverable=~lost & ~sender_crashed,
            lost=lost,
            first_id=first_id,
        )
        self.flights.append(flight)
        dst.inbox.put_flight(flight)
        return flight

    def broadcast_batch(
        self, src: Agent, role: str, receivers: npt.ArrayLike, message: Message
    ) -> BroadcastFlight:
        """Send the same ``message`` from ``src`` to every receiver (role indices of
        ``role``, in sending order) with exactly the uplink queueing, latency and loss
        draws of as many :meth:`send` calls. The receivers are a population without
        processes (batched delivery): the protocol reads each copy's fate from the
        returned flight. With the envelope charged (``aes-gcm`` or ``sized``), the wire
        size includes it; the copies carry public values and are not sealed one by one."""
        flight = self._fan_out(src, role, receivers, type(message), wire_size(message), message)
        self._view_fan_out(flight, lambda _: message)
        return flight

    def scatter_batch(
        self,
        src: Agent,
        role: str,
        receivers: npt.ArrayLike,
        kind: type[Message],
        wire_bytes: npt.ArrayLike,
        message_for: Callable[[int], Message],
    ) -> BroadcastFlight:
        """Send each receiver (role indices of ``role``, in sending order) its own
        ``kind`` message of ``wire_bytes[k]`` bytes from ``src``, with exactly the
        queueing, latency and loss draws of as many :meth:`send` calls, without making
        the messages: ``message_for(k)`` makes the k-th only for a coalition's view (a
        colluding sender or receiver)."""
        sizes = np.asarray(wire_bytes, dtype=np.int64)
        if sizes.shape != np.shape(receivers):
            raise ValueError("scatter_batch needs one size per receiver")
        flight = self._fan_out(src, role, receivers, kind, sizes, None)
        self._view_fan_out(flight, message_for)
        return flight

    def _fan_out(
        self,
        src: Agent,
        role: str,
        receivers: npt.ArrayLike,
        kind: type[Message],
        size: int | npt.NDArray[np.int64],
        message: Message | None,
    ) -> BroadcastFlight:
        """One message from ``src`` to each receiver, back to back on its uplink."""
        world = self.world
        idx = np.asarray(receivers, dtype=np.int64)
        parties = world.parties_by_role[role]
        name = kind.__name__
        for i in (
            idx if not isinstance(world.network.topology, CompleteTopology) else idx[:1]
        ).tolist():
            self._check_route(src.id, parties[i], name)
        now = float(world.env.now)
        size = size + (OVERHEAD_BYTES if self.envelope else 0)
        links = self._links_from(src, role, idx)
        state = self._roles[src.role]
        i = src.role_index
        slow = float(state.slowdown[i])
        # n back-to-back sends: each leaves the uplink after the one before it, with the
        # per-message path's arithmetic (one addition per send, left to right)
        steps = np.empty(idx.size + 1)
        steps[0] = max(now, float(state.uplink_free[i]))
        steps[1:] = slow * size / links.bandwidth
        departed = np.cumsum(steps)[1:]
        if idx.size:
            state.uplink_free[i] = float(departed[-1])
        j = int(state.sent[i])
        state.sent[i] = j + idx.size
        state.latency_words.pop(i, None)  # (read-ahead words this fan-out used up)
        state.loss_words.pop(i, None)
        u_latency = uniforms(state.latency.words([i], j, idx.size)[0]) if idx.size else np.zeros(0)
        u_loss = uniforms(state.loss.words([i], j, idx.size)[0]) if idx.size else np.zeros(0)
        arrival = now + ((departed + slow * links.latency_from(u_latency)) - now)
        lost = u_loss < links.loss
        crashed_at = src.crashed_at if src.crashed_at is not None else float(state.crash[i])
        sender_crashed = crashed_at < departed
        receiver_crash = self._roles[role].crash[idx]
        first_id = world.trace.record_broadcast(
            src=src.id,
            role=role,
            receivers=idx,
            kind=name,
            wire_bytes=size,
            send_time=now,
            depart_time=departed,
        )
        flight = BroadcastFlight(
            message=message,
            src=src,
            role=role,
            receivers=idx,
            sent_at=now,
            departed=departed,
            arrival=arrival,
            delivered=~lost & ~sender_crashed & ~(arrival > receiver_crash),
            lost=lost,
            sender_crashed=sender_crashed,
            receiver_crash=receiver_crash,
            first_id=first_id,
        )
        self.broadcasts.append(flight)
        return flight

    def _view_fan_out(self, flight: BroadcastFlight, message_for: Callable[[int], Message]) -> None:
        """The coalition's view of a fan-out: every copy a colluding sender sent, and the
        delivered copies of colluding receivers."""
        world, src, idx = self.world, flight.src, flight.receivers
        parties = world.parties_by_role[flight.role]
        seen: Iterable[int]
        if src.id in world.coalition:  # a colluding sender sees everything it sends
            seen = range(idx.size)
        elif not world.coalition:
            return
        else:
            seen = (
                k
                for k in np.flatnonzero(flight.delivered).tolist()
                if parties[int(idx[k])] in world.coalition
            )
        for k in seen:
            world.viewed.append(
                ViewedMessage(
                    src=src.id,
                    dst=parties[int(idx[k])],
                    send_time=flight.sent_at,
                    message=message_for(k),
                )
            )

    def _links_from(self, src: Agent, role: str, idx: npt.NDArray[np.int64]) -> _LinkColumns:
        """The links from ``src`` to each receiver (role indices of ``role``)."""
        parties = self.world.parties_by_role[role]
        return self._columns(
            idx, parties, lambda party: self.world.network.link(src.id, src.role, party, role)
        )

    def _links(self, role: str, idx: npt.NDArray[np.int64], dst: Agent) -> _LinkColumns:
        """The links from each sender (role indices of ``role``) to ``dst``."""
        parties = self.world.parties_by_role[role]
        return self._columns(
            idx, parties, lambda party: self.world.network.link(party, role, dst.id, dst.role)
        )

    def _columns(
        self,
        idx: npt.NDArray[np.int64],
        parties: Sequence[str],
        link: Callable[[str], LinkSpec],
    ) -> _LinkColumns:
        """One shared link for the parties of ``idx`` that no override names (their link
        depends on their role alone), and each named party's own."""
        named = self.world.network.named_parties
        special = [k for k, i in enumerate(idx.tolist()) if parties[i] in named] if named else []
        plain = _first_not_in(idx.size, special)
        base = link(parties[int(idx[plain])]) if plain is not None else LinkSpec()
        return _LinkColumns(base, {k: link(parties[int(idx[k])]) for k in special}, idx.size)

    def finalise(self, horizon: float) -> None:
        """Settle the fate of batched messages that arrive by ``horizon``, as the
        per-message path would have: dropped if the receiver was absent or had crashed
        before the arrival (an arrival at the very instant of a crash still lands).
        Messages arriving later stay in flight; a later run settles them. A run that ends
        because nothing is left to happen passes an infinite horizon: per-message arrivals
        are events and would all have been processed."""
        absent = self.world.faults.absent
        now = horizon
        for f in self.flights:
            if f.settled:
                continue
            if f.dst.id in absent:
                crash = -np.inf
            else:
                crash = f.dst.crashed_at if f.dst.crashed_at is not None else np.inf
            arrived = f.arrival <= now
            status = np.full(f.lost.size, Status.IN_FLIGHT, dtype=np.int8)
            status[arrived] = Status.DELIVERED
            status[arrived & (f.arrival > crash)] = Status.DROPPED_DEAD_RECEIVER
            status[~f.deliverable & ~f.lost] = Status.SENDER_CRASHED
            status[f.lost] = Status.LOST
            recv = np.where(f.deliverable & arrived, f.arrival, np.nan)
            self.world.trace.settle_batch(f.first_id, status, recv)
            f.settled = bool(arrived[f.deliverable].all())
        for b in self.broadcasts:
            if b.settled:
                continue
            arrived = b.arrival <= now
            status = np.full(b.lost.size, Status.IN_FLIGHT, dtype=np.int8)
            status[arrived] = Status.DELIVERED
            status[arrived & (b.arrival > b.receiver_crash)] = Status.DROPPED_DEAD_RECEIVER
            status[b.sender_crashed & ~b.lost] = Status.SENDER_CRASHED
            status[b.lost] = Status.LOST
            reached = ~b.lost & ~b.sender_crashed & arrived  # dead receivers included
            recv = np.where(reached, b.arrival, np.nan)
            self.world.trace.settle_batch(b.first_id, status, recv)
            b.settled = bool(arrived[b.delivered].all())


def _first_not_in(n: int, taken: list[int]) -> int | None:
    """The first of 0 … n − 1 not in ``taken`` (sorted), or None."""
    for k in range(n):
        if k >= len(taken) or taken[k] != k:
            return k
    return None


def _words_at(stream: KeyStream, parties: npt.NDArray[np.int64], positions: npt.NDArray[np.int64]):
    """Uniform from word ``positions[k]`` of party ``parties[k]`` (vectorised)."""
    if parties.size == 0:
        return np.zeros(0)
    if np.all(positions == positions[0]):
        return uniforms(stream.words(parties, int(positions[0]), 1)[:, 0])
    out = np.empty(parties.size)
    for p in np.unique(positions).tolist():
        sel = positions == p
        out[sel] = uniforms(stream.words(parties[sel], p, 1)[:, 0])
    return out


class _LinkColumns:
    """Link parameters for each message of a batch: one shared link plus exceptions."""

    def __init__(self, base: LinkSpec, special: dict[int, LinkSpec], n: int) -> None:
        self.base, self.special, self.n = base, special, n
        if special:
            self.bandwidth = np.full(n, base.bandwidth)
            self.loss = np.full(n, base.loss)
            for k, link in special.items():
                self.bandwidth[k] = link.bandwidth
                self.loss[k] = link.loss
        else:
            self.bandwidth = base.bandwidth  # type: ignore[assignment]
            self.loss = base.loss  # type: ignore[assignment]

    @property
    def draws_latency(self) -> bool:
        """Whether a latency depends on its uniform draw (not for constant latencies)."""
        links = (self.base, *self.special.values())
        return not all(isinstance(link.latency, ConstantLatency) for link in links)

    @property
    def may_lose(self) -> bool:
        """Whether any message of the batch may be lost."""
        return bool(np.any(np.asarray(self.loss) > 0.0))

    def latency_from(self, u: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = np.asarray(self.base.latency.from_uniform(u), dtype=np.float64)
        by_model: dict[int, list[int]] = {}  # the special messages of each latency model
        for k, link in self.special.items():
            by_model.setdefault(id(link.latency), []).append(k)
        for ks in by_model.values():
            at = np.asarray(ks, dtype=np.int64)
            out[at] = self.special[ks[0]].latency.from_uniform(u[at])
        return out
