"""Worker processes for the bulk cryptography of a large SecAgg round (:mod:`.bulk`).

A round of N = 10^4 SecAgg+ clients makes about 3.4 · 10^5 X25519 key agreements and as
many mask expansions: many short calls into ``cryptography``, which holds the GIL
between them, so threads would not run them in parallel; processes do. Tasks are
queued and handed to whichever worker is free; each task is a pure function of its
arguments, so every result (and the round built from them) is the same bytes whatever
the number of workers, and the simulation goes on while they work, blocking only when
it needs a result that is not ready.

The workers are the engine's (:mod:`privsim.sim.workers`: fresh interpreters fed pickled
tasks, ignoring Ctrl-C, dying with their parent), started with only this package's bulk
modules loaded. Their number is ``PRIVSIM_ROUND_PROCESSES``
(:func:`privsim.sim.workers.workers`; 1 keeps everything in the round's process, as a
sweep's workers do).
"""

from __future__ import annotations

import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

from privsim.protocols.secagg.worker import TASKS
from privsim.sim import workers as workers_module
from privsim.sim.workers import workers

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


class Processes(workers_module.Processes):
    """The engine's worker processes (:class:`privsim.sim.workers.Processes`), each
    started with only this package's bulk modules and answering named :data:`TASKS`."""

    def __init__(self, size: int) -> None:
        folder = str(Path(__file__).resolve().parent)
        super().__init__(size, command=(sys.executable, "-c", _BOOT.format(folder=folder)))


def executor(processes: int) -> Executor:
    """:class:`Processes` for more than one worker, else :class:`Inline`."""
    return Processes(processes) if processes > 1 else Inline()
