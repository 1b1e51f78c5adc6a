"""One training round as agent behaviours: the server sends the model to the picked
clients, each returns its clipped update through the round's aggregation.

``dca``: a client that received the model runs DCA's client (Heikkilä et al. 2017,
Algorithm 1: its update plus its noise share, split over the compute nodes), the nodes
run DCA's compute node and the server is DCA's output party. ``trusted`` and ``local``:
the client sends its update (``local``: with the whole noise added) to the server, which
sums what arrived by the deadline (``trusted``: and adds the central noise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum import behaviours as dca
from privsim.kit.securesum.inputs import ShareSource
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.messages import Message, message

__all__ = [
    "Download",
    "RoundPlan",
    "Update",
    "client",
    "dca_client",
    "dca_server",
    "receiver",
    "sender",
    "server",
]

F64 = npt.NDArray[np.float64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Download(Message):
    """Server -> picked client: the model's parameters w_r (float64)."""

    values: F64


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Update(Message):
    """Client -> server: its clipped update (``local``: plus its own noise)."""

    values: F64


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundPlan:
    """The round's public parameters: the picked ``clients``, the ``server``, the
    parameters sent, and the ``deadline`` (simulated seconds from the round's start)
    by which contributions must arrive; ``release_empty``: the server releases even
    when nothing arrived (a curator's noise alone: whether a round releases must not
    depend on the cohort)."""

    clients: tuple[str, ...]
    server: str
    params: F64
    deadline: float
    release_empty: bool = False


def _download(agent: Agent, plan: RoundPlan) -> Behaviour:
    """Wait for the model; True if it came before the deadline."""
    got = yield from agent.receive(Download, deadline=plan.deadline)
    return got is not None


def receiver(agent: Agent, plan: RoundPlan) -> Behaviour:
    """A picked client's download alone (before a SecAgg round): True if the model came
    before the deadline."""
    got = yield from _download(agent, plan)
    return got


def sender(agent: Agent, plan: RoundPlan) -> Behaviour:
    """The server's download alone: w_r to every picked client."""
    for party in plan.clients:
        agent.send(party, Download(values=plan.params))
    yield from ()


def client(agent: Agent, plan: RoundPlan, update: Callable[[int], F64]) -> Behaviour:
    """``trusted`` / ``local``: receive w_r, send ``update(i)`` (i: this client's place in
    the cohort), the clipped update u_i (plus η_i ~ N(0, σ²I) for local DP)."""
    if not (yield from _download(agent, plan)):
        return
    values = update(agent.role_index)
    agent.remember("update", values)
    agent.send(plan.server, Update(values=values))


def server(
    agent: Agent, plan: RoundPlan, finish: Callable[[F64, npt.NDArray[np.bool_]], F64]
) -> Behaviour:
    """``trusted`` / ``local``: send w_r to every picked client, sum the updates that
    arrive by the deadline, and release ``finish(sum, included)`` (the curator adds its
    noise there); nothing arrived: an abort, unless the plan releases an empty sum."""
    for party in plan.clients:
        agent.send(party, Download(values=plan.params))
    index = {c: i for i, c in enumerate(plan.clients)}
    included = np.zeros(len(plan.clients), dtype=bool)
    total = np.zeros(plan.params.size, dtype=np.float64)
    while not included.all():
        got = yield from agent.receive(Update, deadline=plan.deadline)
        if got is None:
            break
        i = index.get(got.src)
        if i is None or included[i]:
            continue
        included[i] = True
        total += got.message.values
    if not included.any() and not plan.release_empty:
        return SumOutcome.aborted(
            AbortReason.TOO_MANY_DROPOUTS, f"no update arrived by the {plan.deadline:g} s deadline"
        )
    return SumOutcome(released=finish(total, included), included=included)


def dca_client(
    agent: Agent, plan: RoundPlan, inputs: ShareSource, sum_plan: dca.DcaPlan
) -> Behaviour:
    """``dca``: receive w_r, then DCA's client with the clipped update as its input."""
    if not (yield from _download(agent, plan)):
        return
    yield from dca.client(agent, inputs, sum_plan)


def dca_server(agent: Agent, plan: RoundPlan, sum_plan: dca.DcaPlan) -> Behaviour:
    """``dca``: send w_r to every picked client, then DCA's output party."""
    for party in plan.clients:
        agent.send(party, Download(values=plan.params))
    outcome = yield from dca.aggregator(agent, sum_plan)
    return outcome
