"""Unpaired rank tests, Fisher's test of release rates and Holm's correction
(privsim.analysis.rank_tests), against scipy and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import fisher_exact, mannwhitneyu

from privsim.analysis.rank_tests import holm, rank_sum_test, rate_test

A = np.array([0.1, 1.3, 2.2, 3.7, 4.9])
B = np.array([2.5, 3.1, 5.2, 6.6, 7.4])


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_one_stratum_is_the_exact_mann_whitney_test(alternative: str) -> None:
    ours = rank_sum_test([A], [B], alternative=alternative, shift=1.0, power_resamples=5)  # type: ignore[arg-type]
    theirs = mannwhitneyu(A, B, alternative=alternative, method="exact").pvalue
    assert ours.p == pytest.approx(theirs, rel=1e-12)
    assert ours.exact and ours.strata == 1 and (ours.n_a, ours.n_b) == (5, 5)


def test_strata_multiply_the_smallest_p() -> None:
    # three strata of 3 against 3, a below b in each: every stratum's U is 0, whose
    # null probability is 1/C(6,3) = 1/20, so the one-sided p is (1/20)^3 exactly
    a = [[1.0, 1.0, 1.0], [2.0, 2.1, 2.2], [3.0, 3.0, 3.5]]
    b = [[5.0, 5.0, 5.0], [6.0, 6.0, 6.0], [7.0, 7.0, 7.0]]
    t = rank_sum_test(a, b, alternative="less", shift=0.5)
    assert t.p == pytest.approx(1 / 20**3, rel=1e-9)
    # two-sided doubles it; a single stratum of 3 against 3 can never reach 0.05
    assert rank_sum_test(a, b, shift=0.5).p == pytest.approx(2 / 20**3, rel=1e-9)
    assert rank_sum_test(a[:1], b[:1], shift=0.5).p == pytest.approx(0.1, rel=1e-9)


def test_power_of_a_deterministic_quantity() -> None:
    # no spread within a group: any shift is detected whenever the sizes allow it
    # (three strata: p = 2/8000), never when they do not (one stratum: p >= 0.1)
    a = [[10.0] * 3] * 3
    b = [[20.0] * 3] * 3
    assert rank_sum_test(a, b, shift=1.0, power_resamples=20).power == 1.0
    assert rank_sum_test(a[:1], b[:1], shift=1.0, power_resamples=20).power == 0.0


def test_power_grows_with_the_shift() -> None:
    rng = np.random.default_rng(3)
    a, b = [rng.normal(0, 1, 10)], [rng.normal(0, 1, 10)]
    small = rank_sum_test(a, b, shift=0.1, power_resamples=200, name=("s",)).power
    large = rank_sum_test(a, b, shift=3.0, power_resamples=200, name=("s",)).power
    # 10 against 10 at a shift of 3 spreads: the normal-theory power is above 0.99, so 200
    # resamples give at least 0.9 unless the draw is extreme; at 0.1 spread it is ~0.05
    assert large >= 0.9 and small <= 0.3


def test_large_groups_use_the_normal_approximation_with_ties() -> None:
    a = np.repeat([1.0, 2.0, 3.0], 6)
    b = np.repeat([2.0, 3.0, 4.0], 6)
    t = rank_sum_test([a], [b], shift=0.5, power_resamples=5)
    assert not t.exact
    # scipy's asymptotic test with the same tie and continuity corrections
    ref = mannwhitneyu(a, b, method="asymptotic", use_continuity=True).pvalue
    assert t.p == pytest.approx(ref, rel=1e-9)


def test_infinite_values_rank_above_and_nan_is_dropped() -> None:
    a = [[math.inf] * 4 + [math.nan]]
    b = [[0.8, 0.9, 0.85, 0.95]]
    t = rank_sum_test(a, b, alternative="greater", shift=0.1, power_resamples=5)
    assert t.n_a == 4 and t.p == pytest.approx(1 / math.comb(8, 4))


def test_mismatched_strata_are_refused() -> None:
    with pytest.raises(ValueError, match="strata"):
        rank_sum_test([[1.0]], [[1.0], [2.0]], shift=1.0)


def test_rate_test_matches_fisher_and_its_power_is_exact() -> None:
    t = rate_test(10, 10, 0, 10, rates=(1.0, 0.5))
    assert t.p == pytest.approx(fisher_exact([[10, 0], [0, 10]]).pvalue)
    # true rates 1.0 and 0.5: a always releases 10/10, so the test rejects exactly when
    # b's count k has Fisher p < 0.05; that is k <= 5 (p(10 v 6) = 0.087, p(10 v 5) = 0.033):
    # power = P(Bin(10, 0.5) <= 5) = 638/1024
    assert fisher_exact([[10, 0], [5, 5]]).pvalue < 0.05 < fisher_exact([[10, 0], [6, 4]]).pvalue
    assert t.power == pytest.approx(638 / 1024, abs=1e-12)
    with pytest.raises(ValueError):
        rate_test(11, 10, 0, 10, rates=(1.0, 0.5))


def test_holm_adjusts_in_the_input_order() -> None:
    # sorted: 0.01 (x3), 0.03 (x2), 0.04 (x1) -> 0.03, 0.06, 0.06 (monotone)
    assert holm([0.01, 0.04, math.nan, 0.03]) == pytest.approx(
        [0.03, 0.06, math.nan, 0.06], nan_ok=True
    )
    assert holm([]) == []
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])
