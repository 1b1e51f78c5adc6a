"""Summarization's releases under audit (Sarpatwar et al. 2019): PrivAuction's coins
(the default, ``auction``), and one MWEM iteration of the curator's hash h2 (Algorithm 2,
lines 5–6): its exponential-mechanism choice (``mwem-choice``) and its Laplace
measurement (``mwem-measurement``). ``privsim audit --release NAME`` picks one
(:data:`RELEASES`).

**auction** — one epoch's coins (Algorithm 3, lines 11–17) as the coalition's owners
see them together. Adversary: the owners the scenario names in
``threat.colluding_clients`` (a count T: ``owner-0`` … ``owner-(T−1)``), ``owner-0``
alone when it names none, and any colluding server (a colluding curator sees every bid,
so the ledger claims nothing). Neighbours: the coalition's owners hold the top bids on
D, in order, and the other owners follow by index; one record of the last of those
others changes so that its best bid passes them all — with one owner, D = (1, .5, .2,
.1, …) against D′ = (1, .5, .2, 1.5) at K = 4 (issue #27's counterexample; other K: the
first K of 1, .5, .2, .1, .05, …, the last raised to 1.5). Every coalition owner moves
down one rank (issue #37: k owners see k coins that each shift); their τ-rule asks depend
on their own data only, and would make their view constant, so there are none.
Statistic: k if the top coalition owner is not asked, plus 1 for each other coalition
owner not asked (larger: D′); its thresholds are "the top one not asked" (the paper's
coins ask it always on D) and "not all asked" (the private coins' extreme: all asked is
e^{k·ε_auc} likelier on D). One owner: 1 if it is not asked. Trials: the
implementation's coins (:func:`~privsim.protocols.summarization.auction.draw_ask_matrix`)
for the scenario's ``summarization.auction``, ε_auc and K, vectorised.
Claim: the ledger's guarantee for one epoch's ``auction`` entry against the coalition,
the owners its viewers (:func:`~privsim.protocols.summarization.accounting.viewers`):
k·ε_auc (δ = 0) for the private coins; for the paper's, the paper's claim, ε_auc-DP per
owner (Theorem 2; what privsim reported before issue #27), composed the same way. The
ledger records the paper's auction as (ε_auc, 1 − e^{−ε_auc}) per epoch;
:func:`auction_plan` with that δ audits the record instead.

**mwem-choice** and **mwem-measurement** — the first iteration of D_v's MWEM
(ε = ``summarization.epsilon_validation``; the summary's iterations are the same
mechanism at ε_ℓ) from the uniform start, where every expected coordinate is 0 and the
scores are ψ_i = |w(D_Q, i)|. The adversary receives the broadcast (``owner-0``, with
any colluding server); the canary is one record of D_v, whose quantised vector moves
each coordinate sum by at most Δ (1 for add/remove, 2 for replace-one: a record with
entries ±1, or one such record replaced by its negation), the Δ the run passes to MWEM.

- choice: on D the sums are w = (V, W, …, W), on D′ (V + Δ, W − Δ, …, W − Δ) (W ≥ Δ, both
  sums of ±1 entries): coordinate 0's score rises by Δ and every other falls by Δ, the
  exponential mechanism's worst case, where "coordinate 0 chosen" has probability
  1/(1 + A) on D and 1/(1 + A·e^{−ε}) on D′ with A = (d − 1)·e^{ε(W − V)/(2Δ)}. A
  bounded-range mechanism's two log-ratios sum to ε here, so the test approaches ε only
  on a rare event: W − V is chosen (a multiple of 2Δ) to put A near :data:`CHOICE_ODDS`
  (coordinate 0 chosen about 5 % of the time on D). Statistic: 1 if coordinate 0 is
  chosen (every other coordinate is alike).
- measurement: coordinate 0's sum is 0 on D and Δ on D′. Statistic: the measurement μ
  (Neyman–Pearson optimal for Laplace noise: a threshold on μ).

Trials replay the implementation: :meth:`MarginalMwem.run` for one iteration with a
probe in place of the curator's generator (:class:`_Probe`), which gives the
exponential mechanism's inverse-CDF draw u and the measurement's standard Laplace
value x. The choice is a nondecreasing function of u, so the probability of coordinate
0 is the edge of {u : coordinate 0}, found by bisection; the measurement is affine in
x, read at two values. Vectorised trials then draw u ~ U[0, 1) and x ~ Laplace(0, 1)
from the batch's stream: the implementation's law, whatever its noise scale, its Δ or
its weights (a bug there shows in the trials). q = 10⁶ (public), so the measurement's
clip to [−q, q] never acts.
Claim: the ledger's (ε, δ) for the iteration's choice (``BoundedRangeDpEvent``) or
measurement (``LaplaceDpEvent``), the leaves of
:func:`~privsim.protocols.summarization.accounting.iteration_event`, charged alone with
the curator's trust against the coalition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, AuditReleases, TrialBatch, TrialFn
from privsim.protocols.summarization import accounting
from privsim.protocols.summarization.auction import draw_ask_matrix
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.protocols.summarization.mwem import MarginalMwem, MwemStep
from privsim.scenarios.schema import Scenario
from privsim.sim.events import BoundedRangeDpEvent, GenericPureDpEvent
from privsim.sim.ledger import PrivacyLedger

__all__ = [
    "CHOICE_ODDS",
    "OBSERVER",
    "RELEASES",
    "auction_claim",
    "auction_plan",
    "audit_plan",
    "choice_plan",
    "choice_probability",
    "choice_sums",
    "measurement_plan",
    "neighbouring_bids",
]

F64 = npt.NDArray[np.float64]
#: The top owner on D, whose view is audited when no owner colludes.
OBSERVER = "owner-0"
#: The bids on D, by owner, before truncation to K; D′ raises the last to RAISED.
BIDS = (1.0, 0.5, 0.2, 0.1)
RAISED = 1.5
#: The choice audit's odds A against coordinate 0 on D: chosen with probability
#: 1/(1 + A) ≈ 5 %, rare enough for the test to approach ε (ln((1 + A)/(1 + A·e^{−ε})),
#: 0.92 of ε = 1) and common enough for 10⁵ trials to count it well.
CHOICE_ODDS = 19.0
#: The public number of quantised vectors q: the sums stay well inside [−q, q].
PUBLIC_COUNT = 1_000_000


def neighbouring_bids(owners: int, top: Sequence[int] = (0,)) -> tuple[F64, F64]:
    """(D, D′) by owner: the owners ``top`` hold the top bids on D, in that order, the
    others follow by index; on D′ the last of the others passes them all, so each of
    ``top`` moves down one rank (one owner: rank 1 → 2)."""
    first = list(dict.fromkeys(top))
    rest = [k for k in range(owners) if k not in first]
    if owners < 2:
        raise ValueError("one owner: no other owner's record can move its rank")
    if not rest:
        raise ValueError("every owner colludes: no other owner's record is left to protect")
    tail = BIDS[-1] * 0.5 ** np.arange(1, max(owners - len(BIDS), 0) + 1)
    d = np.empty(owners, dtype=np.float64)
    d[first + rest] = np.concatenate([BIDS, tail])[:owners]
    d_prime = d.copy()
    d_prime[rest[-1]] = RAISED
    return d, d_prime


def auction_plan(
    variant: str,
    epsilon_auc: float,
    owners: int,
    *,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    coalition: tuple[str, ...] = (OBSERVER,),
) -> AuditPlan:
    """The audit of one epoch's ``variant`` coins against a claimed (ε, δ), as the
    owners among ``coalition`` see them (``owner-0`` if it holds none)."""
    names = accounting.owner_names(owners)
    top = [names.index(p) for p in coalition if p in names] or [names.index(OBSERVER)]
    d, d_prime = neighbouring_bids(owners, top)
    weights = np.ones(len(top))
    weights[0] = len(top)  # the top one not asked outweighs all the others

    def trials(_scenario: Scenario | None, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator("summarization", "auction")
        asks = draw_ask_matrix(d_prime if canary_in else d, epsilon_auc, rng, batch.count, variant)
        return np.asarray(~asks[:, top] @ weights, dtype=np.float64)

    first, others = names[top[0]], ", ".join(names[k] for k in top[1:])
    mover = names[int(np.flatnonzero(d != d_prime)[0])]
    statistic = f"{len(top)} if {first} is not asked" + (
        f", plus 1 for each not asked among {others}" if others else ""
    )
    return AuditPlan(
        neighbours=f"bids {tuple(d.tolist())} against {tuple(d_prime.tolist())}: one record "
        f"of {mover} moves its bid past {', '.join(names[k] for k in top)} (each down one "
        "rank)",
        statistic=f"{statistic} ({variant} auction, ε_auc = {epsilon_auc:g})",
        trials=trials,  # type: ignore[arg-type]
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        coalition=coalition,
        batch=200_000,
    )


def _colluding_owners(scenario: Scenario, cfg: SummarizationConfig) -> tuple[str, ...]:
    """The owners the audit's adversary holds: the scenario's colluding clients (a count
    T: the first T owners, the worst case here), ``owner-0`` when it names none."""
    colluding = scenario.threat.colluding_clients
    names = accounting.owner_names(cfg.owners)
    if isinstance(colluding, int):
        return names[:colluding] or (OBSERVER,)
    return tuple(p for p in colluding if p in names) or (OBSERVER,)


def auction_claim(
    scenario: Scenario, coalition: Sequence[str], event: dp_accounting.DpEvent
) -> tuple[float, float]:
    """The ledger's (ε, δ) against ``coalition`` for one epoch's auction entry charged as
    :func:`~privsim.protocols.summarization.accounting.charge` charges it (trusting the
    curator, the owners its viewers), each owner's coin ``event``."""
    cfg = scenario.table("summarization", SummarizationConfig)
    p = scenario.privacy
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow", neighbour=p.neighbour)
    ledger.charge(
        accounting.AUCTION,
        event,
        trust=accounting.TRUST,
        viewers=accounting.viewers(accounting.AUCTION, cfg),
    )
    ledger.settle(accounting.AUCTION)
    g = ledger.guarantee(coalition)
    return g.epsilon, g.delta


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one epoch's auction (see the module docstring)."""
    cfg = scenario.table("summarization", SummarizationConfig)
    coalition = (*_colluding_owners(scenario, cfg), *scenario.threat.colluding_servers)
    # The private coins: the ledger's event; the paper's: its ε_auc-DP claim per owner.
    event = (
        accounting.auction_event(cfg)
        if cfg.auction == "private"
        else GenericPureDpEvent(cfg.auction_epsilon)
    )
    epsilon, delta = auction_claim(scenario, coalition, event)
    return auction_plan(
        cfg.auction,
        cfg.auction_epsilon,
        cfg.owners,
        claimed_epsilon=epsilon,
        claimed_delta=0.0 if math.isinf(epsilon) else delta,
        coalition=coalition,
    )


