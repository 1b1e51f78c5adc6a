"""Pure maths of (DP) block coordinate descent for linear regression on vertically
partitioned data (de Jong, Kamphorst & Kroes 2022, Algorithms 1–2, Theorem 1).

A party holding the column block X (N × m, full column rank) receives the remainder v
and takes one local least-squares step on it, Eq. (9):
    β̃ = (XᵀX)⁻¹ Xᵀ (v − b),   v_out = v − X β̃,
with b = 0 (BCD) or an objective perturbation b = l·s (DP-BCD).

Scale of the perturbation length (the paper is ambiguous). The privacy argument after
Eq. (12) bounds the ratio of the probabilities that two neighbouring data sets X₁, X₂
output the same v_out by
    exp[−ε/(2ξ²) ‖v₁,⊥‖²] / exp[−ε/(2ξ²) ‖v₂,⊥‖²] ≤ exp[ε/(2ξ²) ‖v_out‖²] ≤ e^{ε/2},
using ‖v_{i,⊥}‖ ≤ ‖v_out‖ ≤ ξ (the abort rule). This needs the perturbation's density to
fall as exp[−ε ‖b‖²/(2ξ²)], which with b = l·s is the density of Eq. (12): l is the
absolute value of a normal variable with variance ξ²/ε, i.e. standard deviation
ξ/√ε. The prose's "standard deviation ξ/ε" would give exp[−ε²‖b‖²/(2ξ²)] and a bound
e^{ε²/2}, which exceeds e^ε for ε > 2: not ε-DP. So the length's scale is
σ_l = ξ / √ε_step (as the authors' earlier sketch, σ = ξ/√ε_iter), implemented in
:func:`perturbation_scale`. The guarantee is the paper's locally sensitive DP
(Definition 2), for the universe of the data set and its one-record removals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "LocalBlock",
    "aapd",
    "centralised_solution",
    "perturbation",
    "perturbation_scale",
    "r_squared",
    "step_budget",
]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class LocalBlock:
    """One party's columns, factorised once (thin QR) for its repeated local steps."""

    q: F64  # N × m, orthonormal columns spanning col(X)
    r: F64  # m × m, upper triangular, X = QR

    @classmethod
    def of(cls, x: F64) -> LocalBlock:
        x = np.asarray(x, dtype=np.float64)
        n, m = x.shape
        if n <= m:
            raise ValueError(f"a block needs more records than columns (N = {n}, m = {m})")
        q, r = np.linalg.qr(x)
        if np.min(np.abs(np.diag(r))) <= 1e-10 * max(1.0, float(np.max(np.abs(np.diag(r))))):
            raise ValueError(
                "a party's columns are linearly dependent (X is not of full column rank); "
                "drop a column that the others predict exactly"
            )
        return cls(q=q, r=r)

    def solve(self, target: F64) -> F64:
        """β̃ = (XᵀX)⁻¹ Xᵀ target = R⁻¹ Qᵀ target."""
        return np.asarray(np.linalg.solve(self.r, self.q.T @ target), dtype=np.float64)

    def fitted(self, target: F64) -> F64:
        """X (XᵀX)⁻¹ Xᵀ target = Q Qᵀ target."""
        return np.asarray(self.q @ (self.q.T @ target), dtype=np.float64)

    def residual_norm(self, v: F64) -> float:
        """‖v − X β̂‖₂ for the unperturbed step β̂ on v."""
        return float(np.linalg.norm(v - self.fitted(v)))


def step_budget(epsilon: float, parties: int, iterations: int) -> float:
    """Algorithm 2: ε/(2T) per local step for two parties, ε/(kT) for k, so that the k·T
    steps compose (simple composition, Lemma 1) to ε."""
    return epsilon / (parties * iterations)


def perturbation_scale(xi: float, step_epsilon: float) -> float:
    """σ_l = ξ/√ε_step: the standard deviation of the normal variable whose absolute value
    is the perturbation's length (see the module docstring for the derivation)."""
    if not (step_epsilon > 0 and math.isfinite(step_epsilon)):
        raise ValueError(f"the per-step budget must be > 0, got {step_epsilon}")
    return xi / math.sqrt(step_epsilon)


def perturbation(n: int, xi: float, step_epsilon: float, rng: np.random.Generator) -> F64:
    """b = l·s, Eq. (12): s uniform on the sphere S^{N−1}, l = |z| with z ~ N(0, σ_l²)."""
    direction = rng.standard_normal(n)
    direction /= np.linalg.norm(direction)
    length = abs(rng.normal(0.0, perturbation_scale(xi, step_epsilon)))
    return np.asarray(length * direction, dtype=np.float64)


def centralised_solution(x: F64, y: F64) -> F64:
    """The reference β* = (XᵀX)⁻¹Xᵀy on the joined data, Eq. (3)."""
    beta, *_ = np.linalg.lstsq(np.asarray(x, dtype=np.float64), y, rcond=None)
    return np.asarray(beta, dtype=np.float64)


def r_squared(y: F64, predicted: F64) -> float:
    """R² = 1 − ‖y − f‖²/‖y − ȳ‖² (negative when the model is worse than the mean)."""
    y = np.asarray(y, dtype=np.float64)
    centred = y - y.mean()
    return float(1.0 - np.sum((y - predicted) ** 2) / np.sum(centred**2))


def aapd(estimates: F64, reference: F64) -> float:
    """Average absolute proportional distance: the mean over repetitions and
    coefficients of |β̂_j − β_j| / |β_j| (§3.2); ``estimates`` is r × m."""
    est = np.atleast_2d(np.asarray(estimates, dtype=np.float64))
    ref = np.asarray(reference, dtype=np.float64)
    return float(np.mean(np.abs(est - ref) / np.abs(ref)))
