"""SecAgg and SecAgg+ speed: wall time per round and bytes per client and server.

    python benchmarks/bench_secagg.py            # N = 100 and 1,000, and SecAgg+ at 10^4
    python benchmarks/bench_secagg.py --quick    # without N = 10^4

Each cell simulates one aggregation round (the four stages of Bonawitz et al.; 5%
dropout and corruption targets, noise off, channel encryption off: the protocol's own
AES-GCM on the shares is always on) and reports its wall and CPU time (CPU time is the
steadier figure on a shared machine), the wall time per stage, the bytes each client
sends and receives, the server's, and the simulated completion time. Timings include the X25519 key
agreements (one per pair and key kind), Shamir sharing, the PRG masks and the engine.

Large rounds run their bulk cryptography (key agreements, sealing the shares, the masks)
on worker processes (``PRIVSIM_ROUND_PROCESSES``, default the usable cores up to 4):
``cpu s`` is the round's own process, ``wrk cpu`` its workers', ``peak MB`` the largest
resident memory of the round's process and its workers together (sampled every 0.2 s).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

CELLS: list[tuple[str, int, int]] = [
    ("secagg", 100, 100),
    ("secagg", 100, 10_000),
    ("secagg_plus", 100, 100),
    ("secagg_plus", 1_000, 100),
    ("secagg_plus", 1_000, 10_000),
    ("secagg_plus", 10_000, 100),
    ("secagg_plus", 10_000, 1_000),
]


def _scenario(protocol: str, n: int, d: int) -> Any:
    from privsim.scenarios import scenario_from_dict

    return scenario_from_dict(
        {
            "name": f"bench-{protocol}-{n}-{d}",
            "seed": 1,
            "protocol": protocol,
            "population": {"clients": n},
            "privacy": {"epsilon": 1.0, "delta": 1e-5},
            "secagg": {
                "dimension": d,
                "mean": 0.3,
                "modulus_bits": 32,
                "fraction_bits": 16,
                "target_dropout": 0.05,
                "target_corruption": 0.05,
                # SecAgg: t = N/2 + 1 on the complete graph
                "threshold": n // 2 + 1 if protocol == "secagg" else 0,
            },
            "network": {"encryption": "none"},
        }
    )


def _resident_mb(pid: int) -> float:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class _PeakMemory:
    """The largest resident memory of this process and its children, sampled."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            try:
                kids = Path(f"/proc/{me}/task/{me}/children").read_text().split()
            except OSError:
                kids = []
            total = _resident_mb(me) + sum(_resident_mb(int(k)) for k in kids)
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _children_cpu() -> float:
    """CPU seconds the round's worker processes spent in its tasks so far (the workers
    are reused between rounds, so the OS's count of ended children would miss them)."""
    from privsim.sim.workers import WorkerUsage

    return float(sum(WorkerUsage.cpu_seconds))


def run_cell(protocol: str, n: int, d: int) -> dict[str, Any]:
    from privsim.kit.result import Communication
    from privsim.kit.secagg.round import round_processes
    from privsim.protocols.secagg.run import SERVER, simulate

    scenario = _scenario(protocol, n, d)
    from privsim.sim.workers import WorkerUsage

    WorkerUsage.cpu_seconds = ()  # the figures of this round's pool only
    started, cpu = time.perf_counter(), time.process_time()
    with _PeakMemory() as memory:
        sim = simulate(scenario)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    worker_cpu = _children_cpu()
    comm = Communication.of_world(sim.world, output_party=SERVER)
    client, server = comm.roles["client"], comm.roles["server"]
    return {
        "protocol": protocol,
        "N": n,
        "d": d,
        "k": sim.params.degree,
        "t": sim.params.threshold,
        "status": "released" if sim.outcome.ok else str(sim.outcome.abort),
        "wall_s": wall,
        "cpu_s": cpu,
        "workers": round_processes(sim.graph),
        "worker_cpu_s": worker_cpu,
        "peak_mb": memory.peak,
        "per_stage_s": wall / 4,
        "client_sent": client["bytes_sent_mean"],
        "client_recv": client["bytes_received_mean"],
        "server_recv": server["bytes_received_mean"],
        "sim_s": comm.duration or 0.0,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip N = 10^4")
    parser.add_argument("--only", default="", help="run only cells with this N (e.g. 10000)")
    args = parser.parse_args(argv)
    cells = [c for c in CELLS if not (args.quick and c[1] >= 10_000)]
    if args.only:
        cells = [c for c in cells if c[1] == int(args.only)]
    head = (
        f"{'protocol':<12} {'N':>6} {'d':>6} {'k':>5} {'t':>5} {'wall s':>8} {'cpu s':>8} "
        f"{'wrk':>3} {'wrk cpu':>7} {'peak MB':>7} "
        f"{'s/stage':>8} {'client sent':>12} {'client recv':>12} {'server recv':>12} "
        f"{'sim s':>6}  status"
    )
    print(head)
    print("-" * len(head))
    for protocol, n, d in cells:
        r = run_cell(protocol, n, d)
        print(
            f"{r['protocol']:<12} {r['N']:>6} {r['d']:>6} {r['k']:>5} {r['t']:>5} "
            f"{r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['workers']:>3} {r['worker_cpu_s']:>7.2f} "
            f"{r['peak_mb']:>7.0f} {r['per_stage_s']:>8.3f} {r['client_sent']:>12.0f} "
            f"{r['client_recv']:>12.0f} {r['server_recv']:>12.0f} {r['sim_s']:>6.2f}  "
            f"{r['status']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
