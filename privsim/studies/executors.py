"""Where replications run: a local process pool (default) or a Dask cluster.

Both take tasks, run :func:`~privsim.studies.worker.run_task` on them and yield rows as
they finish, in any order — the rows themselves do not depend on it. A worker process
that dies takes its tasks with it; they are resubmitted (up to ``MAX_ATTEMPTS`` times)
one at a time, and a task that kills its worker every time is recorded as an error, so a
study always finishes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from privsim.studies.study import Task

__all__ = ["DaskExecutor", "Executor", "LocalExecutor", "SchedulerError", "make_executor"]

MAX_ATTEMPTS = 3
RunFn = Callable[[dict[str, Any], Task], dict[str, Any]]


class SchedulerError(RuntimeError):
    """The Dask scheduler cannot be reached (raised before any work starts)."""


class Executor(Protocol):
    workers: int

    def run(
        self, fn: RunFn, base: dict[str, Any], tasks: Sequence[Task]
    ) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...


def _died(task: Task, attempts: int) -> dict[str, Any]:
    return {
        "row_id": task.row_id,
        "cell": task.cell,
        "replication": task.replication,
        "seed": task.seed,
        "grid": dict(task.coordinates),
        "status": "error",
        "error": f"worker process died {attempts} times running this replication",
    }


class LocalExecutor:
    """A pool of worker processes on this machine (one per core by default)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    def run(
        self, fn: RunFn, base: dict[str, Any], tasks: Sequence[Task]
    ) -> Iterator[dict[str, Any]]:
        pending = {t.row_id: t for t in tasks}
        try:
            with ProcessPoolExecutor(max_workers=self.workers) as pool:
                futures = {pool.submit(fn, base, t): t for t in pending.values()}
                for future in as_completed(futures):
                    task = futures[future]
                    row = future.result()
                    del pending[task.row_id]
                    yield row
        except BrokenProcessPool:
            pass
        # A worker died. Which task killed it is unknown, so every unfinished task runs
        # alone in a fresh single-worker pool: only a task that kills its own worker
        # MAX_ATTEMPTS times is recorded as failed; the others finish normally.
        for task in list(pending.values()):
            for attempt in range(1, MAX_ATTEMPTS + 1):
                try:
                    with ProcessPoolExecutor(max_workers=1) as alone:
                        row = alone.submit(fn, base, task).result()
                    break
                except BrokenProcessPool:
                    if attempt == MAX_ATTEMPTS:
                        row = _died(task, attempt)
            del pending[task.row_id]
            yield row

    def close(self) -> None:
        pass


class DaskExecutor:
    """Dask distributed: a scheduler address, or ``"local"`` for an in-process LocalCluster."""

    def __init__(self, scheduler: str, workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - a dependency of privsim
            raise SchedulerError(
                "Dask distributed is not installed: pip install 'dask[distributed]'"
            ) from exc
        self.cluster = None
        if scheduler == "local":
            self.workers = workers or os.cpu_count() or 1
            self.cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise SchedulerError(
                    f"cannot reach the Dask scheduler at {scheduler!r} ({exc}); check the address, "
                    "start one with 'dask scheduler', or use --scheduler local"
                ) from None
            self.workers = len(self.client.scheduler_info().get("workers", {})) or 1

    def run(
        self, fn: RunFn, base: dict[str, Any], tasks: Sequence[Task]
    ) -> Iterator[dict[str, Any]]:
        from distributed import as_completed as dask_completed

        if not tasks:
            return
        shared = self.client.scatter(base, broadcast=True)
        futures = [
            self.client.submit(
                fn, shared, t, key=f"privsim-{t.row_id}", pure=False, retries=MAX_ATTEMPTS - 1
            )
            for t in tasks
        ]
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for future in dask_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # a worker died more often than retries allow
                task = by_key[future.key]
                row = _died(task, MAX_ATTEMPTS)
                row["error"] = f"{type(exc).__name__}: {exc}"
                yield row

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_executor(scheduler: str | None, workers: int | None) -> Executor:
    """The local pool by default, Dask when a scheduler (or ``"local"``) is given."""
    if scheduler:
        return DaskExecutor(scheduler, workers)
    return LocalExecutor(workers)
