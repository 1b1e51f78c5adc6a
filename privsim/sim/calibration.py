"""Calibration of the Gaussian mechanism.

Two calibrations of the noise standard deviation for L2 sensitivity Δ and target (ε, δ):

- ``exact`` (default): the smallest σ for which the Gaussian mechanism is (ε, δ)-DP,
  from the analytic characterisation of Balle & Wang (2018), computed by
  ``dp_accounting.get_sigma_gaussian``: σ = Δ · σ*(ε, δ).
- ``classic``: the textbook bound σ = sqrt(2 ln(1.25/δ)) Δ / ε (Dwork & Roth, Thm 3.22;
  Eq. (1) of Heikkilä et al. 2017), kept for faithful reproduction of papers. It is
  proven only for ε < 1; for large ε it under-noises (at δ = 1e-4 from ε ≈ 8 on), which
  :func:`gaussian_sigma` reports with a :class:`ClassicCalibrationWarning`.
"""

from __future__ import annotations

import enum
import math
import warnings

import dp_accounting

__all__ = [
    "Calibration",
    "ClassicCalibrationWarning",
    "classic_sigma",
    "exact_sigma",
    "gaussian_epsilon",
    "gaussian_sigma",
    "split_gaussian",
]


class Calibration(enum.StrEnum):
    EXACT = "exact"
    CLASSIC = "classic"


class ClassicCalibrationWarning(UserWarning):
    """The classic Gaussian formula was used where it is not a proven guarantee."""


def _check(epsilon: float, delta: float, sensitivity: float) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity}")


def exact_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ with (ε, δ)-DP for L2 sensitivity Δ (analytic Gaussian mechanism)."""
    _check(epsilon, delta, sensitivity)
    return float(dp_accounting.get_sigma_gaussian(epsilon, delta)) * sensitivity


def classic_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = sqrt(2 ln(1.25/δ)) Δ / ε — Eq. (1) of Heikkilä et al. (2017)."""
    _check(epsilon, delta, sensitivity)
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """The exact ε at δ of one Gaussian mechanism with σ/Δ = ``noise_multiplier``."""
    if noise_multiplier <= 0:
        return math.inf
    return float(dp_accounting.get_epsilon_gaussian(noise_multiplier, delta))


def gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, method: Calibration | str = "exact"
) -> float:
    """σ for (ε, δ) by ``method``; warns where ``classic`` is not a proven guarantee."""
    method = Calibration(method)
    if method is Calibration.EXACT:
        return exact_sigma(epsilon, delta, sensitivity)
    sigma = classic_sigma(epsilon, delta, sensitivity)
    if epsilon >= 1.0:
        delivered = gaussian_epsilon(sigma / sensitivity, delta)
        verdict = (
            f"it delivers only eps = {delivered:.4g} (exact accounting)"
            if delivered > epsilon * (1 + 1e-9)
            else f"it over-noises here (exact accounting: eps = {delivered:.4g})"
        )
        warnings.warn(
            f"classic Gaussian calibration is proven only for eps < 1; at eps = {epsilon:g}, "
            f"delta = {delta:g} {verdict}. Use calibration = 'exact' for a valid guarantee.",
            ClassicCalibrationWarning,
            stacklevel=2,
        )
    return sigma


def split_gaussian(
    epsilon: float, delta: float, shares: tuple[float, ...], method: Calibration | str = "exact"
) -> tuple[float, ...]:
    """Noise multipliers σ_r/Δ_r for rounds that share one (ε, δ) budget in ``shares``.

    ``exact``: Gaussian mechanisms compose exactly into one Gaussian mechanism with
    μ² = Σ μ_r², μ_r = Δ_r/σ_r (Dong, Roth & Su 2019, Cor. 3.3), so the budget's μ from
    the analytic calibration is split as μ_r² = share_r · μ². The rounds together are then
    exactly (ε, δ)-DP. ``classic``: round r gets (share_r ε, share_r δ) and Eq. (1),
    composed by the basic theorem (the authors' choice; valid only where Eq. (1) is).
    """
    if not shares or any(s <= 0 for s in shares) or abs(sum(shares) - 1.0) > 1e-9:
        raise ValueError(f"budget shares must be positive and sum to 1, got {shares}")
    method = Calibration(method)
    if method is Calibration.EXACT:
        total = exact_sigma(epsilon, delta)
        return tuple(total / math.sqrt(s) for s in shares)
    return tuple(gaussian_sigma(s * epsilon, s * delta, 1.0, method) for s in shares)
