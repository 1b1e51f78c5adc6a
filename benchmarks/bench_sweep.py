"""Study throughput: replications per second of the quickstart on each executor, and the
results store's overhead per row.

    python benchmarks/bench_sweep.py                    # 1,000 replications per executor
    python benchmarks/bench_sweep.py --replications 100
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from privsim.studies import ResultStore
from privsim.studies.study import study_from_dict
from privsim.studies.sweep import sweep


def _study(replications: int):
    return study_from_dict(
        {"name": "bench", "seed": 1, "replications": replications, "base": "quickstart"}
    )


def _store_overhead(rows: int = 2000) -> float:
    row = {
        "row_id": "",
        "cell": "c",
        "replication": 0,
        "seed": 1,
        "status": "released",
        "grid": {"privacy.epsilon": 1.0},
        "accuracy": {"rmse": 1.0, "l2_error": 2.0},
        "cost": {
            r: {f"k{i}": float(i) for i in range(6)} for r in ("client", "compute", "aggregator")
        },
    }
    with tempfile.TemporaryDirectory() as tmp, ResultStore(tmp) as store:
        start = time.perf_counter()
        for i in range(rows):
            store.add({**row, "row_id": f"r{i}", "replication": i})
        return (time.perf_counter() - start) / rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replications", type=int, default=1000)
    args = parser.parse_args()
    study = _study(args.replications)
    configs = [
        ("local, 1 worker", None, 1),
        ("local, 2 workers", None, 2),
        ("Dask LocalCluster, 2 workers", "local", 2),
    ]
    print(f"{'executor':<30}{'rows':>6}{'seconds':>10}{'rows/s':>9}{'scaling':>9}")
    results = {}
    for name, scheduler, workers in configs:
        with tempfile.TemporaryDirectory() as tmp:
            summary = sweep(
                study, Path(tmp) / "out", scheduler=scheduler, workers=workers, progress=None
            )
        rate = summary.ran / summary.seconds
        results[name] = rate
        base = results["local, 1 worker"]
        print(
            f"{name:<30}{summary.ran:>6}{summary.seconds:>10.1f}{rate:>9.2f}{rate / base / workers:>9.0%}",
            flush=True,
        )
    per_row = _store_overhead()
    print(
        f"\nresults store: {1e3 * per_row:.2f} ms per committed row (SQLite, WAL, synchronous=FULL)"
    )
    print("scaling: rows/s divided by (1-worker rows/s x workers)")
    Path("benchmarks/results").mkdir(parents=True, exist_ok=True)
    Path("benchmarks/results/sweep.json").write_text(
        json.dumps({"rates": results, "store_s_per_row": per_row})
    )


if __name__ == "__main__":
    main()
