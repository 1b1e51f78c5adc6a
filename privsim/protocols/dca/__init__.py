"""DCA secure summation with distributed Gaussian noise (Heikkilä et al., NeurIPS 2017,
Algorithm 1) and its trusted-aggregator baseline, as protocols.

The round itself is the secure-sum kit (:mod:`privsim.kit.securesum`), which other
protocols call too; this package runs it on synthetic client vectors (``[data]``) and
reports its accuracy, privacy, cost and what the coalition could reconstruct.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import check_secure_sum
from privsim.kit.spec import FigureKit, ProtocolSpec, StudyView
from privsim.protocols.dca.config import DataConfig
from privsim.protocols.dca.report import report_lines
from privsim.protocols.dca.run import run_dca, run_trusted_aggregator
from privsim.scenarios.schema import Scenario

__all__ = ["DCA", "PROTOCOLS", "TRUSTED_AGGREGATOR"]

COST_METRICS = (
    "communication.bytes",
    "communication.roles.client.bytes_sent_mean",
    "communication.roles.compute.bytes_received_mean",
)


def _check(scenario: Scenario) -> None:
    check_secure_sum(scenario, scenario.population.clients)


def _figures(kit: FigureKit, summary: Any) -> list[Path]:
    """RMSE and achieved ε against every varied axis but N; cost against N (log–log)."""
    axes = [c for c in summary.columns if c.startswith("grid.") and c != "grid.population.clients"]
    return kit.series(["accuracy.rmse", "privacy.achieved_epsilon"], axes=axes) + kit.series(
        COST_METRICS, axes=["grid.population.clients"], logy=True
    )


STUDY = StudyView(
    metrics={
        "accuracy.rmse": "RMSE of the released sum (per coordinate)",
        "parties.included": "clients included",
        "communication.roles.client.bytes_sent_mean": "bytes sent per client (mean)",
        "communication.roles.compute.bytes_received_mean": "bytes received per compute node (mean)",
        "methods.trusted_aggregator.accuracy.rmse": "RMSE of the trusted aggregator (baseline)",
        "coalition.exposure.inputs_reconstructed": "client inputs the coalition reconstructs",
    },
    axes={
        "dca.tolerated": ("tolerated dropped-or-colluding clients T", False),
        "data.dimension": ("dimension d", True),
    },
    figures=_figures,
)

EXAMPLE: dict[str, Any] = {
    "name": "dca-example",
    "seed": 3,
    "protocol": "dca",
    "population": {"clients": 30, "compute_nodes": 3},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "data": {"dimension": 4, "mean": 0.3},
    "dca": {"tolerated": 3},
    "network": {"encryption": "none"},
}

DCA = ProtocolSpec(
    name="dca",
    summary="DCA secure sum with distributed Gaussian noise (Heikkilä et al. 2017)",
    tables={"data": DataConfig, "dca": DcaConfig},
    run=run_dca,
    check=_check,
    report=report_lines,
    study=STUDY,
    exposure={"inputs_reconstructed": "clients whose z_i + η_i the coalition reconstructs"},
    example=EXAMPLE,
)

TRUSTED_AGGREGATOR = ProtocolSpec(
    name="trusted_aggregator",
    summary="a trusted curator sums the clients' vectors and adds Gaussian noise once",
    tables={"data": DataConfig, "dca": DcaConfig},
    run=run_trusted_aggregator,
    report=report_lines,
    study=STUDY,
    exposure={"inputs_reconstructed": "always 0: a curator needs no secret shares"},
    example={**EXAMPLE, "name": "trusted-aggregator-example", "protocol": "trusted_aggregator"},
)

PROTOCOLS = (DCA, TRUSTED_AGGREGATOR)
