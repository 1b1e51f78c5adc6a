"""Distributed BLR as agent behaviours: one DCA round (DDP), or Algorithm 2's two rounds
with projection (proj DDP), on the bus with its latency, loss, dropouts and coalition.

Two-round timeline (simulated seconds, from the scenario's DCA timeouts):

1. every running client clips (x_i, y_i) to the assumed bounds and sends shares of its
   squared values (:class:`~privsim.protocols.blr.messages.MomentShare`); compute nodes
   collect, agree and sum as in Algorithm 1; the aggregator decodes Σ v_ij² + noise;
2. the aggregator estimates σ̂_j = sqrt(S_j / N₁) over the N₁ included clients, sets the
   bounds p·σ̂_j (p from the auxiliary grid search, a public computation) and publishes
   them to every client and node with a start time ``bounds_timeout`` later;
3. every client that is alive and has the bounds by then projects its record, computes
   the unique entries of x̂x̂ᵀ and x̂ŷ and sends shares of them
   (:class:`~privsim.protocols.blr.messages.StatisticShare`), with noise scaled to the
   new sensitivity; nodes and aggregator run Algorithm 1 again.

Clients are one population process with batched delivery (:mod:`privsim.kit.securesum.batched`):
each client's payloads are computed from its own record and its counter-based streams,
and its sends, arrivals and faults are those of a client process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import simpy

from privsim.kit.securesum import behaviours as dca
from privsim.kit.securesum.batched import ShareRound, client_population, compute_node_batched
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.maths import client_noise_std
from privsim.kit.securesum.outcome import SumOutcome
from privsim.protocols.blr.maths import (
    client_moments,
    client_statistics,
    marginal_std,
    project,
    statistics_sensitivity,
)
from privsim.protocols.blr.messages import ProjectionBounds
from privsim.protocols.blr.regression import projection_bounds
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.bus import BroadcastFlight
from privsim.sim.keystream import KeyStream
from privsim.sim.world import World

__all__ = [
    "ProjectionOutcome",
    "ProjectionPlan",
    "Records",
    "SecondRound",
    "aggregator",
    "client_population_projected",
    "compute_node",
    "launch_projected",
]

F64 = npt.NDArray[np.float64]


class Records:
    """The clients' records as DCA inputs: client i's row is its squared values
    (``"moments"``) or its unique sufficient-statistic entries (``"statistics"``), of its
    record projected to ±``bounds``."""

    def __init__(self, x: F64, y: F64, bounds: F64, statistic: str) -> None:
        self._table = project(np.column_stack([x, y]), bounds)
        self.n = int(self._table.shape[0])
        d = self._table.shape[1] - 1
        self.statistic = statistic
        self.dimension = d + 1 if statistic == "moments" else d * (d + 1) // 2 + d

    def rows(self, clients: npt.ArrayLike) -> F64:
        t = self._table[np.atleast_1d(np.asarray(clients, dtype=np.int64))]
        if self.statistic == "moments":
            return client_moments(t[:, :-1], t[:, -1])
        return client_statistics(t[:, :-1], t[:, -1])

    def sum(self, mask: npt.NDArray[np.bool_] | None = None) -> F64:
        idx = np.arange(self.n) if mask is None else np.flatnonzero(mask)
        return np.asarray(self.rows(idx).sum(axis=0), dtype=np.float64)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectionPlan:
    """Public parameters of Algorithm 2 on DCA. ``statistic_multiplier`` is z₂ = σ₂/Δ₂ of
    the second release; its σ₂ follows from the published bounds, so every client
    computes its own noise scale σ₂/sqrt(N − T − 1) from public values."""

    moments: dca.DcaPlan
    statistics: dca.DcaPlan
    assumed_bounds: F64
    feature_fraction: float
    target_fraction: float
    variance_floor: float
    statistic_multiplier: float
    bounds_timeout: float
    neighbour: str = "replace_one"

    @property
    def round_one_ends(self) -> float:
        m = self.moments
        return m.share_timeout + m.agreement_timeout + m.sum_timeout

    def statistic_noise_std(self, bounds: F64) -> float:
        """Each client's σ for round 2 (Theorem 1 scaling of z₂·Δ₂(bounds))."""
        sensitivity = statistics_sensitivity(bounds[:-1], float(bounds[-1]), self.neighbour)
        return client_noise_std(
            self.statistic_multiplier * sensitivity,
            len(self.statistics.clients),
            self.statistics.tolerated,
        )


