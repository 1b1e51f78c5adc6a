"""Running a study: skip what the store holds, run the rest, commit rows as they finish."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from privsim.results import write_json_atomic
from privsim.studies.executors import make_executor
from privsim.studies.store import ResultStore
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


def _check_same_study(out: Path, study: Study) -> None:
    path = out / STUDY_FILE
    mine = json.loads(json.dumps(study.to_toml_dict()))
    if path.exists():
        theirs = json.loads(path.read_text(encoding="utf-8"))
        # Row seeds do not depend on the number of replications: more (or fewer) is allowed.
        if {k: v for k, v in theirs.items() if k != "replications"} != {
            k: v for k, v in mine.items() if k != "replications"
        }:
            raise StudyError(
                f"{out} holds results of a different study (name, seed, base or grid changed); "
                "use a new --out directory"
            )
    write_json_atomic(path, mine)


def sweep(
    study: Study,
    out: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: TextIO | None = sys.stderr,
) -> SweepSummary:
    """Run every replication of ``study`` not yet in ``out``; resumable at any point."""
    out = Path(out)
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    _check_same_study(out, study)
    executor = make_executor(scheduler, workers)  # an unreachable scheduler fails here
    try:
        with ResultStore(out) as store:
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
    finally:
        executor.close()
    return SweepSummary(total, len(done), len(tasks), errors, time.perf_counter() - started)


def load_study_dir(out: str | Path) -> Study:
    """The study a results directory was made by."""
    from privsim.studies.study import study_from_dict

    path = Path(out) / STUDY_FILE
    if not path.exists():
        raise StudyError(f"{out} has no {STUDY_FILE}: not a study results directory")
    return study_from_dict(json.loads(path.read_text(encoding="utf-8")))
