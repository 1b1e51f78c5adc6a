"""A training run: R rounds of DP-SGD or DP-FedAvg, each a world of its own, one ledger
over them all, and the learning curves — accuracy, ε so far against the realised
coalition, and the cost on the wire, round by round.

Round r (counted from 1), all of its randomness from the round's own streams
(``Streams(seed).seed_sequence("round", r)``):

1. the server samples the cohort and the ledger is charged the round's planned event
   (under ``refuse``, a round that would overspend stops the training there);
2. the picked clients that are online compute their updates from the current model —
   vectorised over the cohort — and clip them to C;
3. the round's world runs: downloads, the aggregation, this round's faults;
4. the ledger is settled with what reached the sum, and the server steps with the noisy
   sum divided by the planned cohort (q·N or m).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.result import (
    Abort,
    Coalition,
    Communication,
    Parties,
    Privacy,
    RunResult,
    Timing,
)
from privsim.kit.secagg import round as secagg
from privsim.kit.securesum.config import DcaConfig
from privsim.protocols.fedlearn import accounting
from privsim.protocols.fedlearn.accounting import SERVER, NoisePlan
from privsim.protocols.fedlearn.attacks import (
    AttackContext,
    Finding,
    RoundTweaks,
    RoundView,
    TrainingAttack,
)
from privsim.protocols.fedlearn.attacks.registry import build_attack, build_poisoner, target_of
from privsim.protocols.fedlearn.canaries import (
    canary_crowding,
    canary_directions,
    canary_names,
    canary_rate,
    canary_updates,
    empirical_epsilon,
    sample_canaries,
)
from privsim.protocols.fedlearn.cohort import Availability, sample_cohort
from privsim.protocols.fedlearn.config import AvailabilityConfig, TrainingConfig
from privsim.protocols.fedlearn.federated import Learner, learner_of
from privsim.protocols.fedlearn.optimizers import ServerOptimizer
from privsim.protocols.fedlearn.plan import TrainingPlan, plan_training
from privsim.protocols.fedlearn.rounds import (
    CohortUpdates,
    RoundRun,
    plan_secure_round,
    simulate_round,
)
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.events import sampled_pld_interval
from privsim.sim.ledger import BudgetExceededError, PrivacyLedger
from privsim.sim.running import RunningEpsilon
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["Training", "plan_ledger", "population_coalition", "run_fedlearn", "train"]

F64 = npt.NDArray[np.float64]


def population_coalition(scenario: Scenario, streams: Streams) -> frozenset[str]:
    """The colluding parties over the whole population: ``threat.colluding_clients`` =
    T draws T of the N clients once for the run (so about T/N of every cohort
    colludes), or names them; plus the colluding servers."""
    n = scenario.population.clients
    spec = scenario.threat.colluding_clients
    if isinstance(spec, int):
        rng = streams.fresh("threat", "coalition")
        picked = rng.choice(n, size=spec, replace=False) if spec else []
        clients = {f"client-{i}" for i in sorted(int(i) for i in picked)}
    else:
        clients = set(spec)
    return frozenset(clients | set(scenario.threat.colluding_servers))


def plan_ledger(scenario: Scenario) -> PrivacyLedger:
    """The ledger with every round charged as planned, before anything runs: it raises
    :class:`~privsim.sim.ledger.BudgetExceededError` exactly when the run would refuse
    the scenario (the planned rounds overspend)."""
    streams = Streams(scenario.seed)
    plan = plan_training(scenario, learner_of(scenario, streams).start.size)
    return _planned(scenario, plan, streams)


def _planned(scenario: Scenario, plan: TrainingPlan, streams: Streams) -> PrivacyLedger:
    """:func:`plan_ledger` for a built ``plan``."""
    try:
        return _charge_planned(scenario, plan, streams)
    except BudgetExceededError as exc:
        raise BudgetExceededError(
            f"{exc} For training: leave training.noise_multiplier out (the planner's z "
            "meets the budget), raise it, or lower training.rounds."
        ) from None


def _charge_planned(scenario: Scenario, plan: TrainingPlan, streams: Streams) -> PrivacyLedger:
    ledger = accounting.ledger_of(scenario)
    with ledger.checked_together():  # R rounds: about log₂ R compositions, not R
        _charge_rounds(scenario, plan, streams, ledger)
    return ledger


def _charge_rounds(
    scenario: Scenario, plan: TrainingPlan, streams: Streams, ledger: PrivacyLedger
) -> None:
    rounds = plan.training.rounds
    if plan.secure:  # a round of the planned cohort's size
        assert plan.integer is not None
        names = tuple(f"client-{i}" for i in range(max(2, round(plan.noise.cohort))))
        for r in range(1, rounds + 1):
            secure = plan_secure_round(scenario, streams, names, plan.integer, r)
            if secure is None:
                kind = "SecAgg+ graph" if plan.aggregation == "secagg_plus" else "SecAgg threshold"
                raise FieldError(
                    "training.rate",
                    f"a cohort of {len(names)} admits no {kind} (k, t) meeting the targets "
                    "for the planned dropout and corruption",
                    "pick larger cohorts (training.rate or training.cohort), or lower "
                    "training.expected_dropout or training.corruption, or relax "
                    "training.security_bits",
                )
            plan.charge(ledger, r, names, secure)
        return
    for r in range(1, rounds + 1):
        plan.charge(ledger, r, ())


def _curve(running: Sequence[float], final: float) -> list[float]:
    """ε so far after each round, never above the run's reported ε and equal to it at
    the last round: round r's figure is the smallest of the running compositions of
    rounds 1 … r′ for r′ ≥ r and of the final one (each composition holds the first r
    rounds, so each bounds them: post-processing), the last the final figure itself."""
    out = list(running)
    best = final
    for i in range(len(out) - 1, -1, -1):
        best = min(best, out[i])
        out[i] = best
    if out:
        out[-1] = final
    return out


def _running(scenario: Scenario) -> RunningEpsilon:
    """ε so far, round by round, at the PLD interval the ledger uses for as many distinct
    sampled rounds as the training plans (:mod:`privsim.sim.running`)."""
    rounds = scenario.table("training", TrainingConfig).rounds
    return RunningEpsilon(
        scenario.privacy.delta,
        neighbour=scenario.privacy.neighbour,
        interval=sampled_pld_interval(rounds),
    )


@dataclass(slots=True)
class Totals:
    """Communication summed over the rounds: per role, figures per party and round."""

    messages: int = 0
    bytes: int = 0
    rounds: int = 0
    duration: float = 0.0
    by_status: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    roles: dict[str, dict[str, float]] = field(default_factory=dict)
    pooled_messages: Counter[str] = field(default_factory=Counter)
    pooled_bytes: Counter[str] = field(default_factory=Counter)

    def add(self, comm: Communication, pooled: Coalition) -> None:
        self.messages += comm.messages
        self.bytes += comm.bytes
        self.rounds += comm.rounds
        self.duration += comm.duration or 0.0
        self.by_status.update(comm.by_status)
        self.by_kind.update(comm.by_kind)
        self.pooled_messages.update(pooled.pooled_messages)
        self.pooled_bytes.update(pooled.pooled_bytes)
        for role, figures in comm.roles.items():
            acc = self.roles.setdefault(role, {})
            n_old, n_new = acc.get("parties", 0.0), float(figures["parties"])
            for name, value in figures.items():
                if name == "parties":
                    continue
                if name.endswith("_mean"):  # weighted by the parties of each round
                    total = acc.get(name, 0.0) * n_old + float(value) * n_new
                    acc[name] = total / max(n_old + n_new, 1.0)
                else:
                    acc[name] = max(acc.get(name, 0.0), float(value))
            acc["parties"] = n_old + n_new

    def communication(self) -> Communication:
        return Communication(
            messages=self.messages,
            bytes=self.bytes,
            rounds=self.rounds,
            duration=self.duration,
            by_status=dict(sorted(self.by_status.items())),
            by_kind=dict(sorted(self.by_kind.items())),
            roles={
                r: {k: int(x) if k == "parties" else x for k, x in v.items()}
                for r, v in sorted(self.roles.items())
            },
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundRecord:
    """One round of the learning curves."""

    round: int
    status: str
    picked: int
    online: int
    included: int | None
    colluding: int
    epsilon: float
    test_accuracy: float | None
    test_loss: float | None
    bytes: Mapping[str, int]
    messages: int
    simulated_seconds: float
    wall_seconds: float
    exposed: int
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class Training:
    """A finished (or stopped) training run."""

    scenario: Scenario
    seed: int
    plan: TrainingPlan
    ledger: PrivacyLedger
    coalition: frozenset[str]
    learner: Learner
    params: F64
    records: list[RoundRecord]
    totals: Totals
    included: set[str]
    picked_colluders: set[str]
    stopped: str | None
    wall_seconds: float
    empirical: dict[str, Any] | None = None
    attack: dict[str, Any] | None = None

    @property
    def noise(self) -> NoisePlan:
        return self.plan.noise


def _exposed(
    plan: TrainingPlan,
    included: Sequence[str] | None,
    coalition: frozenset[str],
    secure: secagg.RoundPlan | None = None,
) -> int:
    """Honest ``included`` clients whose clipped update the coalition reads in the clear:
    every one when it breaks the aggregation's trust (every compute node, or the
    curator), none otherwise (``local`` DP: the server sees only noisy updates)."""
    if not included or plan.aggregation == "local":
        return 0
    if not plan.trust(secure).broken_by(coalition):
        return 0
    return sum(1 for c in included if c not in coalition)


def _skipped(
    r: int, names: tuple[str, ...], coalition: frozenset[str], epsilon: float, started: float
) -> RoundRecord:
    """A round that never ran: too few clients picked for a SecAgg round."""
    return RoundRecord(
        round=r,
        status="aborted",
        picked=len(names),
        online=0,
        included=None,
        colluding=sum(1 for c in names if c in coalition),
        epsilon=epsilon,
        test_accuracy=None,
        test_loss=None,
        bytes={},
        messages=0,
        simulated_seconds=0.0,
        wall_seconds=time.perf_counter() - started,
        exposed=0,
        detail=f"{len(names)} picked: too few for a SecAgg round (no (k, t) meets the targets)",
    )


def _one_round(parts: Sequence[Communication]) -> Communication:
    """A round's communication from its worlds run one after the other (the model's
    download, then the aggregation): counts, bytes and durations add up; per role, the
    same parties took part in each, so a party's figures add up too (means over the
    largest count of parties; maxima added: at most that)."""
    if len(parts) == 1:
        return parts[0]
    roles: dict[str, dict[str, float]] = {}
    for part in parts:
        for role, figures in part.roles.items():
            acc = roles.setdefault(role, {})
            acc["parties"] = max(acc.get("parties", 0.0), float(figures["parties"]))
            for name, value in figures.items():
                if name == "parties":
                    continue
                if name.endswith("_mean"):
                    weight = float(figures["parties"])
                    acc[f"{name}_total"] = acc.get(f"{name}_total", 0.0) + float(value) * weight
                else:
                    acc[name] = acc.get(name, 0.0) + float(value)
    for acc in roles.values():
        for key in [k for k in acc if k.endswith("_mean_total")]:
            acc[key.removesuffix("_total")] = acc.pop(key) / max(acc["parties"], 1.0)
    return Communication(
        messages=sum(p.messages for p in parts),
        bytes=sum(p.bytes for p in parts),
        rounds=sum(p.rounds for p in parts),
        duration=sum(p.duration or 0.0 for p in parts),
        by_status=dict(sum((Counter(p.by_status) for p in parts), Counter())),
        by_kind=dict(sum((Counter(p.by_kind) for p in parts), Counter())),
        roles=roles,
    )


def _pooled(worlds: Sequence[World]) -> Coalition:
    """What the coalition pooled over a round's worlds."""
    views = [Coalition.of_world(w) for w in worlds]
    if len(views) == 1:
        return views[0]
    messages: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for view in views:
        messages.update(view.pooled_messages)
        sizes.update(view.pooled_bytes)
    return Coalition(pooled_messages=dict(messages), pooled_bytes=dict(sizes))


