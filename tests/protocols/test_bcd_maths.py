"""The pure maths of (DP-)BCD (de Jong, Kamphorst & Kroes 2022): the local least-squares
step of Eq. (9), the per-step budget of Algorithm 2, the perturbation of Eq. (12), and the
accuracy measures of §3.2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.protocols.bcd.maths import (
    LocalBlock,
    aapd,
    centralised_solution,
    perturbation,
    perturbation_scale,
    r_squared,
    step_budget,
)


def _block(seed=0, n=40, m=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m)) * np.array([1.0, 3.0, 0.2])[:m]
    v = x @ rng.standard_normal(m) + rng.standard_normal(n)
    return x, v


def test_local_step_is_the_least_squares_fit_of_eq_9():
    x, v = _block()
    block = LocalBlock.of(x)
    beta = block.solve(v)
    np.testing.assert_allclose(beta, np.linalg.solve(x.T @ x, x.T @ v), rtol=1e-10)
    np.testing.assert_allclose(block.fitted(v), x @ beta, rtol=1e-10, atol=1e-12)
    # the remainder v_out = v − Xβ̃ is orthogonal to the party's columns (normal equations)
    residual = v - block.fitted(v)
    np.testing.assert_allclose(x.T @ residual, 0.0, atol=1e-10)
    assert block.residual_norm(v) == pytest.approx(np.linalg.norm(residual), rel=1e-12)
    assert block.residual_norm(v) < np.linalg.norm(v)  # the step lowers the remainder
    # a target in the column space is fitted exactly: no remainder
    assert block.residual_norm(x @ np.array([1.0, -1.0, 2.0])) < 1e-10


def test_a_block_needs_more_records_than_columns_and_full_column_rank():
    x, _ = _block(n=4)
    LocalBlock.of(x)  # N = m + 1 is enough
    with pytest.raises(ValueError, match="more records than columns"):
        LocalBlock.of(x[:3])  # N = m: the remainder would always be zero
    with pytest.raises(ValueError, match="full column rank"):
        LocalBlock.of(np.column_stack([x[:, 0], x[:, 1], x[:, 0] + x[:, 1]]))
    # the rank test is relative to the largest pivot: scale changes nothing either way
    big, _ = _block(1)
    LocalBlock.of(1e6 * big)
    with pytest.raises(ValueError, match="full column rank"):
        LocalBlock.of(1e6 * np.column_stack([big[:, 0], big[:, 1], big[:, 0] - 2 * big[:, 1]]))


def test_step_budgets_compose_to_epsilon_over_k_parties_and_t_iterations():
    for eps, k, t in ((1.0, 2, 5), (0.3, 3, 7), (20.0, 4, 1)):
        per_step = step_budget(eps, k, t)
        assert per_step * k * t == pytest.approx(eps, rel=1e-14)
    assert step_budget(1.0, 2, 5) == pytest.approx(step_budget(1.0, 5, 2))


def test_perturbation_scale_is_xi_over_root_epsilon_and_refuses_a_non_positive_budget():
    # the half-normal density ∝ exp(−ε l²/(2ξ²)) has scale ξ/√ε (module docstring)
    assert perturbation_scale(3.0, 0.25) == pytest.approx(6.0, rel=1e-14)
    assert perturbation_scale(2.0, 4.0) == pytest.approx(1.0, rel=1e-14)
    assert perturbation_scale(2.0, 0.5) == pytest.approx(2.0 * math.sqrt(2.0), rel=1e-14)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="per-step budget"):
            perturbation_scale(1.0, bad)


def test_perturbation_length_has_the_half_normal_mean_and_second_moment():
    # l = |z|, z ~ N(0, σ²): E l = σ√(2/π), E l² = σ². With n draws the sample means are
    # within 5 standard errors: sd(l) = σ√(1 − 2/π), sd(l²) = σ²√2.
    rng = np.random.default_rng(7)
    xi, eps, n_dim, draws = 0.5, 4.0, 5, 4000
    sigma = xi / math.sqrt(eps)
    b = np.array([perturbation(n_dim, xi, eps, rng) for _ in range(draws)])
    assert b.shape == (draws, n_dim)
    lengths = np.linalg.norm(b, axis=1)
    se_mean = sigma * math.sqrt(1 - 2 / math.pi) / math.sqrt(draws)
    assert abs(lengths.mean() - sigma * math.sqrt(2 / math.pi)) < 5 * se_mean
    se_sq = sigma**2 * math.sqrt(2) / math.sqrt(draws)
    assert abs((lengths**2).mean() - sigma**2) < 5 * se_sq
    # the direction is a unit vector with mean zero (sd of each coordinate mean 1/√(N n))
    s = b / lengths[:, None]
    assert np.abs(s.mean(axis=0)).max() < 5 / math.sqrt(n_dim * draws)


def test_perturbation_is_reproducible_from_the_generator():
    a = perturbation(8, 1.0, 0.5, np.random.default_rng(3))
    b = perturbation(8, 1.0, 0.5, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_centralised_solution_solves_the_normal_equations():
    x, y = _block(2, n=100)
    beta = centralised_solution(x, y)
    np.testing.assert_allclose(x.T @ (y - x @ beta), 0.0, atol=1e-10)
    np.testing.assert_allclose(beta, LocalBlock.of(x).solve(y), rtol=1e-10)


def test_r_squared_is_one_minus_the_residual_share_of_the_variance():
    y = np.array([1.0, 2.0, 3.0, 6.0])  # mean 3, total sum of squares 14
    f = np.array([1.0, 3.0, 3.0, 5.0])  # residual sum of squares 2
    assert r_squared(y, f) == pytest.approx(1 - 2 / 14, rel=1e-14)
    assert r_squared(y, y) == 1.0
    assert r_squared(y, np.full(4, 3.0)) == pytest.approx(0.0, abs=1e-15)
    assert r_squared(y, -y) < 0  # worse than the mean


def test_aapd_is_the_mean_absolute_proportional_distance():
    ref = np.array([2.0, -4.0])
    est = np.array([[3.0, -4.0], [2.0, -2.0]])  # distances 1/2, 0, 0, 1/2
    assert aapd(est, ref) == pytest.approx(0.25, rel=1e-14)
    assert aapd(np.array([1.0, -6.0]), ref) == pytest.approx((0.5 + 0.5) / 2, rel=1e-14)
    assert aapd(ref, ref) == 0.0
