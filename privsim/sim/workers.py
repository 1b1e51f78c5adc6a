"""Worker processes for a run's bulk work (share rounds, key agreements, mask expansions).

A large round's work is many short calls into ``cryptography`` and NumPy, and the
cipher calls hold the GIL between their bulk loops, so threads do not run them in
parallel; processes do. A task is a module-level function and its arguments, pickled to
a worker; it must be a pure function of them, so that every result — and the run built
from the results — is the same bytes whatever the number of workers and whichever
worker ran it.

The workers are loky's (:func:`loky.get_reusable_executor`): fresh interpreters, never a
fork of the simulation (which may run threads) and never a re-import of the user's
script (loky's processes do not run ``__main__`` again), reused by the run's later
rounds and ended after :data:`IDLE_SECONDS` without work. privsim adds, in each worker's
initializer (:mod:`privsim.sim.worker_task`, all a worker imports of privsim besides
its task): Ctrl-C is ignored (it reaches the terminal's whole process group; the
run's process stops the workers, at once, when it is interrupted) and the worker ends
within a second of the run's process, even after a ``kill -9``
(:func:`~privsim.sim.lifetime.die_with_parent_process`). Each task also reports its
worker's peak memory and CPU seconds (:class:`WorkerUsage`).

The number of workers is ``PRIVSIM_ROUND_PROCESSES`` (default: the usable cores, at most
4; ``1`` keeps everything in the run's process, as a sweep's workers do, since the sweep
already uses every core). :func:`use` sends the bulk work to an executor of the
caller's (a Dask cluster's, say) instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future, as_completed
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from privsim.limits import WORKERS_PER_CORE, env_value, parse_count, usable_cores
from privsim.sim.worker_task import PARENT, alone, call, init_worker

__all__ = [
    "ENV",
    "IDLE_SECONDS",
    "Executor",
    "Inline",
    "Pool",
    "WorkerUsage",
    "alone",
    "executor",
    "map_unordered",
    "use",
    "workers",
]

#: The environment variable that sets the number of worker processes of a run.
ENV = "PRIVSIM_ROUND_PROCESSES"
#: Seconds a worker waits for a task before it ends (it is started again when needed).
IDLE_SECONDS = 10.0

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, eq=False)
class _Override:
    executor: futures.Executor
    size: int


_overrides: list[_Override] = []  # every thread of the run sees them
_overrides_lock = threading.Lock()


def use(executor: futures.Executor, size: int) -> AbstractContextManager[None]:
    """Within the ``with`` block, :func:`workers` is ``size`` and the bulk work of every
    pool (:func:`executor`, :func:`map_unordered`: DCA's share rounds, the channels' key
    agreement, SecAgg's bulk cryptography) goes to ``executor`` (e.g. a Dask
    ``Client(...).get_executor()``) instead of privsim's worker processes, from every
    thread of the run; privsim never shuts it down. A task is :func:`~privsim.sim.worker_task.call` of a
    module-level function of privsim and its arguments (pickled by reference). Rounds too
    small for workers, and a ``size`` of 1, stay in the run's process."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"a worker count is a whole number >= 1, not {size!r}")
    return _using(_Override(executor, size))


@contextmanager
def _using(entry: _Override) -> Iterator[None]:
    with _overrides_lock:
        _overrides.append(entry)
    try:
        yield
    finally:
        with _overrides_lock:
            _overrides[:] = [o for o in _overrides if o is not entry]


def _override() -> _Override | None:
    with _overrides_lock:
        return _overrides[-1] if _overrides else None


def workers() -> int:
    """Worker processes a run may use (the size given to :func:`use`, else
    ``PRIVSIM_ROUND_PROCESSES``, else the usable cores, at most 4); a count that is not
    whole, below 1 or more than :data:`~privsim.limits.WORKERS_PER_CORE` per usable core
    is an :class:`~privsim.limits.EnvError`."""
    override = _override()
    if override is not None:
        return override.size
    cores = usable_cores()
    limit = WORKERS_PER_CORE * cores

    def count(text: str) -> int:
        n = parse_count(text, minimum=1)
        if n > limit:  # a typo would start that many interpreters
            raise ValueError(
                f"more than {limit}, {WORKERS_PER_CORE} per core of this machine's {cores}"
            )
        return n

    return env_value(
        ENV,
        count,
        max(1, min(4, cores)),
        what="a worker count",
        example="2 (a whole number; 1 keeps a run in one process)",
    )


