"""One batch of audit trials as a study task, for the sweeps' executors (local process
pool or Dask): the same contract as :func:`privsim.studies.worker.run_task` — plain
JSON-ready data in, a row with the task's keys out, never raising."""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from privsim import registry
from privsim.kit.audit import TrialBatch, plan_for
from privsim.scenarios.schema import Scenario
from privsim.studies.study import Task

__all__ = ["run_batch", "trials_of"]


def trials_of(
    scenario: Scenario, batch: TrialBatch, full_runs: bool = False, release: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(statistics on D, statistics on D′) of one batch, from the protocol's plan of
    ``release`` (default: its first; its vectorised trials, or its full protocol runs)."""
    audit = registry.get(scenario.protocol).audit
    if audit is None:
        raise ValueError(f"protocol {scenario.protocol!r} declares no audit plan")
    plan = plan_for(audit, scenario, release)
    fn = plan.full_trials if full_runs else plan.trials
    if fn is None:
        raise ValueError(f"protocol {scenario.protocol!r} has no full-run audit trials")
    out = np.asarray(fn(scenario, batch, False), dtype=np.float64)
    into = np.asarray(fn(scenario, batch, True), dtype=np.float64)
    return out, into


def run_batch(base: dict[str, Any], task: Task) -> dict[str, Any]:
    """``base``: {"scenario": the scenario's dict, "full_runs": bool, "release": the
    release's name or None}; the task's ``replication`` is the batch index, its ``seed``
    the audit's seed and its coordinate ``count`` the batch's number of trials."""
    row: dict[str, Any] = {
        "row_id": task.row_id,
        "cell": task.cell,
        "replication": task.replication,
        "seed": task.seed,
    }
    try:
        scenario = Scenario.from_dict(base["scenario"])
        count = int(dict(task.coordinates)["count"])
        batch = TrialBatch(seed=task.seed, index=task.replication, count=count)
        full_runs, release = bool(base.get("full_runs", False)), base.get("release")
        out, into = trials_of(scenario, batch, full_runs, release)
        row |= {"status": "ok", "out": out.tolist(), "in": into.tolist()}
    except Exception as exc:  # an error row, as a study's
        row |= {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        row["traceback"] = traceback.format_exc(limit=5)
    return row
