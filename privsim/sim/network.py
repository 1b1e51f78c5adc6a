"""Links and topology: who may talk to whom, how long a message takes, whether it is lost.

A message of ``b`` wire bytes sent from ``src`` leaves after the sender's earlier
messages (each party has one uplink, a FIFO queue), spends ``b / bandwidth`` seconds in
transmission, then ``latency`` seconds in flight, latency drawn from the link's model.
It is lost with the link's loss probability. Link parameters come from a default,
overridden per role pair and then per party pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import networkx as nx

from privsim.sim.latency import ConstantLatency, LatencyModel

__all__ = [
    "CompleteTopology",
    "GraphTopology",
    "LinkOverride",
    "LinkSpec",
    "NetworkModel",
    "Topology",
    "TopologyError",
    "star_topology",
]


class TopologyError(ValueError):
    """A party sent a message across an edge the topology does not have."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkSpec:
    """One directed link's parameters: latency model, bandwidth in bytes/s, loss probability."""

    latency: LatencyModel = ConstantLatency(value=0.0)  # noqa: RUF009 (immutable)
    """The latency model of a message's flight, after transmission (a table with a ``model`` key:
    ``constant``, ``uniform``, ``lognormal`` or ``empirical``)."""
    bandwidth: float = math.inf
    """The sender's uplink in bytes per second: a message takes ``wire bytes / bandwidth`` seconds
    to transmit after the sender's earlier messages (``inf``: instantaneous)."""
    loss: float = 0.0
    """Probability that a message on this link is lost."""

    def __post_init__(self) -> None:
        if not isinstance(self.latency, LatencyModel):
            raise ValueError(f"latency must be a latency model, got {self.latency!r}")
        if not self.bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0 bytes/s, got {self.bandwidth}")
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss must be a probability in [0, 1], got {self.loss}")


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkOverride:
    """Replace some link parameters for messages ``source -> target``; each end names a
    role (``"client"``) or a party (``"client-17"``); ``"*"`` matches any."""

    source: str
    """The sending end: a role (``client``), a party id (``client-17``) or ``*`` for any."""
    target: str
    """The receiving end: a role, a party id or ``*`` for any."""
    latency: LatencyModel | None = None
    """The latency model on these links (unset: the default link's)."""
    bandwidth: float | None = None
    """The sender's uplink in bytes per second on these links (unset: the default link's)."""
    loss: float | None = None
    """The loss probability on these links (unset: the default link's)."""

    def __post_init__(self) -> None:
        if self.bandwidth is not None and not self.bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0 bytes/s, got {self.bandwidth}")
        if self.loss is not None and not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss must be a probability in [0, 1], got {self.loss}")

    def apply(self, link: LinkSpec) -> LinkSpec:
        return LinkSpec(
            latency=self.latency if self.latency is not None else link.latency,
            bandwidth=self.bandwidth if self.bandwidth is not None else link.bandwidth,
            loss=self.loss if self.loss is not None else link.loss,
        )


class Topology(Protocol):
    """Which directed sends are allowed."""

    def allows(self, src: str, dst: str) -> bool: ...


class CompleteTopology:
    """Every party may send to every other (a full mesh), without building the graph."""

    def allows(self, src: str, dst: str) -> bool:
        return src != dst


class GraphTopology:
    """Edges of a ``networkx`` graph; an undirected graph allows both directions."""

    def __init__(self, graph: nx.Graph) -> None:
        self.graph = graph

    def allows(self, src: str, dst: str) -> bool:
        return bool(self.graph.has_edge(src, dst))


def star_topology(center: str, leaves: Iterable[str]) -> GraphTopology:
    """A star: ``center`` linked to every leaf, leaves not linked to each other."""
    graph = nx.Graph()
    graph.add_node(center)
    graph.add_edges_from((center, leaf) for leaf in leaves if leaf != center)
    return GraphTopology(graph)


class NetworkModel:
    """Resolves the link for a send: default, then role overrides, then party overrides."""

    def __init__(
        self,
        default: LinkSpec,
        overrides: tuple[LinkOverride, ...] = (),
        topology: Topology | None = None,
    ) -> None:
        self.default = default
        self.overrides = overrides
        self.topology: Topology = topology if topology is not None else CompleteTopology()
        self._links: dict[tuple[str | None, str, str | None, str], LinkSpec] = {}
        #: Names used by overrides; a party among them may have a link of its own.
        self.named_parties = frozenset(
            {o.source for o in overrides} | {o.target for o in overrides}
        )

    def link(self, src: str, src_role: str, dst: str, dst_role: str) -> LinkSpec:
        # A party no override names matches none by its name: its link depends on its
        # role alone, so the resolved links are kept by (named end or None, role) pairs.
        named = self.named_parties
        key = (src if src in named else None, src_role, dst if dst in named else None, dst_role)
        spec = self._links.get(key)
        if spec is None:
            spec = self._links[key] = self._resolve(*key)
        return spec

    def _resolve(self, src: str | None, src_role: str, dst: str | None, dst_role: str) -> LinkSpec:
        matching = [
            o
            for o in self.overrides
            if o.source in ("*", src_role, src) and o.target in ("*", dst_role, dst)
        ]
        # Apply the least specific first so that party-level settings win over role-level.
        matching.sort(key=lambda o: (o.source == src) + (o.target == dst))
        spec = self.default
        for o in matching:
            spec = o.apply(spec)
        return spec