def _why(run: RoundRun) -> str:
    """Why a round released nothing, in the aggregation's words."""
    outcome = run.outcome
    return f"{outcome.abort}: {outcome.detail}" if outcome.abort else "nothing released"


@dataclass(slots=True)
class _Canaries:
    """The run's canary clients (``training.canaries`` = K, :mod:`.canaries`): fixed
    random directions, each picked per round from its own stream at a client's rate
    (the real clients' draws are untouched), sending C·c_k when picked; counted apart
    from the clients (never in accuracy, the included counts or the ledger)."""

    directions: F64
    names: tuple[str, ...]
    rate: float
    clip: float
    start: F64
    counts: npt.NDArray[np.int64]

    @classmethod
    def of(cls, training: TrainingConfig, n: int, params: F64, streams: Streams) -> _Canaries:
        k = training.canaries
        return cls(
            directions=canary_directions(
                k, params.size, streams.generator("canaries", "directions")
            ),
            names=canary_names(k),
            rate=canary_rate(training, n),
            clip=training.clip_norm,
            start=params.copy(),
            counts=np.zeros(k, dtype=np.int64),
        )

    def pick(self, rs: Streams) -> npt.NDArray[np.int64]:
        if not self.names:
            return np.empty(0, dtype=np.int64)
        mask = sample_canaries(len(self.names), self.rate, rs.generator("canaries"))
        return np.asarray(np.flatnonzero(mask), dtype=np.int64)

    def names_of(self, picked: npt.NDArray[np.int64]) -> tuple[str, ...]:
        return tuple(self.names[i] for i in picked.tolist())

    def with_updates(self, updates: F64, picked: npt.NDArray[np.int64]) -> F64:
        if not picked.size:
            return updates
        return np.vstack([updates, canary_updates(self.directions, picked, self.clip)])

    def count(self, picked: npt.NDArray[np.int64], reached: Sequence[str] | None) -> None:
        if reached is None or not picked.size:
            return
        got = set(reached)
        self.counts[[i for i in picked.tolist() if self.names[i] in got]] += 1

    def estimate(
        self, params: F64, plan: TrainingPlan, delta: float, released: int
    ) -> dict[str, Any] | None:
        """The ``empirical`` section (None without canaries): the sum's noise is σ
        (central or DCA's shares) or, with local noise, √m·σ."""
        if not self.names:
            return None
        noise = plan.noise
        sum_std = noise.sigma * (math.sqrt(noise.cohort) if plan.aggregation == "local" else 1.0)
        return empirical_epsilon(
            self.directions,
            params - self.start,
            delta,
            included=self.counts,
            crowding=canary_crowding(self.counts, self.clip, sum_std, released, params.size),
        )


