"""The distributed discrete Gaussian RDP bound against the paper's formula, written out
here independently of :mod:`privsim.sim.integer_bounds`.

Kairouz, Liu & Steinke (ICML 2021), Theorem 1 with the RDP form of Proposition 14: n
independent shares N_Z(0, σ²) per coordinate, σ ≥ 1/2, Δ ∈ Z^d with ‖Δ‖₁ ≤ Δ₁ and
‖Δ‖₂ ≤ Δ₂; with τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)) the sum is (α, ε(α))-RDP for

    ε(α) = min{ α·Δ₂²/(2nσ²) + τ·d,
                α/2 · (Δ₂²/(nσ²) + 2·τ·Δ₁/(√n·σ) + τ²·d),
                α/2 · (Δ₂/(√n·σ) + τ·√d)² }.

(The paper itself is not in the project's shared papers; the formula is the one the
code's docstring cites, checked against the authors' reference accountant,
google-research/federated ``distributed_dp/accounting_utils.py``, which evaluates the
same three terms with l2_scale = Δ₂/(√n·σ), l1_scale = Δ₁/(√n·σ).)

The third term is the smallest only when Δ₁ > √d·Δ₂ (a loose L1 bound; otherwise the
second is no larger) and α·(Δ₂/(√(nd)·σ) + τ/2) < 1, so it can only be seen where τ is
not negligible: per-share σ near ½ and a small order. The kit's own sensitivities have
Δ₁ ≤ √d·Δ₂, where the third term never decides, so the points below use a loose Δ₁ and
check that they exercise the third term before comparing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.sim.integer_bounds import (
    COMPOSITION_ORDERS,
    ORDERS,
    IntegerShares,
    ddg_rdp,
    ddg_tau,
    integer_epsilon,
)


def paper_tau(sigma: float, n: int) -> float:
    return 10.0 * math.fsum(
        math.exp(-2.0 * math.pi**2 * sigma**2 * k / (k + 1)) for k in range(1, n)
    )


def paper_terms(
    alpha: float, sigma: float, n: int, l1: float, l2: float, d: int
) -> tuple[float, float, float]:
    tau = paper_tau(sigma, n)
    nsigma2 = n * sigma**2
    first = alpha * l2**2 / (2.0 * nsigma2) + tau * d
    second = alpha / 2.0 * (l2**2 / nsigma2 + 2.0 * tau * l1 / math.sqrt(nsigma2) + tau**2 * d)
    third = alpha / 2.0 * (l2 / math.sqrt(nsigma2) + tau * math.sqrt(d)) ** 2
    return first, second, third


def paper_rdp(alpha: float, sigma: float, n: int, l1: float, l2: float, d: int) -> float:
    return min(paper_terms(alpha, sigma, n, l1, l2, d))


def converted(rdp: float, alpha: float, delta: float) -> float:
    """ε at δ from (α, ε(α))-RDP: ε(α) + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1)
    (Canonne, Kamath & Steinke 2020)."""
    return (
        rdp
        + math.log(1 / delta) / (alpha - 1)
        + math.log(1 - 1 / alpha)
        - math.log(alpha) / (alpha - 1)
    )


def paper_epsilon(rdp: list[float], orders: list[float], delta: float) -> float:
    """The smallest converted ε over the orders, floored at 0."""
    return max(min(converted(r, a, delta) for r, a in zip(rdp, orders, strict=True)), 0.0)


def test_tau_by_hand():
    """n = 1: no sum, τ = 0; n = 2, σ = ½: 10·e^(−π²/4) ≈ 0.848050; n = 3, σ = ½:
    10·(e^(−π²/4) + e^(−π²/3)) ≈ 1.220637."""
    assert ddg_tau(0.5, 1) == 0.0
    assert ddg_tau(0.5, 2) == pytest.approx(10 * math.exp(-(math.pi**2) / 4), rel=1e-13)
    assert ddg_tau(0.5, 2) == pytest.approx(0.848050, abs=1e-6)
    assert ddg_tau(0.5, 3) == pytest.approx(1.220637, abs=1e-6)


@pytest.mark.parametrize("sigma", [0.5, 0.55, 0.6, 0.8, 1.5])
@pytest.mark.parametrize("n", [2, 5, 17, 300])
def test_tau_matches_the_paper(sigma, n):
    assert ddg_tau(sigma, n) == pytest.approx(paper_tau(sigma, n), rel=1e-12)


# (σ, n, Δ₁, Δ₂, d, α): points where τ is not negligible and the third term is the
# smallest (checked in the test); Δ₁ = 4·√d·Δ₂ is a loose but valid L1 bound.
THIRD_TERM_POINTS = [
    (0.5, 2, 40.0, 1.0, 100, 1.1),
    (0.5, 2, 80.0, 2.0, 100, 1.1),
    (0.5, 3, 4 * math.sqrt(1000) * 2, 2.0, 1000, 1.1),
    (0.55, 4, 16.0, 1.0, 16, 1.1),
    (0.55, 4, 4 * math.sqrt(1000), 1.0, 1000, 1.5),
    (0.6, 5, 8.0, 1.0, 4, 1.1),
    (0.6, 5, 16.0, 1.0, 16, 2.0),
    (0.6, 5, 80.0, 2.0, 100, 1.5),
    (0.6, 5, 4 * math.sqrt(1000) * 2, 2.0, 1000, 2.0),
    (0.6, 10, 160.0, 4.0, 100, 1.1),
]


@pytest.mark.parametrize(("sigma", "n", "l1", "l2", "d", "alpha"), THIRD_TERM_POINTS)
def test_third_term_matches_the_paper(sigma, n, l1, l2, d, alpha):
    first, second, third = paper_terms(alpha, sigma, n, l1, l2, d)
    assert paper_tau(sigma, n) > 0.1  # τ matters here
    # the point exercises the third term, by a clear margin
    assert third < 0.95 * min(first, second)
    got = ddg_rdp([alpha], sigma=sigma, clients=n, l1=l1, l2=l2, dimension=d)
    assert got[0] == pytest.approx(third, rel=1e-12)


@pytest.mark.parametrize(("sigma", "n", "l1", "l2", "d", "alpha"), THIRD_TERM_POINTS)
def test_shares_rdp_follows_the_paper_on_the_composition_orders(sigma, n, l1, l2, d, alpha):
    """The ledger's path (:meth:`IntegerShares.rdp`) at every order it composes at."""
    shares = IntegerShares(
        kind="discrete_gaussian", parameter=sigma, l1=l1, l2=l2, dimension=d, delta=1e-5
    )
    got = shares.rdp(n, COMPOSITION_ORDERS)
    expected = [paper_rdp(float(a), sigma, n, l1, l2, d) for a in COMPOSITION_ORDERS]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# Points with the kit's own sensitivities (Δ₁ = min{Δ₂², √d·Δ₂}), where the first two
