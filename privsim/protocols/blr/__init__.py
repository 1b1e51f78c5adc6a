"""DP Bayesian linear regression by sufficient statistic perturbation (Heikkilä et al.
2017, §3.2), with data projection (Algorithm 2) and distributed noise through DCA.

Each training record is one client. The methods run side by side on one split: the
non-private baselines (NP, proj NP), a trusted curator (TA, proj TA), DCA secure sums
on the bus (DDP, proj DDP: :mod:`privsim.kit.securesum`) and input perturbation. Each
method is an alternative release with its own ledger; the run reports the weakest
private method's guarantee.
"""

from __future__ import annotations

from typing import Any

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import check_secure_sum
from privsim.kit.spec import ProtocolSpec, StudyView
from privsim.protocols.blr.config import BlrConfig
from privsim.protocols.blr.experiment import check_data, run_blr
from privsim.protocols.blr.report import report_lines
from privsim.protocols.blr.study_checks import METHOD_STYLE, figures, flatten, sections
from privsim.scenarios.schema import Scenario

__all__ = ["BLR", "METHOD_STYLE", "PROTOCOLS"]


def _check(scenario: Scenario) -> None:
    """Theorem 1's N > T + 1 and DCA's two compute nodes (the DDP methods' secure sums)."""
    check_secure_sum(scenario, scenario.population.clients)


STUDY = StudyView(
    method_metrics={
        "accuracy.mae": "test MAE",
        "privacy.achieved_epsilon": "achieved ε",
        "communication.bytes": "bytes on the wire",
        "included": "clients included",
        "privacy.guarantee_met": "share of runs within the (ε, δ) budget",
    },
    axes={
        "dca.tolerated": ("tolerated dropped-or-colluding clients T", False),
        "blr.std_share": ("share of the budget for the marginal stds", False),
        "blr.synthetic_dimension": ("dimension d", False),
    },
    figures=figures,
    sections=sections,
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
    check=_check,
    preflight=check_data,
    report=report_lines,
    flatten=flatten,
    study=STUDY,
    exposure={},
)

PROTOCOLS = (BLR,)
