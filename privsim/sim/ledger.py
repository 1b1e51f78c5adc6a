"""The privacy ledger: every mechanism invocation is a ``dp_accounting.DpEvent``, with
the parties that must stay honest for it to hold.

A mechanism first *charges* the event it plans (noise calibrated for the design's threat
model) together with its trust assumption: nobody (local noise), each of some parties (a
curator), or at least one of some parties (DCA's compute nodes). The ledger refuses a
charge whose composition would exceed the budget, unless the scenario allows it. After
the run the mechanism *settles* the entry: it was withheld (nothing released), it was
released as planned, or it was released with noise that came in shares from
contributors, of which only the honest ones that reached the release protect anyone.

The ledger alone computes the achieved (ε, δ) for a realised coalition
(:meth:`PrivacyLedger.guarantee`): an event whose trust the coalition breaks counts as
non-private (ε = ∞).

Composition: events that are all pure ε-DP (Laplace events and compositions of them)
compose by the basic theorem, reported as (Σ ε, 0); Gaussian events compose exactly into
one Gaussian mechanism with noise multiplier (Σ_r σ_r⁻²)^(−1/2) (Dong, Roth & Su 2019,
Cor. 3.3), evaluated with the analytic Gaussian mechanism at the budget's δ; anything
else is composed with dp-accounting's PLD accountant at the budget's δ (the tests check
the closed form against it). Sensitivity is folded into each event's noise multiplier.
"""

from __future__ import annotations

import enum
import math
import warnings
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant

from privsim.sim.calibration import gaussian_epsilon
from privsim.sim.integer_bounds import IntegerShares

__all__ = [
    "BudgetExceededError",
    "EventRecord",
    "Guarantee",
    "LedgerEntry",
    "NoiseShares",
    "OverspendPolicy",
    "OverspendWarning",
    "PrivacyLedger",
    "Trust",
    "compose",
    "epsilon_of",
    "pure_epsilon",
]

# Relative slack for floating-point noise in ε computed from an exactly calibrated σ.
_RELATIVE_SLACK = 1e-6


class BudgetExceededError(RuntimeError):
    """A mechanism would take the run past its (ε, δ) budget; nothing was released."""


class OverspendWarning(UserWarning):
    """A run went past its budget because the scenario allowed it (``on_overspend = "warn"``)."""


class OverspendPolicy(enum.StrEnum):
    """``refuse`` a planned overspend (the default); ``warn`` and run; ``allow``: run
    without a warning (studies of attacks). The result reports what was achieved either way."""

    REFUSE = "refuse"
    WARN = "warn"
    ALLOW = "allow"


class TrustKind(enum.StrEnum):
    NOBODY = "nobody"  # the noise is added where the data is: no one else must be honest
    EACH = "each"  # every named party must stay honest (a curator)
    ONE_OF = "one_of"  # at least one named party must stay honest (DCA's compute nodes)
    FEWER_THAN = "fewer_than"  # fewer than `count` named parties may collude (Shamir t-of-M)
    #: A server together with t holders of one client's shares (SecAgg): a protocol's
    #: own Trust subclass decides; the kind names it in the event record.
    SERVER_THRESHOLD = "server_threshold"


