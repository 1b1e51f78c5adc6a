"""DP Bayesian linear regression by sufficient statistic perturbation, centrally computed:
the data preparation of §4 and the methods that need no secure sum (NP, proj NP, TA,
proj TA, input perturbation). The distributed methods (DDP, proj DDP) release the same
statistics through DCA on the bus (:mod:`privsim.protocols.blr.behaviours`) and are
fitted with :func:`fit`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.protocols.blr.maths import (
    client_moments,
    client_statistics,
    posterior,
    project,
    repair_precision,
    unpack_statistics,
)

__all__ = [
    "RegressionSplit",
    "fit",
    "mean_absolute_error",
    "moment_release",
    "projection_bounds",
    "scale_to_bounds",
    "scale_to_range",
    "split",
    "statistic_release",
]

F64 = npt.NDArray[np.float64]


def scale_to_range(x: F64, y: F64, length: float = 10.0) -> tuple[F64, F64]:
    """§4: centre every column (features and target) and scale it to a range of
    ``length``. Done once on the whole data set, before any split, as the paper: its
    declared preprocessing of the built-in data sets. The mean and range are statistics
    of the data outside the privacy ledger, so a user's CSV is scaled by public bounds
    instead (:func:`scale_to_bounds`)."""
    table = np.column_stack([np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)])
    spread = table.max(axis=0) - table.min(axis=0)
    constant = np.flatnonzero(spread == 0)
    if constant.size:
        raise ValueError(
            f"column(s) {constant.tolist()} are constant and cannot be scaled to a range; "
            "drop them from the features"
        )
    table = (table - table.mean(axis=0)) * (length / spread)
    return table[:, :-1], table[:, -1]


def _to_box(column: F64, lo: float, hi: float, length: float) -> F64:
    """``column`` clipped to [lo, hi] and mapped affinely onto [−length/2, length/2]."""
    return (np.clip(column, lo, hi) - (lo + hi) / 2.0) * (length / (hi - lo))


def scale_to_bounds(
    x: F64,
    y: F64,
    feature_bounds: Sequence[tuple[float, float]] = (),
    target_bounds: tuple[float, float] | None = None,
    length: float = 10.0,
) -> tuple[F64, F64]:
    """A user's data by public bounds, not by its own statistics: each feature j with
    ``feature_bounds[j] = (lo, hi)`` (and the target with ``target_bounds``) is clipped
    to [lo, hi] and mapped onto [−length/2, length/2], the range-``length`` box of §4.
    Columns without bounds (``feature_bounds`` empty, ``target_bounds`` None) are kept
    as given. Every record is transformed by the same constants, so one record's change
    moves only its own row (unlike :func:`scale_to_range`, whose mean and range depend
    on every record)."""
    xs = np.array(x, dtype=np.float64)
    ys = np.array(y, dtype=np.float64)
    if feature_bounds:
        if len(feature_bounds) != xs.shape[1]:
            raise ValueError(f"{len(feature_bounds)} feature bounds for {xs.shape[1]} features")
        for j, (lo, hi) in enumerate(feature_bounds):
            xs[:, j] = _to_box(xs[:, j], lo, hi, length)
    if target_bounds is not None:
        ys = _to_box(ys, target_bounds[0], target_bounds[1], length)
    return xs, ys


@dataclass(frozen=True, slots=True)
class RegressionSplit:
    """Training records (one per client) and held-out test records."""

    x_train: F64
    y_train: F64
    x_test: F64
    y_test: F64

    @property
    def dimension(self) -> int:
        return int(self.x_train.shape[1])


def split(x: F64, y: F64, n_train: int, n_test: int, rng: np.random.Generator) -> RegressionSplit:
    """Disjoint random train and test subsets, drawn without replacement."""
    total = x.shape[0]
    if n_train + n_test > total:
        raise ValueError(
            f"blr: {n_train} training + {n_test} test records requested but the data set has "
            f"{total}; lower population.clients or blr.test"
        )
    order = rng.permutation(total)[: n_train + n_test]
    tr, te = order[:n_train], order[n_train:]
    return RegressionSplit(x[tr], y[tr], x[te], y[te])


def _release(
    x: F64,
    y: F64,
    bounds: F64,
    noise_std: float,
    rng: np.random.Generator | None,
    per_client: Callable[[F64, F64], F64],
) -> F64:
    clipped = project(np.column_stack([x, y]), bounds)
    total = per_client(clipped[:, :-1], clipped[:, -1]).sum(axis=0)
    if rng is not None and noise_std > 0:
        total = total + noise_std * rng.standard_normal(total.size)
    return np.asarray(total, dtype=np.float64)


def moment_release(
    x: F64, y: F64, bounds: F64, noise_std: float, rng: np.random.Generator | None
) -> F64:
    """Step 2, central: Σ (clipped v_ij)² plus N(0, noise_std²) per entry."""
    return _release(x, y, bounds, noise_std, rng, client_moments)


def statistic_release(
    x: F64, y: F64, bounds: F64, noise_std: float, rng: np.random.Generator | None
) -> F64:
    """Step 4, central: Σ client_statistics of data projected to ±bounds, plus N(0, σ²)."""
    return _release(x, y, bounds, noise_std, rng, client_statistics)


def projection_bounds(
    std: F64, feature_fraction: float, target_fraction: float, assumed: F64
) -> F64:
    """Step 3: bounds p·σ̂_j (features p_x, target p_y), never wider than the assumed ones."""
    fractions = np.full(std.size, feature_fraction)
    fractions[-1] = target_fraction
    return np.asarray(np.minimum(fractions * std, assumed), dtype=np.float64)


def fit(
    released: F64, d: int, *, prior_precision: float = 1.0, noise_precision: float = 1.0
) -> F64:
    """Posterior mean from released statistics, the noisy Σ x xᵀ made positive
    semi-definite by absolute eigenvalues first."""
    xx, xy = unpack_statistics(released, d)
    mean, _ = posterior(
        repair_precision(xx), xy, prior_precision=prior_precision, noise_precision=noise_precision
    )
    return mean


def mean_absolute_error(mean: F64, data: RegressionSplit) -> float:
    """Predictive MAE on the (unprojected) test records."""
    return float(np.mean(np.abs(data.x_test @ mean - data.y_test)))
