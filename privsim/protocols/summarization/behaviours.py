"""Consumer, owners and curator as behaviours on the bus (Algorithm 3).

The consumer sends D_v to the trusted curator and waits for the summary. The curator
broadcasts g̃ = h2(h1(D_v)) once; then each epoch it broadcasts g_ℓ = h2(h1(D_s)),
collects the bids of the owners still answering, runs PrivAuction's coins, asks the
chosen owners for their points, verifies each against its bid, and adds the best point
obtained and not yet used to D_s. An owner that misses a bid deadline is dropped (a
dropped owner stops bidding). Owners bid with one matrix product per epoch and never
offer a sent point again.

An epoch in which nobody is asked (the private auction's coins can all come up tails)
still adds the best pooled point, if any (line 15); with an empty pool it adds none.
The size n broadcast with g_ℓ, and MWEM's q, are public: |D_init| + ℓ − 1, what D_s
holds had every epoch added a point. The true |D_s| would tell every owner whether
anyone was asked in an epoch that began with an empty pool, which with its own coin is
more than ε_auc (``docs/reproductions/summarization-details.md``, "An epoch in which nobody is asked").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from privsim.protocols.summarization.auction import draw_asks
from privsim.protocols.summarization.messages import (
    Ask,
    Bid,
    Done,
    HashBroadcast,
    Point,
    Summary,
    ValidationSet,
)
from privsim.protocols.summarization.mwem import MarginalMwem, quantise
from privsim.protocols.summarization.objective import bid_scores
from privsim.protocols.summarization.rff import FourierHash
from privsim.sim.agent import Agent, Behaviour

__all__ = ["CuratorOutcome", "CuratorPlan", "consumer", "curator", "owner"]

F64 = npt.NDArray[np.float64]
#: Relative tolerance when the curator checks a point against its bid.
VERIFY_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class CuratorPlan:
    """Public parameters and the seed set (not private: §4)."""

    owners: tuple[str, ...]
    consumer: str
    hash1: FourierHash
    summary_size: int
    eta: float
    t_init: int
    t_sub: int
    epsilon_validation: float
    epsilon_first: float
    epsilon_summary: float
    auction_epsilon: float
    auction: str
    tau: int
    sensitivity: float
    timeout: float
    release_last: bool
    seed_points: F64

    @property
    def scale(self) -> float:
        """√(d/2): h1's coordinates onto [−1, 1]."""
        return math.sqrt(self.hash1.dimension / 2.0)


@dataclass(slots=True)
class CuratorOutcome:
    """What the curator did: the summary (owner, epoch asked), the epochs run, asks."""

    status: str = "running"
    detail: str = ""
    validation_released: bool = False
    epochs: int = 0
    picks: list[tuple[str, int]] = field(default_factory=list)
    points: list[F64] = field(default_factory=list)
    labels: list[float] = field(default_factory=list)
    asks: list[int] = field(default_factory=list)  # asks per epoch
    empty: int = 0  # epochs that added no point (nobody asked or verified, pool empty)
    bidders: list[int] = field(default_factory=list)  # bids received per epoch
    rejected: int = 0
    dropped: list[str] = field(default_factory=list)


def consumer(agent: Agent, validation: F64, curator_id: str) -> Behaviour:
    """Send D_v to the curator (step 3) and wait for the summary."""
    agent.remember("validation", validation)
    agent.send(curator_id, ValidationSet(points=validation))
    delivery = yield from agent.receive(Summary)
    return None if delivery is None else delivery.message


