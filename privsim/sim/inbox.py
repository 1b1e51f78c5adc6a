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
    """An event that fires after ``delay`` ahead of ordinary events at the same time,
    calling ``callback`` (if given) first."""

    def __init__(
        self,
        env: simpy.Environment,
        delay: float,
        value: Any,
        callback: Callable[[simpy.Event], None] | None = None,
    ) -> None:
        super().__init__(env)
        if callback is not None:
            self.callbacks.append(callback)
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
        "_waiter_deadline",
        "_waiter_match",
    )

    def __init__(self, env: simpy.Environment) -> None:
        self._env = env
        self._items: deque[Any] = deque()
        self._waiter: simpy.Event | None = None
        self._waiter_match: Callable[[Any], bool] | None = None
        self._waiter_deadline: float | None = None
        self._timer: simpy.Event | None = None
        self._timer_at = float("nan")
        self._flights: dict[str, list[Any]] = {}
        self._new_flight: simpy.Event | None = None

    def put_flight(self, flight: Any) -> None:
        """Register a batch of messages on their way here (see ``MessageBus.send_batch``)."""
        taken = np.zeros(flight.senders.size, dtype=bool)
        self._flights.setdefault(flight.kind, []).append((flight, taken))
        if self._new_flight is not None and not self._new_flight.triggered:
            self._new_flight.succeed()

    def get_batch(
        self, kind: str, count: int, deadline: float
    ) -> Generator[simpy.Event, Any, BatchArrivals]:
        """Wait until ``count`` batched ``kind`` messages have arrived or ``deadline``; take
        those (at most ``count``, earliest first, ties in sending order). Messages that
        arrive later stay for a later receive, as they would in the inbox."""
        env = self._env
        while True:
            entries = self._flights.get(kind, [])
            times = [f.arrival[f.deliverable & ~taken] for f, taken in entries]
            arrivals = np.concatenate(times) if times else np.zeros(0)
            stop = deadline
            if 0 < count <= arrivals.size:  # the count-th earliest arrival (a selection)
                stop = min(deadline, float(np.partition(arrivals, count - 1)[count - 1]))
            stop = max(stop, float(env.now))
            self._new_flight = env.event()
            timer = env.timeout(stop - env.now)
            yield timer | self._new_flight
            if self._new_flight.triggered and not timer.processed:
                continue  # more messages are on their way: recompute when to stop
            self._new_flight = None
            break
        # Candidates in (arrival time, sending order); take at most ``count``.
        cand_entry, cand_pos, cand_time = [], [], []
        for e, (f, taken) in enumerate(entries):
            pos = np.flatnonzero(f.deliverable & ~taken & (f.arrival <= stop))
            cand_entry.append(np.full(pos.size, e))
            cand_pos.append(pos)
            cand_time.append(f.arrival[pos])
        if cand_pos:
            entry_of, pos_of, when = (np.concatenate(a) for a in (cand_entry, cand_pos, cand_time))
        else:
            entry_of = pos_of = np.zeros(0, dtype=np.int64)
            when = np.zeros(0)
        # The candidates are in (entry, position) order, so a stable sort by time alone
        # orders them by (time, entry, position).
        if when.size < 2 or bool(np.all(when[1:] >= when[:-1])):
            order = np.arange(when.size)  # already in time order (e.g. equal arrivals)
        else:
            order = np.argsort(when, kind="stable")
        if count > 0:
            order = order[:count]
        senders = np.empty(order.size, dtype=np.int64)
        chosen_entry, chosen_pos = entry_of[order], pos_of[order]
        for e, (f, taken) in enumerate(entries):
            mine = chosen_entry == e
            taken[chosen_pos[mine]] = True
            senders[mine] = f.senders[chosen_pos[mine]]
        role = entries[0][0].role if entries else ""
        return BatchArrivals(
            role=role, senders=senders, arrival=when[order], flights=tuple(f for f, _ in entries)
        )

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> tuple[Any, ...]:
        """Deliveries waiting to be received (per-message path)."""
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
        waiter, deadline = self._waiter, self._waiter_deadline
        # Only a wait that has a deadline, and whose deadline has come, times out: a
        # timer left over from an earlier receive must not end a later one.
        if (
            waiter is not None
            and not waiter.triggered
            and deadline is not None
            and deadline <= self._env.now
        ):
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
        self._waiter, self._waiter_match, self._waiter_deadline = waiter, match, deadline
        if deadline is not None and (self._timer is None or self._timer_at != deadline):
            self._timer_at = deadline
            self._timer = env.timeout(deadline - env.now)
            self._timer.callbacks.append(self._on_timer)
        try:
            result = yield waiter
        finally:
            self._waiter, self._waiter_match, self._waiter_deadline = None, None, None
        return result
