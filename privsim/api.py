"""The user's entry points: run a scenario, load and change scenarios, run studies, and
check a scenario against its golden result (:func:`check_golden`, :func:`assert_golden`).

``run(scenario, seed)`` is the one way to run anything: it looks the scenario's protocol
up in the registry and calls its run function, a pure function of (scenario, seed).

Work past privsim's limits (:mod:`privsim.limits`: long lists in a scenario, large
grids, long estimated times) is refused before it starts with a named error; ``with
allowing_large():`` (or ``allow_large=True`` on :func:`sweep`, :func:`load_study` and
``privsim.audit.audit``) goes ahead, as ``--allow-large`` does on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privsim import registry
from privsim.golden import GoldenMismatch, GoldenReport, assert_golden, check_golden
from privsim.limits import WorkLimitError, allowing_large
from privsim.runs import ResultError, nan_field, validate
from privsim.runs import run as _run
from privsim.scenarios.loader import builtin_scenario, load_scenario
from privsim.scenarios.schema import Scenario
from privsim.shadowing import check as _check_shadowing

if TYPE_CHECKING:
    import pandas as pd

    from privsim.kit.result import RunResult
    from privsim.studies.study import Study
    from privsim.studies.sweep import SweepSummary

_check_shadowing()  # a folder named privsim imported in this package's place: say so

__all__ = [
    "GoldenMismatch",
    "GoldenReport",
    "ResultError",
    "WorkLimitError",
    "allowing_large",
    "assert_golden",
    "builtin_scenario",
    "check_golden",
    "list_protocols",
    "load_results",
    "load_scenario",
    "load_study",
    "nan_field",
    "replace",
    "run",
    "sweep",
    "validate",
]


def run(
    scenario: Scenario,
    seed: int | None = None,
    *,
    preflight: bool = True,
    scheduler: str | None = None,
    security: Any = None,
    workers: int | None = None,
) -> RunResult:
    """Run ``scenario`` at ``seed`` (default: the scenario's own seed), as
    :func:`privsim.runs.run` does. With ``scheduler`` (a Dask scheduler's address,
    ``tls://`` with a ``distributed.Security`` as ``security``, or ``"local"`` for a
    LocalCluster of ``workers`` processes), each round's bulk work is sharded over the
    cluster's workers (:mod:`privsim.cluster`); the result is the same bytes."""
    if scheduler is None:
        return _run(scenario, seed, preflight=preflight)
    from privsim.cluster import on_cluster

    with on_cluster(scheduler, security=security, workers=workers):
        return _run(scenario, seed, preflight=preflight)


def list_protocols() -> dict[str, str]:
    """Every registered protocol with its one-line summary."""
    return {name: spec.summary for name, spec in registry.specs().items()}


def load_study(path: str | Path, *, allow_large: bool = False) -> Study:
    """Read and validate a study TOML (every cell is checked before any work);
    ``allow_large``: past the limits on cells and tasks (as ``--allow-large``)."""
    from privsim.studies.study import load_study as _load

    with allowing_large(allow_large):
        return _load(path)


def sweep(
    study: Study | str | Path,
    out: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    allow_large: bool = False,
) -> SweepSummary:
    """Run a study into the results directory ``out`` (resuming what is there);
    ``allow_large``: past privsim's work limits (as ``--allow-large``; memory aside)."""
    from privsim.studies.sweep import sweep as _sweep

    with allowing_large(allow_large):
        if not hasattr(study, "tasks"):
            study = load_study(study)  # type: ignore[arg-type]
        return _sweep(study, out, scheduler=scheduler, workers=workers)  # type: ignore[arg-type]


def load_results(directory: str | Path) -> pd.DataFrame:
    """A study's rows as a pandas DataFrame (nested fields as dotted columns)."""
    from privsim.studies.store import load

    return load(directory)


def replace(scenario: Scenario, changes: Mapping[str, Any]) -> Scenario:
    """``scenario`` with dotted fields changed (same as ``scenario.replace(changes)``)."""
    return scenario.replace(changes)
