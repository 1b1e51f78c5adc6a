"""What runs inside a worker process of :mod:`privsim.sim.workers`: the task wrapper
(:func:`call`: the result or its traceback, the worker's pid, peak memory and CPU
seconds), the initializer (:func:`init_worker`: Ctrl-C ignored, the worker ends with
the run's process) and :func:`alone`, a task whose module is imported without its
packages' ``__init__``. Kept apart from the pool so that a worker imports only this."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from privsim.sim.lifetime import die_with_parent_process

__all__ = ["PARENT", "alone", "call", "init_worker"]

#: The environment variable that tells a worker its parent's pid.
PARENT = "PRIVSIM_WORKER_PARENT"

R = TypeVar("R")


@dataclass(frozen=True)
class _Alone:
    module: str
    name: str

    def __call__(self, *args: Any) -> Any:
        return getattr(_import_alone(self.module), self.name)(*args)


def alone(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` (a module-level function) as a task that privsim's workers import without
    running the ``__init__`` of its packages (a protocol package's ``__init__`` loads the
    whole protocol; its bulk functions need a fraction of that): it pickles as the
    module's and function's names."""
    return _Alone(fn.__module__, fn.__qualname__)


_in_worker = False  # set by init_worker: one task at a time, in the main thread


def _import_alone(name: str) -> ModuleType:
    """The module ``name``; in privsim's workers, imported with every package it meets
    that is not imported yet (its own parents, and those of the modules it imports)
    standing in as a bare package (its ``__init__`` not run) while it loads, then
    removed, so that a later import of a package runs its ``__init__``."""
    module = sys.modules.get(name)
    if module is not None or not _in_worker:
        return module or importlib.import_module(name)
    bare = _BarePackages(name.split(".")[0])
    sys.meta_path.insert(0, bare)
    try:
        return importlib.import_module(name)
    finally:
        sys.meta_path.remove(bare)
        for package in bare.made:
            sys.modules.pop(package, None)


class _BarePackages(importlib.abc.MetaPathFinder):
    """Finds the packages of ``root`` as bare packages (their submodules load as usual)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.made: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.root and not fullname.startswith(self.root + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.submodule_search_locations is None:
            return None  # a module (or not ours): imported the usual way
        spec.loader = _BARE
        self.made.append(fullname)
        return spec


class _BareLoader(importlib.abc.Loader):
    """Loads a package without running its ``__init__``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module, with the spec's search path

    def exec_module(self, module: ModuleType) -> None:
        return None


_BARE = _BareLoader()


def call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any, int, int, float]:
    """A worker's task: ``fn(*args)`` (or its error, as text), the worker's pid, its peak
    memory and the task's CPU seconds."""
    cpu = _cpu_seconds()
    try:
        reply: tuple[bool, Any] = (True, fn(*args))
    except BaseException:  # reported to the run, which raises it
        reply = (False, traceback.format_exc())
    peak = _peak_bytes()
    return (*reply, os.getpid(), peak, _cpu_seconds() - cpu)


def init_worker() -> None:
    """Each worker first: ignore Ctrl-C, end with the run's process."""
    global _in_worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _in_worker = True
    parent = os.environ.get(PARENT, "")
    if parent.isdigit():
        die_with_parent_process(int(parent))


def _cpu_seconds() -> float:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_bytes() -> int:
    """This process's peak resident bytes (0 where the platform has no ``resource``
    module). On Linux the address space's high-water mark (``VmHWM``): ``ru_maxrss``
    would start from the parent's peak at the fork."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0
    from privsim.inputs import read_input_text

    try:  # the guarded reader, as for every file (/proc's report a size of 0)
        for line in read_input_text("/proc/self/status", "process status", 2**20).splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):  # pragma: no cover - not Linux
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes, Linux KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
