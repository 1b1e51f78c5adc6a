"""One training round as agent behaviours: the server sends the model to the picked
clients, each returns its clipped update through the round's aggregation.

``dca``: a client that received the model runs DCA's client (Heikkilä et al. 2017,
Algorithm 1: its update plus its noise share, split over the compute nodes), the nodes
run DCA's compute node and the server is DCA's output party. ``trusted`` and ``local``:
the client sends its update (``local``: with the whole noise added) to the server, which
sums what arrived by the deadline (``trusted``: and adds the central noise).

``training.model_check`` (a defence against model inconsistency, Pasquini, Francati &
Ateniese, CCS 2022): a client that received the model hashes it (SHA-256 of its float64
bytes), sends the digest to each of its peers (SecAgg+: its neighbours in the round's
graph, the parties whose masks meet its own; otherwise every other picked client) on a
direct client-to-client channel the server cannot rewrite, and withholds its update when
a peer's digest differs. A peer whose digest has not come by the check's deadline is
taken as dropped: a check that waited for every peer would let one dropout stall the
round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum import behaviours as dca
from privsim.kit.securesum.inputs import ShareSource
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.messages import Message, message

__all__ = [
    "DIGEST_BYTES",
    "Download",
    "ModelCheck",
    "ModelDigest",
    "RoundPlan",
    "Update",
    "client",
    "dca_client",
    "dca_server",
    "model_check",
    "model_digest",
    "receiver",
    "sender",
    "server",
]

F64 = npt.NDArray[np.float64]

#: Bytes of a model's digest (SHA-256).
DIGEST_BYTES = 32


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


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelDigest(Message):
    """Client -> peer (``training.model_check``): SHA-256 of the model it received."""

    digest: bytes


def model_digest(params: F64) -> bytes:
    """SHA-256 of the parameters' little-endian float64 bytes."""
    raw = np.ascontiguousarray(params, dtype="<f8").tobytes()
    return hashlib.sha256(raw).digest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCheck:
    """``training.model_check``: each client's ``peers`` (the clients it compares digests
    with) and the ``deadline`` by which their digests must come."""

    peers: Mapping[str, tuple[str, ...]]
    deadline: float

    def pairs(self) -> list[tuple[str, str]]:
        """The client-to-client channels the digests travel on, each pair once."""
        return sorted({(a, b) if a < b else (b, a) for a, ps in self.peers.items() for b in ps})


def model_check(
    clients: tuple[str, ...], deadline: float, neighbours: Callable[[int], npt.ArrayLike] | None
) -> ModelCheck:
    """The check of a round of ``clients``: ``neighbours(i)`` the cohort indices of client
    i's peers (SecAgg+'s graph), None for every other client."""
    peers: dict[str, tuple[str, ...]] = {}
    for i, c in enumerate(clients):
        if neighbours is None:
            peers[c] = clients[:i] + clients[i + 1 :]
        else:
            peers[c] = tuple(clients[int(j)] for j in np.asarray(neighbours(i)).tolist())
    return ModelCheck(peers=peers, deadline=deadline)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundPlan:
    """The round's public parameters: the picked ``clients``, the ``server``, the
    parameters sent, and the ``deadline`` (simulated seconds from the round's start)
    by which contributions must arrive; ``release_empty``: the server releases even
    when nothing arrived (a curator's noise alone: whether a round releases must not
    depend on the cohort); ``params_for``: a client sent another model than ``params``
    (an active server's model inconsistency); ``check``: the clients compare the model's
    digest with their peers before contributing (``training.model_check``; None: no check)."""

    clients: tuple[str, ...]
    server: str
    params: F64
    deadline: float
    release_empty: bool = False
    params_for: Mapping[str, F64] = field(default_factory=dict)
    check: ModelCheck | None = None

    def model_for(self, client: str) -> F64:
        """The parameters the server sends ``client``."""
        return self.params_for.get(client, self.params)


def _download(agent: Agent, plan: RoundPlan) -> Behaviour:
    """Wait for the model; True if it came before the deadline (``plan.check``: and no
    peer's digest differs from its own)."""
    got = yield from agent.receive(Download, deadline=plan.deadline)
    if got is None:
        return False
    if plan.check is None:
        return True
    same = yield from _same_model(agent, plan.check, got.message.values)
    return same


def _same_model(agent: Agent, check: ModelCheck, model: F64) -> Behaviour:
    """Send the digest of ``model`` to every peer, then wait for theirs until the check's
    deadline: False at the first that differs (the client withholds its update)."""
    mine = model_digest(model)
    peers = check.peers.get(agent.id, ())
    for peer in peers:
        agent.send(peer, ModelDigest(digest=mine))
    waiting = set(peers)
    while waiting:
        got = yield from agent.receive(ModelDigest, deadline=check.deadline)
        if got is None:
            break  # the rest are taken as dropped
        if got.src not in waiting:
            continue
        if got.message.digest != mine:
            agent.remember("model_mismatch", got.src)
            return False
        waiting.discard(got.src)
    return True


def receiver(agent: Agent, plan: RoundPlan) -> Behaviour:
    """A picked client's download alone (before a SecAgg round): True if the model came
    before the deadline."""
    got = yield from _download(agent, plan)
    return got


def sender(agent: Agent, plan: RoundPlan) -> Behaviour:
    """The server's download alone: w_r to every picked client."""
    for party in plan.clients:
        agent.send(party, Download(values=plan.model_for(party)))
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
        agent.send(party, Download(values=plan.model_for(party)))
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
        agent.send(party, Download(values=plan.model_for(party)))
    outcome = yield from dca.aggregator(agent, sum_plan)
    return outcome