class SecondRound:
    """Batched-delivery plumbing between the round-2 parties: the aggregator's broadcast
    (each client's copy, with its arrival time and fate) and the share round built from
    the published bounds. It carries nothing a client would not have received."""

    def __init__(self, env: simpy.Environment) -> None:
        self.published: simpy.Event = env.event()
        self.shares: ShareRound | None = None
        self.bounds: F64 | None = None

    def node_sum(self, node: int, agreed: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
        assert self.shares is not None, "round-2 sums asked before any client sent"
        return self.shares.node_sum(node, agreed)


@dataclass(frozen=True, slots=True)
class ProjectionOutcome:
    """What the aggregator ends with: both releases and the published bounds."""

    moments: SumOutcome
    statistics: SumOutcome | None
    bounds: F64 | None
    std: F64 | None


def client_population_projected(
    world: World,
    plan: ProjectionPlan,
    moment_inputs: ClientInputs,
    records: tuple[F64, F64],
    streams: tuple[KeyStream, KeyStream],
    second: SecondRound,
) -> Behaviour:
    """Round 1 for every running client; round 2 for those alive that got the bounds."""
    yield from client_population(world, plan.moments, moment_inputs)
    flight = yield second.published
    assert isinstance(flight, BroadcastFlight)
    message = flight.message
    assert isinstance(message, ProjectionBounds)
    if message.abort:
        return
    start = message.start_at
    if world.env.now < start:
        yield world.env.timeout(start - world.env.now)
    crash = np.full(len(plan.statistics.clients), np.inf)
    for party, when in world.faults.crash_times.items():
        agent = world.agents[party]
        if agent.role == "client":
            crash[agent.role_index] = when
    got = flight.delivered & (flight.arrival <= start)
    receivers = flight.receivers[got]
    senders = np.sort(receivers[crash[receivers] > start])
    bounds = np.asarray(message.bounds, dtype=np.float64)
    x, y = records
    inputs = ClientInputs(
        data=Records(x, y, bounds, "statistics"),
        noise=streams[0],
        randomness=streams[1],
        noise_std=plan.statistic_noise_std(bounds),
        fraction_bits=plan.statistics.fraction_bits,
        n_nodes=len(plan.statistics.nodes),
    )
    second.shares = ShareRound(world, plan.statistics, inputs)
    second.bounds = bounds
    yield from client_population(world, plan.statistics, inputs, senders=senders)


def compute_node(
    agent: Agent, plan: ProjectionPlan, moment_shares: ShareRound, second: SecondRound
) -> Behaviour:
    """Algorithm 1 for round 1, then (once the bounds say when) again for round 2."""
    yield from compute_node_batched(agent, plan.moments, moment_shares)
    deadline = plan.round_one_ends + plan.bounds_timeout
    delivery = yield from agent.receive(ProjectionBounds, deadline=deadline)
    if delivery is None or delivery.message.abort:
        return
    start = delivery.message.start_at
    if agent.now < start:
        yield agent.world.env.timeout(start - agent.now)
    yield from compute_node_batched(agent, plan.statistics, second)


def aggregator(agent: Agent, plan: ProjectionPlan, second: SecondRound) -> Behaviour:
    """Decode round 1, estimate the marginal stds, publish the bounds, decode round 2."""
    world = agent.world
    clients = np.arange(len(plan.moments.clients))
    moments = yield from dca.aggregator(agent, plan.moments)
    if not moments.ok or moments.released is None or moments.included is None:
        notice = ProjectionBounds(bounds=np.zeros(0), start_at=agent.now, abort=True)
        second.published.succeed(world.bus.broadcast_batch(agent, "client", clients, notice))
        for node in plan.moments.nodes:
            agent.send(node, notice)
        return ProjectionOutcome(moments, None, None, None)
    std = marginal_std(moments.released, int(moments.included.sum()), plan.variance_floor)
    bounds = projection_bounds(
        std, plan.feature_fraction, plan.target_fraction, plan.assumed_bounds
    )
    start = agent.now + plan.bounds_timeout
    notice = ProjectionBounds(bounds=bounds, start_at=start)
    second.published.succeed(world.bus.broadcast_batch(agent, "client", clients, notice))
    for node in plan.moments.nodes:
        agent.send(node, notice)
    yield world.env.timeout(start - agent.now)
    statistics = yield from dca.aggregator(agent, plan.statistics)
    return ProjectionOutcome(moments, statistics, bounds, std)


def launch_projected(
    world: World,
    plan: ProjectionPlan,
    x: F64,
    y: F64,
    *,
    stream: tuple[str, ...],
) -> Agent:
    """Add Algorithm 2's parties to ``world`` (clients holding the rows of ``x``, ``y``,
    the plan's nodes and the aggregator) and give them their behaviours. Client noise and
    share randomness come from the keystreams ``stream + (round, purpose)``. Returns the
    aggregator, whose result is a :class:`ProjectionOutcome` after the run."""
    streams = world.streams
    moment_inputs = ClientInputs(
        data=Records(x, y, plan.assumed_bounds, "moments"),
        noise=streams.keystream(*stream, "moments", "noise"),
        randomness=streams.keystream(*stream, "moments", "shares"),
        noise_std=plan.moments.client_noise_std,
        fraction_bits=plan.moments.fraction_bits,
        n_nodes=len(plan.moments.nodes),
    )
    world.add_parties("client", plan.moments.clients)
    second = SecondRound(world.env)
    moment_shares = ShareRound(world, plan.moments, moment_inputs)
    statistic_streams = (
        streams.keystream(*stream, "statistics", "noise"),
        streams.keystream(*stream, "statistics", "shares"),
    )
    world.start_group(
        "clients",
        client_population_projected(world, plan, moment_inputs, (x, y), statistic_streams, second),
    )
    for node in plan.moments.nodes:
        agent = world.add_party(node, "compute")
        world.start(agent, compute_node(agent, plan, moment_shares, second))
    out = world.add_party(plan.moments.aggregator, "aggregator")
    world.start(out, aggregator(out, plan, second))
    return out
