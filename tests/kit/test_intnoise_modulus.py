"""The modulus planner: minimal widths, a tail bound that holds, and wrap-around shown
when the modulus is narrower than planned (and none at the planned one)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privsim.kit.intnoise import sample_discrete_gaussian, sample_skellam
from privsim.kit.intnoise.modulus import (
    ModulusTooSmallError,
    from_modular,
    noise_tail,
    plan_modulus,
    to_modular,
)
from privsim.kit.intnoise.rounding import rounded_l2_bound, scale_and_round
from privsim.kit.securesum.maths import decode_sum


@pytest.mark.parametrize("kind", ["discrete_gaussian", "skellam"])
def test_the_planned_width_is_the_smallest_that_holds_the_bound(kind) -> None:
    plan = plan_modulus(500, 100, 1.0, 256.0, 40.0, kind, 1e-9)
    need = plan.signal_bound + plan.noise_bound
    assert plan.signal_bound == 500 * (256.0 + 1.0)
    assert plan.modulus == 2**plan.bits
    assert plan.range >= need > (1 << (plan.bits - 2)) - 1
    assert "union over d = 100" in plan.tail


def test_the_noise_margins_are_the_papers_tail_bounds() -> None:
    # Sub-Gaussian: d·2·exp(−a²/(2Nσ²)) = p exactly at the margin.
    a = noise_tail("discrete_gaussian", 50, 3.0, 20, 1e-6)
    assert 20 * 2 * math.exp(-(a**2) / (2 * 50 * 9.0)) == pytest.approx(1e-6)
    # Skellam: the Chernoff bound at the margin is p (to the bisection's precision).
    lam, b = 50 * 4.0, noise_tail("skellam", 50, 4.0, 20, 1e-6)
    t = math.asinh(b / (2 * lam))
    assert 20 * 2 * math.exp(2 * lam * (math.cosh(t) - 1) - t * b) == pytest.approx(1e-6, rel=1e-6)
    assert noise_tail("skellam", 5, 0.0, 3, 0.1) == 0.0


@pytest.mark.parametrize("kind", ["discrete_gaussian", "skellam"])
def test_the_tail_bound_holds_empirically(kind) -> None:
    # P(|Σ noise| ≥ a) ≤ p with p = 0.05, d = 1, 20 clients: over 20 000 sums the
    # frequency must stay below p + 4·sqrt(p(1 − p)/20 000) = 0.0562.
    clients, parameter, p, reps = 20, 2.0, 0.05, 20_000
    a = noise_tail(kind, clients, parameter, 1, p)
    rng = np.random.default_rng(17)
    sampler = sample_discrete_gaussian if kind == "discrete_gaussian" else sample_skellam
    sums = sampler(rng, parameter, (reps, clients)).sum(axis=1)
    assert np.mean(np.abs(sums) >= a) <= p + 4 * math.sqrt(p * (1 - p) / reps)


def test_modular_round_trip() -> None:
    x = np.array([-(2**20), -1, 0, 5, 2**20 - 1], dtype=np.int64)
    np.testing.assert_array_equal(from_modular(to_modular(x, 21), 21), x)
    np.testing.assert_array_equal(from_modular(to_modular(x, 64), 64), x)
    assert to_modular(x, 21).max() < 2**21
    with pytest.raises(ValueError, match="bits must be"):
        to_modular(x, 0)


@given(bits=st.integers(2, 64), data=st.data())
def test_modular_sums_decode_exactly_inside_the_centred_range(bits: int, data) -> None:
    half = 1 << (bits - 1)
    terms = data.draw(
        st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=8).filter(
            lambda xs: -half <= sum(xs) < half
        )
    )
    words = to_modular(np.array(terms, dtype=np.int64), bits)
    assert int(from_modular(words.sum(dtype=np.uint64), bits)) == sum(terms)
    np.testing.assert_array_equal(
        decode_sum(words.sum(dtype=np.uint64, keepdims=True), 3, bits), [sum(terms) / 8]
    )


def _sum_mod(values: np.ndarray, bits: int) -> np.ndarray:
    """Clients send x mod 2^b; the server adds in Z_{2^64} and decodes mod 2^b."""
    return from_modular(to_modular(values, bits).sum(axis=0, dtype=np.uint64), bits)


@pytest.mark.parametrize("kind", ["discrete_gaussian", "skellam"])
def test_wrap_around_below_the_planned_modulus_and_none_at_it(kind) -> None:
    # The worst case the planner must cover: every client's vector is c·e_1.
    n, d, clip, scale, parameter = 200, 8, 1.0, 64.0, 30.0
    rng = np.random.default_rng(23)
    x = np.zeros(d)
    x[0] = clip
    rounded = np.stack([scale_and_round(x, clip, scale, 0.0, rng) for _ in range(n)])
    sampler = sample_discrete_gaussian if kind == "discrete_gaussian" else sample_skellam
    values = rounded + sampler(rng, parameter, (n, d))
    true = values.sum(axis=0)
    plan = plan_modulus(n, d, clip, scale, parameter, kind, 1e-9)
    np.testing.assert_array_equal(_sum_mod(values, plan.bits), true)
    narrow = plan.bits - 2
    wrong = _sum_mod(values, narrow)
    assert wrong[0] != true[0]  # Σ ≈ 12 800 > 2^(b−3): coordinate 0 wraps
    assert (wrong[0] - true[0]) % (1 << narrow) == 0
    with pytest.raises(ModulusTooSmallError, match=f"needs {plan.bits} bits"):
        plan.check(narrow)
    plan.check(plan.bits + 3)


def test_planner_refuses_beyond_64_bits_and_rounding_stays_in_its_bound() -> None:
    with pytest.raises(ModulusTooSmallError, match="64-bit"):
        plan_modulus(10**6, 10, 1.0, 2.0**52, 1.0, "skellam", 1e-9)
    rng = np.random.default_rng(5)
    bound = rounded_l2_bound(10.0, 50, math.exp(-0.5))
    for _ in range(200):
        v = rng.normal(size=50)
        r = scale_and_round(v, 1.0, 10.0, math.exp(-0.5), rng)
        assert np.linalg.norm(r) <= bound


@pytest.mark.parametrize("kind", ["discrete_gaussian", "skellam"])
def test_the_scale_for_a_bit_budget_is_the_largest_that_fits(kind) -> None:
    from privsim.kit.intnoise.accounting import calibrate
    from privsim.kit.intnoise.rounding import integer_sensitivity
    from privsim.kit.intnoise.scale import plan_scale

    common = dict(clients=100, dimension=20, clip=1.0, wrap_probability=1e-9)
    found = plan_scale(
        bits=16, honest_clients=89, kind=kind, epsilon=1.0, delta=1e-5, beta=0.6, **common
    )
    assert found.modulus.bits <= 16
    # Twice the scale (a log₂ step of 1, far above the 1e-3 tolerance) does not fit.
    finer = 2.0 * found.scale
    sens = integer_sensitivity(1.0, finer, 20, 0.6)
    p = calibrate(kind, 1.0, delta=1e-5, honest_clients=89, sensitivity=sens, dimension=20)
    assert plan_modulus(scale=finer, noise_parameter=p, kind=kind, **common).bits > 16
    with pytest.raises(ModulusTooSmallError, match="any scale"):
        plan_scale(
            bits=2, honest_clients=89, kind=kind, epsilon=1.0, delta=1e-5, beta=0.6, **common
        )


def test_randomised_rounding_is_unbiased_and_moves_less_than_one_step() -> None:
    from privsim.kit.intnoise.rounding import randomised_round

    x = np.array([0.25, -1.7, 3.0, 12.5])
    draws = np.stack([randomised_round(x, np.random.default_rng(i)) for i in range(4000)])
    assert np.all(np.abs(draws - x) < 1)
    frac = x - np.floor(x)
    # Each coordinate is ⌊x⌋ + Bernoulli(frac): sd of the mean sqrt(frac(1 − frac)/n).
    tolerance = 5 * np.sqrt(frac * (1 - frac) / 4000) + 1e-12
    assert np.all(np.abs(draws.mean(axis=0) - x) <= tolerance)
