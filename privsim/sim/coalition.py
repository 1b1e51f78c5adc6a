"""Threat model: a coalition of colluding parties and its pooled view.

Protocols never special-case collusion. The engine knows the coalition and keeps, for
its members only, every message they sent or received (decrypted) and the private state
they declared with :meth:`~privsim.sim.agent.Agent.remember`; the pooled view is derived
from that.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privsim.sim.messages import Message
from privsim.sim.streams import Streams

__all__ = ["CoalitionSpec", "CoalitionView", "ViewedMessage", "resolve_coalition"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CoalitionSpec:
    """Who colludes: ``clients`` is a count T (drawn at random) or explicit party ids;
    ``servers`` names colluding compute nodes, aggregators or curators."""

    clients: int | tuple[str, ...] = 0
    servers: tuple[str, ...] = ()
    client_role: str = "client"

    def __post_init__(self) -> None:
        if isinstance(self.clients, int) and self.clients < 0:
            raise ValueError(f"clients must be >= 0 colluding clients, got {self.clients}")


def resolve_coalition(
    spec: CoalitionSpec,
    parties_by_role: Mapping[str, Sequence[str]],
    streams: Streams,
    known: Container[str] | None = None,
) -> frozenset[str]:
    """The realised members: explicit ids, or T clients drawn from the ``threat`` stream.
    ``known``: the registered parties, if the caller has them in a set-like container."""
    if known is None:
        known = {p for parties in parties_by_role.values() for p in parties}
    members: set[str] = set()
    if isinstance(spec.clients, int):
        clients = parties_by_role.get(spec.client_role, ())
        if spec.clients > len(clients):
            raise ValueError(
                f"coalition asks for {spec.clients} colluding clients but there are {len(clients)}"
            )
        if spec.clients:  # (none to pick: the stream, started afresh, is not needed)
            picked = streams.fresh("threat", "coalition").choice(
                len(clients), spec.clients, replace=False
            )
            members.update(clients[i] for i in sorted(picked))
    else:
        members.update(spec.clients)
    members.update(spec.servers)
    unknown = sorted(p for p in members if p not in known)
    if unknown:
        raise ValueError(f"coalition names parties that do not exist: {unknown[:5]}")
    return frozenset(members)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewedMessage:
    """A message seen by the coalition, in the clear."""

    src: str
    dst: str
    send_time: float
    message: Message


@dataclass(frozen=True, slots=True)
class CoalitionView:
    """Everything the coalition pooled: members, messages, and members' private state."""

    members: frozenset[str]
    messages: tuple[ViewedMessage, ...]
    private: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def messages_of(self, kind: type[Message]) -> list[ViewedMessage]:
        return [m for m in self.messages if isinstance(m.message, kind)]
