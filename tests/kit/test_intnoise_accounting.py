"""The integer mechanisms' accounting against the papers' formulas evaluated
independently (mpmath, 40 digits), against dp-accounting, and in its limits: the
distributed discrete Gaussian's ε approaches the continuous Gaussian's as σ grows
(τ → 0; Kairouz, Liu & Steinke 2021), and so does Skellam's as μ grows (Agarwal,
Kairouz & Liu 2021)."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import mpmath
import numpy as np
import pytest

from privsim.kit.intnoise.accounting import (
    ORDERS,
    account,
    calibrate,
    ddg_rdp,
    ddg_tau,
    epsilon,
    equivalent_gaussian,
    gaussian_rdp,
    rdp_to_epsilon,
    skellam_rdp,
)
from privsim.kit.intnoise.rounding import (
    Sensitivity,
    integer_sensitivity,
    rounded_l1_bound,
    rounded_l2_bound,
)

mpmath.mp.dps = 40


def _mp_convert(rdp_of_alpha, delta: float) -> mpmath.mpf:
    """The RDP-to-(ε, δ) conversion of CKS 2020 / Balle et al. 2020, minimised over the same integer orders, in mpmath."""
    best = mpmath.inf
    for a in ORDERS.tolist():
        a = mpmath.mpf(a)
        e = (
            rdp_of_alpha(a)
            + mpmath.log(1 / mpmath.mpf(delta)) / (a - 1)
            + mpmath.log(1 - 1 / a)
            - mpmath.log(a) / (a - 1)
        )
        best = min(best, e)
    return best


def _mp_ddg(sigma: float, n: int, l1: float, l2: float, d: int, delta: float) -> mpmath.mpf:
    """KLS 2021 Theorem 1 / Prop. 14, written out from the paper."""
    s = mpmath.mpf(sigma)
    tau = 10 * mpmath.fsum(mpmath.exp(-2 * mpmath.pi**2 * s**2 * k / (k + 1)) for k in range(1, n))
    root = mpmath.sqrt(n) * s
    a2, a1 = mpmath.mpf(l2) / root, mpmath.mpf(l1) / root

    def rdp(a: mpmath.mpf) -> mpmath.mpf:
        return min(
            a * a2**2 / 2 + tau * d,
            a * (a2**2 + 2 * a1 * tau + tau**2 * d) / 2,
            a * (a2 + tau * mpmath.sqrt(d)) ** 2 / 2,
        )

    return _mp_convert(rdp, delta)


def _mp_skellam(mu: float, l1: float, l2: float, delta: float) -> mpmath.mpf:
    """AKL 2021 Theorem 3.5 / Cor. 3.6 for variance μ, written out from the paper."""
    m, l1m, l2m = mpmath.mpf(mu), mpmath.mpf(l1), mpmath.mpf(l2)

    def rdp(a: mpmath.mpf) -> mpmath.mpf:
        return a * l2m**2 / (2 * m) + min(
            ((2 * a - 1) * l2m**2 + 6 * l1m) / (4 * m**2), 3 * l1m / (2 * m)
        )

    return _mp_convert(rdp, delta)


@pytest.mark.parametrize(
    ("sigma", "n", "d"),
    [(0.5, 10, 4), (0.8, 100, 50), (2.0, 1000, 10), (30.0, 96, 10)],
)
def test_ddg_epsilon_matches_the_paper_formula_in_high_precision(sigma, n, d) -> None:
    sens = integer_sensitivity(1.0, 16.0, d, math.exp(-0.5))
    ours = epsilon(
        "discrete_gaussian", sigma, honest_clients=n, sensitivity=sens, dimension=d, delta=1e-5
    )
    oracle = _mp_ddg(sigma, n, sens.l1, sens.l2, d, 1e-5)
    assert ours == pytest.approx(float(oracle), rel=1e-10)


@pytest.mark.parametrize(("mu", "l2"), [(1.0, 1.0), (50.0, 3.0), (1e4, 40.0), (2e7, 1024.5)])
def test_skellam_epsilon_matches_the_paper_formula_in_high_precision(mu, l2) -> None:
    sens = Sensitivity(l1=l2 * l2, l2=l2)
    # μ here is the summed variance: one honest share of Poisson mean μ/2.
    ours = epsilon("skellam", mu / 2, honest_clients=1, sensitivity=sens, dimension=1, delta=1e-6)
    assert ours == pytest.approx(float(_mp_skellam(mu, sens.l1, sens.l2, 1e-6)), rel=1e-10)


def test_rdp_conversion_agrees_with_dp_accounting_for_the_gaussian() -> None:
    # dp-accounting's RDP accountant, on the same orders, converts with the same theorem.
    for m in (0.8, 3.0, 20.0):
        ours, _ = rdp_to_epsilon(gaussian_rdp(ORDERS, m), ORDERS, 1e-5)
        accountant = dp_accounting.rdp.RdpAccountant(orders=ORDERS.tolist())
        accountant.compose(dp_accounting.GaussianDpEvent(m))
        assert ours == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-12)


def test_ddg_approaches_the_continuous_gaussian_as_sigma_grows() -> None:
    n, d, m = 20, 16, 2.0  # fixed noise multiplier √n·σ/Δ₂ = m
    gaussian, _ = rdp_to_epsilon(gaussian_rdp(ORDERS, m), ORDERS, 1e-5)
    gaps = []
    for sigma in (0.5, 0.6, 0.8, 1.0, 2.0, 4.0):
        l2 = math.sqrt(n) * sigma / m
        sens = Sensitivity(l1=rounded_l1_bound(l2, d), l2=l2)
        eps = epsilon(
            "discrete_gaussian", sigma, honest_clients=n, sensitivity=sens, dimension=d, delta=1e-5
        )
        gaps.append(eps / gaussian - 1.0)
    assert gaps[0] > 0.05  # at σ = 1/2 the τ term costs more than 5 %
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(gaps))
    assert 0.0 <= gaps[-1] < 1e-12  # τ ≈ 10·n·e^{−2π²·16·½}: nothing left at σ = 4


def test_skellam_approaches_the_gaussian_of_the_same_variance() -> None:
    l2 = 10.0
    gaps = []
    for scale in (1.0, 10.0, 100.0, 1000.0):
        l2s = l2 * scale
        sens = Sensitivity(l1=rounded_l1_bound(l2s, 100), l2=l2s)
        variance = (3.0 * l2s) ** 2  # noise multiplier 3
        eps = epsilon(
            "skellam", variance / 2, honest_clients=1, sensitivity=sens, dimension=100, delta=1e-5
        )
        gaussian, _ = rdp_to_epsilon(gaussian_rdp(ORDERS, 3.0), ORDERS, 1e-5)
        gaps.append(eps / gaussian - 1.0)
    assert all(b < a for a, b in itertools.pairwise(gaps))
    assert gaps[-1] < 1e-3


def test_tau_is_the_papers_sum() -> None:
    assert ddg_tau(1.0, 1) == 0.0
    expected = 10 * sum(math.exp(-2 * math.pi**2 * 0.25 * k / (k + 1)) for k in range(1, 5))
    assert ddg_tau(0.5, 5) == pytest.approx(expected, rel=1e-14)
    assert np.isinf(
        ddg_rdp(ORDERS, sigma=0.4, clients=3, sensitivity=Sensitivity(l1=1, l2=1), dimension=1)
    ).all()
    assert np.isinf(skellam_rdp(ORDERS, variance=0.0, sensitivity=Sensitivity(l1=1, l2=1))).all()


def test_rounding_inflates_the_sensitivity_as_in_the_paper() -> None:
    # KLS 2021, conditional rounding: Δ₂² = c² + d/4 + sqrt(2 ln(1/β))·(c + √d/2), capped by c + √d.
    c, d, beta = 100.0, 64, math.exp(-0.5)
    assert rounded_l2_bound(c, d, beta) == pytest.approx(math.sqrt(c**2 + 16 + 1.0 * (c + 4.0)))
    assert rounded_l2_bound(c, d, 0.0) == c + 8.0
    assert rounded_l2_bound(0.1, 10_000, beta) == pytest.approx(math.sqrt(0.01 + 2500 + 50.1))
    l2 = rounded_l2_bound(c, d, beta)
    assert rounded_l1_bound(l2, d) == min(l2 * l2, 8.0 * l2)
    pair = integer_sensitivity(1.0, 100.0, d, beta, replace_one=True)
    assert pair.l2 == pytest.approx(2 * l2)


@pytest.mark.parametrize("kind", ["discrete_gaussian", "skellam"])
def test_calibration_finds_the_smallest_noise_meeting_the_target(kind) -> None:
    sens = integer_sensitivity(1.0, 256.0, 20, math.exp(-0.5))
    kw = dict(honest_clients=50, sensitivity=sens, dimension=20, delta=1e-6)
    p = calibrate(kind, 0.7, **kw)
    assert epsilon(kind, p, **kw) <= 0.7
    assert epsilon(kind, p * (1 - 1e-6), **kw) > 0.7
    # More honest shares: a smaller share each, the same total noise (up to τ and rounding).
    q = calibrate(kind, 0.7, **{**kw, "honest_clients": 200})
    total = (lambda v, h: v * v * h) if kind == "discrete_gaussian" else (lambda v, h: 2 * v * h)
    assert total(q, 200) == pytest.approx(total(p, 50), rel=1e-3)


def test_the_ledger_event_reproduces_the_accountant_epsilon() -> None:
    sens = integer_sensitivity(1.0, 1024.0, 10, math.exp(-0.5))
    acct = account("skellam", 1e5, honest_clients=96, sensitivity=sens, dimension=10, delta=1e-5)
    event = acct.event
    assert isinstance(event, dp_accounting.GaussianDpEvent)
    assert dp_accounting.get_epsilon_gaussian(event.noise_multiplier, 1e-5) == pytest.approx(
        acct.epsilon, rel=1e-6
    )
    with pytest.raises(ValueError, match="infinite"):
        equivalent_gaussian(math.inf, 1e-5)


def test_the_planner_table_rows() -> None:
    from privsim.kit.intnoise.table import rows

    (dg, sk) = rows(clients=(100,), dims=(10,), scales=(10,))
    assert dg["kind"] == "discrete_gaussian" and sk["kind"] == "skellam"
    # Near the Gaussian limit both need the same noise, a little above the analytic σ.
    assert 1.0 < float(dg["noise_vs_gaussian"]) < 1.2
    assert dg["bits"] == sk["bits"] == 19
