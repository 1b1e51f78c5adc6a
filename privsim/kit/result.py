"""Typed results: what every run reports, in the same sections for every protocol.

:class:`RunResult` holds the common header (version, scenario, protocol, seed, root
entropy), the status, and typed sections — privacy (computed by the ledger), accuracy,
communication, parties, coalition and timing — plus ``methods`` for protocols that run
several methods side by side and ``details``, the protocol's own section (under the
protocol's name in :meth:`RunResult.to_dict`). Infinite values become ``"inf"`` in
``to_dict()``, so the dict is JSON-ready.

A run function builds its result with :meth:`RunResult.of_world`: from the scenario, the
seed, the finished world and the ledger it fills the header, the status (``aborted`` iff
an :class:`Abort` is given), privacy, communication, parties, coalition, timing and the
scenario echo; the protocol gives only its own figures.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from privsim.sim.cost import communication_cost
from privsim.sim.ledger import Composition, EventRecord, PrivacyLedger
from privsim.sim.messages import wire_size
from privsim.sim.world import World
from privsim.version import __version__

if TYPE_CHECKING:
    from privsim.scenarios.schema import Scenario

__all__ = [
    "Abort",
    "Coalition",
    "Communication",
    "MethodResult",
    "Parties",
    "Privacy",
    "RunResult",
    "Timing",
    "jsonable",
    "without_timing",
]


def jsonable(value: Any) -> Any:
    """Plain JSON-ready data: dataclasses as dicts, tuples as lists, ±inf and nan as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _as_dict(obj: Any) -> dict[str, Any]:
    return {f.name: jsonable(getattr(obj, f.name)) for f in fields(obj)}


