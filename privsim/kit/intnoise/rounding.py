"""Real inputs to integers: clip, scale and conditionally round (Kairouz, Liu & Steinke,
ICML 2021, conditional randomised rounding; the same step in Agarwal, Kairouz & Liu
2021).

A client clips x to L2 norm c, scales it by s = 1/γ and rounds each coordinate up or
down at random with the probability that keeps it unbiased. Rounding can grow the norm;
the rounded vector is redrawn until its norm is at most the inflated bound

    Δ₂ = min{ c·s + √d,  sqrt( (c·s)² + d/4 + sqrt(2 ln(1/β)) · (c·s + √d/2) ) },

which a single draw meets with probability at least 1 − β (β = 0: plain randomised
rounding, whose norm never exceeds c·s + √d). An integer vector of L2 norm Δ₂ has
L1 norm at most Δ₁ = min{ Δ₂², √d·Δ₂ } (each non-zero entry has |v_j| ≥ 1).

The random rotation the papers apply before rounding (to flatten the vector) is not
done here: it changes the accuracy and the modulus needed, not the privacy bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "Sensitivity",
    "clip_l2",
    "integer_sensitivity",
    "randomised_round",
    "rounded_l1_bound",
    "rounded_l2_bound",
    "scale_and_round",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: Redraws of a conditionally rounded vector before giving up (each fails with ≤ β).
MAX_REDRAWS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Sensitivity:
    """L1 and L2 sensitivities of the integer sum (in integer steps)."""

    l1: float
    l2: float

    def __post_init__(self) -> None:
        if not (self.l2 > 0 and self.l1 > 0 and math.isfinite(self.l1 + self.l2)):
            raise ValueError(f"sensitivities must be finite and > 0, got {self}")


def rounded_l2_bound(scaled_clip: float, dimension: int, beta: float) -> float:
    """Δ₂ of KLS 2021 (conditional rounding) for a vector of norm ≤ ``scaled_clip`` = c·s."""
    if dimension < 1:
        raise ValueError(f"dimension must be >= 1, got {dimension}")
    if not 0 <= beta < 1:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    plain = scaled_clip + math.sqrt(dimension)
    if beta == 0:
        return plain
    squared = (
        scaled_clip**2
        + dimension / 4.0
        + math.sqrt(2.0 * math.log(1.0 / beta)) * (scaled_clip + math.sqrt(dimension) / 2.0)
    )
    return min(plain, math.sqrt(squared))


def rounded_l1_bound(l2_bound: float, dimension: int) -> float:
    """Δ₁ = min{Δ₂², √d·Δ₂}: the L1 norm of an integer vector of L2 norm ≤ Δ₂."""
    return min(l2_bound * l2_bound, math.sqrt(dimension) * l2_bound)


def integer_sensitivity(
    clip: float, scale: float, dimension: int, beta: float, *, replace_one: bool = False
) -> Sensitivity:
    """Sensitivity of the sum of rounded vectors: (Δ₁, Δ₂) for add/remove-one, twice
    that for replace-one (the difference of two rounded vectors)."""
    l2 = rounded_l2_bound(clip * scale, dimension, beta)
    l1 = rounded_l1_bound(l2, dimension)
    factor = 2.0 if replace_one else 1.0
    return Sensitivity(l1=factor * l1, l2=factor * l2)


def clip_l2(x: npt.ArrayLike, clip: float) -> F64:
    """x · min(1, c/‖x‖₂)."""
    v = np.asarray(x, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    return v if norm <= clip else v * (clip / norm)


def randomised_round(x: npt.ArrayLike, rng: np.random.Generator) -> I64:
    """Each coordinate to ⌊x⌋ + Bernoulli(x − ⌊x⌋): unbiased, |error| < 1."""
    v = np.asarray(x, dtype=np.float64)
    low = np.floor(v)
    up = rng.random(v.shape) < (v - low)
    return (low + up).astype(np.int64)


def scale_and_round(
    x: npt.ArrayLike, clip: float, scale: float, beta: float, rng: np.random.Generator
) -> I64:
    """KLS 2021 Algorithm 1 for one client (without the rotation): clip to ``clip``,
    multiply by ``scale`` and round at random until ‖x̃‖₂ ≤ Δ₂ (:func:`rounded_l2_bound`)."""
    v = clip_l2(x, clip) * scale
    bound = rounded_l2_bound(clip * scale, v.size, beta)
    for _ in range(MAX_REDRAWS):
        rounded = randomised_round(v, rng)
        if float(np.linalg.norm(rounded)) <= bound:
            return rounded
    raise RuntimeError(
        f"conditional rounding failed {MAX_REDRAWS} times (bound {bound:.6g}); beta is too small"
    )