# terms decide, over the whole grid of orders.
KIT_POINTS = [
    (0.5, 2, 3.0, 5, 0.5),
    (0.5, 10, 20.0, 64, 1e-5),
    (0.7, 3, 8.0, 1000, 1e-5),
    (1.0, 50, 40.0, 10_000, 1e-6),
    (4.0, 100, 12.0, 256, 1e-5),
]


@pytest.mark.parametrize(("sigma", "n", "l2", "d", "delta"), KIT_POINTS)
def test_whole_curve_and_epsilon_match_the_paper(sigma, n, l2, d, delta):
    l1 = min(l2 * l2, math.sqrt(d) * l2)
    orders = [float(a) for a in ORDERS]
    expected = [paper_rdp(a, sigma, n, l1, l2, d) for a in orders]
    got = ddg_rdp(ORDERS, sigma=sigma, clients=n, l1=l1, l2=l2, dimension=d)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    eps, _ = integer_epsilon("discrete_gaussian", sigma, n, l1=l1, l2=l2, dimension=d, delta=delta)
    assert eps == pytest.approx(paper_epsilon(expected, orders, delta), rel=1e-10)


@pytest.mark.parametrize(
    ("sigma", "n", "l2", "d"), [(0.6, 5, 1.0, 100), (0.6, 10, 2.0, 100), (0.55, 4, 2.0, 1000)]
)
def test_epsilon_with_a_loose_l1_bound_matches_the_paper(sigma, n, l2, d):
    """(ε, δ) of one release with Δ₁ = 4·√d·Δ₂, where the third term decides at the
    best order."""
    l1, delta = 4 * math.sqrt(d) * l2, 0.5
    orders = [float(a) for a in ORDERS]
    curve = [paper_rdp(a, sigma, n, l1, l2, d) for a in orders]
    terms = [paper_terms(a, sigma, n, l1, l2, d) for a in orders]
    best = min(range(len(orders)), key=lambda i: converted(curve[i], orders[i], delta))
    assert terms[best][2] < 0.95 * min(terms[best][:2])  # the third term at the best order
    eps, order = integer_epsilon(
        "discrete_gaussian", sigma, n, l1=l1, l2=l2, dimension=d, delta=delta
    )
    assert order == orders[best]
    assert eps == pytest.approx(paper_epsilon(curve, orders, delta), rel=1e-10)


def test_below_half_the_theorem_does_not_apply():
    got = ddg_rdp([2.0, 10.0], sigma=0.49, clients=3, l1=4.0, l2=2.0, dimension=4)
    assert np.all(np.isinf(got))