@dataclass(frozen=True, slots=True)
class Trust:
    """Who must stay honest for an event to hold; :meth:`broken_by` says whether a
    coalition breaks it. Build with :meth:`nobody`, :meth:`each`, :meth:`one_of` or
    :meth:`fewer_than`."""

    kind: TrustKind
    parties: tuple[str, ...] = ()
    description: str = ""
    count: int = 0

    def __post_init__(self) -> None:
        if self.kind is not TrustKind.NOBODY and not self.parties:
            raise ValueError(f"a '{self.kind}' trust assumption needs the parties it trusts")
        if self.kind is TrustKind.FEWER_THAN and not 1 <= self.count <= len(self.parties):
            raise ValueError(
                f"a 'fewer_than' trust needs 1 <= count <= {len(self.parties)}, got {self.count}"
            )

    @classmethod
    def nobody(cls, description: str = "nobody (noise added where the data is)") -> Trust:
        return cls(TrustKind.NOBODY, (), description)

    @classmethod
    def each(cls, *parties: str, description: str = "") -> Trust:
        return cls(TrustKind.EACH, tuple(parties), description or f"{', '.join(parties)} honest")

    @classmethod
    def one_of(cls, parties: Iterable[str], description: str = "") -> Trust:
        members = tuple(parties)
        return cls(
            TrustKind.ONE_OF,
            members,
            description or f"not all of {', '.join(members)} colluding",
        )

    @classmethod
    def fewer_than(cls, count: int, parties: Iterable[str], description: str = "") -> Trust:
        """Holds while fewer than ``count`` of ``parties`` collude (a t-of-n threshold)."""
        members = tuple(parties)
        return cls(
            TrustKind.FEWER_THAN,
            members,
            description or f"fewer than {count} of {', '.join(members)} colluding",
            count,
        )

    def broken_by(self, coalition: Collection[str]) -> bool:
        if self.kind is TrustKind.NOBODY:
            return False
        if self.kind is TrustKind.FEWER_THAN:
            return sum(1 for p in self.parties if p in coalition) >= self.count
        if self.kind is TrustKind.EACH:
            return any(p in coalition for p in self.parties)
        return all(p in coalition for p in self.parties)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoiseShares:
    """Noise added in shares by ``contributors`` (distributed DP): a release is protected
    only by the shares of honest contributors that reached it.

    ``gaussian``: each share has noise multiplier ``share_multiplier`` = σ_i/Δ; with H
    honest shares in the release, following Theorem 1 of Heikkilä et al. (2017) and its
    count N − T − 1, ``uncredited`` of them (the target's own) are not credited, so the
    event is Gaussian with multiplier √(H − uncredited)·σ_i/Δ.
    ``gamma-laplace``: Laplace noise split into Gamma differences that need ``needed``
    shares to add up to the planned Laplace; with fewer honest shares the release is
    not credited with any guarantee.
    ``threshold``: the planned event holds for a sum of ``needed`` honest shares and
    nothing is known below; the same rule.
    ``integer``: integer noise (distributed discrete Gaussian, Kairouz, Liu & Steinke
    2021, Theorem 1; Skellam, Agarwal, Kairouz & Liu 2021, Theorem 3.5) whose bound's
    inputs ``integer`` carries as numbers (:class:`~privsim.sim.integer_bounds.
    IntegerShares`): the event is the paper's bound at n = H − ``uncredited`` honest
    shares (σ_i per share for the discrete Gaussian, μ = 2·n·μ_i for Skellam), as the
    Gaussian of the same (ε, δ) at the ledger's δ; non-private when n ≤ 0. Once H
    reaches ``needed`` (the count the noise was calibrated for, N − T) it is never worse
    than the bound at ``needed`` − ``uncredited``: the extra honest shares are
    independent noise added to that sum (post-processing). The two differ only for the
    discrete Gaussian with σ_i below about 1, where the bound's τ term grows with n.

    Why numbers and a module in ``sim/`` rather than a callable into the kit: the ledger
    must not import the protocol kit, the event must pickle for sweeps and compare by
    value, and the kit's accountant calls the same functions, so H = ``needed`` gives
    exactly the planned event.
    """

    contributors: tuple[str, ...]
    kind: str = "gaussian"
    share_multiplier: float = 0.0
    uncredited: int = 1
    needed: int = 0
    integer: IntegerShares | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("gaussian", "gamma-laplace", "threshold", "integer"):
            raise ValueError(
                "noise shares are 'gaussian', 'gamma-laplace', 'threshold' or 'integer', "
                f"got {self.kind!r}"
            )
        if (self.kind == "integer") != (self.integer is not None):
            raise ValueError("'integer' noise shares need the bound's inputs (integer=...)")

    def realise(self, planned: dp_accounting.DpEvent, honest: int) -> dp_accounting.DpEvent:
        if self.kind == "gaussian":
            credited = max(honest - self.uncredited, 0)
            multiplier = math.sqrt(credited) * self.share_multiplier
            if multiplier <= 0.0:
                return dp_accounting.NonPrivateDpEvent()
            return dp_accounting.GaussianDpEvent(multiplier)
        if self.integer is not None:
            credited = honest - self.uncredited
            if credited <= 0:
                return dp_accounting.NonPrivateDpEvent()
            planned_credit = self.needed - self.uncredited
            if 1 <= planned_credit < credited:  # more than planned: never below the plan
                credited = min(credited, planned_credit, key=self.integer.epsilon)
            return self.integer.event(credited)
        return planned if honest >= self.needed else dp_accounting.NonPrivateDpEvent()


