"""Confidence bounds for an empirical privacy audit.

A distinguishing test between neighbouring inputs D (canary out) and D′ (canary in)
has a false-positive rate FPR = P[test says "in" | D] and a false-negative rate
FNR = P[test says "out" | D′]. For any (ε, δ)-DP mechanism every such test satisfies
(Kairouz, Oh & Viswanath 2015, Theorem 2.1, the hypothesis-testing view of DP)

    FPR + e^ε · FNR ≥ 1 − δ   and   FNR + e^ε · FPR ≥ 1 − δ,

so ε ≥ max{ ln[(1 − δ − FNR)/FPR], ln[(1 − δ − FPR)/FNR] }. Jagielski, Ullman & Oprea
(NeurIPS 2020, "Auditing differentially private machine learning: how private is private
SGD?", Algorithm 2, the ε_LB computation) and Nasr, Song, Thakurta, Papernot & Carlini
(IEEE S&P 2021, "Adversary instantiation: lower bounds for differentially private
machine learning", §4.1, Eq. (2)) replace FPR and FNR by Clopper–Pearson upper
confidence bounds, which turns the inequality into a lower bound on ε that holds with the
stated confidence. Here each rate gets a one-sided upper bound at level 1 − α/2
(α = 1 − confidence), so both hold together with probability at least 1 − α (union
bound); the bound is therefore valid at the stated confidence.
"""

from __future__ import annotations

import math

from scipy.stats import beta

__all__ = ["clopper_pearson", "epsilon_from_rates", "epsilon_lower_bound", "upper_rate"]


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The two-sided Clopper–Pearson interval for a binomial proportion (exact,
    conservative): [B(α/2; k, n − k + 1), B(1 − α/2; k + 1, n − k)] with B the beta
    quantile, α = 1 − confidence (Clopper & Pearson 1934)."""
    _check(successes, trials, confidence)
    alpha = 1.0 - confidence
    lo = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    hi = (
        1.0
        if successes == trials
        else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    )
    return lo, hi


def upper_rate(successes: int, trials: int, level: float) -> float:
    """One-sided Clopper–Pearson upper bound at ``level``: B(level; k + 1, n − k)."""
    _check(successes, trials, level)
    if successes == trials:
        return 1.0
    return float(beta.ppf(level, successes + 1, trials - successes))


def epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """max{ln[(1 − δ − FNR)/FPR], ln[(1 − δ − FPR)/FNR], 0} (Kairouz et al. 2015): the
    smallest ε that a test with these error rates does not refute at δ."""
    best = 0.0
    for a, b in ((fnr, fpr), (fpr, fnr)):
        num = 1.0 - delta - a
        if num <= 0:
            continue
        best = max(best, math.inf if b <= 0 else math.log(num / b))
    return best


def epsilon_lower_bound(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    delta: float,
    confidence: float = 0.95,
) -> float:
    """The audit's lower bound on ε at ``delta``: :func:`epsilon_from_rates` of the
    one-sided Clopper–Pearson upper bounds of FPR (``false_positives`` of ``negatives``
    trials on D) and FNR (``false_negatives`` of ``positives`` trials on D′), each at
    level 1 − (1 − confidence)/2, so that the bound holds with probability ≥
    ``confidence`` (Jagielski et al. 2020, Algorithm 2; Nasr et al. 2021, Eq. (2))."""
    level = 1.0 - (1.0 - confidence) / 2.0
    fpr = upper_rate(false_positives, negatives, level)
    fnr = upper_rate(false_negatives, positives, level)
    return epsilon_from_rates(fpr, fnr, delta)


def _check(successes: int, trials: int, confidence: float) -> None:
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, trials >= 1; got {successes}/{trials}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
