"""The bulk cryptography of a large SecAgg round (:mod:`.bulk`) on the engine's workers
(:mod:`privsim.sim.workers`).

A round of N = 10^4 SecAgg+ clients makes about 3.4 · 10^5 X25519 key agreements and as
many mask expansions: many short calls into ``cryptography``, which holds the GIL
between them, so threads would not run them in parallel; processes do. Each task is a
module-level function of :mod:`.bulk` (or of :mod:`.shard`, a batched round's), a pure function of its arguments, so every result
(and the round built from them) is the same bytes whatever the number of workers, and
the simulation goes on while they work, blocking only when it needs a result that is
not ready.

The workers are the engine's (loky's, ignoring Ctrl-C and dying with the run, or the
executor given to :func:`privsim.sim.workers.use`); they import :mod:`.bulk` alone,
without the packages' ``__init__`` or the round machinery
(:func:`privsim.sim.workers.alone`). Their number is ``PRIVSIM_ROUND_PROCESSES``
(:func:`privsim.sim.workers.workers`; 1 keeps everything in the round's process, as a
sweep's workers do).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any, Protocol, TypeVar

from privsim.kit.secagg import bulk, shard
from privsim.sim import workers as engine
from privsim.sim.workers import workers

__all__ = ["TASKS", "WINDOW", "Executor", "Inline", "Processes", "executor", "windowed", "workers"]

K = TypeVar("K")

#: The bulk functions, by the names a task may give.
TASKS: dict[str, Callable[..., Any]] = {
    **{
        name: engine.alone(getattr(bulk, name))
        for name in ("public_keys", "agreements", "mask_sums", "seal_shares")
    },
    **{
        name: engine.alone(getattr(shard, name))
        for name in ("input_total", "mask_total", "seal_and_open")
    },
}


class Executor(Protocol):
    """Runs bulk functions (named in :data:`TASKS`, or given) and gives their results
    as futures."""

    size: int

    def submit(self, task: str | Callable[..., Any], *args: Any) -> Future[Any]: ...

    def close(self, *, abort: bool = False) -> None: ...


class _Bulk:
    """An engine pool (:class:`privsim.sim.workers.Executor`) taking tasks by name."""

    def __init__(self, pool: engine.Executor) -> None:
        self._pool = pool
        self.size = pool.size

    def submit(self, task: str | Callable[..., Any], *args: Any) -> Future[Any]:
        return self._pool.submit(TASKS[task] if isinstance(task, str) else task, *args)

    def close(self, *, abort: bool = False) -> None:
        self._pool.close(abort=abort)


class Inline(_Bulk):
    """Runs each task at once in this process (one worker)."""

    def __init__(self) -> None:
        super().__init__(engine.Inline())


class Processes(_Bulk):
    """``size`` of the engine's worker processes (even one)."""

    def __init__(self, size: int) -> None:
        self._local = engine.Pool.local(size)
        super().__init__(self._local)

    @property
    def _workers(self) -> list[SimpleNamespace]:
        """The worker processes (their ``pid``), started now if need be."""
        return [SimpleNamespace(pid=pid) for pid in self._local.pids()]


#: Tasks in flight per worker in :func:`windowed`: one running, one waiting to start.
WINDOW = 2


def windowed(
    pool: Executor,
    task: str,
    calls: Iterable[tuple[K, tuple[Any, ...]]],
    take: Callable[[K, Any], object],
) -> None:
    """Run ``task`` on the arguments of each ``(key, args)`` of ``calls`` and hand each
    result, in order, to ``take(key, result)``, with at most :data:`WINDOW` tasks per
    worker in flight: the arguments of a task are made (``calls`` is read) only when a
    worker is about to be free, so a round's memory holds a window of them."""
    flight: deque[tuple[K, Future[Any]]] = deque()
    limit = WINDOW * max(1, pool.size)
    for key, args in calls:
        flight.append((key, pool.submit(task, *args)))
        if len(flight) >= limit:
            done, future = flight.popleft()
            take(done, future.result())
    while flight:
        done, future = flight.popleft()
        take(done, future.result())


def executor(processes: int) -> Executor:
    """The engine's pool of ``processes`` workers (:func:`privsim.sim.workers.executor`)
    taking tasks by name."""
    return _Bulk(engine.executor(processes))
