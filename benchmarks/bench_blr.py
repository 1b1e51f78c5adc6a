"""Figure 2 of Heikkilä et al. (2017) end to end: the whole study (3 data sets × 6 ε ×
7 methods × 25 repetitions; DDP and proj DDP simulated on the bus) on the local process
pool, then the report (tables and figures). Needs ``PRIVSIM_DATA_DIR``.

    python benchmarks/bench_blr.py                  # the full study, 2 workers
    python benchmarks/bench_blr.py --replications 5 --out results/figure2-small

Prints the wall time of the sweep and of the report, and the mean wall time per
replication of the threshold search and of each method (from the stored rows).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from privsim.studies.report import write_report
from privsim.studies.study import load_study, study_from_dict
from privsim.studies.sweep import sweep

STUDY = Path(__file__).resolve().parent.parent / "privsim" / "studies" / "figure2.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=None, help="keep the results here (default: a temp dir)")
    args = parser.parse_args()
    study = load_study(STUDY)
    if args.replications:
        data = study.to_toml_dict()
        data["replications"] = args.replications
        study = study_from_dict(data)
    tmp = tempfile.TemporaryDirectory()
    out = Path(args.out) if args.out else Path(tmp.name) / "figure2"
    started = time.perf_counter()
    summary = sweep(study, out, workers=args.workers, progress=None)
    sweep_seconds = time.perf_counter() - started
    started = time.perf_counter()
    _, figures = write_report(out)
    report_seconds = time.perf_counter() - started
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = [json.loads(r[0]) for r in db.execute("SELECT row FROM rows")]
    print("| stage | rows | workers | seconds |")
    print("|---|---:|---:|---:|")
    print(f"| sweep (Figure 2 study) | {summary.total} | {args.workers} | {sweep_seconds:.1f} |")
    print(f"| report ({len(figures)} figures) | {summary.total} | 1 | {report_seconds:.1f} |")
    print(f"| total | | | {sweep_seconds + report_seconds:.1f} |")
    print()
    print("| per replication | mean wall seconds |")
    print("|---|---:|")
    n = max(len(rows), 1)
    print(f"| whole replication | {sum(r['timing']['wall_seconds'] for r in rows) / n:.3f} |")
    errors = sum(1 for r in rows if r["status"] == "error")
    print(f"\n{summary.total} rows, {errors} errors, {summary.ran} run now")
    tmp.cleanup()


if __name__ == "__main__":
    main()
