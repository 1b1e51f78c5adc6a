"""Unpaired comparisons of replicated results: the (stratified) Wilcoxon rank-sum test,
Fisher's exact test of release rates, their power for a stated effect, and Holm's
correction.

Used where rows do not pair by seed: a study's cells get their seeds from their own
coordinates (``privsim.studies.study``), so two designs in two cells never share a
draw and :func:`privsim.kit.stats.paired_test` does not apply.

- Wilcoxon rank-sum (Mann–Whitney) statistic of a over b: U = Σ_i Σ_j [a_i > b_j]
  + ½ [a_i = b_j] (Mann & Whitney 1947). Stratified (van Elteren 1960, unweighted):
  S = Σ_s U_s over strata s (e.g. the dropout levels of one (N, d) cell), labels
  permuted within each stratum only. The null distribution of S is exact (every
  relabelling of each stratum enumerated, the strata convolved) when each stratum has at
  most ``EXACT_LIMIT`` relabellings, else normal with the tie-corrected variance
  Var U_s = n_a n_b / 12 · ((n + 1) − Σ_t (t³ − t) / (n (n − 1))) and a continuity
  correction of ½.
- Power against a location shift s: each group's residuals about its own median,
  resampled with replacement, are put at one common location, a is moved by s, and the
  test is run at level α; the share of rejections over the resamples estimates the
  probability of detecting a true shift s with these group sizes.
- Fisher's exact test of two release rates k_a/n_a against k_b/n_b; its power for stated
  true rates is exact (every pair of binomial outcomes enumerated).
- Holm's step-down adjusted p-values (Holm 1979): p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)
  p_(j)) over the m finite p-values sorted ascending.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from privsim.kit.stats import BOOTSTRAP_ENTROPY
from privsim.sim.streams import stream_key

__all__ = [
    "EXACT_LIMIT",
    "Alternative",
    "RankSumTest",
    "RateTest",
    "holm",
    "rank_sum_test",
    "rate_test",
]

FloatArray = npt.NDArray[np.float64]
Alternative = Literal["two-sided", "less", "greater"]

#: Largest number of relabellings of one stratum enumerated for the exact null.
EXACT_LIMIT = 20_000
#: Stand-in for ε = ∞ in ranks and shifts (larger than any finite ε a study reports).
INFINITE = 1e12


@dataclass(frozen=True, slots=True, kw_only=True)
class RankSumTest:
    """A (stratified) Wilcoxon rank-sum test of a against b.

    ``median_a`` and ``median_b`` are the pooled medians; ``p`` the test's p-value;
    ``power`` the estimated probability of detecting a true shift ``shift`` of a at
    level ``alpha``; ``exact`` whether the null distribution was enumerated."""

    n_a: int
    n_b: int
    strata: int
    median_a: float
    median_b: float
    p: float
    shift: float
    power: float
    exact: bool
    alpha: float = 0.05
    name: str = "Wilcoxon rank-sum (unpaired)"


@dataclass(frozen=True, slots=True, kw_only=True)
class RateTest:
    """Fisher's exact test of release rates k_a/n_a against k_b/n_b, with its exact power
    for true rates ``rates`` at level ``alpha``."""

    k_a: int
    n_a: int
    k_b: int
    n_b: int
    p: float
    rates: tuple[float, float]
    power: float
    alpha: float = 0.05
    name: str = "Fisher's exact test"


def _rng(*name: Hashable) -> np.random.Generator:
    """The power's resampling stream, named by what it resamples (reproducible)."""
    seq = np.random.SeedSequence(BOOTSTRAP_ENTROPY, spawn_key=stream_key("rank-sum", *name))
    return np.random.default_rng(seq)


def _clean(values: Any) -> FloatArray:
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[~np.isnan(v)]
    return np.clip(v, -INFINITE, INFINITE)


def _median(strata: Sequence[Any]) -> float:
    """The pooled median, ε = ∞ kept (the lower median when any value is infinite)."""
    v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in strata] or [np.zeros(0)])
    v = v[~np.isnan(v)]
    if not v.size:
        return np.nan
    return float(np.median(v)) if np.isfinite(v).all() else float(np.sort(v)[(v.size - 1) // 2])


def _u(a: FloatArray, b: FloatArray) -> float:
    """Mann–Whitney U of a over b, ties counted ½."""
    return float(np.sum(a[:, None] > b[None, :]) + 0.5 * np.sum(a[:, None] == b[None, :]))


def _exact_pmf(a: FloatArray, b: FloatArray) -> FloatArray:
    """Null distribution of 2U over every relabelling of the pooled values (index 2U)."""
    return _relabelled(tuple(np.sort(np.concatenate([a, b])).tolist()), a.size, b.size)


@functools.lru_cache(maxsize=4096)
def _relabelled(pooled: tuple[float, ...], k: int, m: int) -> FloatArray:
    """U = (sum of a's mid-ranks) − k (k + 1) / 2 for every choice of k of the pooled
    values as a's (the mid-ranks carry the ties)."""
    from scipy.stats import rankdata

    ranks = rankdata(np.asarray(pooled), method="average")
    chosen = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(k + m), k)),
        dtype=np.intp,
    ).reshape(-1, k)
    twice_u = np.rint(2.0 * ranks[chosen].sum(axis=1) - k * (k + 1)).astype(np.intp)
    pmf = np.bincount(twice_u, minlength=2 * k * m + 1).astype(np.float64)
    pmf /= pmf.sum()
    pmf.flags.writeable = False  # cached: shared between calls
    return pmf


