"""Running a scenario: ``run(scenario, seed) -> RunResult``, a pure function of its inputs.

:func:`simulate` builds one world for one protocol and returns it with the outcome (for
tests and analyses that want the trace or the coalition view); :func:`run` simulates the
scenario's protocol, and the trusted-aggregator baseline on the same data when asked,
and summarises both into a JSON-ready :class:`RunResult`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim import __version__
from privsim.analysis.calibration import gaussian_sigma
from privsim.analysis.cost import CostReport, communication_cost
from privsim.analysis.ledger import PrivacyLedger
from privsim.data.synthetic import SyntheticVectors
from privsim.protocols import trusted_aggregator as ta
from privsim.protocols.dca import behaviours as dca
from privsim.protocols.dca.batched import ShareRound, client_population, compute_node_batched
from privsim.protocols.dca.inputs import ClientData, ClientInputs
from privsim.protocols.dca.maths import client_noise_std, fixed_point_bound
from privsim.protocols.dca.messages import DCA_KINDS, DcaKinds
from privsim.protocols.outcome import AbortReason, SumOutcome
from privsim.scenarios.schema import Scenario
from privsim.sim.coalition import CoalitionSpec
from privsim.sim.network import (
    CompleteTopology,
    GraphTopology,
    NetworkModel,
    Topology,
    star_topology,
)
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = [
    "OUTPUT_PARTY",
    "RunResult",
    "Simulation",
    "build_world",
    "check_fixed_point",
    "dca_plan",
    "realised_event",
    "run",
    "simulate",
    "world_cost",
]

#: The party that receives the released sum, in every protocol.
OUTPUT_PARTY = "aggregator"
MECHANISM = "secure-sum"


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    """One simulated protocol run with everything needed to analyse it."""

    scenario: Scenario
    seed: int
    protocol: str
    world: World
    outcome: SumOutcome
    data: ClientData
    clients: tuple[str, ...]
    ledger: PrivacyLedger
    sensitivity: float
    sigma_std: float
    client_noise_std: float
    wall_seconds: float
    delivery: str

    @property
    def true_sum(self) -> npt.NDArray[np.float64]:
        """Σ z_i over every client (the target without dropouts)."""
        return self.data.sum()

    def included_sum(self) -> npt.NDArray[np.float64] | None:
        """Σ z_i over the clients the protocol included (the target it actually estimates)."""
        if self.outcome.included is None:
            return None
        return self.data.sum(self.outcome.included)


def _sensitivity(scenario: Scenario) -> float:
    """L2 sensitivity of Σ z_i with ||z_i|| <= C: 2C for replace-one, C for add/remove."""
    c = scenario.data.clip_norm
    return 2.0 * c if scenario.privacy.neighbour == "replace_one" else c


#: From this many clients, ``delivery = "auto"`` sends the client shares in batches.
BATCHED_FROM_CLIENTS = 100


def _delivery(scenario: Scenario) -> str:
    """Resolve ``dca.delivery``. Batched delivery keeps no per-share view for colluding
    compute nodes, so a scenario with one uses the per-message path."""
    choice = scenario.dca.delivery
    node_colludes = any(s.startswith("compute-") for s in scenario.threat.colluding_servers)
    if choice == "batched" and node_colludes:
        raise ValueError(
            "dca.delivery = 'batched' cannot record the shares colluding compute nodes receive; "
            "use delivery = 'per_message' (or 'auto') with threat.colluding_servers naming compute nodes"
        )
    if choice == "auto":
        batched = scenario.population.clients >= BATCHED_FROM_CLIENTS and not node_colludes
        return "batched" if batched else "per_message"
    return choice


def _channel_pairs(world: World) -> list[tuple[str, str]]:
    """Who talks to whom in DCA and the trusted-aggregator protocol: clients to the
    servers, compute nodes among themselves and to the aggregator."""
    roles = world.parties_by_role
    servers = roles.get("compute", []) or [OUTPUT_PARTY]
    pairs = [(c, s) for c in roles.get("client", []) for s in servers]
    nodes = roles.get("compute", [])
    pairs += [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :]]
    pairs += [(a, OUTPUT_PARTY) for a in nodes]
    return pairs


def _topology(scenario: Scenario, parties: list[str]) -> Topology:
    net = scenario.network
    if net.topology == "complete":
        return CompleteTopology()
    if net.topology == "star":
        return star_topology(net.star_center, parties)
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(parties)
    graph.add_edges_from(net.edges)
    return GraphTopology(graph)


def realised_event(
    sim_protocol: str,
    outcome: SumOutcome,
    world: World,
    clients: tuple[str, ...],
    nodes: tuple[str, ...],
    noise_std: float,
    sigma_std: float,
    sensitivity: float,
) -> dp_accounting.DpEvent:
    """What the release actually was against the realised coalition.

    DCA: only honest included clients' noise protects; following Theorem 1's count of
    N − T − 1, one honest contribution (the target's own) is not credited, so the
    effective σ² is (H − 1) σ²_client for H honest included clients. If every compute
    node colludes the coalition sees all inputs in the clear: no DP at all.
    Trusted aggregator: σ_std, or nothing if the curator colludes.
    """
    if outcome.released is None:
        return dp_accounting.NoOpDpEvent()
    coalition = world.coalition
    if sim_protocol == "trusted_aggregator":
        if OUTPUT_PARTY in coalition:
            return dp_accounting.NonPrivateDpEvent()
        return dp_accounting.GaussianDpEvent(sigma_std / sensitivity)
    if all(node in coalition for node in nodes):
        return dp_accounting.NonPrivateDpEvent()
    assert outcome.included is not None
    honest = sum(1 for i in np.flatnonzero(outcome.included) if clients[i] not in coalition)
    effective = math.sqrt(max(honest - 1, 0)) * noise_std
    if effective == 0.0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.GaussianDpEvent(effective / sensitivity)


def dca_plan(
    scenario: Scenario,
    clients: tuple[str, ...],
    nodes: tuple[str, ...],
    dimension: int,
    noise_std: float,
    kinds: DcaKinds = DCA_KINDS,
) -> dca.DcaPlan:
    """The public DCA parameters of ``scenario`` for one secure sum of ``dimension``."""
    cfg = scenario.dca
    return dca.DcaPlan(
        clients=clients,
        nodes=nodes,
        aggregator=OUTPUT_PARTY,
        dimension=dimension,
        client_noise_std=noise_std,
        fraction_bits=cfg.fraction_bits,
        tolerated=cfg.tolerated,
        share_timeout=cfg.share_timeout,
        agreement_timeout=cfg.agreement_timeout,
        sum_timeout=cfg.sum_timeout,
        release_beyond_tolerance=cfg.on_excess_dropout == "release",
        kinds=kinds,
    )


def check_fixed_point(scenario: Scenario, n: int, peak_value: float, noise_std: float) -> None:
    """The decoded sum must stay inside the signed fixed-point range (with a 10σ margin):
    ``n`` clients, each entry at most ``peak_value`` plus noise of ``noise_std``."""
    bits = scenario.dca.fraction_bits
    peak = n * (peak_value + 10.0 * noise_std)
    if peak >= fixed_point_bound(bits):
        raise ValueError(
            f"dca.fraction_bits = {bits}: a sum of {n} clients can reach {peak:.3g}, beyond the "
            f"fixed-point range ±{fixed_point_bound(bits):.3g}; lower fraction_bits"
        )


def build_world(
    scenario: Scenario,
    streams: Streams,
    parties: list[str],
    *,
    with_nodes: bool,
    keep_envelopes: bool = False,
) -> World:
    """The scenario's network, faults, coalition and channels for ``parties``; colluding
    compute nodes are dropped from the coalition when the protocol has none."""
    servers = scenario.threat.colluding_servers
    if not with_nodes:
        servers = tuple(s for s in servers if s == OUTPUT_PARTY)
    return World(
        seed=streams,
        network=NetworkModel(
            scenario.network.link, scenario.network.overrides, _topology(scenario, parties)
        ),
        faults=scenario.faults,
        coalition=CoalitionSpec(clients=scenario.threat.colluding_clients, servers=servers),
        encryption=scenario.network.encryption == "aes-gcm",
        keep_envelopes=keep_envelopes,
    )


def simulate(
    scenario: Scenario,
    seed: int | None = None,
    *,
    protocol: str | None = None,
    keep_envelopes: bool = False,
) -> Simulation:
    """Simulate ``protocol`` (default: the scenario's) on the scenario's data and network."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    protocol = protocol or scenario.protocol
    streams = Streams(seed)
    pop, cfg = scenario.population, scenario.dca
    n, d = pop.clients, scenario.data.dimension
    clients = tuple(f"client-{i}" for i in range(n))
    nodes = tuple(f"compute-{k}" for k in range(pop.compute_nodes)) if protocol == "dca" else ()

    data = SyntheticVectors(  # each client clips its own vector
        n,
        d,
        mean=scenario.data.mean,
        scale=scenario.data.scale,
        clip_norm=scenario.data.clip_norm,
        stream=streams.keystream("data", "synthetic"),
        distribution=scenario.data.distribution,
    )

    sensitivity = _sensitivity(scenario)
    privacy = scenario.privacy
    sigma_std = gaussian_sigma(privacy.epsilon, privacy.delta, sensitivity, privacy.calibration)
    ledger = PrivacyLedger(privacy.epsilon, privacy.delta, on_overspend=privacy.on_overspend)
    ledger.charge(MECHANISM, dp_accounting.GaussianDpEvent(sigma_std / sensitivity))

    world = build_world(
        scenario,
        streams,
        [*clients, *nodes, OUTPUT_PARTY],
        with_nodes=protocol == "dca",
        keep_envelopes=keep_envelopes,
    )
    client_agents = world.add_parties("client", clients)
    if protocol == "dca":
        noise_std = client_noise_std(sigma_std, n, cfg.tolerated)
        check_fixed_point(scenario, n, scenario.data.clip_norm, noise_std)
        plan = dca_plan(scenario, clients, nodes, d, noise_std)
        inputs = ClientInputs(
            data=data,
            noise=streams.keystream("dca", "noise"),
            randomness=streams.keystream("dca", "shares"),
            noise_std=noise_std,
            fraction_bits=cfg.fraction_bits,
            n_nodes=len(nodes),
        )
        delivery = _delivery(scenario)
        if delivery == "batched":
            share_round = ShareRound(world, plan, inputs)
            world.start_group("clients", client_population(world, plan, inputs))
        else:
            for agent in client_agents:
                world.start(agent, dca.client(agent, inputs, plan))
        for node in nodes:
            agent = world.add_party(node, "compute")
            if delivery == "batched":
                world.start(agent, compute_node_batched(agent, plan, share_round))
            else:
                world.start(agent, dca.compute_node(agent, plan))
        out = world.add_party(OUTPUT_PARTY, "aggregator")
        world.start(out, dca.aggregator(out, plan))
    elif protocol == "trusted_aggregator":
        noise_std = 0.0
        delivery = "per_message"
        ta_plan = ta.TrustedAggregatorPlan(
            clients=clients,
            curator=OUTPUT_PARTY,
            dimension=d,
            sigma=sigma_std,
            timeout=cfg.share_timeout,
        )
        for agent in client_agents:
            world.start(agent, ta.client(agent, data.rows([agent.role_index])[0], ta_plan))
        out = world.add_party(OUTPUT_PARTY, "aggregator")
        world.start(out, ta.curator(out, ta_plan))
    else:
        raise ValueError(f"unknown protocol {protocol!r}; use 'dca' or 'trusted_aggregator'")

    if world.bus.encrypt:
        # Set-up phase: every pair that will talk agrees its keys before the round, as a
        # deployment would; timed apart (key_agreement_seconds) from the protocol.
        world.channels.agree(_channel_pairs(world))
    world.run()
    outcome = (
        out.result
        if isinstance(out.result, SumOutcome)
        else SumOutcome.aborted(
            AbortReason.SUMS_MISSING, f"{OUTPUT_PARTY} crashed or never started"
        )
    )
    ledger.settle(
        MECHANISM,
        realised_event(protocol, outcome, world, clients, nodes, noise_std, sigma_std, sensitivity),
    )
    return Simulation(
        scenario=scenario,
        seed=seed,
        protocol=protocol,
        world=world,
        outcome=outcome,
        data=data,
        clients=clients,
        ledger=ledger,
        sensitivity=sensitivity,
        sigma_std=sigma_std,
        client_noise_std=noise_std,
        wall_seconds=time.perf_counter() - started,
        delivery=delivery,
    )


def _errors(sim: Simulation) -> dict[str, float] | None:
    released = sim.outcome.released
    included = sim.included_sum()
    if released is None or included is None:
        return None
    d = released.size
    vs_included = released - included
    vs_all = released - sim.true_sum
    return {
        "l2_error": float(np.linalg.norm(vs_included)),
        "rmse": float(np.linalg.norm(vs_included) / math.sqrt(d)),
        "relative_l2_error": float(
            np.linalg.norm(vs_included) / max(float(np.linalg.norm(included)), 1e-300)
        ),
        "l2_error_vs_all_clients": float(np.linalg.norm(vs_all)),
        "rmse_vs_all_clients": float(np.linalg.norm(vs_all) / math.sqrt(d)),
    }


def world_cost(world: World) -> CostReport:
    """Messages, bytes, rounds and per-role costs of a finished world; a party is busy
    until it finished (or crashed)."""
    busy = {
        a.id: (a.finished_at if a.finished_at is not None else (a.crashed_at or 0.0))
        for a in world.agents.values()
    }
    return communication_cost(world.trace.arrays(), busy)


def _cost(sim: Simulation) -> CostReport:
    return world_cost(sim.world)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """Everything a run reports, as plain data (see :meth:`to_dict`)."""

    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


def _summary(sim: Simulation) -> dict[str, Any]:
    world, outcome = sim.world, sim.outcome
    clients = set(sim.clients)
    absent = sorted(p for p in world.faults.absent if p in clients)
    crashed = sorted(p for p in world.faults.crash_times if p in clients)
    excluded = (
        sorted(sim.clients[i] for i in np.flatnonzero(~outcome.included))
        if outcome.included is not None
        else []
    )
    colluding = sorted(world.coalition)
    cost = _cost(sim)
    eps = sim.ledger.epsilon()
    return {
        "protocol": sim.protocol,
        "status": "released" if outcome.ok else "aborted",
        "abort": None if outcome.ok else {"reason": str(outcome.abort), "detail": outcome.detail},
        "accuracy": _errors(sim),
        "privacy": {
            "target_epsilon": sim.ledger.epsilon_budget,
            "delta": sim.ledger.delta,
            "achieved_epsilon": eps if math.isfinite(eps) else "inf",
            "guarantee_met": sim.ledger.within_budget,
            "sensitivity_l2": sim.sensitivity,
            "sigma_std": sim.sigma_std,
            "client_noise_std": sim.client_noise_std,
            "calibration": sim.scenario.privacy.calibration,
            "events": [
                {"label": e.label, "planned": repr(e.planned), "realised": repr(e.event)}
                for e in sim.ledger.entries
            ],
        },
        "parties": {
            "clients": len(sim.clients),
            "included": int(outcome.included.sum()) if outcome.included is not None else 0,
            "absent": absent,
            "crashed": crashed,
            "excluded": excluded,
            "colluding": colluding,
        },
        "communication": {
            "messages": cost.messages,
            "bytes": cost.bytes,
            "rounds": cost.rounds,
            "by_status": dict(cost.by_status),
            "by_kind": dict(cost.by_kind),
            "roles": {role: _role_dict(rc) for role, rc in cost.roles.items()},
        },
        "duration": world.agents[OUTPUT_PARTY].finished_at,
        "wall_seconds": sim.wall_seconds,
        "key_agreement_seconds": world.channels.key_agreement_seconds,
    }


def _role_dict(rc: Any) -> dict[str, Any]:
    return {name: getattr(rc, name) for name in rc.__slots__}


def run(scenario: Scenario, seed: int | None = None) -> RunResult:
    """Run the scenario (and its trusted-aggregator baseline if ``scenario.baseline``);
    protocol ``"blr"`` runs every chosen regression method side by side instead."""
    from privsim.scenarios.loader import scenario_to_dict

    seed = scenario.seed if seed is None else seed
    if scenario.protocol == "blr":
        from privsim.protocols.blr.experiment import run_blr

        return run_blr(scenario, seed)
    if scenario.protocol == "bcd":
        from privsim.protocols.bcd.experiment import run_bcd

        return run_bcd(scenario, seed)
    if scenario.protocol == "race":
        from privsim.protocols.race.experiment import run_race

        return run_race(scenario, seed)
    main = simulate(scenario, seed)
    result: dict[str, Any] = {
        "privsim_version": __version__,
        "scenario_name": scenario.name,
        "seed": seed,
        "root_entropy": main.world.streams.entropy,
        **_summary(main),
        "baseline": None,
    }
    if scenario.baseline and main.protocol != "trusted_aggregator":
        base = simulate(scenario, seed, protocol="trusted_aggregator")
        base_summary = _summary(base)
        result["baseline"] = {
            "protocol": "trusted_aggregator",
            "status": base_summary["status"],
            "accuracy": base_summary["accuracy"],
            "achieved_epsilon": base_summary["privacy"]["achieved_epsilon"],
        }
    result["scenario"] = scenario_to_dict(scenario)
    return RunResult(data=result)
