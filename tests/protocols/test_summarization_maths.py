"""The summarisation protocol's maths, alone: h1, rounding, MWEM, the auction's coins,
greedy against brute force, and the composition figures of §4."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from privsim.protocols.summarization.accounting import paper_epsilon
from privsim.protocols.summarization.auction import (
    ask_probabilities,
    draw_ask_matrix,
    draw_asks,
    expected_asks,
    nobody_asked,
    parsimony_bound,
    shift_delta,
    shift_epsilon,
)
from privsim.protocols.summarization.baselines import greedy, uniform
from privsim.protocols.summarization.mwem import MarginalMwem, grid, measure, quantise
from privsim.protocols.summarization.objective import objective
from privsim.protocols.summarization.rff import FourierHash, rbf_kernel


def _rff_rms_error(d: int, draws: int = 20) -> float:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 3))
    exact = rbf_kernel(x, x, 0.1)
    errors = []
    for _ in range(draws):
        h = FourierHash.draw(3, d, 0.1, rng)
        phi = h(x)
        errors.append(np.mean((phi @ phi.T - exact) ** 2))
    return math.sqrt(float(np.mean(errors)))


def test_rff_inner_products_approximate_the_kernel_with_error_shrinking_as_one_over_root_d():
    # Var[h1(x)ᵀh1(y)] = c(x, y)/d, so the RMS error scales as 1/√d: ×16 in d → ÷4.
    # Over 20 draws × 900 pairs the RMS estimate is good to a few per cent; allow 3–5.3.
    small, large = _rff_rms_error(64), _rff_rms_error(1024)
    assert small < 0.2
    assert 3.0 < small / large < 5.3


def test_rff_coordinates_are_bounded_by_root_two_over_d():
    h = FourierHash.draw(4, 50, 0.1, np.random.default_rng(2))
    phi = h(np.random.default_rng(3).normal(size=(100, 4)))
    assert np.all(np.abs(phi) <= math.sqrt(2 / 50) + 1e-12)


def test_randomised_rounding_is_unbiased_and_lands_on_the_grid():
    rng = np.random.default_rng(4)
    eta = 0.1
    v = np.array([-1.0, -0.97, -0.333, 0.0, 0.051, 0.5, 0.999, 1.0])
    n = 40_000
    q = quantise(np.tile(v, (n, 1)), eta, rng)
    assert np.all(np.isclose(q[..., None], grid(eta)).any(-1))
    # Each draw is within η of v, variance ≤ η²/4: the mean's sd ≤ η/(2√n) = 2.5e-4.
    assert np.all(np.abs(q.mean(0) - v) < 5 * eta / (2 * math.sqrt(n)))


def _mwem_error(epsilon: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    d, q = 12, 400
    data = quantise(rng.uniform(-0.8, 0.8, size=(q, d)) * 0.5 + rng.uniform(-0.4, 0.4, d), 0.1, rng)
    target = data.sum(0)
    released, _ = MarginalMwem(d, 0.1).run(target, q, 300, epsilon, 1.0, rng)
    return float(np.max(np.abs(released - target / q)))


def test_mwem_release_converges_to_the_data_as_epsilon_grows():
    # Mean over 8 seeds of the sup error of the released mean vector: at ε = 0.001 the
    # measurements are pure noise (Lap scale 1000 ≫ q = 400), at ε = 100 nearly exact.
    errors = [np.mean([_mwem_error(e, s) for s in range(8)]) for e in (0.001, 0.1, 100.0)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05


def test_mwem_measurement_noise_is_laplace_of_scale_sensitivity_over_epsilon():
    rng = np.random.default_rng(5)
    target = np.array([3.0, -2.0])
    for epsilon, sensitivity in ((0.5, 1.0), (0.01, 2.0)):
        noise = np.array([measure(target, 1, epsilon, sensitivity, rng) for _ in range(4000)])
        z = (noise - target[1]) / (sensitivity / epsilon)
        # Kolmogorov–Smirnov against Laplace(0, 1): a wrong scale (×1.2) gives D ≈ 0.04,
        # p ≈ 1e-6 at n = 4000; the right one passes at the 1% level.
        assert stats.kstest(z, "laplace").pvalue > 0.01


def test_mwem_keeps_d_marginals_not_the_product_space():
    m = MarginalMwem(140, 0.05)
    assert m.marginals.shape == (140, 41)
    released, steps = m.run(np.zeros(140), 10, 5, 1.0, 1.0, np.random.default_rng(6))
    assert released.shape == (140,) and len(steps) == 5
    assert np.allclose(m.marginals.sum(1), 1.0)


def test_draw_asks_samples_the_private_coins_by_default():
    """p_i = e^ε/(1 + e^ε)·e^{−ε(i−1)} by rank; the top bidder is not always asked."""
    rng = np.random.default_rng(7)
    bids = np.array([0.3, 0.9, -0.1, 0.5, 0.7, 0.0])  # ranks: 5, 1, 6, 3, 2, 4
    rank = np.argsort(np.argsort(-bids))
    eps, n = 0.4, 20_000
    counts = np.zeros(bids.size)
    for _ in range(n):
        counts += draw_asks(bids, eps, rng)
    expected = math.exp(eps) / (1 + math.exp(eps)) * np.exp(-eps * rank)
    assert np.allclose(ask_probabilities(bids.size, eps)[rank], expected)
    # Binomial frequencies: sd = √(p(1 − p)/n) ≤ 0.0036; 5 sd tolerance.
    sd = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(counts / n - expected) <= 5 * sd)
    assert counts[np.argmax(bids)] < n


def test_the_paper_variant_asks_with_exp_minus_eps_i_minus_one_and_always_the_top():
    rng = np.random.default_rng(17)
    bids = np.array([0.3, 0.9, -0.1, 0.5, 0.7, 0.0])
    rank = np.argsort(np.argsort(-bids))
    eps, n = 0.4, 20_000
    counts = draw_ask_matrix(bids, eps, rng, n, "paper").sum(0)
    expected = np.exp(-eps * rank)
    assert np.allclose(ask_probabilities(bids.size, eps, "paper")[rank], expected)
    sd = np.sqrt(expected * (1 - expected) / n)  # 0 for the top bidder: exactly n
    assert np.all(np.abs(counts / n - expected) <= 5 * sd)
    assert counts[np.argmax(bids)] == n


@pytest.mark.parametrize("owners", [2, 4, 10])
@pytest.mark.parametrize("eps", [0.05, 0.3, 0.5, 1.0, 3.0])
def test_private_coins_meet_both_ratio_constraints_tightly(owners, eps):
    """p_i ≤ e^ε·p_{i+1} (equality: the geometric tail) and 1 − p_{i+1} ≤ e^ε·(1 − p_i)
    (equality at the top: p_1 = e^ε/(1 + e^ε)), so every rank shift of one is ε-DP and
    no smaller ε is."""
    p = ask_probabilities(owners, eps)
    e = math.exp(eps)
    assert np.allclose(p[:-1], e * p[1:], rtol=1e-12)
    assert np.all(1 - p[1:] <= e * (1 - p[:-1]) * (1 + 1e-12))
    assert 1 - p[1] == pytest.approx(e * (1 - p[0]), rel=1e-12)
    assert shift_epsilon(p) == pytest.approx(eps, rel=1e-12)
    assert shift_delta(p, eps) <= 1e-12  # 0 up to rounding


@pytest.mark.parametrize("owners", [2, 4, 10])
@pytest.mark.parametrize("eps", [0.05, 0.3, 0.5, 1.0, 3.0])
def test_paper_coins_are_eps_auc_one_minus_exp_minus_eps_auc_and_no_better(owners, eps):
    """Every rank shift of one, both directions, ask and not-ask: P − e^ε·P′ ≤
    1 − e^{−ε}, with equality for "not asked" at rank 1 → 2 (P′ = 0). The profile is
    flat: no ε′ gets a smaller δ, and at δ = 0 no finite ε holds."""
    p = ask_probabilities(owners, eps, "paper")
    delta = 1 - math.exp(-eps)
    gaps = []
    for i in range(owners - 1):
        for x, y in ((p[i], p[i + 1]), (1 - p[i], 1 - p[i + 1])):
            gaps += [x - math.exp(eps) * y, y - math.exp(eps) * x]
    assert max(gaps) == pytest.approx(delta, rel=1e-12)
    assert (1 - p[1]) - math.exp(eps) * (1 - p[0]) == pytest.approx(delta, rel=1e-12)
    for other in (0.0, eps, 5 * eps):
        assert shift_delta(p, other) == pytest.approx(delta, rel=1e-12)
    assert shift_epsilon(p) == math.inf


def test_issue_27_counterexample():
    """Bids (1, .5, .2, .1) against (1, .5, .2, 1.5), 2·10⁵ draws: owner 0 not asked
    with frequency 0 and 1 − e^{−0.5} = 0.393 under the paper's coins; 1/(1 + e^{0.5})
    = 0.378 and 1 − e^{0.5}/(1 + e^{0.5})·e^{−0.5} = 0.622 under the private ones, a
    ratio of e^{0.5}. Binomial sd ≤ √(.25/2e5) = 0.0011; tolerance 5 sd."""
    d, d_prime, n, eps = [1, 0.5, 0.2, 0.1], [1, 0.5, 0.2, 1.5], 200_000, 0.5
    rng = np.random.default_rng(27)

    def not_asked(bids, variant):
        return 1.0 - draw_ask_matrix(bids, eps, rng, n, variant)[:, 0].mean()

    tol = 5 * math.sqrt(0.25 / n)
    assert not_asked(d, "paper") == 0.0
    assert not_asked(d_prime, "paper") == pytest.approx(1 - math.exp(-eps), abs=tol)
    c = math.exp(eps) / (1 + math.exp(eps))
    assert not_asked(d, "private") == pytest.approx(1 - c, abs=tol)
    assert not_asked(d_prime, "private") == pytest.approx(1 - c * math.exp(-eps), abs=tol)


def test_nobody_is_asked_with_a_probability_that_does_not_depend_on_the_order():
    """Π_i (1 − p_i) runs over ranks: two orders of the bids give the same frequency
    (0.156 at K = 4, ε = 0.5; sd √(.13/1e5) = 0.0011, tolerance 5 sd)."""
    rng = np.random.default_rng(28)
    n, eps = 100_000, 0.5
    z = nobody_asked(4, eps)
    for bids in ([1, 0.5, 0.2, 0.1], [0.1, 1.5, 0.2, 1]):
        freq = 1.0 - draw_ask_matrix(bids, eps, rng, n).any(1).mean()
        assert freq == pytest.approx(z, abs=5 * math.sqrt(z * (1 - z) / n))
    assert nobody_asked(4, eps, "paper") == 0.0


def test_expected_asks_and_the_parsimony_bound_for_both_coins():
    """Σp_i: (1 − e^{−εK})/(1 − e^{−ε}) for the paper's coins, e^ε/(1 + e^ε) times it
    for the private ones, below 1/(1 − e^{−2ε}); the bound adds K⌊p/τ⌋ for the τ rule."""
    eps, k = 0.5, 4
    paper = (1 - math.exp(-eps * k)) / (1 - math.exp(-eps))
    assert expected_asks(k, eps, "paper") == pytest.approx(paper)
    assert expected_asks(k, eps) == pytest.approx(paper * math.exp(eps) / (1 + math.exp(eps)))
    assert expected_asks(10_000, eps) < 1 / (1 - math.exp(-2 * eps))
    assert parsimony_bound(k, eps, 100, 3) == pytest.approx(100 * expected_asks(k, eps) + 4 * 33)


def test_the_tau_rule_asks_a_flagged_bidder_whatever_its_coin():
    rng = np.random.default_rng(8)
    asked = draw_asks([1.0, 0.0, -1.0], 50.0, rng, insist=[False, False, True])
    assert asked.tolist() == [True, False, True]


def _brute_force(owners, validation, seed, size):
    stacked = np.concatenate(owners)
    owner_of = [(k, r) for k, o in enumerate(owners) for r in range(len(o))]
    chosen: list[int] = []
    for _ in range(size):
        best, best_j = -np.inf, -1
        for j in range(len(stacked)):
            if j in chosen:
                continue
            value = objective(np.vstack([seed, stacked[[*chosen, j]]]), validation)
            if value > best + 1e-12:
                best, best_j = value, j
        chosen.append(best_j)
    return [owner_of[j] for j in chosen]


@pytest.mark.parametrize("seeds", [0, 3])
def test_greedy_on_bids_equals_brute_force_greedy_on_j(seeds):
    rng = np.random.default_rng(9)
    h = FourierHash.draw(2, 20, 0.5, rng)
    owners = [h(rng.normal(k, 1.0, size=(6, 2))) for k in range(3)]
    validation = h(rng.normal(1.0, 0.5, size=(5, 2)))
    seed = h(rng.normal(-1.0, 1.0, size=(seeds, 2)))
    assert greedy(owners, validation, seed, 6) == _brute_force(owners, validation, seed, 6)


def test_uniform_takes_p_over_k_from_each_owner():
    picks = uniform([10, 10, 10, 10], 10, np.random.default_rng(10))
    per_owner = [sum(1 for k, _ in picks if k == o) for o in range(4)]
    assert per_owner == [3, 3, 2, 2] and len(set(picks)) == 10


def test_paper_composition_figures_are_reproduced():
    # §4: ε_v = 0.01 over T_init = 1656 iterations is ε = 1.4 at δ̃ = 0.01; the summary,
    # p epochs of T_sub = 5 iterations at 0.01/√(p·T_sub), is 0.043 at δ̃ = 1e-4.
    assert paper_epsilon(0.01, 1656, 0.01) == pytest.approx(1.40, abs=0.005)
    for p in (100, 500, 2000):
        eps0 = 0.01 / math.sqrt(5 * p)
        assert paper_epsilon(eps0, 5 * p, 1e-4) == pytest.approx(0.043, abs=0.001)


def test_the_maths_is_deterministic_for_a_seed():
    def once():
        rng = np.random.default_rng(11)
        h = FourierHash.draw(3, 16, 0.1, rng)
        phi = h(rng.normal(size=(20, 3)))
        q = quantise(phi * math.sqrt(8), 0.1, rng)
        released, _ = MarginalMwem(16, 0.1).run(q.sum(0), 20, 30, 0.5, 1.0, rng)
        return released, draw_asks(rng.normal(size=5), 0.3, rng)

    (a, b), (c, d) = once(), once()
    assert np.array_equal(a, c) and np.array_equal(b, d)


@pytest.mark.parametrize("size", [1, 3])
def test_brute_force_helper_is_itself_greedy_on_tiny_sets(size):
    # A sanity check of the oracle: its first pick maximises J over all single additions.
    rng = np.random.default_rng(12)
    owners = [rng.normal(size=(3, 4)) for _ in range(2)]
    v, s = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    first = _brute_force(owners, v, s, size)[0]
    best = max(
        itertools.product(range(2), range(3)),
        key=lambda kr: objective(np.vstack([s, owners[kr[0]][kr[1]][None]]), v),
    )
    assert first == best


def test_the_last_release_variant_is_the_final_distributions_expectation():
    rng = np.random.default_rng(13)
    m = MarginalMwem(6, 0.25)
    released, _ = m.run(np.full(6, 5.0), 10, 40, 50.0, 1.0, rng, last=True)
    assert np.allclose(released, m.marginals @ m.support, rtol=0, atol=1e-12)
