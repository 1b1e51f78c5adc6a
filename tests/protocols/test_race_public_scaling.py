"""The RACE regressor scales by public bounds, never by the private data (issue 23).

It used to divide by the training data's largest absolute values and release them in
the model. Neighbouring data sets D and D′ = D without the record holding the maximum
then (a) release different scales — the maximum itself, with no noise — and (b) hand
``release`` sketches that differ in far more than the 2R cells its Laplace scale
covers, since that record's removal rescales every other record. Here D holds one
outlier that is the maximum of |x| and of |y|; each test shows the fix on the released
model and the old behaviour (its scales rebuilt below as ``_old_scaling``, its
normalisation by N inline) failing the same check.

Empirical check: the 95% lower bound on ε of the best threshold test on a released
statistic (:mod:`privsim.audit.distinguish`: threshold chosen on one half of the trials,
Clopper–Pearson bounds on the other half) must not exceed the claimed ε. For the fix the
statistic is θ (d = 1, so θ is a scalar) and the scale; for the old behaviour, its
released scale. With 1500 trials per side (750 evaluated) a bound holds with
probability ≥ 95% for a correct mechanism, so a pass is the expected outcome, and the
seeds are fixed, so it is deterministic. Measured: the fix's bounds are 0 for θ (its
mean moves by 0.08 against an sd of 0.75: no threshold separates the two sides enough
for 750 trials to certify any ε > 0) and 0 for the scale (a constant), below ε = 2;
the old scale separates D from D′ on every trial, which 750 + 750 error-free trials
turn into a bound of ln(0.995/0.0049) ≈ 5.3 > 2. A broken release would have to make
θ separable to fail here; the sensitivity and post-processing tests check the rest
exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import privsim.protocols.race.applications as apps
from privsim.audit.distinguish import best_threshold, evaluate, split_halves
from privsim.protocols.race.applications import PublicBoundsError, RaceRegressor
from privsim.protocols.race.lsh import SRPHash
from privsim.protocols.race.private import release
from privsim.protocols.race.sketch import RaceSketch

EPSILON = 2.0
ROWS, BITS = 16, 2
TRIALS = 1500  # per side; half choose the threshold, half are counted
CONFIDENCE = 0.95


def _neighbours() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """D: 12 records inside the public box [−1, 1]² (y ≈ 0.8x) and one outlier, the
    maximum of |x| and of |y|; D′: D without the outlier (add/remove neighbours)."""
    rng = np.random.default_rng(23)
    x = rng.uniform(-1.0, 1.0, size=(12, 1))
    y = 0.8 * x[:, 0] + rng.normal(0.0, 0.05, 12)
    big_x, big_y = np.vstack([x, [[40.0]]]), np.append(y, -40.0)
    assert np.abs(big_x).argmax() == np.abs(big_y).argmax() == 12
    return (big_x, big_y), (x, y)


def _fit(x: np.ndarray, y: np.ndarray, seed: int, epsilon: float | None = EPSILON) -> RaceRegressor:
    return RaceRegressor.fit(
        x,
        y,
        x_bound=1.0,
        y_bound=1.0,
        rows=ROWS,
        bits=BITS,
        epsilon=epsilon,
        rng=np.random.default_rng(seed),
        iterations=20,
    )


def _old_scaling(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The scales the regressor used to compute and release: max |x_j| and max |y|."""
    return np.maximum(np.abs(x).max(axis=0), 1e-12), float(max(np.abs(y).max(), 1e-12))


def _lower_bound(on_d: np.ndarray, on_d_prime: np.ndarray) -> float:
    """95% lower bound on ε of a threshold test on the statistic, either direction."""
    best = 0.0
    for out, into in ((on_d, on_d_prime), (on_d_prime, on_d)):
        (sel_out, ev_out), (sel_in, ev_in) = split_halves(out), split_halves(into)
        threshold = best_threshold(sel_out, sel_in, 0.0, CONFIDENCE)
        best = max(best, evaluate(ev_out, ev_in, threshold, 0.0, CONFIDENCE).lower_bound)
    return best


def test_bounds_are_required_and_checked():
    (x, y), _ = _neighbours()
    kwargs = {"rows": 4, "bits": 2, "epsilon": 1.0, "rng": np.random.default_rng(0)}
    with pytest.raises(PublicBoundsError, match=r"^x_bound is required: give public bounds"):
        RaceRegressor.fit(x, y, y_bound=1.0, **kwargs)
    with pytest.raises(PublicBoundsError, match=r"^y_bound is required"):
        RaceRegressor.fit(x, y, x_bound=1.0, **kwargs)
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(PublicBoundsError, match=r"^x_bound must be finite and > 0"):
            RaceRegressor.fit(x, y, x_bound=bad, y_bound=1.0, **kwargs)
    with pytest.raises(PublicBoundsError, match=r"^x_bound must be one number or 1 \(one per"):
        RaceRegressor.fit(x, y, x_bound=[1.0, 2.0], y_bound=1.0, **kwargs)
    assert issubclass(PublicBoundsError, ValueError)


