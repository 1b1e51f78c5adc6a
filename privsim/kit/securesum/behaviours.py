"""DCA roles as agent behaviours: client, compute node, aggregator (Algorithm 1, §3.1.3)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from privsim.kit.securesum.inputs import ShareSource
from privsim.kit.securesum.maths import decode_fixed
from privsim.kit.securesum.messages import DCA_KINDS, DcaKinds, NodeAbort, NodeSum
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.sim.agent import Agent, Behaviour

__all__ = ["DcaPlan", "aggregator", "agree", "client", "compute_node"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DcaPlan:
    """Public parameters every party knows.

    ``tolerated`` is T, the number of dropped-or-colluding clients the noise is scaled
    for (Theorem 1): larger T costs accuracy (each client adds more noise) and buys
    robustness. The timeouts trade latency against the number of stragglers cut off.
    """

    clients: tuple[str, ...]
    nodes: tuple[str, ...]
    aggregator: str
    dimension: int
    client_noise_std: float
    fraction_bits: int
    tolerated: int
    share_timeout: float
    agreement_timeout: float
    sum_timeout: float
    release_beyond_tolerance: bool = False
    kinds: DcaKinds = DCA_KINDS


def client(agent: Agent, inputs: ShareSource, plan: DcaPlan) -> Behaviour:
    """Steps 1–2: add η_i ~ N(0, σ²_client I), encode, split into M shares, send share k to node k."""
    mine = inputs.messages([agent.role_index])
    agent.remember(plan.kinds.state_key("input"), mine.z[0])
    agent.remember(plan.kinds.state_key("noise"), mine.eta[0])
    for node, share in zip(plan.nodes, mine.shares[0], strict=True):
        agent.send(node, plan.kinds.share(values=share))
    yield from ()


def compute_node(agent: Agent, plan: DcaPlan) -> Behaviour:
    """Step 3 with fault tolerance: collect shares until the deadline, agree with the
    other nodes on the clients every node received, send the sum over that set."""
    n = len(plan.clients)
    client_index = {c: i for i, c in enumerate(plan.clients)}
    received: dict[int, npt.NDArray[np.uint64]] = {}
    share_deadline = agent.now + plan.share_timeout
    while len(received) < n:
        delivery = yield from agent.receive(plan.kinds.share, deadline=share_deadline)
        if delivery is None:
            break
        i = client_index.get(delivery.src)
        if i is not None and i not in received:
            received[i] = delivery.message.values

    mine = np.zeros(n, dtype=bool)
    mine[list(received)] = True
    agreed = yield from agree(agent, plan, mine, share_deadline)
    if agreed is None:
        return
    total = np.zeros(plan.dimension, dtype=np.uint64)
    for index in np.flatnonzero(agreed).tolist():
        total += received[index]
    agent.send(plan.aggregator, plan.kinds.node_sum(values=total, included=np.packbits(agreed)))


def agree(
    agent: Agent, plan: DcaPlan, mine: npt.NDArray[np.bool_], share_deadline: float
) -> Generator[simpy.Event, Any, npt.NDArray[np.bool_] | None]:
    """§3.1.3: tell every other node which clients' shares arrived here, intersect with
    theirs, and check the threshold. Returns the agreed set, or None after sending the
    aggregator a :class:`NodeAbort`."""
    n = len(plan.clients)
    peers = [p for p in plan.nodes if p != agent.id]
    for peer in peers:
        agent.send(peer, plan.kinds.received_set(clients=np.packbits(mine)))
    agreed = mine.copy()
    heard: set[str] = set()
    # Absolute: a node that got every share early must still wait for peers that are
    # waiting out the share deadline.
    agreement_deadline = share_deadline + plan.agreement_timeout
    while len(heard) < len(peers):
        reply = yield from agent.receive(plan.kinds.received_set, deadline=agreement_deadline)
        if reply is None:
            break
        if reply.src in peers and reply.src not in heard:
            heard.add(reply.src)
            agreed &= np.unpackbits(reply.message.clients, count=n).astype(bool)
    if len(heard) < len(peers):
        missing = sorted(set(peers) - heard)
        agent.send(
            plan.aggregator,
            plan.kinds.node_abort(
                reason=AbortReason.AGREEMENT_INCOMPLETE, detail=f"no received-set from {missing}"
            ),
        )
        return None
    dropped = n - int(agreed.sum())
    if dropped > plan.tolerated and not plan.release_beyond_tolerance:
        agent.send(
            plan.aggregator,
            plan.kinds.node_abort(
                reason=AbortReason.TOO_MANY_DROPOUTS,
                detail=f"{dropped} of {n} clients missing, more than the tolerated T = {plan.tolerated}",
            ),
        )
        return None
    return agreed


def aggregator(agent: Agent, plan: DcaPlan) -> Behaviour:
    """Final step: Σ_k q_k = Σ_{i ∈ agreed} (z_i + η_i), decoded from fixed point."""
    n = len(plan.clients)
    deadline = agent.now + plan.share_timeout + plan.agreement_timeout + plan.sum_timeout
    sums: dict[str, NodeSum] = {}
    while len(sums) < len(plan.nodes):
        delivery = yield from agent.receive(
            plan.kinds.node_sum, plan.kinds.node_abort, deadline=deadline
        )
        if delivery is None:
            missing = sorted(set(plan.nodes) - set(sums))
            return SumOutcome.aborted(AbortReason.SUMS_MISSING, f"no sum from {missing}")
        if delivery.src not in plan.nodes or delivery.src in sums:
            continue
        msg = delivery.message
        if isinstance(msg, NodeAbort):
            return SumOutcome.aborted(AbortReason(msg.reason), f"{delivery.src}: {msg.detail}")
        assert isinstance(msg, NodeSum)
        sums[delivery.src] = msg
    masks = [np.unpackbits(s.included, count=n).astype(bool) for s in sums.values()]
    if any(not np.array_equal(masks[0], m) for m in masks[1:]):
        return SumOutcome.aborted(AbortReason.NODES_DISAGREE, "compute nodes summed different sets")
    total = np.zeros(plan.dimension, dtype=np.uint64)
    for s in sums.values():
        total += s.values
    return SumOutcome(released=decode_fixed(total, plan.fraction_bits), included=masks[0])
