"""Where replications run: a local process pool (default) or a Dask cluster.

Both take tasks, run :func:`~privsim.studies.worker.run_task` on them and yield rows as
they finish, in any order — the rows themselves do not depend on it. A worker process
that dies takes its tasks with it; they are resubmitted (up to ``MAX_ATTEMPTS`` times)
one at a time, and a task that kills its worker every time is recorded as an error, so a
study always finishes.

A Dask scheduler address is a trust boundary: every worker it admits runs code for the
sweep and sends results back, which Dask's protocol unpickles. Use a ``tls://`` address
with client certificates (:func:`dask_security`). Workers return each row as JSON text
(:func:`row_as_json`) and the client keeps only plain row data for the task it submitted
(:func:`accept_row`); anything else becomes an error row, never stored as a result.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from privsim.inputs import InputFileError, InputTooDeepError, parse_json
from privsim.limits import WORKERS_PER_CORE as LIMIT_PER_CORE
from privsim.studies.study import Task
from privsim.studies.worker import init_worker_process

__all__ = [
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "SchedulerError",
    "WorkerCountError",
    "accept_row",
    "check_workers",
    "dask_security",
    "make_executor",
    "pool_size",
    "row_as_json",
]

MAX_ATTEMPTS = 3
#: The longest row (JSON text) accepted from a Dask worker; a row is a few kilobytes.
MAX_ROW_CHARS = 1_000_000
#: The deepest nesting of a row accepted from a Dask worker (rows nest about 5 deep).
MAX_ROW_DEPTH = 12
#: Keys every row has, and which must match the task the client submitted.
TASK_KEYS = ("row_id", "cell", "replication", "seed")
#: How long a client keeps trying to reach a Dask scheduler before the run fails with
#: "cannot reach the Dask scheduler" (Dask retries a refused connection until then).
CONNECT_TIMEOUT = "10s"
RunFn = Callable[[dict[str, Any], Task], dict[str, Any]]


#: Worker processes allowed per core of this machine (:data:`privsim.limits.WORKERS_PER_CORE`):
#: a count far beyond (``--workers 100000``) is a typo that would start that many
#: interpreters, so it is refused before any starts.
WORKERS_PER_CORE = LIMIT_PER_CORE


class SchedulerError(RuntimeError):
    """The Dask scheduler cannot be reached (raised before any work starts)."""


class WorkerCountError(ValueError):
    """A worker count this machine cannot use (below 1, or more than
    :data:`WORKERS_PER_CORE` per core); the message names ``--workers`` and the fix."""


def cores() -> int:
    """This machine's cores, as the default of one worker per core counts them."""
    return os.cpu_count() or 1


def check_workers(workers: int | None, default: str = "for one per core") -> int | None:
    """``workers`` when this machine can use that many worker processes (None: the
    default), else a :class:`WorkerCountError` naming ``--workers`` and the fix;
    ``default`` says what leaving the option out does ("for one per core")."""
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise WorkerCountError(
            f"--workers {workers!r}: a number of worker processes is a whole number >= 1; "
            f"give e.g. --workers 2, or leave --workers out {default}"
        )
    n = cores()
    limit = WORKERS_PER_CORE * n
    if workers > limit:
        raise WorkerCountError(
            f"--workers {workers}: this machine has {n} core{'s' * (n != 1)}, and more than "
            f"{limit} worker processes ({WORKERS_PER_CORE} per core) only compete for them; "
            f"give --workers {limit} or fewer (one per core, {n}, is usually fastest), "
            f"or leave --workers out {default}"
        )
    return workers


