import itertools

import numpy as np
import pytest

from privsim.protocols.blr.maths import (
    client_statistics,
    posterior,
    project,
    repair_precision,
    statistics_sensitivity,
    unpack_statistics,
)


def test_statistics_sum_to_the_centralised_ones():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 4)), rng.normal(size=50)
    xx, xy = unpack_statistics(client_statistics(x, y).sum(axis=0), 4)
    np.testing.assert_allclose(xx, x.T @ x, rtol=1e-12)
    np.testing.assert_allclose(xy, x.T @ y, rtol=1e-12)


def test_sensitivity_bounds_brute_force_on_the_box_corners_and_is_attained():
    # The L2 change is maximised over the box; corners (and zero for the squares) are the
    # extreme points of every coordinate, so the brute-force max over {-c, 0, c}^d x {-cy, cy}
    # is the true supremum of the per-coordinate bound construction.
    c, cy = np.array([1.0, 2.0, 0.5]), 1.5
    values = [(-ci, 0.0, ci) for ci in c]
    points = [(np.array(p), yv) for p in itertools.product(*values) for yv in (-cy, cy)]
    stats = np.array([client_statistics(p[None, :], np.array([yv]))[0] for p, yv in points])
    best = max(np.linalg.norm(a - b) for a in stats for b in stats)
    bound = statistics_sensitivity(c, cy)
    assert best <= bound + 1e-12
    assert best >= 0.75 * bound  # the bound is not loose by more than the diagonal terms


def test_posterior_mean_is_the_closed_form():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=200)
    mean, precision = posterior(x.T @ x, x.T @ y, prior_precision=2.0, noise_precision=3.0)
    closed = np.linalg.inv(2.0 * np.eye(3) + 3.0 * x.T @ x) @ (3.0 * x.T @ y)
    np.testing.assert_allclose(mean, closed, rtol=1e-10)
    np.testing.assert_allclose(precision, 2.0 * np.eye(3) + 3.0 * x.T @ x)


def test_repair_makes_the_matrix_positive_semidefinite_and_keeps_psd_ones():
    m = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    fixed = repair_precision(m)
    assert np.all(np.linalg.eigvalsh(fixed) >= -1e-12)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(fixed)), [1.0, 3.0])
    psd = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(repair_precision(psd), psd)


@pytest.mark.parametrize("bound", [0.5, 2.0])
def test_projection_clips_to_bounds(bound):
    v = np.array([[-3.0, 0.1, 3.0]])
    np.testing.assert_array_equal(project(v, np.full(3, bound)), [[-bound, 0.1, bound]])
