"""The DCA run's noise follows from the neighbour relation, checked from first principles.

The suite's other noise tests compare the released noise with the run's own ``sigma_std``,
which is derived from the run's own sensitivity: a wrong sensitivity (replace-one Δ = C
instead of 2C: half the noise, and the ledger, which sees only σ/Δ, still reports ε met)
would pass them. Here σ is computed independently of the run: with ||z_i|| <= C,
replacing one client's vector moves Σ z_i by at most ||z - z'|| <= 2C, adding or removing
one moves it by at most C, and the exact Gaussian calibration gives σ = Δ·σ*(ε, δ).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsim.protocols.dca.run import sensitivity, simulate
from privsim.sim.calibration import exact_sigma, gaussian_epsilon
from tests.conftest import make_scenario

C, EPS, DELTA = 1.5, 0.7, 1e-5
N, T, D = 12, 3, 20_000
DELTA_L2 = {"replace_one": 2 * C, "add_remove": C}


def _scenario(neighbour: str, protocol: str):
    return make_scenario(
        protocol=protocol,
        population={"clients": N, "compute_nodes": 3},
        data={"dimension": D, "clip_norm": C},
        privacy={"epsilon": EPS, "delta": DELTA, "neighbour": neighbour},
        dca={"tolerated": T},
        faults={"roles": []},
    )


@pytest.mark.parametrize("neighbour", ["replace_one", "add_remove"])
def test_sensitivity_is_2c_for_replace_one_and_c_for_add_remove(neighbour):
    sc = _scenario(neighbour, "dca")
    assert sensitivity(sc) == DELTA_L2[neighbour]
    # The same with another clip norm: the factor is on C, not a constant.
    other = make_scenario(data={"clip_norm": 0.25}, privacy={"neighbour": neighbour})
    assert sensitivity(other) == DELTA_L2[neighbour] / C * 0.25


@pytest.mark.parametrize("protocol", ["dca", "trusted_aggregator"])
@pytest.mark.parametrize("neighbour", ["replace_one", "add_remove"])
def test_released_noise_variance_matches_sigma_for_the_neighbour_relation(neighbour, protocol):
    """Every client is included (no faults), so the released sum's noise has per-coordinate
    variance v = σ² for the trusted aggregator and v = N σ² / (N − T − 1) for DCA (each
    client adds σ²/(N − T − 1)), with σ = exact_sigma(ε, δ, Δ) computed here. Over
    d = 20,000 coordinates Σ r² / v ~ χ²_d, whose relative sd is sqrt(2/d) = 1%; we accept
    between its 0.05% and 99.95% quantiles (about ±3.3%). Halving Δ divides v by 4 and
    doubling it multiplies v by 4: both are rejected by a wide margin (asserted below)."""
    sc = _scenario(neighbour, protocol)
    sim = simulate(sc, seed=20240601)
    assert sim.outcome.ok and sim.outcome.included.all()
    sigma = exact_sigma(EPS, DELTA, DELTA_L2[neighbour])

    # What the run reports agrees with the first-principles values ...
    privacy = sim.privacy()
    assert privacy.details["sensitivity_l2"] == DELTA_L2[neighbour]
    assert privacy.details["sigma_std"] == pytest.approx(sigma, rel=1e-12)
    assert privacy.guarantee_met

    # ... and so does the noise it actually added.
    residual = sim.outcome.released - sim.included_sum()
    v = sigma**2 if protocol == "trusted_aggregator" else N * sigma**2 / (N - T - 1)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], D)
    statistic = float(np.sum(residual**2) / v)
    assert lo < statistic < hi, (statistic / D, "ratio of measured to expected variance")
    for wrong_delta in (DELTA_L2[neighbour] / 2, DELTA_L2[neighbour] * 2):
        wrong_v = v * (wrong_delta / DELTA_L2[neighbour]) ** 2
        assert not lo < float(np.sum(residual**2) / wrong_v) < hi

    # The ledger's Gaussian event is σ/Δ with this σ (for DCA, Theorem 1: the N − 1 honest
    # shares other than the target's own, each of variance σ²/(N − T − 1)), and the
    # reported ε is that event's.
    event = sim.ledger.entries[0].event
    multiplier = sigma / DELTA_L2[neighbour]
    if protocol == "dca":
        multiplier *= math.sqrt((N - 1) / (N - T - 1))
    assert event.noise_multiplier == pytest.approx(multiplier, rel=1e-12)
    assert privacy.achieved_epsilon == pytest.approx(gaussian_epsilon(multiplier, DELTA), rel=1e-6)
    assert privacy.achieved_epsilon <= EPS * (1 + 1e-9)