class Status(enum.StrEnum):
    PLANNED = "planned"  # charged, never settled: counted as planned (conservative)
    RELEASED = "released"
    WITHHELD = "withheld"  # nothing was released
    NON_PRIVATE = "non_private"  # a labelled non-private release (a baseline)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    label: str
    planned: dp_accounting.DpEvent
    trust: Trust = field(default_factory=Trust.nobody)
    noise: NoiseShares | None = None
    status: Status = Status.PLANNED
    realised: dp_accounting.DpEvent | None = None
    contributors: tuple[str, ...] | None = None
    reason: str = ""

    @property
    def event(self) -> dp_accounting.DpEvent:
        """The event with no coalition."""
        return self.event_against(())

    def event_against(self, coalition: Collection[str]) -> dp_accounting.DpEvent:
        """What this release was against ``coalition``."""
        if self.status is Status.WITHHELD:
            return dp_accounting.NoOpDpEvent()
        if self.status is Status.NON_PRIVATE or self.trust.broken_by(coalition):
            return dp_accounting.NonPrivateDpEvent()
        base = self.realised if self.realised is not None else self.planned
        if self.noise is not None and self.contributors is not None:
            honest = sum(1 for c in self.contributors if c not in coalition)
            return self.noise.realise(base, honest)
        return base


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecord:
    """One ledger entry as reported: what was planned, what it was against the coalition,
    whom it trusted and whether the coalition broke that."""

    label: str
    status: str
    planned: str
    realised: str
    trust: str
    trusted_parties: tuple[str, ...]
    trust_kind: str
    broken: bool
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Guarantee:
    """The achieved (ε, δ) of a ledger against a realised coalition, and the budget."""

    target_epsilon: float
    target_delta: float
    epsilon: float
    delta: float
    met: bool
    non_private: bool
    events: tuple[EventRecord, ...]


