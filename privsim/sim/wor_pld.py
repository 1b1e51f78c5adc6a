"""The privacy loss distribution of a Gaussian sum over a cohort of m of n clients drawn
without replacement (replace-one neighbours, n public): a dominating pair the ledger
composes by PLD, built from dp-accounting's Poisson-sampled Gaussian at q = m/n.

The bound. Let M add N(0, σ²) to the sum of m updates clipped to C, Δ = 2C its
replace-one sensitivity, z = σ/Δ, γ = m/n. Unsampled, (P, Q) = (N(Δ, σ²), N(0, σ²))
dominates M under replace-one (the Gaussian's hockey-stick divergence depends only on
the distance of the means, at most Δ; rotate it onto one axis). Zhu, Dong & Wang
(AISTATS 2022) bound the mechanism on the sample, M∘S, in two parts (their
Proposition 30, sampling without replacement under substitution), in units of Δ:

    α ≥ 1:  H_α(M∘S(D) ‖ M∘S(D′)) ≤ H_α(A ‖ B),
    α < 1:  H_α(M∘S(D) ‖ M∘S(D′)) ≤ H_α(B ‖ A),
    A = γ·N(1, z²) + (1 − γ)·N(0, z²),   B = N(0, z²).

The first part is advanced joint convexity (Balle, Barthe & Gaboardi 2018, Thm. 2):
M∘S(D) = γ·μ₁ + (1 − γ)·μ₀ and M∘S(D′) = γ·μ₁′ + (1 − γ)·μ₀, μ₁ and μ₁′ the outputs on
samples holding the target's two records and μ₀ on samples without it (the same under
both, and a replace-one neighbour of μ₁ by swapping the target for another record), so
H_{1+γ(α−1)} ≤ γ·H_α(P ‖ Q) = H_{1+γ(α−1)}(A ‖ B). The second follows from the first
for the pair taken the other way round (replace-one is symmetric) and the identity
H_α(X ‖ Y) = 1 − α + α·H_{1/α}(Y ‖ X). Both parts are attained: with all other records
at −C, a target at +C against one at −C gives exactly (A, B), and the swap (B, A). So
(A, B) alone is *not* a dominating pair (Zhu, Dong & Wang, Def. 7): below α = 1 the
mechanism reaches H_α(B ‖ A), which is at or above H_α(A ‖ B) there (by the identity,
as H_β(A ‖ B) ≥ H_β(B ‖ A) for β = 1/α > 1, by the first part applied to (B, A)), and
above it for the Gaussian. (Written for a general pair, the part below α = 1 may read
(P, (1 − γ)·P + γ·Q); for the Gaussian, reflecting x ↦ 1 − x makes that (B, A).)

In dp-accounting's terms (A, B) is the remove direction of its Poisson-sampled Gaussian
PLD at q = γ and standard deviation z, and (B, A) its add direction. That PLD composes
each direction with itself and reports the larger δ: the composition of (A, B)ᵏ and of
(B, A)ᵏ, which are what the datasets above reach round after round (a lower figure),
not a bound: the theorem bounds each round by one curve, (A, B)'s above α = 1 and
(B, A)'s below, and composition needs one pair that carries that curve at every α. It
exists (Zhu, Dong & Wang turn such a two-part bound into one dominating pair, their
Corollary 32), and :func:`replace_one_pld` builds it: the symmetric pair whose privacy
loss ω agrees with (A, B)'s above 0, mirrored below,

    ω(ℓ) = ω_A,B(ℓ),   ω(−ℓ) = e^{−ℓ}·ω_A,B(ℓ)   (ℓ > 0),   ω(+∞) = ω_A,B(+∞),
    ω(0) = 1 − ω(+∞) − Σ_{ℓ>0} (1 + e^{−ℓ})·ω_A,B(ℓ).

Its δ(ε) = Σ_{ℓ>ε} (1 − e^{ε−ℓ})·ω(ℓ) + ω(+∞) reads only losses above ε, so for ε ≥ 0 it
is (A, B)'s; a pair equal to its own reverse has δ(ε) = 1 − e^ε + e^ε·δ(−ε) below 0,
which is the second part. With (A, B)'s PLD the pessimistic connect-the-dots one (δ at
or above the truth at every ε), ω dominates the mechanism at every α, and the
composition of such pairs dominates the adaptive composition (Zhu, Dong & Wang,
Thm. 10). The mass ω(0) is that of a valid pair: it is the connect-the-dots mass at 0
of the two-part curve, which is convex in e^ε (for the exact pair it is
(1 − γ)·(2Φ(1/(2z)) − 1) ≥ 0).

The mirrored grid spans twice the remove direction's losses, mostly in masses far
below any δ. The lowest losses, holding 10⁻¹⁸ together, are moved up onto the first
loss kept, and the highest, as much, to +∞: that only raises losses, so the δ of every
composition can only grow (δ(ε) = E[(1 − e^{ε − ΣLᵢ})₊] grows with each Lᵢ), and the
pair stays a pair of distributions (E[e^{−L}] only falls: by mass that the second
puts where the first has none). It
removes about a quarter of the grid, and of the cost of composing it (n = 10,000,
m = 100, z = 0.55: 108,000 points at 2·10⁻⁴ instead of 148,000, the composition of 30
rounds in 1.9 s instead of 2.8 s, ε the same to 10⁻¹¹ relative).

For n = 2000, m = 53, z = 1.1 and 90 rounds at δ = 10⁻⁶: 1.883 by this pair, 1.754
for (A, B)⁹⁰ (the datasets above reach it, so the truth lies between), and 3.142 by
dp-accounting's RDP bound for sampling without replacement (Wang, Balle &
Kasiviswanathan 2019), which the ledger keeps as a cross-check.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["replace_one_pld"]

#: Mass at either end of the pair's grid moved inwards: at the low end onto the first loss
#: kept, at the high end to +∞ (module docstring).
TAIL_MASS = 1e-18
#: Largest negative ω(0) put down to rounding (the masses add up to 1 within float
#: error); a more negative one would mean a pair that is not a pair.
ZERO_MASS_SLACK = 1e-12


def replace_one_pld(poisson: PrivacyLossDistribution) -> PrivacyLossDistribution:
    """The dominating pair of a Gaussian on a sample of m of n drawn without replacement
    (module docstring), from ``poisson``: the PLD of the Poisson-sampled Gaussian at
    q = m/n with the same multiplier (its remove direction is (A, B)). Symmetric, on
    ``poisson``'s grid, pessimistic."""
    remove = getattr(poisson, "_pmf_remove", None)
    if remove is None:  # pragma: no cover - a dp-accounting release without the attribute
        raise TypeError("cannot read the remove direction of a dp-accounting PLD")
    dense = remove.to_dense_pmf()
    interval = float(dense._discretization)
    lower, probs = int(dense._lower_loss), np.asarray(dense._probs, dtype=np.float64)
    infinity = float(dense._infinity_mass)
    top = lower + probs.size - 1  # the largest finite loss, in intervals
    if top < 1:  # no loss above 0: the pair is never told apart, but for ω(+∞)
        return PrivacyLossDistribution(
            pld_pmf.DensePLDPmf(interval, 0, np.array([1.0 - infinity]), infinity, True)
        )
    above = np.zeros(top, dtype=np.float64)  # ω at losses 1 … top intervals
    start = max(lower, 1)
    above[start - 1 :] = probs[start - lower :]
    mirrored = above * np.exp(-interval * np.arange(1, top + 1, dtype=np.float64))
    zero = 1.0 - infinity - math.fsum(above) - math.fsum(mirrored)
    if zero < -ZERO_MASS_SLACK:
        raise FloatingPointError(
            f"the mirrored pair has mass {zero:.3g} at loss 0: its remove direction is not "
            "that of a sampled Gaussian"
        )
    masses = np.concatenate([mirrored[::-1], [max(zero, 0.0)], above])
    # the ends' masses of at most TAIL_MASS: the lowest to the first loss kept, the
    # highest to +∞ (module docstring); never past loss 0
    low = min(int(np.searchsorted(np.cumsum(masses), TAIL_MASS, side="right")), top)
    high = min(int(np.searchsorted(np.cumsum(masses[::-1]), TAIL_MASS, side="right")), top)
    if low:
        masses[low] += math.fsum(masses[:low])
    if high:
        infinity += math.fsum(masses[masses.size - high :])
    masses = masses[low : masses.size - high]
    return PrivacyLossDistribution(
        pld_pmf.DensePLDPmf(interval, low - top, masses, infinity, pessimistic_estimate=True)
    )
