"""Auditing RACE: every release mode stays below its claim; noise of R/(N·ε) and a
curator-mode ledger that forgets to trust the curator are caught."""

from __future__ import annotations

from typing import Any

import pytest

from privsim.audit import audit
from privsim.protocols.race import experiment, private
from privsim.scenarios import scenario_from_dict
from privsim.sim.ledger import Trust

BASE: dict[str, Any] = {
    "name": "race-audit",
    "seed": 5,
    "protocol": "race",
    "population": {"clients": 4, "compute_nodes": 3},
    "privacy": {"epsilon": 1.0, "delta": 1e-5, "neighbour": "add_remove"},
    "network": {"encryption": "none"},
    "dca": {"tolerated": 1},
    "race": {"synthetic_records": 3000, "owners": 4, "rows": 4, "width": 50, "queries": 100},
}


def _scenario(**race: Any) -> Any:
    data = {**BASE, **{k: v for k, v in race.items() if k != "race"}}
    data["race"] = {**BASE["race"], **race.get("race", {})}
    return scenario_from_dict(data)


@pytest.mark.parametrize(
    ("mode", "noise", "neighbour"),
    [
        ("local", "laplace", "add_remove"),
        ("curator", "laplace", "replace_one"),
        ("dca", "laplace", "add_remove"),
        ("dca", "gaussian", "add_remove"),
    ],
)
def test_correct_release_stays_below_its_claim(mode, noise, neighbour):
    scenario = _scenario(
        race={"mode": mode, "noise": noise},
        privacy={"epsilon": 1.0, "delta": 1e-5, "neighbour": neighbour},
        threat={"colluding_clients": 1},
    )
    result = audit(scenario, 200_000, seed=1)
    assert result.lower_bound < result.claimed_epsilon
    assert result.lower_bound > 0.1  # not vacuous


def test_noise_scaled_by_the_data_set_size_is_detected(monkeypatch):
    """Bug: b = R/(N·ε) instead of R/ε, i.e. true ε = N·ε. With N = 10 records and a
    claimed ε = 0.2 the release is 2.0-DP: ten times the claim, well inside what 10⁶
    trials resolve."""
    scenario = _scenario(
        race={"mode": "curator", "synthetic_records": 12, "owners": 2, "queries": 2},
        population={"clients": 2, "compute_nodes": 3},
        privacy={"epsilon": 0.2, "delta": 1e-5, "neighbour": "add_remove"},
    )
    n_records = 10
    correct = private.laplace_scale

    def by_records(rows: int, epsilon: float, neighbour: str = "add_remove") -> float:
        return correct(rows, epsilon, neighbour) / n_records

    assert audit(scenario, 300_000, seed=2).lower_bound < 0.2
    monkeypatch.setattr(private, "laplace_scale", by_records)
    result = audit(scenario, 1_000_000, seed=2)
    assert result.claimed_epsilon == pytest.approx(0.2)
    assert result.exceeds_claim
    assert result.lower_bound < 0.2 * n_records  # sound for the bug's true ε = 2.0


class _ForgetsTheCurator:
    """A ledger trust assumption that forgets the curator: ``each`` trusts nobody."""

    nobody = staticmethod(Trust.nobody)
    one_of = staticmethod(Trust.one_of)

    @staticmethod
    def each(*parties: str, description: str = "") -> Trust:
        return Trust.nobody()


def test_colluding_curator_is_detected_when_the_ledger_forgets_it(monkeypatch):
    """Bug: the curator mode charged as if it trusted nobody. A colluding curator sees
    the raw counts (true ε = ∞); the audit's bound is capped only by the trials
    (ln(n/3.7) ≈ 10 at 10⁵)."""
    scenario = _scenario(race={"mode": "curator"}, threat={"colluding_servers": ["aggregator"]})
    with pytest.raises(ValueError, match="nothing to audit"):
        audit(scenario, 1000)  # the correct ledger claims nothing against this coalition
    monkeypatch.setattr(experiment, "Trust", _ForgetsTheCurator)
    result = audit(scenario, 100_000, seed=3)
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert result.exceeds_claim
    assert result.lower_bound > 9.0
