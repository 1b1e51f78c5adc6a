"""The DCA paper's Table 1 grid: one DCA round, M = 10 compute nodes, N clients, vectors of d.

    python benchmarks/bench_table1.py             # the full grid, off/on/sized (~25 min)
    python benchmarks/bench_table1.py --off       # encryption off only: every cell's speed-up
    python benchmarks/bench_table1.py --quick     # N <= 10^4 and d <= 10^3
    python benchmarks/bench_table1.py --shares seeded   # the grid with seed-compressed shares
    python benchmarks/bench_table1.py --scale     # N = 10^5, d = 10^4: floors and cells, one run

Every cell runs in a fresh process (its peak resident memory is its own). ``round`` is the
protocol's wall time: clients' noise, encoding, secret sharing and sends, compute nodes'
collection, agreement and sums, the aggregator's decoding — with AES-GCM on every message
when encryption is on. ``sized`` (``network.encryption = "sized"``) charges AES-GCM's
wire bytes without encrypting: the same simulated times as ``on``, at about the wall time
of ``off``. ``keys`` is the set-up phase: X25519 + HKDF for every client–node
pair, agreed once per scenario, before the round (none with ``sized`` or ``off``). Data are synthetic (uniform
coordinates, clipped), generated per client inside the round. The paper's figures are
its distributed Spark implementation's, without encryption (Heikkilä et al. 2017, Table 1).

``--scale`` runs the largest cell with full and seed-compressed shares, encryption off and
on, and measures in each cell's process, just before its round, the machine's floor for
that round (benchmarks/dca_floor.py: share generation and AES-GCM with the raw
primitives on one core, divided by the cores), so floor and cell see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def scenario(n: int, d: int, encryption: str, delivery: str = "auto", shares: str = "full"):
    from privsim.scenarios import scenario_from_dict

    extra = {} if shares == "full" else {"shares": shares}

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
                **extra,
            },
            "network": {
                "encryption": encryption,
                "link": {"latency": {"model": "constant", "value": 0.01}, "bandwidth": 1.25e8},
            },
        }
    )


def child(n: int, d: int, encryption: str, delivery: str, shares: str, floor: bool) -> None:
    from privsim.protocols.dca.run import simulate

    simulate(scenario(20, 4, encryption, delivery, shares))  # warm-up: lazy imports, first calls
    measured = None
    if floor:
        from benchmarks.dca_floor import measure as measure_floor

        f = measure_floor(n, d, M, shares)
        measured = {
            "floor": f.total,
            "floor_generate": f.generate,
            "floor_aead": f.aead,
            "aead_mb_per_s_per_thread": f.aead_bytes_per_second_per_thread / 1e6,
        }
    sc = scenario(n, d, encryption, delivery, shares)
    start = time.perf_counter()
    sim = simulate(sc)
    wall = time.perf_counter() - start
    keys = sim.world.channels.key_agreement_seconds
    from privsim.sim.workers import WorkerUsage

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = WorkerUsage.cpu_seconds if sim.delivery == "batched" else ()
    print(
        json.dumps(
            {
                "workers": len(workers),
                "worker_cpu": list(workers),
                # Every process's own peak added: a bound on the round's resident memory.
                "peak_total_mib": own + len(workers) * WorkerUsage.peak_bytes / 2**20,
                "wall": wall,
                "keys": keys,
                "round": wall - keys,
                "ok": sim.outcome.ok,
                "messages": len(sim.world.trace),
                "delivery": sim.delivery,
                "client_bytes": _client_bytes(sim),
                "load": os.getloadavg()[0],
                **(measured or {}),
            }
        )
    )


def _client_bytes(sim) -> float:
    """Mean bytes a client sends in the round (from the trace)."""
    from privsim.kit.result import Communication

    roles = Communication.of_world(sim.world, output_party="aggregator").to_dict()["roles"]
    return float(roles["client"]["bytes_sent_mean"])


def measure(
    n: int,
    d: int,
    encryption: str,
    delivery: str = "auto",
    shares: str = "full",
    floor: bool = False,
) -> dict:
    args = [str(n), str(d), encryption, delivery, shares, "floor" if floor else "-"]
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    if status != 0:
        return {"failed": status}
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mib"] = usage.ru_maxrss / 1024
    return result


def _peak(cell: dict) -> float:
    """MiB of the cell's process, or of it and its worker processes together."""
    return max(cell["peak_mib"], cell.get("peak_total_mib", 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="N <= 10^4 and d <= 10^3 only")
    parser.add_argument(
        "--off", action="store_true", help="encryption off only: each cell's speed-up (~3 min)"
    )
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--shares", choices=("full", "seeded"), default="full")
    parser.add_argument(
        "--scale", action="store_true", help="N = 10^5, d = 10^4: floors and cells in one run"
    )
    parser.add_argument("--out", default="benchmarks/results/table1.json", help="JSON of all cells")
    args = parser.parse_args()
    if args.child:
        n, d, enc, delivery, shares, floor = args.child
        child(int(n), int(d), enc, delivery, shares, floor == "floor")
        return
    if args.scale:
        scale(args.out.replace("table1.json", "table1-scale.json"))
        return
    cells = [(n, d) for d in (10, 10**2, 10**3, 10**4) for n in (10**2, 10**3, 10**4, 10**5)]
    if args.quick:
        cells = [(n, d) for n, d in cells if n <= 10**4 and d <= 10**3]
    if args.off:
        off_grid(cells, args.shares, args.out.replace("table1.json", "table1-off.json"))
        return
    header = (
        f"{'N':>7}{'d':>7}{'paper s':>9}{'off s':>8}{'x paper':>9}{'on s':>8}{'on/off':>8}"
        f"{'sized s':>9}{'sized/off':>10}{'keys s':>8}{'MiB off':>9}{'MiB on':>8}  targets"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for n, d in cells:
        off = measure(n, d, "none", shares=args.shares)
        on = measure(n, d, "aes-gcm", shares=args.shares)
        sized = measure(n, d, "sized", shares=args.shares)
        if "failed" in off or "failed" in on or "failed" in sized:
            print(f"{n:>7}{d:>7}  failed: {off} {on} {sized}")
            continue
        paper = PAPER[(n, d)]
        speedup = paper / off["round"]
        ratio = on["round"] / off["round"]
        peak = max(_peak(off), _peak(on))
        limit = 2 if args.shares == "seeded" else 4
        marks = [
            f">={TARGET}x paper" if speedup >= TARGET else f"<{TARGET}x paper",
            f"on<{limit}x off" if ratio < limit else f"on>={limit}x off",
            "<1GB" if peak < 1024 else ">=1GB",
        ]
        print(
            f"{n:>7}{d:>7}{paper:>9.2f}{off['round']:>8.2f}{speedup:>9.0f}{on['round']:>8.2f}"
            f"{ratio:>8.1f}{sized['round']:>9.2f}{sized['round'] / off['round']:>10.2f}"
            f"{on['keys']:>8.1f}{_peak(off):>9.0f}{_peak(on):>8.0f}  {', '.join(marks)}",
            flush=True,
        )
        rows.append({"N": n, "d": d, "paper_s": paper, "off": off, "on": on, "sized": sized})
    if args.shares == "seeded":
        args.out = args.out.replace("table1.json", "table1-seeded.json")
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))
        return
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


