"""The DCA paper's Table 1 grid: one DCA round, M = 10 compute nodes, N clients, vectors of d.

    python benchmarks/bench_table1.py             # the full grid, both encryptions (~20 min)
    python benchmarks/bench_table1.py --quick     # N <= 10^4 and d <= 10^3

Every cell runs in a fresh process (its peak resident memory is its own). ``round`` is the
protocol's wall time: clients' noise, encoding, secret sharing and sends, compute nodes'
collection, agreement and sums, the aggregator's decoding — with AES-GCM on every message
when encryption is on. ``keys`` is the set-up phase: X25519 + HKDF for every client–node
pair, agreed once per scenario, before the round. Data are synthetic (uniform
coordinates, clipped), generated per client inside the round. The paper's figures are
its distributed Spark implementation's, without encryption (Heikkilä et al. 2017, Table 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PAPER = {  # seconds, (N, d) -> time
    (10**2, 10): 1.72,
    (10**3, 10): 1.89,
    (10**4, 10): 2.99,
    (10**5, 10): 8.58,
    (10**2, 10**2): 2.03,
    (10**3, 10**2): 2.86,
    (10**4, 10**2): 12.36,
    (10**5, 10**2): 65.64,
    (10**2, 10**3): 3.43,
    (10**3, 10**3): 10.56,
    (10**4, 10**3): 101.2,
    (10**5, 10**3): 610.55,
    (10**2, 10**4): 15.30,
    (10**3, 10**4): 84.95,
    (10**4, 10**4): 994.96,
    (10**5, 10**4): 1592.29,
}
M = 10


def scenario(n: int, d: int, encryption: str, delivery: str = "auto"):
    from privsim.scenarios import scenario_from_dict

    return scenario_from_dict(
        {
            "name": f"table1-N{n}-d{d}",
            "baseline": False,
            "population": {"clients": n, "compute_nodes": M},
            "data": {"dimension": d, "distribution": "uniform"},
            "privacy": {"epsilon": 1.0, "delta": 1e-5},
            "dca": {
                "tolerated": 0,
                "share_timeout": 1e6,
                "agreement_timeout": 1e6,
                "sum_timeout": 1e6,
                "delivery": delivery,
            },
            "network": {
                "encryption": encryption,
                "link": {"latency": {"model": "constant", "value": 0.01}, "bandwidth": 1.25e8},
            },
        }
    )


def child(n: int, d: int, encryption: str, delivery: str) -> None:
    from privsim.protocols.dca.run import simulate

    simulate(scenario(20, 4, encryption, delivery))  # warm-up: lazy imports, first-call costs
    sc = scenario(n, d, encryption, delivery)
    start = time.perf_counter()
    sim = simulate(sc)
    wall = time.perf_counter() - start
    keys = sim.world.channels.key_agreement_seconds
    print(
        json.dumps(
            {
                "wall": wall,
                "keys": keys,
                "round": wall - keys,
                "ok": sim.outcome.ok,
                "messages": len(sim.world.trace),
                "delivery": sim.delivery,
            }
        )
    )


def measure(n: int, d: int, encryption: str, delivery: str = "auto") -> dict:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", str(n), str(d), encryption, delivery],
        stdout=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    if status != 0:
        return {"failed": status}
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mib"] = usage.ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="N <= 10^4 and d <= 10^3 only")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="benchmarks/results/table1.json", help="JSON of all cells")
    args = parser.parse_args()
    if args.child:
        n, d, enc, delivery = args.child
        child(int(n), int(d), enc, delivery)
        return
    cells = [(n, d) for d in (10, 10**2, 10**3, 10**4) for n in (10**2, 10**3, 10**4, 10**5)]
    if args.quick:
        cells = [(n, d) for n, d in cells if n <= 10**4 and d <= 10**3]
    header = (
        f"{'N':>7}{'d':>7}{'paper s':>9}{'off s':>8}{'x paper':>9}{'on s':>8}{'on/off':>8}"
        f"{'keys s':>8}{'MiB off':>9}{'MiB on':>8}  targets"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for n, d in cells:
        off = measure(n, d, "none")
        on = measure(n, d, "aes-gcm")
        if "failed" in off or "failed" in on:
            print(f"{n:>7}{d:>7}  failed: {off} {on}")
            continue
        paper = PAPER[(n, d)]
        speedup = paper / off["round"]
        ratio = on["round"] / off["round"]
        peak = max(off["peak_mib"], on["peak_mib"])
        marks = [
            ">=10x paper" if speedup >= 10 else "<10x paper",
            "on<4x off" if ratio < 4 else "on>=4x off",
            "<1GB" if peak < 1024 else ">=1GB",
        ]
        print(
            f"{n:>7}{d:>7}{paper:>9.2f}{off['round']:>8.2f}{speedup:>9.0f}{on['round']:>8.2f}"
            f"{ratio:>8.1f}{on['keys']:>8.1f}{off['peak_mib']:>9.0f}{on['peak_mib']:>8.0f}  {', '.join(marks)}",
            flush=True,
        )
        rows.append({"N": n, "d": d, "paper_s": paper, "off": off, "on": on})
    # Engine overhead per message: the same round through per-message and batched delivery.
    print("\nEngine overhead per message (N = 10^4, d = 10, M = 10, encryption off):")
    for delivery in ("per_message", "batched"):
        r = measure(10**4, 10, "none", delivery)
        print(
            f"  {delivery:<12} {r['round']:.3f} s for {r['messages']} messages = "
            f"{1e6 * r['round'] / r['messages']:.2f} us/message"
        )
        rows.append({"overhead": delivery, **r})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
