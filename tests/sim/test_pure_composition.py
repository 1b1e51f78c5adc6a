"""Pure ε-DP events composed at δ > 0: the ledger reports the tighter of the basic
theorem (Σ ε, 0) and the PLD at δ (issue 23), and its PLD figure is checked against
computations that share no code with dp-accounting:

- the worst-case ε₀-DP pair (binary randomized response; ``GenericPureDpEvent``) has
  an exact k-fold privacy profile (Kairouz, Oh & Viswanath 2015, Thm. 3.3; Murtagh &
  Vadhan 2016): δ(ε) = (1 + e^{ε₀})^{−k} Σ_ℓ C(k, ℓ) max(0, e^{ε₀(k−ℓ)} − e^{ε + ε₀ℓ});
- the Laplace mechanism's privacy loss (scale b, Δ = 1) is ε₀ = 1/b w.p. ½, −ε₀ w.p.
  ½e^{−ε₀} and (1 − 2x)/b for x ∈ (0, 1) in between; its k-fold loss is convolved here
  on a grid rounded up (δ(ε) from above) and down (from below), which brackets the
  exact ε(δ).

The ledger's figure must lie at or above the exact (never below the truth) and within
1 % of it (dp-accounting discretises the loss at 10⁻⁴, pessimistically).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import fftconvolve
from scipy.special import gammaln

from privsim.sim.events import GenericPureDpEvent
from privsim.sim.ledger import PURE_MARGIN, PrivacyLedger, compose, composition, epsilon_of

SELF = dp_accounting.SelfComposedDpEvent
LAPLACE = dp_accounting.LaplaceDpEvent


def _solve(delta_of, delta: float, hi: float) -> float:
    """The smallest ε in [0, hi] with delta_of(ε) ≤ delta (δ(ε) decreases), by bisection."""
    lo = 0.0
    if delta_of(0.0) <= delta:
        return 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if delta_of(mid) <= delta else (mid, hi)
    return hi


def kov_epsilon(epsilon0: float, k: int, delta: float) -> float:
    """ε at δ of k compositions of the worst-case ε₀-DP pair, exactly (KOV Thm. 3.3)."""
    ell = np.arange(k + 1)
    log_binom = gammaln(k + 1) - gammaln(ell + 1) - gammaln(k - ell + 1)
    log_norm = -k * np.logaddexp(0.0, epsilon0)

    def delta_of(eps: float) -> float:
        a = epsilon0 * (k - ell)  # log e^{ε₀(k−ℓ)}
        b = eps + epsilon0 * ell
        keep = a > b
        terms = log_binom[keep] + log_norm + a[keep] + np.log1p(-np.exp(b[keep] - a[keep]))
        return float(np.exp(terms).sum()) if terms.size else 0.0

    return _solve(delta_of, delta, k * epsilon0)


def laplace_bracket(
    epsilon0: float, k: int, delta: float, step: float = 2e-4
) -> tuple[float, float]:
    """(lower, upper) bounds on ε at δ of k Laplace releases of ε₀ each, by convolving the
    single release's privacy loss on a grid of ``step``, rounded down and up."""
    grid = math.ceil(epsilon0 / step)
    step = epsilon0 / grid  # ±ε₀ on the grid exactly
    values = np.arange(-grid, grid + 1) * step
    # The continuous part: L = (1 − 2x)/b for x ∈ (0, 1), X ~ Laplace(0, b) under P.
    # Mass of L in (v_j, v_{j+1}] is the mass of x in [(1 − v_{j+1}b)/2, (1 − v_j b)/2).
    b = 1.0 / epsilon0
    x_hi = (1.0 - values[:-1] * b) / 2.0
    x_lo = (1.0 - values[1:] * b) / 2.0
    cell = 0.5 * (np.exp(-x_lo / b) - np.exp(-x_hi / b))
    up = np.zeros(values.size)
    down = np.zeros(values.size)
    up[1:] += cell  # to the cell's upper end
    down[:-1] += cell  # to its lower end
    for pmf in (up, down):
        pmf[-1] += 0.5  # x ≤ 0: loss +ε₀
        pmf[0] += 0.5 * math.exp(-epsilon0)  # x ≥ 1: loss −ε₀
    bounds = []
    for pmf in (down, up):
        total = np.array([1.0])
        for bit in bin(k)[2:]:  # k-fold convolution by repeated squaring, by FFT
            total = np.clip(fftconvolve(total, total), 0.0, None)  # (rounding: ~1e-16)
            if bit == "1":
                total = np.clip(fftconvolve(total, pmf), 0.0, None)
        losses = (np.arange(total.size) - k * grid) * step

        def delta_of(eps: float, total=total, losses=losses) -> float:
            over = losses > eps
            return float(np.sum(total[over] * -np.expm1(eps - losses[over])))

        bounds.append(_solve(delta_of, delta, k * epsilon0))
    return bounds[0], bounds[1]


