"""DCA roles as agent behaviours: client, compute node, aggregator (Algorithm 1, §3.1.3)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from privsim.kit.intnoise.dca import IntegerSetup
from privsim.kit.securesum import threshold as shamir_dca
from privsim.kit.securesum.inputs import ShareSource
from privsim.kit.securesum.maths import decode_sum
from privsim.kit.securesum.messages import (
    DCA_KINDS,
    DcaKinds,
    NodeAbort,
    NodeSum,
    SeedShare,
    Share,
)
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.kit.securesum.seeded import expand
from privsim.sim.agent import Agent, Behaviour

__all__ = ["DcaPlan", "aggregator", "agree", "client", "compute_node"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DcaPlan:
    """Public parameters every party knows.

    ``tolerated`` is T, the number of dropped-or-colluding clients the noise is scaled
    for (Theorem 1): larger T costs accuracy (each client adds more noise) and buys
    robustness. The timeouts trade latency against the number of stragglers cut off.
    ``modulus_bits`` is b of the sum mod 2^b (64: fixed point in Z_{2^64}); ``integer``
    the integer-noise mechanism, when the clients add integer noise.
    ``release_beyond_tolerance`` releases a sum missing more than T clients;
    ``release_empty`` then says whether a sum nobody reached is released too (the empty
    sum: no data and no noise). :func:`~privsim.kit.securesum.round.plan` sets it False
    for ``dca.on_excess_dropout = "release"`` (a one-shot release of nothing reports
    "released" with 0 clients included: it aborts, ``no_contributions``) and True
    otherwise, so a protocol that forces the release for its accounting (fedlearn's
    Poisson-sampled rounds: an abort would depend on the target's presence) still
    releases the empty sum, as a trusted curator releases its noise alone.
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
    release_empty: bool = True
    kinds: DcaKinds = DCA_KINDS
    modulus_bits: int = 64
    integer: IntegerSetup | None = None
    share_mode: str = "full"
    threshold: int = 0
    false_claims: int = 0

    @property
    def quorum(self) -> int:
        """Compute nodes that must answer: all M, or t with Shamir shares."""
        return self.threshold if self.share_mode == "shamir" else len(self.nodes)


def client(agent: Agent, inputs: ShareSource, plan: DcaPlan) -> Behaviour:
    """Steps 1–2: add η_i ~ N(0, σ²_client I), encode, split into M shares, send share k to node k."""
    mine = inputs.messages([agent.role_index])
    agent.remember(plan.kinds.state_key("input"), mine.z[0])
    agent.remember(plan.kinds.state_key("noise"), mine.eta[0])
    seeds = mine.seeds
    for k, (node, share) in enumerate(zip(plan.nodes, mine.shares[0], strict=True)):
        if seeds is not None and k >= 1:  # seed-compressed: node k expands G(s_{i,k})
            agent.send(node, plan.kinds.seed_share(seed=seeds[0, k - 1].tobytes()))
        else:
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
        delivery = yield from agent.receive(
            plan.kinds.share, plan.kinds.seed_share, deadline=share_deadline
        )
        if delivery is None:
            break
        i = client_index.get(delivery.src)
        if i is not None and i not in received:
            msg = delivery.message
            if isinstance(msg, SeedShare):
                received[i] = expand(msg.seed, plan.dimension)
            else:
                assert isinstance(msg, Share)
                received[i] = msg.values

    mine = np.zeros(n, dtype=bool)
    mine[list(received)] = True
    agreed = yield from agree(agent, plan, claimed_received(agent, plan, mine), share_deadline)
    if agreed is None:
        return
    if plan.share_mode == "shamir":
        rows = [received[i] for i in np.flatnonzero(agreed).tolist()]
        total = shamir_dca.node_total(rows, plan.dimension)
    else:
        total = np.zeros(plan.dimension, dtype=np.uint64)
        for index in np.flatnonzero(agreed).tolist():
            total += received[index]
    agent.send(plan.aggregator, plan.kinds.node_sum(values=total, included=np.packbits(agreed)))


def claimed_received(
    agent: Agent, plan: DcaPlan, mine: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """The received set a node reports in the agreement step: what arrived, or, for a
    node in the coalition when ``plan.false_claims`` = D > 0 (an active adversary), that
    set without the first D honest clients in it, whose shares it claims never came."""
    coalition = agent.world.coalition
    if not plan.false_claims or agent.id not in coalition:
        return mine
    held = [i for i in np.flatnonzero(mine).tolist() if plan.clients[i] not in coalition]
    claimed = mine.copy()
    claimed[held[: plan.false_claims]] = False
    return claimed


def agree(
    agent: Agent, plan: DcaPlan, mine: npt.NDArray[np.bool_], share_deadline: float
) -> Generator[simpy.Event, Any, npt.NDArray[np.bool_] | None]:
    """§3.1.3: tell every other node which clients' shares arrived here, intersect with
    theirs, and check the threshold. Returns the agreed set, or None after sending the
    aggregator a :class:`NodeAbort`. With Shamir shares, the sets of the t − 1 or more
    peers heard by the deadline are enough (lost nodes are left out)."""
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
    if len(heard) + 1 < plan.quorum:  # with Shamir shares, t nodes are enough
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
    if dropped == n and not plan.release_empty:  # nothing reached the sum: nothing to release
        agent.send(
            plan.aggregator,
            plan.kinds.node_abort(
                reason=AbortReason.NO_CONTRIBUTIONS,
                detail=f"none of the {n} clients' shares reached every node: a release beyond "
                "the tolerated dropouts never releases an empty sum",
            ),
        )
        return None
    return agreed


def aggregator(agent: Agent, plan: DcaPlan) -> Behaviour:
    """Final step: Σ_k q_k = Σ_{i ∈ agreed} (z_i + η_i), decoded from fixed point (or
    from the sum mod 2^b of rounded inputs and integer noise)."""
    n = len(plan.clients)
    deadline = agent.now + plan.share_timeout + plan.agreement_timeout + plan.sum_timeout
    if plan.share_mode == "shamir":
        outcome = yield from threshold_aggregator(agent, plan, deadline)
        return outcome
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
    released = decode_sum(total, plan.fraction_bits, plan.modulus_bits)
    return SumOutcome(released=released, included=masks[0])


def threshold_aggregator(
    agent: Agent, plan: DcaPlan, deadline: float
) -> Generator[simpy.Event, Any, SumOutcome]:
    """The output party with Shamir shares: wait for every node's answer (or the
    deadline), take the largest group of nodes that summed the same agreed set, and
    interpolate Σ_{i ∈ A} x_i from t of their sums; fewer than t in any group aborts."""
    n = len(plan.clients)
    sums: dict[str, NodeSum] = {}
    aborts: dict[str, NodeAbort] = {}
    while len(sums) + len(aborts) < len(plan.nodes):
        delivery = yield from agent.receive(
            plan.kinds.node_sum, plan.kinds.node_abort, deadline=deadline
        )
        if delivery is None:
            break
        src, msg = delivery.src, delivery.message
        if src not in plan.nodes or src in sums or src in aborts:
            continue
        if isinstance(msg, NodeAbort):
            aborts[src] = msg
        else:
            assert isinstance(msg, NodeSum)
            sums[src] = msg
    groups: dict[bytes, list[str]] = {}
    for node, s in sums.items():
        groups.setdefault(s.included.tobytes(), []).append(node)
    best = max(groups.values(), key=len, default=[])
    if len(best) < plan.threshold:
        dropouts = [a for a in aborts.values() if a.reason == AbortReason.TOO_MANY_DROPOUTS]
        if dropouts:
            return SumOutcome.aborted(AbortReason.TOO_MANY_DROPOUTS, dropouts[0].detail)
        missing = sorted(set(plan.nodes) - set(sums))
        return SumOutcome.aborted(
            AbortReason.TOO_FEW_NODES,
            f"{len(best)} of {len(plan.nodes)} compute nodes sent a sum over one agreed set, "
            f"fewer than the Shamir threshold t = {plan.threshold} (lost or aborted: {missing})",
        )
    by_index = {plan.nodes.index(node): sums[node].values for node in best}
    total = shamir_dca.reconstruct_sum(by_index, plan.threshold)
    included = np.unpackbits(sums[best[0]].included, count=n).astype(bool)
    return SumOutcome(
        released=shamir_dca.decode_residues(total, plan.fraction_bits), included=included
    )
