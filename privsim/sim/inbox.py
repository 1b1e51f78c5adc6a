"""An agent's inbox: FIFO of deliveries, one waiting receive at a time, deadlines.

Built on SimPy events rather than ``FilterStore`` for two reasons. Correctness: a
receive that times out leaves nothing queued behind it, so it cannot swallow a later
message (the trap of ``yield store.get() | env.timeout(t)``), and a message is never
lost when it arrives at the same instant as the deadline — deliveries are scheduled
*urgent* (:class:`Arrival`), so everything that arrives at time t is in the inbox before
any deadline at t is looked at. Speed: a message that is already waiting is taken
without any event, and consecutive receives with the same deadline share one timer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy
from simpy.events import URGENT

from privsim.sim.messages import Message

__all__ = ["Arrival", "BatchArrivals", "Inbox"]


@dataclass(frozen=True, slots=True)
class BatchArrivals:
    """Batched messages taken by one receive: which senders' messages arrived, and when.

    ``senders`` are role indices (of ``role``), in arrival order; ``flights`` are the
    batches they came from, for protocols that compute payloads from them.
    """

    role: str
    senders: npt.NDArray[np.int64]
    arrival: npt.NDArray[np.float64]
    flights: tuple[Any, ...]


class Arrival(simpy.Event):
    """An event that fires after ``delay`` ahead of ordinary events at the same time."""

    def __init__(self, env: simpy.Environment, delay: float, value: Any) -> None:
        super().__init__(env)
        self._ok = True
        self._value = value
        env.schedule(self, URGENT, delay)


class Inbox:
    """Deliveries waiting for their agent, in arrival order."""

    __slots__ = (
        "_env",
        "_flights",
        "_items",
        "_new_flight",
        "_timer",
        "_timer_at",
        "_waiter",
        "_waiter_match",
    )

    def __init__(self, env: simpy.Environment) -> None:
        self._env = env
        self._items: deque[Any] = deque()
        self._waiter: simpy.Event | None = None
        self._waiter_match: Callable[[Any], bool] | None = None
        self._timer: simpy.Event | None = None
        self._timer_at = float("nan")
        self._flights: dict[str, list[Any]] = {}
        self._new_flight: simpy.Event | None = None

    def put_flight(self, flight: Any) -> None:
        """Register a batch of messages on their way here (see ``MessageBus.send_batch``)."""
        self._flights.setdefault(flight.kind, []).append(flight)
        if self._new_flight is not None and not self._new_flight.triggered:
            self._new_flight.succeed()

    def get_batch(
        self, kind: str, count: int, deadline: float
    ) -> Generator[simpy.Event, Any, BatchArrivals]:
        """Wait until ``count`` batched ``kind`` messages have arrived or ``deadline``."""
        env = self._env
        while True:
            flights = self._flights.get(kind, [])
            times = [f.arrival[f.deliverable] for f in flights]
            arrivals = np.sort(np.concatenate(times)) if times else np.zeros(0)
            stop = deadline
            if 0 < count <= arrivals.size:
                stop = min(deadline, float(arrivals[count - 1]))
            stop = max(stop, float(env.now))
            self._new_flight = env.event()
            timer = env.timeout(stop - env.now)
            yield timer | self._new_flight
            if self._new_flight.triggered and not timer.processed:
                continue  # more messages are on their way: recompute when to stop
            self._new_flight = None
            break
        role = flights[0].role if flights else ""
        senders, when, used = [], [], []
        for f in flights:
            got = f.deliverable & (f.arrival <= stop)
            senders.append(f.senders[got])
            when.append(f.arrival[got])
            used.append(f)
        self._flights[kind] = []
        s = np.concatenate(senders) if senders else np.zeros(0, dtype=np.int64)
        t = np.concatenate(when) if when else np.zeros(0)
        order = np.argsort(t, kind="stable")
        return BatchArrivals(role=role, senders=s[order], arrival=t[order], flights=tuple(used))

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> tuple[Any, ...]:
        return tuple(self._items)

    def put(self, delivery: Any) -> None:
        waiter = self._waiter
        if (
            waiter is not None
            and not waiter.triggered
            and self._waiter_match is not None
            and self._waiter_match(delivery)
        ):
            waiter.succeed(delivery)
        else:
            self._items.append(delivery)

    def _take(self, match: Callable[[Any], bool]) -> Any:
        for i, item in enumerate(self._items):
            if match(item):
                del self._items[i]
                return item
        return None

    def _on_timer(self, event: simpy.Event) -> None:
        if event is self._timer:
            self._timer = None
        waiter = self._waiter
        if waiter is not None and not waiter.triggered and self._timer_at <= self._env.now:
            waiter.succeed(None)

    def get(
        self, kinds: tuple[type[Message], ...], deadline: float | None
    ) -> Generator[simpy.Event, Any, Any]:
        """Next delivery whose message is one of ``kinds`` (any if empty), or ``None``
        once simulated time reaches ``deadline``."""
        if self._waiter is not None:
            raise RuntimeError("an agent can wait for only one receive at a time")
        match: Callable[[Any], bool] = (
            (lambda d: isinstance(d.message, kinds)) if kinds else (lambda d: True)
        )
        found = self._take(match)
        if found is not None:
            return found
        env = self._env
        if deadline is not None and deadline <= env.now:
            return None
        waiter = env.event()
        self._waiter, self._waiter_match = waiter, match
        if deadline is not None and (self._timer is None or self._timer_at != deadline):
            self._timer_at = deadline
            self._timer = env.timeout(deadline - env.now)
            self._timer.callbacks.append(self._on_timer)
        try:
            result = yield waiter
        finally:
            self._waiter, self._waiter_match = None, None
        return result
