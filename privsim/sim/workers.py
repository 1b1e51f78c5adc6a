"""Worker processes for a run's bulk work (share rounds, key agreements, mask expansions).

A large round's work is many short calls into ``cryptography`` and NumPy, and the
cipher calls hold the GIL between their bulk loops, so threads do not run them in
parallel; processes do. A task is a module-level function and its arguments, pickled to
a worker; it must be a pure function of them, so that every result — and the run built
from the results — is the same bytes whatever the number of workers and whichever
worker ran it.

Workers are fresh interpreters (never a fork of the simulation, which may run threads,
and never a re-import of the user's script, as the ``multiprocessing`` start methods
other than fork do), fed pickled tasks on stdin and answering on stdout. They ignore
Ctrl-C (the run's process stops them) and die with their parent
(:func:`~privsim.sim.lifetime.die_with_parent`). Each worker is served by a thread of the
run's process that hands it the next queued task and resolves the task's future, so the
simulation can go on while they work.

The number of workers is ``PRIVSIM_ROUND_PROCESSES`` (default: the usable cores, at most
4; ``1`` keeps everything in the run's process, as a sweep's workers do, since the sweep
already uses every core).
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, as_completed
from pathlib import Path
from typing import Any, Protocol, TypeVar

from privsim.limits import WORKERS_PER_CORE, env_value, parse_count, usable_cores
from privsim.sim.lifetime import die_with_parent

__all__ = [
    "ENV",
    "Executor",
    "Inline",
    "Processes",
    "WorkerUsage",
    "executor",
    "map_unordered",
    "serve",
    "workers",
]

#: The environment variable that sets the number of worker processes of a run.
ENV = "PRIVSIM_ROUND_PROCESSES"
#: The environment variable that tells a worker its parent's pid.
PARENT = "PRIVSIM_WORKER_PARENT"
_DEFAULT_COMMAND = (
    sys.executable,
    "-c",
    "from privsim.sim.workers import _worker_main; _worker_main()",
)

T = TypeVar("T")
R = TypeVar("R")


def workers() -> int:
    """Worker processes a run may use (``PRIVSIM_ROUND_PROCESSES``, else the usable
    cores, at most 4); a count that is not whole, below 1 or more than
    :data:`~privsim.limits.WORKERS_PER_CORE` per usable core is an
    :class:`~privsim.limits.EnvError`."""
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
    """The workers of the last closed :class:`Processes`: the largest peak resident
    memory (bytes) and each worker's CPU seconds (for benchmarks)."""

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


_Item = tuple[Future[Any], Any, tuple[Any, ...]]


