"""Auditing training (fedlearn): every round's aggregate and the final model stay below
the ledger's claim, through a curator and through DCA; the two defects fixed in the
sampled rounds are caught when re-injected — empty-cohort rounds withheld and charged
nothing (trusted), and DCA's own share credited on both sides of the Poisson pair."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w

import privsim.protocols.fedlearn.audit
import privsim.protocols.fedlearn.plan
import privsim.protocols.fedlearn.rounds
from privsim.api import run
from privsim.audit import audit
from privsim.audit.harness import audit_plan, plan_of
from privsim.cli import main
from privsim.kit.audit import TrialBatch
from privsim.protocols.fedlearn.audit import (
    RELEASES,
    RoundsView,
    audited_training,
    plans_of,
    simulate,
    small_audit_scenario,
    view_of,
)
from privsim.protocols.fedlearn.run import Training
from privsim.sim.share_pair import hockey_stick

#: Trials a side: the trusted rounds' 40 Gaussians, DCA's 4 rounds at d = 110 with r².
TRUSTED_TRIALS = 20_000
DCA_TRIALS = 50_000


def _withheld_empty_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 1: a round that nothing reached aborts (nothing released) and is withheld
    in the ledger, charged nothing — though with the target in it, it would release."""
    for module in (privsim.protocols.fedlearn.rounds, privsim.protocols.fedlearn.audit):
        monkeypatch.setattr(module, "releases_empty_rounds", lambda training: False)


