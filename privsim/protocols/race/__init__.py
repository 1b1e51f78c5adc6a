"""Private, mergeable RACE sketches for kernel sums (Coleman & Shrivastava, CCS 2021),
and their distributed release as a protocol: K data owners sketch their shards and the
merged sketch is released with local Laplace noise, through a DCA secure sum with
distributed noise, or by a trusted curator (:mod:`privsim.protocols.race.experiment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import (
    OUTPUT_PARTY,
    check_fixed_point,
    check_secure_sum,
    node_names,
    secure_sum_seconds,
)
from privsim.kit.spec import PARTY_BYTES, Footprint, Numbered, ProtocolSpec, StudyView
from privsim.protocols.race.attacks import ATTACKS
from privsim.protocols.race.audit import audit_plan
from privsim.protocols.race.config import SKIN_RECORDS, RaceConfig
from privsim.protocols.race.experiment import plan_ledger, run_race
from privsim.protocols.race.private import laplace_scale
from privsim.protocols.race.reference import paper_noise
from privsim.protocols.race.report import flatten, report_lines
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = ["PROTOCOLS", "RACE"]


def _check(scenario: Scenario) -> None:
    """The owners are the population's clients; DCA mode needs a valid secure sum."""
    cfg = scenario.table("race", RaceConfig)
    if scenario.population.clients != cfg.owners:
        raise FieldError(
            "population.clients",
            f"protocol 'race' has {cfg.owners} data owners (race.owners) but "
            f"population.clients = {scenario.population.clients}",
            f"set population.clients = {cfg.owners}: the owners are DCA's clients",
        )
    if cfg.mode == "dca":
        check_secure_sum(scenario, cfg.owners)
        # The noisy sum must fit DCA's fixed-point range: at most a shard's records per
        # cell, plus the run's 40-scale noise margin.
        records = cfg.synthetic_records if cfg.dataset == "synthetic" else SKIN_RECORDS
        shard = -(-(records - cfg.queries) // cfg.owners)
        b = laplace_scale(cfg.rows, scenario.privacy.epsilon, scenario.privacy.neighbour)
        check_fixed_point(scenario, cfg.owners, float(shard), 40 * b)


def _parties(scenario: Scenario) -> dict[str, Sequence[str]]:
    """The owners ``owner-0`` … ``owner-(K−1)`` (role ``client``), the compute nodes
    and the ``aggregator`` (the curator or output party). Compute nodes take part in
    ``dca`` mode only; other modes accept their names and ignore them, so one scenario
    serves every mode in a study grid."""
    cfg = scenario.table("race", RaceConfig)
    return {
        "client": Numbered("owner", cfg.owners),
        "compute": node_names(scenario),
        "aggregator": (OUTPUT_PARTY,),
    }


def _footprint(scenario: Scenario) -> Footprint:
    """Peak memory ≈ R·W·8·K·(M+2) in ``dca`` mode (each owner's counts, noise and M
    shares of the R × W sketch), R·W·8·(2K+2) otherwise, plus the points, n·3·8·4, and
    K·P (P = PARTY_BYTES per party)."""
    cfg = scenario.table("race", RaceConfig)
    k, m = cfg.owners, scenario.population.compute_nodes
    cells = cfg.rows * cfg.width
    copies = k * (m + 2) if cfg.mode == "dca" else 2 * k + 2
    records = cfg.synthetic_records if cfg.dataset == "synthetic" else SKIN_RECORDS
    total = cells * 8 * copies + records * 96 + k * PARTY_BYTES
    # The factor that grew most from the shipped R = 80, W = 1000, K = 10.
    growth = {
        "race.width": cfg.width / 1000,
        "race.rows": cfg.rows / 80,
        "race.owners": k / 10,
        "race.synthetic_records": records / 50_000 if cfg.dataset == "synthetic" else 0,
    }
    field = max(growth, key=lambda f: growth[f])
    formula = "R·W·8·K·(M+2)" if cfg.mode == "dca" else "R·W·8·(2K+2)"
    # Time: hashing n points into R rows (about 6 ns per point and row, benchmarks/
    # bench_race.py), R queries per held-out point, and the release: a DCA round of
    # R·W words per owner, or K sketches of R·W sent whole.
    seconds = (records + cfg.queries) * cfg.rows * 6e-9
    # wall time: only aes-gcm seals and agrees keys (sized charges bytes, not wall time)
    encrypted = scenario.network.encryption == "aes-gcm"
    if cfg.mode == "dca":
        seconds += secure_sum_seconds(k, m, cells, batched=False, encrypted=encrypted)
    else:
        seconds += secure_sum_seconds(k, 1, cells, batched=False, encrypted=encrypted)
    return Footprint(total, field, f"{formula}, R = {cfg.rows}, W = {cfg.width}, K = {k}", seconds)


METRICS = {
    "accuracy.mre_vs_nonprivate_sketch": "mean relative error of the released sketch's KDE",
    "accuracy.noise_sd_per_cell": "noise sd per sketch cell",
    "race.bytes_per_owner": "bytes sent per data owner (mean)",
}

STUDY = StudyView(
    metrics=METRICS,
    axes={"race.owners": ("data owners K", True)},
    headline=(*METRICS, "privacy.achieved_epsilon"),
    reference=paper_noise,
)

EXAMPLE: dict[str, Any] = {
    "name": "race-example",
    "seed": 5,
    "protocol": "race",
    "population": {"clients": 4, "compute_nodes": 3},
    "privacy": {"epsilon": 1.0, "delta": 1e-5, "neighbour": "add_remove"},
    "network": {"encryption": "none"},
    "dca": {"tolerated": 1},
    "race": {
        "mode": "dca",
        "noise": "laplace",
        "dataset": "synthetic",
        "synthetic_records": 3000,
        "owners": 4,
        "rows": 10,
        "width": 50,
        "queries": 100,
    },
}

RACE = ProtocolSpec(
    name="race",
    summary="distributed private RACE sketches: local, DCA secure-sum or curator release "
    "(Coleman & Shrivastava 2021)",
    tables={"race": RaceConfig, "dca": DcaConfig},
    run=run_race,
    plan=plan_ledger,
    check=_check,
    parties=_parties,
    footprint=_footprint,
    report=report_lines,
    flatten=flatten,
    study=STUDY,
    exposure={
        "cells_known_exactly": "sketch cells the coalition sees without the calibrated noise: "
        "all R·W when the curator colludes (raw counts) or every compute node does (each "
        "owner's counts under only its own noise share); 0 otherwise",
        "membership_advantage_bound": "the largest TPR − FPR of any canary-membership test "
        "on the release at the run's ε: (e^ε − 1 + 2δ)/(e^ε + 1), 1 at ε = ∞",
    },
    example=EXAMPLE,
    audit=audit_plan,
    attacks=ATTACKS,
    # Gaussian shares under classic calibration at ε = 31.62 under-noise (ε ≈ 52.8)
    overspend={
        "race.noise": "gaussian",
        "privacy.calibration": "classic",
        "privacy.epsilon": 31.62,
        "privacy.delta": 1e-4,
    },
)

PROTOCOLS = (RACE,)
