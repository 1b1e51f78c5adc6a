"""Private, mergeable RACE sketches for kernel sums (Coleman & Shrivastava, CCS 2021),
and their distributed release as a protocol: K data owners sketch their shards and the
merged sketch is released with local Laplace noise, through a DCA secure sum with
distributed noise, or by a trusted curator (:mod:`privsim.protocols.race.experiment`).
"""

from __future__ import annotations

from typing import Any

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import check_secure_sum
from privsim.kit.spec import ProtocolSpec, StudyView
from privsim.protocols.race.config import RaceConfig
from privsim.protocols.race.experiment import run_race
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


METRICS = {
    "accuracy.mre_vs_nonprivate_sketch": "mean relative error of the released sketch's KDE",
    "accuracy.noise_sd_per_cell": "noise sd per sketch cell",
    "race.bytes_per_owner": "bytes sent per data owner (mean)",
}

STUDY = StudyView(
    metrics=METRICS,
    axes={"race.owners": ("data owners K", True)},
    headline=(*METRICS, "privacy.achieved_epsilon"),
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
    check=_check,
    report=report_lines,
    flatten=flatten,
    study=STUDY,
    exposure={
        "cells_known_exactly": "sketch cells the coalition sees without the calibrated noise: "
        "all R·W when the curator colludes (raw counts) or every compute node does (each "
        "owner's counts under only its own noise share); 0 otherwise"
    },
    example=EXAMPLE,
)

PROTOCOLS = (RACE,)
