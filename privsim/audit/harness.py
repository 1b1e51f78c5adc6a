"""The empirical privacy audit: run a protocol's trials on D and D′, test, bound ε.

:func:`audit_plan` draws ``trials`` statistics on each of D (canary out) and D′ (canary
in) from an :class:`~privsim.kit.audit.AuditPlan`, in batches: in this process
(the default) or as a study on the sweeps' executors (``workers`` local processes, or a
Dask ``scheduler``), each batch a task keyed by its index, so the result does not depend
on where or in which order the batches ran. A trial is vectorised (the plan's model of
the adversary's view, a whole batch at once) or, with ``full_runs``, one end-to-end
protocol run on the bus (the plan's ``full_trials``: slow, so a study). The even trials choose the
threshold, the odd ones are counted (:mod:`privsim.audit.distinguish`), and the
Clopper–Pearson bound (:mod:`privsim.audit.bounds`) gives ε's lower bound at the
plan's δ with the stated confidence.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim import registry
from privsim.audit.distinguish import Test, best_threshold, evaluate, split_halves
from privsim.audit.worker import run_batch
from privsim.kit.audit import AuditPlan, TrialBatch, TrialFn, plan_for
from privsim.limits import AUDIT_BYTES_PER_TRIAL, WorkLimitError, allowing_large
from privsim.scenarios.schema import Scenario
from privsim.studies.executors import make_executor
from privsim.studies.study import Task

__all__ = ["AuditResult", "audit", "audit_plan", "plan_of"]

F64 = npt.NDArray[np.float64]
#: Largest batch of a task on Dask: two statistics lists of this many floats as JSON stay
#: under the executor's row limit (``MAX_ROW_CHARS``).
DASK_BATCH = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditResult:
    """An audit's outcome: the claim, the bound, and the test behind it."""

    protocol: str
    scenario_name: str
    claimed_epsilon: float
    claimed_delta: float
    lower_bound: float
    confidence: float
    trials: int  # on each of D and D′
    seed: int
    test: Test
    neighbours: str
    statistic: str
    coalition: tuple[str, ...]
    seconds: float
    release: str = ""  # the audited release's name, for a protocol that audits several

    @property
    def exceeds_claim(self) -> bool:
        """The audit refutes the claim: ε's lower bound is above the claimed ε."""
        return self.lower_bound > self.claimed_epsilon

    def row(self) -> dict[str, Any]:
        """One flat row (JSON-ready) for the results file."""
        t = self.test
        return {
            "protocol": self.protocol,
            "scenario_name": self.scenario_name,
            "claimed_epsilon": self.claimed_epsilon,
            "claimed_delta": self.claimed_delta,
            "lower_bound": self.lower_bound,
            "confidence": self.confidence,
            "exceeds_claim": self.exceeds_claim,
            "trials_per_side": self.trials,
            "seed": self.seed,
            "threshold": t.threshold,
            "false_positives": t.false_positives,
            "negatives": t.negatives,
            "false_negatives": t.false_negatives,
            "positives": t.positives,
            "fpr": t.fpr,
            "fnr": t.fnr,
            "neighbours": self.neighbours,
            "statistic": self.statistic,
            "coalition": list(self.coalition),
            "release": self.release,
            "seconds": self.seconds,
        }


def plan_of(scenario: Scenario, release: str | None = None) -> AuditPlan:
    """The scenario's protocol's audit plan (a ValueError if it declares none): of its
    default release, or of the one named ``release`` (:class:`~privsim.kit.audit.AuditReleases`)."""
    audit_fn = registry.get(scenario.protocol).audit
    if audit_fn is None:
        raise ValueError(
            f"protocol {scenario.protocol!r} declares no audit plan; audit one of "
            f"{[s.name for s in registry.specs().values() if s.audit is not None]}"
        )
    return plan_for(audit_fn, scenario, release)


#: How long the pilot of :func:`audit_seconds` times the plan's trials: long enough to
#: time a batch, short beside any audit worth refusing.
PILOT_SECONDS = 0.05
#: The test's cost per trial after the trials (splitting, sorting, counting): measured
#: 4 s for 8·10⁶ trials per side of the Gaussian reference plan.
ANALYSIS_SECONDS = 5e-7