class WorkerUsage:
    """The workers of the last closed :class:`Pool`: the largest peak resident memory
    (bytes; a reused worker's peak may come from an earlier round) and each worker's CPU
    seconds in the pool's tasks (for benchmarks)."""

    peak_bytes: int = 0
    cpu_seconds: tuple[float, ...] = ()


class Executor(Protocol):
    """Runs functions on arguments and gives their results as futures."""

    size: int

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]: ...

    def close(self, *, abort: bool = False) -> None: ...


class Inline:
    """Runs each task at once in this process (one worker)."""

    size = 1

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        future: Future[R] = Future()
        try:
            future.set_result(fn(*args))
        except Exception as exc:  # handed to whoever reads the result
            future.set_exception(exc)
        return future

    def close(self, *, abort: bool = False) -> None:
        return None


class Pool:
    """``size`` workers of a :class:`concurrent.futures.Executor`: loky's reusable
    executor (:meth:`local`), or the caller's given to :func:`use`. A task runs in
    :func:`~privsim.sim.worker_task.call`, which reports a failure as its traceback (raised here as a
    ``RuntimeError``) and the worker's usage."""

    def __init__(self, size: int, inner: futures.Executor, *, owned: bool) -> None:
        """``owned``: the executor is privsim's (:meth:`close` with ``abort`` kills its
        workers), not the caller's."""
        self.size = size
        self._inner = inner
        self._owned = owned
        self._lock = threading.Lock()
        self._open: dict[Future[Any], Future[Any]] = {}  # ours -> the executor's
        self._stopped: str | None = None
        self._usage: dict[int, tuple[int, float]] = {}  # pid -> peak bytes, CPU seconds

    @classmethod
    def local(cls, size: int) -> Pool:
        """``size`` of loky's worker processes (the reusable executor of this thread)."""
        import loky  # imported when a round first needs it

        _start_quiet_tracker()
        inner = loky.get_reusable_executor(
            max_workers=size,
            context="loky",  # a fresh interpreter that does not run __main__ again
            timeout=IDLE_SECONDS,
            initializer=init_worker,
            env=_worker_env(),
        )
        return cls(size, inner, owned=True)

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Queue ``fn(*args)`` (``fn`` importable by name: module level)."""
        outer: Future[R] = Future()
        with self._lock:  # no task slips in behind a stop
            if self._stopped is not None:
                outer.set_exception(RuntimeError(self._stopped))
                return outer
            try:
                inner = self._inner.submit(call, fn, args)
            except Exception as exc:  # a broken or shut-down executor
                outer.set_exception(RuntimeError(_ended(exc)))
                return outer
            self._open[outer] = inner
        outer.add_done_callback(lambda f: f.cancelled() and inner.cancel())
        inner.add_done_callback(partial(self._settle, outer))
        return outer

    def _settle(self, outer: Future[Any], inner: Future[Any]) -> None:
        with self._lock:
            self._open.pop(outer, None)
        if inner.cancelled():
            outer.cancel()
            return
        error = inner.exception()
        if error is None:
            ok, value, pid, peak, cpu = inner.result()
            with self._lock:
                before = self._usage.get(pid, (0, 0.0))
                self._usage[pid] = (max(before[0], peak), before[1] + cpu)
            if not ok:
                error = RuntimeError(f"a worker process failed:\n{value}")
        else:  # the worker died (killed, out of memory) or the pool was shut down
            error = RuntimeError(_ended(error))
        if not outer.set_running_or_notify_cancel():
            return  # cancelled by close()
        if error is None:
            outer.set_result(value)
        else:
            outer.set_exception(error)

    def pids(self) -> list[int]:
        """The pids of this pool's worker processes (starting them if need be; none for
        the caller's executor)."""
        if not self._owned:
            return []
        self._inner.submit(int)  # loky starts the workers at the first task
        return list(getattr(self._inner, "_processes", {}))

    def close(self, *, abort: bool = False) -> None:
        """Stop taking tasks: those not started are cancelled, later ones fail at once
        (the workers stay for the next pool); with ``abort`` every unfinished task is
        cancelled and privsim's own workers are killed now (those of every pool of this
        thread: loky keeps one executor per thread). The caller's executor is left
        running."""
        with self._lock:
            self._stopped = "the worker processes were stopped"
            unfinished = list(self._open.items())
        for outer, inner in unfinished:
            if inner.cancel() or abort:
                outer.cancel()
        if abort and self._owned:
            self._inner.shutdown(wait=True, kill_workers=True)  # type: ignore[call-arg]
        if self._usage:
            WorkerUsage.peak_bytes = max(peak for peak, _ in self._usage.values())
            WorkerUsage.cpu_seconds = tuple(cpu for _, cpu in self._usage.values())


