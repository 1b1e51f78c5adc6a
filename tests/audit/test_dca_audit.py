"""Auditing DCA: the correct implementation stays below its claim; an implementation
without Theorem 1's 1/(N − T − 1) noise scaling is caught when many clients collude."""

from __future__ import annotations

import math

import pytest

from privsim.audit import audit
from privsim.kit.securesum import maths
from privsim.sim.calibration import exact_sigma, gaussian_epsilon
from tests.conftest import make_scenario

#: N = 20 clients, T = 15 tolerated and 15 colluding: 5 honest shares carry the noise.
COLLUDING = {
    "population": {"clients": 20, "compute_nodes": 3},
    "dca": {"tolerated": 15},
    "threat": {"colluding_clients": 15},
}


def _unscaled(sigma_std: float, n_clients: int, tolerated: int) -> float:
    """The bug: σ/√N per client, right only when nobody drops out or colludes."""
    return sigma_std / math.sqrt(n_clients)


def test_correct_dca_stays_below_its_claim():
    result = audit(make_scenario(), 300_000, seed=2)
    assert result.claimed_epsilon <= 1.0 + 1e-9
    assert result.lower_bound < result.claimed_epsilon
    assert result.lower_bound > 0.2  # the audit sees the release (it is not vacuous)


def test_correct_dca_with_colluders_stays_below_its_claim():
    result = audit(make_scenario(**COLLUDING), 300_000, seed=3)
    assert result.claimed_epsilon == pytest.approx(1.0, rel=1e-6)
    assert result.lower_bound < 1.0


def test_unscaled_noise_is_detected(monkeypatch):
    """Bug: σ_i = σ/√N. With 5 honest shares of 20 the release carries 5σ²/20 = σ²/4:
    true ε = 2.15 at δ = 1e-5 for the claimed 1.0 (replace-one, Δ = 2)."""
    sigma = exact_sigma(1.0, 1e-5, 2.0)
    true_eps = gaussian_epsilon(math.sqrt(5 / 20) * sigma / 2.0, 1e-5)
    assert true_eps == pytest.approx(2.15, abs=0.01)
    monkeypatch.setattr(maths, "client_noise_std", _unscaled)
    result = audit(make_scenario(**COLLUDING), 1_000_000, seed=4)
    assert result.claimed_epsilon == pytest.approx(1.0, rel=1e-6)
    assert result.exceeds_claim
    assert result.lower_bound < true_eps  # and the audit is sound for the bug's true ε


def test_audit_refuses_a_release_without_a_guarantee():
    scenario = make_scenario(threat={"colluding_servers": ["compute-0", "compute-1", "compute-2"]})
    with pytest.raises(ValueError, match="nothing to audit"):
        audit(scenario, 1000)
