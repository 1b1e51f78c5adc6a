"""Applications of private RACE sketches (Coleman & Shrivastava 2021, §4–5).

- KDE: the normalised query f̂(q)/N̂ of an ε-DP sketch estimates the kernel density.
- Classification: one sketch per class on that class's records (disjoint records, so the
  class sketches together are ε-DP by parallel composition); a query goes to the
  maximum-likelihood class, argmax_c p̂(q | c) = f̂_c(q)/N̂_c (class priors left out:
  with them the majority class wins almost every query on imbalanced data).
- Regression: linear regression reduced to an LSH kernel sum (§4). With z_i = (x_i, y_i)
  scaled into the unit ball and each added as z_i and −z_i to an SRP sketch with p bits,
  the estimate at q = (θ, −1) is Σ_i (1 − a_i/π)^p + (a_i/π)^p with a_i the angle between
  z_i and q, smallest when every z_i ⟂ q, i.e. x_iᵀθ = y_i. θ is found by zeroth-order
  momentum descent on the private sketch (no further privacy cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.protocols.race.lsh import L2Hash, SRPHash
from privsim.protocols.race.private import release
from privsim.protocols.race.sketch import RaceSketch

__all__ = ["RaceClassifier", "RaceRegressor", "zeroth_order_minimise"]

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


@dataclass
class RaceRegressor:
    """θ from a private SRP sketch of ±(x, y) scaled by the largest absolute value."""

    theta: F64
    scale_x: F64
    scale_y: float

    @classmethod
    def fit(
        cls,
        x: F64,
        y: F64,
        *,
        rows: int,
        bits: int,
        epsilon: float | None,
        rng: np.random.Generator,
        iterations: int = 500,
    ) -> RaceRegressor:
        scale_x = np.maximum(np.abs(x).max(axis=0), 1e-12)
        scale_y = float(max(np.abs(y).max(), 1e-12))
        z = np.column_stack([x / scale_x, y / scale_y])
        family = SRPHash.draw(rows, z.shape[1], bits, rng)
        sketch = RaceSketch(family, 2**bits).add(np.vstack([z, -z]))
        if epsilon is not None:
            sketch, _ = release(sketch, epsilon, rng, rounding="none", copies=2)

        def objective(thetas: F64) -> F64:
            q = np.column_stack([thetas, -np.ones(thetas.shape[0])])
            return sketch.query(q) / x.shape[0]

        theta = zeroth_order_minimise(objective, np.zeros(x.shape[1]), rng, iterations=iterations)
        return cls(theta=theta, scale_x=scale_x, scale_y=scale_y)

    def predict(self, x: F64) -> F64:
        return np.asarray((x / self.scale_x) @ self.theta * self.scale_y, dtype=np.float64)