def _mwem_sensitivity(scenario: Scenario) -> float:
    """Δ of a coordinate sum, as the run passes it to MWEM: 2 for replace-one, else 1."""
    return 2.0 if scenario.privacy.neighbour == "replace_one" else 1.0


def _iteration_leaf(epsilon: float, kind: type) -> dp_accounting.DpEvent:
    """The leaf of ``kind`` in the ledger's event for one MWEM iteration."""
    event = accounting.iteration_event(epsilon)
    parts = event.events if isinstance(event, dp_accounting.ComposedDpEvent) else [event]
    found = [e for e in parts if isinstance(e, kind)]
    if len(found) != 1:
        raise ValueError(f"the ledger's MWEM iteration {event!r} has no single {kind.__name__}")
    return found[0]


def _mwem_plan(
    scenario: Scenario,
    event: dp_accounting.DpEvent,
    *,
    neighbours: str,
    statistic: str,
    trials: TrialFn,
) -> AuditPlan:
    """The audit of one MWEM sub-release, ``event``: claimed as the ledger's (ε, δ) for
    ``event`` alone, trusting the curator, against the broadcast's receiver and any
    colluding server."""
    p = scenario.privacy
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow", neighbour=p.neighbour)
    ledger.charge("mwem-iteration", event, trust=accounting.TRUST)
    ledger.settle("mwem-iteration")
    coalition = (OBSERVER, *scenario.threat.colluding_servers)
    g = ledger.guarantee(coalition)
    return AuditPlan(
        neighbours=neighbours,
        statistic=statistic,
        trials=trials,
        claimed_epsilon=g.epsilon,
        claimed_delta=g.delta,
        coalition=coalition,
        batch=500_000,
    )