def pure_epsilon(event: dp_accounting.DpEvent) -> float | None:
    """ε of a pure ε-DP event (Laplace with noise multiplier b/Δ: ε = Δ/b, and basic
    compositions of them), or None. A mechanism that is ε-DP without being Laplace is
    recorded as the Laplace event of the same ε."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return math.inf if event.noise_multiplier <= 0 else 1.0 / event.noise_multiplier
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = pure_epsilon(event.event)
        return None if inner is None else inner * event.count
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [pure_epsilon(e) for e in event.events]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
    return None


def epsilon_of(events: Iterable[dp_accounting.DpEvent], delta: float) -> float:
    """ε at δ of the composition of ``events`` (Gaussian in closed form, else PLD)."""
    events = [e for e in events if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not events:
        return 0.0
    if any(isinstance(e, dp_accounting.NonPrivateDpEvent) for e in events):
        return math.inf
    if all(isinstance(e, dp_accounting.GaussianDpEvent) for e in events):
        if any(e.noise_multiplier <= 0 for e in events):
            return math.inf
        precision = sum(e.noise_multiplier**-2.0 for e in events)
        return gaussian_epsilon(precision**-0.5, delta)
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.ComposedDpEvent(events))
    return float(accountant.get_epsilon(delta))


def compose(events: Iterable[dp_accounting.DpEvent], delta: float) -> tuple[float, float]:
    """The (ε, δ) the composition of ``events`` achieves: pure events by the basic
    theorem, (Σ ε, 0); otherwise ε at the given δ."""
    events = [e for e in events if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not events:
        return 0.0, 0.0
    pure = [pure_epsilon(e) for e in events]
    if all(p is not None for p in pure):
        return float(sum(p for p in pure if p is not None)), 0.0
    return epsilon_of(events, delta), delta


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

    def _within(self, epsilon: float, delta: float) -> bool:
        return epsilon <= self.epsilon_budget * (1 + _RELATIVE_SLACK) and delta <= self.delta

    def charge(
        self,
        label: str,
        event: dp_accounting.DpEvent,
        *,
        trust: Trust | None = None,
        noise: NoiseShares | None = None,
    ) -> None:
        """Record a planned mechanism that holds while ``trust`` does, refusing it if the
        composition exceeds the budget (or warning, if the scenario allows overspending)."""
        if label in self._entries:
            raise ValueError(f"ledger already has an entry {label!r}")
        if noise is not None and noise.integer is not None and noise.integer.delta != self.delta:
            raise ValueError(
                f"{label}: integer noise bound converted at delta = {noise.integer.delta:g}, "
                f"not at the ledger's delta = {self.delta:g}"
            )
        events = [*(e.event for e in self._entries.values()), event]
        spent, spent_delta = compose(events, self.delta)
        if not self._within(spent, spent_delta):
            message = (
                f"{label}: composing this mechanism gives eps = {spent:.4g} at delta = "
                f"{max(spent_delta, 0.0):g}, over the budget eps = {self.epsilon_budget:g}"
            )
            if self.on_overspend is OverspendPolicy.REFUSE:
                raise BudgetExceededError(
                    message + ". Raise privacy.epsilon, spend less per mechanism (e.g. "
                    "privacy.calibration = 'exact' for Gaussian noise), or set "
                    "privacy.on_overspend = 'warn' to run anyway (e.g. paper reproduction)."
                )
            if self.on_overspend is OverspendPolicy.WARN:
                warnings.warn(message, OverspendWarning, stacklevel=2)
        self._entries[label] = LedgerEntry(label, event, trust or Trust.nobody(), noise)

    def non_private(self, label: str, reason: str) -> None:
        """Record a release that is not private by design (a labelled baseline, or a
        reading of a paper that voids its proof); never refused, reported as ε = ∞."""
        if label in self._entries:
            raise ValueError(f"ledger already has an entry {label!r}")
        self._entries[label] = LedgerEntry(
            label,
            dp_accounting.NonPrivateDpEvent(),
            Trust.nobody(),
            status=Status.NON_PRIVATE,
            reason=reason,
        )

    def settle(
        self,
        label: str,
        realised: dp_accounting.DpEvent | None = None,
        *,
        contributors: Iterable[str] | None = None,
    ) -> None:
        """The mechanism released: as planned, as ``realised``, or with noise shares from
        ``contributors`` only (the parties whose shares are in the release)."""
        entry = self._entries[label]
        if isinstance(realised, dp_accounting.NoOpDpEvent):
            self.withhold(label)
            return
        self._entries[label] = LedgerEntry(
            label,
            entry.planned,
            entry.trust,
            entry.noise,
            Status.RELEASED,
            realised,
            None if contributors is None else tuple(contributors),
        )

    def withhold(self, label: str) -> None:
        """The mechanism released nothing (an abort): it spends nothing."""
        entry = self._entries[label]
        self._entries[label] = LedgerEntry(
            label, entry.planned, entry.trust, entry.noise, Status.WITHHELD
        )

    def guarantee(self, coalition: Collection[str] = ()) -> Guarantee:
        """The achieved (ε, δ) against ``coalition``, with every event's record."""
        members = frozenset(coalition)
        records = []
        events = []
        for entry in self._entries.values():
            event = entry.event_against(members)
            events.append(event)
            records.append(
                EventRecord(
                    label=entry.label,
                    status=str(entry.status),
                    planned=repr(entry.planned),
                    realised=repr(event),
                    trust=entry.trust.description,
                    trusted_parties=entry.trust.parties,
                    trust_kind=str(entry.trust.kind),
                    broken=entry.trust.broken_by(members),
                    reason=entry.reason,
                )
            )
        epsilon, delta = compose(events, self.delta)
        return Guarantee(
            target_epsilon=self.epsilon_budget,
            target_delta=self.delta,
            epsilon=epsilon,
            delta=delta,
            met=self._within(epsilon, delta),
            non_private=any(e.status is Status.NON_PRIVATE for e in self._entries.values()),
            events=tuple(records),
        )

    def epsilon(self, delta: float | None = None) -> float:
        """Achieved ε at ``delta`` (default: the budget's δ) with no coalition."""
        return epsilon_of(
            [e.event for e in self._entries.values()], self.delta if delta is None else delta
        )

    @property
    def within_budget(self) -> bool:
        return self.guarantee().met
