"""Running a study: skip what the store holds, run the rest, commit rows as they finish."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from privsim.results import write_json_atomic
from privsim.studies.executors import make_executor
from privsim.studies.store import DB_NAME, ResultStore, check_store, lock_directory
from privsim.studies.study import Study, StudyError
from privsim.studies.worker import run_task

__all__ = ["SweepSummary", "sweep"]

STUDY_FILE = "study.json"


@dataclass(frozen=True, slots=True)
class SweepSummary:
    total: int
    already_done: int
    ran: int
    errors: int
    seconds: float
    #: Released rows whose privacy guarantee was not met (labelled non-private baselines
    #: aside), over the whole store.
    over_budget: int = 0


class _Progress:
    """A one-line progress bar with rate and time left, on a terminal or a log."""

    def __init__(self, total: int, done: int, stream: TextIO | None) -> None:
        self.total, self.done, self.start_done = total, done, done
        self.errors = 0
        self.stream = stream
        self.started = time.perf_counter()
        self._last = 0.0

    def update(self, error: bool) -> None:
        self.done += 1
        self.errors += int(error)
        now = time.perf_counter()
        if self.stream is not None and (now - self._last > 0.5 or self.done == self.total):
            self._last = now
            ran = self.done - self.start_done
            rate = ran / max(now - self.started, 1e-9)
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta = f"{int(left // 60)}m{int(left % 60):02d}s" if left != float("inf") else "?"
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} rows, "
                f"{rate:.2f}/s, ETA {eta}, {self.errors} errors"
            )
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()


def _read_study_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not valid JSON text"
        raise StudyError(
            f"{path} is unreadable ({reason}): the results directory is damaged or not a "
            "study's; restore the file, or choose another --out directory"
        ) from None
    if not isinstance(data, dict):
        raise StudyError(
            f"{path} does not describe a study (not a JSON object); restore the file, or "
            "choose another --out directory"
        )
    return data


def _study_key(study: dict[str, Any]) -> str:
    """What must match for two sweeps to share a store: all but the replications (row
    seeds do not depend on their number)."""
    return json.dumps({k: v for k, v in study.items() if k != "replications"}, sort_keys=True)


def _check_same_study(out: Path, study: Study) -> dict[str, Any]:
    """Refuse a directory holding another study's ``study.json`` (read-only); the plain
    study description to store."""
    path = out / STUDY_FILE
    mine = json.loads(json.dumps(study.to_toml_dict()))
    if path.exists():
        theirs = _read_study_file(path)
        # Row seeds do not depend on the number of replications: more (or fewer) is allowed.
        if {k: v for k, v in theirs.items() if k != "replications"} != {
            k: v for k, v in mine.items() if k != "replications"
        }:
            raise StudyError(
                f"{out} holds results of a different study (name, seed, base or grid changed); "
                "use a new --out directory"
            )
    return mine


def sweep(
    study: Study,
    out: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: TextIO | None = sys.stderr,
    security: Any = None,
) -> SweepSummary:
    """Run every replication of ``study`` not yet in ``out``; resumable at any point.

    The directory is locked for the sweep: a second sweep on it is refused
    (:class:`~privsim.studies.store.StoreBusyError`). ``security``: a Dask
    ``distributed.Security`` for a ``tls://`` scheduler (see
    :func:`~privsim.studies.executors.dask_security`)."""
    out = Path(out)
    started = time.perf_counter()
    if out.exists() and not out.is_dir():
        raise StudyError(f"--out {out} is a file, not a directory; choose a directory")
    out.mkdir(parents=True, exist_ok=True)
    with lock_directory(out):
        return _sweep_locked(study, out, started, scheduler, workers, progress, security)


def _sweep_locked(
    study: Study,
    out: Path,
    started: float,
    scheduler: str | None,
    workers: int | None,
    progress: TextIO | None,
    security: Any,
) -> SweepSummary:
    check_store(out / DB_NAME)  # corrupted or foreign: a named error, before any write
    mine = _check_same_study(out, study)
    executor = make_executor(scheduler, workers, security)  # an unreachable scheduler fails here
    try:
        with ResultStore(out, check=False) as store:
            # The same-study check and the first write are one transaction: a different
            # study never adds a row, even where the directory lock does not hold (NFS).
            store.claim(_study_key(mine))
            write_json_atomic(out / STUDY_FILE, mine)
            done = store.done()
            tasks = [t for t in study.tasks() if t.row_id not in done]
            total = len(done) + len(tasks)
            bar = _Progress(total, len(done), progress)
            errors = 0
            for row in executor.run(run_task, study.base, tasks):
                store.add(row)
                error = row.get("status") == "error"
                errors += int(error)
                bar.update(error)
            over = sum(1 for r in store.rows() if over_budget(r))
    finally:
        executor.close()
    return SweepSummary(total, len(done), len(tasks), errors, time.perf_counter() - started, over)


def over_budget(row: dict[str, Any]) -> bool:
    """A released row whose privacy guarantee was not met (not a non-private baseline)."""
    privacy = row.get("privacy") or {}
    return (
        row.get("status") == "released"
        and privacy.get("guarantee_met") is False
        and not privacy.get("non_private", False)
    )


def load_study_dir(out: str | Path) -> Study:
    """The study a results directory was made by."""
    from privsim.studies.study import study_from_dict

    path = Path(out) / STUDY_FILE
    if not path.exists():
        raise StudyError(f"{out} has no {STUDY_FILE}: not a study results directory")
    check_store(Path(out) / DB_NAME)  # before any work, never written
    return study_from_dict(_read_study_file(path))
