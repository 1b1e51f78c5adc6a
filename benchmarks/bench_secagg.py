"""SecAgg and SecAgg+ speed: wall time per round and bytes per client and server.

    python benchmarks/bench_secagg.py            # N = 100 and 1,000, and SecAgg+ at 10^4
    python benchmarks/bench_secagg.py --quick    # without N = 10^4

Each cell simulates one aggregation round (the four stages of Bonawitz et al.; 5%
dropout and corruption targets, noise off, channel encryption off: the protocol's own
AES-GCM on the shares is always on) and reports its wall and CPU time (CPU time is the
steadier figure on a shared machine), the wall time per stage, the bytes each client
sends and receives, the server's, and the simulated completion time. Timings include the X25519 key
agreements (one per pair and key kind), Shamir sharing, the PRG masks and the engine.
"""

from __future__ import annotations

import argparse
import time
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


def run_cell(protocol: str, n: int, d: int) -> dict[str, Any]:
    from privsim.kit.result import Communication
    from privsim.protocols.secagg.run import SERVER, simulate

    scenario = _scenario(protocol, n, d)
    started, cpu = time.perf_counter(), time.process_time()
    sim = simulate(scenario)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
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
        f"{'s/stage':>8} {'client sent':>12} {'client recv':>12} {'server recv':>12} "
        f"{'sim s':>6}  status"
    )
    print(head)
    print("-" * len(head))
    for protocol, n, d in cells:
        r = run_cell(protocol, n, d)
        print(
            f"{r['protocol']:<12} {r['N']:>6} {r['d']:>6} {r['k']:>5} {r['t']:>5} "
            f"{r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['per_stage_s']:>8.3f} {r['client_sent']:>12.0f} "
            f"{r['client_recv']:>12.0f} {r['server_recv']:>12.0f} {r['sim_s']:>6.2f}  "
            f"{r['status']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
