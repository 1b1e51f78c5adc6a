"""A worker process of :mod:`.pool`: answers pickled tasks (:data:`TASKS`, the bulk
functions of :mod:`.bulk`) on stdin with pickled results on stdout, ignores Ctrl-C and
dies with its parent (``PR_SET_PDEATHSIG``)."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from privsim.protocols.secagg import bulk
from privsim.sim.lifetime import die_with_parent

__all__ = ["PARENT", "TASKS", "main"]

#: The environment variable that tells a worker its parent's pid.
PARENT = "PRIVSIM_SECAGG_PARENT"
#: The functions a task may name.
TASKS: dict[str, Callable[..., Any]] = {
    "public_keys": bulk.public_keys,
    "agreements": bulk.agreements,
    "mask_sums": bulk.mask_sums,
    "seal_shares": bulk.seal_shares,
}


def main() -> None:
    """Answer tasks until told to stop (None or the end of the input)."""
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
        name, args = task
        try:
            reply: tuple[str, Any] = ("ok", TASKS[name](*args))
        except BaseException:  # reported to the round, which raises it
            reply = ("error", traceback.format_exc())
        pickle.dump(reply, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()
