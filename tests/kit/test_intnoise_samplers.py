"""Goodness of fit of the integer noise samplers against their exact pmfs, with fixed
seeds, and the per-client scaling of Theorem 1.

Chi-square tests: n = 200 000 draws, cells |k| ≤ K with K the largest integer whose
expected count is at least 20 in each tail cell, tails pooled; the test passes at
p > 0.001. Power at this size (shown by ``test_chi_square_has_power``): it rejects a
rounded continuous Gaussian at σ = 1 (P(0) = 0.383 against the discrete Gaussian's
0.399) and a discrete Gaussian with σ 2 % too large, both at p < 1e−6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsim.kit.intnoise import (
    IntegerNoise,
    client_noise,
    client_parameter,
    discrete_gaussian_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_skellam,
    share_variance,
    skellam_pmf,
)

N_DRAWS = 200_000
MIN_EXPECTED = 20.0


def _chi_square_p(samples: np.ndarray, pmf) -> float:
    """p-value of Pearson's chi-square of ``samples`` against ``pmf`` (a function of k),
    cells k = −K … K plus the two pooled tails."""
    n = samples.size
    k_max = 0
    while n * float(pmf(np.array([k_max + 1]))[0]) >= MIN_EXPECTED:
        k_max += 1
    ks = np.arange(-k_max, k_max + 1)
    probs = pmf(ks)
    tail = max((1.0 - probs.sum()) / 2.0, 0.0)
    expected = np.concatenate([[tail], probs, [tail]]) * n
    inside = samples[np.abs(samples) <= k_max] + k_max
    observed = np.concatenate(
        [
            [np.sum(samples < -k_max)],
            np.bincount(inside, minlength=ks.size),
            [np.sum(samples > k_max)],
        ]
    ).astype(np.float64)
    keep = expected > 0
    expected = expected[keep] * observed[keep].sum() / expected[keep].sum()
    return float(stats.chisquare(observed[keep], expected).pvalue)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7, 25.0])
def test_discrete_gaussian_fits_its_pmf(sigma: float) -> None:
    rng = np.random.default_rng(20260 + int(sigma * 10))
    x = sample_discrete_gaussian(rng, sigma, N_DRAWS)
    assert x.dtype == np.int64 and x.shape == (N_DRAWS,)
    assert _chi_square_p(x, lambda k: discrete_gaussian_pmf(k, sigma)) > 1e-3


@pytest.mark.parametrize("mu", [0.3, 2.0, 40.0])
def test_skellam_fits_its_pmf(mu: float) -> None:
    rng = np.random.default_rng(31000 + int(mu * 10))
    x = sample_skellam(rng, mu, N_DRAWS)
    assert x.dtype == np.int64
    assert _chi_square_p(x, lambda k: skellam_pmf(k, mu)) > 1e-3


def test_discrete_laplace_fits_its_pmf() -> None:
    t = 3
    rng = np.random.default_rng(7)
    x = sample_discrete_laplace(rng, t, N_DRAWS)
    ratio = math.exp(-1.0 / t)

    def pmf(k: np.ndarray) -> np.ndarray:
        return (1 - ratio) / (1 + ratio) * ratio ** np.abs(k)

    assert _chi_square_p(x, pmf) > 1e-3


def test_chi_square_has_power() -> None:
    rng = np.random.default_rng(11)
    rounded = np.rint(rng.normal(0.0, 1.0, N_DRAWS)).astype(np.int64)
    assert _chi_square_p(rounded, lambda k: discrete_gaussian_pmf(k, 1.0)) < 1e-6
    wide = sample_discrete_gaussian(np.random.default_rng(12), 10.2, N_DRAWS)
    assert _chi_square_p(wide, lambda k: discrete_gaussian_pmf(k, 10.0)) < 1e-6


def _moments(pmf_values: np.ndarray, ks: np.ndarray) -> tuple[float, float]:
    var = float(np.sum(ks.astype(float) ** 2 * pmf_values))
    m4 = float(np.sum(ks.astype(float) ** 4 * pmf_values))
    return var, m4


@pytest.mark.parametrize("sigma", [0.8, 6.0])
def test_discrete_gaussian_mean_and_variance(sigma: float) -> None:
    rng = np.random.default_rng(500 + int(sigma))
    x = sample_discrete_gaussian(rng, sigma, N_DRAWS).astype(np.float64)
    ks = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41)
    var, m4 = _moments(discrete_gaussian_pmf(ks, sigma), ks)
    # 5 standard errors: sd(mean) = sqrt(Var/n); sd(sample variance) ≈ sqrt((μ4 − Var²)/n).
    assert abs(x.mean()) < 5 * math.sqrt(var / N_DRAWS)
    assert abs(x.var() - var) < 5 * math.sqrt((m4 - var**2) / N_DRAWS)


def test_skellam_mean_and_variance() -> None:
    mu = 3.5
    x = sample_skellam(np.random.default_rng(99), mu, N_DRAWS).astype(np.float64)
    var = 2 * mu
    m4 = 2 * mu + 3 * var**2  # κ4 = 2μ for Sk(μ, μ)
    assert abs(x.mean()) < 5 * math.sqrt(var / N_DRAWS)
    assert abs(x.var() - var) < 5 * math.sqrt((m4 - var**2) / N_DRAWS)


def test_samplers_are_pure_functions_of_the_generator_state() -> None:
    a = sample_discrete_gaussian(np.random.default_rng(5), 2.5, (30, 7))
    b = sample_discrete_gaussian(np.random.default_rng(5), 2.5, (30, 7))
    assert a.shape == (30, 7)
    np.testing.assert_array_equal(a, b)
    assert not sample_discrete_gaussian(np.random.default_rng(5), 0.0, 4).any()
    with pytest.raises(ValueError, match="sigma must be"):
        sample_discrete_gaussian(np.random.default_rng(5), -1.0, 4)
    with pytest.raises(ValueError, match="mu must be"):
        sample_skellam(np.random.default_rng(5), math.nan, 4)


def test_client_share_scaled_for_n_minus_t_minus_1_honest_clients() -> None:
    # Theorem 1 of Heikkilä et al. 2017: variance σ²/(N − T − 1) per client.
    total, honest = 900.0, 36
    assert share_variance(total, honest) == 25.0
    assert client_parameter("discrete_gaussian", total, honest) == 5.0
    assert client_parameter(IntegerNoise(kind="skellam"), total, honest) == 12.5
    for kind in ("discrete_gaussian", "skellam"):
        x = client_noise(np.random.default_rng(3), kind, total, honest, N_DRAWS)
        v = x.astype(np.float64).var()
        # Var ≈ 25 (the discrete Gaussian's variance at σ = 5 equals σ² to 1e−80);
        # sd of the sample variance ≈ 25·sqrt(2/n) ≈ 0.079.
        assert abs(v - 25.0) < 5 * 25.0 * math.sqrt(2.0 / N_DRAWS)
        # Honest shares add up to the trusted aggregator's variance.
        summed = sum(
            client_noise(np.random.default_rng(100 + i), kind, total, honest, 20_000)
            for i in range(honest)
        ).astype(np.float64)
        assert abs(summed.var() - total) < 5 * total * math.sqrt(2.0 / 20_000)
    with pytest.raises(ValueError, match="honest"):
        share_variance(1.0, 0)
