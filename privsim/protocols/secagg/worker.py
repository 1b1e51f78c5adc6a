"""A worker process of :mod:`.pool`: the engine's worker loop
(:func:`privsim.sim.workers.serve`) answering the named bulk functions of :mod:`.bulk`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from privsim.protocols.secagg import bulk
from privsim.sim.workers import serve

__all__ = ["TASKS", "main"]

#: The functions a task may name.
TASKS: dict[str, Callable[..., Any]] = {
    "public_keys": bulk.public_keys,
    "agreements": bulk.agreements,
    "mask_sums": bulk.mask_sums,
    "seal_shares": bulk.seal_shares,
}


def main() -> None:
    """Answer named tasks until told to stop (:func:`privsim.sim.workers.serve`)."""
    serve(lambda name, args: TASKS[name](*args))
