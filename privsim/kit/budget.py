"""The scenario's privacy budget as a ledger: what a run charges its mechanisms to, and
what a protocol's ``plan`` (:class:`~privsim.kit.spec.ProtocolSpec`) returns charged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from privsim.sim.ledger import PrivacyLedger, Trust

if TYPE_CHECKING:
    import dp_accounting

    from privsim.scenarios.schema import Scenario

__all__ = ["ledger_for"]


def ledger_for(
    scenario: Scenario,
    charges: Mapping[str, dp_accounting.DpEvent] | None = None,
    *,
    trust: Trust | None = None,
) -> PrivacyLedger:
    """A ledger holding the scenario's budget (``privacy.epsilon``, ``delta``), its
    overspend policy (``privacy.on_overspend``) and its neighbouring relation
    (``privacy.neighbour``), with ``charges`` (label -> planned event) charged in order,
    each trusting ``trust`` (default: nobody, noise added where the data is). A charge
    past the budget raises :class:`~privsim.sim.ledger.BudgetExceededError` by default,
    as :meth:`~privsim.sim.ledger.PrivacyLedger.charge` does."""
    p = scenario.privacy
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend=p.on_overspend, neighbour=p.neighbour)
    for label, event in (charges or {}).items():
        ledger.charge(label, event, trust=trust)
    return ledger
