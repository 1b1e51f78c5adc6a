"""A large share round on worker processes.

The share round's work per client is many short calls into ``cryptography``: a cipher
context per seed expanded, an AEAD object per message sealed and opened. Those calls
hold the GIL between their bulk loops, so worker threads gain little (measured: one
round of N = 10^4, d = 10^4, M = 10 with seed-compressed shares took 7.1 s on one thread
and 6.6 s on two). Worker processes do not share a GIL: each takes contiguous slices of
the agreed clients and returns its slices' partial node sums (M × d words), which the
round adds in Z_{2^64} (or F_p) — exact, so the released values are the same bytes
whatever the number of workers.

What a worker needs comes in two parts: the :class:`~privsim.kit.securesum.batched.ShareJob`
(the clients' input streams, names and message headers), sent once when the worker
starts, and per slice the clients' indices with the channel keys and nonce counters that
the round reserved for them in the world's channels, all pickled over the worker's
stdin and stdout. Workers are fresh interpreters (never a fork of the simulation, which
may be running threads, and never a re-import of the user's script, as the
``multiprocessing`` start methods other than fork do), ignore Ctrl-C (the round's
process stops them) and die with their parent.

Processes are used when a round is estimated at :data:`MIN_SECONDS` of one core's work
or more (:func:`round_seconds`; below that, starting them costs more than they save) and
more than one worker is allowed:
``PRIVSIM_ROUND_PROCESSES`` (default: the usable cores, at most 4; ``1`` keeps every round
in one process; a sweep's worker processes set it to 1, since the sweep already uses
every core).
"""

from __future__ import annotations

import itertools
import os
import pickle
import resource
import selectors
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from privsim.sim.lifetime import die_with_parent

if TYPE_CHECKING:
    from privsim.kit.securesum.job import ChannelMaterial, ShareJob

__all__ = [
    "ENV",
    "MIN_SECONDS",
    "WORKER_BYTES",
    "WorkerStats",
    "node_sums",
    "round_seconds",
    "use_processes",
    "workers",
]

#: The environment variable that sets the number of worker processes for a round.
ENV = "PRIVSIM_ROUND_PROCESSES"
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


class WorkerStats:
    """The last pooled round's workers: the largest peak resident memory (bytes) and
    the CPU seconds of each worker (for benchmarks)."""

    peak_bytes: int = 0
    cpu_seconds: tuple[float, ...] = ()


def workers() -> int:
    """Worker processes a round may use (``PRIVSIM_ROUND_PROCESSES``, else the usable
    cores, at most 4)."""
    value = os.environ.get(ENV, "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(
                f"{ENV}={value!r} is not a whole number; set it to a worker count such as 2, "
                "or to 1 to keep a round in one process"
            ) from None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


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


def use_processes(seconds: float) -> bool:
    """Whether a round of about ``seconds`` of one core's work goes to worker processes."""
    return seconds >= MIN_SECONDS and workers() > 1


def _worker_main() -> None:
    """A worker: read the job, then slices until told to stop, answering each with its
    partial sums and this process's peak memory (or the error, as text)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    job = pickle.load(stdin)
    while True:
        task = pickle.load(stdin)
        if task is None:
            return
        clients, channel = task
        try:
            sums = job.sums(clients, channel)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            reply: tuple[object, ...] = (
                "ok",
                sums,
                usage.ru_maxrss * 1024,
                usage.ru_utime + usage.ru_stime,
            )
        except BaseException:
            reply = ("error", traceback.format_exc())
        pickle.dump(reply, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


def _start_worker(job_bytes: bytes) -> subprocess.Popen[bytes]:
    """A fresh interpreter running :func:`_worker_main` (not a fork of this process,
    which may run threads, and not a re-import of the user's main script)."""
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env[ENV] = "1"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from privsim.kit.securesum.pool import _worker_main; _worker_main()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert worker.stdin is not None
    worker.stdin.write(job_bytes)
    worker.stdin.flush()
    return worker


def _send(worker: subprocess.Popen[bytes], task: object) -> None:
    assert worker.stdin is not None
    pickle.dump(task, worker.stdin, protocol=pickle.HIGHEST_PROTOCOL)
    worker.stdin.flush()


def node_sums(
    job: ShareJob, clients: npt.NDArray[np.int64], channel: ChannelMaterial | None
) -> npt.NDArray[np.uint64] | None:
    """The nodes' sums over ``clients`` (M × d), computed on :func:`workers` processes;
    None if the job cannot be sent to a process (a protocol's own client inputs that do
    not pickle): the round then stays in its process."""
    try:
        job_bytes = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    n = workers()
    tasks = min(clients.size, n * SLICES_PER_WORKER)
    bounds = np.linspace(0, clients.size, tasks + 1).astype(np.int64).tolist()
    slices = [slice(lo, hi) for lo, hi in itertools.pairwise(bounds) if hi > lo]
    pending = [(clients[s], channel.part(s) if channel is not None else None) for s in slices]
    pending.reverse()
    total = np.zeros((len(job.nodes), job.dimension), dtype=np.uint64)
    peak = 0
    cpu: dict[int, float] = {}
    running = [_start_worker(job_bytes) for _ in range(min(n, len(pending)))]
    try:
        with selectors.DefaultSelector() as ready:
            for worker in running:
                _send(worker, pending.pop())
                assert worker.stdout is not None
                ready.register(worker.stdout, selectors.EVENT_READ, worker)
            busy = len(running)
            while busy:
                for key, _ in ready.select():
                    worker = key.data
                    try:
                        reply = pickle.load(worker.stdout)
                    except EOFError:
                        raise RuntimeError(
                            f"a share-round worker process ended (exit {worker.wait()}); "
                            f"set {ENV}=1 to run the round in one process"
                        ) from None
                    if reply[0] != "ok":
                        raise RuntimeError(f"a share-round worker failed:\n{reply[1]}")
                    total = job.add(total, reply[1])
                    peak = max(peak, int(reply[2]))
                    cpu[worker.pid] = float(reply[3])
                    if pending:
                        _send(worker, pending.pop())
                    else:
                        ready.unregister(worker.stdout)
                        _send(worker, None)
                        busy -= 1
        for worker in running:
            worker.wait()
    finally:
        for worker in running:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            for stream in (worker.stdin, worker.stdout):
                if stream is not None:
                    stream.close()
    WorkerStats.peak_bytes, WorkerStats.cpu_seconds = peak, tuple(cpu.values())
    return total
