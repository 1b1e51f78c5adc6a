"""A large share round on worker processes (:mod:`privsim.sim.workers`).

The share round's work per client is many short calls into ``cryptography``: a cipher
context per seed expanded, an AEAD object per message sealed and opened. Those calls
hold the GIL between their bulk loops, so worker threads gain little (measured: one
round of N = 10^4, d = 10^4, M = 10 with seed-compressed shares took 7.1 s on one thread
and 6.6 s on two). Worker processes do not share a GIL: each takes contiguous slices of
the agreed clients and returns its slices' partial node sums (M × d words), which the
round adds in Z_{2^64} (or F_p) — exact, so the released values are the same bytes
whatever the number of workers.

A slice's task is the :class:`~privsim.kit.securesum.job.ShareJob` (the clients' input
streams, names and message headers), the clients' indices and the channel keys and
nonce counters that the round reserved for them in the world's channels.

Processes are used when a round is estimated at :data:`MIN_SECONDS` of one core's work
or more (:func:`round_seconds`; below that, starting them costs more than they save) and
more than one worker is allowed (``PRIVSIM_ROUND_PROCESSES``, :func:`~privsim.sim.workers.workers`).
"""

from __future__ import annotations

import itertools
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from privsim.sim.keystream import BOX_MULLER_MAX
from privsim.sim.workers import ENV, WorkerUsage, map_unordered, workers

if TYPE_CHECKING:
    from privsim.kit.securesum.job import ChannelMaterial, ShareJob

__all__ = [
    "ENV",
    "MIN_SECONDS",
    "WORKER_BYTES",
    "WorkerUsage",
    "node_sums",
    "round_seconds",
    "serial_seconds",
    "use_processes",
    "workers",
]

#: Estimated seconds of one core's work from which a round goes to worker processes
#: (starting them costs about half a second).
MIN_SECONDS = 2.0
#: The estimate's costs on one core (measured with benchmarks/bench_table1.py): per
#: share word made and summed, per seed expanded (a cipher context) and per message
#: sealed and opened (two AEAD calls) besides its bytes.
SECONDS_PER_WORD = 3e-9
SECONDS_PER_SEED = 8e-6
SECONDS_PER_SEALED_MESSAGE = 6e-6
SECONDS_PER_SEALED_WORD = 6e-9

#: Resident memory of a worker's interpreter with NumPy and the ciphers loaded (its
#: chunks come on top; measured about 150 MiB at N = 10^4, d = 10^4).
WORKER_BYTES = 160 << 20
#: Slices per worker: a few, so that a slow worker does not hold the round back.
SLICES_PER_WORKER = 4


def round_seconds(clients: int, nodes: int, dimension: int, *, seeded: bool, sealed: bool) -> float:
    """One core's estimated seconds for a share round: every share word made and summed,
    the seeds expanded, and with encryption every message sealed and opened."""
    words = clients * nodes * dimension
    seconds = words * SECONDS_PER_WORD
    if seeded:
        seconds += clients * (nodes - 1) * SECONDS_PER_SEED
    if sealed:
        sealed_words = clients * dimension * (1 if seeded else nodes)
        seconds += clients * nodes * SECONDS_PER_SEALED_MESSAGE
        seconds += sealed_words * SECONDS_PER_SEALED_WORD
    return seconds


#: Gaussian noise longer than Box–Muller's vectors is drawn by a ziggurat per client, a
#: Python step that holds the GIL (measured: 4.2 µs per client at d = 100, 24 µs at
#: d = 10³): threads cannot share it, processes can. From this many seconds of it a
#: round goes to worker processes whatever its total (N = 10⁵, d = 10²: 1.4 s on two
#: threads, 1.0 s on two processes, their start included).
SECONDS_PER_SERIAL_PARTY = 4e-6
SECONDS_PER_SERIAL_COORDINATE = 2e-8
MIN_SERIAL_SECONDS = 0.3


def serial_seconds(clients: int, dimension: int) -> float:
    """Estimated seconds of a share round's work that holds the GIL (the ziggurat noise
    of vectors longer than :data:`~privsim.sim.keystream.BOX_MULLER_MAX`)."""
    if dimension <= BOX_MULLER_MAX:
        return 0.0
    return clients * (SECONDS_PER_SERIAL_PARTY + dimension * SECONDS_PER_SERIAL_COORDINATE)


def use_processes(seconds: float, serial: float = 0.0) -> bool:
    """Whether a round of about ``seconds`` of one core's work, ``serial`` of them
    holding the GIL, goes to worker processes."""
    return (seconds >= MIN_SECONDS or serial >= MIN_SERIAL_SECONDS) and workers() > 1


def node_sums(
    job: ShareJob, clients: npt.NDArray[np.int64], channel: ChannelMaterial | None
) -> npt.NDArray[np.uint64] | None:
    """The nodes' sums over ``clients`` (M × d), computed on :func:`workers` processes;
    None if the job cannot be sent to a process (a protocol's own client inputs that do
    not pickle): the round then stays in its process."""
    try:
        pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    n = workers()
    tasks = min(clients.size, n * SLICES_PER_WORKER)
    bounds = np.linspace(0, clients.size, tasks + 1).astype(np.int64).tolist()
    slices = [slice(lo, hi) for lo, hi in itertools.pairwise(bounds) if hi > lo]
    work = [
        (job, _Shard.of(clients[s]), channel.part(s) if channel is not None else None)
        for s in slices
    ]
    total = np.zeros((len(job.nodes), job.dimension), dtype=np.uint64)
    for sums in map_unordered(_slice_sums, work, n):
        total = job.add(total, sums)
    return total


@dataclass(frozen=True, slots=True)
class _Shard:
    """A slice's client indices as sent to a worker: increasing indices as the first
    and a bit per client of the span (1 bit, not 8 bytes, per client: a shard of 10⁶
    clients is 125 kB), other orders as they are."""

    first: int
    span: int
    bits: npt.NDArray[np.uint8] | None
    listed: npt.NDArray[np.int64] | None = None

    @classmethod
    def of(cls, clients: npt.NDArray[np.int64]) -> _Shard:
        if clients.size > 1 and bool(np.all(np.diff(clients) > 0)):
            first, span = int(clients[0]), int(clients[-1]) - int(clients[0]) + 1
            member = np.zeros(span, dtype=bool)
            member[clients - first] = True
            return cls(first, span, np.packbits(member))
        return cls(0, 0, None, clients)

    def clients(self) -> npt.NDArray[np.int64]:
        if self.bits is None:
            assert self.listed is not None
            return self.listed
        member = np.unpackbits(self.bits, count=self.span).astype(bool)
        return self.first + np.flatnonzero(member).astype(np.int64)


def _slice_sums(
    task: tuple[ShareJob, _Shard, ChannelMaterial | None],
) -> npt.NDArray[np.uint64]:
    """One slice's node sums (a worker's task)."""
    job, shard, channel = task
    return job.sums(shard.clients(), channel)
