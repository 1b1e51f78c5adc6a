"""A world: the SimPy environment, its parties, the bus, faults, coalition and trace.

Typical use::

    world = World(seed=7, network=NetworkModel(LinkSpec(...)), faults=FaultSpec(absent=0.05))
    a = world.add_party("client-0", "client")
    world.start(a, client_behaviour(a, ...))
    world.run()

Faults and the coalition are drawn when the run starts, from all registered parties,
so every party must be added before :meth:`World.run`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import simpy

from privsim.sim.agent import Agent, Behaviour
from privsim.sim.agent_table import AgentTable
from privsim.sim.bus import MessageBus
from privsim.sim.channels import SecureChannels
from privsim.sim.coalition import CoalitionSpec, CoalitionView, ViewedMessage, resolve_coalition
from privsim.sim.faults import FaultPlan, FaultSpec, draw_faults
from privsim.sim.names import PartyNames
from privsim.sim.network import LinkSpec, NetworkModel
from privsim.sim.streams import Streams
from privsim.sim.trace import Trace

__all__ = ["Crash", "World"]


class Crash(Exception):
    """Cause of the interrupt that stops a crashing party."""


class World:
    """One replication's simulated system."""

    def __init__(
        self,
        *,
        seed: int | Streams,
        network: NetworkModel | None = None,
        faults: FaultSpec | None = None,
        coalition: CoalitionSpec | None = None,
        encryption: bool = True,
        envelope: bool | None = None,
        keep_envelopes: bool = False,
    ) -> None:
        self.env = simpy.Environment()
        self.streams = seed if isinstance(seed, Streams) else Streams(seed)
        self.network = network if network is not None else NetworkModel(LinkSpec())
        self.fault_spec = faults if faults is not None else FaultSpec()
        self.coalition_spec = coalition if coalition is not None else CoalitionSpec()
        self.trace = Trace()
        self.channels = SecureChannels()
        self.bus = MessageBus(
            self, encrypt=encryption, envelope=envelope, keep_envelopes=keep_envelopes
        )
        #: Parties by id; an agent object is made when first looked up (:mod:`.agent_table`).
        self.agents = AgentTable(self, self.trace.party_index)
        self.parties_by_role: dict[str, Sequence[str]] = {}
        self.faults = FaultPlan()
        self.coalition: frozenset[str] = frozenset()
        self.viewed: list[ViewedMessage] = []
        self._private: dict[str, dict[str, Any]] = {}
        self._behaviours: dict[str, Behaviour] = {}
        self._processes: dict[str, simpy.Process] = {}
        self._groups: dict[str, Behaviour] = {}
        self._group_processes: dict[str, simpy.Process] = {}
        self._launched = False

    # -- set-up -------------------------------------------------------------------------
    def add_party(self, party_id: str, role: str) -> Agent:
        """Register one party of ``role``."""
        return self.add_parties(role, [party_id])[0]

    def add_parties(self, role: str, party_ids: Sequence[str]) -> Sequence[Agent]:
        """Register many parties of one role at once (a population). Their agents are
        made when first looked up (:class:`~privsim.sim.agent_table.AgentTable`): the
        returned sequence makes each as it is read."""
        if self._launched:
            raise RuntimeError("parties must be added before the world runs")
        if not isinstance(party_ids, (list, tuple, PartyNames)):  # one string per name
            party_ids = list(party_ids)
        first = len(self.parties_by_role.get(role, ()))
        try:
            position = self.trace.register_parties(party_ids, role)
        except ValueError:
            clash = sorted(p for p in set(party_ids) if p in self.agents)
            raise ValueError(
                f"parties already exist or repeat: {clash[:5] or 'repeated ids'}"
            ) from None
        self.agents.add(role, position, first)
        known = self.parties_by_role.get(role)
        if not known and isinstance(party_ids, PartyNames):
            self.parties_by_role[role] = party_ids  # the pattern, not a string per party
        elif isinstance(known, list):
            known.extend(party_ids)
        else:
            self.parties_by_role[role] = [*(known or ()), *party_ids]
        if self.bus.encrypt:
            indices = range(first, first + len(party_ids))
            keys = self.streams.keystream("keys", role).words(indices, 0, 4)
            for k, pid in enumerate(party_ids):
                self.channels.add_party(pid, keys[k].tobytes(), role, first + k)
        return _AgentsOf(self.agents, party_ids)

    def start(self, agent: Agent, behaviour: Behaviour) -> None:
        """Give ``agent`` its behaviour; it starts at time 0 unless faults say otherwise."""
        if agent.id in self._behaviours:
            raise ValueError(f"{agent.id} already has a behaviour")
        self._behaviours[agent.id] = behaviour

    def _launch(self) -> None:
        self._launched = True
        self.faults = draw_faults(self.fault_spec, self.parties_by_role, self.streams)
        named = self.faults.absent | set(self.faults.crash_times)
        unknown = sorted(p for p in named if p not in self.agents)
        if unknown:
            raise ValueError(f"faults name parties that do not exist: {unknown[:5]}")
        self.coalition = resolve_coalition(
            self.coalition_spec, self.parties_by_role, self.streams, self.agents
        )
        self.bus.prepare(self.parties_by_role)
        for party_id in self.faults.absent:
            agent = self.agents[party_id]
            agent.alive = False
            agent.crashed_at = 0.0
        for party_id, behaviour in self._behaviours.items():
            if party_id in self.faults.absent:
                behaviour.close()
            else:
                self._processes[party_id] = self.env.process(
                    self._lifecycle(self.agents[party_id], behaviour)
                )
        for party_id, when in sorted(self.faults.crash_times.items()):
            if party_id not in self.faults.absent:
                self.env.process(self._crash(self.agents[party_id], when))
        for name, behaviour in self._groups.items():
            self._group_processes[name] = self.env.process(behaviour)

    def start_group(self, name: str, behaviour: Behaviour) -> None:
        """Run one process on behalf of a whole population (batched delivery): it sends
        for the population's parties with :meth:`MessageBus.send_batch`."""
        if name in self._groups:
            raise ValueError(f"group {name!r} already has a behaviour")
        self._groups[name] = behaviour

    def running(self, role: str) -> npt.NDArray[np.int64]:
        """Role indices of the parties of ``role`` that started (not absent)."""
        absent = [
            agent.role_index
            for agent in map(self.agents.__getitem__, self.faults.absent)
            if agent.role == role
        ]
        running = np.ones(len(self.parties_by_role.get(role, ())), dtype=bool)
        running[absent] = False
        return np.flatnonzero(running).astype(np.int64, copy=False)

    def _lifecycle(self, agent: Agent, behaviour: Behaviour) -> Behaviour:
        try:
            agent.result = yield from behaviour
        except simpy.Interrupt as interrupt:
            if not isinstance(interrupt.cause, Crash):
                raise
            return
        agent.finished_at = float(self.env.now)

    def _crash(self, agent: Agent, when: float) -> Behaviour:
        yield self.env.timeout(when)
        agent.alive = False
        agent.crashed_at = float(self.env.now)
        process = self._processes.get(agent.id)
        if process is not None and process.is_alive:
            process.interrupt(Crash(agent.id))

    # -- running ------------------------------------------------------------------------
    def run(self, until: float | None = None) -> None:
        """Run until no event is left (or until simulated time ``until``)."""
        if not self._launched:
            self._launch()
        self.env.run(until=until)
        drained = self.env.peek() == float("inf")
        self.bus.finalise(float("inf") if drained else float(self.env.now))

    # -- threat model -------------------------------------------------------------------
    def remember(self, agent: Agent, name: str, value: Any) -> None:
        if agent.id in self.coalition:
            self._private.setdefault(agent.id, {})[name] = value

    def coalition_view(self) -> CoalitionView:
        """The coalition's pooled view: members' messages in the clear and private state."""
        return CoalitionView(
            members=self.coalition,
            messages=tuple(self.viewed),
            private={k: dict(v) for k, v in self._private.items()},
        )

    # -- outcomes -----------------------------------------------------------------------
    @property
    def dead(self) -> frozenset[str]:
        return frozenset(a.id for a in self.agents.made() if not a.alive)

    def results(self, role: str) -> Mapping[str, Any]:
        return {p: self.agents[p].result for p in self.parties_by_role.get(role, ())}


class _AgentsOf(Sequence[Agent]):
    """The agents of some registered parties, each made when read."""

    def __init__(self, table: AgentTable, party_ids: Sequence[str]) -> None:
        self._table, self._ids = table, party_ids

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> Agent: ...
    @overload
    def __getitem__(self, i: slice) -> list[Agent]: ...
    def __getitem__(self, i: int | slice) -> Agent | list[Agent]:
        if isinstance(i, slice):
            return [self._table[p] for p in self._ids[i]]
        return self._table[self._ids[i]]
