"""The summarisation protocol's maths, alone: h1, rounding, MWEM, the auction's coins,
greedy against brute force, and the composition figures of §4."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from privsim.protocols.summarization.accounting import paper_epsilon
from privsim.protocols.summarization.auction import ask_probabilities, draw_asks
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


def test_auction_asks_the_i_th_bidder_with_probability_exp_minus_eps_i_minus_one():
    rng = np.random.default_rng(7)
    bids = np.array([0.3, 0.9, -0.1, 0.5, 0.7, 0.0])  # ranks: 5, 1, 6, 3, 2, 4
    rank = np.argsort(np.argsort(-bids))
    eps, n = 0.4, 20_000
    counts = np.zeros(bids.size)
    for _ in range(n):
        counts += draw_asks(bids, eps, rng)
    expected = ask_probabilities(bids.size, eps)[rank]
    # Binomial frequencies: sd = √(p(1 − p)/n) ≤ 0.0036; 5 sd tolerance.
    sd = np.sqrt(expected * (1 - expected) / n)
    assert counts[np.argmax(bids)] == n  # the top bidder always
    assert np.all(np.abs(counts / n - expected) <= 5 * sd + 1e-12)


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
