"""Worker processes for the bulk cryptography of a large SecAgg round (:mod:`.bulk`).

A round of N = 10^4 SecAgg+ clients makes about 3.4 · 10^5 X25519 key agreements and as
many mask expansions: many short calls into ``cryptography``, which holds the GIL
between them, so threads would not run them in parallel; processes do. Tasks are
queued and handed to whichever worker is free; each task is a pure function of its
arguments, so every result (and the round built from them) is the same bytes whatever
the number of workers, and the simulation goes on while they work, blocking only when
it needs a result that is not ready.

Workers are fresh interpreters (never a fork of the simulation, which may run threads,
and never a re-import of the user's script), fed pickled tasks on stdin and answering
on stdout; they ignore Ctrl-C (the round's process stops them) and die with their parent
(``PR_SET_PDEATHSIG``, :func:`privsim.sim.lifetime.die_with_parent`). The number of
workers is ``PRIVSIM_ROUND_PROCESSES`` (:func:`privsim.kit.securesum.pool.workers`; 1 keeps
everything in the round's process, as a sweep's workers do).
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

from privsim.kit.securesum.pool import ENV, workers
from privsim.protocols.secagg.worker import PARENT, TASKS

__all__ = ["Executor", "Inline", "Processes", "executor", "workers"]

# A worker loads the package's modules it runs (:mod:`.worker`, :mod:`.bulk`,
# :mod:`.crypto`, :mod:`.maths`: NumPy and ``cryptography``), not the package's
# ``__init__`` and the whole protocol and scenario machinery it imports: it starts in a
# fraction of the time and memory.
_BOOT = (
    "import sys, types\n"
    "package = types.ModuleType('privsim.protocols.secagg')\n"
    "package.__path__ = [{folder!r}]\n"
    "sys.modules['privsim.protocols.secagg'] = package\n"
    "from privsim.protocols.secagg.worker import main\n"
    "main()\n"
)


class Executor(Protocol):
    """Runs named :data:`TASKS` and gives their results as futures."""

    size: int

    def submit(self, task: str, *args: Any) -> Future[Any]: ...

    def close(self, *, abort: bool = False) -> None: ...


class Inline:
    """Runs each task at once in this process (one worker)."""

    size = 1

    def submit(self, task: str, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(TASKS[task](*args))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def close(self, *, abort: bool = False) -> None:
        return None


class Processes:
    """``size`` worker processes taking tasks from one queue, each served by a thread
    of this process that sends it a task, waits for the answer and resolves the task's
    future."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._broken: str | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Future[Any], str, tuple[Any, ...]] | None] = queue.Queue()
        self._workers = [_start_worker() for _ in range(size)]
        self._threads = [
            threading.Thread(target=self._serve, args=(w,), name="secagg-worker", daemon=True)
            for w in self._workers
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, task: str, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:  # no task slips in behind a stop
            if self._broken is not None:
                future.set_exception(RuntimeError(self._broken))
            else:
                self._queue.put((future, task, args))
        return future

    def _serve(self, worker: subprocess.Popen[bytes]) -> None:
        assert worker.stdin is not None and worker.stdout is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, task, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                pickle.dump((task, args), worker.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                worker.stdin.flush()
                status, value = pickle.load(worker.stdout)
            except (OSError, EOFError, pickle.UnpicklingError):
                self._fail(
                    future,
                    f"a SecAgg worker process ended (exit {worker.poll()}); set {ENV}=1 to "
                    "run the round in one process",
                )
                return
            if status == "ok":
                future.set_result(value)
            else:
                future.set_exception(RuntimeError(f"a SecAgg worker failed:\n{value}"))

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
        started are cancelled."""
        with self._lock:
            self._broken = "the SecAgg workers were stopped"  # later tasks fail at once
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


def executor(processes: int) -> Executor:
    """:class:`Processes` for more than one worker, else :class:`Inline`."""
    return Processes(processes) if processes > 1 else Inline()


def _start_worker() -> subprocess.Popen[bytes]:
    """A fresh interpreter running :func:`privsim.protocols.secagg.worker.main`."""
    here = Path(__file__).resolve()
    root = str(here.parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env[ENV] = "1"
    env[PARENT] = str(os.getpid())  # so a parent gone before the worker starts is noticed
    return subprocess.Popen(
        [sys.executable, "-c", _BOOT.format(folder=str(here.parent))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
