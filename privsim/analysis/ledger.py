"""The privacy ledger: every mechanism invocation is a ``dp_accounting.DpEvent``.

A mechanism first *charges* the event it plans (noise calibrated for the design's
threat model); the ledger refuses a charge whose composition would exceed the budget.
After the run the mechanism *settles* the entry with the event that actually happened
(noise from parties that dropped out or collude protects nobody), and the achieved
(ε, δ) is computed from the settled events.

Composition: Gaussian events compose exactly into one Gaussian mechanism with
noise multiplier (Σ_r σ_r⁻²)^(−1/2) (Dong, Roth & Su 2019, Cor. 3.3), evaluated with the
analytic Gaussian mechanism; anything else is composed with dp-accounting's PLD
accountant (the tests check that both agree on Gaussian compositions). Sensitivity is
folded into each Gaussian event's noise multiplier σ/Δ.
"""

from __future__ import annotations

import enum
import math
import warnings
from dataclasses import dataclass

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant

from privsim.analysis.calibration import gaussian_epsilon

__all__ = [
    "BudgetExceededError",
    "LedgerEntry",
    "OverspendPolicy",
    "OverspendWarning",
    "PrivacyLedger",
]

# Relative slack for floating-point noise in ε computed from an exactly calibrated σ.
_RELATIVE_SLACK = 1e-6


class BudgetExceededError(RuntimeError):
    """A mechanism would take the run past its (ε, δ) budget; nothing was released."""


class OverspendWarning(UserWarning):
    """A run went past its budget because the scenario allowed it (``on_overspend = "warn"``)."""


class OverspendPolicy(enum.StrEnum):
    REFUSE = "refuse"
    WARN = "warn"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    label: str
    planned: dp_accounting.DpEvent
    realised: dp_accounting.DpEvent | None = None

    @property
    def event(self) -> dp_accounting.DpEvent:
        return self.realised if self.realised is not None else self.planned


def epsilon_of(events: list[dp_accounting.DpEvent], delta: float) -> float:
    """ε at δ of the composition of ``events``."""
    events = [e for e in events if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not events:
        return 0.0
    if any(isinstance(e, dp_accounting.NonPrivateDpEvent) for e in events):
        return math.inf
    if all(isinstance(e, dp_accounting.GaussianDpEvent) for e in events):
        precision = sum(e.noise_multiplier**-2.0 for e in events if e.noise_multiplier > 0)
        if any(e.noise_multiplier <= 0 for e in events):
            return math.inf
        return gaussian_epsilon(precision**-0.5, delta)
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.ComposedDpEvent(events))
    return float(accountant.get_epsilon(delta))


class PrivacyLedger:
    """Budget (ε, δ) and the events charged against it."""

    def __init__(
        self, epsilon: float, delta: float, *, on_overspend: OverspendPolicy | str = "refuse"
    ) -> None:
        if not epsilon > 0:
            raise ValueError(f"epsilon budget must be > 0, got {epsilon}")
        if not 0 < delta < 1:
            raise ValueError(f"delta budget must be in (0, 1), got {delta}")
        self.epsilon_budget = float(epsilon)
        self.delta = float(delta)
        self.on_overspend = OverspendPolicy(on_overspend)
        self._entries: dict[str, LedgerEntry] = {}

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries.values())

    def charge(self, label: str, event: dp_accounting.DpEvent) -> None:
        """Record a planned mechanism, refusing it if the composition exceeds the budget."""
        if label in self._entries:
            raise ValueError(f"ledger already has an entry {label!r}")
        spent = epsilon_of([*(e.event for e in self._entries.values()), event], self.delta)
        if spent > self.epsilon_budget * (1 + _RELATIVE_SLACK):
            message = (
                f"{label}: composing this mechanism gives eps = {spent:.4g} at delta = "
                f"{self.delta:g}, over the budget eps = {self.epsilon_budget:g}"
            )
            if self.on_overspend is OverspendPolicy.REFUSE:
                raise BudgetExceededError(
                    message + ". Raise privacy.epsilon, use privacy.calibration = 'exact', or "
                    "set privacy.on_overspend = 'warn' to run anyway (e.g. paper reproduction)."
                )
            warnings.warn(message, OverspendWarning, stacklevel=2)
        self._entries[label] = LedgerEntry(label, event)

    def settle(self, label: str, realised: dp_accounting.DpEvent) -> None:
        """Replace a planned event by what actually happened."""
        entry = self._entries[label]
        self._entries[label] = LedgerEntry(label, entry.planned, realised)

    def epsilon(self, delta: float | None = None) -> float:
        """Achieved ε at ``delta`` (default: the budget's δ) over settled events."""
        return epsilon_of(
            [e.event for e in self._entries.values()], self.delta if delta is None else delta
        )

    @property
    def within_budget(self) -> bool:
        return self.epsilon() <= self.epsilon_budget * (1 + _RELATIVE_SLACK)
