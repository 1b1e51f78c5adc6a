"""The audit's ε lower bound against exact Clopper–Pearson values computed here.

Each expected value is computed independently of :mod:`privsim.audit.bounds`: the upper
confidence bound of a binomial rate from ``scipy.stats.beta.ppf`` directly, from its
definition (the p at which P[Bin(n, p) ≤ k] equals the tail probability, solved with
``binom.cdf`` and a root finder) and, where it has one, from its closed form; the ε
bound from ε ≥ max{ln[(1 − δ − FNR)/FPR], ln[(1 − δ − FPR)/FNR]} (Kairouz, Oh &
Viswanath 2015) at those upper bounds. Each rate gets a one-sided bound at level
1 − α/2 (α = 1 − confidence), so both hold together with probability ≥ 1 − α: a bound
taken at level 1 − α instead (the confidence itself) is smaller, gives a larger ε and
holds at a lower confidence than the one stated, which these tests catch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import beta, binom

from privsim.audit.bounds import clopper_pearson, epsilon_lower_bound, upper_rate


def _upper_by_definition(k: int, n: int, tail: float) -> float:
    """The Clopper–Pearson upper bound as defined: the p with P[Bin(n, p) ≤ k] = tail
    (1 when k = n)."""
    if k == n:
        return 1.0
    return float(brentq(lambda p: binom.cdf(k, n, p) - tail, 0.0, 1.0, xtol=1e-15, rtol=1e-14))


def _upper_by_beta(k: int, n: int, level: float) -> float:
    return 1.0 if k == n else float(beta.ppf(level, k + 1, n - k))


def _epsilon(fpr: float, fnr: float, delta: float) -> float:
    """max{ln[(1 − δ − FNR)/FPR], ln[(1 − δ − FPR)/FNR], 0}, both rates > 0."""
    terms = [0.0]
    if 1.0 - delta - fnr > 0:
        terms.append(math.log((1.0 - delta - fnr) / fpr))
    if 1.0 - delta - fpr > 0:
        terms.append(math.log((1.0 - delta - fpr) / fnr))
    return max(terms)


# --- the upper bound itself -------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 20, 100, 2500])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_no_successes_has_the_closed_form_upper_bound(n, confidence):
    """0 of n at one-sided level 1 − α/2: P[Bin(n, p) = 0] = (1 − p)^n = α/2, so the
    bound is 1 − (α/2)^(1/n)."""
    alpha = 1.0 - confidence
    expected = 1.0 - (alpha / 2.0) ** (1.0 / n)
    assert upper_rate(0, n, 1.0 - alpha / 2.0) == pytest.approx(expected, rel=1e-10)
    assert clopper_pearson(0, n, confidence) == pytest.approx((0.0, expected), rel=1e-10)


@pytest.mark.parametrize("n", [2, 10, 60])
def test_all_but_one_success_has_the_closed_form_upper_bound(n):
    """n − 1 of n: P[Bin(n, p) ≤ n − 1] = 1 − p^n = α/2, so the bound is (1 − α/2)^(1/n);
    and the lower bound of n of n is (α/2)^(1/n)."""
    alpha = 0.05
    assert upper_rate(n - 1, n, 1 - alpha / 2) == pytest.approx((1 - alpha / 2) ** (1 / n))
    lo, hi = clopper_pearson(n, n, 0.95)
    assert hi == 1.0
    assert lo == pytest.approx((alpha / 2) ** (1 / n), rel=1e-10)


def test_published_values():
    """Hand and textbook values of the 95 % two-sided interval: 0/20 → upper
    1 − 0.025^(1/20) = 0.16843; 0/100 → 0.03622; 1/10 → [0.00253, 0.44502]."""
    assert clopper_pearson(0, 20, 0.95)[1] == pytest.approx(0.16843, abs=1e-5)
    assert clopper_pearson(0, 100, 0.95)[1] == pytest.approx(0.03622, abs=1e-5)
    assert clopper_pearson(1, 10, 0.95) == pytest.approx((0.00253, 0.44502), abs=1e-5)


@pytest.mark.parametrize(("k", "n"), [(0, 50), (1, 50), (3, 40), (17, 200), (250, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_interval_matches_the_binomial_definition(k, n, confidence):
    """Both ends of the two-sided interval solve P[Bin(n, p) ≤ k] = α/2 (upper) and
    P[Bin(n, p) ≥ k] = α/2 (lower), from the binomial distribution itself."""
    alpha = 1.0 - confidence
    lo, hi = clopper_pearson(k, n, confidence)
    assert hi == pytest.approx(_upper_by_definition(k, n, alpha / 2), rel=1e-9)
    assert hi == pytest.approx(_upper_by_beta(k, n, 1 - alpha / 2), rel=1e-12)
    if k == 0:
        assert lo == 0.0
    else:
        assert binom.sf(k - 1, n, lo) == pytest.approx(alpha / 2, rel=1e-8)


# --- the ε lower bound ------------------------------------------------------------------

# (false positives, negatives, false negatives, positives, δ, confidence)
CASES = [
    (0, 100, 50, 100, 1e-5, 0.95),
    (3, 200, 40, 200, 1e-5, 0.95),
    (10, 1000, 500, 1000, 1e-5, 0.95),
    (100, 10_000, 5_000, 10_000, 1e-5, 0.95),
    (40, 100, 2, 100, 1e-3, 0.9),
    (7, 500, 300, 400, 1e-6, 0.99),
    (0, 5000, 0, 5000, 1e-5, 0.95),
]


@pytest.mark.parametrize(("fp", "neg", "fn", "pos", "delta", "confidence"), CASES)
def test_epsilon_lower_bound_uses_one_sided_bounds_at_one_minus_half_alpha(
    fp, neg, fn, pos, delta, confidence
):
    alpha = 1.0 - confidence
    fpr = _upper_by_definition(fp, neg, alpha / 2)
    fnr = _upper_by_definition(fn, pos, alpha / 2)
    # the two independent computations of each upper bound agree
    assert fpr == pytest.approx(beta.ppf(1 - alpha / 2, fp + 1, neg - fp), rel=1e-9)
    assert fnr == pytest.approx(beta.ppf(1 - alpha / 2, fn + 1, pos - fn), rel=1e-9)
    expected = _epsilon(fpr, fnr, delta)
    assert expected > 0  # every case reports something, so the level shows in the value
    got = epsilon_lower_bound(fp, neg, fn, pos, delta, confidence)
    assert got == pytest.approx(expected, rel=1e-8)
    # at level 1 − α (the confidence itself) the bound would be larger: not what we report
    naive = _epsilon(
        _upper_by_beta(fp, neg, confidence), _upper_by_beta(fn, pos, confidence), delta
    )
    assert got < naive * (1 - 1e-3)


def test_zero_errors_by_hand():
    """0 of 5000 on both sides at 95 %: each upper bound is u = 1 − 0.025^(1/5000)
    (≈ 7.376e-4) and ε ≥ ln[(1 − δ − u)/u] ≈ 7.21."""
    u = 1.0 - 0.025 ** (1.0 / 5000)
    assert u == pytest.approx(7.3755e-4, rel=1e-4)
    expected = math.log((1.0 - 1e-5 - u) / u)
    assert expected == pytest.approx(7.2119, abs=1e-3)
    assert epsilon_lower_bound(0, 5000, 0, 5000, 1e-5, 0.95) == pytest.approx(expected, rel=1e-10)


def test_the_bound_holds_with_the_stated_probability():
    """The claim itself, computed exactly: a test with true rates FPR = FNR = 0.04 on 80
    trials per side has ε* = ln[(1 − δ − 0.04)/0.04]; summing the binomial probabilities
    of every pair of counts, the reported bound is ≤ ε* with probability ≥ 95 %. (With
    one-sided bounds at the confidence level itself it would be ≈ 0.942.)"""
    n, rate, delta, confidence = 80, 0.04, 1e-5, 0.95
    true_epsilon = _epsilon(rate, rate, delta)
    pmf = binom.pmf(np.arange(n + 1), n, rate)
    holds = 0.0
    for fp in range(n + 1):
        for fn in range(n + 1):
            weight = pmf[fp] * pmf[fn]
            if weight < 1e-15:
                continue  # the neglected mass is < 81² · 1e-15
            if epsilon_lower_bound(fp, n, fn, n, delta, confidence) <= true_epsilon + 1e-12:
                holds += weight
    assert holds >= confidence