def audit_seconds(
    plan: AuditPlan, scenario: Scenario | None, trials: int, *, full_runs: bool = False
) -> float:
    """Estimated seconds of ``trials`` trials on each side, in this process: with
    ``full_runs``, two protocol runs per trial as the scenario's footprint estimates them;
    otherwise (or with no footprint) from a pilot of the plan's own trials, batches of
    1, 4, 16 ... until one takes :data:`PILOT_SECONDS` or reaches the plan's batch size:
    the last two give a cost per trial and per batch, to which the test's
    :data:`ANALYSIS_SECONDS` per trial is added (measured here under load: 10⁴ and 10⁵
    trials of the quickstart's DCA release estimated at 2.7 s and 21 s, run in 1.9 s and
    18 s)."""
    fn, size = _trial_fn(plan, full_runs)
    spec = registry.get(scenario.protocol) if scenario is not None else None
    if full_runs and spec is not None and spec.footprint is not None:
        seconds = float(getattr(spec.footprint(scenario), "seconds", 0.0))  # type: ignore[arg-type]
        if seconds > 0:
            return trials * (2 * seconds + ANALYSIS_SECONDS)

    def timed(count: int) -> float:
        batch = TrialBatch(seed=0, index=0, count=count)
        started = time.perf_counter()
        fn(scenario, batch, False)  # type: ignore[arg-type]
        fn(scenario, batch, True)  # type: ignore[arg-type]
        return time.perf_counter() - started

    timed(1)  # warm up: first calls pay for imports and caches, not for trials
    count, spent = 1, timed(1)
    before = (0, 0.0)
    while spent < PILOT_SECONDS and count < min(size, trials):
        before = (count, spent)
        count = min(size, trials, 4 * count)
        spent = timed(count)
    per_trial = (spent - before[1]) / (count - before[0])
    if per_trial <= 0:  # timing noise: charge the whole batch to its trials
        per_trial = spent / count
    per_batch = max(0.0, spent - per_trial * count)
    return math.ceil(trials / size) * per_batch + trials * (per_trial + ANALYSIS_SECONDS)


def check_audit_work(
    plan: AuditPlan,
    scenario: Scenario | None,
    trials: int,
    *,
    full_runs: bool = False,
    workers: int | None = None,
) -> None:
    """Refuse, before any trial, an audit whose statistics would not fit in the memory
    limit (:data:`~privsim.limits.AUDIT_BYTES_PER_TRIAL` per trial; ``--max-memory``)
    or whose trials would take longer than the time limit (``--max-time``, a day by
    default; lifted by ``--allow-large``): a :class:`~privsim.limits.WorkLimitError`
    naming ``--trials``, the estimate and the number of trials that fits."""
    from privsim.limits import allow_large
    from privsim.scenarios.checks import format_bytes, format_seconds, memory_limit, time_limit

    nbytes = AUDIT_BYTES_PER_TRIAL * trials
    if nbytes > memory_limit():
        fits = memory_limit() // AUDIT_BYTES_PER_TRIAL
        raise WorkLimitError(
            f"--trials {trials}",
            f"the audit's statistics would need about {format_bytes(nbytes)} of memory "
            f"({AUDIT_BYTES_PER_TRIAL} bytes per trial)",
            f"{format_bytes(memory_limit())} (--max-memory)",
            f"give --trials {fits} or fewer, or raise the limit with --max-memory if the "
            "machine has it",
            liftable=False,
        )
    if allow_large():
        return
    seconds = audit_seconds(plan, scenario, trials, full_runs=full_runs) / max(1, workers or 1)
    if seconds > time_limit():
        fits = max(4, int(trials * time_limit() / seconds))
        raise WorkLimitError(
            f"--trials {trials}",
            f"the audit would take about {format_seconds(seconds)} (estimated from a pilot "
            "of its trials)",
            f"{format_seconds(time_limit())} (--max-time)",
            f"give --trials {fits} or fewer, or raise the limit with --max-time",
        )


def _batches(trials: int, size: int) -> list[int]:
    full, rest = divmod(trials, size)
    return [size] * full + ([rest] if rest else [])


def _trial_fn(plan: AuditPlan, full_runs: bool) -> tuple[TrialFn, int]:
    """The plan's vectorised trials, or its full protocol runs, and their batch size."""
    if not full_runs:
        return plan.trials, plan.batch
    if plan.full_trials is None:
        raise ValueError("this protocol's audit plan has no full-run trials; audit vectorised")
    return plan.full_trials, plan.full_batch


def _in_process(
    plan: AuditPlan, scenario: Scenario | None, trials: int, seed: int, full_runs: bool
) -> tuple[F64, F64]:
    fn, size = _trial_fn(plan, full_runs)
    outs, ins = [], []
    for index, count in enumerate(_batches(trials, size)):
        batch = TrialBatch(seed=seed, index=index, count=count)
        outs.append(np.asarray(fn(scenario, batch, False), dtype=np.float64))  # type: ignore[arg-type]
        ins.append(np.asarray(fn(scenario, batch, True), dtype=np.float64))  # type: ignore[arg-type]
    return np.concatenate(outs), np.concatenate(ins)


