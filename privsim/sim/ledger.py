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

Per-viewer releases (``viewers``): a mechanism drawn afresh for each of some parties,
each of which sees only its own draw (an auction's coin per bidder). Against a coalition
the event composes once per viewer the coalition holds, and once when it holds none:
the guarantee with no coalition is against each party alone, i.e. any one viewer.

Composition (:func:`compose`, :func:`epsilon_of`). Each event says what it is, and
composes as itself (:mod:`privsim.sim.events` gives each kind's privacy loss); nested
``ComposedDpEvent`` and ``SelfComposedDpEvent`` are flattened to their leaves with counts.

- All pure ε-DP (Laplace, generic pure, bounded range, randomized response, (ε, 0)):
  the smaller of the basic theorem, (Σ ε, 0), and the PLD composition at the budget's δ
  (below), which is far tighter for long compositions of small ε (k steps of ε₀ grow as
  √k·ε₀ rather than k·ε₀). :func:`composition` says which applied and gives both.
- All Gaussian: exactly one Gaussian mechanism with noise multiplier (Σ_r σ_r⁻²)^(−1/2)
  (Dong, Roth & Su 2019, Cor. 3.3), evaluated with the analytic Gaussian mechanism.
- Any integer-noise release (:class:`~privsim.sim.events.IntegerNoiseDpEvent`): one
  release alone is the papers' bound, as today; with others, the RDP curves of every
  event with one (the papers' for integer noise, Mironov's for Gaussian and Laplace, the
  worst-case pair's for pure ε) are summed over
  :data:`~privsim.sim.integer_bounds.COMPOSITION_ORDERS` and converted to ε at δ; events
  without a finite RDP curve ((ε, δ > 0) pairs) are composed with that part's (ε_R, δ_R)
  pair as a PLD, δ_R a share of the δ they leave (the best of a few shares; each is a
  valid bound).
- Otherwise the ledger builds the PLD itself from the leaves, each leaf's PLD
  self-composed by its count (dp-accounting 0.6.0's accountant drops the count of a
  self-composed randomized response), and evaluates ε at δ. With bounded-range
  (exponential mechanism) events, the smaller of that and the RDP composition, where
  each bounded-range event is ε²/8-zCDP: both are valid bounds.

Randomized response depends on the neighbouring relation (``neighbour``): replace-one
gives its exact pair, add/remove-one (and an unknown relation) the generic pair at its ε.
Every other event folds its sensitivity into its noise multiplier.

Sampling (:class:`~privsim.sim.sampling.Sampling`). A release on a random sample is
charged as its unsampled event with the sampling; against a coalition that does not
hold the sampler it is the sampled event (``PoissonSampledDpEvent`` or
``SampledWithoutReplacementDpEvent`` around what the release is against that coalition:
trust broken, noise shares realised), against one that does it is unamplified. A
ledger takes only samplings that amplify under its own relation (Poisson: add/remove-
one; fixed size: replace-one). Compositions holding sampled events:

- Sampled Gaussians (Poisson-sampled Gaussians and Laplace, Gaussians sampled without
  replacement) with the events that have a PLD: the smaller of the PLD and the RDP
  composition, where every leaf has an RDP curve (both are valid bounds). Each sampled
  leaf's PLD is built once and self-composed by its count, with a coarser interval when
  many distinct sampled leaves are composed (:func:`~privsim.sim.events.pld_interval`):
  a Poisson-sampled leaf's is the PLD dp-accounting's accountant builds; a fixed-size
  cohort's (m of n, replace-one) is the dominating pair of Zhu, Dong & Wang's two-part
  bound (2022, Prop. 30), mirrored from the remove direction of the Poisson-sampled
  Gaussian at q = m/n (:mod:`privsim.sim.wor_pld`), with dp-accounting's RDP bound
  (Wang, Balle & Kasiviswanathan 2019) as the cross-check: 90 rounds of 53 of 2,000 at
  z = 1.1 give ε = 1.88 at δ = 10⁻⁶ by the pair, 3.14 by RDP. A charge's budget check
  takes the RDP composition first and builds the PLD only when that alone exceeds the
  budget.
- Poisson-sampled integer noise: no PLD; composed by RDP over
  :data:`~privsim.sim.integer_bounds.COMPOSITION_ORDERS` as integer noise is (curves in
  :func:`~privsim.sim.events.leaf_rdp`), and so is everything composed with it.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import math
import warnings
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt
from dp_accounting.pld import privacy_loss_distribution as pld_module
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

from privsim.sim.calibration import gaussian_epsilon
from privsim.sim.events import (
    MAX_PLD_EPSILON,
    ApproximateDpEvent,
    BoundedRangeDpEvent,
    IntegerNoiseDpEvent,
    Neighbour,
    composes_by_rdp,
    generic_pld,
    is_no_op,
    is_non_private,
    is_sampled,
    leaf_pld,
    leaf_pure_epsilon,
    leaf_rdp,
    pld_interval,
)
from privsim.sim.integer_bounds import (
    COMPOSITION_ORDERS,
    ORDERS,
    IntegerShares,
    rdp_to_epsilon,
)
from privsim.sim.names import Picked
from privsim.sim.sampling import Sampling, SamplingKind
from privsim.sim.share_pair import SampledSharesGaussianDpEvent

__all__ = [
    "PURE_MARGIN",
    "BudgetExceededError",
    "Composition",
    "EventRecord",
    "Guarantee",
    "LedgerEntry",
    "Method",
    "NoiseShares",
    "OverspendPolicy",
    "OverspendWarning",
    "PrivacyLedger",
    "Trust",
    "coarse_epsilon_of",
    "compose",
    "composition",
    "epsilon_of",
    "leaves",
    "pure_epsilon",
]

# Relative slack for floating-point noise in ε computed from an exactly calibrated σ.
_RELATIVE_SLACK = 1e-6
#: A pure composition is reported at (Σ ε, 0) unless its PLD at the budget's δ is smaller
#: by more than this share (or alone meets the budget): one Laplace release at ε = 1 is
#: (1, 0)-DP, not (0.99998, 10⁻⁵)-DP.
PURE_MARGIN = 0.01


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

    ``sampled_own_share`` (``gaussian`` shares on a Poisson sample, add/remove-one): a
    contributor that is not in the data set is never sampled and adds no share, so the
    release has H honest shares with the target in and H − 1 without; the two sides
    differ in variance on each of the release's ``dimension`` coordinates, and the
    release is the exact pair of :class:`~privsim.sim.share_pair.
    SampledSharesGaussianDpEvent` (:meth:`pair`), never a Gaussian of H − 1 shares on
    both sides. Before it is settled its honest count is the plan's ``needed``.

    Why numbers and a module in ``sim/`` rather than a callable into the kit: the ledger
    must not import the protocol kit, the event must pickle for sweeps and compare by
    value, and the kit's accountant calls the same functions, so H = ``needed`` gives
    exactly the planned event.
    """

    contributors: Sequence[str]
    kind: str = "gaussian"
    share_multiplier: float = 0.0
    uncredited: int = 1
    needed: int = 0
    integer: IntegerShares | None = None
    sampled_own_share: bool = False
    dimension: int = 1

    def __post_init__(self) -> None:
        if self.kind not in ("gaussian", "gamma-laplace", "threshold", "integer"):
            raise ValueError(
                "noise shares are 'gaussian', 'gamma-laplace', 'threshold' or 'integer', "
                f"got {self.kind!r}"
            )
        if (self.kind == "integer") != (self.integer is not None):
            raise ValueError("'integer' noise shares need the bound's inputs (integer=...)")
        if self.sampled_own_share and self.kind != "gaussian":
            raise ValueError("a sampled contributor's own share is accounted for 'gaussian' shares")
        if self.dimension < 1:
            raise ValueError(f"a release has dimension >= 1, got {self.dimension}")

    def pair(self, honest: int, rate: float) -> dp_accounting.DpEvent:
        """The release with ``honest`` honest shares (the target's own among them) on a
        Poisson sample at ``rate`` (1: the sample is known): the pair N(u, H·σ_i²) with
        the target in against N(0, (H − 1)·σ_i²) without (``uncredited`` = 1 counts the
        target's share), mixed by the rate; non-private when no other honest share
        protects it."""
        credited = honest - self.uncredited
        if credited <= 0 or self.share_multiplier <= 0:
            return dp_accounting.NonPrivateDpEvent()
        out = math.sqrt(credited) * self.share_multiplier
        inside = math.sqrt(credited + 1) * self.share_multiplier
        return SampledSharesGaussianDpEvent(rate, inside, out, self.dimension)

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

    def unsettled(self, planned: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
        """The event of a release not (yet) settled with its contributors: for integer
        noise the bound at the planned credit ``needed`` − ``uncredited`` (the kit
        charges that bound's equivalent Gaussian, which would compose as a Gaussian,
        below the bound); otherwise ``planned``."""
        credit = self.needed - self.uncredited
        if self.integer is None or credit < 1:
            return planned
        return self.integer.event(credit)


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
    contributors: tuple[str, ...] | Picked | None = None
    reason: str = ""
    sampling: Sampling | None = None
    viewers: tuple[str, ...] | Picked = ()

    @property
    def event(self) -> dp_accounting.DpEvent:
        """The event with no coalition."""
        return self.event_against(())

    @property
    def planned_event(self) -> dp_accounting.DpEvent:
        """The planned event as charged: amplified by the sampling, if any."""
        return self.planned if self.sampling is None else self.sampling.wrap(self.planned)

    def sampler_colludes(self, coalition: Collection[str]) -> bool:
        """Whether ``coalition`` knows who was sampled: it holds the party that drew
        this release's sample, or one that sees who took part (``observers``)."""
        return self.sampling is not None and self.sampling.known_to(coalition)

    def event_against(self, coalition: Collection[str]) -> dp_accounting.DpEvent:
        """What this release was against ``coalition``: the unsampled event against it
        (:meth:`unamplified_against`), amplified by the sampling unless the coalition
        knows who was sampled; noise shares whose contributor's own share exists only
        when it is sampled, as their exact pair (:meth:`NoiseShares.pair`)."""
        event = self.unamplified_against(coalition)
        if self.sampling is None:
            return event
        known = self.sampler_colludes(coalition)
        if self._own_share_pair(event):
            assert self.noise is not None and self.sampling is not None
            return self.noise.pair(self._honest(coalition), 1.0 if known else self.sampling.q)
        if known:
            return event
        return self.sampling.wrap(event)

    def _own_share_pair(self, event: dp_accounting.DpEvent) -> bool:
        """A private release whose noise shares hold the target's own only when sampled."""
        return (
            self.noise is not None
            and self.noise.sampled_own_share
            and self.sampling is not None
            and self.sampling.kind is SamplingKind.POISSON
            and self.status is not Status.WITHHELD
            and type(event) is dp_accounting.GaussianDpEvent
        )

    def _honest(self, coalition: Collection[str]) -> int:
        """Honest shares in the release: its contributors outside ``coalition`` once
        settled, the plan's ``needed`` before."""
        assert self.noise is not None
        if self.contributors is None:
            return self.noise.needed
        if isinstance(self.contributors, Picked):  # membership without the names
            return len(self.contributors) - sum(1 for c in coalition if c in self.contributors)
        return sum(1 for c in self.contributors if c not in coalition)

    def amplification_against(self, coalition: Collection[str]) -> str:
        """Whether the sampling's amplification applied against ``coalition``, in words
        ("" without sampling)."""
        if self.sampling is None:
            return ""
        if self.sampler_colludes(coalition):
            return f"not applied: {self.sampling.who_knows(coalition)}"
        event = self.unamplified_against(coalition)
        if self.sampling.amplifies(event):
            return self.sampling.description()
        if self.sampling.q >= 1:
            return "not applied: everyone sampled (q = 1)"
        if not leaves([event]):  # withheld, or costs nothing: nothing to amplify
            return ""
        return "not applied: the release is not private"

    def unamplified_against(self, coalition: Collection[str]) -> dp_accounting.DpEvent:
        """What this release was against ``coalition`` before any amplification by
        sampling: a no-op if withheld, non-private if the coalition breaks its trust, its
        noise shares realised against the honest contributors, or as released (once per
        draw the coalition sees, :meth:`draws_against`)."""
        if self.status is Status.WITHHELD:
            return dp_accounting.NoOpDpEvent()
        if self.status is Status.NON_PRIVATE or self.trust.broken_by(coalition):
            return dp_accounting.NonPrivateDpEvent()
        base = self.realised if self.realised is not None else self.planned
        if self.noise is not None and self.contributors is not None:
            return self.noise.realise(base, self._honest(coalition))
        if self.noise is not None and self.realised is None:
            return self.noise.unsettled(base)
        draws = self.draws_against(coalition)
        return base if draws == 1 else dp_accounting.SelfComposedDpEvent(base, draws)

    def draws_against(self, coalition: Collection[str]) -> int:
        """How many draws of this release ``coalition`` sees: one per viewer it holds, at
        least one (any one viewer alone); 1 for a release without ``viewers``."""
        if not self.viewers:
            return 1
        return max(1, sum(1 for c in coalition if c in self.viewers))


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecord:
    """One ledger entry as reported: what was planned (amplified by its sampling, if
    any), what it was against the coalition, whom it trusted, whether the coalition
    broke that, and ``amplification``: the sampling's amplification in words when it
    applied, why not when it did not ("not applied: sampler colluding (server)"), ""
    for a release not sampled."""

    label: str
    status: str
    planned: str
    realised: str
    trust: str
    trusted_parties: tuple[str, ...]
    trust_kind: str
    broken: bool
    reason: str = ""
    amplification: str = ""


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
    composition: Composition | None = None


Leaves = list[tuple[dp_accounting.DpEvent, int]]

#: Shares of the free δ (what the (ε, δ) events leave) tried for the RDP part when a
#: composition with integer noise also holds events without an RDP curve; the smallest
#: resulting ε is reported (each is a valid bound).
_RDP_DELTA_SHARES = (0.1, 0.5, 0.9, 1.0)


def _flatten(
    event: dp_accounting.DpEvent, count: int
) -> Iterator[tuple[dp_accounting.DpEvent, int]]:
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        yield from _flatten(event.event, count * event.count)
    elif isinstance(event, dp_accounting.ComposedDpEvent):
        for inner in event.events:
            yield from _flatten(inner, count)
    elif count > 0 and not is_no_op(event):
        yield event, count


def _key(event: dp_accounting.DpEvent) -> object:
    """The event itself (equal events merge), or its identity if it is unhashable."""
    try:
        hash(event)
    except TypeError:
        return id(event)
    return event


def leaves(events: Iterable[dp_accounting.DpEvent]) -> Leaves:
    """The leaf events of ``events`` with how many times each composes (nested
    compositions multiplied out, equal leaves merged, no-ops dropped), in first-seen
    order."""
    first: dict[object, dp_accounting.DpEvent] = {}
    counts: dict[object, int] = {}
    for event in events:
        for leaf, n in _flatten(event, 1):
            key = _key(leaf)
            first.setdefault(key, leaf)
            counts[key] = counts.get(key, 0) + n
    return [(leaf, counts[key]) for key, leaf in first.items()]


def pure_epsilon(event: dp_accounting.DpEvent) -> float | None:
    """Σ count·ε of an event all of whose leaves are pure ε-DP (Laplace with noise
    multiplier b/Δ: ε = Δ/b; generic pure and bounded-range ε; (ε, 0); randomized
    response, :func:`~privsim.sim.events.leaf_pure_epsilon`), or None."""
    parts = [(leaf_pure_epsilon(leaf), n) for leaf, n in leaves([event])]
    if any(p is None for p, _ in parts):
        return None
    return float(sum(p * n for p, n in parts if p is not None))


def _pld(found: Leaves, neighbour: Neighbour, interval: float) -> PrivacyLossDistribution:
    """The PLD of the composition of ``found``, each leaf self-composed by its count, all
    at one discretisation ``interval``."""
    pld = pld_module.identity(value_discretization_interval=interval)
    for leaf, n in found:
        pld = pld.compose(leaf_pld(leaf, n, neighbour, interval))
    return pld


def _pld_epsilon(found: Leaves, delta: float, neighbour: Neighbour) -> float:
    try:
        return float(_pld(found, neighbour, pld_interval(found)).get_epsilon_for_delta(delta))
    except OverflowError:  # a pure ε beyond what a PLD holds: no useful guarantee
        return math.inf


def _rdp(
    found: Leaves, orders: npt.NDArray[np.float64], neighbour: Neighbour
) -> npt.NDArray[np.float64] | None:
    """Σ count·D_α of ``found`` over ``orders``, or None if a leaf has no RDP curve."""
    total = np.zeros_like(orders)
    for leaf, n in found:
        curve = leaf_rdp(leaf, orders, neighbour)
        if curve is None:
            return None
        total = total + n * curve
    return total


def _single_integer(found: Leaves, delta: float) -> float | None:
    """One integer-noise release alone: the papers' bound over :data:`ORDERS`, exactly
    the figure the kit calibrates to (None if ``found`` is not that)."""
    if len(found) != 1 or found[0][1] != 1 or not isinstance(found[0][0], IntegerNoiseDpEvent):
        return None
    leaf = found[0][0]
    return rdp_to_epsilon(leaf.bound.rdp(leaf.shares, ORDERS), ORDERS, delta)[0]


def _infinite_loss_mass(found: Leaves) -> float:
    """1 − Π(1 − δ_i)^count over the (ε, δ) leaves: the mass of the composed worst-case
    pairs' infinite privacy loss, which every ε at a smaller δ must cover."""
    survive = sum(
        n * math.log1p(-leaf.delta)
        for leaf, n in found
        if isinstance(leaf, ApproximateDpEvent) and 0 < leaf.delta < 1
    )
    return -math.expm1(survive)


def _rdp_epsilon(found: Leaves, delta: float, neighbour: Neighbour) -> float:
    """ε at δ of a composition holding leaves with no PLD (integer noise, sampled or
    not): every leaf with an RDP curve composed in RDP
    (summed over :data:`COMPOSITION_ORDERS`, converted as the papers do); the leaves
    without one composed with that part's (ε_R, δ_R) pair as a PLD."""
    single = _single_integer(found, delta)
    if single is not None:
        return single
    orders = COMPOSITION_ORDERS
    total = np.zeros_like(orders)
    rest: Leaves = []
    for leaf, n in found:
        curve = leaf_rdp(leaf, orders, neighbour)
        if curve is None:
            rest.append((leaf, n))
        else:
            total = total + n * curve
    if not rest:
        return rdp_to_epsilon(total, orders, delta)[0]
    interval = pld_interval(rest)
    try:
        others = _pld(rest, neighbour, interval)
    except OverflowError:
        return math.inf
    free = delta - _infinite_loss_mass(rest)  # the δ the (ε, δ) events leave
    best = math.inf
    for share in _RDP_DELTA_SHARES:
        eps_r = rdp_to_epsilon(total, orders, share * free)[0] if free > 0 else math.inf
        if eps_r <= MAX_PLD_EPSILON:
            pair = generic_pld(eps_r, share * free, interval)
            best = min(best, float(pair.compose(others).get_epsilon_for_delta(delta)))
    return best


def _trivially_infinite(found: Leaves, delta: float) -> bool:
    """A non-private leaf, or (ε, δ) leaves whose δ alone adds up past ``delta``."""
    return any(is_non_private(leaf) for leaf, _ in found) or _infinite_loss_mass(found) > delta


def _rdp_bound(found: Leaves, delta: float, neighbour: Neighbour) -> float | None:
    """ε at δ of the RDP composition of ``found`` (None if a leaf has no RDP curve)."""
    total = _rdp(found, COMPOSITION_ORDERS, neighbour)
    return None if total is None else rdp_to_epsilon(total, COMPOSITION_ORDERS, delta)[0]


def epsilon_of(
    events: Iterable[dp_accounting.DpEvent], delta: float, *, neighbour: Neighbour = "add_remove"
) -> float:
    """ε at δ of the composition of ``events``: Gaussians in closed form, integer noise by
    RDP, anything else by the PLD of its leaves, and the smaller of that and the RDP
    composition with bounded-range or sampled events (Poisson or without replacement;
    see the module docstring).

    A pure function of the leaves, δ and the relation, so its figure is cached when the
    leaves are hashable (every event class here is a frozen attrs class): a run asks for
    the same composition several times over — the planner's last z is the plan's R
    rounds, the planned charges are charged again as the rounds run, a round released
    as planned settles to the same events, and the guarantee is read per coalition."""
    found = leaves(events)
    if not found:
        return 0.0
    key = tuple(found)
    try:
        hash(key)
    except TypeError:
        return _epsilon_of_leaves(key, float(delta), neighbour)
    relation = _relation(key, neighbour)
    epsilon = _epsilon_of_cached(key, float(delta), relation)
    _remember(key, float(delta), relation, epsilon)
    return epsilon


def coarse_epsilon_of(
    events: Iterable[dp_accounting.DpEvent], delta: float, interval: float
) -> float:
    """ε at δ of the PLD composition of ``events`` (add/remove-one) at the discretisation
    ``interval``: an upper bound like :func:`epsilon_of`'s PLD figure, larger by about
    the leaves' count times the interval, and cheaper in proportion (a PLD's points
    scale as 1/interval). For searches that only need a bracket, such as the planner's
    first pass; every figure a run reports is :func:`epsilon_of`'s. ∞ where a leaf has
    no PLD."""
    found = leaves(events)
    if not found:
        return 0.0
    if _trivially_infinite(found, delta):
        return math.inf
    try:
        return float(_pld(found, "add_remove", interval).get_epsilon_for_delta(delta))
    except (OverflowError, TypeError):
        return math.inf


def _relation(
    found: Iterable[tuple[dp_accounting.DpEvent, int]], neighbour: Neighbour
) -> Neighbour:
    """``neighbour``, or "add_remove" when no leaf's accounting depends on it (only
    randomized response's does): one cached figure for both relations (the planner
    composes its rounds under the default, the ledger under the scenario's)."""
    if any(isinstance(leaf, dp_accounting.RandomizedResponseDpEvent) for leaf, _ in found):
        return neighbour
    return "add_remove"


def _epsilon_of_leaves(
    found: tuple[tuple[dp_accounting.DpEvent, int], ...], delta: float, neighbour: Neighbour
) -> float:
    """:func:`epsilon_of` of its (non-empty) leaves, uncached."""
    return _epsilon_of_list(list(found), delta, neighbour)


def _epsilon_of_list(found: Leaves, delta: float, neighbour: Neighbour) -> float:
    if _trivially_infinite(found, delta):
        return math.inf
    if all(type(leaf) is dp_accounting.GaussianDpEvent for leaf, _ in found):
        precision = sum(n * leaf.noise_multiplier**-2.0 for leaf, n in found)  # type: ignore[attr-defined]
        return gaussian_epsilon(precision**-0.5, delta)
    if any(composes_by_rdp(leaf) for leaf, _ in found):
        return _rdp_epsilon(found, delta, neighbour)
    epsilon = _pld_epsilon(found, delta, neighbour)
    if any(isinstance(leaf, BoundedRangeDpEvent) or is_sampled(leaf) for leaf, _ in found):
        by_rdp = _rdp_bound(found, delta, neighbour)
        if by_rdp is not None:
            epsilon = min(epsilon, by_rdp)
    return epsilon


#: :func:`epsilon_of`'s figures by (leaves, δ, relation): floats, so a few thousand cost
#: little, while one composition of sampled rounds at a fine interval takes seconds.
_epsilon_of_cached = functools.lru_cache(maxsize=4096)(_epsilon_of_leaves)


#: The figures :func:`epsilon_of` found, by the leaves they compose (in order), δ and
#: the relation: each leaf's count and the ε (:func:`_dominated_within`). Both tables are
#: cleared when they hold :data:`_KNOWN_LIMIT` figures.
_known: dict[tuple[object, ...], dict[tuple[int, ...], float]] = {}
#: Of :data:`_known`, the compositions of one Gaussian leaf (plain, or on a Poisson or
#: fixed-size sample), by the leaf's family, δ and relation: ε by (multiplier, count).
_known_gaussian: dict[tuple[object, ...], dict[tuple[float, int], float]] = {}
_KNOWN_LIMIT = 4096
_known_count = [0]


def forget_known() -> None:
    """Empty the table of figures a charge's check may reuse (:func:`_dominated_within`).
    Called at the start of every run: a figure left by another run (for a larger
    composition: a valid bound, but possibly a smaller one than this run's own
    computation gives) could otherwise turn a refusal into a pass, and a run would
    depend on what ran before it in the same process."""
    _known.clear()
    _known_gaussian.clear()
    _known_count[0] = 0


def _remember(
    found: tuple[tuple[dp_accounting.DpEvent, int], ...],
    delta: float,
    neighbour: Neighbour,
    epsilon: float,
) -> None:
    key = (*(leaf for leaf, _ in found), delta, neighbour)
    counts = tuple(n for _, n in found)
    if counts in _known.get(key, {}):
        return
    if _known_count[0] >= _KNOWN_LIMIT:
        _known.clear()
        _known_gaussian.clear()
        _known_count[0] = 0
    _known_count[0] += 1
    _known.setdefault(key, {})[counts] = epsilon
    if len(found) == 1:
        family = _gaussian_family(found[0][0])
        if family is not None:
            runs = _known_gaussian.setdefault((family[0], delta, neighbour), {})
            runs[(family[1], found[0][1])] = epsilon


def _gaussian_family(leaf: dp_accounting.DpEvent) -> tuple[object, float] | None:
    """(family, multiplier) of a Gaussian leaf, plain or on a sample: two leaves of one
    family differ only in the multiplier, and the one with more noise is the other
    followed by independent noise (post-processing). None for any other leaf."""
    inner = leaf
    if isinstance(leaf, dp_accounting.PoissonSampledDpEvent):
        family: object = ("poisson", leaf.sampling_probability)
        inner = leaf.event
    elif isinstance(leaf, dp_accounting.SampledWithoutReplacementDpEvent):
        family = ("fixed", leaf.source_dataset_size, leaf.sample_size)
        inner = leaf.event
    else:
        family = ("gaussian",)
    if type(inner) is not dp_accounting.GaussianDpEvent:
        return None
    return family, float(inner.noise_multiplier)


def _dominated_within(
    found: Leaves, delta: float, neighbour: Neighbour, budget: float
) -> float | None:
    """A charge's shortcut: the ε :func:`epsilon_of` found for the same leaves each
    composed at least as many times, when it meets ``budget`` (the smallest such), else
    None; or found for R rounds of one Gaussian leaf (:func:`_gaussian_family`) when
    this composition is at most R leaves of that family, none with less noise. It
    bounds this composition's ε: that figure bounds the true ε of the larger
    composition, and this one is a post-processing of it (its releases are part of the
    larger one's, each with independent noise added where it has more), which cannot
    add to ε. The planner's R rounds at its z are such a figure for every planned
    round, and for rounds realised with more noise than planned."""
    key = (*(leaf for leaf, _ in found), float(delta), _relation(found, neighbour))
    try:
        seen = _known.get(key)
    except TypeError:  # an unhashable leaf: never remembered
        return None
    counts = [n for _, n in found]
    covering = [
        eps
        for more, eps in (seen or {}).items()
        if all(m >= n for m, n in zip(more, counts, strict=True))
    ]
    families = [_gaussian_family(leaf) for leaf, _ in found]
    if all(f is not None for f in families) and len({f[0] for f in families if f}) == 1:
        least = min(f[1] for f in families if f)  # the least noise among the leaves
        runs = _known_gaussian.get((families[0][0], float(delta), _relation(found, neighbour)))  # type: ignore[index]
        total = sum(counts)
        covering += [eps for (z, m), eps in (runs or {}).items() if z <= least and m >= total]
    best = min(covering, default=math.inf)
    return best if best <= budget else None


def _quick_within(found: Leaves, delta: float, neighbour: Neighbour, budget: float) -> float | None:
    """A charge's shortcut with sampled events: the RDP composition's ε when it alone
    meets ``budget`` (then :func:`epsilon_of`, never above it, does too), else None."""
    if not 0 < delta < 1 or not any(is_sampled(leaf) for leaf, _ in found):
        return None
    if _trivially_infinite(found, delta):
        return None
    by_rdp = _rdp_bound(found, delta, neighbour)
    return by_rdp if by_rdp is not None and by_rdp <= budget else None


class Method(enum.StrEnum):
    """Which composition gave a reported (ε, δ)."""

    NONE = "none"  # nothing was released
    BASIC = "basic"  # pure events, the basic theorem: (Σ ε, 0)
    PLD = "pld"  # pure events, their PLD at δ, tighter than the basic theorem there
    ACCOUNTANT = "accountant"  # anything else: :func:`epsilon_of` at δ


@dataclass(frozen=True, slots=True)
class Composition:
    """The (ε, δ) a composition achieves, the ``method`` that gave it, and for pure events
    both candidates: ``basic_epsilon`` (at δ = 0) and ``pld_epsilon`` at ``pld_delta``
    (None when δ = 0 or not needed)."""

    epsilon: float
    delta: float
    method: Method
    basic_epsilon: float | None = None
    pld_epsilon: float | None = None
    pld_delta: float | None = None

    def details(self) -> dict[str, object]:
        """The figures a report shows: which theorem applied and, where the basic theorem
        and the PLD were both computed and differ, both."""
        out: dict[str, object] = {"method": str(self.method)}
        if self.basic_epsilon is not None and self.pld_epsilon is not None:
            out |= {
                "basic_epsilon": self.basic_epsilon,
                "basic_delta": 0.0,
                "pld_epsilon": self.pld_epsilon,
                "pld_delta": self.pld_delta,
            }
        return out


def _pure_pld_epsilon(found: Leaves, delta: float, neighbour: Neighbour) -> float:
    """ε at δ of the pure leaves ``found`` by their PLD (:func:`epsilon_of`), cached when
    the leaves are hashable: a ledger asks for the same composition per coalition."""
    key = tuple(found)
    try:
        hash(key)
    except TypeError:
        return _pure_pld_uncached(key, delta, neighbour)
    return _pure_pld_cached(key, delta, neighbour)


def _pure_pld_uncached(
    found: tuple[tuple[dp_accounting.DpEvent, int], ...], delta: float, neighbour: Neighbour
) -> float:
    events = [dp_accounting.SelfComposedDpEvent(leaf, n) for leaf, n in found]
    return epsilon_of(events, delta, neighbour=neighbour)


_pure_pld_cached = functools.lru_cache(maxsize=256)(_pure_pld_uncached)


def composition(
    events: Iterable[dp_accounting.DpEvent],
    delta: float,
    *,
    neighbour: Neighbour = "add_remove",
    budget: float | None = None,
    lazy: bool = False,
) -> Composition:
    """The tightest (ε, δ) the composition of ``events`` supports at ``delta``.

    Pure events: the basic theorem's (Σ ε, 0), or the PLD's ε at ``delta`` > 0 (each is
    a valid bound; the basic sum is tight only at δ = 0, Kairouz, Oh & Viswanath 2015).
    The PLD applies when it is smaller by more than :data:`PURE_MARGIN`, or when it alone
    meets ``budget``: a pure guarantee is the stronger statement at (nearly) equal ε.
    ``lazy`` (a charge's check): when the basic sum already meets ``budget`` the PLD is
    not computed, nor with sampled events when their RDP composition meets it, nor when
    a figure already found for the same leaves composed at least as many times meets it
    (:func:`_dominated_within`; the :class:`Composition` then holds that figure, an
    upper bound). Other events: :func:`epsilon_of` at
    ``delta``."""
    events = list(events)
    found = leaves(events)
    if not found:
        return Composition(0.0, 0.0, Method.NONE)
    pure = [(leaf_pure_epsilon(leaf), n) for leaf, n in found]
    if not all(p is not None for p, _ in pure):
        quick = (
            _quick_within(found, delta, neighbour, budget) if lazy and budget is not None else None
        )
        if quick is None and lazy and budget is not None:
            quick = _dominated_within(found, delta, neighbour, budget)
        if quick is not None:
            return Composition(quick, delta, Method.ACCOUNTANT)
        return Composition(epsilon_of(events, delta, neighbour=neighbour), delta, Method.ACCOUNTANT)
    basic = float(sum(p * n for p, n in pure if p is not None))
    if delta <= 0 or basic == 0.0 or (lazy and budget is not None and basic <= budget):
        return Composition(basic, 0.0, Method.BASIC, basic)
    tight = _pure_pld_epsilon(found, float(delta), neighbour)
    if tight < basic * (1.0 - PURE_MARGIN) or (budget is not None and tight <= budget < basic):
        return Composition(tight, delta, Method.PLD, basic, tight, delta)
    return Composition(basic, 0.0, Method.BASIC, basic, tight, delta)


def compose(
    events: Iterable[dp_accounting.DpEvent], delta: float, *, neighbour: Neighbour = "add_remove"
) -> tuple[float, float]:
    """The (ε, δ) of :func:`composition`."""
    c = composition(events, delta, neighbour=neighbour)
    return c.epsilon, c.delta


class _LeafTally:
    """The leaves of a ledger's events with how many times each composes (as
    :func:`leaves` finds them), kept as entries are put, replaced and dropped: a charge's
    check reads them in O(distinct leaves), where flattening every entry again costs
    O(entries) a charge, O(R²) over R rounds. A leaf keeps its place while any entry
    holds it."""

    def __init__(self) -> None:
        self._counts: dict[object, list[Any]] = {}  # key: [leaf, count]
        self._of: dict[str, list[tuple[object, int]]] = {}  # label: its (key, count)s

    def put(self, label: str, event: dp_accounting.DpEvent) -> None:
        self.drop(label)
        mine = []
        for leaf, n in _flatten(event, 1):
            key = _key(leaf)
            self._counts.setdefault(key, [leaf, 0])[1] += n
            mine.append((key, n))
        self._of[label] = mine

    def drop(self, label: str) -> None:
        for key, n in self._of.pop(label, ()):
            slot = self._counts[key]
            slot[1] -= n
            if slot[1] == 0:
                del self._counts[key]

    def events(self) -> list[dp_accounting.DpEvent]:
        """One event per leaf, self-composed by its count: their composition is the
        entries'."""
        return [
            leaf if n == 1 else dp_accounting.SelfComposedDpEvent(leaf, n)
            for leaf, n in self._counts.values()
        ]


class PrivacyLedger:
    """Budget (ε, δ) and the events charged against it. ``neighbour``: the scenario's
    neighbouring relation (``privacy.neighbour``), which only randomized response's
    accounting depends on (every other event folds it into its sensitivity); the
    default, add/remove-one, is also right when the relation is unknown."""

    def __init__(
        self,
        epsilon: float,
        delta: float,
        *,
        on_overspend: OverspendPolicy | str = "refuse",
        neighbour: Neighbour = "add_remove",
    ) -> None:
        if not epsilon > 0:
            raise ValueError(f"epsilon budget must be > 0, got {epsilon}")
        if not 0 < delta < 1:
            raise ValueError(f"delta budget must be in (0, 1), got {delta}")
        if neighbour not in ("replace_one", "add_remove"):
            raise ValueError(f"neighbour must be 'replace_one' or 'add_remove', got {neighbour!r}")
        self.epsilon_budget = float(epsilon)
        self.delta = float(delta)
        self.on_overspend = OverspendPolicy(on_overspend)
        self.neighbour: Neighbour = neighbour
        self._entries: dict[str, LedgerEntry] = {}
        #: Each entry's event with no coalition (:attr:`LedgerEntry.event`), kept as the
        #: entries change: a charge's check composes them all, and realising an entry's
        #: event costs tens of microseconds (R² of them over R rounds).
        self._events: dict[str, dp_accounting.DpEvent] = {}
        self._tally = _LeafTally()
        #: Inside :meth:`checked_together`: the number of entries before it (their
        #: charges' checks wait for its end), else None.
        self._deferred_from: int | None = None
        #: A charge went past the budget under ``warn`` or ``allow`` (and was warned about
        #: under ``warn``): later charges, which these policies never refuse, are recorded
        #: without composing everything again (a charge's check costs the composition of
        #: all entries). The run's figures are the final composition's (:meth:`guarantee`).
        self._over = False

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries.values())

    @property
    def _budget(self) -> float:
        return self.epsilon_budget * (1 + _RELATIVE_SLACK)

    def _within(self, epsilon: float, delta: float) -> bool:
        return epsilon <= self._budget and delta <= self.delta

    def charge(
        self,
        label: str,
        event: dp_accounting.DpEvent,
        *,
        trust: Trust | None = None,
        noise: NoiseShares | None = None,
        sampling: Sampling | None = None,
        viewers: Iterable[str] = (),
    ) -> None:
        """Record a planned mechanism that holds while ``trust`` does, refusing it if the
        composition exceeds the budget (or warning, if the scenario allows overspending).
        ``event`` is the release unsampled; with ``sampling`` it is amplified while the
        sampler stays out of the coalition (the budget check counts it amplified).
        ``viewers``: the event is drawn for each of them, each seeing only its own draw
        (see the module docstring); the budget check counts one draw."""
        if label in self._entries:
            raise ValueError(f"ledger already has an entry {label!r}")
        if noise is not None and noise.integer is not None and noise.integer.delta != self.delta:
            raise ValueError(
                f"{label}: integer noise bound converted at delta = {noise.integer.delta:g}, "
                f"not at the ledger's delta = {self.delta:g}"
            )
        self._check_sampling(label, sampling, noise)
        members = _as_members(viewers)
        if members and (noise is not None or sampling is not None):
            raise ValueError(f"{label}: a per-viewer release has no noise shares or sampling")
        entry = LedgerEntry(
            label, event, trust or Trust.nobody(), noise, sampling=sampling, viewers=members
        )
        if self._deferred_from is not None or self._over:
            self._put(entry)
            return
        events = [*self._tally.events(), entry.event]
        spent_at = composition(
            events, self.delta, neighbour=self.neighbour, budget=self._budget, lazy=True
        )
        if not self._within(spent_at.epsilon, spent_at.delta):
            self._overspent(label, spent_at)
        self._put(entry)

    def _put(self, entry: LedgerEntry) -> None:
        self._entries[entry.label] = entry
        self._events[entry.label] = event = entry.event
        self._tally.put(entry.label, event)

    def _overspent(self, label: str, spent_at: Composition) -> None:
        """Refuse the charge ``label`` whose composition ``spent_at`` is past the budget
        (raise :class:`BudgetExceededError`, the fix named), or warn, or let it pass, as
        the policy says."""
        spent, spent_delta = spent_at.epsilon, spent_at.delta
        message = (
            f"{label}: composing this mechanism gives eps = {spent:.4g} at delta = "
            f"{max(spent_delta, 0.0):g}, over the budget eps = {self.epsilon_budget:g}"
        )
        if self.on_overspend is OverspendPolicy.REFUSE:
            reasons = [f"{e.label}: {e.reason}" for e in self._entries.values() if e.reason]
            fix = (
                # a release already charged as not private, for the reason it gives
                f". No epsilon can meet it: {'; '.join(reasons)}. Set "
                "privacy.on_overspend = 'warn' to run anyway (e.g. a study of the attack)."
                if math.isinf(spent) and reasons
                # no ε holds: a mechanism's own δ exceeds the budget's, raising ε cannot help
                else ". No epsilon can meet it: a mechanism here is not private at this delta "
                "(its own delta exceeds the budget's); choose a private variant of it, or "
                "set privacy.on_overspend = 'warn' to run anyway (e.g. paper reproduction)."
                if math.isinf(spent)
                else ". Raise privacy.epsilon, spend less per mechanism (e.g. "
                "privacy.calibration = 'exact' for Gaussian noise), or set "
                "privacy.on_overspend = 'warn' to run anyway (e.g. paper reproduction)."
            )
            raise BudgetExceededError(message + fix)
        self._over = True
        if self.on_overspend is OverspendPolicy.WARN:
            warnings.warn(message, OverspendWarning, stacklevel=3)

    @contextlib.contextmanager
    def checked_together(self) -> Iterator[None]:
        """Charges made inside are checked against the budget once, at the end, with the
        outcome each would have had alone: ε only grows as mechanisms compose, so when
        the last charge's composition meets the budget every earlier one does, and
        otherwise the first charge past it is found by bisection. A plan of n charges
        then costs about log₂ n compositions where checking each costs n (R rounds
        planned before a training run). That charge is refused (it and every later
        charge dropped, as if the loop had stopped there), or warned about, as
        :meth:`charge` would have. An exception inside skips the check."""
        if self._deferred_from is not None:
            raise RuntimeError("checked_together() is already open on this ledger")
        start = len(self._entries)
        self._deferred_from = start
        try:
            yield
        finally:
            self._deferred_from = None
        self._check_charged_from(start)

    def _check_charged_from(self, start: int) -> None:
        """:meth:`checked_together`'s check of the entries charged after the first
        ``start``."""
        labels = list(self._entries)
        events = list(self._events.values())
        if len(labels) == start or self._over:
            return

        def spent(count: int) -> Composition:  # the first ``count`` entries composed
            return composition(
                events[:count],
                self.delta,
                neighbour=self.neighbour,
                budget=self._budget,
                lazy=True,
            )

        last = spent(len(labels))
        if self._within(last.epsilon, last.delta):
            return
        within, over, over_at = start, len(labels), last  # prefix ``over`` is past it
        while over - within > 1:
            middle = (within + over) // 2
            at = spent(middle)
            if self._within(at.epsilon, at.delta):
                within = middle
            else:
                over, over_at = middle, at
        first = labels[over - 1]
        if self.on_overspend is OverspendPolicy.REFUSE:
            for label in labels[over - 1 :]:
                del self._entries[label], self._events[label]
                self._tally.drop(label)
        self._overspent(first, over_at)

    def _check_sampling(
        self, label: str, sampling: Sampling | None, noise: NoiseShares | None
    ) -> None:
        """A sampling amplifies under one neighbouring relation (Poisson: add/remove-one,
        fixed size: replace-one); the ledger's must be that one. Integer noise has a
        bound only under Poisson sampling here."""
        if sampling is None:
            return
        if not isinstance(sampling, Sampling):
            raise TypeError(f"{label}: sampling must be a Sampling, got {sampling!r}")
        if sampling.neighbour != self.neighbour:
            raise ValueError(
                f"{label}: {sampling.kind} sampling amplifies for {sampling.neighbour} "
                f"neighbours, but this ledger accounts for {self.neighbour}; use a ledger "
                f"with neighbour={sampling.neighbour!r} or the other sampling"
            )
        if noise is not None and noise.integer is not None and sampling.kind != "poisson":
            raise ValueError(
                f"{label}: integer noise is accounted under Poisson sampling only (Zhu & "
                "Wang's bound); there is no bound here for a fixed-size sample of it"
            )

    def non_private(self, label: str, reason: str) -> None:
        """Record a release that is not private by design (a labelled baseline, or a
        reading of a paper that voids its proof); never refused, reported as ε = ∞."""
        if label in self._entries:
            raise ValueError(f"ledger already has an entry {label!r}")
        self._put(
            LedgerEntry(
                label,
                dp_accounting.NonPrivateDpEvent(),
                Trust.nobody(),
                status=Status.NON_PRIVATE,
                reason=reason,
            )
        )

    def settle(
        self,
        label: str,
        realised: dp_accounting.DpEvent | None = None,
        *,
        contributors: Iterable[str] | None = None,
        reason: str = "",
    ) -> None:
        """The mechanism released: as planned, as ``realised``, or with noise shares from
        ``contributors`` only (the parties whose shares are in the release). ``reason``:
        why the release is what it is, where that is not the plan (reported with the
        event)."""
        entry = self._entries[label]
        if isinstance(realised, dp_accounting.NoOpDpEvent):
            self.withhold(label)
            return
        settled = LedgerEntry(
            label,
            entry.planned,
            entry.trust,
            entry.noise,
            Status.RELEASED,
            realised,
            None if contributors is None else _as_members(contributors),
            reason=reason,
            sampling=entry.sampling,
            viewers=entry.viewers,
        )
        if entry.sampling is not None and realised is not None:
            entry.sampling.wrap(realised)  # an event it cannot amplify: TypeError now
        self._put(settled)

    def withhold(self, label: str) -> None:
        """The mechanism released nothing (an abort): it spends nothing."""
        entry = self._entries[label]
        self._put(
            LedgerEntry(
                label,
                entry.planned,
                entry.trust,
                entry.noise,
                Status.WITHHELD,
                sampling=entry.sampling,
                viewers=entry.viewers,
            )
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
                    planned=repr(entry.planned_event),
                    realised=repr(event),
                    trust=entry.trust.description,
                    trusted_parties=entry.trust.parties,
                    trust_kind=str(entry.trust.kind),
                    broken=entry.trust.broken_by(members),
                    reason=entry.reason,
                    amplification=entry.amplification_against(members),
                )
            )
        achieved = composition(events, self.delta, neighbour=self.neighbour, budget=self._budget)
        return Guarantee(
            target_epsilon=self.epsilon_budget,
            target_delta=self.delta,
            epsilon=achieved.epsilon,
            delta=achieved.delta,
            met=self._within(achieved.epsilon, achieved.delta),
            non_private=any(e.status is Status.NON_PRIVATE for e in self._entries.values()),
            events=tuple(records),
            composition=achieved,
        )

    def epsilon(self, delta: float | None = None) -> float:
        """Achieved ε at ``delta`` (default: the budget's δ) with no coalition."""
        return epsilon_of(
            list(self._events.values()),
            self.delta if delta is None else delta,
            neighbour=self.neighbour,
        )

    @property
    def within_budget(self) -> bool:
        return self.guarantee().met


def _as_members(contributors: Iterable[str]) -> tuple[str, ...] | Picked:
    """Contributors as a ledger entry keeps them: a view of a numbered population as it
    is, anything else as a tuple."""
    return contributors if isinstance(contributors, Picked) else tuple(contributors)