def owner(agent: Agent, x: F64, y: F64, hash1: FourierHash, curator_id: str) -> Behaviour:
    """Bid the best gain over the unsent points each epoch (step 6); send the bid point
    when asked (step 14); never offer a sent point again (step 16)."""
    agent.remember("data", x)
    phi = hash1(x)
    norms = np.einsum("ij,ij->i", phi, phi)
    sent = np.zeros(len(x), dtype=bool)
    g_tilde: F64 | None = None
    pending: HashBroadcast | None = None  # g_ℓ that overtook g̃ on the network
    choice, repeats, epoch, value = -1, 0, -1, 0.0
    while True:
        delivery = yield from agent.receive(HashBroadcast, Ask, Done)
        assert delivery is not None  # no deadline
        msg = delivery.message
        if isinstance(msg, Done):
            return int(sent.sum())
        if isinstance(msg, HashBroadcast):
            if msg.epoch == 0:
                g_tilde = np.asarray(msg.vector)
                if pending is None:
                    continue
                msg, pending = pending, None
            elif g_tilde is None:
                pending = msg
                continue
            if sent.all():
                continue  # nothing left to offer
            scores = bid_scores(phi, norms, g_tilde, np.asarray(msg.vector), msg.size)
            scores[sent] = -np.inf
            j = int(np.argmax(scores))
            repeats = repeats + 1 if j == choice else 1
            choice, epoch, value = j, msg.epoch, float(scores[j])
            agent.send(curator_id, Bid(epoch=epoch, value=value, repeats=repeats))
        elif isinstance(msg, Ask) and msg.epoch == epoch and choice >= 0 and not sent[choice]:
            agent.send(
                curator_id,
                Point(epoch=epoch, features=x[choice], label=float(y[choice]), bid=value),
            )
            sent[choice] = True
            choice, repeats = -1, 0


def _release(
    mwem: MarginalMwem,
    quantised_sum: F64,
    q: int,
    iterations: int,
    epsilon: float,
    plan: CuratorPlan,
    rng: np.random.Generator,
) -> F64:
    """h2 of a set whose quantised coordinate sums are ``quantised_sum`` (Algorithm 2)."""
    mean, _ = mwem.run(
        quantised_sum, q, iterations, epsilon, plan.sensitivity, rng, last=plan.release_last
    )
    return np.asarray(mean / plan.scale, dtype=np.float64)


class _Pool:
    """The points the curator has received and not yet used (step 9's candidates): their
    (owner, epoch asked, x, label) and their h1 vectors as one growing matrix, so each
    epoch's scores are one product (not a stack of the whole pool). Taking a point moves
    the last one into its slot."""

    def __init__(self, dimension: int) -> None:
        self.entries: list[tuple[str, int, F64, float]] = []
        self._phi = np.empty((16, dimension))
        self._norms = np.empty(16)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def features(self) -> F64:
        return self._phi[: len(self.entries)]

    @property
    def norms(self) -> F64:
        return self._norms[: len(self.entries)]

    def add(self, entry: tuple[str, int, F64, float], phi: F64) -> None:
        k = len(self.entries)
        if k == len(self._norms):
            self._phi = np.concatenate([self._phi, np.empty_like(self._phi)])
            self._norms = np.concatenate([self._norms, np.empty_like(self._norms)])
        self._phi[k], self._norms[k] = phi, float(phi @ phi)
        self.entries.append(entry)

    def take(self, i: int) -> tuple[tuple[str, int, F64, float], F64]:
        last = len(self.entries) - 1
        entry, phi = self.entries[i], self._phi[i].copy()
        self.entries[i], self._phi[i], self._norms[i] = (
            self.entries[last],
            self._phi[last],
            self._norms[last],
        )
        self.entries.pop()
        return entry, phi


