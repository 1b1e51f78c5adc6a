"""Charges checked together (:meth:`PrivacyLedger.checked_together`): the same outcome as
charging one at a time, refusal, warning, entries and message alike, where one check
composes the whole plan (and a bisection finds the first charge past the budget), and a
ledger already past its budget under ``warn`` warns once."""

from __future__ import annotations

import warnings

import dp_accounting
import pytest

from privsim.sim.ledger import BudgetExceededError, OverspendWarning, PrivacyLedger

GAUSSIAN = dp_accounting.GaussianDpEvent
SAMPLED = dp_accounting.PoissonSampledDpEvent(0.05, GAUSSIAN(0.9))


def _one_at_a_time(ledger: PrivacyLedger, count: int) -> BudgetExceededError | None:
    try:
        for r in range(count):
            ledger.charge(f"round-{r + 1}", SAMPLED)
    except BudgetExceededError as exc:
        return exc
    return None


def _together(ledger: PrivacyLedger, count: int) -> BudgetExceededError | None:
    try:
        with ledger.checked_together():
            for r in range(count):
                ledger.charge(f"round-{r + 1}", SAMPLED)
    except BudgetExceededError as exc:
        return exc
    return None


@pytest.mark.parametrize("count", [1, 5, 40, 200])
def test_a_plan_checked_together_refuses_where_one_at_a_time_does(count: int) -> None:
    """ε of 0.05-sampled Gaussian rounds at z = 0.9 passes 2.55 at the 21st round (2.550
    after 20, 2.584 after 21): the refusal names the same round with the same ε, and
    keeps the same entries."""
    alone, together = PrivacyLedger(2.55, 1e-5), PrivacyLedger(2.55, 1e-5)
    first, second = _one_at_a_time(alone, count), _together(together, count)
    assert [e.label for e in alone.entries] == [e.label for e in together.entries]
    assert (first is None) == (second is None) == (count <= 20)
    assert str(first) == str(second)
    if second is not None:
        assert len(together.entries) == 20 and str(second).startswith("round-21: ")


def test_under_warn_the_first_charge_past_the_budget_warns_once() -> None:
    """One at a time and together: one warning, naming the same (first) round; every
    charge is kept, and the guarantee says the budget is not met."""
    messages = []
    for check in (_one_at_a_time, _together):
        ledger = PrivacyLedger(2.55, 1e-5, on_overspend="warn")
        with pytest.warns(OverspendWarning) as caught:
            assert check(ledger, 40) is None
        assert len(caught) == 1 and len(ledger.entries) == 40
        assert not ledger.within_budget
        messages.append(str(caught[0].message))
    assert messages[0] == messages[1]


def test_an_exception_inside_skips_the_check_and_nesting_is_refused() -> None:
    ledger = PrivacyLedger(1.0, 1e-5)
    with pytest.raises(KeyError), ledger.checked_together():
        for r in range(40):
            ledger.charge(f"round-{r + 1}", SAMPLED)
        raise KeyError("stop")
    assert len(ledger.entries) == 40  # recorded, unchecked: the caller's error came first
    with pytest.raises(RuntimeError, match="already open"), ledger.checked_together():
        with ledger.checked_together():
            pass


def test_allow_records_past_the_budget_silently() -> None:
    ledger = PrivacyLedger(1.0, 1e-5, on_overspend="allow")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _together(ledger, 40) is None
        assert _one_at_a_time(PrivacyLedger(1.0, 1e-5, on_overspend="allow"), 40) is None
    assert len(ledger.entries) == 40 and not ledger.within_budget
