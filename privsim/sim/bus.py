"""The message bus: per-party uplink queues, link latency and loss, encrypted envelopes.

``send`` never blocks the sender. The message waits for the sender's earlier messages to
leave its uplink, is transmitted in ``wire_bytes / bandwidth`` seconds, then flies for a
latency drawn from the link's model (both scaled by a straggler's slowdown). On arrival
it is dropped if the receiver is dead, rejected if it fails authentication, and put in
the receiver's inbox otherwise. Every fate is written to the trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import simpy

from privsim.sim.agent import Agent, Delivery
from privsim.sim.channels import ChannelError
from privsim.sim.coalition import ViewedMessage
from privsim.sim.inbox import Arrival
from privsim.sim.messages import Message, MessageCodecError, decode, encode, wire_size
from privsim.sim.network import TopologyError
from privsim.sim.trace import Status

if TYPE_CHECKING:
    from privsim.sim.world import World

__all__ = ["MessageBus", "UnknownPartyError"]


class UnknownPartyError(KeyError):
    """A message was addressed to a party that does not exist."""


@dataclass(frozen=True, slots=True)
class _InFlight:
    message_id: int
    src: Agent
    dst: Agent
    payload: Message | bytes
    sent_at: float
    departed_at: float


class MessageBus:
    """Delivers messages between the agents of one :class:`~privsim.sim.world.World`."""

    def __init__(self, world: World, *, encrypt: bool, keep_envelopes: bool = False) -> None:
        self.world = world
        self.encrypt = encrypt
        #: Raw ciphertexts by message id (what an eavesdropper on the wire sees); tests only.
        self.envelopes: dict[int, bytes] | None = {} if keep_envelopes else None
        self._uplink_free: dict[str, float] = {}

    def send(self, src: Agent, dst_id: str, message: Message) -> None:
        world = self.world
        env = world.env
        dst = world.agents.get(dst_id)
        if dst is None:
            raise UnknownPartyError(
                f"{src.id} sent {type(message).__name__} to unknown party {dst_id!r}"
            )
        if not world.network.topology.allows(src.id, dst_id):
            raise TopologyError(
                f"{src.id} -> {dst_id}: the topology has no such edge; add it to the scenario's "
                "network topology or route the message through a party that has one"
            )
        payload: Message | bytes
        if self.encrypt:
            payload = world.channels.seal(src.id, dst_id, encode(message))
            size = len(payload)
        else:
            payload = message
            size = wire_size(message)
        now = float(env.now)
        link = world.network.link(src.id, src.role, dst_id, dst.role)
        slow = world.faults.slowdown.get(src.id, 1.0)
        departed = max(now, self._uplink_free.get(src.id, 0.0)) + slow * size / link.bandwidth
        self._uplink_free[src.id] = departed
        latency_rng, loss_rng = src.network_rngs()
        latency = slow * link.latency.sample_one(latency_rng)
        mid = world.trace.record_send(src.id, dst_id, type(message).__name__, size, now, departed)
        if self.envelopes is not None and isinstance(payload, bytes):
            self.envelopes[mid] = payload
        if src.id in world.coalition:
            world.viewed.append(
                ViewedMessage(src=src.id, dst=dst_id, send_time=now, message=message)
            )
        lost = loss_rng.random() < link.loss
        if lost:
            world.trace.settle(mid, Status.LOST)
            return
        event = Arrival(
            env, departed + latency - now, _InFlight(mid, src, dst, payload, now, departed)
        )
        event.callbacks.append(self._arrive)

    def inject(
        self, src_id: str, dst_id: str, envelope: bytes, *, kind: str, delay: float = 0.0
    ) -> None:
        """Put raw bytes on the wire as if ``src_id`` had sent them (a network attacker's
        forgery or replay); they go through the receiver's checks like any message."""
        world = self.world
        now = float(world.env.now)
        mid = world.trace.record_send(src_id, dst_id, kind, len(envelope), now, now)
        event = Arrival(
            world.env,
            delay,
            _InFlight(mid, world.agents[src_id], world.agents[dst_id], envelope, now, now),
        )
        event.callbacks.append(self._arrive)

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