def _as_study(
    plan: AuditPlan,
    scenario: Scenario,
    trials: int,
    seed: int,
    workers: int | None,
    scheduler: str | None,
    full_runs: bool,
    release: str | None = None,
) -> tuple[F64, F64]:
    """The batches as tasks on the sweeps' executor: the same batches as in process,
    so the statistics are identical wherever they ran (on Dask, batches are capped at
    :data:`DASK_BATCH` trials, so that a row stays within what a Dask client accepts)."""
    size = _trial_fn(plan, full_runs)[1]
    counts = _batches(trials, min(size, DASK_BATCH) if scheduler else size)
    n = len(counts)
    tasks = [
        Task(
            row_id=f"audit-{i}",
            cell="audit",
            coordinates=(("count", count),),
            replication=i,
            seed=seed,
        )
        for i, count in enumerate(counts)
    ]
    base = {"scenario": scenario.to_dict(), "full_runs": full_runs, "release": release}
    executor = make_executor(scheduler, workers)
    rows: dict[int, dict[str, Any]] = {}
    try:
        for row in executor.run(run_batch, base, tasks):
            if row.get("status") != "ok":
                raise ValueError(f"audit batch {row.get('replication')} failed: {row.get('error')}")
            rows[int(row["replication"])] = row
    finally:
        executor.close()
    out = np.concatenate([np.asarray(rows[i]["out"], dtype=np.float64) for i in range(n)])
    into = np.concatenate([np.asarray(rows[i]["in"], dtype=np.float64) for i in range(n)])
    return out, into


def audit_plan(
    plan: AuditPlan,
    scenario: Scenario | None,
    trials: int,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    workers: int | None = None,
    scheduler: str | None = None,
    protocol: str = "",
    name: str = "",
    full_runs: bool = False,
    release: str | None = None,
    allow_large: bool = False,
) -> AuditResult:
    """Audit ``plan`` with ``trials`` runs on each of D and D′, refused before it starts
    when its estimated memory or time is past the limits (:func:`check_audit_work`;
    ``allow_large`` lifts the time limit). ``workers`` > 1 or a
    ``scheduler`` runs the batches as a study (needs ``scenario``; the workers rebuild
    the plan of the scenario's ``release``, so ``plan`` must be that one); otherwise
    they run here. ``full_runs``: the plan's end-to-end protocol runs instead of its
    vectorised trials."""
    if trials < 4:
        raise ValueError(f"an audit needs at least 4 trials per side, got {trials}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    with allowing_large(allow_large):
        check_audit_work(plan, scenario, trials, full_runs=full_runs, workers=workers)
    started = time.perf_counter()
    if scenario is not None and (scheduler or (workers or 1) > 1):
        out, into = _as_study(plan, scenario, trials, seed, workers, scheduler, full_runs, release)
    else:
        out, into = _in_process(plan, scenario, trials, seed, full_runs)
    if not (np.all(np.isfinite(out)) and np.all(np.isfinite(into))):
        raise ValueError("the audit statistic is not finite in every trial")
    out_sel, out_eval = split_halves(out)
    in_sel, in_eval = split_halves(into)
    delta = plan.claimed_delta
    threshold = best_threshold(out_sel, in_sel, delta, confidence)
    test = evaluate(out_eval, in_eval, threshold, delta, confidence)
    return AuditResult(
        protocol=protocol or (scenario.protocol if scenario is not None else ""),
        scenario_name=name or (scenario.name if scenario is not None else ""),
        claimed_epsilon=plan.claimed_epsilon,
        claimed_delta=delta,
        lower_bound=test.lower_bound,
        confidence=confidence,
        trials=trials,
        seed=seed,
        test=test,
        neighbours=plan.neighbours,
        statistic=plan.statistic,
        coalition=plan.coalition,
        seconds=time.perf_counter() - started,
        release=release or "",
    )


def audit(
    scenario: Scenario,
    trials: int,
    *,
    seed: int | None = None,
    confidence: float = 0.95,
    workers: int | None = None,
    scheduler: str | None = None,
    full_runs: bool = False,
    release: str | None = None,
    allow_large: bool = False,
) -> AuditResult:
    """Audit the scenario's release with its protocol's plan (seed: the scenario's);
    ``release``: which one, for a protocol that audits several (default: its first);
    ``full_runs``: one end-to-end protocol run per trial (see :func:`audit_plan`);
    ``allow_large``: past the time limit all the same (:func:`check_audit_work`)."""
    plan = plan_of(scenario, release)
    if math.isinf(plan.claimed_epsilon):
        raise ValueError(
            "the ledger claims no guarantee for this scenario (ε = ∞ against its coalition): "
            "there is nothing to audit; remove the colluders that break the trust"
        )
    return audit_plan(
        plan,
        scenario,
        trials,
        seed=scenario.seed if seed is None else seed,
        confidence=confidence,
        workers=workers,
        scheduler=scheduler,
        full_runs=full_runs,
        release=release,
        allow_large=allow_large,
    )