class _Probe:
    """Stands in for the curator's generator in one MWEM iteration: ``random()`` gives
    ``u`` (the exponential mechanism's inverse-CDF draw), ``laplace(loc, scale)`` gives
    loc + scale·``x`` (the measurement at the standard Laplace value x)."""

    __slots__ = ("u", "x")

    def __init__(self, u: float, x: float) -> None:
        self.u, self.x = u, x

    def random(self) -> float:
        return self.u

    def laplace(self, loc: float = 0.0, scale: float = 1.0) -> float:
        return loc + scale * self.x

    def __getattr__(self, name: str) -> object:
        raise AttributeError(
            f"MWEM now draws with {name}(): the audit's probe replays random() and laplace() "
            "only; update privsim/protocols/summarization/audit.py"
        )


def _step(
    target: F64, eta: float, epsilon: float, sensitivity: float, u: float, x: float
) -> MwemStep:
    """The implementation's first MWEM iteration on coordinate sums ``target`` (q public)
    with the probe's draws u and x."""
    mwem = MarginalMwem(target.size, eta)
    probe = cast(np.random.Generator, _Probe(u, x))
    _, steps = mwem.run(target, PUBLIC_COUNT, 1, epsilon, sensitivity, probe)
    return steps[0]


def choice_probability(target: F64, eta: float, epsilon: float, sensitivity: float) -> float:
    """P(coordinate 0 is chosen) in the implementation's first iteration: the length of
    {u ∈ [0, 1) : coordinate 0}, an interval from 0 (the choice is nondecreasing in u),
    found by bisection to double precision."""
    if _step(target, eta, epsilon, sensitivity, 0.0, 0.0).coordinate != 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-16:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _step(target, eta, epsilon, sensitivity, mid, 0.0).coordinate == 0:
            lo = mid
        else:
            hi = mid
    return lo


