"""The notion a result names when its ε is ∞ says why: a plan with no finite ε at the
budget's δ, or a coalition that broke an event's trust."""

from __future__ import annotations

import dp_accounting
import pytest

from privsim.kit.result import Privacy
from privsim.sim.events import ApproximateDpEvent
from privsim.sim.ledger import BudgetExceededError, PrivacyLedger, Trust


def test_a_plan_whose_own_delta_is_over_budget_says_so_not_the_coalition():
    ledger = PrivacyLedger(100.0, 1e-4, on_overspend="allow")
    ledger.charge("coins", ApproximateDpEvent(0.5, 0.39), trust=Trust.each("curator"))
    ledger.settle("coins")
    privacy = Privacy.of(ledger, ())
    assert privacy.achieved_epsilon == float("inf")
    assert privacy.notion.startswith("none at this delta")


def test_a_broken_trust_names_the_coalition():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("sum", dp_accounting.GaussianDpEvent(10.0), trust=Trust.each("curator"))
    ledger.settle("sum")
    privacy = Privacy.of(ledger, ("curator",))
    assert privacy.notion.startswith("none against this coalition")


def test_a_refusal_no_epsilon_can_meet_says_raising_epsilon_cannot_help():
    ledger = PrivacyLedger(100.0, 1e-4)
    with pytest.raises(BudgetExceededError, match="No epsilon can meet it"):
        ledger.charge("coins", ApproximateDpEvent(0.5, 0.39), trust=Trust.each("curator"))
