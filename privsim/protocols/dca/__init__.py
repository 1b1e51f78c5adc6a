"""DCA secure summation with distributed Gaussian noise (Heikkilä et al., NeurIPS 2017,
Algorithm 1) and its trusted-aggregator baseline, as protocols.

The round itself is the secure-sum kit (:mod:`privsim.kit.securesum`), which other
protocols call too; this package runs it on synthetic client vectors (``[data]``) and
reports its accuracy, privacy, cost and what the coalition could reconstruct.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.maths import client_noise_std
from privsim.kit.securesum.round import (
    OUTPUT_PARTY,
    check_fixed_point,
    check_secure_sum,
    node_names,
    secure_sum_bytes,
    secure_sum_seconds,
)
from privsim.kit.spec import PARTY_BYTES, FigureKit, Footprint, Numbered, ProtocolSpec, StudyView
from privsim.protocols.dca.attacks import ATTACKS
from privsim.protocols.dca.audit import audit_plan, curator_audit_plan
from privsim.protocols.dca.config import DataConfig
from privsim.protocols.dca.report import report_lines
from privsim.protocols.dca.run import _delivery as delivery
from privsim.protocols.dca.run import plan_ledger, run_dca, run_trusted_aggregator, sensitivity
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma

__all__ = ["DCA", "PROTOCOLS", "TRUSTED_AGGREGATOR"]

COST_METRICS = (
    "communication.bytes",
    "communication.roles.client.bytes_sent_mean",
    "communication.roles.compute.bytes_received_mean",
)


def _check(scenario: Scenario) -> None:
    """Theorem 1's N > T + 1, two compute nodes, a delivery that can record the
    coalition's view, and a fixed-point range that holds the noisy sum."""
    check_secure_sum(scenario, scenario.population.clients)
    try:
        delivery(scenario)
    except ValueError as exc:
        raise FieldError(
            "dca.delivery", str(exc).split(";")[0], "use delivery = 'per_message' or 'auto'"
        ) from None
    data = scenario.table("data", DataConfig)
    privacy, n = scenario.privacy, scenario.population.clients
    sigma = _unit_sigma(privacy.epsilon, privacy.delta, privacy.calibration) * sensitivity(scenario)
    cfg = scenario.table("dca", DcaConfig)
    check_fixed_point(scenario, n, data.clip_norm, client_noise_std(sigma, n, cfg.tolerated))
    resolution = 2.0**-cfg.fraction_bits
    if data.clip_norm < 1024 * resolution:
        raise FieldError(
            "data.clip_norm",
            f"{data.clip_norm:g} is below 1024 steps of the fixed-point resolution "
            f"2^-{cfg.fraction_bits} = {resolution:.3g}: the encoded values would keep "
            "fewer than 10 bits (or round to 0)",
            "raise data.clip_norm (scale the data up), or raise dca.fraction_bits",
        )


