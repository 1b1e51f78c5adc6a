"""One run across a Dask cluster: a round's bulk work sharded over the cluster's workers.

A study spreads its replications over Dask, one per task (:mod:`privsim.studies.sweep`).
:func:`on_cluster` spreads one run: while it is active, the work a round hands to worker
processes (:mod:`privsim.sim.workers`) goes to the cluster instead, through
``distributed.Client.get_executor()``, Dask's own ``concurrent.futures`` executor. That
work is, for a DCA round, every shard's share generation, noise, sealing and partial
node sums (:mod:`privsim.kit.securesum.pool`); for SecAgg, the key agreements, sealed
shares and mask expansions (:mod:`privsim.kit.secagg.bulk`); and the pairwise
channel keys (:mod:`privsim.sim.channels`). The simulation itself — the bus, every
message's size and timing, the coalition's view, the ledger — stays in the calling
process.

A shard's task is a pure function of its arguments (the round's streams and the shard's
client indices), and the partial sums are added exactly (in Z_{2^64} or F_p), so the
result is the same bytes as a local run, whatever the number of workers and shards. A
worker holds one shard's chunk at a time: its memory is bounded by the shard, not the
population.

The scheduler is a trust boundary: a worker computes values the run releases. Connect
to a remote one over ``tls://`` with the CA, certificate and key files, as for a sweep
(:func:`~privsim.studies.executors.dask_security`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from privsim.sim import workers as round_workers
from privsim.studies.executors import DaskExecutor, SchedulerError

__all__ = ["Cluster", "SchedulerError", "on_cluster"]


@dataclass(frozen=True, slots=True)
class Cluster:
    """The cluster a run's rounds use: the Dask client and its number of workers."""

    client: Any
    workers: int


@contextlib.contextmanager
def on_cluster(
    scheduler: str, *, security: Any = None, workers: int | None = None
) -> Iterator[Cluster]:
    """Send the bulk work of every round run inside the block to the Dask cluster at
    ``scheduler`` (an address, ``tls://HOST:PORT`` with ``security``, or ``"local"`` for a
    LocalCluster of ``workers`` processes on this machine). The cluster's connection is
    closed (a local cluster stopped) when the block ends."""
    executor = DaskExecutor(scheduler, workers, security)
    try:
        pool = executor.client.get_executor(pure=False)
        with round_workers.use(pool, executor.workers):
            yield Cluster(executor.client, executor.workers)
    finally:
        executor.close()
