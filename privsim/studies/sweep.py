"""Running a study: skip what the store holds, run the rest, commit rows as they finish."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from privsim.inputs import (
    InputFileError,
    InputKindError,
    InputMissingError,
    InputShapeError,
    InputTooLargeError,
    Shape,
    input_exists,
    read_json,
)
from privsim.outputs import output_folder
from privsim.progress import RowBar
from privsim.results import write_json_atomic
from privsim.studies.executors import check_workers, make_executor
from privsim.studies.store import (
    DB_NAME,
    ResultStore,
    check_store,
    lock_directory,
    remove_leftovers,
)
from privsim.studies.study import Study, StudyError
from privsim.studies.worker import run_task

__all__ = ["SweepInterrupted", "SweepSummary", "sweep"]

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


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) stopped a sweep: every row that finished is in the store; the
    same sweep resumes from there."""

    def __init__(self, out: Path, stored: int, total: int) -> None:
        super().__init__(f"{stored} of {total} rows stored in {out}")
        self.out, self.stored, self.total = out, stored, total


#: What a results directory's ``study.json`` must look like (as a sweep writes it).
STUDY_SHAPE = Shape(
    top=dict,
    required={"name": str},
    optional={
        "seed": int,
        "replications": int,
        "base": (dict, str),
        "grid": dict,
        "cases": list,
        "overrides": dict,
    },
)


def read_study_file(path: str | Path, *, missing_ok: bool = False) -> dict[str, Any]:
    """A results directory's study description (``study.json``), through the guarded
    reader: a regular file, within the size and depth limits, of :data:`STUDY_SHAPE`;
    else a :class:`StudyError` naming the file and the field. With ``missing_ok``, a
    missing file is an empty description."""
    damaged = (
        "the results directory is damaged or not a study's; restore the file, or choose "
        "another --out directory"
    )
    try:
        return dict(read_json(path, "study description", shape=STUDY_SHAPE))
    except InputMissingError:
        if missing_ok:
            return {}
        raise StudyError(f"{path} does not exist: {damaged}") from None
    except (InputKindError, InputTooLargeError) as exc:  # a directory, a FIFO, a huge file
        raise StudyError(f"{exc.problem}: {damaged}") from None
    except InputShapeError as exc:  # a list, a string, a name that is a number
        raise StudyError(f"{path} does not describe a study ({exc.reason}): {damaged}") from None
    except InputFileError as exc:  # unreadable, not UTF-8 JSON, nested too deeply
        raise StudyError(f"{path} is unreadable ({exc.reason}): {damaged}") from None


def _study_key(study: dict[str, Any]) -> str:
    """What must match for two sweeps to share a store: all but the replications (row
    seeds do not depend on their number)."""
    return json.dumps({k: v for k, v in study.items() if k != "replications"}, sort_keys=True)


def _remove_leftovers(out: Path) -> None:
    """Delete the temporary files that a sweep killed while creating its store or writing
    ``study.json`` left in ``out``, so that they never pile up."""
    remove_leftovers(out)
    for leftover in out.glob(f".{STUDY_FILE}.*.tmp"):  # write_json_atomic's temporary names
        leftover.unlink(missing_ok=True)


def _check_same_study(out: Path, study: Study) -> dict[str, Any]:
    """Refuse a directory holding another study's ``study.json`` (read-only); the plain
    study description to store."""
    path = out / STUDY_FILE
    mine = json.loads(json.dumps(study.to_toml_dict()))
    if path.exists():
        theirs = read_study_file(path)
        # Row seeds do not depend on the number of replications: more (or fewer) is allowed.
        if {k: v for k, v in theirs.items() if k != "replications"} != {
            k: v for k, v in mine.items() if k != "replications"
        }:
            raise StudyError(
                f"{out} holds results of a different study (name, seed, base or grid changed); "
                "to resume it, give the same study file and --set options; else use a new "
                "--out directory"
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
    show_progress: bool | None = None,
) -> SweepSummary:
    """Run every replication of ``study`` not yet in ``out``; resumable at any point.

    The directory is locked for the sweep: a second sweep on it is refused
    (:class:`~privsim.studies.store.StoreBusyError`). ``security``: a Dask
    ``distributed.Security`` for a ``tls://`` scheduler (see
    :func:`~privsim.studies.executors.dask_security`). Progress goes to ``progress``
    when it is a terminal, or always with ``show_progress`` (never with False or None).
    Ctrl-C stops the sweep with :class:`SweepInterrupted`, every finished row kept.
    ``workers``: local worker processes (default one per core), at most
    :data:`~privsim.studies.executors.WORKERS_PER_CORE` per core and never more than the
    tasks to run."""
    started = time.perf_counter()
    if scheduler in (None, "", "local"):
        check_workers(workers)  # --workers 100000: refused before anything is made
    # empty, a file, read-only, under a file, a name too long: named (OutputError)
    out = output_folder(out, "--out directory")
    with lock_directory(out):
        return _sweep_locked(
            study, out, started, scheduler, workers, progress, security, show_progress
        )


def _sweep_locked(
    study: Study,
    out: Path,
    started: float,
    scheduler: str | None,
    workers: int | None,
    progress: TextIO | None,
    security: Any,
    show_progress: bool | None = None,
) -> SweepSummary:
    # corrupted or foreign: a named error, before any write; unstarted: replaced below
    check_store(out / DB_NAME, unstarted_ok=True)
    mine = _check_same_study(out, study)
    _remove_leftovers(out)  # safe: the directory lock keeps other sweeps out
    # An unreachable scheduler fails here; no more local workers start than the study has tasks.
    executor = make_executor(scheduler, workers, security, tasks=study.n_cells * study.replications)
    try:
        with ResultStore(out, check=False) as store:
            # The same-study check and the first write are one transaction: a different
            # study never adds a row, even where the directory lock does not hold (NFS).
            store.claim(_study_key(mine))
            write_json_atomic(STUDY_FILE, mine, within=out, what="study description")
            done = store.done()
            tasks = [t for t in study.tasks() if t.row_id not in done]
            total = len(done) + len(tasks)
            errors = added = 0
            bar = RowBar(study.name, total, len(done), stream=progress, show=show_progress)
            try:
                with bar:
                    for row in executor.run(run_task, study.base, tasks):
                        store.add(row)  # committed: kept whatever happens next
                        added += 1
                        error = row.get("status") == "error"
                        errors += int(error)
                        bar.advance(error)
            except KeyboardInterrupt:
                executor.close()  # stop the workers before the store closes
                raise SweepInterrupted(out, len(done) + added, total) from None
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
    if not input_exists(path, "study description"):
        raise StudyError(f"{out} has no {STUDY_FILE}: not a study results directory")
    check_store(Path(out) / DB_NAME)  # before any work, never written
    return study_from_dict(read_study_file(path))