class Processes:
    """``size`` worker processes taking tasks from one queue, each served by a thread
    of this process that sends it a task, waits for the answer and resolves the task's
    future. A task's function must be importable by name (module level)."""

    def __init__(self, size: int, command: Sequence[str] | None = None) -> None:
        """``command``: how to start a worker (default: :func:`_worker_main`, which calls
        the function it is sent); a worker must answer as :func:`serve` does."""
        self.size = size
        self._broken: str | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._usage: dict[int, tuple[int, float]] = {}
        self._workers = [_start_worker(command or _DEFAULT_COMMAND) for _ in range(size)]
        self._threads = [
            threading.Thread(target=self._serve, args=(w,), name="privsim-worker", daemon=True)
            for w in self._workers
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        """Queue ``fn(*args)`` (``fn`` as the workers' :func:`serve` expects it: a
        function for the default workers)."""
        future: Future[Any] = Future()
        with self._lock:  # no task slips in behind a stop
            if self._broken is not None:
                future.set_exception(RuntimeError(self._broken))
            else:
                self._queue.put((future, fn, args))
        return future

    def _serve(self, worker: subprocess.Popen[bytes]) -> None:
        assert worker.stdin is not None and worker.stdout is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                pickle.dump((fn, args), worker.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                worker.stdin.flush()
                status, value, peak, cpu = pickle.load(worker.stdout)
            except (OSError, EOFError, pickle.UnpicklingError):
                self._fail(
                    future,
                    f"a worker process ended (exit {worker.poll()}); set {ENV}=1 to run in "
                    "one process",
                )
                return
            self._usage[worker.pid] = (peak, cpu)
            if status == "ok":
                future.set_result(value)
            else:
                future.set_exception(RuntimeError(f"a worker process failed:\n{value}"))

    def _fail(self, future: Future[Any], reason: str) -> None:
        """A worker is gone: fail its task and every task not started (the others may be
        waiting for one that would never run)."""
        future.set_exception(RuntimeError(reason))
        with self._lock:
            self._broken = reason
            self._drain(RuntimeError(reason))

    def _drain(self, error: Exception | None) -> None:
        """Fail (or cancel, without ``error``) every task not started."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is None:  # keep the stop signal for the other threads
                self._queue.put(None)
                return
            if error is None:
                item[0].cancel()
            elif item[0].set_running_or_notify_cancel():
                item[0].set_exception(error)

    def close(self, *, abort: bool = False) -> None:
        """Stop the workers: after their current task, or at once (``abort``). Tasks not
        started are cancelled, and later ones fail at once."""
        with self._lock:
            self._broken = "the worker processes were stopped"
            self._drain(None)
        if abort:
            for worker in self._workers:
                worker.kill()
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        for worker in self._workers:
            try:
                if worker.stdin is not None:
                    pickle.dump(None, worker.stdin)
                    worker.stdin.close()
            except OSError:
                pass
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            if worker.stdout is not None:
                worker.stdout.close()
        if self._usage:
            WorkerUsage.peak_bytes = max(peak for peak, _ in self._usage.values())
            WorkerUsage.cpu_seconds = tuple(cpu for _, cpu in self._usage.values())


def executor(processes: int) -> Executor:
    """:class:`Processes` for more than one worker, else :class:`Inline`."""
    return Processes(processes) if processes > 1 else Inline()


def map_unordered(
    fn: Callable[[T], R], tasks: Sequence[T], processes: int | None = None
) -> Iterator[R]:
    """``fn`` over ``tasks`` on ``processes`` workers (default :func:`workers`), results
    in the order they finish; the workers are stopped when the iteration ends, at once if
    it ends by an exception (a failed task, Ctrl-C)."""
    pool = executor(min(len(tasks), processes or workers()))
    try:
        futures = [pool.submit(fn, task) for task in tasks]
        for done in as_completed(futures):
            yield done.result()
    except BaseException:
        pool.close(abort=True)
        raise
    pool.close()


def serve(call: Callable[[Any, tuple[Any, ...]], Any]) -> None:
    """A worker's loop: read pickled ``(fn, args)`` tasks on stdin until told to stop
    (None or the end of the input) and answer each on stdout with ``call(fn, args)`` (or
    the error, as text), this process's peak memory and CPU seconds. Ignores Ctrl-C and
    ends with the process that started it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.environ.get(PARENT, "")
    die_with_parent(int(parent) if parent.isdigit() else None)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            task = pickle.load(stdin)
        except EOFError:
            return
        if task is None:
            return
        fn, args = task
        try:
            reply: tuple[str, Any] = ("ok", call(fn, args))
        except BaseException:  # reported to the run, which raises it
            reply = ("error", traceback.format_exc())
        pickle.dump((*reply, *_usage()), stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


def _worker_main() -> None:
    """The default worker: calls the function it is sent."""
    serve(lambda fn, args: fn(*args))


def _usage() -> tuple[int, float]:
    """This process's peak resident bytes and CPU seconds (zeros where the platform has
    no ``resource`` module). On Linux the peak is the address space's high-water mark
    (``VmHWM``): ``ru_maxrss`` would start from the parent's peak at the fork."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0, 0.0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    from privsim.inputs import read_input_text

    try:  # the guarded reader, as for every file (/proc's report a size of 0)
        for line in read_input_text("/proc/self/status", "process status", 2**20).splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024, cpu
    except (OSError, ValueError):  # pragma: no cover - not Linux
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes, Linux KiB
    return usage.ru_maxrss * scale, cpu


def _start_worker(command: Sequence[str]) -> subprocess.Popen[bytes]:
    """A fresh interpreter running ``command`` (privsim importable, a round inside it in
    one process, and told its parent's pid)."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env[ENV] = "1"
    env[PARENT] = str(os.getpid())  # so a parent gone before the worker starts is noticed
    # glibc's malloc maps each large array afresh and returns it at once when freed; a
    # worker allocates arrays of the same sizes chunk after chunk, and the page faults of
    # the fresh maps cost a third of a share round's time (measured: 1.2 ms against
    # 0.8 ms per client at d = 10^4). Keep freed memory for reuse instead (other
    # allocators ignore these variables).
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(64 << 20))
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(256 << 20))
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