def _own_share_on_both_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 2: DCA on a Poisson sample charged as a Poisson-sampled Gaussian of the
    H − 1 other shares, on both sides (the variance the target's own share adds when it
    is sampled, on all d coordinates, missed)."""
    monkeypatch.setattr(
        privsim.protocols.fedlearn.plan.TrainingPlan,
        "own_share_pair",
        property(lambda self: False),
    )


@pytest.fixture(scope="module")
def trusted() -> Training:
    return audited_training(small_audit_scenario("trusted"))


@pytest.fixture(scope="module")
def dca() -> Training:
    return audited_training(small_audit_scenario("dca"))


@pytest.mark.parametrize("release", RELEASES)
def test_trusted_training_stays_below_its_claim(trusted, release):
    """30 clients at q = 0.05, 40 rounds, z = 1: the claim is 40 Poisson-sampled
    Gaussians, ε = 2.47 at δ = 10⁻⁵ (the mechanism's own PLD, so the truth). Bounds at
    2·10⁴ trials a side, seeds 1–8: rounds 0.60–1.19 (seed 2: 0.84), final 0.30–1.09
    (seed 2: 1.09)."""
    scenario = trusted.scenario
    plan = plans_of(trusted)[release]
    result = audit_plan(plan, scenario, TRUSTED_TRIALS, seed=2, release=release)
    assert result.claimed_epsilon == pytest.approx(2.468, abs=0.01)
    assert result.lower_bound < result.claimed_epsilon
    assert result.lower_bound > 0.1  # the audit sees the rounds (it is not vacuous)


@pytest.mark.parametrize("release", RELEASES)
def test_dca_training_stays_below_its_claim(dca, release):
    """20 clients at q = 0.4, 4 rounds of H = 7, 10, 10, 9 honest shares (σ_i = 1.06·C,
    T = 5), d = 110: the claim is the four exact pairs (√H·σ_i against √(H − 1)·σ_i on
    110 coordinates), ε = 6.87 at δ = 10⁻⁵. Bounds at 5·10⁴ trials a side, seeds 1–8:
    rounds 2.30–3.47 (seed 2: 2.73), final 0.20–0.92 (seed 2: 0.46)."""
    plan = plans_of(dca)[release]
    result = audit_plan(plan, dca.scenario, DCA_TRIALS, seed=2, release=release)
    assert result.claimed_epsilon == pytest.approx(6.87, abs=0.02)
    assert result.lower_bound < result.claimed_epsilon
    assert result.lower_bound > 0.2


def test_empty_rounds_withheld_and_charged_nothing_are_caught(monkeypatch):
    """Defect 1 (trusted): the run's 7 rounds that picked nobody abort and are withheld,
    so the claim drops from 2.47 to 2.31 (33 rounds charged); but a round the canary
    alone would reach releases exactly when the canary is sampled: with probability
    1 − 0.95⁷ = 0.30 some round releases that never does on D, so the true ε at
    δ = 10⁻⁵ is infinite. The bound is limited only by the trials: 6.66–6.70 at 2·10⁴ a
    side (seeds 1–8; no false positive, FNR 0.70)."""
    _withheld_empty_rounds(monkeypatch)
    training = audited_training(small_audit_scenario("trusted"))
    view = view_of(training)
    aborted = [r.status == "aborted" for r in training.records]
    assert sum(aborted) == 7
    assert view.release_out.tolist() == [not a for a in aborted]
    assert view.release_in.all()  # the canary's update reaches the curator
    _caught(training, TRUSTED_TRIALS, claim=2.314, floor=5.0)


def test_own_share_credited_on_both_sides_is_caught(monkeypatch):
    """Defect 2 (dca): the rounds charged as Poisson-sampled Gaussians of multiplier
    √(H − 1)·σ_i/Δ = 2.6–3.2 claim ε = 1.24; the rounds (unchanged) are the exact pairs
    whose ε the fixed ledger gives, 6.87. Bound at 5·10⁴ trials a side: 2.30–3.47
    (seeds 1–8; seed 2: 2.73), about twice the claim or more."""
    _own_share_on_both_sides(monkeypatch)
    _caught(audited_training(small_audit_scenario("dca")), DCA_TRIALS, claim=1.24, floor=2.0)


def _caught(training: Any, trials: int, *, claim: float, floor: float) -> None:
    """The rounds' audit (seed 2) finds the defective ``claim`` exceeded, its lower
    bound above ``floor``."""
    result = audit_plan(plans_of(training)["rounds"], training.scenario, trials, seed=2)
    assert result.claimed_epsilon == pytest.approx(claim, abs=0.01)
    assert result.exceeds_claim
    assert result.lower_bound > floor


def test_dca_trials_draw_the_target_and_the_others_shares_of_the_run(dca):
    """Each round's H honest included shares are the target's own and H − 1 others':
    without the canary the release carries the H − 1, with it all H."""
    view = view_of(dca)
    share = dca.plan.noise.share_std / dca.plan.delta_l2
    honest = np.array([r.included for r in dca.records], dtype=np.float64)
    assert honest.tolist() == [7, 10, 10, 9]
    np.testing.assert_allclose(view.s_out**2, (honest - 1) * share**2)
    np.testing.assert_allclose(view.s_in**2, honest * share**2)
    assert view.rate == pytest.approx(0.4) and view.dimension == 110 and view.mismatch


def test_the_claim_is_the_runs_reported_epsilon(trusted):
    """The plans' claim is what ``privsim run`` reports for the scenario at its seed
    (the audit's run evaluates the model only at the end: nothing else changes)."""
    scenario = trusted.scenario
    result = run(scenario, scenario.seed, preflight=False)
    plans = plans_of(trusted)
    for plan in plans.values():
        assert plan.claimed_epsilon == pytest.approx(result.privacy.achieved_epsilon, rel=1e-9)
        assert plan.claimed_delta == pytest.approx(result.privacy.delta)


def _one_round(s_out: float, s_in: float, d: int, q: float) -> RoundsView:
    return RoundsView(
        s_out=np.array([s_out]),
        s_in=np.array([s_in]),
        release_out=np.array([True]),
        release_in=np.array([True]),
        rate=q,
        add_remove=True,
        high=1.0,
        low=0.0,
        dimension=d,
        claimed_epsilon=1.0,
        claimed_delta=1e-5,
        coalition=(),
        aggregation="dca",
    )


def test_the_rounds_statistic_is_the_privacy_loss_of_the_pair():
    """One round of the pair q·N(e₁, 1.2²I) + (1 − q)·N(0, I) against N(0, I) on d = 10
    coordinates: the statistic is the privacy loss L, so E_D[e^L] = 1 and the trials'
    E_D′[(1 − e^{ε − L})₊] is the pair's δ(ε), computed apart by quadrature."""
    view = _one_round(1.0, 1.2, 10, 0.5)
    batch = TrialBatch(seed=3, index=0, count=400_000)
    on_d, _ = simulate(view, batch, False)
    on_d1, _ = simulate(view, batch, True)
    assert np.exp(on_d).mean() == pytest.approx(1.0, abs=0.01)
    for eps in (0.5, 1.0, 2.0):
        found = np.maximum(0.0, 1.0 - np.exp(eps - on_d1)).mean()
        assert found == pytest.approx(hockey_stick(eps, 0.5, 1.2, 1.0, 10), rel=0.03)


def test_a_coalition_that_knows_the_sample_sees_the_canary_in_every_round():
    """A colluding compute node sees who sent it a share: the ledger claims the
    unamplified pairs (q = 1), ε = 8.25 over 2 rounds, and the trials put the canary in
    every round: bounds 3.53–3.98 (seeds 1–4; seed 1: 3.63)."""
    scenario = small_audit_scenario(
        "dca", **{"training.rounds": 2, "threat.colluding_servers": ["compute-0"]}
    )
    training = audited_training(scenario)
    view = view_of(training)
    assert view.rate == 1.0 and "compute-0" in view.coalition
    plan = plans_of(training)["rounds"]
    result = audit_plan(plan, scenario, DCA_TRIALS, seed=1)
    assert result.lower_bound < result.claimed_epsilon
    assert result.lower_bound > 2.0


def test_a_colluding_curator_leaves_nothing_to_audit():
    """The server is the curator: against it the rounds are not private (ε = ∞)."""
    scenario = small_audit_scenario(
        "trusted", **{"training.rounds": 3, "threat.colluding_servers": ["server"]}
    )
    with pytest.raises(ValueError, match="nothing to audit"):
        audit(scenario, 100)


@pytest.mark.parametrize("aggregation", ["local", "secagg_plus"])
def test_aggregations_without_a_model_here_are_refused(aggregation):
    """Local noise and integer noise are refused before any training."""
    scenario = small_audit_scenario("trusted", **{"training.aggregation": aggregation})
    with pytest.raises(ValueError, match="not audited"):
        plan_of(scenario)


def test_cli_audits_the_final_model(tmp_path: Path, capsys):
    path = tmp_path / "fedlearn.toml"
    scenario = small_audit_scenario("trusted", **{"training.rounds": 10})
    path.write_text(tomli_w.dumps(scenario.to_dict()), encoding="utf-8")
    out = tmp_path / "out"
    args = ["audit", str(path), "--trials", "2000", "--release", "final", "--out", str(out)]
    assert main(args) == 0
    assert "release final" in capsys.readouterr().out
    (written,) = out.glob("audit-*-final-*.json")
    row = json.loads(written.read_text())["rows"][0]
    assert row["release"] == "final" and row["lower_bound"] < row["claimed_epsilon"]
