"""Composition in the ledger (Gaussian events in closed form) and the budget split of
multi-round mechanisms (split_gaussian)."""

from __future__ import annotations

import math
import warnings

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant

from privsim.sim.calibration import (
    ClassicCalibrationWarning,
    classic_sigma,
    exact_sigma,
    gaussian_epsilon,
    split_gaussian,
)
from privsim.sim.ledger import BudgetExceededError, PrivacyLedger, epsilon_of


def _pld_epsilon(events, delta):
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.ComposedDpEvent(events))
    return float(accountant.get_epsilon(delta))


@pytest.mark.parametrize(
    ("multipliers", "delta"),
    [
        ([3.0, 3.0], 1e-5),
        ([1.0, 2.0, 5.0], 1e-6),
        ([5.816, 3.808], 1e-4),  # the proj BLR split of eps = 1, delta = 1e-4 (share 0.3)
        ([10.0] * 5, 1e-5),
    ],
)
def test_gaussian_composition_agrees_with_the_pld_accountant(multipliers, delta):
    events = [dp_accounting.GaussianDpEvent(m) for m in multipliers]
    closed = epsilon_of(events, delta)
    pld = _pld_epsilon(events, delta)
    # The PLD accountant discretises the privacy loss pessimistically (default interval
    # 1e-4): it may only over-estimate, by far less than 1e-3 relative.
    assert closed == pytest.approx(pld, rel=1e-3)
    assert closed <= pld * (1 + 1e-9)
    # closed form: one Gaussian with multiplier (Σ m⁻²)^(-1/2)
    single = sum(m**-2 for m in multipliers) ** -0.5
    assert closed == pytest.approx(gaussian_epsilon(single, delta), rel=1e-12)


def test_composition_is_order_free_and_ignores_no_op_events():
    a, b, c = (dp_accounting.GaussianDpEvent(m) for m in (2.0, 4.0, 7.0))
    delta = 1e-5
    assert epsilon_of([a, b, c], delta) == pytest.approx(epsilon_of([c, a, b], delta), rel=1e-12)
    assert epsilon_of([a, dp_accounting.NoOpDpEvent(), b], delta) == epsilon_of([a, b], delta)
    # more mechanisms never cost less
    assert epsilon_of([a], delta) < epsilon_of([a, b], delta) < epsilon_of([a, b, c], delta)


def test_non_gaussian_mixtures_fall_back_to_the_pld_accountant():
    events = [dp_accounting.GaussianDpEvent(2.0), dp_accounting.LaplaceDpEvent(3.0)]
    assert epsilon_of(events, 1e-5) == pytest.approx(_pld_epsilon(events, 1e-5), rel=1e-12)
    leaky = [dp_accounting.GaussianDpEvent(2.0), dp_accounting.NonPrivateDpEvent()]
    assert epsilon_of(leaky, 1e-5) == math.inf
    assert epsilon_of([dp_accounting.GaussianDpEvent(0.0)], 1e-5) == math.inf
    assert epsilon_of([], 1e-5) == epsilon_of([dp_accounting.NoOpDpEvent()], 1e-5) == 0.0


@pytest.mark.parametrize(
    ("epsilon", "delta", "shares"),
    [
        (1.0, 1e-4, (0.3, 0.7)),
        (0.1, 1e-6, (0.5, 0.5)),
        (4.0, 1e-5, (0.2, 0.3, 0.5)),
        (31.62, 1e-4, (0.05, 0.95)),
    ],
)
def test_exact_split_composes_to_exactly_the_budget(epsilon, delta, shares):
    multipliers = split_gaussian(epsilon, delta, shares)
    assert len(multipliers) == len(shares)
    events = [dp_accounting.GaussianDpEvent(m) for m in multipliers]
    assert epsilon_of(events, delta) == pytest.approx(epsilon, rel=1e-6)
    # μ_r² = share_r · μ²: each round's multiplier is the whole one over sqrt(share)
    whole = exact_sigma(epsilon, delta)
    for m, s in zip(multipliers, shares, strict=True):
        assert m == pytest.approx(whole / math.sqrt(s), rel=1e-12)
    # The ledger accepts the rounds one by one, ends exactly at the budget, and refuses
    # a further mechanism with ten times the noise (it adds 1% to μ², far beyond the
    # ledger's 1e-6 relative slack).
    ledger = PrivacyLedger(epsilon, delta)
    for r, event in enumerate(events):
        ledger.charge(f"round-{r}", event)
    assert ledger.epsilon() == pytest.approx(epsilon, rel=1e-6) and ledger.within_budget
    with pytest.raises(BudgetExceededError):
        ledger.charge("more", dp_accounting.GaussianDpEvent(10 * whole))


@pytest.mark.parametrize(
    ("epsilon", "delta", "shares"),
    [(0.5, 1e-5, (0.3, 0.7)), (0.9, 1e-4, (0.2, 0.3, 0.5)), (31.62, 1e-4, (0.3, 0.7))],
)
def test_classic_split_gives_each_round_its_classic_sigma(epsilon, delta, shares):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicCalibrationWarning)
        multipliers = split_gaussian(epsilon, delta, shares, "classic")
    want = tuple(classic_sigma(s * epsilon, s * delta) for s in shares)
    assert multipliers == want
    if epsilon < 1:
        # where Eq. (1) is a proof, basic composition of (s·ε, s·δ) keeps the budget
        events = [dp_accounting.GaussianDpEvent(m) for m in multipliers]
        assert epsilon_of(events, delta) <= epsilon


def test_classic_split_warns_only_for_rounds_outside_its_proof():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        split_gaussian(0.9, 1e-4, (0.3, 0.7), "classic")
    assert not [w for w in caught if issubclass(w.category, ClassicCalibrationWarning)]
    with pytest.warns(ClassicCalibrationWarning):
        split_gaussian(31.62, 1e-4, (0.3, 0.7), "classic")


@pytest.mark.parametrize("shares", [(), (0.5, 0.6), (1.2, -0.2), (0.0, 1.0)])
def test_split_rejects_shares_that_are_not_a_partition(shares):
    with pytest.raises(ValueError, match="shares"):
        split_gaussian(1.0, 1e-5, shares)
