"""Statistics of replicated results: bootstrap intervals of medians, paired rank tests
and their power, and intervals of rates.

Every resampling draws from a generator seeded by the name of what it resamples
(:func:`privsim.sim.streams.stream_key`), so a report is reproducible and two tables
that resample the same values draw the same indices.

- Percentile bootstrap (Efron & Tibshirani 1993, §13.3): resample the n values with
  replacement B times; the (α/2, 1 − α/2) percentiles of the B medians bound the median.
- Wilcoxon signed-rank test of paired differences d_i = a_i − b_i (rows pair by seed:
  both methods ran on the same split and draws), two-sided or one-sided.
- Power of that test against a shift s: the centred differences d_i − median(d) + s,
  resampled, are tested B times at level α; the share of rejections estimates the
  probability of detecting a true shift s with n pairs.
- Wilson score interval of a binomial rate k/n (Wilson 1927).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from privsim.sim.streams import stream_key

__all__ = [
    "BOOTSTRAP_ENTROPY",
    "Alternative",
    "PairedTest",
    "bootstrap_median_ci",
    "bootstrap_ratio_ci",
    "finite",
    "paired_test",
    "wilson_interval",
]

#: Root entropy of every bootstrap stream (the stream's name does the rest).
BOOTSTRAP_ENTROPY = 20_171_515

FloatArray = npt.NDArray[np.float64]
Alternative = Literal["two-sided", "less", "greater"]


def _rng(*name: Hashable) -> np.random.Generator:
    seq = np.random.SeedSequence(BOOTSTRAP_ENTROPY, spawn_key=stream_key("bootstrap", *name))
    return np.random.default_rng(seq)


def finite(values: Any) -> FloatArray:
    """The finite values of ``values`` as a float array (NaN and ±inf dropped)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    return v[np.isfinite(v)]


def bootstrap_median_ci(
    values: Any,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    name: tuple[Hashable, ...] = (),
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median of ``values`` (NaN, NaN if empty).
    Infinite values (ε = ∞ where a coalition broke an event's trust) are kept: the
    interval's ends are then taken without interpolation, so an end may be ∞."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return (np.nan, np.nan)
    if v.size == 1:
        return (float(v[0]), float(v[0]))
    idx = _rng("median", *name).integers(0, v.size, size=(resamples, v.size))
    tail = 50.0 * (1.0 - confidence)
    if np.isfinite(v).all():
        medians = np.median(v[idx], axis=1)
        lo, hi = np.percentile(medians, [tail, 100.0 - tail])
    else:
        medians = np.sort(v[idx], axis=1)[:, (v.size - 1) // 2]  # the lower median
        lo = np.percentile(medians, tail, method="lower")
        hi = np.percentile(medians, 100.0 - tail, method="higher")
    return (float(lo), float(hi))


def bootstrap_ratio_ci(
    a: Any,
    b: Any,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    name: tuple[Hashable, ...] = (),
) -> tuple[float, float, float]:
    """median(a) / median(b) and its percentile-bootstrap interval, resampling the
    pairs (a_i, b_i) together (rows pair by seed)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    ratio = float(np.median(x) / np.median(y))
    idx = _rng("ratio", *name).integers(0, x.size, size=(resamples, x.size))
    ratios = np.median(x[idx], axis=1) / np.median(y[idx], axis=1)
    tail = 50.0 * (1.0 - confidence)
    lo, hi = np.percentile(ratios, [tail, 100.0 - tail])
    return (ratio, float(lo), float(hi))


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedTest:
    """A Wilcoxon signed-rank test of paired differences d = a − b.

    ``median_diff`` and its bootstrap interval ``diff_ci`` describe d; ``p`` is the test's
    p-value; ``power`` the estimated probability that the test at ``alpha`` detects a
    true median shift of ``shift`` with these ``n`` pairs."""

    n: int
    median_diff: float
    diff_ci: tuple[float, float]
    p: float
    shift: float
    power: float
    alpha: float = 0.05
    name: str = "Wilcoxon signed-rank (paired by seed)"


def _wilcoxon_p(d: FloatArray, alternative: Alternative, method: str = "auto") -> FloatArray:
    """Wilcoxon signed-rank p-values along the last axis: scipy's choice (exact for small
    n without ties, else the normal approximation with tie and zero corrections), or
    ``method="approx"`` for the power's resamples, whose ties would send scipy to a
    permutation test per resample (minutes at n = 8, for a power that means little)."""
    from scipy.stats import wilcoxon

    return np.asarray(
        wilcoxon(d, alternative=alternative, axis=-1, zero_method="wilcox", method=method).pvalue,
        dtype=np.float64,
    )


def paired_test(
    a: Any,
    b: Any,
    *,
    alternative: Alternative = "two-sided",
    shift: float,
    alpha: float = 0.05,
    resamples: int = 2000,
    power_resamples: int = 200,
    name: tuple[Hashable, ...] = (),
) -> PairedTest:
    """Test a against b paired row by row; the power is against a median shift of
    ``shift`` in the direction of ``alternative`` (either way when two-sided)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    d = x[keep] - y[keep]
    if d.size < 2 or not np.any(d != 0):
        median = float(np.median(d)) if d.size else np.nan
        return PairedTest(
            n=int(d.size),
            median_diff=median,
            diff_ci=(median, median),
            p=np.nan,
            shift=shift,
            power=np.nan,
            alpha=alpha,
        )
    p = float(_wilcoxon_p(d, alternative))
    ci = bootstrap_median_ci(d, resamples=resamples, name=("paired", *name))
    signed = -abs(shift) if alternative == "less" else abs(shift)
    centred = d - np.median(d) + signed
    idx = _rng("power", *name).integers(0, d.size, size=(power_resamples, d.size))
    power = float(np.mean(_wilcoxon_p(centred[idx], alternative, "approx") < alpha))
    return PairedTest(
        n=int(d.size),
        median_diff=float(np.median(d)),
        diff_ci=ci,
        p=p,
        shift=float(shift),
        power=power,
        alpha=alpha,
    )


def wilson_interval(
    successes: int, trials: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (NaN, NaN when there are no trials)."""
    from scipy.stats import norm

    if trials <= 0:
        return (np.nan, np.nan)
    z = float(norm.ppf(0.5 + confidence / 2.0))
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (float(max(0.0, centre - half)), float(min(1.0, centre + half)))
