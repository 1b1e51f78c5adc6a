"""Trusted-aggregator baseline: clients send z_i to one curator, who adds N(0, σ²_std I).

This is the centralised Gaussian mechanism that DCA emulates without a trusted party;
its error is the yardstick for DCA's (Heikkilä et al. 2017, §3, "TA").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.messages import Message, message

__all__ = ["Contribution", "TrustedAggregatorPlan", "client", "curator"]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Contribution(Message):
    """Client -> curator: the client's vector in the clear (inside the encrypted channel)."""

    values: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustedAggregatorPlan:
    clients: tuple[str, ...]
    curator: str
    dimension: int
    sigma: float
    timeout: float


def client(agent: Agent, z: npt.NDArray[np.float64], plan: TrustedAggregatorPlan) -> Behaviour:
    agent.remember("input", z)
    agent.send(plan.curator, Contribution(values=z))
    yield from ()


def curator(agent: Agent, plan: TrustedAggregatorPlan) -> Behaviour:
    """Sum what arrived by the deadline and add σ_std Gaussian noise once."""
    index = {c: i for i, c in enumerate(plan.clients)}
    included = np.zeros(len(plan.clients), dtype=bool)
    total = np.zeros(plan.dimension, dtype=np.float64)
    deadline = agent.now + plan.timeout
    while not included.all():
        delivery = yield from agent.receive(Contribution, deadline=deadline)
        if delivery is None:
            break
        i = index.get(delivery.src)
        if i is not None and not included[i]:
            included[i] = True
            total += delivery.message.values
    if not included.any():
        return SumOutcome.aborted(AbortReason.NO_CONTRIBUTIONS, "no client contributed in time")
    noise = agent.rng("noise").normal(0.0, plan.sigma, size=plan.dimension)
    agent.remember("noise", noise)
    return SumOutcome(released=total + noise, included=included)
