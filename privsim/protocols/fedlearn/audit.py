"""Training under audit: R rounds of DP-FedAvg / DP-SGD (McMahan et al. 2018) through a
trusted curator or DCA's Gaussian shares (Heikkilä et al. 2017, §3), from the view of
the run's coalition.

Adversary: the scenario's coalition (as a run at the scenario's seed draws it), who also
knows every other client's update — the worst case DP allows: every other update is 0.
The target is a canary client whose clipped update is C·e₁ whenever it is sampled (a
model update the clipping lets through unchanged):

- ``add_remove`` (Poisson sampling at rate q): on D the canary is not in the population,
  on D′ it is, sampled into each round with probability q (Δ = C);
- ``replace_one`` (a fixed cohort of m of N): the canary is sampled with probability
  m/N on both sides, its update −C·e₁ on D and +C·e₁ on D′ (Δ = 2C).

Conditioned on the realised run. :func:`~privsim.protocols.fedlearn.run.train` runs once
on the audit scenario at its seed; per round it gives what reached the release and
whether the round released. The trials keep that and draw only the canary's sampling
coin and the noise (in units of Δ, per coordinate):

- ``trusted``: the curator's N(0, σ²I), σ = z·Δ (``central_noise = "mean"``: σ·k/m for
  the k included); with the canary in the round or not. A round that released nothing
  in the run is one that nothing reached, unless the server releases empty rounds
  (:func:`~privsim.protocols.fedlearn.rounds.releases_empty_rounds`, read here as the
  rounds read it): then the canary's update alone makes it release; otherwise it
  failed whatever the cohort, and releases nothing either way.
- ``dca`` (Gaussian shares, σ_i each): the run's H honest included shares are taken as
  the target's own and H − 1 others' (the ledger's own reading, and the worst case for
  the target: as a fresh client beside the H its pair would be (H + 1, H), more
  private). Under Poisson sampling the canary's own share is in the release only when
  it is sampled: N(u, H·σ_i²) with it, N(0, (H − 1)·σ_i²) without, on all d
  coordinates. Under a fixed cohort every slot carries a share on both sides: H·σ_i².

When the coalition knows who was sampled (it holds the server, or with DCA a compute
node that sees who sent it a share) the claim is unamplified, and the trials put the
canary in every round (q = 1), as that claim does.

Releases (:data:`RELEASES`):

- ``rounds``: every round's aggregate (what the next cohort receives as the model; no
  knowledge of who was sampled, so the claim is the amplified one). Statistic: the log
  likelihood ratio of D′ to D given the rounds, Σ_r log(q·e^{g_r} + 1 − q) for
  add/remove, with g_r the log likelihood ratio of the round's "canary in" component to
  its "canary out" distribution — for DCA's variance mismatch, in units of Δ,
  g = −d·ln(s₁/s₀) − ((x₁ − 1)² + r²)/(2s₁²) + (x₁² + r²)/(2s₀²), r² = Σ_{j≥2} x_j² —
  and the ratio of the two mixtures for replace-one. It is the optimal test of a
  product of such pairs (Neyman–Pearson). The d-dimensional noise is drawn as x₁ and
  r² ~ s²·χ²_{d−1}, all the statistic reads (r² only where the variances differ).
  A release that has probability 0 on D (a round only the canary makes release) counts
  :data:`IMPOSSIBLE` for +∞.
- ``final``: the final model, to an outside observer: for FedAvg with a fixed server
  rate and divisor it is the start plus a fixed multiple of the sum of the released
  rounds (FedAdam's is another function of them, which the claim covers alike).
  Statistic: the first coordinate of that sum — simple, not optimal (the optimal test
  of a Gaussian of a binomial mean would weigh the canary's count). Its claim is the
  same ε (post-processing).

Claim: the run's ledger figure against its coalition (``ledger.guarantee(coalition)``),
so an accounting that misses part of what the rounds release is caught by the trials,
which model the mechanism from the noise the rounds draw (the plan's σ and σ_i, the
run's counts), never from the ledger's events.

Audited: ``trusted`` and ``dca`` with Gaussian shares; ``local`` noise and integer noise
(SecAgg, SecAgg+, integer DCA) are refused. Building a plan trains once (the built-in
``fedlearn`` scenario's 30 rounds of 10,000 clients: about a minute); a worker process
(``--workers``, ``--scheduler``) builds it again for each of its batches, so the trials
are fastest in process, the default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, AuditReleases, TrialBatch
from privsim.protocols.fedlearn.accounting import integer_noise, round_label, sensitivity
from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.rounds import releases_empty_rounds
from privsim.protocols.fedlearn.run import Training, train
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import Status
from privsim.sim.streams import Streams

__all__ = [
    "AUDIT",
    "IMPOSSIBLE",
    "RELEASES",
    "RoundsView",
    "audit_plans",
    "audited_training",
    "check_audited",
    "final_plan",
    "plans_of",
    "rounds_plan",
    "simulate",
    "small_audit_scenario",
    "view_of",
]

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

#: The audited releases, the first the default.
RELEASES = ("rounds", "final")
#: Stands in for an infinite log likelihood ratio (an observation impossible on D): far
#: above any sum of finite terms, far below where float64 loses them.
IMPOSSIBLE = 1e6
#: Trials per call of the trial function.
BATCH = 200_000
#: Draws (trials × rounds) taken at once: the memory of a few arrays of this many floats.
DRAWS_PER_CHUNK = 500_000


def small_audit_scenario(aggregation: str, **changes: Any) -> Scenario:
    """The audit tests' small trainings (and the docs' figures): fedlearn's example on a
    Poisson sample (add/remove-one), a fixed noise multiplier (the planner out of the
    way) and a budget that never stops the rounds (the claim is the ledger's figure).
    ``trusted``: 30 clients at q = 0.05 over 40 rounds, z = 1, a softmax model of d = 6
    parameters (2 features, 2 classes); at the seed, 7 rounds pick nobody. ``dca``: 20
    clients at q = 0.4 over 4 rounds, z = 1.5, T = 5 (so σ_i = σ/√2), d = 110
    (10 features, 10 classes): the variance the target's own share adds shows on 110
    coordinates. ``changes`` by dotted field."""
    from privsim.protocols.fedlearn.example import EXAMPLE

    common: dict[str, Any] = {
        "name": f"fedlearn-audit-{aggregation}",
        "training.aggregation": aggregation,
        "training.sampling": "poisson",
        "training.noise_multiplier": 1.0,
        "privacy.neighbour": "add_remove",
        "privacy.on_overspend": "allow",
        "privacy.epsilon": 100.0,  # never refused; the claim is the ledger's figure
    }
    if aggregation == "trusted":
        sizes: dict[str, Any] = {
            "population.clients": 30,
            "training.rate": 0.05,
            "training.rounds": 40,
            "dataset.synthetic_features": 2,
            "dataset.synthetic_classes": 2,
        }
    else:
        sizes = {
            "population.clients": 20,
            "training.rate": 0.4,
            "training.rounds": 4,
            "training.noise_multiplier": 1.5,
            "dataset.synthetic_features": 10,
            "dataset.synthetic_classes": 10,
        }
    return scenario_from_dict(set_fields(dict(EXAMPLE), {**common, **sizes, **changes}))


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundsView:
    """What the trials keep of one run: per round r, the noise's standard deviation per
    coordinate in units of Δ without the canary (``s_out``) and with it (``s_in``),
    whether the round releases without it (``release_out``) and with it
    (``release_in``); the canary's chance to be in a round (``rate``: q, m/N, or 1 when
    the coalition knows the sample), its coordinate on D′ (``high``) and, for
    replace-one, on D (``low``), in units of Δ; the release's ``dimension`` d; and the
    claim."""

    s_out: F64
    s_in: F64
    release_out: B
    release_in: B
    rate: float
    add_remove: bool
    high: float
    low: float
    dimension: int
    claimed_epsilon: float
    claimed_delta: float
    coalition: tuple[str, ...]
    aggregation: str

    @property
    def rounds(self) -> int:
        return int(self.s_out.size)

    @property
    def mismatch(self) -> bool:
        """Whether a round's variance differs with the canary in (DCA on a Poisson
        sample), so that r² = Σ_{j≥2} x_j² carries evidence."""
        return self.dimension > 1 and bool(np.any(self.s_in != self.s_out))


def check_audited(scenario: Scenario) -> None:
    """A ValueError, before any training, for a scenario whose rounds this audit does
    not model: local noise, or integer noise (SecAgg, SecAgg+, integer DCA)."""
    aggregation = scenario.table("training", TrainingConfig).aggregation
    if aggregation not in ("trusted", "dca") or integer_noise(scenario):
        kind = aggregation if aggregation != "dca" else "dca with integer noise (dca.noise)"
        raise ValueError(
            "fedlearn's audit models Gaussian noise on the sum: training.aggregation = "
            f"'trusted', or 'dca' with Gaussian shares; {kind} is not audited"
        )


def view_of(training: Training) -> RoundsView:
    """The :class:`RoundsView` of a finished run (see the module docstring)."""
    check_audited(training.scenario)
    plan, coalition = training.plan, training.coalition
    add_remove = training.scenario.privacy.neighbour == "add_remove"
    entries = {e.label: e for e in training.ledger.entries}
    known = plan.sampling is not None and plan.sampling.known_to(coalition)
    rate = 1.0 if known or plan.sampling is None else plan.sampling.q
    sigma = plan.noise.sigma / plan.delta_l2  # the curator's, in units of Δ
    share = plan.noise.share_std / plan.delta_l2  # one DCA share's
    empties = releases_empty_rounds(plan.training)
    s_out, s_in, rel_out, rel_in = [], [], [], []
    for record in training.records:
        entry = entries.get(round_label(record.round))
        released = entry is not None and entry.status is Status.RELEASED
        if plan.aggregation == "trusted":
            scale = sigma
            if plan.training.central_noise == "mean":
                scale = sigma * (record.included or 0) / plan.noise.cohort
            s_out.append(scale)
            s_in.append(scale)
            # a round withheld by a curator that releases empty rounds failed whatever
            # the cohort; by one that does not, nothing reached it: the canary would
            rel_out.append(released)
            rel_in.append(released or not empties)
            continue
        contributors = () if entry is None or entry.contributors is None else entry.contributors
        honest = sum(1 for c in contributors if c not in coalition)
        if plan.poisson:  # the target is one of the H: its own share only when sampled
            others = max(honest - 1, 0)
            s_out.append(math.sqrt(others) * share)
            s_in.append(math.sqrt(others + 1) * share)
        else:  # a fixed cohort: a share in every slot, the canary's or another's
            s_out.append(math.sqrt(honest) * share)
            s_in.append(math.sqrt(honest) * share)
        rel_out.append(released)
        rel_in.append(released)
    claim = training.ledger.guarantee(coalition)
    return RoundsView(
        s_out=np.asarray(s_out, dtype=np.float64),
        s_in=np.asarray(s_in, dtype=np.float64),
        release_out=np.asarray(rel_out, dtype=bool),
        release_in=np.asarray(rel_in, dtype=bool),
        rate=rate,
        add_remove=add_remove,
        high=1.0 if add_remove else 0.5,
        low=0.0 if add_remove else -0.5,
        dimension=plan.dimension,
        claimed_epsilon=claim.epsilon,
        claimed_delta=claim.delta,
        coalition=tuple(sorted(coalition)),
        aggregation=plan.aggregation,
    )


def _log_density(
    released: B, x1: F64, r2: F64 | None, mean: F64, s: F64, releases: B, d: int
) -> F64:
    """log of one component's density at the observations (trials × rounds), up to
    constants common to every component; per round (column) its canary coordinate
    ``mean``, noise ``s`` and whether it ``releases``: 0 or −∞ for "nothing released";
    for a release N(mean·e₁, s²I_d) at (x₁, r²), or with ``r2`` None the first
    coordinate's N(mean, s²) alone (the other d − 1 then have one variance in every
    component of the round, a common factor)."""
    if np.any(releases & (s <= 0)):
        raise ValueError(
            "a round releases a sum that no honest noise protects: the claim is infinite"
        )
    safe = np.where(releases, s, 1.0)
    quad = (x1 - mean) ** 2 if r2 is None else (x1 - mean) ** 2 + r2
    coordinates = 1 if r2 is None else d
    density = -coordinates * np.log(safe) - quad / (2.0 * safe * safe)
    silent = np.where(released, -math.inf, 0.0)
    return np.asarray(
        np.where(releases, np.where(released, density, -math.inf), silent), dtype=np.float64
    )


def _mixture(
    released: B,
    x1: F64,
    r2: F64 | None,
    view: RoundsView,
    cols: npt.NDArray[np.intp],
    canary: float,
    rate: float,
) -> F64:
    """log density of the rounds ``cols``' observations under rate·in(canary) +
    (1 − rate)·out: the canary in a round with probability ``rate``, its coordinate
    ``canary``·e₁."""
    d = view.dimension
    zero = np.zeros(cols.size)
    outside = _log_density(released, x1, r2, zero, view.s_out[cols], view.release_out[cols], d)
    if rate <= 0:
        return outside
    inside = _log_density(
        released, x1, r2, zero + canary, view.s_in[cols], view.release_in[cols], d
    )
    if rate >= 1:
        return inside
    return np.asarray(
        np.logaddexp(math.log(rate) + inside, math.log1p(-rate) + outside), dtype=np.float64
    )


def simulate(view: RoundsView, batch: TrialBatch, canary_in: bool) -> tuple[F64, F64]:
    """(rounds statistic, final statistic) of ``batch.count`` trials on D′ (``canary_in``)
    or D: per trial and round, the canary's coin, x₁ and (where the variances differ)
    r², each from its own named stream, :data:`DRAWS_PER_CHUNK` at a time."""
    streams: Streams = batch.streams(canary_in)
    cols = np.flatnonzero(view.release_out | view.release_in)  # rounds that can release
    n, q = batch.count, view.rate
    rounds_stat = np.zeros(n)
    final_stat = np.zeros(n)
    if not cols.size:
        return rounds_stat, final_stat
    coins = streams.generator("fedlearn", "canary-sampled")
    noise = streams.generator("fedlearn", "noise", "x1")
    rest = streams.generator("fedlearn", "noise", "r2") if view.mismatch else None
    value = view.high if canary_in else view.low
    step = max(1, DRAWS_PER_CHUNK // cols.size)
    for lo in range(0, n, step):
        k = min(step, n - lo)
        coin = coins.random((k, cols.size)) < q
        if view.add_remove and not canary_in:
            coin[:] = False  # no canary on D
        s = np.where(coin, view.s_in[cols], view.s_out[cols])
        released = np.where(coin, view.release_in[cols], view.release_out[cols])
        x1 = np.where(coin, value, 0.0) + s * noise.standard_normal((k, cols.size))
        x1 = np.where(released, x1, 0.0)
        r2 = None if rest is None else s * s * rest.chisquare(view.dimension - 1, (k, cols.size))
        on_d1 = _mixture(released, x1, r2, view, cols, view.high, q)
        on_d0 = (
            _mixture(released, x1, r2, view, cols, 0.0, 0.0)
            if view.add_remove
            else _mixture(released, x1, r2, view, cols, view.low, q)
        )
        with np.errstate(invalid="ignore"):  # −∞ − (−∞): an observation neither side makes
            term = np.nan_to_num(on_d1 - on_d0, nan=0.0, posinf=IMPOSSIBLE, neginf=-IMPOSSIBLE)
        rounds_stat[lo : lo + k] = np.clip(term, -IMPOSSIBLE, IMPOSSIBLE).sum(axis=1)
        final_stat[lo : lo + k] = x1.sum(axis=1)
    return rounds_stat, final_stat


def _words(view: RoundsView, scenario: Scenario) -> str:
    delta_l2 = sensitivity(scenario)
    c = delta_l2 * view.high  # the clipping bound C
    rate = (
        "in every round (the coalition knows the sample)"
        if view.rate >= 1
        else f"sampled with probability {view.rate:.3g} a round"
    )
    if view.add_remove:
        return (
            f"a canary client sending {c:g}·e₁ when sampled, every other update 0: out of "
            f"the population on D, in it on D′, {rate} (add_remove, Δ₂ = {delta_l2:g})"
        )
    return (
        f"a canary client sending {-c:g}·e₁ on D, {c:g}·e₁ on D′ when sampled, every "
        f"other update 0, {rate} (replace_one, Δ₂ = {delta_l2:g})"
    )


def _plan(view: RoundsView, scenario: Scenario, release: str) -> AuditPlan:
    index = RELEASES.index(release)

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        return simulate(view, batch, canary_in)[index]

    shares = (
        "the realised honest shares per round"
        if view.aggregation == "dca"
        else "the curator's noise every round"
    )
    ratio = (
        "Σ_r log(q·e^g_r + 1 − q)"
        if view.add_remove
        else "Σ_r the log ratio of the two rounds' mixtures"
    )
    statistic = (
        f"log likelihood ratio of D′ to D over the {view.rounds} rounds' aggregates "
        f"({ratio}; {shares}, d = {view.dimension})"
        if release == "rounds"
        else "first coordinate of the sum of the released rounds (the final FedAvg model's "
        "change, up to its fixed scale)"
    )
    return AuditPlan(
        neighbours=_words(view, scenario),
        statistic=statistic,
        trials=trials,
        claimed_epsilon=view.claimed_epsilon,
        claimed_delta=view.claimed_delta,
        coalition=view.coalition,
        batch=BATCH,
    )


def plans_of(training: Training) -> dict[str, AuditPlan]:
    """Both releases' plans, by name, conditioned on the finished run ``training``."""
    view = view_of(training)
    return {release: _plan(view, training.scenario, release) for release in RELEASES}


def audited_training(scenario: Scenario) -> Training:
    """The run the trials condition on: ``scenario`` trained at its seed, the model
    evaluated only after the last round (accuracy plays no part in the audit, and an
    evaluation draws nothing, so every round and the ledger are the run's own)."""
    check_audited(scenario)
    rounds_planned = scenario.table("training", TrainingConfig).rounds
    return train(scenario.replace({"training.eval_every": rounds_planned}), scenario.seed)


def audit_plans(scenario: Scenario) -> dict[str, AuditPlan]:
    """Both releases' plans from one training run of ``scenario`` at its seed."""
    return plans_of(audited_training(scenario))


def rounds_plan(scenario: Scenario) -> AuditPlan:
    """The audit of every round's aggregate (the default release)."""
    return _plan(view_of(audited_training(scenario)), scenario, "rounds")


def final_plan(scenario: Scenario) -> AuditPlan:
    """The audit of the final model alone."""
    return _plan(view_of(audited_training(scenario)), scenario, "final")


#: fedlearn's audited releases, for its spec.
AUDIT = AuditReleases((("rounds", rounds_plan), ("final", final_plan)))
