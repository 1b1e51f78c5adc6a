"""One round sharded over a Dask LocalCluster: time, and peak memory per worker.

    python benchmarks/bench_cluster.py                      # DCA, N = 10^7, d = 10, 2 workers
    python benchmarks/bench_cluster.py --clients 1000000 --compare-local
    python benchmarks/bench_cluster.py --protocol secagg_plus --clients 1000000 --dimension 100

DCA: the round (M = 10 compute nodes, the Table 1 scenario of
benchmarks/bench_table1.py, with ``network.encryption = "sized"``: every message is
charged AES-GCM's wire size, nothing is sealed) runs inside
:func:`privsim.cluster.on_cluster`: its shards — share generation, noise and each
shard's partial node sums — go to the cluster's workers as ``workers ×
SLICES_PER_WORKER`` tasks; the bus, the trace and the ledger stay in this process.

SecAgg+: the shipped ``secagg_plus.toml`` (5% dropout and corruption targets, its faults
and links) at N clients and dimension d, ``encryption = "sized"``, the clients as a
batched population (``secagg.delivery = "batched"``), a 10 Gb/s server uplink and a
30 s round timeout (at 10^6 clients the server's fan-out of Directories and forwarded
shares takes seconds). Every client's X25519 key pairs and pairwise agreements, its
sealed shares (opened and checked by their holders), the survivors' inputs with their
noise shares and their masks are computed on the cluster's workers, a window of two
tasks per worker at a time, each task of a size that does not depend on N
(:data:`privsim.kit.secagg.keybook.PAIRS_PER_TASK`, ``SHARD_WORK``); the bus, the trace
and the server's reconstruction stay in this process.

The cluster is a LocalCluster of single-threaded worker processes, each with Dask's
memory limit ``--memory-limit`` (a worker past it is restarted, and the round would
fail).

Figures: the round's wall time; this process's peak resident memory (O(N): the
population's names, its per-message arrays); each worker's peak resident memory (its
``VmHWM``) and CPU seconds over the round, against its idle baseline. The prediction at W
workers: a worker's time ≈ (CPU seconds of all workers) / W, its memory ≈ baseline + one
task's working set (bounded whatever N); the round's wall time ≈ this process's own work
(linear in N) + the workers' time.

``--compare-local`` runs the same round in this process too and checks that the released
values are the same bytes.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

M = 10


def _worker_stats() -> tuple[int, float]:
    """A worker's peak resident bytes (VmHWM) and CPU seconds so far."""
    peak = 0
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return peak, time.process_time()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=10**7)
    parser.add_argument("--dimension", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB", help="Dask's limit per worker")
    parser.add_argument("--encryption", default="sized", choices=("sized", "none"))
    parser.add_argument("--compare-local", action="store_true")
    parser.add_argument("--protocol", default="dca", choices=("dca", "secagg_plus"))
    args = parser.parse_args()
    os.environ.setdefault("PRIVSIM_MAX_MEMORY", "64GiB")  # this process's O(N) state

    from distributed import LocalCluster

    from privsim.cluster import on_cluster
    from privsim.kit.securesum import pool

    n, d = args.clients, args.dimension
    if args.protocol == "secagg_plus":
        from privsim.protocols.secagg.run import simulate

        sc = secagg_scenario(n, d, args.encryption)
        simulate(secagg_scenario(40, 4, args.encryption))  # warm-up: lazy imports
    else:
        from benchmarks.bench_table1 import scenario
        from privsim.protocols.dca.run import simulate  # type: ignore[assignment]

        sc = scenario(n, d, args.encryption)
        simulate(scenario(20, 4, args.encryption))  # warm-up: lazy imports
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=args.memory_limit,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        on_cluster(cluster.scheduler_address) as on,
    ):
        client = on.client
        idle = client.run(_worker_stats)
        start, own_cpu = time.perf_counter(), time.process_time()
        sim = simulate(sc)
        wall, own_cpu = time.perf_counter() - start, time.process_time() - own_cpu
        after = client.run(_worker_stats)
    own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tasks = args.workers * pool.SLICES_PER_WORKER
    if args.protocol == "secagg_plus":
        print(
            f"SecAgg+ round on a LocalCluster: N = {n:,}, d = {d}, k = {sim.params.degree}, "
            f"t = {sim.params.threshold}, encryption {args.encryption}, batched clients, "
            f"{args.workers} workers (memory limit {args.memory_limit} each)"
        )
        print(
            f"live per round {[int(s.size) for s in sim.outcome.survivors]}; key agreements "
            f"{sim.keys.agreements:,}; shares sealed and opened {sim.keys.sealed_and_opened:,}"
        )
    else:
        print(
            f"DCA round on a LocalCluster: N = {n:,}, d = {d}, M = {M}, encryption "
            f"{args.encryption}, {args.workers} workers (memory limit {args.memory_limit} "
            f"each), {tasks} shard tasks of {n // tasks:,} clients"
        )
    print(f"released: {sim.outcome.ok}; {len(sim.world.trace):,} messages on the bus")
    print(
        f"round wall time {wall:.1f} s; this process's CPU {own_cpu:.1f} s, peak "
        f"{own_peak / 2**30:.2f} GiB"
    )
    print(f"{'worker':<28}{'idle MiB':>10}{'peak MiB':>10}{'+MiB':>8}{'CPU s':>8}")
    cpu_total = 0.0
    for address in sorted(after):
        peak0, cpu0 = idle[address]
        peak1, cpu1 = after[address]
        cpu_total += cpu1 - cpu0
        print(
            f"{address:<28}{peak0 / 2**20:>10.0f}{peak1 / 2**20:>10.0f}"
            f"{(peak1 - peak0) / 2**20:>8.0f}{cpu1 - cpu0:>8.1f}"
        )
    if args.protocol == "secagg_plus":
        print(
            f"workers' CPU {cpu_total:.1f} s in all: at W workers a worker's share is "
            f"{cpu_total:.1f} / W s (at 100: {cpu_total / 100:.2f} s); it holds a window "
            "of 2 tasks, each of a fixed size whatever N (its peak also creeps up with the "
            "tasks it has run: docs/how-to/one-run-on-a-cluster.md)"
        )
    else:
        print(
            f"workers' CPU {cpu_total:.1f} s in all: at W workers a worker's share is "
            f"{cpu_total:.1f} / W s (at 100: {cpu_total / 100:.2f} s); its memory beyond the "
            f"idle interpreter is one chunk's working set (CHUNK_BYTES = {pool_chunk() >> 20} "
            f"MiB of shares) + 1 bit per client of its shard's span, N / (W x "
            f"{pool.SLICES_PER_WORKER}) clients (at 100 workers: "
            f"{n / (100 * pool.SLICES_PER_WORKER) / 8 / 2**10:.1f} KiB)"
        )
    if args.compare_local:
        if args.protocol == "dca":  # one process (SecAgg+: this machine's own workers)
            os.environ[pool.ENV] = "1"
        start = time.perf_counter()
        local = simulate(sc)
        local_wall = time.perf_counter() - start
        same = local.outcome.released.tobytes() == sim.outcome.released.tobytes()
        print(f"local round (one process) {local_wall:.1f} s; released bytes identical: {same}")


def secagg_scenario(n: int, d: int, encryption: str) -> Any:
    """The shipped SecAgg+ scenario at ``n`` clients of dimension ``d``, batched, with a
    data-centre server uplink and a round timeout that a 10^6 fan-out fits in."""
    from privsim.scenarios.loader import builtin_scenario_path, read_toml, scenario_from_dict

    data = read_toml(builtin_scenario_path("secagg_plus"), "scenario file")
    data["population"]["clients"] = n
    data["secagg"].update(dimension=d, delivery="batched", round_timeout=30.0)
    data["secagg"]["tolerated"] = min(data["secagg"]["tolerated"], n // 10)
    data["network"]["encryption"] = encryption
    data["network"]["overrides"][0]["bandwidth"] = 1.25e9  # 10 Gb/s
    return scenario_from_dict(data)


def pool_chunk() -> int:
    from privsim.kit.securesum.job import CHUNK_BYTES

    return CHUNK_BYTES


if __name__ == "__main__":
    main()
