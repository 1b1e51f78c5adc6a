"""The world's parties by id, each :class:`~privsim.sim.agent.Agent` made on first use.

A population of 10⁵–10⁷ clients under batched delivery is driven by one process for the
whole role: most clients never receive, crash or run a behaviour of their own, so most of
their agent objects would never be read. The table registers a population as names and
positions only (two C-level dict and list updates) and makes a party's agent the first
time it is looked up, by ``table[id]`` or ``table.get(id)``. An agent that was never made
is alive, has no result and never finished; :meth:`made` yields only the agents that
exist, which is every party whose state a fault, a behaviour or a message has touched.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from privsim.sim.agent import Agent

if TYPE_CHECKING:
    from privsim.sim.world import World

__all__ = ["AgentTable"]


class AgentTable(Mapping[str, Agent]):
    """Parties by id, in registration order; an agent is made when first looked up."""

    def __init__(self, world: World, position: Mapping[str, int]) -> None:
        """``position``: every registered party's registration position, kept by the
        world's trace (:meth:`~privsim.sim.trace.Trace.register_parties`), which refuses
        a party registered twice; one index serves both."""
        self._world = world
        self.position = position
        # Runs of parties added together: (first position, role, first role index).
        self._starts: list[int] = []
        self._runs: list[tuple[str, int]] = []
        self._made: dict[str, Agent] = {}

    def add(self, role: str, first_position: int, first_index: int) -> None:
        """Parties of ``role`` were registered from ``first_position`` on (in the
        trace's index), the first at role index ``first_index``."""
        self._starts.append(first_position)
        self._runs.append((role, first_index))

    def _make(self, party_id: str) -> Agent | None:
        at = self.position.get(party_id)
        if at is None:
            return None
        run = bisect.bisect_right(self._starts, at) - 1
        role, first_index = self._runs[run]
        agent = Agent(self._world, party_id, role, first_index + at - self._starts[run])
        self._made[party_id] = agent
        return agent

    def __getitem__(self, party_id: str) -> Agent:
        agent = self._made.get(party_id)
        if agent is None:
            agent = self._make(party_id)
            if agent is None:
                raise KeyError(party_id)
        return agent

    def get(self, party_id: str, default: Agent | None = None) -> Agent | None:  # type: ignore[override]
        agent = self._made.get(party_id)
        if agent is None:
            agent = self._make(party_id)
        return default if agent is None else agent

    def __contains__(self, party_id: object) -> bool:
        return party_id in self.position

    def __iter__(self) -> Iterator[str]:
        return iter(self.position)

    def __len__(self) -> int:
        return len(self.position)

    def made(self) -> Iterator[Agent]:
        """The agents made so far: every party whose state is not the initial one."""
        return iter(self._made.values())
