"""The distinguishing test: a threshold on the scalar statistic, chosen on one half of
the trials and evaluated on the other.

The test says "canary in" when the statistic exceeds a threshold t. Choosing t on the
same trials that are then counted would bias the error rates down (the best of many
thresholds looks better than it is), so t maximises the bound on a *selection* half and
the reported counts come from the disjoint *evaluation* half (as Jagielski et al. 2020
choose their threshold on separate trials); the Clopper–Pearson bound is then valid for
the evaluation counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import beta

from privsim.audit.bounds import epsilon_lower_bound

__all__ = ["Test", "best_threshold", "evaluate", "split_halves"]

F64 = npt.NDArray[np.float64]

#: Candidate thresholds scanned on the selection half (quantiles of its pooled trials).
CANDIDATES = 4000


@dataclass(frozen=True, slots=True, kw_only=True)
class Test:
    """A threshold test's evaluation counts and the bound they give."""

    threshold: float
    negatives: int  # trials on D (canary out)
    false_positives: int  # of them, statistic > threshold
    positives: int  # trials on D′ (canary in)
    false_negatives: int  # of them, statistic <= threshold
    lower_bound: float

    @property
    def fpr(self) -> float:
        return self.false_positives / self.negatives

    @property
    def fnr(self) -> float:
        return self.false_negatives / self.positives


def split_halves(stats: F64) -> tuple[F64, F64]:
    """(selection, evaluation): the even and odd trials (trials are i.i.d.)."""
    return stats[0::2], stats[1::2]


def _bounds(fp: F64, n0: int, fn: F64, n1: int, delta: float, confidence: float) -> F64:
    """:func:`~privsim.audit.bounds.epsilon_lower_bound` for arrays of counts."""
    level = 1.0 - (1.0 - confidence) / 2.0
    fpr = np.where(fp >= n0, 1.0, beta.ppf(level, fp + 1, np.maximum(n0 - fp, 1)))
    fnr = np.where(fn >= n1, 1.0, beta.ppf(level, fn + 1, np.maximum(n1 - fn, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr, 0.0) / fpr)
        b = np.log(np.maximum(1.0 - delta - fpr, 0.0) / fnr)
    out = np.maximum(np.nan_to_num(a, nan=0.0, neginf=0.0), np.nan_to_num(b, nan=0.0, neginf=0.0))
    return np.asarray(np.maximum(out, 0.0), dtype=np.float64)


def best_threshold(out: F64, into: F64, delta: float, confidence: float) -> float:
    """The threshold whose bound is largest on these trials (D: ``out``, D′: ``into``)."""
    pooled = np.concatenate([out, into])
    qs = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, CANDIDATES)))
    so, si = np.sort(out), np.sort(into)
    fp = (so.size - np.searchsorted(so, qs, side="right")).astype(np.float64)
    fn = np.searchsorted(si, qs, side="right").astype(np.float64)
    bounds = _bounds(fp, so.size, fn, si.size, delta, confidence)
    return float(qs[int(np.argmax(bounds))])


def evaluate(out: F64, into: F64, threshold: float, delta: float, confidence: float) -> Test:
    """Counts of the test "statistic > threshold" and their lower bound on ε."""
    fp = int(np.count_nonzero(out > threshold))
    fn = int(np.count_nonzero(into <= threshold))
    return Test(
        threshold=threshold,
        negatives=out.size,
        false_positives=fp,
        positives=into.size,
        false_negatives=fn,
        lower_bound=epsilon_lower_bound(fp, out.size, fn, into.size, delta, confidence),
    )
