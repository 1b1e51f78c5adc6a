"""Projection thresholds by grid search on auxiliary data (Algorithm 2, step 3; §3.2.1).

Auxiliary data of the real set's size are drawn from the model itself, Eqs. (4)–(6):
x_i ~ N(0, I_d), β ~ N(0, I/λ₀), y_i | x_i ~ N(x_iᵀβ, 1/λ). For every pair of fractions
(p_x, p_y) on the grid, features are projected to ±p_x (their std is 1) and the target to
±p_y·std(y); the sufficient statistics get the Gaussian noise the real round 2 will add —
σ = z·Δ₂(bounds), with Δ₂ from :func:`~privsim.protocols.blr.maths.statistics_sensitivity`
(noise std linear in Δ₂, not in Δ₂²) — and the posterior mean μ is scored by its mean
absolute error on new data from the same model. For x ~ N(0, I) that error is
xᵀ(μ − β) − e ~ N(0, ‖μ − β‖² + 1/λ), so its expected absolute value is exactly
sqrt(2/π) · sqrt(‖μ − β‖² + 1/λ): the score of an infinite held-out set, at no cost. The pair with the lowest error, averaged over the
repeats, is chosen: one threshold for every feature, one for the target, as the paper.

Everything is vectorised over the grid: the projected Gram matrix is computed once per
p_x, Σ x̂ŷ for every p_y in one product, and the 400 noisy posteriors of one repeat are
repaired and solved as one batch. Every grid cell of a repeat uses the same auxiliary
data and the same standard-normal noise draw (common random numbers), so differences
between cells are differences between thresholds, not between draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.protocols.blr.maths import posterior, repair_precision, statistics_sensitivity

__all__ = ["ThresholdChoice", "ThresholdGrid", "search_thresholds"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdGrid:
    """``points`` fractions of the std, evenly spaced on [``low``, ``high``], searched
    jointly for features and target, averaged over ``repeats`` auxiliary data sets."""

    low: float = 0.1
    high: float = 2.1
    points: int = 20
    repeats: int = 20

    @property
    def fractions(self) -> F64:
        return np.linspace(self.low, self.high, self.points)


@dataclass(frozen=True, slots=True)
class ThresholdChoice:
    """The chosen fractions, and the mean auxiliary MAE of every (p_x, p_y) cell."""

    feature: float
    target: float
    errors: F64  # (points, points): rows p_x, columns p_y


def search_thresholds(
    n: int,
    d: int,
    noise_multiplier: float,
    rng: np.random.Generator,
    *,
    grid: ThresholdGrid = ThresholdGrid(),
    prior_precision: float = 1.0,
    noise_precision: float = 1.0,
    neighbour: str = "replace_one",
) -> ThresholdChoice:
    """Grid search for the projection fractions (p_x, p_y) that minimise the auxiliary
    MAE of the DP posterior mean; ``noise_multiplier`` is z = σ/Δ₂ of the round that
    will release the projected statistics (0 for no noise)."""
    fractions = grid.fractions
    p = fractions.size
    iu = np.triu_indices(d)
    k_xx = iu[0].size
    # Δ₂ for bounds (p_x, …, p_x; p_y·s_y) is separable: Δ₂² = a·p_x⁴ + b·p_x²·c_y².
    base_outer = statistics_sensitivity(np.ones(d), 0.0, neighbour) ** 2
    base_cross = statistics_sensitivity(np.ones(d), 1.0, neighbour) ** 2 - base_outer
    errors = np.zeros((p, p))
    for _ in range(grid.repeats):
        beta = rng.standard_normal(d) / np.sqrt(prior_precision)
        x = rng.standard_normal((n, d))
        y = x @ beta + rng.standard_normal(n) / np.sqrt(noise_precision)
        noise = rng.standard_normal(k_xx + d)
        y_bounds = fractions * float(np.std(y))
        y_clipped = np.clip(y[:, None], -y_bounds, y_bounds)  # (n, p_y)
        gram = np.empty((p, d, d))
        xy = np.empty((p, p, d))
        for a, px in enumerate(fractions):
            xc = np.clip(x, -px, px)
            gram[a] = xc.T @ xc
            xy[a] = (xc.T @ y_clipped).T
        sens = np.sqrt(
            base_outer * fractions[:, None] ** 4
            + base_cross * fractions[:, None] ** 2 * y_bounds[None, :] ** 2
        )  # (p_x, p_y)
        scale = noise_multiplier * sens
        sym = np.zeros((d, d))
        sym[iu] = noise[:k_xx]
        sym = sym + np.triu(sym, 1).T
        noisy_gram = gram[:, None] + scale[..., None, None] * sym
        noisy_xy = xy + scale[..., None] * noise[k_xx:]
        means, _ = posterior(
            repair_precision(noisy_gram),
            noisy_xy,
            prior_precision=prior_precision,
            noise_precision=noise_precision,
        )
        squared = np.sum((means - beta) ** 2, axis=-1) + 1.0 / noise_precision
        errors += np.sqrt(2.0 / np.pi) * np.sqrt(squared)
    errors /= grid.repeats
    best_x, best_y = (int(i) for i in np.unravel_index(int(np.argmin(errors)), errors.shape))
    return ThresholdChoice(
        feature=float(fractions[best_x]), target=float(fractions[best_y]), errors=errors
    )