def pool_size(workers: int, tasks: int | None) -> int:
    """How many of ``workers`` processes to start for ``tasks`` tasks (None: unknown):
    never more than there are tasks, since a process beyond them has nothing to run."""
    return workers if tasks is None else max(1, min(workers, tasks))


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
    """A pool of worker processes on this machine (one per core by default).

    Its workers ignore Ctrl-C and end when this process dies
    (:func:`~privsim.studies.worker.init_worker_process`); an interrupted run stops them
    at once, so the finished rows are kept and no worker outlives the sweep."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = check_workers(workers) or cores()
        self._pools: list[ProcessPoolExecutor] = []

    def _pool(self, workers: int) -> ProcessPoolExecutor:
        # Forked workers know their parent's pid; others (forkserver, spawn) read theirs.
        forked = multiprocessing.get_start_method() == "fork"
        pool = ProcessPoolExecutor(
            max_workers=workers,
            initializer=init_worker_process,
            initargs=(os.getpid() if forked else None,),
        )
        self._pools.append(pool)
        return pool

    def _finish(self, pool: ProcessPoolExecutor) -> None:
        pool.shutdown(wait=True)
        self._pools.remove(pool)

    def run(
        self, fn: RunFn, base: dict[str, Any], tasks: Sequence[Task]
    ) -> Iterator[dict[str, Any]]:
        pending = {t.row_id: t for t in tasks}
        if not pending:
            return
        pool = self._pool(pool_size(self.workers, len(pending)))
        try:
            futures = {pool.submit(fn, base, t): t for t in pending.values()}
            for future in as_completed(futures):
                task = futures[future]
                row = future.result()
                del pending[task.row_id]
                yield row
        except BrokenProcessPool:
            pass
        except BaseException:  # Ctrl-C, or the caller stopped reading: stop the workers
            self.close()
            raise
        self._finish(pool)
        # A worker died. Which task killed it is unknown, so every unfinished task runs
        # alone in a fresh single-worker pool: only a task that kills its own worker
        # MAX_ATTEMPTS times is recorded as failed; the others finish normally.
        for task in list(pending.values()):
            for attempt in range(1, MAX_ATTEMPTS + 1):
                alone = self._pool(1)
                try:
                    row = alone.submit(fn, base, task).result()
                    self._finish(alone)
                    break
                except BrokenProcessPool:
                    self._finish(alone)
                    if attempt == MAX_ATTEMPTS:
                        row = _died(task, attempt)
                except BaseException:
                    self.close()
                    raise
            del pending[task.row_id]
            yield row

    def close(self) -> None:
        """Stop every pool still running: queued tasks are cancelled and busy workers
        killed (their rows were not finished, so nothing stored is lost)."""
        while self._pools:
            pool = self._pools.pop()
            # The pool's own processes (a private attribute, read defensively):
            # shutdown() alone would wait for the running tasks to finish.
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.kill()
            for process in processes:
                process.join(timeout=5)


def row_as_json(fn: RunFn, base: dict[str, Any], task: Task) -> str:
    """Run on a Dask worker: the row as JSON text, the only result the client accepts."""
    return json.dumps(fn(base, task))


def _depth(value: Any, limit: int) -> int:
    if limit < 0:
        return 1
    if isinstance(value, dict):
        return 1 + max((_depth(v, limit - 1) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v, limit - 1) for v in value), default=0)
    return 0


def _row_problem(result: object, task: Task) -> tuple[str, dict[str, Any] | None]:
    # ``type(...) is`` only: nothing of an unexpected object is called, not even __eq__.
    if type(result) is not str:
        return f"an object of type {type(result).__name__}, not JSON text", None
    if len(result) > MAX_ROW_CHARS:
        return f"{len(result)} characters of JSON, more than {MAX_ROW_CHARS}", None
    try:  # the guarded parser: its depth is checked before json recurses into it
        row = parse_json(result, "worker's row")
    except InputTooDeepError:
        return f"a row nested deeper than {MAX_ROW_DEPTH} levels", None
    except InputFileError:
        return "not valid JSON text", None
    if type(row) is not dict:
        return f"JSON {type(row).__name__}, not an object", None
    missing = [k for k in (*TASK_KEYS, "status") if k not in row]
    if missing:
        return f"a row without {', '.join(missing)}", None
    expected = {"row_id": task.row_id, "cell": task.cell, "replication": task.replication}
    expected["seed"] = task.seed
    if any(row[k] != v or type(row[k]) is not type(v) for k, v in expected.items()):
        return "a row for another task than the one submitted", None
    if type(row["status"]) is not str:
        return "a row whose status is not a string", None
    if _depth(row, MAX_ROW_DEPTH) > MAX_ROW_DEPTH:
        return f"a row nested deeper than {MAX_ROW_DEPTH} levels", None
    return "", row


def accept_row(result: object, task: Task) -> dict[str, Any]:
    """The row a Dask worker returned for ``task``, if it is plain row data: JSON text of
    an object (at most :data:`MAX_ROW_CHARS` long, :data:`MAX_ROW_DEPTH` deep) whose
    ``row_id``, ``cell``, ``replication`` and ``seed`` are the task's and which has a
    string ``status``. Anything else is refused: an error row saying why (the result is
    neither stored nor called)."""
    problem, row = _row_problem(result, task)
    if row is not None:
        return row
    refused = _died(task, 0)
    refused["error"] = (
        f"refused the worker's result: {problem} (see 'Dask trust' in docs/explanation/studies.md)"
    )
    return refused


def dask_security(
    scheduler: str | None,
    ca_file: str | None = None,
    cert: str | None = None,
    key: str | None = None,
) -> Any:
    """A ``distributed.Security`` for a ``tls://`` scheduler from the CA, client certificate
    and key files (mutual TLS, encryption required); None when no file is given (Dask's
    own configuration, ``distributed.comm.tls.*``, then applies)."""
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    missing = [option for option, value in given.items() if not value]
    if missing:
        raise SchedulerError(
            f"TLS needs --tls-ca-file, --tls-cert and --tls-key together; add {', '.join(missing)}"
        )
    if not scheduler or not scheduler.startswith("tls://"):
        raise SchedulerError(
            f"the TLS options need a tls:// scheduler address, got --scheduler {scheduler!r}; "
            "use --scheduler tls://HOST:PORT"
        )
    for option, value in given.items():
        if not os.path.isfile(str(value)):
            raise SchedulerError(f"{option} {value}: no such file; give the PEM file's path")
    from distributed.security import Security

    return Security(
        tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True
    )


class DaskExecutor:
    """Dask distributed: a scheduler address, or ``"local"`` for an in-process LocalCluster.

    ``security``: a ``distributed.Security`` for a ``tls://`` address
    (:func:`dask_security`); without it, Dask's configuration applies."""

    def __init__(
        self,
        scheduler: str,
        workers: int | None = None,
        security: Any = None,
        *,
        tasks: int | None = None,
    ) -> None:
        """``tasks``: how many tasks will run, if known; a local cluster starts no more
        workers than that."""
        try:
            from distributed import Client, LocalCluster
            from distributed.security import Security
        except ImportError as exc:  # pragma: no cover - a dependency of privsim
            raise SchedulerError(
                "Dask distributed is not installed: pip install 'dask[distributed]'"
            ) from exc
        self.cluster = None
        if scheduler == "local":
            if security is not None:
                raise SchedulerError(
                    "--scheduler local runs its cluster inside this process; the TLS options "
                    "are for a tls:// scheduler address"
                )
            self.workers = pool_size(check_workers(workers) or cores(), tasks)
            # Errors only from the cluster's own logs: its warnings (an event loop busy with
            # a replication, the tasks cancelled by Ctrl-C) are noise around privsim's lines.
            self.cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self.client = Client(self.cluster)
        else:
            if scheduler.startswith("tls://") and security is None:
                security = Security()  # Dask's configuration (distributed.comm.tls.*)
                if not (security.tls_ca_file and security.tls_client_cert):
                    raise SchedulerError(
                        f"the scheduler {scheduler!r} needs TLS: give --tls-ca-file, --tls-cert "
                        "and --tls-key (or set distributed.comm.tls in Dask's configuration)"
                    )
            try:
                self.client = Client(scheduler, timeout=CONNECT_TIMEOUT, security=security)
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                raise SchedulerError(
                    f"cannot reach the Dask scheduler at {scheduler!r} ({type(exc).__name__}: "
                    f"{exc}); check the address and, for tls://, the certificates; start one "
                    "with 'dask scheduler', or use --scheduler local"
                ) from None
            self.workers = len(self.client.scheduler_info().get("workers", {})) or 1
            if workers is not None and workers > self.workers:  # the cluster has its own
                self.client.close()
                raise WorkerCountError(
                    f"--workers {workers}: the cluster at {scheduler!r} has {self.workers} "
                    f"worker{'s' * (self.workers != 1)}; give --workers {self.workers} or "
                    "fewer, or leave --workers out to use them all"
                )

    def run(
        self, fn: RunFn, base: dict[str, Any], tasks: Sequence[Task]
    ) -> Iterator[dict[str, Any]]:
        from distributed import as_completed as dask_completed

        if not tasks:
            return
        # A list, not the dict itself: a scattered dict's keys ("name", "privacy" ...)
        # would become cluster-wide data keys. Keys are unique to this run (hash=False and
        # a nonce): a key another run just released would be lost under this one.
        [shared] = self.client.scatter([base], broadcast=True, hash=False)
        nonce = uuid.uuid4().hex[:8]
        futures = [
            self.client.submit(
                row_as_json,
                fn,
                shared,
                t,
                key=f"privsim-{t.row_id}-{nonce}",
                pure=False,
                retries=MAX_ATTEMPTS - 1,
            )
            for t in tasks
        ]
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for future in dask_completed(futures):
            task = by_key[future.key]
            try:
                result = future.result()
            except Exception as exc:  # a worker died more often than retries allow
                row = _died(task, MAX_ATTEMPTS)
                row["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
                yield row
                continue
            yield accept_row(result, task)  # plain row data for this task, or an error row

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_executor(
    scheduler: str | None,
    workers: int | None,
    security: Any = None,
    *,
    tasks: int | None = None,
) -> Executor:
    """The local pool by default, Dask when a scheduler (or ``"local"``) is given.
    ``workers`` local processes (checked by :func:`check_workers`; a remote cluster has
    its own), never more than ``tasks``, the number of tasks to run when known."""
    if scheduler:
        return DaskExecutor(scheduler, workers, security, tasks=tasks)
    if security is not None:
        raise SchedulerError("the TLS options need --scheduler tls://HOST:PORT")
    return LocalExecutor(workers)
