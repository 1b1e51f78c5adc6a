import itertools

import numpy as np
import pytest

from privsim.protocols.blr.maths import (
    client_moments,
    client_statistics,
    marginal_std,
    moment_sensitivity,
    posterior,
    predict,
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


# --- mutation-testing additions (Heikkilä et al. 2017, §3.2.1, Algorithm 2) ---------------


def test_projection_uses_each_coordinates_own_bound_and_keeps_interior_values():
    # Algorithm 2, steps 1 and 3: coordinate j is clipped to [-b_j, b_j], independently.
    bounds = np.array([0.5, 2.0, 4.0])
    v = np.array([[-1.0, -1.0, -5.0], [0.25, 3.0, 3.9], [-0.5, -2.0, 4.0]])
    out = project(v, bounds)
    np.testing.assert_array_equal(out, [[-0.5, -1.0, -4.0], [0.25, 2.0, 3.9], [-0.5, -2.0, 4.0]])
    assert np.all(np.abs(out) <= bounds)
    np.testing.assert_array_equal(project(out, bounds), out)  # a projection is idempotent


def test_each_clients_statistics_are_its_own_outer_product_and_cross_product():
    rng = np.random.default_rng(2)
    d = 3
    x, y = rng.normal(size=(4, d)), rng.normal(size=4)
    stats = client_statistics(x, y)
    assert stats.shape == (4, d * (d + 1) // 2 + d)
    for i in range(4):
        xx, xy = unpack_statistics(stats[i], d)
        np.testing.assert_allclose(xx, np.outer(x[i], x[i]), rtol=1e-14)
        np.testing.assert_allclose(xy, x[i] * y[i], rtol=1e-14)
    # one record given as a flat vector, and targets given as a column, are the same data
    np.testing.assert_array_equal(client_statistics(x[0], y[:1]), stats[:1])
    np.testing.assert_array_equal(client_statistics(x, y[:, None]), stats)


def test_unpacking_ignores_trailing_entries_and_fills_the_whole_symmetric_matrix():
    rng = np.random.default_rng(3)
    d = 4
    x, y = rng.normal(size=(10, d)), rng.normal(size=10)
    z = client_statistics(x, y).sum(axis=0)
    xx, xy = unpack_statistics(np.concatenate([z, [7.0, 8.0]]), d)
    np.testing.assert_allclose(xx, x.T @ x, rtol=1e-12)  # every off-diagonal, not just j+1
    np.testing.assert_allclose(xy, x.T @ y, rtol=1e-12)
    assert xy.shape == (d,)


def _coordinate_ranges(c, cy):
    # The range (max - min) of each packed statistic over the box |x_j| <= c_j, |y| <= cy:
    # every entry is a product of at most two coordinates, so its extremes are attained at
    # points with coordinates in {-c_j, 0, c_j}.
    values = [(-ci, 0.0, ci) for ci in c]
    pts = [(np.array(p), yv) for p in itertools.product(*values) for yv in (-cy, 0.0, cy)]
    stats = np.array([client_statistics(p[None, :], np.array([yv]))[0] for p, yv in pts])
    return stats.max(axis=0) - stats.min(axis=0), stats


def test_replace_one_sensitivity_is_the_norm_of_the_per_entry_ranges():
    c, cy = np.array([1.0, 2.0, 0.7]), 1.5  # 1/c is no permutation of c
    ranges, _ = _coordinate_ranges(c, cy)
    assert statistics_sensitivity(c, cy) == pytest.approx(np.linalg.norm(ranges), rel=1e-12)
    assert statistics_sensitivity(c, cy, "replace_one") == statistics_sensitivity(c, cy)


def test_add_remove_sensitivity_is_the_largest_single_record_and_is_attained():
    c, cy = np.array([1.0, 2.0, 0.7]), 1.5  # 1/c is no permutation of c
    _, stats = _coordinate_ranges(c, cy)
    bound = statistics_sensitivity(c, cy, "add_remove")
    largest = np.linalg.norm(stats, axis=1).max()  # adding one record adds its vector
    assert largest == pytest.approx(bound, rel=1e-12)


def test_client_moments_sum_to_the_marginal_second_moments():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    m = client_moments(x, y)
    assert m.shape == (30, 4)
    np.testing.assert_allclose(m.sum(axis=0), np.concatenate([(x**2).sum(0), [y @ y]]))
    np.testing.assert_array_equal(client_moments(x[0], y[:1]), m[:1])


def test_moment_sensitivity_is_the_largest_change_of_one_record_and_is_attained():
    c = np.array([1.0, 2.0, 0.5, 3.0])
    pts = np.array(list(itertools.product(*[(-ci, 0.0, ci) for ci in c])))
    m = client_moments(pts[:, :-1], pts[:, -1])
    best = max(np.linalg.norm(a - b) for a in m for b in m)
    assert best == pytest.approx(moment_sensitivity(c), rel=1e-12)


def test_marginal_std_is_the_root_mean_square_and_floors_non_positive_estimates():
    s = np.array([8.0, 0.5, 0.0, -3.0])
    floor = 0.01
    np.testing.assert_allclose(marginal_std(s, 2, floor), [2.0, 0.5, 0.1, 0.1], rtol=1e-14)
    np.testing.assert_allclose(marginal_std(s[:2], 1, floor), np.sqrt(s[:2]), rtol=1e-14)
    assert np.all(np.isfinite(marginal_std(s, 0, floor)))  # no records: no division by zero


def test_repair_of_a_stack_mirrors_negative_eigenvalues_and_keeps_eigenvectors():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 4, 4))
    sym = 0.5 * (a + np.swapaxes(a, -1, -2))
    fixed = repair_precision(sym)
    w, v = np.linalg.eigh(sym)
    assert np.any(w < 0)  # the case the repair exists for
    for k in range(3):
        np.testing.assert_allclose(fixed[k] @ v[k], v[k] * np.abs(w[k]), atol=1e-12)
        np.testing.assert_allclose(fixed[k], repair_precision(sym[k]), atol=1e-12)
    # only the symmetric part of a (numerically) asymmetric input matters
    np.testing.assert_allclose(repair_precision(a), fixed, atol=1e-12)


def test_posterior_on_a_stack_is_the_posterior_of_each_member():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 40, 3))
    y = rng.normal(size=(2, 40))
    xx = np.einsum("kni,knj->kij", x, x)
    xy = np.einsum("kni,kn->ki", x, y)
    means, precisions = posterior(xx, xy, prior_precision=0.5, noise_precision=4.0)
    for k in range(2):
        m, p = posterior(xx[k], xy[k], prior_precision=0.5, noise_precision=4.0)
        np.testing.assert_allclose(means[k], m, rtol=1e-12)
        np.testing.assert_allclose(precisions[k], p, rtol=1e-12)
        # the posterior mean is the ridge solution with penalty λ₀/λ
        ridge = np.linalg.solve(xx[k] + (0.5 / 4.0) * np.eye(3), xy[k])
        np.testing.assert_allclose(m, ridge, rtol=1e-10)


def test_prediction_is_the_linear_predictor():
    x = np.array([[1.0, 2.0], [-1.0, 0.5]])
    np.testing.assert_allclose(predict(x, np.array([3.0, -1.0])), [1.0, -3.5])