def _with_composition(details: dict[str, Any], found: Composition | None) -> dict[str, Any]:
    """The protocol's ``details`` and, under ``composition``, which theorem gave the
    reported ε (``basic`` or ``pld`` for pure events, with both figures when both were
    computed; ``accountant`` otherwise)."""
    if found is None or "composition" in details:
        return details
    return {**details, "composition": found.details()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Privacy:
    """The achieved guarantee, as the ledger computed it against the realised coalition.

    ``achieved_epsilon`` holds at ``delta`` (0 for pure ε-DP); ``guarantee_met``: within
    the target (ε, δ); ``non_private``: a labelled non-private release (a baseline);
    ``events``: each ledger entry with the parties it trusted and whether the coalition
    broke that trust; ``details``: the protocol's calibration figures."""

    target_epsilon: float
    target_delta: float
    achieved_epsilon: float
    delta: float
    guarantee_met: bool
    non_private: bool = False
    notion: str = ""
    events: tuple[EventRecord, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        ledger: PrivacyLedger,
        coalition: Collection[str] = (),
        *,
        notion: str | None = None,
        **details: Any,
    ) -> Privacy:
        g = ledger.guarantee(coalition)
        if g.non_private:
            default = "none (non-private)"
        elif math.isinf(g.epsilon) and all(
            not e.broken and e.realised == e.planned for e in g.events
        ):  # nothing the coalition or the dropouts did: the plan itself has no finite ε
            default = (
                "none at this delta: the mechanisms' own delta adds up past the budget's "
                "(a mechanism here is not private enough at any epsilon)"
            )
        elif math.isinf(g.epsilon):
            default = (
                "none against this coalition: it breaks an event's trust, or too few honest "
                "noise shares reached the release"
            )
        elif g.delta == 0:
            default = "ε-differential privacy"
        else:
            default = "(ε, δ)-differential privacy"
        return cls(
            target_epsilon=g.target_epsilon,
            target_delta=g.target_delta,
            achieved_epsilon=g.epsilon,
            delta=g.delta,
            guarantee_met=g.met,
            non_private=g.non_private,
            notion=default if math.isinf(g.epsilon) and not g.non_private else notion or default,
            events=g.events,
            details=_with_composition(details, g.composition),
        )

    @classmethod
    def worst(cls, parts: Collection[Privacy], *, notion: str) -> Privacy:
        """The guarantee of a run whose methods are alternative releases: the weakest
        private method's (ε at its δ); non-private methods are labelled baselines."""
        private = [p for p in parts if not p.non_private]
        if not private:
            first = next(iter(parts))
            return cls(
                target_epsilon=first.target_epsilon,
                target_delta=first.target_delta,
                achieved_epsilon=math.inf,
                delta=first.target_delta,
                guarantee_met=False,
                non_private=True,
                notion=notion,
            )
        weakest = max(private, key=lambda p: (p.achieved_epsilon, p.delta))
        return cls(
            target_epsilon=weakest.target_epsilon,
            target_delta=weakest.target_delta,
            achieved_epsilon=weakest.achieved_epsilon,
            delta=max(p.delta for p in private),
            guarantee_met=all(p.guarantee_met for p in private),
            notion=notion,
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Communication:
    """Messages, bytes and rounds on the wire, the simulated duration, and per-role
    figures (mean and max per party)."""

    messages: int
    bytes: int
    rounds: int
    duration: float | None
    by_status: Mapping[str, int] = field(default_factory=dict)
    by_kind: Mapping[str, int] = field(default_factory=dict)
    roles: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def of_world(cls, world: World, *, output_party: str | None = None) -> Communication:
        """From a finished world's trace. The duration is when ``output_party`` finished
        (when every party had finished, without one); a party is busy until it
        finished or crashed."""
        busy = {
            a.id: (a.finished_at if a.finished_at is not None else (a.crashed_at or 0.0))
            for a in world.agents.made()  # an agent never made was never busy
        }
        cost = communication_cost(world.trace.arrays(), busy)
        if output_party is not None:
            duration = world.agents[output_party].finished_at
        else:
            duration = max((a.finished_at or 0.0 for a in world.agents.made()), default=0.0)
        return cls(
            messages=cost.messages,
            bytes=cost.bytes,
            rounds=cost.rounds,
            duration=duration,
            by_status=dict(cost.by_status),
            by_kind=dict(cost.by_kind),
            roles={
                role: {name: getattr(rc, name) for name in rc.__slots__}
                for role, rc in cost.roles.items()
            },
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Parties:
    """Who took part: ``total`` data holders, ``included`` in the release, and the ids
    that were absent, crashed, excluded or colluding."""

    total: int
    included: int | None = None
    absent: tuple[str, ...] = ()
    crashed: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    colluding: tuple[str, ...] = ()

    @classmethod
    def of_world(
        cls,
        world: World,
        holders: tuple[str, ...],
        included: Collection[str] | None = None,
    ) -> Parties:
        members = set(holders)
        order = {p: i for i, p in enumerate(holders)}
        return cls(
            total=len(holders),
            included=None if included is None else len(included),
            absent=tuple(sorted(p for p in world.faults.absent if p in members)),
            crashed=tuple(sorted(p for p in world.faults.crash_times if p in members)),
            excluded=()
            if included is None
            else tuple(sorted(members - set(included), key=order.__getitem__)),
            colluding=tuple(sorted(world.coalition)),
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Coalition:
    """What the coalition pooled: its members, the messages its members sent or
    received (count and bytes by kind), and the protocol's exposure metrics."""

    members: tuple[str, ...] = ()
    pooled_messages: Mapping[str, int] = field(default_factory=dict)
    pooled_bytes: Mapping[str, int] = field(default_factory=dict)
    view_complete: bool = True
    exposure: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of_world(
        cls,
        world: World,
        exposure: Mapping[str, Any] | None = None,
        *,
        view_complete: bool = True,
    ) -> Coalition:
        view = world.coalition_view()
        counts: Counter[str] = Counter()
        sizes: Counter[str] = Counter()
        for seen in view.messages:
            kind = type(seen.message).__name__
            counts[kind] += 1
            sizes[kind] += wire_size(seen.message)
        return cls(
            members=tuple(sorted(view.members)),
            pooled_messages=dict(sorted(counts.items())),
            pooled_bytes=dict(sorted(sizes.items())),
            view_complete=view_complete,
            exposure=dict(exposure or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """What the run cost the machine (excluded when comparing runs)."""

    wall_seconds: float
    key_agreement_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Abort:
    """Why a run (or a method) released nothing: ``reason``, a short code that studies
    group by (``too_many_dropouts``, ``server_crashed``), and ``detail``, one sentence
    for the reader (who was missing, which threshold failed). Required for an aborted
    result: the report prints both."""

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(
                f"Abort needs a reason, got {self.reason!r}: give a short code such as "
                "Abort(reason='too_many_dropouts', detail='12 of 40 clients answered')"
            )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


def _require_abort(owner: str, status: str, abort: Abort | None) -> None:
    """An aborted result says why; a released one has nothing to say why about."""
    if status == "aborted" and abort is None:
        raise ValueError(
            f"{owner} has status 'aborted' but no abort: give "
            "abort=Abort(reason='...', detail='...') saying why nothing was released"
        )
    if status == "released" and abort is not None:
        raise ValueError(
            f"{owner} has status 'released' and an abort ({abort.reason}): give "
            "status 'aborted' with it, or drop the abort"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MethodResult:
    """One of several methods run side by side on the same data (or a baseline)."""

    status: str
    privacy: Privacy
    abort: Abort | None = None
    accuracy: Mapping[str, Any] | None = None
    communication: Communication | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    timing: Timing | None = None

    def __post_init__(self) -> None:
        _require_abort("a method result", self.status, self.abort)

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """Everything a run reports; :meth:`to_dict` is the JSON result file's content."""

    scenario_name: str
    protocol: str
    seed: int
    root_entropy: int
    status: str
    privacy: Privacy
    timing: Timing
    scenario: Mapping[str, Any]
    abort: Abort | None = None
    accuracy: Mapping[str, Any] | None = None
    communication: Communication | None = None
    parties: Parties | None = None
    coalition: Coalition = field(default_factory=Coalition)
    methods: Mapping[str, MethodResult] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    attack: Mapping[str, Any] | None = None
    """What an attack on training achieved (``threat.attack``, ``threat.poisoning``):
    ``success``, ``rounds_recovered`` and the attack's own figures; absent otherwise."""
    privsim_version: str = __version__

    def __post_init__(self) -> None:
        _require_abort(f"the result of {self.protocol!r}", self.status, self.abort)

    @classmethod
    def of_world(
        cls,
        scenario: Scenario,
        seed: int,
        world: World,
        ledger: PrivacyLedger,
        *,
        holders: Sequence[str] | None = None,
        included: Collection[str] | None = None,
        abort: Abort | None = None,
        accuracy: Mapping[str, Any] | None = None,
        privacy: Privacy | Mapping[str, Any] | None = None,
        notion: str | None = None,
        output_party: str | None = None,
        communication: Communication | None = None,
        exposure: Mapping[str, Any] | None = None,
        view_complete: bool = True,
        methods: Mapping[str, MethodResult] | None = None,
        details: Mapping[str, Any] | None = None,
        started: float | None = None,
        wall_seconds: float | None = None,
    ) -> RunResult:
        """The result of one run on ``world`` (finished), its ``ledger`` settled.

        The protocol gives its own figures: ``holders``, the data holders' ids in order
        (default: the world's ``client`` parties), and ``included``, those whose data
        is in the release (None: not known, e.g. after an abort); ``abort``, why nothing was released (the status is
        ``aborted`` iff it is given); ``accuracy``; ``privacy``, its calibration figures
        (``Privacy.details``; the ledger computes the guarantee against the world's
        coalition, with ``notion`` if given) or a :class:`Privacy` computed already;
        ``output_party``, whose finishing time is the run's duration (default: when
        every party had finished), or the ``communication`` computed already (e.g. to
        derive a detail from it); ``exposure``, its coalition metrics (and
        ``view_complete``); ``methods``; ``details``, its own section; and ``started``,
        the ``time.perf_counter()`` at which the run began (or ``wall_seconds``,
        measured elsewhere). The rest is filled here: the header from ``scenario`` and
        ``seed``, the communication from the world's trace, the parties from its
        faults, the coalition from its pooled view, the key-agreement time from its
        channels, and the scenario echo."""
        if started is not None and wall_seconds is None:
            wall_seconds = time.perf_counter() - started
        elif wall_seconds is None or started is not None:
            raise ValueError("give started=time.perf_counter() at the run's start, or wall_seconds")
        if not isinstance(privacy, Privacy):
            privacy = Privacy.of(ledger, world.coalition, notion=notion, **(privacy or {}))
        return cls(
            scenario_name=scenario.name,
            protocol=scenario.protocol,
            seed=seed,
            root_entropy=world.streams.entropy,
            status="released" if abort is None else "aborted",
            abort=abort,
            privacy=privacy,
            accuracy=accuracy,
            communication=communication or Communication.of_world(world, output_party=output_party),
            parties=Parties.of_world(
                world,
                tuple(world.parties_by_role.get("client", ()) if holders is None else holders),
                included,
            ),
            coalition=Coalition.of_world(world, exposure, view_complete=view_complete),
            timing=Timing(
                wall_seconds=wall_seconds,
                key_agreement_seconds=world.channels.key_agreement_seconds,
            ),
            methods=dict(methods or {}),
            details=dict(details or {}),
            scenario=scenario.to_dict(),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "privsim_version": self.privsim_version,
            "scenario_name": self.scenario_name,
            "protocol": self.protocol,
            "seed": self.seed,
            "root_entropy": self.root_entropy,
            "status": self.status,
            "abort": jsonable(self.abort),
            "privacy": jsonable(self.privacy),
            "accuracy": jsonable(self.accuracy),
            "parties": jsonable(self.parties),
            "communication": jsonable(self.communication),
            "coalition": jsonable(self.coalition),
            "methods": jsonable(self.methods),
            self.protocol: jsonable(self.details),
            **({"attack": jsonable(self.attack)} if self.attack is not None else {}),
            "timing": jsonable(self.timing),
            "scenario": jsonable(self.scenario),
        }

    @property
    def data(self) -> dict[str, Any]:
        return self.to_dict()

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]


def without_timing(value: Any) -> Any:
    """``value`` with every machine-dependent field removed (``timing`` sections and
    ``*_seconds`` keys, at any depth): what two runs of the same seed must agree on."""
    if isinstance(value, Mapping):
        return {
            k: without_timing(v)
            for k, v in value.items()
            if k != "timing" and not str(k).endswith("_seconds")
        }
    if isinstance(value, list | tuple):
        return [without_timing(v) for v in value]
    return value