def _moments(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """Mean and tie-corrected variance of U under the null."""
    pooled = np.concatenate([a, b])
    n = pooled.size
    _, counts = np.unique(pooled, return_counts=True)
    ties = float(np.sum(counts.astype(np.float64) ** 3 - counts))
    var = a.size * b.size / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    return a.size * b.size / 2.0, var


def _p_value(
    strata: Sequence[tuple[FloatArray, FloatArray]], alternative: Alternative
) -> tuple[float, bool]:
    """p-value of S = Σ U_s and whether it is exact."""
    used = [(a, b) for a, b in strata if a.size and b.size]
    if not used:
        return (np.nan, False)
    observed = sum(_u(a, b) for a, b in used)
    exact = all(math.comb(a.size + b.size, a.size) <= EXACT_LIMIT for a, b in used)
    if exact:
        pmf = np.ones(1)
        for a, b in used:
            pmf = np.convolve(pmf, _exact_pmf(a, b))
        at = round(2 * observed)
        upper = float(pmf[at:].sum())  # P(S >= s)
        lower = float(pmf[: at + 1].sum())  # P(S <= s)
    else:
        from scipy.stats import norm

        mean = sum(_moments(a, b)[0] for a, b in used)
        var = sum(_moments(a, b)[1] for a, b in used)
        if var <= 0.0:
            return (1.0, False)
        sd = math.sqrt(var)
        upper = float(norm.sf((observed - mean - 0.5) / sd))
        lower = float(norm.cdf((observed - mean + 0.5) / sd))
    if alternative == "greater":
        return (min(1.0, upper), exact)
    if alternative == "less":
        return (min(1.0, lower), exact)
    return (min(1.0, 2.0 * min(upper, lower)), exact)


def rank_sum_test(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    alternative: Alternative = "two-sided",
    shift: float,
    alpha: float = 0.05,
    power_resamples: int = 200,
    name: tuple[Hashable, ...] = (),
) -> RankSumTest:
    """Test a against b, stratum by stratum (``a[s]`` and ``b[s]`` hold stratum s's
    values; one stratum is the plain Mann–Whitney test). NaN values are dropped, ±∞
    rank above (below) every finite value. The power is against a shift of ``shift``
    in the direction of ``alternative`` (upwards when two-sided)."""
    if len(a) != len(b):
        raise ValueError(f"a has {len(a)} strata and b {len(b)}; give both the same strata")
    strata = [(_clean(x), _clean(y)) for x, y in zip(a, b, strict=True)]
    all_a = np.concatenate([x for x, _ in strata]) if strata else np.zeros(0)
    all_b = np.concatenate([y for _, y in strata]) if strata else np.zeros(0)
    p, exact = _p_value(strata, alternative)
    signed = -abs(shift) if alternative == "less" else abs(shift)
    rng = _rng("power", *name)
    residuals = [(x - np.median(x), y - np.median(y)) for x, y in strata if x.size and y.size]
    rejections = 0
    for _ in range(power_resamples):
        moved = [
            (rng.choice(rx, size=rx.size) + signed, rng.choice(ry, size=ry.size))
            for rx, ry in residuals
        ]
        q, _ = _p_value(moved, alternative)
        rejections += int(q < alpha)
    used = any(x.size and y.size for x, y in strata)
    return RankSumTest(
        n_a=int(all_a.size),
        n_b=int(all_b.size),
        strata=sum(1 for x, y in strata if x.size and y.size),
        median_a=_median(a),
        median_b=_median(b),
        p=p,
        shift=float(shift),
        power=rejections / power_resamples if used else np.nan,
        exact=exact,
        alpha=alpha,
    )


def _fisher_p(k_a: int, n_a: int, k_b: int, n_b: int, alternative: Alternative) -> float:
    from scipy.stats import fisher_exact

    table = [[k_a, n_a - k_a], [k_b, n_b - k_b]]
    return float(fisher_exact(table, alternative=alternative).pvalue)


def rate_test(
    k_a: int,
    n_a: int,
    k_b: int,
    n_b: int,
    *,
    alternative: Alternative = "two-sided",
    rates: tuple[float, float],
    alpha: float = 0.05,
) -> RateTest:
    """Fisher's exact test of k_a/n_a against k_b/n_b, and its power when the true
    release rates are ``rates`` = (rate of a, rate of b)."""
    if not (0 <= k_a <= n_a and 0 <= k_b <= n_b):
        raise ValueError(f"counts out of range: {k_a}/{n_a}, {k_b}/{n_b}")
    if n_a == 0 or n_b == 0:
        return RateTest(
            k_a=k_a, n_a=n_a, k_b=k_b, n_b=n_b, p=np.nan, rates=rates, power=np.nan, alpha=alpha
        )
    from scipy.stats import binom

    pa = binom.pmf(np.arange(n_a + 1), n_a, rates[0])
    pb = binom.pmf(np.arange(n_b + 1), n_b, rates[1])
    power = 0.0
    for i in range(n_a + 1):
        for j in range(n_b + 1):
            if pa[i] * pb[j] > 0.0 and _fisher_p(i, n_a, j, n_b, alternative) < alpha:
                power += float(pa[i] * pb[j])
    return RateTest(
        k_a=k_a,
        n_a=n_a,
        k_b=k_b,
        n_b=n_b,
        p=_fisher_p(k_a, n_a, k_b, n_b, alternative),
        rates=(float(rates[0]), float(rates[1])),
        power=min(1.0, power),
        alpha=alpha,
    )


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the input's order (NaN stays NaN and is not counted
    among the m hypotheses)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(~np.isnan(p))
    m = finite.size
    running = 0.0
    for rank, i in enumerate(finite[np.argsort(p[finite], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * float(p[i])))
        out[i] = running
    return [float(x) for x in out]