def _check_finite(
    values: F64,
    r: int,
    model: str,
    what: str = "the model's parameters",
    poisoned: bool = False,
) -> None:
    """Stop, naming the fields to change, when training diverged: ``what`` is not finite
    after round ``r`` (a step too large, a user's model returning inf or NaN, or, with
    ``poisoned``, malicious updates scaled past what the model survives)."""
    if np.isfinite(values).all():
        return
    if poisoned:
        raise FieldError(
            "threat.poisoning.factor",
            f"training diverged after round {r} under poisoning: {what} not finite "
            f"(model {model!r})",
            "lower threat.poisoning.factor or threat.poisoning.share, or add a defence "
            '(training.update_check = "range_check" or "norm_bound")',
        )
    raise FieldError(
        "training.server_lr",
        f"training diverged after round {r}: {what} not finite (model {model!r})",
        "lower training.server_lr or training.client_lr, or check the model's loss and "
        "gradients (model.name)",
    )


@dataclass(slots=True)
class _Threats:
    """The run's attacks on training: ``attack`` (``threat.attack``: mounted by the
    colluding servers, told each round before it runs and shown it after) and
    ``poisoner`` (``threat.poisoning``: malicious clients, counted in the ``coalition``).
    Without either every method is a no-op and the run is unchanged."""

    coalition: frozenset[str]
    attack: TrainingAttack | None = None
    poisoner: Any = None
    findings: list[Finding] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        streams: Streams,
        learner: Learner,
        plan: TrainingPlan,
        coalition: frozenset[str],
    ) -> _Threats:
        threat = scenario.threat
        if threat.attack is None and threat.poisoning is None:
            return cls(coalition=coalition)
        ctx = AttackContext(
            scenario=scenario,
            streams=streams,
            learner=learner,
            plan=plan,
            coalition=coalition,
            target="",
        )
        poisoner = build_poisoner(ctx)
        if poisoner is not None:
            coalition = coalition | poisoner.malicious
        attack = None
        if threat.attack is not None:
            target = target_of(scenario, streams, coalition)
            attack = build_attack(
                AttackContext(
                    scenario=scenario,
                    streams=streams,
                    learner=learner,
                    plan=plan,
                    coalition=coalition,
                    target=target,
                )
            )
        return cls(coalition=coalition, attack=attack, poisoner=poisoner)

    @property
    def malicious(self) -> frozenset[str]:
        """The malicious clients (none without ``threat.poisoning``)."""
        return frozenset() if self.poisoner is None else frozenset(self.poisoner.malicious)

    def prepare(self, r: int, names: tuple[str, ...], params: F64) -> RoundTweaks | None:
        return None if self.attack is None else self.attack.prepare(r, names, params)

    def updates(
        self,
        learner: Learner,
        params: F64,
        cohort: npt.NDArray[np.int64],
        names: tuple[str, ...],
        online: npt.NDArray[np.bool_],
        tweaks: RoundTweaks | None,
        rs: Streams,
    ) -> F64:
        """The cohort's updates: each client's from the model it was sent (an active
        server may send some another, ``tweaks.params_for``: their rows are computed
        from it, on a stream of their own), the malicious ones poisoned."""
        updates = learner.updates(params, cohort, online, rs.generator("local"))
        if tweaks is not None and tweaks.params_for:
            models: dict[int, tuple[F64, list[int]]] = {}
            for i, name in enumerate(names):
                sent = tweaks.params_for.get(name)
                if sent is not None:
                    models.setdefault(id(sent), (sent, []))[1].append(i)
            for k, (sent, rows) in enumerate(models.values()):
                idx = np.asarray(rows, dtype=np.int64)
                updates[idx] = learner.updates(
                    sent, cohort[idx], online[idx], rs.generator("local", "sent", k)
                )
        if self.poisoner is not None:
            updates = self.poisoner.poison(cohort, names, online, params, updates)
        return np.asarray(updates, dtype=np.float64)

    def records(
        self, learner: Learner, cohort: npt.NDArray[np.int64], names: tuple[str, ...]
    ) -> dict[str, tuple[F64, npt.NDArray[np.int64]]]:
        """Each picked client's records (X, y), the truth an attack is scored against
        (only when an attack runs)."""
        if self.attack is None or not names:
            return {}
        data = learner.data.cohort(cohort)
        return {
            name: (data.X[i, : int(data.counts[i])].copy(), data.y[i, : int(data.counts[i])].copy())
            for i, name in enumerate(names)
        }

    def observe(self, view: RoundView) -> None:
        if self.attack is not None:
            self.findings.extend(self.attack.observe(view))
        if self.poisoner is not None:  # counts the malicious updates that reached a sum
            self.poisoner.observe(view)

    def opened(self, view: RoundView) -> tuple[str, ...]:
        """The honest clients an active server could open alone in the round (its
        attack's ``openable``; none for a passive attack or none at all)."""
        openable = getattr(self.attack, "openable", None)
        return () if openable is None else tuple(openable(view))

    def why(self, opened: tuple[str, ...]) -> str:
        """The reason a round is charged as :meth:`as_released` has it ("" if as run)."""
        if not opened:
            return ""
        more = f" (and {len(opened) - 1} more)" if len(opened) > 1 else ""
        return (
            f"an active server (threat.attack = {getattr(self.attack, 'name', '?')!r}) could open "
            f"{opened[0]}{more} alone: its input is released with its own noise share only"
        )

    def as_released(
        self, included: tuple[str, ...] | None, opened: tuple[str, ...]
    ) -> tuple[str, ...] | None:
        """What the round released as the coalition could have it: with a client an
        active server could open alone, that client's input with the colluders' (its
        own noise share, never credited, the only honest one: ε = ∞ for the round);
        else what reached the sum."""
        if included is None or not opened:
            return included
        return (*(c for c in included if c in self.coalition), opened[0])

    def report(self, params: F64) -> dict[str, Any] | None:
        """The result's ``attack`` section (None without an attack or poisoning)."""
        out: dict[str, Any] = {}
        if self.attack is not None:
            out.update(self.attack.report(self.findings, params))
        if self.poisoner is not None:
            out["poisoning"] = self.poisoner.report()
        return out or None


