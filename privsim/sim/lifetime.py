"""Helper processes that end with the process that started them.

A worker computing rows of a sweep or chunks of a round is useless once its parent is
gone, and an orphan keeps a core busy: on Linux the kernel sends it SIGKILL when its
parent dies (``PR_SET_PDEATHSIG``); elsewhere a daemon thread notices the re-parenting.
The kernel's parent is the *thread* that started the process: a pool whose workers any
thread of the parent may start (loky starts them at the first task of whichever thread,
and again after an idle timeout) watches the parent process instead
(:func:`die_with_parent_process`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["WATCHDOG_EVERY", "die_with_parent", "die_with_parent_process", "watch_parent"]

#: Seconds between two checks of the watchdog that ends an orphaned worker (off Linux,
#: and for the round workers of :func:`die_with_parent_process`).
WATCHDOG_EVERY = 1.0
#: prctl option: the signal the kernel sends this process when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1


def _die_with_parent_linux() -> bool:
    """Ask the kernel for SIGKILL when the parent dies (``PR_SET_PDEATHSIG``); False
    where that is unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _exit_now() -> None:
    os._exit(1)


def watch_parent(parent: int, on_orphan: Callable[[], None] = _exit_now) -> None:
    """Portable fallback: a daemon thread that ends this process (``on_orphan``) once it
    is re-parented (its parent died)."""

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_EVERY)
            if os.getppid() != parent:
                on_orphan()
                return

    threading.Thread(target=watch, name="privsim-parent-watchdog", daemon=True).start()


def die_with_parent(parent: int | None = None) -> None:
    """End this process when its parent (``parent``, or the current parent) dies, even
    by ``kill -9``; end it now if that has already happened."""
    expected = os.getppid() if parent is None else parent
    if not _die_with_parent_linux():
        watch_parent(expected)
    if os.getppid() != expected:  # the parent died before the request above
        os._exit(1)


def die_with_parent_process(parent: int) -> None:
    """End this process within :data:`WATCHDOG_EVERY` seconds of the death of the process
    ``parent`` (a watchdog thread: unlike ``PR_SET_PDEATHSIG``, not set off by the end of
    the thread that started this process); end it now if that has already happened."""
    watch_parent(parent)
    if os.getppid() != parent:
        os._exit(1)
