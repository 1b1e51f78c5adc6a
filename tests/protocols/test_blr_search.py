"""The auxiliary grid search for the projection thresholds (Algorithm 2, step 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.protocols.blr.maths import posterior, statistics_sensitivity
from privsim.protocols.blr.regression import fit, statistic_release
from privsim.protocols.blr.search import ThresholdGrid, search_thresholds

GRID = ThresholdGrid(points=8, repeats=5)
N, D = 300, 4


@pytest.mark.parametrize(("multiplier", "seed"), [(0.0, 0), (1.0, 1), (10.0, 2)])
def test_the_choice_is_the_grid_cell_with_the_lowest_mean_error(multiplier, seed):
    choice = search_thresholds(N, D, multiplier, np.random.default_rng(seed), grid=GRID)
    assert choice.errors.shape == (GRID.points, GRID.points)
    assert np.all(np.isfinite(choice.errors)) and np.all(choice.errors > 0)
    a, b = np.unravel_index(int(np.argmin(choice.errors)), choice.errors.shape)
    assert (choice.feature, choice.target) == (GRID.fractions[a], GRID.fractions[b])
    assert choice.errors[a, b] == choice.errors.min()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_without_noise_projection_only_adds_bias(seed):
    choice = search_thresholds(N, D, 0.0, np.random.default_rng(seed), grid=GRID)
    top = choice.errors[-1, -1]
    # Without noise the widest bounds are (nearly) the best: either they are chosen, or
    # the error there is within 1e-3 of the minimum (a few records at 2.1 std are still
    # clipped, which can only move the fit by a hair, either way).
    at_top = choice.feature == GRID.high and choice.target == GRID.high
    assert at_top or top - choice.errors.min() <= 1e-3
    # and the tightest bounds are clearly worse (bias from clipping nearly everything)
    assert choice.errors[0, 0] > top + 0.05


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_a_large_multiplier_the_chosen_fractions_are_small(seed):
    # z = 10 with N = 300: at the widest bounds the noise swamps the statistics, at the
    # tightest ones it does not; the search must go to the bottom of the grid.
    # (For much larger z, say 1e4, the noise dominates every cell, the posterior mean
    # becomes a ratio of noise terms independent of the bounds, and the error surface
    # is flat in the target fraction: no choice is then meaningful.)
    choice = search_thresholds(N, D, 10.0, np.random.default_rng(seed), grid=GRID)
    assert choice.feature == GRID.fractions[0] and choice.target == GRID.fractions[0]
    assert choice.errors[-1, -1] > 2 * choice.errors.min()


def test_the_chosen_fractions_shrink_as_the_noise_grows():
    chosen = [
        search_thresholds(N, D, z, np.random.default_rng(4), grid=GRID)
        for z in (0.0, 0.3, 1.0, 3.0, 10.0)
    ]
    features = [c.feature for c in chosen]
    targets = [c.target for c in chosen]
    assert features == sorted(features, reverse=True) and features[0] > features[-1]
    assert targets == sorted(targets, reverse=True) and targets[0] > targets[-1]


def test_same_seed_same_errors_and_another_seed_other_errors():
    one = search_thresholds(N, D, 1.0, np.random.default_rng(9), grid=GRID)
    two = search_thresholds(N, D, 1.0, np.random.default_rng(9), grid=GRID)
    np.testing.assert_array_equal(one.errors, two.errors)
    assert (one.feature, one.target) == (two.feature, two.target)
    other = search_thresholds(N, D, 1.0, np.random.default_rng(10), grid=GRID)
    assert not np.array_equal(one.errors, other.errors)


def _reference_errors(n, d, z, seed, grid, prior, precision, neighbour):
    """The search written cell by cell with the public functions: the same draws in the
    same order, the real release (projection, Σ statistics, noise of z·Δ₂(bounds)) and
    the real fit (absolute-eigenvalue repair, posterior mean)."""
    rng = np.random.default_rng(seed)
    k = d * (d + 1) // 2 + d
    errors = np.zeros((grid.points, grid.points))
    for _ in range(grid.repeats):
        beta = rng.standard_normal(d) / np.sqrt(prior)
        x = rng.standard_normal((n, d))
        y = x @ beta + rng.standard_normal(n) / np.sqrt(precision)
        noise = rng.standard_normal(k)
        for a, px in enumerate(grid.fractions):
            for b, py in enumerate(grid.fractions):
                bounds = np.append(np.full(d, px), py * np.std(y))
                sigma = z * statistics_sensitivity(bounds[:-1], float(bounds[-1]), neighbour)
                released = statistic_release(x, y, bounds, 0.0, None) + sigma * noise
                mean = fit(released, d, prior_precision=prior, noise_precision=precision)
                squared = np.sum((mean - beta) ** 2) + 1.0 / precision
                errors[a, b] += math.sqrt(2.0 / math.pi) * math.sqrt(squared)
    return errors / grid.repeats


@pytest.mark.parametrize("neighbour", ["replace_one", "add_remove"])
def test_vectorised_search_equals_the_cell_by_cell_computation(neighbour):
    grid = ThresholdGrid(low=0.3, high=1.8, points=4, repeats=2)
    n, d, z, seed = 120, 3, 0.7, 5
    prior, precision = 2.0, 0.5
    got = search_thresholds(
        n,
        d,
        z,
        np.random.default_rng(seed),
        grid=grid,
        prior_precision=prior,
        noise_precision=precision,
        neighbour=neighbour,
    )
    want = _reference_errors(n, d, z, seed, grid, prior, precision, neighbour)
    # Same draws, same arithmetic up to summation order and batched vs single linear
    # algebra: agreement to ~1e-12 relative; 1e-9 leaves room for LAPACK differences.
    np.testing.assert_allclose(got.errors, want, rtol=1e-9)


def test_closed_form_error_matches_a_monte_carlo_held_out_estimate():
    # One grid cell far outside the data (±50 std: nothing is clipped) and z = 0: the
    # search's error is sqrt(2/π)·sqrt(‖μ − β‖² + 1/λ) for the exact posterior mean μ of
    # its auxiliary data set. Redraw that data set from the same seed, compute μ, and
    # estimate E|x*ᵀμ − y*| on fresh data from the same β by Monte Carlo.
    n, d, prior, precision, seed = 10, 3, 1.0, 2.0, 21
    grid = ThresholdGrid(low=50.0, high=51.0, points=1, repeats=1)
    choice = search_thresholds(
        n,
        d,
        0.0,
        np.random.default_rng(seed),
        grid=grid,
        prior_precision=prior,
        noise_precision=precision,
    )
    rng = np.random.default_rng(seed)
    beta = rng.standard_normal(d) / np.sqrt(prior)
    x = rng.standard_normal((n, d))
    y = x @ beta + rng.standard_normal(n) / np.sqrt(precision)
    mu, _ = posterior(x.T @ x, x.T @ y, prior_precision=prior, noise_precision=precision)
    closed = math.sqrt(2 / math.pi) * math.sqrt(float(np.sum((mu - beta) ** 2)) + 1 / precision)
    assert choice.errors[0, 0] == pytest.approx(closed, rel=1e-10)
    # the estimation error ‖μ − β‖² is a visible part of it (n is small on purpose)
    bias_share = closed / (math.sqrt(2 / math.pi) / math.sqrt(precision)) - 1
    assert bias_share > 0.01

    mc = np.random.default_rng(99)
    m = 400_000
    x_new = mc.standard_normal((m, d))
    y_new = x_new @ beta + mc.standard_normal(m) / np.sqrt(precision)
    abs_err = np.abs(x_new @ mu - y_new)
    estimate = float(abs_err.mean())
    # Standard error of the mean of |r|, r ~ N(0, s²): s·sqrt(1 − 2/π)/sqrt(m) (estimated
    # from the sample). 4 standard errors: a false alarm about once in 16 000 seeds.
    se = float(abs_err.std(ddof=1)) / math.sqrt(m)
    assert abs(estimate - closed) < 4 * se
    # and the test can tell the bias term apart from the irreducible noise alone
    assert abs(estimate - math.sqrt(2 / math.pi / precision)) > 4 * se