def _runnable_with_one_more(
    scenario: Scenario, rs: Streams, names: tuple[str, ...], plan: TrainingPlan, r: int
) -> bool:
    """Whether a SecAgg round skipped for the cohort ``names`` would have run with one
    more client (the target: its presence could have changed whether the round ran)."""
    if not names or plan.integer is None:
        return False  # one client alone never makes a round
    extra = (*names, "client-target")
    return plan_secure_round(scenario, rs, extra, plan.integer, r) is not None


def train(scenario: Scenario, seed: int | None = None) -> Training:
    """Train for ``training.rounds`` rounds (fewer if the budget stops it)."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    streams = Streams(seed)
    n = scenario.population.clients
    learner = learner_of(scenario, streams)
    params = learner.init()
    plan = plan_training(scenario, params.size)
    training = plan.training
    _planned(scenario, plan, Streams(scenario.seed))  # refuse a planned overspend first
    ledger = accounting.ledger_of(scenario)
    coalition = population_coalition(scenario, streams)
    threats = _Threats.of(scenario, streams, learner, plan, coalition)
    coalition = threats.coalition
    availability = Availability.of(scenario.table("availability", AvailabilityConfig), n)
    noise = plan.noise
    optimizer = ServerOptimizer(training, params.size)
    canary_set = _Canaries.of(training, n, params, streams)
    records: list[RoundRecord] = []
    totals = Totals()
    included_ever: set[str] = set()
    colluders_picked: set[str] = set()
    stopped = None
    so_far = _running(scenario)
    running: list[float] = []
    for r in range(1, training.rounds + 1):
        round_started = time.perf_counter()
        rs = Streams(streams.seed_sequence("round", r))
        cohort = sample_cohort(training, n, rs.generator("cohort"))
        names = tuple(f"client-{i}" for i in cohort.tolist())
        picked_k = canary_set.pick(rs)
        every = names + canary_set.names_of(picked_k)  # canaries after the clients
        secure = (
            plan_secure_round(scenario, rs, every, plan.integer, r)
            if plan.secure and plan.integer is not None
            else None
        )
        if plan.secure and secure is None:  # too few picked: no round
            try:
                plan.skip(ledger, r, _runnable_with_one_more(scenario, rs, every, plan, r))
            except BudgetExceededError as exc:
                stopped = f"round {r} was refused: {exc}"
                break
            if ledger.entries and ledger.entries[-1].label == accounting.round_label(r):
                so_far.add(ledger.entries[-1].event_against(coalition))
            running.append(so_far.epsilon)
            records.append(_skipped(r, names, coalition, so_far.epsilon, round_started))
            continue
        try:
            plan.charge(ledger, r, names, secure)
        except BudgetExceededError as exc:
            stopped = f"round {r} was refused: {exc}"
            break
        online = availability.online(cohort, r, rs.generator("availability"))
        tweaks = threats.prepare(r, names, params)
        updates = threats.updates(learner, params, cohort, names, online, tweaks, rs)
        run = simulate_round(
            scenario,
            rs,
            names=every,
            online=np.concatenate([online, np.ones(picked_k.size, dtype=bool)]),
            updates=CohortUpdates(canary_set.with_updates(updates, picked_k)),
            params=params,
            plan=plan,
            coalition=coalition,
            secure=secure,
            tweaks=tweaks,
            unclipped=threats.malicious,
        )
        view = RoundView(
            round=r,
            names=names,
            online=online,
            updates=updates,
            params=params,
            run=run,
            plan=plan,
            coalition=coalition,
            secure=secure,
            records=threats.records(learner, cohort, names),
            tweaks=tweaks or RoundTweaks(),
        )
        threats.observe(view)
        reached = run.included()
        real = frozenset(names)
        included = None if reached is None else tuple(c for c in reached if c in real)
        canary_set.count(picked_k, reached)
        opened = threats.opened(view)
        # the real clients' shares alone are credited; a client an active server could
        # open alone is released with its own share only
        plan.settle(ledger, r, threats.as_released(included, opened), threats.why(opened))
        entry = ledger.entries[-1]
        assert entry.label == accounting.round_label(r)
        so_far.add(entry.event_against(coalition))
        running.append(so_far.epsilon)
        if included is not None and run.outcome.released is not None:
            params = optimizer.step(params, np.asarray(run.outcome.released) / noise.cohort)
            _check_finite(params, r, learner.model_name, poisoned=threats.poisoner is not None)
            included_ever.update(included)
        picked_colluders = {c for c in names if c in coalition}
        colluders_picked |= picked_colluders
        # the download's world ends when its last client has the model; the round's
        # own, when the server has the sum
        last = len(run.worlds) - 1
        parts = [
            Communication.of_world(w, output_party=SERVER if i == last else None)
            for i, w in enumerate(run.worlds)
        ]
        comm = _one_round(parts)
        totals.add(comm, _pooled(run.worlds))
        sent = {role: round(f["bytes_sent_mean"] * f["parties"]) for role, f in comm.roles.items()}
        evaluate = r % training.eval_every == 0 or r == training.rounds
        accuracy, loss = learner.evaluate(params) if evaluate else (None, None)
        if loss is not None:
            _check_finite(
                np.asarray([loss]),
                r,
                learner.model_name,
                what="the test loss",
                poisoned=threats.poisoner is not None,
            )
        records.append(
            RoundRecord(
                round=r,
                status="released" if included is not None else "aborted",
                picked=len(names),
                online=int(online.sum()),
                included=None if included is None else len(included),
                colluding=len(picked_colluders),
                epsilon=so_far.epsilon,
                test_accuracy=accuracy,
                test_loss=loss,
                bytes=dict(sorted(sent.items())),
                messages=comm.messages,
                simulated_seconds=comm.duration or 0.0,
                wall_seconds=time.perf_counter() - round_started,
                exposed=_exposed(plan, included, coalition, secure) or len(opened),
                detail="" if included is not None else _why(run),
            )
        )
    if records and records[-1].test_accuracy is None:  # stopped early: evaluate the end
        accuracy, loss = learner.evaluate(params)
        records[-1] = RoundRecord(
            **{**records[-1].to_dict(), "test_accuracy": accuracy, "test_loss": loss}
        )
    final = ledger.guarantee(coalition).epsilon
    curve = _curve(running, final)
    records = [
        RoundRecord(**{**rec.to_dict(), "epsilon": eps})
        for rec, eps in zip(records, curve, strict=True)
    ]
    released = sum(1 for rec in records if rec.status == "released")
    return Training(
        scenario=scenario,
        seed=seed,
        plan=plan,
        empirical=canary_set.estimate(params, plan, scenario.privacy.delta, released),
        ledger=ledger,
        coalition=coalition,
        learner=learner,
        params=params,
        records=records,
        totals=totals,
        included=included_ever,
        picked_colluders=colluders_picked,
        stopped=stopped,
        wall_seconds=time.perf_counter() - started,
        attack=threats.report(params),
    )


def _accuracy(t: Training) -> dict[str, Any] | None:
    evaluated = [r for r in t.records if r.test_accuracy is not None]
    if not evaluated or not _held_data(t):
        return None
    last = evaluated[-1]
    return {
        "test_accuracy": last.test_accuracy,
        "test_loss": last.test_loss,
        "best_test_accuracy": max(
            r.test_accuracy for r in evaluated if r.test_accuracy is not None
        ),
        "initial_test_accuracy": t.learner.initial_accuracy,
        "rounds_released": sum(1 for r in t.records if r.status == "released"),
    }


def _held_data(t: Training) -> bool:
    """Whether some round released a sum holding a client's update (a curator's round
    that nothing reached releases its noise alone: charged, but no data)."""
    return any(r.status == "released" and (r.included or 0) > 0 for r in t.records)


def _abort(t: Training) -> Abort | None:
    if _held_data(t):
        return None
    if t.stopped:
        return Abort(reason="budget_exhausted", detail=t.stopped)
    first = next((r.detail for r in t.records if r.detail), "no client's update reached it")
    training = t.scenario.table("training", TrainingConfig)
    fix = "plan for the dropouts with training.expected_dropout (or dca.tolerated)"
    if (
        training.aggregation == "dca"
        and training.sampling == "fixed"
        and t.scenario.table("dca", DcaConfig).on_excess_dropout != "release"
    ):
        fix += ', or let rounds release beyond them with dca.on_excess_dropout = "release"'
    return Abort(
        reason="too_many_dropouts",
        detail=f"no round released a sum holding a client's update ({len(t.records)} rounds "
        f"ran; first: {first}); {fix}",
    )


def _details(t: Training) -> dict[str, Any]:
    training = t.scenario.table("training", TrainingConfig)
    return {
        "algorithm": training.algorithm,
        "aggregation": training.aggregation,
        "rounds_planned": training.rounds,
        "rounds_run": len(t.records),
        "stopped": t.stopped,
        "noise": {
            "noise_multiplier": t.noise.multiplier,
            "calibrated": t.noise.calibrated,
            "sigma": t.noise.sigma,
            "share_std": t.noise.share_std,
            "tolerated": t.noise.tolerated,
            "planned_cohort": t.noise.cohort,
        },
        "model": {"parameters": int(t.params.size), "name": t.learner.model_name},
        "curves": [r.to_dict() for r in t.records],
        **({"empirical": t.empirical} if t.empirical is not None else {}),
    }


#: What the accounting of integer noise on a Poisson sample does not yet cover.
INTEGER_POISSON_CAVEAT = (
    "integer noise on a Poisson sample: the target's own share, in the release only when "
    "it is sampled, is credited on neither side (the papers' bound at H − 1 shares); the "
    "variance it adds is not accounted, so this ε may be below the truth (see 'Sampled "
    "rounds' in docs/explanation/privacy.md)"
)


def _caveat(plan: TrainingPlan) -> dict[str, str]:
    """A caveat for the result's privacy details, where the accounting is known to miss
    part of the mechanism."""
    if plan.integer is not None and plan.poisson:
        return {"caveat": INTEGER_POISSON_CAVEAT}
    return {}


def run_fedlearn(scenario: Scenario, seed: int) -> RunResult:
    """A training run, summarised: the final model's accuracy, the composed guarantee
    against the realised coalition, the cost summed over rounds, and the curves."""
    t = train(scenario, seed)
    colluding = tuple(sorted(t.picked_colluders | set(t.scenario.threat.colluding_servers)))
    exposed = sum(r.exposed for r in t.records)
    included_rounds = sum(r.included or 0 for r in t.records)
    privacy = Privacy.of(
        t.ledger,
        t.coalition,
        noise_multiplier=t.noise.multiplier,
        calibrated=t.noise.calibrated,
        tolerated=t.noise.tolerated,
        planned_cohort=t.noise.cohort,
        rounds_charged=len(t.ledger.entries),
        **_caveat(t.plan),
    )
    abort = _abort(t)
    return RunResult(
        scenario_name=scenario.name,
        protocol=scenario.protocol,
        seed=t.seed,
        root_entropy=Streams(t.seed).entropy,
        status="released" if abort is None else "aborted",
        abort=abort,
        privacy=privacy,
        accuracy=None if abort is not None else _accuracy(t),
        communication=t.totals.communication(),
        parties=Parties(
            total=scenario.population.clients,
            included=len(t.included) if abort is None else None,
            colluding=colluding,
        ),
        coalition=Coalition(
            members=colluding,
            pooled_messages=dict(sorted(t.totals.pooled_messages.items())),
            pooled_bytes=dict(sorted(t.totals.pooled_bytes.items())),
            exposure={
                "updates_exposed": exposed,
                "included_client_rounds": included_rounds,
                "colluding_picks": sum(r.colluding for r in t.records),
            },
        ),
        timing=Timing(wall_seconds=t.wall_seconds),
        details=_details(t),
        attack=t.attack,
        scenario=scenario.to_dict(),
    )