_tracker_lock = threading.Lock()


def _start_quiet_tracker() -> None:
    """Start loky's resource tracker (the process that removes the named semaphores of
    a pool whose process died without removing them) with its warning of each removal
    off: privsim kills such processes on purpose (a sweep's workers on Ctrl-C), and the
    warning would break the interrupted command's one line on the terminal."""
    from loky.backend import resource_tracker

    with _tracker_lock:
        if getattr(resource_tracker._resource_tracker, "_pid", None) is not None:
            return  # running
        before = os.environ.get("PYTHONWARNINGS")
        quiet = "ignore:resource_tracker:UserWarning"
        os.environ["PYTHONWARNINGS"] = f"{before},{quiet}" if before else quiet
        try:  # the tracker reads it as it starts
            resource_tracker.ensure_running()
        finally:
            if before is None:
                os.environ.pop("PYTHONWARNINGS", None)
            else:
                os.environ["PYTHONWARNINGS"] = before


def _ended(error: BaseException) -> str:
    return (
        f"a worker process ended ({type(error).__name__}: {error}); set {ENV}=1 to run "
        "in one process"
    )


def executor(processes: int) -> Executor:
    """A pool of ``processes`` workers: the executor given to :func:`use` if any, else
    loky's worker processes (:meth:`Pool.local`); :class:`Inline` for one."""
    if processes <= 1:
        return Inline()
    override = _override()
    if override is not None:
        return Pool(processes, override.executor, owned=False)
    return Pool.local(processes)


def map_unordered(
    fn: Callable[[T], R], tasks: Sequence[T], processes: int | None = None
) -> Iterator[R]:
    """``fn`` over ``tasks`` on ``processes`` workers (default :func:`workers`), results
    in the order they finish; the pool is closed when the iteration ends, and its
    workers killed at once if it ends by an exception (a failed task, Ctrl-C)."""
    pool = executor(min(len(tasks), processes or workers()))
    try:
        futures_ = [pool.submit(fn, task) for task in tasks]
        for done in as_completed(futures_):
            yield done.result()
    except BaseException:
        pool.close(abort=True)
        raise
    pool.close()


def _worker_env() -> dict[str, str]:
    """The workers' environment on top of the run's: a round inside a worker stays in
    it, the run's pid, and the run's privsim settings (a change of them starts new
    workers, since loky reuses its workers only for the same arguments)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PRIVSIM_")}
    env[ENV] = "1"
    env[PARENT] = str(os.getpid())  # so a parent gone before the worker starts is noticed
    # glibc's malloc maps each large array afresh and returns it at once when freed; a
    # worker allocates arrays of the same sizes chunk after chunk, and the page faults of
    # the fresh maps cost a third of a share round's time (measured: 1.2 ms against
    # 0.8 ms per client at d = 10^4). Keep freed memory for reuse instead (other
    # allocators ignore these variables).
    env["MALLOC_MMAP_THRESHOLD_"] = os.environ.get("MALLOC_MMAP_THRESHOLD_", str(64 << 20))
    env["MALLOC_TRIM_THRESHOLD_"] = os.environ.get("MALLOC_TRIM_THRESHOLD_", str(256 << 20))
    # loky restarts a worker whose memory grew 300 MB past its first task's, taking it
    # for a leak; a round's chunks grow with the round, and a task holds nothing after
    # it returns.
    env["LOKY_MAX_MEMORY_LEAK_SIZE"] = os.environ.get("LOKY_MAX_MEMORY_LEAK_SIZE", str(1 << 62))
    return env
