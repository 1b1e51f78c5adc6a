"""Agents: parties with an id, a role, an inbox and their own random streams.

A behaviour is a generator function taking the agent first; it sends with
:meth:`Agent.send` and waits with ``delivery = yield from agent.receive(Kind, deadline=t)``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import simpy

from privsim.sim.inbox import BatchArrivals, Inbox
from privsim.sim.messages import Message

if TYPE_CHECKING:
    from privsim.sim.world import World

__all__ = ["Agent", "Behaviour", "Delivery"]

#: A party's behaviour: a SimPy process body.
Behaviour = Generator[simpy.Event, Any, Any]


M = TypeVar("M", bound=Message)


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery(Generic[M]):
    """A message as the receiver gets it: authenticated sender, content, and times."""

    src: str
    message: M
    sent_at: float
    received_at: float


class Agent:
    """One party. Its randomness comes from streams named ``("agent", id, purpose)``."""

    __slots__ = (
        "_inbox",
        "alive",
        "crashed_at",
        "finished_at",
        "id",
        "result",
        "role",
        "role_index",
        "world",
    )

    def __init__(self, world: World, party_id: str, role: str, role_index: int) -> None:
        self.world = world
        self.id = party_id
        self.role = role
        #: Position among the parties of its role: its index in population streams.
        self.role_index = role_index
        self._inbox: Inbox | None = None
        self.alive = True
        self.crashed_at: float | None = None
        self.finished_at: float | None = None
        self.result: Any = None

    def __repr__(self) -> str:
        return f"Agent({self.id!r}, role={self.role!r})"

    @property
    def inbox(self) -> Inbox:
        """Deliveries waiting for this party (made on first use: most clients never receive)."""
        if self._inbox is None:
            self._inbox = Inbox(self.world.env)
        return self._inbox

    @property
    def now(self) -> float:
        return float(self.world.env.now)

    def rng(self, purpose: str) -> np.random.Generator:
        """This party's generator for ``purpose`` (e.g. ``"noise"``, ``"shares"``)."""
        return self.world.streams.generator("agent", self.id, purpose)

    def send(self, dst: str, message: Message) -> None:
        """Hand ``message`` to the bus; it arrives (or not) as the network decides."""
        self.world.bus.send(self, dst, message)

    def remember(self, name: str, value: Any) -> None:
        """Declare private state (input, noise…); a coalition member's is in the pooled view."""
        self.world.remember(self, name, value)

    def receive(
        self, *kinds: type[M], deadline: float | None = None
    ) -> Generator[simpy.Event, Any, Delivery[M] | None]:
        """Wait for the next message of one of ``kinds`` (any kind if none given) until the
        absolute simulated time ``deadline``; ``None`` if the deadline passes first.

        A message arriving exactly at the deadline is received; a receive that times out
        leaves nothing behind that could swallow a later message (see :mod:`.inbox`).
        """
        return self.inbox.get(kinds, deadline)  # (the inbox's own wait, not wrapped)

    def receive_batch(
        self, kind: type[Message], *, count: int, deadline: float
    ) -> Generator[simpy.Event, Any, BatchArrivals]:
        """Wait for batched ``kind`` messages (see :meth:`MessageBus.send_batch`) until
        ``count`` have arrived or ``deadline`` passes; returns exactly those that arrived
        by then, as :meth:`receive_all` would have collected them one by one."""
        arrivals: BatchArrivals = yield from self.inbox.get_batch(kind.__name__, count, deadline)
        return arrivals

    def receive_all(
        self, *kinds: type[M], count: int, deadline: float
    ) -> Generator[simpy.Event, Any, list[Delivery[M]]]:
        """Collect messages of ``kinds`` until ``count`` have arrived or ``deadline`` passes."""
        got: list[Delivery[M]] = []
        while len(got) < count:
            delivery = yield from self.receive(*kinds, deadline=deadline)
            if delivery is None:
                break
            got.append(delivery)
        return got
