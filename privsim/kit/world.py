"""A world built from a scenario: its network, topology, faults, coalition and channels,
for the parties a protocol names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable

from privsim.scenarios.schema import Scenario
from privsim.sim.coalition import CoalitionSpec
from privsim.sim.faults import FaultSpec, draw_faults
from privsim.sim.network import (
    CompleteTopology,
    GraphTopology,
    NetworkModel,
    Topology,
    star_topology,
)
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["agree_channels", "build_world", "channel_label", "no_data_reason", "topology"]


def channel_label(mode: str) -> str:
    """How a report names a ``network.encryption`` mode: ``sized`` says that it encrypts
    nothing (it charges AES-GCM's wire sizes only)."""
    return "sized (not encrypted)" if mode == "sized" else mode


def topology(scenario: Scenario, parties: Iterable[str]) -> Topology:
    """The scenario's ``network.topology`` over ``parties`` (read only for a topology
    other than the complete graph: a population's names need not be made for it)."""
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


def build_world(
    scenario: Scenario,
    streams: Streams,
    parties: Iterable[str],
    *,
    ignore_servers: Collection[str] = (),
    keep_envelopes: bool = False,
    faults: FaultSpec | None = None,
    coalition: CoalitionSpec | None = None,
) -> World:
    """The scenario's network, faults, coalition and channels for ``parties``.
    Servers named in ``ignore_servers`` (parties a design does not have, e.g. compute
    nodes under a trusted aggregator) are left out of the coalition and of the named
    faults (``faults.absent_parties``, ``faults.crashes``); any other unknown name is an
    error when the world starts. ``faults`` and ``coalition`` replace the scenario's
    (a protocol that runs one world per round gives each round its own)."""
    servers = tuple(s for s in scenario.threat.colluding_servers if s not in ignore_servers)
    faults = scenario.faults if faults is None else faults
    if ignore_servers:
        faults = dataclasses.replace(
            faults,
            absent_parties=tuple(p for p in faults.absent_parties if p not in ignore_servers),
            crashes=tuple((p, t) for p, t in faults.crashes if p not in ignore_servers),
        )
    return World(
        seed=streams,
        network=NetworkModel(
            scenario.network.link, scenario.network.overrides, topology(scenario, parties)
        ),
        faults=faults,
        coalition=CoalitionSpec(clients=scenario.threat.colluding_clients, servers=servers)
        if coalition is None
        else coalition,
        # aes-gcm seals every message; sized charges the same envelope bytes unsealed
        encryption=scenario.network.encryption == "aes-gcm",
        envelope=scenario.network.encryption != "none",
        keep_envelopes=keep_envelopes,
    )


def agree_channels(world: World, pairs: Callable[[World], Iterable[tuple[str, str]]]) -> None:
    """Set-up phase: with encryption on (``aes-gcm``), every pair that will talk
    (``pairs(world)``, not computed otherwise: ``sized`` and ``none`` derive no keys) agrees
    its keys before the protocol starts, as a deployment would; timed apart from the
    protocol."""
    if world.bus.encrypt:
        world.channels.agree(list(pairs(world)))


def no_data_reason(
    scenario: Scenario,
    seed: int,
    clients: Collection[str],
    receiver: str,
    *,
    role: str = "client",
    receiver_role: str = "aggregator",
) -> str:
    """Why no client's data can reach ``receiver`` in a run of ``scenario`` at ``seed``,
    or ``""`` when some can: every client absent (the faults a world built at this seed
    draws for ``role``), or every present client's link to ``receiver`` losing every
    message. For a release computed outside the bus (a trusted curator's), which must
    then abort instead of releasing a statistic of data it never received."""
    plan = draw_faults(scenario.faults, {role: list(clients)}, Streams(seed))
    present = [c for c in clients if c not in plan.absent]
    if not present:
        return f"every {role} is absent: none of the {len(clients)} started (faults)"
    network = NetworkModel(scenario.network.link, scenario.network.overrides)
    if all(network.link(c, role, receiver, receiver_role).loss >= 1.0 for c in present):
        return f"every message from a {role} to {receiver} is lost (network loss = 1)"
    return ""
