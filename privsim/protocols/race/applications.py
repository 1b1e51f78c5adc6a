"""Applications of private RACE sketches (Coleman & Shrivastava 2021, §4–5).

- KDE: the normalised query f̂(q)/N̂ of an ε-DP sketch estimates the kernel density.
- Classification: one sketch per class on that class's records (disjoint records, so the
  class sketches together are ε-DP by parallel composition); a query goes to the
  maximum-likelihood class, argmax_c p̂(q | c) = f̂_c(q)/N̂_c (class priors left out:
  with them the majority class wins almost every query on imbalanced data).
- Regression: linear regression reduced to an LSH kernel sum (§4). With z_i = (x_i, y_i)
  clipped to public bounds and divided by them (into [−1, 1]^{d+1}), each added as z_i
  and −z_i to an SRP sketch with p bits, the estimate at q = (θ, −1) is
  Σ_i (1 − a_i/π)^p + (a_i/π)^p with a_i the angle between z_i and q, smallest when
  every z_i ⟂ q, i.e. x_iᵀθ = y_i. θ is found by zeroth-order momentum descent on the
  private sketch (no further privacy cost).

Scaling is public. The regressor divides by bounds the user gives (``x_bound``,
``y_bound``: from the data's documented ranges or the generator, never from the private
records) and clips each record to them, as the BLR clients clip to their assumed bounds.
Scaling by the private data's largest absolute values — as this module once did — puts
the maxima in the released model without noise, and a record holding a maximum moves
every scaled record, so the sketch's Δ₁ = 2R no longer bounds the change. Likewise the
descent's objective is normalised by N̂ read from the released sketch, not by the
private record count N (see :meth:`RaceRegressor.fit`). Clipping is not what makes the
sketch private (an SRP record fills one cell per row whatever its values); it keeps the
records in the box the reduction assumes and the model's inputs where it was fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.protocols.race.lsh import L2Hash, SRPHash
from privsim.protocols.race.private import release
from privsim.protocols.race.sketch import RaceSketch

__all__ = [
    "PublicBoundsError",
    "RaceClassifier",
    "RaceRegressor",
    "public_bounds",
    "zeroth_order_minimise",
]

F64 = npt.NDArray[np.float64]


@dataclass
class RaceClassifier:
    """Per-class private RACE sketches under one shared set of L2 LSH functions."""

    sketches: dict[float, RaceSketch]

    @classmethod
    def fit(
        cls,
        x: F64,
        y: F64,
        *,
        rows: int,
        width: int,
        bandwidth: float,
        epsilon: float | None,
        rng: np.random.Generator,
    ) -> RaceClassifier:
        family = L2Hash.draw(rows, x.shape[1], bandwidth, rng)
        sketches = {}
        for label in np.unique(y):
            sketch = RaceSketch(family, width).add(x[y == label])
            if epsilon is not None:
                sketch, _ = release(sketch, epsilon, rng, rounding="none")
            sketches[float(label)] = sketch
        return cls(sketches)

    def predict(self, q: F64) -> F64:
        labels = np.array(list(self.sketches))
        scores = np.column_stack([s.query(q, normalise=True) for s in self.sketches.values()])
        return np.asarray(labels[np.argmax(scores, axis=1)], dtype=np.float64)


def zeroth_order_minimise(
    objective: object,
    start: F64,
    rng: np.random.Generator,
    *,
    sigma: float = 0.5,
    rate: float = 0.1,
    iterations: int = 500,
    momentum: float = 0.5,
    directions: int = 8,
) -> F64:
    """Momentum descent with a two-point gradient estimate from ``directions`` random
    Gaussian directions per step: g = Σ_u (f(θ + σu) − f(θ − σu)) u / (2σ·directions)."""
    theta = np.array(start, dtype=np.float64)
    velocity = np.zeros_like(theta)
    f = objective  # callable on a batch of points (m, d) -> (m,)
    for _ in range(iterations):
        u = rng.standard_normal((directions, theta.size))
        points = np.vstack([theta + sigma * u, theta - sigma * u])
        values = f(points)  # type: ignore[operator]
        diff = values[:directions] - values[directions:]
        grad = (diff[:, None] * u).sum(axis=0) / (2 * sigma * directions)
        velocity = momentum * velocity - rate * grad
        theta = theta + velocity
    return theta


class PublicBoundsError(ValueError):
    """Public bounds for the regressor are missing or unusable (the message says which
    and what to give instead)."""


def public_bounds(bound: npt.ArrayLike | None, size: int, name: str) -> F64:
    """``bound`` (one number for every column, or one per column) as ``size`` finite
    positive floats; :class:`PublicBoundsError` if it is missing or unusable."""
    if bound is None:
        raise PublicBoundsError(
            f"{name} is required: give public bounds (from the data's documented ranges or "
            "its generator, never from the private records); records are clipped to "
            f"[-{name}, {name}] and divided by it"
        )
    arr = np.asarray(bound, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise PublicBoundsError(
            f"{name} must be one number or {size} (one per column), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise PublicBoundsError(f"{name} must be finite and > 0, got {arr.tolist()}")
    arr.setflags(write=False)
    return arr


@dataclass
class RaceRegressor:
    """θ from a private SRP sketch of ±(x, y), clipped to the public bounds
    (``x_bound``, ``y_bound``) and divided by them. The released model is θ and the
    bounds; the bounds are the user's, so releasing them costs nothing."""

    theta: F64
    x_bound: F64
    y_bound: float

    @classmethod
    def fit(
        cls,
        x: F64,
        y: F64,
        *,
        x_bound: npt.ArrayLike | None = None,
        y_bound: float | None = None,
        rows: int,
        bits: int,
        epsilon: float | None,
        rng: np.random.Generator,
        iterations: int = 500,
    ) -> RaceRegressor:
        """``x_bound`` (one number or one per feature) and ``y_bound`` are required public
        bounds (:class:`PublicBoundsError` without them): |x_j| ≤ x_bound_j, |y| ≤ y_bound
        after clipping. Centre the data with public constants first if it is not centred
        on 0 (or add a constant column for an intercept).

        The descent minimises f̂(θ, −1)/N̂ with N̂ = (Σ cells)/(2R), the record count the
        released sketch estimates (each record fills two cells per row), floored at that
        count's own noise sd √(2RW)/ε: a post-processing of the release, where the
        private N would make θ depend on the data beyond the sketch. The floor keeps a
        noise-dominated (or negative) N̂ from blowing up the step size; without privacy
        N̂ = N."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        bx = public_bounds(x_bound, x.shape[1], "x_bound")
        by = float(public_bounds(y_bound, 1, "y_bound")[0])
        z = np.column_stack([np.clip(x, -bx, bx) / bx, np.clip(y, -by, by) / by])
        family = SRPHash.draw(rows, z.shape[1], bits, rng)
        width = 2**bits
        sketch = RaceSketch(family, width).add(np.vstack([z, -z]))
        floor = 1.0
        if epsilon is not None:
            sketch, _ = release(sketch, epsilon, rng, rounding="none", copies=2)
            floor = max(floor, math.sqrt(2.0 * rows * width) / epsilon)
        n_hat = max(sketch.total / 2.0, floor)

        def objective(thetas: F64) -> F64:
            q = np.column_stack([thetas, -np.ones(thetas.shape[0])])
            return sketch.query(q) / n_hat

        theta = zeroth_order_minimise(objective, np.zeros(x.shape[1]), rng, iterations=iterations)
        return cls(theta=theta, x_bound=bx, y_bound=by)

    def predict(self, x: F64) -> F64:
        """ŷ = y_bound · (clip(x)/x_bound)ᵀθ: inputs clipped to the bounds, as in fitting."""
        scaled = np.clip(np.asarray(x, dtype=np.float64), -self.x_bound, self.x_bound)
        return np.asarray((scaled / self.x_bound) @ self.theta * self.y_bound, dtype=np.float64)