#: Every cell of Table 1 at least this many times faster than the paper, encryption off.
TARGET = 50


def off_grid(cells: list[tuple[int, int]], shares: str, out: str) -> None:
    """Encryption off only, every cell once in one run: the round's time, its speed-up
    over the paper's Spark time, and whether it reaches :data:`TARGET`."""
    print(f"DCA round, M = {M}, encryption off, {shares} shares; load {os.getloadavg()[0]:.1f}")
    header = f"{'N':>7}{'d':>7}{'paper s':>9}{'round s':>9}{'x paper':>9}{'MiB':>7}{'workers':>8}"
    print(header)
    print("-" * len(header))
    rows = []
    for n, d in cells:
        r = measure(n, d, "none", shares=shares)
        if "failed" in r:
            print(f"{n:>7}{d:>7}  failed: {r}")
            rows.append({"N": n, "d": d, "failed": r})
            continue
        speedup = PAPER[(n, d)] / r["round"]
        print(
            f"{n:>7}{d:>7}{PAPER[(n, d)]:>9.2f}{r['round']:>9.3f}{speedup:>9.0f}"
            f"{_peak(r):>7.0f}{r['workers']:>8}",
            flush=True,
        )
        rows.append({"N": n, "d": d, "paper_s": PAPER[(n, d)], "speedup": speedup, **r})
    done = [row["speedup"] for row in rows if "speedup" in row]
    if done:
        worst = min(done)
        met = len(done) == len(rows) and worst >= TARGET
        print(f"smallest speed-up {worst:.0f}x: every cell >= {TARGET}x: {'yes' if met else 'no'}")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(rows, indent=1))


def scale(out: str, n: int = 10**5, d: int = 10**4) -> None:
    """The largest cell, full and seed-compressed shares, encryption off and on, each with
    its floor measured in its own process just before the round."""
    print(f"N = {n}, d = {d}, M = {M}; floor = share generation + AES-GCM, one core's time / cores")
    header = (
        f"{'shares':<8}{'encryption':<11}{'round s':>9}{'floor s':>9}{'round/floor':>13}"
        f"{'GCM MB/s/thr':>14}{'client KB':>11}{'MiB':>6}{'load':>6}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for shares in ("full", "seeded"):
        for enc in ("none", "aes-gcm"):
            r = measure(n, d, enc, shares=shares, floor=enc == "aes-gcm")
            if "failed" in r:
                print(f"{shares:<8}{enc:<11} failed: {r}")
                continue
            floor = r.get("floor", float("nan"))
            print(
                f"{shares:<8}{enc:<11}{r['round']:>9.1f}{floor:>9.1f}{r['round'] / floor:>13.2f}"
                f"{r.get('aead_mb_per_s_per_thread', float('nan')):>14.0f}"
                f"{r['client_bytes'] / 1e3:>11.1f}{_peak(r):>6.0f}{r['load']:>6.1f}",
                flush=True,
            )
            rows.append({"shares": shares, "encryption": enc, **r})
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