@pytest.mark.parametrize(
    ("epsilon0", "k", "delta"),
    [(0.5, 100, 1e-4), (0.05, 100, 1e-4), (0.1, 300, 1e-6), (1.0, 20, 1e-5)],
)
def test_generic_pure_pld_matches_the_exact_optimal_composition(epsilon0, k, delta):
    exact = kov_epsilon(epsilon0, k, delta)
    pld = epsilon_of([SELF(GenericPureDpEvent(epsilon0), k)], delta)
    # never below the truth; dp-accounting's pessimistic grid costs well under 1 %
    assert exact * (1 - 1e-9) <= pld <= exact * 1.01
    # reported: the PLD where it beats the basic sum by more than PURE_MARGIN
    reported = composition([SELF(GenericPureDpEvent(epsilon0), k)], delta)
    if pld < (1 - PURE_MARGIN) * k * epsilon0:
        assert (reported.epsilon, reported.delta, reported.method) == (pld, delta, "pld")
    else:  # (1, 20, 1e-5): 19.9 against 20, the pure statement stands
        assert (reported.epsilon, reported.delta, reported.method) == (k * epsilon0, 0.0, "basic")


@pytest.mark.parametrize(
    ("epsilon0", "k", "delta"), [(0.01, 1656, 1e-4), (0.1, 100, 1e-5), (0.5, 40, 1e-3)]
)  # the first: D_v's 1656 MWEM measurements in the built-in summarization scenario
def test_laplace_pld_lies_in_an_independent_bracket(epsilon0, k, delta):
    lower, upper = laplace_bracket(epsilon0, k, delta)
    assert lower <= upper
    reported, at = compose([SELF(LAPLACE(1.0 / epsilon0), k)], delta)
    assert at == delta
    assert reported >= lower * (1 - 1e-9)  # never below the truth
    assert reported <= upper * 1.01 + 1e-4


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    k=st.integers(min_value=50, max_value=2000),
    epsilon0=st.floats(min_value=1e-3, max_value=0.3),
    delta=st.floats(min_value=1e-9, max_value=1e-2),
)
def test_a_long_laplace_composition_reports_below_the_basic_sum_whenever_delta_is_positive(
    k, epsilon0, delta
):
    # For k ≥ 50 steps of ε₀ ≤ 0.3 the PLD at any δ ≥ 1e-9 is at most
    # √(2k ln(1/δ))·ε₀ + kε₀²/2-ish, below (1 − PURE_MARGIN)·kε₀ across this range.
    found = composition([SELF(LAPLACE(1.0 / epsilon0), k)], delta)
    assert found.method == "pld" and found.delta == delta
    assert found.epsilon == found.pld_epsilon < (1 - PURE_MARGIN) * found.basic_epsilon
    assert found.basic_epsilon == pytest.approx(k * epsilon0, rel=1e-12)
    zero = composition([SELF(LAPLACE(1.0 / epsilon0), k)], 0.0)
    assert (zero.epsilon, zero.delta, zero.method) == (found.basic_epsilon, 0.0, "basic")


def test_the_ledger_reports_both_figures_and_which_applied():
    ledger = PrivacyLedger(5.0, 1e-4)
    ledger.charge("auction", SELF(GenericPureDpEvent(0.05), 100))
    ledger.charge("mwem", SELF(LAPLACE(100.0), 1656))
    g = ledger.guarantee()
    details = g.composition.details()
    assert details["method"] == "pld" and details["basic_delta"] == 0.0
    assert details["basic_epsilon"] == pytest.approx(5.0 + 16.56)
    assert details["pld_epsilon"] == g.epsilon and details["pld_delta"] == 1e-4
    assert g.met  # the basic theorem alone would refuse this plan
