"""The curator's private hash h2 (Sarpatwar et al. 2019, Algorithm 2): randomised
rounding onto a grid, then MWEM (Hardt, Ligett & McSherry 2012) over distributions on
S^d, released as the average distribution's expected vector.

Reconstruction of the garbled text, as implemented:

- Quantisation (lines 10–13): a hashed vector v ∈ [−√(2/d), √(2/d)]^d is scaled by
  √(d/2) into [−1, 1]^d; each coordinate x goes to the grid point above it,
  −1 + (k+1)η with k = ⌊(x + 1)/η⌋, with probability (x − (−1 + kη))/η, and to the one
  below otherwise, so E[Q(x)] = x (unbiased rounding). The grid is
  S = {−1, −1 + η, …, 1}, so η must divide 2.
- MWEM (lines 3–8): w(D_Q, i) = Σ_j ṽ_{j,i} is the i-th coordinate sum over the q
  quantised vectors and w(P, i) = q·Σ_s s·P_i(s). Each iteration samples a coordinate by
  the exponential mechanism with score ψ_i = |w(P_{t−1}, i) − w(D_Q, i)| — with weights
  exp(ε·ψ_i/(2Δ)), the standard ε-DP form (the text's exp(ε·ψ_i) would be 2ε-DP at
  Δ = 1) — measures it as μ = w(D_Q, i) + Lap(Δ/ε), and reweights
  P_t(s) ∝ P_{t−1}(s)·exp(s_i·(μ − w(P_{t−1}, i))/(2q)). Δ is the coordinate sum's
  sensitivity: 1 for add/remove neighbours (q public), 2 for replace-one.
  μ is clipped to [−q, q], the range of w: post-processing, so the multiplicative step
  stays within a factor e^{±1} however small ε is.
- The update multiplies by a function of s_i alone, so from the uniform start P stays a
  product of d marginals: the state is a d × |S| array, never |S|^d points. P_avg's
  expected vector is the average of the P_t's expected vectors.
- Release (line 9): h2(D) = √(2/d)·(1/q)·w(P_avg) — the mean hashed vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["MarginalMwem", "MwemStep", "grid", "measure", "quantise"]

F64 = npt.NDArray[np.float64]


def grid(eta: float) -> F64:
    """S = {−1, −1 + η, …, 1} (η divides 2)."""
    steps = round(2.0 / eta)
    return np.linspace(-1.0, 1.0, steps + 1)


def quantise(v: F64, eta: float, rng: np.random.Generator) -> F64:
    """Unbiased randomised rounding of values in [−1, 1] onto the grid of step η."""
    x = np.clip(np.asarray(v, dtype=np.float64), -1.0, 1.0)
    steps = round(2.0 / eta)
    k = np.minimum(np.floor((x + 1.0) / eta), steps - 1)
    low = -1.0 + k * eta
    up = rng.random(x.shape) < (x - low) / eta
    return np.asarray(low + up * eta, dtype=np.float64)


def measure(
    target: F64, i: int, epsilon: float, sensitivity: float, rng: np.random.Generator
) -> float:
    """Line 6's noisy measurement μ = w(D_Q, i) + Lap(Δ/ε) (ε-DP), before clipping."""
    return float(target[i] + rng.laplace(0.0, sensitivity / epsilon))


@dataclass(frozen=True, slots=True, kw_only=True)
class MwemStep:
    """One iteration's choices: the coordinate and the (clipped) measurement."""

    coordinate: int
    measured: float


class MarginalMwem:
    """MWEM state over S^d kept as d marginals over |S| points (the curator's, private).

    ``run`` continues from the current marginals, so the summary's releases warm-start
    from the previous epoch (§4: small incremental changes matched incrementally)."""

    __slots__ = ("expected", "marginals", "support")

    def __init__(self, d: int, eta: float) -> None:
        self.support = grid(eta)
        self.marginals = np.full((d, self.support.size), 1.0 / self.support.size)
        self.expected = self.marginals @ self.support  # Σ_s s·P_i(s), all 0 at the start

    def run(
        self,
        target: F64,
        q: int,
        iterations: int,
        epsilon: float,
        sensitivity: float,
        rng: np.random.Generator,
        *,
        last: bool = False,
    ) -> tuple[F64, list[MwemStep]]:
        """T iterations against coordinate sums ``target`` (w(D_Q, ·)) of q vectors;
        returns (1/q)·w(P_avg) ∈ [−1, 1]^d (line 8; with ``last``, (1/q)·w(P_T), the
        final distribution's — a variant: the average keeps the early, uniform-biased
        iterates and shrinks the release towards 0) and the steps taken."""
        total = np.zeros_like(self.expected)
        steps: list[MwemStep] = []
        e = self.expected
        for _ in range(iterations):
            scores = np.abs(q * e - target)
            logits = (epsilon / (2.0 * sensitivity)) * scores
            weights = np.exp(logits - logits.max())
            cdf = np.cumsum(weights)
            i = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
            i = min(i, e.size - 1)
            mu = min(max(measure(target, i, epsilon, sensitivity, rng), -q), q)
            row = self.marginals[i] * np.exp(self.support * (mu - q * e[i]) / (2.0 * q))
            row /= row.sum()
            self.marginals[i] = row
            e[i] = float(row @ self.support)
            total += e
            steps.append(MwemStep(coordinate=i, measured=mu))
        if last:
            return e.copy(), steps
        return total / max(iterations, 1), steps