def curator(agent: Agent, plan: CuratorPlan) -> Behaviour:
    """The trusted, parsimonious curator (Algorithm 3, steps 3–10)."""
    out = CuratorOutcome()
    d = plan.hash1.dimension
    rng_q, rng_m, rng_a = agent.rng("quantise"), agent.rng("mwem"), agent.rng("auction")
    got = yield from agent.receive(ValidationSet, deadline=agent.now + plan.timeout)
    if got is None:
        out.status, out.detail = "aborted", "no validation set from the consumer"
        return out
    dv = np.asarray(got.message.points)
    if dv.ndim != 2 or dv.shape[1] != plan.hash1.omega.shape[1] or len(dv) == 0:
        out.status, out.detail = "aborted", f"validation set of shape {dv.shape}"
        return out
    agent.remember("validation", dv)
    quantised_v = quantise(plan.hash1(dv) * plan.scale, plan.eta, rng_q).sum(0)
    g_tilde = _release(
        MarginalMwem(d, plan.eta),
        quantised_v,
        len(dv),
        plan.t_init,
        plan.epsilon_validation,
        plan,
        rng_m,
    )
    out.validation_released = True
    for o in plan.owners:
        agent.send(o, HashBroadcast(epoch=0, size=len(dv), vector=g_tilde))

    phi_seed = plan.hash1(plan.seed_points)
    quantised_s = quantise(phi_seed * plan.scale, plan.eta, rng_q).sum(0)
    mwem = MarginalMwem(d, plan.eta)
    pool = _Pool(d)  # points asked for and not yet used
    live = list(plan.owners)
    for epoch in range(1, plan.summary_size + 1):
        if not live and not pool:
            break
        first = epoch == 1
        n = len(plan.seed_points) + epoch - 1  # public: |D_s| had every epoch added a point
        g = _release(
            mwem,
            quantised_s,
            n,
            plan.t_init if first else plan.t_sub,
            plan.epsilon_first if first else plan.epsilon_summary,
            plan,
            rng_m,
        )
        out.epochs = epoch
        for o in live:
            agent.send(o, HashBroadcast(epoch=epoch, size=n, vector=g))
        bids: dict[str, Bid] = {}
        deadline = agent.now + plan.timeout
        while len(bids) < len(live):
            b = yield from agent.receive(Bid, deadline=deadline)
            if b is None:
                break
            if b.message.epoch == epoch and b.src in live:
                bids[b.src] = b.message
        silent = [o for o in live if o not in bids]
        out.dropped.extend(silent)
        live = [o for o in live if o in bids]
        out.bidders.append(len(bids))
        bidders = list(bids)
        asked = draw_asks(
            [bids[o].value for o in bidders],
            plan.auction_epsilon,
            rng_a,
            insist=[bids[o].repeats >= plan.tau for o in bidders],
            variant=plan.auction,
        )
        chosen = [o for o, a in zip(bidders, asked, strict=True) if a]
        out.asks.append(len(chosen))
        for o in chosen:
            agent.send(o, Ask(epoch=epoch))
        waiting = set(chosen)
        deadline = agent.now + plan.timeout
        while waiting:
            p = yield from agent.receive(Point, deadline=deadline)
            if p is None:
                break
            waiting.discard(p.src)
            x = np.asarray(p.message.features)
            phi = plan.hash1(x[None, :])
            if p.message.epoch == epoch:  # step 8: verify against the bid
                check = bid_scores(phi, np.einsum("ij,ij->i", phi, phi), g_tilde, g, n)[0]
                if abs(check - p.message.bid) > VERIFY_TOLERANCE * (1.0 + abs(check)):
                    out.rejected += 1
                    continue
            agent.remember(f"point-{p.src}-{p.message.epoch}", x)
            pool.add((p.src, p.message.epoch, x, p.message.label), phi[0])
        if not pool:
            out.empty += 1
            continue
        scores = bid_scores(pool.features, pool.norms, g_tilde, g, n)
        (src, asked_in, x, label), phi_best = pool.take(int(np.argmax(scores)))
        out.picks.append((src, asked_in))
        out.points.append(x)
        out.labels.append(label)
        quantised_s = quantised_s + quantise(phi_best * plan.scale, plan.eta, rng_q)
    points = np.stack(out.points) if out.points else np.zeros((0, plan.seed_points.shape[1]))
    agent.send(plan.consumer, Summary(points=points, labels=np.asarray(out.labels)))
    for o in plan.owners:
        agent.send(o, Done(epochs=out.epochs))
    out.status = "released"
    return out
