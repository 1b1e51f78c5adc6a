import math

import dp_accounting
import pytest

from privsim.sim.calibration import classic_sigma, exact_sigma
from privsim.sim.ledger import BudgetExceededError, OverspendWarning, PrivacyLedger


def test_single_gaussian_charge_at_exact_calibration_fits_the_budget():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("sum", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    assert ledger.epsilon() == pytest.approx(1.0, rel=1e-8) and ledger.within_budget


def test_a_second_mechanism_that_overspends_is_refused():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("first", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    with pytest.raises(BudgetExceededError, match=r"privacy\.on_overspend"):
        ledger.charge("second", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    assert [e.label for e in ledger.entries] == ["first"]


def test_gaussian_composition_is_exact_and_mixed_composition_uses_pld():
    # Two Gaussians with multiplier s compose to one with s / sqrt(2) (exactly, for Gaussians).
    s = 3.0
    ledger = PrivacyLedger(10.0, 1e-5)
    ledger.charge("a", dp_accounting.GaussianDpEvent(s))
    ledger.charge("b", dp_accounting.GaussianDpEvent(s))
    single = PrivacyLedger(10.0, 1e-5)
    single.charge("ab", dp_accounting.GaussianDpEvent(s / math.sqrt(2)))
    assert ledger.epsilon() == pytest.approx(single.epsilon(), rel=1e-12)
    # With a non-Gaussian event the PLD accountant composes: pessimistic by at most ~1e-3
    # in epsilon at its default discretisation, never optimistic.
    mixed = PrivacyLedger(10.0, 1e-5)
    mixed.charge("a", dp_accounting.GaussianDpEvent(s))
    mixed.charge("b", dp_accounting.GaussianDpEvent(s))
    mixed.charge("none", dp_accounting.LaplaceDpEvent(1e9))
    assert single.epsilon() <= mixed.epsilon() <= single.epsilon() + 2e-3


def test_classic_overspend_refuses_by_default_and_warns_when_allowed():
    event = dp_accounting.GaussianDpEvent(classic_sigma(10.0, 1e-4))
    with pytest.raises(BudgetExceededError):
        PrivacyLedger(10.0, 1e-4).charge("sum", event)
    ledger = PrivacyLedger(10.0, 1e-4, on_overspend="warn")
    with pytest.warns(OverspendWarning):
        ledger.charge("sum", event)
    assert ledger.epsilon() > 10.0 and not ledger.within_budget


def test_settled_event_replaces_the_planned_one():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("sum", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    ledger.settle("sum", dp_accounting.NonPrivateDpEvent())
    assert ledger.epsilon() == math.inf and not ledger.within_budget
    ledger.settle("sum", dp_accounting.NoOpDpEvent())
    assert ledger.epsilon() == 0.0
