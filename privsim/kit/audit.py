"""What a protocol gives the empirical privacy audit: :class:`AuditPlan`.

A protocol declares ``audit(scenario) -> AuditPlan`` on its spec. The plan names the
neighbouring inputs D and D′ (one canary record added or replaced, as the scenario's
``privacy.neighbour`` says), a scalar statistic computed from the adversary's view of a
run (larger means "the canary is in"), the trial function that draws that statistic for
a batch of independent runs, and the (ε, δ) the ledger claims for the audited release.
The audit harness (:mod:`privsim.audit`) turns the two samples into a lower bound on ε.
A protocol that audits several of its releases declares them by name with
:class:`AuditReleases` (the first is the default; ``privsim audit --release NAME``
picks another).

Protocols import this module, never the harness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum import round as securesum
from privsim.sim.coalition import CoalitionSpec, resolve_coalition
from privsim.sim.streams import Streams

if TYPE_CHECKING:
    from privsim.scenarios.schema import Scenario

__all__ = [
    "AuditPlan",
    "AuditReleases",
    "PlanFn",
    "TrialBatch",
    "TrialFn",
    "plan_for",
    "secure_sum_coalition",
]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialBatch:
    """``count`` independent audit trials, batch ``index`` of the audit seeded ``seed``.

    A trial function draws all its randomness from :meth:`streams`, by name (purpose
    and party), so a batch is a pure function of (scenario, seed, index, canary_in):
    trials run in any order and on any worker give the same statistics."""

    seed: int
    index: int
    count: int

    def __post_init__(self) -> None:
        if self.seed < 0 or self.index < 0 or self.count < 1:
            raise ValueError(f"bad trial batch {self}: seed, index >= 0 and count >= 1 needed")

    def streams(self, canary_in: bool) -> Streams:
        """The batch's named streams: D and D′ get independent streams."""
        side = 1 if canary_in else 0
        return Streams(np.random.SeedSequence(self.seed, spawn_key=(0xA0D17, self.index, side)))


#: ``(scenario, batch, canary_in) -> statistics``: one scalar per trial (``batch.count``
#: of them) from the adversary's view of a run on D′ (canary in) or D (canary out).
TrialFn = Callable[["Scenario", TrialBatch, bool], F64]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditPlan:
    """How to audit one release of a protocol.

    - ``neighbours``: D and D′ in words (which record is the canary, added or replaced).
    - ``statistic``: the adversary's scalar test statistic, in words (larger: canary in).
    - ``trials``: draws the statistic for a :class:`TrialBatch` (vectorised: a whole
      batch at once, computed from the adversary's view).
    - ``claimed_epsilon`` at ``claimed_delta``: the ledger's guarantee for the audited
      release against the audit's coalition.
    - ``coalition``: who the adversary is (the parties whose view the statistic uses).
    - ``batch``: trials per call of ``trials`` (memory bound).
    - ``full_trials``: the same statistic from end-to-end protocol runs on the bus, one
      run per trial (the scenario's network and faults included); slow, run as a study.
      None: the protocol audits only vectorised.
    - ``full_batch``: runs per call of ``full_trials``.
    """

    neighbours: str
    statistic: str
    trials: TrialFn
    claimed_epsilon: float
    claimed_delta: float
    coalition: tuple[str, ...] = ()
    batch: int = 50_000
    full_trials: TrialFn | None = None
    full_batch: int = 20

    def __post_init__(self) -> None:
        if not (self.claimed_epsilon > 0):
            raise ValueError(f"claimed ε must be > 0, got {self.claimed_epsilon}")
        if not 0 <= self.claimed_delta < 1:
            raise ValueError(f"claimed δ must be in [0, 1), got {self.claimed_delta}")
        if self.batch < 1 or self.full_batch < 1:
            raise ValueError(f"batches must be >= 1, got {self.batch} and {self.full_batch}")

    @property
    def claim_is_finite(self) -> bool:
        return math.isfinite(self.claimed_epsilon)


#: ``scenario -> AuditPlan``: how a protocol audits (one of) its release(s).
PlanFn = Callable[["Scenario"], AuditPlan]


@dataclass(frozen=True, slots=True)
class AuditReleases:
    """A protocol's audit plans for several of its releases, by name, the first the
    default. Called with a scenario it is the default's plan, so it is what
    ``ProtocolSpec.audit`` takes; :func:`plan_for` picks another by name."""

    plans: tuple[tuple[str, PlanFn], ...]

    def __post_init__(self) -> None:
        names = [name for name, _ in self.plans]
        if not names or len(set(names)) != len(names) or not all(names):
            raise ValueError(f"audit releases need distinct, non-empty names, got {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.plans)

    def __call__(self, scenario: Scenario) -> AuditPlan:
        return self.plans[0][1](scenario)

    def plan(self, scenario: Scenario, release: str) -> AuditPlan:
        """The plan of the release named ``release`` (a ValueError naming the others)."""
        for name, fn in self.plans:
            if name == release:
                return fn(scenario)
        raise ValueError(
            f"protocol {scenario.protocol!r} has no audited release {release!r}; "
            f"give one of {list(self.names)} (default {self.names[0]!r})"
        )


def plan_for(audit: PlanFn, scenario: Scenario, release: str | None = None) -> AuditPlan:
    """``audit``'s plan for ``scenario``: its default release, or the one named
    ``release`` when ``audit`` is an :class:`AuditReleases`."""
    if release is None:
        return audit(scenario)
    if isinstance(audit, AuditReleases):
        return audit.plan(scenario, release)
    raise ValueError(
        f"protocol {scenario.protocol!r} audits one release; leave out the release name "
        f"({release!r})"
    )


def secure_sum_coalition(scenario: Scenario, clients: Sequence[str]) -> frozenset[str]:
    """The realised coalition among ``clients``, the secure sum's compute nodes and its
    output party, drawn as a run at the scenario's seed draws it."""
    parties = {
        "client": list(clients),
        "compute": list(securesum.node_names(scenario)),
        "aggregator": [securesum.OUTPUT_PARTY],
    }
    spec = CoalitionSpec(
        clients=scenario.threat.colluding_clients, servers=scenario.threat.colluding_servers
    )
    return resolve_coalition(spec, parties, Streams(scenario.seed))
