"""Distributed private sketching on the bus: the three release modes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsim.protocols.race.distributed import gamma_noise
from privsim.runner import run
from privsim.scenarios import scenario_from_dict


def _scenario(mode: str, owners: int, **extra):
    data = {
        "name": "race",
        "protocol": "race",
        "population": {"clients": owners, "compute_nodes": 3},
        "privacy": {"epsilon": 1.0, "delta": 1e-5, "neighbour": "add_remove"},
        "network": {"encryption": "none"},
        "race": {
            "mode": mode,
            "owners": owners,
            "rows": 40,
            "width": 200,
            "synthetic_records": 8000,
            "queries": 200,
            **extra.pop("race", {}),
        },
        **extra,
    }
    return scenario_from_dict(data)


def test_gamma_differences_from_k_owners_add_up_to_one_laplace():
    # KS at level 1e-3 (critical distance 1.949/sqrt(n)) of the sum of K shares against
    # Laplace(b), for K = 2 and 25.
    rng = np.random.default_rng(3)
    n, b = 20_000, 7.0
    for k in (2, 25):
        total = sum(gamma_noise(rng, n, b, k) for _ in range(k))
        assert stats.kstest(total, stats.laplace(scale=b).cdf).statistic < 1.949 / math.sqrt(n)


def test_local_noise_grows_with_k_while_dca_matches_the_curator():
    # Per-cell noise sd: one curator's Laplace(R/ε) has sd sqrt(2)·R/ε = 56.6 for R = 40;
    # local noise from K owners has sqrt(K) times that; DCA's Gamma split has the
    # curator's. Measured over 8,000 cells, the sd has relative error ~1.5% (Laplace
    # kurtosis 6): we allow 10%.
    curator_sd = math.sqrt(2) * 40
    for k in (4, 16):
        local = run(_scenario("local", k), 1).to_dict()
        dca = run(_scenario("dca", k), 1).to_dict()
        curator = run(_scenario("curator", k), 1).to_dict()
        assert local["accuracy"]["noise_sd_per_cell"] == pytest.approx(
            math.sqrt(k) * curator_sd, rel=0.1
        )
        assert dca["accuracy"]["noise_sd_per_cell"] == pytest.approx(curator_sd, rel=0.1)
        assert curator["accuracy"]["noise_sd_per_cell"] == pytest.approx(curator_sd, rel=0.1)
        assert (
            local["accuracy"]["mre_vs_nonprivate_sketch"]
            > dca["accuracy"]["mre_vs_nonprivate_sketch"]
        )
        for r in (local, dca, curator):
            assert r["privacy"]["guarantee_met"]


def test_bytes_per_owner_are_the_sketch_or_its_shares():
    local = run(_scenario("local", 4), 2).to_dict()
    dca = run(_scenario("dca", 4), 2).to_dict()
    cells = 40 * 200
    # one R·W float64 array (plus framing) to the collector; M = 3 shares of R·W words in DCA
    assert cells * 8 <= local["communication"]["bytes_per_owner"] < cells * 8 + 200
    assert 3 * cells * 8 <= dca["communication"]["bytes_per_owner"] < 3 * (cells * 8 + 200)


def test_dropouts_with_dca_tolerating_them_and_without():
    absent = {"faults": {"absent_parties": ["owner-1"]}}
    tolerant = run(_scenario("dca", 6, dca={"tolerated": 1}, **absent), 3).to_dict()
    assert tolerant["status"] == "released" and tolerant["accuracy"]["included"] == 5
    # 5 honest Gamma shares of Lap(b) split over K − T = 5: still exactly Laplace(b)
    assert tolerant["privacy"]["guarantee_met"]
    strict = run(_scenario("dca", 6, **absent), 3).to_dict()
    assert strict["status"] == "aborted"  # more missing owners than T = 0
    local = run(_scenario("local", 6, **absent), 3).to_dict()
    assert local["status"] == "released" and local["accuracy"]["included"] == 5


def test_gaussian_dca_is_accounted_against_the_realised_coalition():
    honest = run(_scenario("dca", 8, race={"noise": "gaussian"}), 4).to_dict()
    assert honest["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)
    colluding = run(
        _scenario("dca", 8, race={"noise": "gaussian"}, threat={"colluding_clients": 3}), 4
    ).to_dict()
    assert colluding["privacy"]["guarantee_met"] is False


def test_owners_and_population_must_agree():
    from privsim.scenarios.loader import ScenarioError

    with pytest.raises(ScenarioError, match=r"population\.clients.*race\.owners"):
        scenario_from_dict(
            {
                "name": "bad",
                "protocol": "race",
                "population": {"clients": 3},
                "privacy": {"epsilon": 1.0, "delta": 1e-5},
                "race": {"owners": 5},
            }
        )