def test_records_are_clipped_to_the_bounds_and_predictions_use_them():
    (x, y), _ = _neighbours()
    model = _fit(x, y, 0, epsilon=None)
    np.testing.assert_array_equal(model.x_bound, [1.0])
    assert model.y_bound == 1.0
    # A test input beyond the bound is clipped, as the records were.
    np.testing.assert_allclose(model.predict(np.array([[40.0]])), model.theta)
    np.testing.assert_allclose(model.predict(np.array([[0.5]])), 0.5 * model.theta)


def test_neighbours_release_the_same_scales():
    """The released scales are the public bounds on D and D′ alike; the old ones were
    the maxima, so they differed exactly where the record holding a maximum was."""
    (x, y), (x2, y2) = _neighbours()
    a, b = _fit(x, y, 1), _fit(x2, y2, 1)
    np.testing.assert_array_equal(a.x_bound, b.x_bound)
    assert a.y_bound == b.y_bound
    old_a, old_b = _old_scaling(x, y), _old_scaling(x2, y2)
    assert old_a[0][0] == 40.0 and old_a[1] == 40.0  # the outlier itself, released
    assert old_b[0][0] < 1.0 and old_b[1] < 1.0


def test_removing_the_maximum_moves_the_sketch_by_2r_and_no_more():
    """Same hash functions on D and D′: with public scaling the sketches handed to
    ``release`` differ by the removed record's z and −z, 2 cells in each of R rows; with
    the old max scaling every other record is rescaled too and the L1 distance exceeds
    2R, so Laplace(2R/ε) no longer makes the release ε-DP."""
    (x, y), (x2, y2) = _neighbours()
    rows = 400
    family = SRPHash.draw(rows, 2, BITS, np.random.default_rng(5))

    def sketch(z: np.ndarray) -> np.ndarray:
        return RaceSketch(family, 2**BITS).add(np.vstack([z, -z])).counts

    def public(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        return np.column_stack([np.clip(xs, -1.0, 1.0), np.clip(ys, -1.0, 1.0)])

    def old(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        sx, sy = _old_scaling(xs, ys)
        return np.column_stack([xs / sx, ys / sy])

    assert np.abs(sketch(public(x, y)) - sketch(public(x2, y2))).sum() == 2 * rows
    old_l1 = np.abs(sketch(old(x, y)) - sketch(old(x2, y2))).sum()
    assert old_l1 > 2 * rows  # measured: 4.4R on this draw


def test_theta_is_a_post_processing_of_the_released_sketch(monkeypatch):
    """Give the fits on D and D′ the same released sketch (and seed): θ must then be the
    same — it may depend on the data only through the release. Dividing the objective
    by the private N (as the regressor used to) fails this: N differs by one."""
    (x, y), (x2, y2) = _neighbours()
    fixed = np.random.default_rng(7).uniform(0.0, 50.0, size=(ROWS, 2**BITS))

    def same_release(sketch, epsilon, rng, **kwargs):
        out, event = release(sketch, epsilon, rng, **kwargs)  # consumes the same draws
        out.counts = fixed.copy()
        return out, event

    monkeypatch.setattr(apps, "release", same_release)
    a, b = _fit(x, y, 3), _fit(x2, y2, 3)
    np.testing.assert_array_equal(a.theta, b.theta)

    # The old normalisation by N: the same sketch gives a different θ on D and D′.
    def by_n(n: int) -> np.ndarray:
        sketch = RaceSketch(SRPHash.draw(ROWS, 2, BITS, np.random.default_rng(3)), 2**BITS)
        sketch.counts = fixed.copy()

        def objective(thetas: np.ndarray) -> np.ndarray:
            q = np.column_stack([thetas, -np.ones(thetas.shape[0])])
            return sketch.query(q) / n

        return apps.zeroth_order_minimise(
            objective, np.zeros(1), np.random.default_rng(4), iterations=20
        )

    assert not np.array_equal(by_n(x.shape[0]), by_n(x2.shape[0]))


def test_audit_of_the_released_model_stays_within_epsilon():
    """Many seeded fits on D and D′: no threshold test on θ or on the released scale
    refutes ε (95% lower bound ≤ ε); the old released scale refutes it."""
    (x, y), (x2, y2) = _neighbours()
    on_d = [_fit(x, y, seed) for seed in range(TRIALS)]
    on_d_prime = [_fit(x2, y2, 10**6 + seed) for seed in range(TRIALS)]
    theta_bound = _lower_bound(
        np.array([m.theta[0] for m in on_d]), np.array([m.theta[0] for m in on_d_prime])
    )
    scale_bound = _lower_bound(
        np.array([m.x_bound[0] for m in on_d]), np.array([m.x_bound[0] for m in on_d_prime])
    )
    assert theta_bound <= EPSILON, theta_bound
    assert scale_bound == 0.0
    # The old behaviour, the same audit: its released scale is max |x|, which is the
    # outlier on D and inside the box on D′, on every trial.
    old_d = np.full(TRIALS, _old_scaling(x, y)[0][0])
    old_d_prime = np.full(TRIALS, _old_scaling(x2, y2)[0][0])
    assert _lower_bound(old_d, old_d_prime) > EPSILON
