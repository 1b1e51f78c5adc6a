"""A world built from a scenario: its network, topology, faults, coalition and channels,
for the parties a protocol names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable

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

__all__ = ["agree_channels", "build_world", "topology"]


def topology(scenario: Scenario, parties: list[str]) -> Topology:
    """The scenario's ``network.topology`` over ``parties``."""
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
    parties: list[str],
    *,
    ignore_servers: Collection[str] = (),
    keep_envelopes: bool = False,
) -> World:
    """The scenario's network, faults, coalition and channels for ``parties``.
    Servers named in ``ignore_servers`` (parties a design does not have, e.g. compute
    nodes under a trusted aggregator) are left out of the coalition and of the named
    faults (``faults.absent_parties``, ``faults.crashes``); any other unknown name is an
    error when the world starts."""
    servers = tuple(s for s in scenario.threat.colluding_servers if s not in ignore_servers)
    faults = scenario.faults
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
        coalition=CoalitionSpec(clients=scenario.threat.colluding_clients, servers=servers),
        encryption=scenario.network.encryption == "aes-gcm",
        keep_envelopes=keep_envelopes,
    )


def agree_channels(world: World, pairs: Callable[[World], Iterable[tuple[str, str]]]) -> None:
    """Set-up phase: with encryption on, every pair that will talk (``pairs(world)``, not
    computed without encryption) agrees its keys before the protocol starts, as a
    deployment would; timed apart from the protocol."""
    if world.bus.encrypt:
        world.channels.agree(list(pairs(world)))
