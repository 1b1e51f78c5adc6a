"""The reference mechanism the audit is calibrated on: one Gaussian mechanism.

M(D) = f(D) + N(0, σ²) with |f(D′) − f(D)| = Δ and σ the exact (analytic, Balle & Wang
2018) calibration for (ε, δ). The optimal test thresholds M's output, so the audit's
statistic is M's output itself; how close the bound comes to ε says how tight the audit
can be at a given number of trials.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch
from privsim.sim.calibration import exact_sigma

__all__ = ["gaussian_plan"]


def gaussian_plan(epsilon: float, delta: float, *, sensitivity: float = 1.0) -> AuditPlan:
    """An audit plan of the exactly calibrated Gaussian mechanism (f(D) = 0, f(D′) = Δ)."""
    sigma = exact_sigma(epsilon, delta, sensitivity)

    def trials(_scenario: object, batch: TrialBatch, canary_in: bool) -> npt.NDArray[np.float64]:
        rng = batch.streams(canary_in).generator("mechanism", "noise")
        shift = sensitivity if canary_in else 0.0
        return shift + rng.normal(0.0, sigma, batch.count)

    return AuditPlan(
        neighbours=f"f(D) = 0 and f(D′) = Δ = {sensitivity:g}",
        statistic="the mechanism's output",
        trials=trials,  # type: ignore[arg-type]
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        batch=200_000,
    )
