"""(DP) block coordinate descent on vertically partitioned data (de Jong, Kamphorst &
Kroes 2022, Algorithms 1–2), as a protocol.

k parties hold disjoint column blocks of the same records (party 0 the label) and pass
the remainder round-robin, each taking a local (perturbed) least-squares step; the run
reports the published model's R² and AAPD against the centralised solution, the steps'
locally sensitive ε from the ledger, the cost and the remainders the adversary received.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privsim.data.registry import DataError, DataFormatError
from privsim.kit.spec import PARTY_BYTES, Footprint, ProtocolSpec, StudyView
from privsim.protocols.bcd.attacks import ATTACKS
from privsim.protocols.bcd.audit import audit_plan
from privsim.protocols.bcd.config import BcdConfig
from privsim.protocols.bcd.data import load_partitioned
from privsim.protocols.bcd.experiment import party_names, plan_ledger, run_bcd
from privsim.protocols.bcd.figures import draw_study
from privsim.protocols.bcd.maths import LocalBlock
from privsim.protocols.bcd.reference import paper_values
from privsim.protocols.bcd.report import report_lines
from privsim.protocols.bcd.study_checks import bcd_sections
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = ["BCD", "PROTOCOLS"]


def _check(scenario: Scenario) -> None:
    """The coalition names parties of the ring; BCD has no clients to draw it from."""
    names = party_names(scenario.table("bcd", BcdConfig))
    unknown = sorted(set(scenario.threat.colluding_servers) - set(names))
    if unknown:
        raise FieldError(
            "threat.colluding_servers",
            f"BCD has no party {unknown[0]!r}",
            f"name parties among {list(names)}",
        )
    clients = scenario.threat.colluding_clients
    if isinstance(clients, int) and clients > 0:
        raise FieldError(
            "threat.colluding_clients",
            f"BCD has no clients to draw {clients} colluders from",
            'name the colluding parties in threat.colluding_servers, e.g. ["party-1"]',
        )
    if not isinstance(clients, int) and set(clients) - set(names):
        raise FieldError(
            "threat.colluding_clients",
            f"BCD has no party {sorted(set(clients) - set(names))[0]!r}",
            f"name parties among {list(names)}",
        )


def _preflight(scenario: Scenario) -> None:
    """Named data (registry or CSV) load, split into the parties' blocks, each of full
    column rank. Synthetic data are drawn per replication and need nothing."""
    cfg = scenario.table("bcd", BcdConfig)
    if cfg.dataset == "synthetic":
        return
    try:
        data = load_partitioned(cfg, np.random.default_rng(0))
    except (DataError, DataFormatError) as exc:
        field = "bcd.csv_path" if cfg.dataset == "csv" else "bcd.dataset"
        raise FieldError(field, str(exc), "correct the file, its columns or the data set") from None
    for j in range(cfg.parties):
        try:
            LocalBlock.of(data.block(j))
        except ValueError as exc:
            raise FieldError(
                f"bcd.blocks[{j}]", f"party-{j}'s block: {exc}", "give the party other columns"
            ) from None


def _parties(scenario: Scenario) -> dict[str, Sequence[str]]:
    """The ring: ``party-0`` (the label owner) … ``party-(k−1)``, role ``party``."""
    return {"party": party_names(scenario.table("bcd", BcdConfig))}


def _footprint(scenario: Scenario) -> Footprint:
    """Peak memory ≈ N·p·8·(k+4) + k·P: the records (N × p predictors) and each of the k
    parties' copy of its block, remainders and projections; P = PARTY_BYTES per party.
    The registered data sets are small (at most 1197 × 27); a CSV is counted as read."""
    cfg = scenario.table("bcd", BcdConfig)
    n = cfg.records if cfg.dataset == "synthetic" else 0
    total = n * cfg.predictors * 8 * (cfg.parties + 4) + cfg.parties * PARTY_BYTES
    field = "bcd.records" if n >= cfg.predictors * cfg.parties else "bcd.predictors"
    # Time: T·k steps, each a least-squares step on one block (about N·p²/k flops at
    # ~1 ns each) and one message (STEP_SECONDS of engine and perturbation work).
    rows = max(n, 1200)  # the registered data sets have at most 1197 records
    steps = cfg.iterations * cfg.parties
    seconds = steps * (rows * cfg.predictors**2 / cfg.parties * 1e-9 + STEP_SECONDS)
    return Footprint(
        total,
        field,
        f"N·p·8·(k+4), N = {n}, p = {cfg.predictors}, k = {cfg.parties}",
        seconds,
        "bcd.iterations",
    )


#: Engine, perturbation and bookkeeping time per BCD step (measured ~0.3 ms; rounded up).
STEP_SECONDS = 1e-3


def _flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """Iterations and steps, the centralised reference, the column names and the R² after
    each iteration (for the coefficient and R²-by-iteration figures)."""
    bcd = result["bcd"]
    return {
        "bcd": {
            "iterations": bcd["iterations"],
            "steps": bcd["steps"],
            "reference": dict(bcd["reference"]),
            "dataset": {"columns": list(bcd["dataset"]["columns"])},
            "r2_by_iteration": list(bcd["r2_by_iteration"]),
        }
    }


STUDY = StudyView(
    metrics={
        "accuracy.r2": "R² of the published model (in sample)",
        "bcd.reference.r2_central": "R² of the centralised least-squares solution",
        "accuracy.aapd": "AAPD of β against the centralised solution",
        "accuracy.beta_abs_error": "mean |β̂ − β*| against the centralised solution",
    },
    axes={
        "bcd.records": ("number of records N", True),
        "bcd.correlation": ("correlation between predictors", False),
        "bcd.r_squared": ("R² of the data-generating model", False),
        "bcd.gamma": ("loss scaling γ", False),
    },
    figures=draw_study,
    sections=bcd_sections,
    reference=paper_values,
)

EXAMPLE: dict[str, Any] = {
    "name": "bcd-example",
    "seed": 3,
    "protocol": "bcd",
    "population": {"clients": 2},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "network": {"encryption": "none"},
    "threat": {"colluding_servers": ["party-1"]},
    "bcd": {"records": 200, "predictors": 4, "parties": 2, "iterations": 2},
}

BCD = ProtocolSpec(
    name="bcd",
    summary="(DP) block coordinate descent on vertically partitioned data (de Jong et al. 2022)",
    tables={"bcd": BcdConfig},
    run=run_bcd,
    plan=plan_ledger,
    example=EXAMPLE,
    audit=audit_plan,
    attacks=ATTACKS,
    check=_check,
    preflight=_preflight,
    parties=_parties,
    footprint=_footprint,
    report=report_lines,
    flatten=_flatten,
    study=STUDY,
    exposure={
        "remainders_received": "remainder vectors v the coalition received from parties "
        "outside it (each a perturbed y − Xβ in DP-BCD)",
        "contribution_error": "mean relative error ‖(v − v_out) − Xβ̂(v)‖/‖Xβ̂(v)‖ of the "
        "coalition's reconstruction of an honest neighbour's fitted part from the remainders "
        "it sent and received back: 0 for plain BCD, growing as ε falls for DP-BCD; None "
        "when it received none",
    },
    overspend={"bcd.step_budget": "whole"},  # every step spends ε: kT·ε in all
)

PROTOCOLS = (BCD,)