def choice_sums(dimension: int, epsilon: float, sensitivity: float) -> tuple[F64, F64]:
    """(w on D, w on D′) for the choice audit: (V, W, …, W) and (V + Δ, W − Δ, …), W − V
    the multiple 2Δm of 2Δ that puts A = (d − 1)·e^{ε·m} nearest :data:`CHOICE_ODDS`, and
    V, W ≥ 0 with W ≥ Δ (V = 2Δ·max(0, 1 − m))."""
    if dimension < 2:
        raise ValueError("one coordinate: the exponential mechanism has nothing to choose")
    limit = PUBLIC_COUNT // (8 * int(sensitivity))
    m = round((math.log(CHOICE_ODDS) - math.log(dimension - 1)) / epsilon)
    m = max(-limit, min(limit, m))
    v = 2.0 * sensitivity * max(0, 1 - m)
    w = v + 2.0 * sensitivity * m
    d = np.full(dimension, w)
    d[0] = v
    d_prime = d - sensitivity
    d_prime[0] = v + sensitivity
    return d, d_prime


def choice_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one MWEM choice (see the module docstring)."""
    cfg = scenario.table("summarization", SummarizationConfig)
    eps, delta_w = cfg.epsilon_validation, _mwem_sensitivity(scenario)
    d, d_prime = choice_sums(cfg.dimension, eps, delta_w)
    chance = {
        side: choice_probability(w, cfg.eta, eps, delta_w)
        for side, w in ((False, d), (True, d_prime))
    }

    def trials(_scenario: Scenario | None, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator("summarization", "mwem", "choice")
        return np.asarray(rng.random(batch.count) < chance[canary_in], dtype=np.float64)

    return _mwem_plan(
        scenario,
        _iteration_leaf(eps, BoundedRangeDpEvent),
        neighbours=f"D_v's coordinate sums ({d[0]:g}, {d[1]:g}, …) on D and ({d_prime[0]:g}, "
        f"{d_prime[1]:g}, …) on D′ (d = {cfg.dimension}): one record moves each by Δ = "
        f"{delta_w:g}, coordinate 0's score up, the others' down",
        statistic=f"1 if MWEM's first choice is coordinate 0 (ε = {eps:g}; P = "
        f"{chance[False]:.3g} on D, {chance[True]:.3g} on D′)",
        trials=trials,
    )


def measurement_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one MWEM measurement (see the module docstring)."""
    cfg = scenario.table("summarization", SummarizationConfig)
    eps, delta_w = cfg.epsilon_validation, _mwem_sensitivity(scenario)
    affine: dict[bool, tuple[float, float]] = {}
    for side in (False, True):
        target = np.zeros(cfg.dimension)
        target[0] = delta_w if side else 0.0
        at = {x: _step(target, cfg.eta, eps, delta_w, 0.0, x) for x in (-1.0, 0.0, 1.0)}
        if any(step.coordinate != 0 for step in at.values()):
            raise ValueError("MWEM's first choice at u = 0 is not coordinate 0: update the audit")
        a, b = at[0.0].measured, at[1.0].measured - at[0.0].measured
        if not math.isclose(at[-1.0].measured, a - b, rel_tol=1e-9, abs_tol=1e-9):
            raise ValueError("MWEM's measurement is not affine in its Laplace draw")
        affine[side] = (a, b)

    def trials(_scenario: Scenario | None, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator("summarization", "mwem", "measurement")
        a, b = affine[canary_in]
        return np.asarray(a + b * rng.laplace(0.0, 1.0, batch.count), dtype=np.float64)

    scale = affine[False][1]
    return _mwem_plan(
        scenario,
        _iteration_leaf(eps, dp_accounting.LaplaceDpEvent),
        neighbours=f"D_v's coordinate-0 sum is 0 on D and Δ = {delta_w:g} on D′ (one record)",
        statistic=f"MWEM's first measurement of coordinate 0 (ε = {eps:g}, Laplace scale "
        f"{scale:.4g} as drawn)",
        trials=trials,
    )


#: The audited releases, the auction first (the default of ``privsim audit``).
RELEASES = AuditReleases(
    (("auction", audit_plan), ("mwem-choice", choice_plan), ("mwem-measurement", measurement_plan))
)