@functools.lru_cache(maxsize=1024)
def _unit_sigma(epsilon: float, delta: float, calibration: str) -> float:
    """σ for sensitivity 1 (σ is linear in the sensitivity), cached: a study's cells
    share their budgets."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # classic calibration's warning belongs to the run
        return gaussian_sigma(epsilon, delta, 1.0, calibration)


def _parties(scenario: Scenario) -> dict[str, Sequence[str]]:
    """``client-0`` … ``client-(N−1)``, ``compute-0`` … ``compute-(M−1)`` and the
    ``aggregator``. The trusted aggregator has no compute nodes but accepts their names
    (and ignores them), so one scenario serves both protocols in a study grid."""
    return {
        "client": Numbered("client", scenario.population.clients),
        "compute": node_names(scenario),
        "aggregator": (OUTPUT_PARTY,),
    }


def _footprint(scenario: Scenario) -> Footprint:
    """Peak memory ≈ N·P + N·d·8·(M+2) with per-message delivery; batched, N·(512 +
    72·M), N·(512 + 264·M) with sealed channels, plus a few chunks
    (:func:`~privsim.kit.securesum.round.secure_sum_bytes`); or N·P + N·d·8·2
    for the trusted aggregator (every client's vector at the curator), as the protocol
    or as the baseline, if larger (the two run one after the other); P = PARTY_BYTES
    per party."""
    n, d = scenario.population.clients, scenario.table("data", DataConfig).dimension
    m = scenario.population.compute_nodes
    total = 0
    formula = ""
    sealed = scenario.network.encryption == "aes-gcm"
    if scenario.protocol == "dca":
        batched = delivery(scenario) == "batched"
        total += secure_sum_bytes(n, m, d, batched=batched, sealed=sealed)
        per_message = "(72 + 192)·M" if sealed else "72·M"
        formula = (
            "N·P + N·d·8·(M+2)" if not batched else f"N·(512 + {per_message}) + chunks of d·8·M"
        )
    curator = n * PARTY_BYTES + n * d * 16
    if (scenario.protocol != "dca" or scenario.baseline) and curator > total:
        total, formula = (
            curator,
            "N·P + N·d·8·2, the trusted-aggregator baseline; baseline = false leaves it out",
        )
    # The field that grew most from the quickstart's N = 2000, d = 20.
    field = "data.dimension" if d / 20 > n / 2000 else "population.clients"
    # wall time: only aes-gcm seals and agrees keys (sized charges bytes, not wall time)
    encrypted = scenario.network.encryption == "aes-gcm"
    seconds = 0.0
    if scenario.protocol == "dca":
        batched = delivery(scenario) == "batched"
        seconds += secure_sum_seconds(n, m, d, batched=batched, encrypted=encrypted)
    if scenario.protocol != "dca" or scenario.baseline:  # one message per client, in full
        seconds += secure_sum_seconds(n, 1, d, batched=False, encrypted=encrypted)
    return Footprint(total, field, f"{formula}, N = {n}, d = {d}, M = {m}", seconds)


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

#: The coalition's estimate of an honest target's input (release minus every other input
#: minus its members' noise), :func:`privsim.protocols.dca.run.target_error`.
TARGET_EXPOSURE = {
    "honest_noise_shares": "H, honest clients whose noise share is in the release",
    "target_error_rmse": "measured RMSE (per coordinate) of the coalition's estimate of an "
    "honest target's input, knowing every other input; None if nothing was released",
    "target_error_sd_theory": "its theoretical sd √H·σ_i (σ for the curator, 0 if it colludes)",
    "target_noise_ratio": "H·σ_i²/σ²: the estimate's variance over the trusted aggregator's "
    "(≥ 1 while colluders + dropouts ≤ T)",
}

#: Classic calibration at ε = 31.62, δ = 1e-4 under-noises (it delivers ε ≈ 52.8).
CLASSIC_OVER_BUDGET = {
    "privacy.calibration": "classic",
    "privacy.epsilon": 31.62,
    "privacy.delta": 1e-4,
}

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
    plan=plan_ledger,
    check=_check,
    parties=_parties,
    footprint=_footprint,
    report=report_lines,
    study=STUDY,
    exposure={
        "inputs_reconstructed": "honest clients whose z_i + η_i the coalition reconstructs "
        "(every compute node's share, or t Shamir shares)",
        **TARGET_EXPOSURE,
    },
    overspend=CLASSIC_OVER_BUDGET,
    audit=audit_plan,
    attacks=ATTACKS,
    example=EXAMPLE,
)


def _no_nodes(scenario: Scenario) -> None:
    """A curator needs no compute nodes and no noise scaling for T."""


TRUSTED_AGGREGATOR = dataclasses.replace(
    DCA,
    name="trusted_aggregator",
    summary="a trusted curator sums the clients' vectors and adds Gaussian noise once",
    run=run_trusted_aggregator,
    check=_no_nodes,
    exposure={
        "inputs_reconstructed": "honest clients whose z_i a colluding curator received",
        **TARGET_EXPOSURE,
    },
    audit=curator_audit_plan,
    attacks={},
    example={**EXAMPLE, "name": "trusted-aggregator-example", "protocol": "trusted_aggregator"},
)

PROTOCOLS = (DCA, TRUSTED_AGGREGATOR)
