"""Distributed private sketching on the bus: the three release modes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsim.api import run
from privsim.protocols.race.distributed import gamma_noise
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
    assert cells * 8 <= local["race"]["bytes_per_owner"] < cells * 8 + 200
    assert 3 * cells * 8 <= dca["race"]["bytes_per_owner"] < 3 * (cells * 8 + 200)


def test_dropouts_with_dca_tolerating_them_and_without():
    absent = {"faults": {"absent_parties": ["owner-1"]}}
    tolerant = run(_scenario("dca", 6, dca={"tolerated": 1}, **absent), 3).to_dict()
    assert tolerant["status"] == "released" and tolerant["parties"]["included"] == 5
    # 5 honest Gamma shares of Lap(b) split over K − T = 5: still exactly Laplace(b)
    assert tolerant["privacy"]["guarantee_met"]
    strict = run(_scenario("dca", 6, **absent), 3).to_dict()
    assert strict["status"] == "aborted"  # more missing owners than T = 0
    local = run(_scenario("local", 6, **absent), 3).to_dict()
    assert local["status"] == "released" and local["parties"]["included"] == 5


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


def test_pure_laplace_releases_report_the_target_epsilon_at_delta_zero_exactly():
    # Laplace(R/ε) on every cell is ε-DP (Lemma 3.1): the ledger composes pure events by
    # the basic theorem, so the reported pair is (ε, 0) exactly, in every mode.
    for mode in ("local", "curator", "dca"):
        r = run(_scenario(mode, 4, dca={"tolerated": 1}), 5).to_dict()
        assert r["privacy"]["achieved_epsilon"] == 1.0
        assert r["privacy"]["delta"] == 0.0
        assert r["privacy"]["guarantee_met"] is True
        assert r["coalition"]["exposure"]["cells_known_exactly"] == 0


def test_a_colluding_curator_voids_the_guarantee():
    r = run(_scenario("curator", 4, threat={"colluding_servers": ["aggregator"]}), 6).to_dict()
    assert r["status"] == "released"
    assert r["privacy"]["achieved_epsilon"] == "inf"
    assert r["privacy"]["guarantee_met"] is False
    assert r["coalition"]["exposure"]["cells_known_exactly"] == 40 * 200
    (event,) = r["privacy"]["events"]
    assert event["broken"] is True and event["trusted_parties"] == ["aggregator"]


def test_local_noise_trusts_nobody_so_a_colluding_aggregator_changes_nothing():
    r = run(_scenario("local", 4, threat={"colluding_servers": ["aggregator"]}), 6).to_dict()
    assert r["privacy"]["achieved_epsilon"] == 1.0 and r["privacy"]["delta"] == 0.0
    assert r["privacy"]["guarantee_met"] is True
    assert r["coalition"]["exposure"]["cells_known_exactly"] == 0


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_dca_holds_unless_every_compute_node_colludes(noise):
    # race delivers shares per message, so the colluding nodes' view is recorded.
    nodes = ["compute-0", "compute-1", "compute-2"]
    some = run(
        _scenario("dca", 6, race={"noise": noise}, threat={"colluding_servers": nodes[:2]}), 7
    ).to_dict()
    assert some["privacy"]["guarantee_met"] is True
    assert some["coalition"]["exposure"]["cells_known_exactly"] == 0
    every = run(
        _scenario("dca", 6, race={"noise": noise}, threat={"colluding_servers": nodes}), 7
    ).to_dict()
    assert every["status"] == "released"
    assert every["privacy"]["achieved_epsilon"] == "inf"
    assert every["privacy"]["guarantee_met"] is False
    assert every["coalition"]["exposure"]["cells_known_exactly"] == 40 * 200
    assert every["coalition"]["view_complete"] is True
    # the noise and the release are the same; only what the coalition knows differs
    assert every["accuracy"] == some["accuracy"]


def test_gamma_split_laplace_needs_k_minus_t_honest_shares():
    # K = 6, T = 1: Lap(b) needs 5 honest Gamma shares; one colluding owner leaves 5,
    # two leave 4 (not credited with any guarantee).
    one = run(_scenario("dca", 6, dca={"tolerated": 1}, threat={"colluding_clients": 1}), 8)
    assert one.to_dict()["privacy"]["achieved_epsilon"] == 1.0
    two = run(_scenario("dca", 6, dca={"tolerated": 1}, threat={"colluding_clients": 2}), 8)
    assert two.to_dict()["privacy"]["achieved_epsilon"] == "inf"
    assert two.to_dict()["privacy"]["guarantee_met"] is False


def test_an_aborted_secure_sum_releases_nothing_and_spends_nothing():
    r = run(_scenario("dca", 6, faults={"absent_parties": ["owner-1"]}), 3).to_dict()
    assert r["status"] == "aborted" and r["abort"]["reason"] == "too_many_dropouts"
    assert r["accuracy"] is None and r["parties"]["included"] is None
    assert r["privacy"]["achieved_epsilon"] == 0.0 and r["privacy"]["guarantee_met"] is True


def test_secure_sum_checks_apply_to_dca_mode_only():
    from privsim.protocols.race.config import RaceConfig
    from privsim.scenarios.loader import ScenarioError

    with pytest.raises(ScenarioError, match=r"dca\.tolerated"):
        _scenario("dca", 3, dca={"tolerated": 2})
    with pytest.raises(ScenarioError, match=r"population\.compute_nodes"):
        _scenario("dca", 4, population={"clients": 4, "compute_nodes": 1})
    # a curator or local noise needs no secure sum
    assert _scenario("curator", 3, dca={"tolerated": 2}).table("race", RaceConfig).mode == "curator"


def test_result_sections_report_and_study_row():
    from privsim import registry

    spec = registry.get("race")
    r = run(_scenario("dca", 4), 9).to_dict()
    assert r["race"] == {
        "mode": "dca",
        "noise": "laplace",
        "owners": 4,
        "bytes_per_owner": r["communication"]["roles"]["client"]["bytes_sent_mean"],
    }
    assert set(r["accuracy"]) == {"mre_vs_nonprivate_sketch", "noise_sd_per_cell"}
    assert r["privacy"]["details"]["laplace_scale"] == pytest.approx(40.0)
    assert spec.flatten(r) == {"race": {"bytes_per_owner": r["race"]["bytes_per_owner"]}}
    lines = spec.report(r)
    assert any("KDE mean relative error" in line for line in lines)
    assert not any(line.startswith(("Privacy", "Traffic")) for line in lines)
