"""DP Bayesian linear regression by sufficient statistic perturbation (Heikkilä et al.
2017, §3.2), with data projection (Algorithm 2) and distributed noise through DCA.

Each training record is one client. The methods run side by side on one split: the
non-private baselines (NP, proj NP), a trusted curator (TA, proj TA), DCA secure sums
on the bus (DDP, proj DDP: :mod:`privsim.kit.securesum`) and input perturbation. Each
method is an alternative release with its own ledger; the run reports the weakest
private method's guarantee.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import (
    OUTPUT_PARTY,
    check_secure_sum,
    node_names,
    secure_sum_bytes,
    secure_sum_seconds,
)
from privsim.kit.spec import PARTY_BYTES, Footprint, Numbered, ProtocolSpec, StudyView
from privsim.protocols.blr.attacks import ATTACKS
from privsim.protocols.blr.audit import audit_plan
from privsim.protocols.blr.config import BlrConfig
from privsim.protocols.blr.experiment import check_data, run_blr
from privsim.protocols.blr.reference import figure2_reference
from privsim.protocols.blr.report import report_lines
from privsim.protocols.blr.study_checks import METHOD_STYLE, figures, flatten, sections
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = ["BLR", "METHOD_STYLE", "PROTOCOLS"]


def _check(scenario: Scenario) -> None:
    """Theorem 1's N > T + 1 and DCA's two compute nodes (the DDP methods' secure sums);
    synthetic data must hold the training and test records."""
    check_secure_sum(scenario, scenario.population.clients)
    cfg = scenario.table("blr", BlrConfig)
    need = scenario.population.clients + cfg.test
    if cfg.dataset == "synthetic" and need > cfg.synthetic_records:
        raise FieldError(
            "blr.synthetic_records",
            f"{cfg.synthetic_records} records cannot hold population.clients = "
            f"{scenario.population.clients} training and blr.test = {cfg.test} test records",
            f"set synthetic_records >= {need}, or lower population.clients or blr.test",
        )


def _parties(scenario: Scenario) -> dict[str, Sequence[str]]:
    """A client per training record (``client-0`` … ``client-(N−1)``), the compute nodes
    and the ``aggregator``."""
    return {
        "client": Numbered("client", scenario.population.clients),
        "compute": node_names(scenario),
        "aggregator": (OUTPUT_PARTY,),
    }


def _dimension(cfg: BlrConfig) -> int:
    if cfg.dataset == "synthetic":
        return cfg.synthetic_dimension
    if cfg.dataset == "csv":
        return len(cfg.features)
    return 30  # every registered data set has fewer features


def _footprint(scenario: Scenario) -> Footprint:
    """Peak memory ≈ the largest of: the data, R·(d+1)·8·4 (R records: read, scaled,
    split); the DDP secure sums of k = (d+1)(d+2)/2 statistics per client,
    N·k·8·2 + the batched round (:func:`~privsim.kit.securesum.round.secure_sum_bytes`);
    the threshold search, G²·d²·8·4 + N·G·8·2 (G = grid_points); P = PARTY_BYTES per
    client throughout."""
    cfg = scenario.table("blr", BlrConfig)
    n, m, d = scenario.population.clients, scenario.population.compute_nodes, _dimension(cfg)
    records = cfg.synthetic_records if cfg.dataset == "synthetic" else n + cfg.test
    k = (d + 1) * (d + 2) // 2
    g = cfg.grid_points
    data_field = "blr.synthetic_records" if cfg.dataset == "synthetic" else "population.clients"
    terms = [
        (records * (d + 1) * 32, data_field),
        (
            n * k * 16 + secure_sum_bytes(n, m, k, batched=True),
            "blr.synthetic_dimension" if d > 50 else "population.clients",
        ),
        (g * g * d * d * 32 + n * g * 16, "blr.grid_points"),
    ]
    peak, field = max(terms)
    total = peak + n * PARTY_BYTES
    # Time: the threshold search, G²·repeats posteriors of dimension d+1 (about 30 µs
    # each at d = 8, growing as d³), and the secure sums: one round of k words per
    # client for DDP, two for proj DDP.
    search = g * g * cfg.grid_repeats * 30e-6 * ((d + 1) / 9) ** 3
    # wall time: only aes-gcm seals and agrees keys (sized charges bytes, not wall time)
    encrypted = scenario.network.encryption == "aes-gcm"
    rounds = ("DDP" in cfg.methods) + 2 * ("proj_DDP" in cfg.methods)
    sums = rounds * secure_sum_seconds(n, m, k, batched=True, encrypted=encrypted)
    slow = "blr.grid_points" if search > sums else "population.clients"
    return Footprint(
        total,
        field,
        f"N = {n}, d = {d}, records = {records}, grid {g}²",
        search + sums,
        slow,
    )


STUDY = StudyView(
    method_metrics={
        "accuracy.mae": "test MAE",
        "privacy.achieved_epsilon": "achieved ε",
        "communication.bytes": "bytes on the wire",
        "details.included": "clients included",
        "privacy.guarantee_met": "share of runs within the (ε, δ) budget",
    },
    axes={
        "dca.tolerated": ("tolerated dropped-or-colluding clients T", False),
        "blr.std_share": ("share of the budget for the marginal stds", False),
        "blr.synthetic_dimension": ("dimension d", False),
    },
    figures=figures,
    sections=sections,
    reference=figure2_reference,
)

EXAMPLE: dict[str, Any] = {
    "name": "blr-example",
    "seed": 3,
    "protocol": "blr",
    "population": {"clients": 200, "compute_nodes": 2},
    "privacy": {"epsilon": 1.0, "delta": 1e-4},
    "network": {"encryption": "none"},
    "blr": {
        "dataset": "synthetic",
        "synthetic_dimension": 3,
        "synthetic_records": 300,
        "test": 50,
        "methods": ["NP", "TA", "DDP", "proj_DDP"],
        "grid_points": 4,
        "grid_repeats": 2,
    },
}

BLR = ProtocolSpec(
    name="blr",
    summary="DP Bayesian linear regression with data projection and DCA (Heikkilä et al. 2017)",
    tables={"blr": BlrConfig, "dca": DcaConfig},
    run=run_blr,
    example=EXAMPLE,
    audit=audit_plan,
    attacks=ATTACKS,
    check=_check,
    preflight=check_data,
    parties=_parties,
    footprint=_footprint,
    report=report_lines,
    flatten=flatten,
    study=STUDY,
    exposure={
        "record_error": "‖(x̂, ŷ) − (x, y)‖₂ (up to sign) of an honest client's record as "
        "reconstructed from a distributed method's released statistics by a coalition that "
        "knows every other record; None without a distributed release",
        "record_error_relative": "record_error over ‖(x, y)‖₂",
    },
    # classic calibration at ε = 31.62, δ = 1e-4 under-noises (ε ≈ 52.8 delivered)
    overspend={"privacy.calibration": "classic", "privacy.epsilon": 31.62, "privacy.delta": 1e-4},
)

PROTOCOLS = (BLR,)
