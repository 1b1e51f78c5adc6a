"""Membership inference on a released RACE sketch (Coleman & Shrivastava 2021).

A record adds 1 to one cell in each of the R rows, the cells its LSH functions pick
(:func:`canary_cells`). A coalition that knows every other record subtracts their
counts and scores the canary's R cells with the Laplace log-likelihood ratio
(:func:`membership_score`; positive: "member"). Lemma 3.1 (Laplace(R/ε) per cell, ε-DP)
caps any test's accuracy on a balanced prior at e^ε/(1 + e^ε)
(:func:`accuracy_bound`); a colluding curator (raw counts) or every compute node in DCA
mode sees the cells exactly and is always right. The coalition's sketch comes from its
pooled view (:func:`pooled_sketch`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.protocols.race.distributed import OwnerSketch
from privsim.protocols.race.sketch import RaceSketch
from privsim.sim.coalition import CoalitionView

__all__ = [
    "ATTACKS",
    "accuracy_bound",
    "advantage_bound",
    "canary_cells",
    "membership_score",
    "pooled_sketch",
]

F64 = npt.NDArray[np.float64]


def canary_cells(sketch: RaceSketch, point: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The flat indices r·W + l_r(x) mod W of the canary's R cells."""
    cells = sketch.buckets(np.atleast_2d(np.asarray(point, dtype=np.float64)))[0]
    return np.asarray(np.arange(sketch.rows) * sketch.width + cells, dtype=np.int64)


def membership_score(released: F64, known: F64, cells: npt.NDArray[np.int64]) -> F64:
    """Σ_r (|y_r| − |y_r − 1|), y = released − known on the canary's cells: b times the
    log-likelihood ratio of "member" against "not" under Laplace(b) noise. ``released``
    and ``known`` may be stacks (…, R·W) of sketches; one score per sketch."""
    y = np.take(np.asarray(released, dtype=np.float64), cells, axis=-1) - np.take(
        np.asarray(known, dtype=np.float64), cells, axis=-1
    )
    return np.asarray(np.sum(np.abs(y) - np.abs(y - 1.0), axis=-1), dtype=np.float64)


def accuracy_bound(epsilon: float) -> float:
    """The best accuracy of any membership test on an ε-DP release with a balanced
    prior: e^ε/(1 + e^ε) (from FPR + e^ε·FNR ≥ 1 and its mirror)."""
    return 1.0 / (1.0 + math.exp(-epsilon))


def advantage_bound(epsilon: float, delta: float = 0.0) -> float:
    """The largest membership advantage TPR − FPR of any test on an (ε, δ)-DP release:
    (e^ε − 1 + 2δ)/(e^ε + 1), tanh(ε/2) for pure ε-DP (from TPR ≤ e^ε·FPR + δ and its
    mirror, Kairouz et al. 2015); 1 at ε = ∞."""
    if math.isinf(epsilon):
        return 1.0
    return min(1.0, (math.expm1(epsilon) + 2.0 * delta) / (math.exp(epsilon) + 1.0))


def pooled_sketch(view: CoalitionView, size: int) -> F64 | None:
    """The sum of the owners' sketches the coalition received (a colluding curator or
    aggregator: raw counts in ``curator`` mode, noisy in ``local`` mode); None if it
    received none."""
    got = view.messages_of(OwnerSketch)
    if not got:
        return None
    total = np.zeros(size)
    for seen in got:
        assert isinstance(seen.message, OwnerSketch)
        total += seen.message.values
    return total


#: The attacks a RACE coalition can run, by name.
ATTACKS: dict[str, Callable[..., Any]] = {"membership_inference": membership_score}
