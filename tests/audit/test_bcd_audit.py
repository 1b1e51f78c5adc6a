"""Auditing one DP-BCD step: below the claim where the proof's scale holds, the
prose's length scale ξ/ε_step caught at ε_step = 4, and the abort rule's truncation
measured where it breaks pure ε-DP."""

from __future__ import annotations

from typing import Any

import pytest

from privsim import registry
from privsim.audit import audit
from privsim.protocols.bcd import maths
from privsim.scenarios import scenario_from_dict


def _scenario(records: int, epsilon: float, seed: int = 3, iterations: int = 1) -> Any:
    ex = dict(registry.get("bcd").example)
    return scenario_from_dict(
        {
            **ex,
            "seed": seed,
            "privacy": {"epsilon": epsilon, "delta": 1e-5},
            "bcd": {**ex["bcd"], "records": records, "iterations": iterations},
        }
    )


def _prose_scale(xi: float, step_epsilon: float) -> float:
    """The bug: the prose's standard deviation ξ/ε_step (under-noises for ε_step > 1)."""
    return xi / step_epsilon


def test_correct_step_stays_below_its_claim():
    # N = 1000, two parties, one iteration: ε_step = 0.5 (measured bound 0.29).
    result = audit(_scenario(1000, 1.0), 300_000, seed=1)
    assert result.claimed_epsilon == pytest.approx(0.5)
    assert result.lower_bound < 0.5


def test_prose_length_scale_is_detected(monkeypatch):
    """N = 60 (seed 3), ε_step = 4: the proof's σ_l = ξ/2 audits at 3.2–3.5 < 4 with
    10⁶ trials; the prose's ξ/4 halves the noise and audits at ≥ 6.3, 1.6 times the
    claim (its true ε is at least that)."""
    scenario = _scenario(60, 8.0)
    correct = audit(scenario, 1_000_000, seed=1)
    assert correct.claimed_epsilon == pytest.approx(4.0)
    assert correct.lower_bound < 4.0
    monkeypatch.setattr(maths, "perturbation_scale", _prose_scale)
    buggy = audit(scenario, 1_000_000, seed=1)
    assert buggy.claimed_epsilon == pytest.approx(4.0)
    assert buggy.exceeds_claim


def test_abort_rule_truncation_breaks_pure_dp_at_small_step_budgets():
    """A finding, asserted as measured: on the example's data (N = 200, ε_step = 0.25)
    the abort rule keeps only perturbations with ‖Pb‖ ≤ √(γ² − 1)‖v − Xβ̂‖, so the
    released coefficient has bounded support around β̂; removing the influential record
    moves β̂, and the edge of the support that only D reaches carries ~5·10⁻⁴ of the
    mass: infinite privacy loss there (an (ε, δ) failure with δ ≈ 5·10⁻⁴, not pure ε)."""
    result = audit(_scenario(200, 1.0, iterations=2), 300_000, seed=1)
    assert result.claimed_epsilon == pytest.approx(0.25)
    assert result.claimed_delta == 0.0
    assert result.exceeds_claim
    assert result.test.false_negatives < 50 < result.test.negatives - result.test.false_positives


def test_plain_bcd_has_no_claim_to_audit():
    ex = dict(registry.get("bcd").example)
    scenario = scenario_from_dict({**ex, "bcd": {**ex["bcd"], "method": "bcd"}})
    with pytest.raises(ValueError, match="nothing to audit"):
        audit(scenario, 1000)
