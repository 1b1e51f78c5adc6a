"""Iterative private learning: time per round and peak memory, against the population.

    python benchmarks/bench_fedlearn.py                 # both tables
    python benchmarks/bench_fedlearn.py --population    # 10^6 clients, cohorts of 10^3
    python benchmarks/bench_fedlearn.py --htru2         # needs PRIVSIM_DATA_DIR

``--population``: DP-FedAvg (softmax regression, 60 features, 10 classes, Synthetic-IID
records generated per picked client) through DCA with M = 3 compute nodes, cohorts of
1,000 drawn without replacement, 10 rounds, ``network.encryption = "sized"``; the same
run at N = 10^4 and 10^6 clients, each in a fresh process, so that its peak resident
memory (``ru_maxrss``) is its own. The goal: under a minute per 10 rounds at 10^6, and
a peak that does not grow with N.

``--htru2``: DP-FedAvg of logistic regression on HTRU2 split over 1,000 clients by
Dirichlet(0.5) label skew, cohorts of 100, 200 rounds, through ``--aggregation`` (DCA by
default; ``secagg_plus`` with the distributed discrete Gaussian, Poisson cohorts at
q = 0.1). The goal: under 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

POPULATION = {
    "name": "bench-population",
    "seed": 7,
    "protocol": "fedlearn",
    "population": {"clients": 1_000_000, "compute_nodes": 3},
    "privacy": {"epsilon": 4.0, "delta": 1e-5},
    "training": {"rounds": 10, "cohort": 1000, "aggregation": "dca", "client_lr": 0.5},
    "dataset": {"source": "synthetic", "synthetic_iid": True},
    "model": {"name": "softmax"},
    "network": {"encryption": "sized"},
}

HTRU2 = {
    "name": "bench-htru2",
    "seed": 11,
    "protocol": "fedlearn",
    "population": {"clients": 1000, "compute_nodes": 3},
    "privacy": {"epsilon": 4.0, "delta": 1e-5},
    "training": {"rounds": 200, "cohort": 100, "aggregation": "dca", "client_lr": 0.5},
    "dataset": {"source": "htru2", "partition": "dirichlet", "alpha": 0.5},
    "model": {"name": "logistic"},
    "network": {"encryption": "sized"},
}


def _one(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run ``scenario`` here; its figures as a dict."""
    import resource
    import warnings

    from privsim.api import run
    from privsim.scenarios import scenario_from_dict

    warnings.simplefilter("ignore")
    started = time.perf_counter()
    result = run(scenario_from_dict(scenario)).to_dict()
    wall = time.perf_counter() - started
    curves = result["fedlearn"]["curves"]
    return {
        "clients": scenario["population"]["clients"],
        "rounds": len(curves),
        "wall": wall,
        "per_round": [c["wall_seconds"] for c in curves],
        "accuracy": (result["accuracy"] or {}).get("test_accuracy"),
        "epsilon": result["privacy"]["achieved_epsilon"],
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _in_child(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run ``scenario`` in a fresh interpreter (its own peak memory)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(scenario)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _population(sizes: list[int]) -> None:
    print("| N | rounds | wall s | s per 10 rounds | peak MiB | test accuracy | ε |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        scenario = {**POPULATION, "population": {**POPULATION["population"], "clients": n}}
        got = _in_child(scenario)
        per10 = 10 * sum(got["per_round"]) / max(got["rounds"], 1)
        print(
            f"| {n:,} | {got['rounds']} | {got['wall']:.1f} | {per10:.1f} | "
            f"{got['peak_mib']:.0f} | {got['accuracy']:.3f} | {got['epsilon']:.3f} |"
        )


def _htru2(aggregation: str, rounds: int) -> None:
    training = {**HTRU2["training"], "aggregation": aggregation, "rounds": rounds}
    privacy = dict(HTRU2["privacy"])
    if aggregation in ("secagg", "secagg_plus"):  # integer noise: Poisson cohorts of 100
        training |= {"sampling": "poisson", "rate": 0.1}
        privacy["neighbour"] = "add_remove"
    got = _in_child({**HTRU2, "training": training, "privacy": privacy})
    print("| aggregation | rounds | wall s | s per round | test accuracy | ε |")
    print("|---|---:|---:|---:|---:|---:|")
    print(
        f"| {aggregation} | {got['rounds']} | {got['wall']:.1f} | "
        f"{got['wall'] / max(got['rounds'], 1):.3f} | {got['accuracy']:.3f} | {got['epsilon']:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--population", action="store_true")
    parser.add_argument("--htru2", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--aggregation", default="dca")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_one(json.loads(args.child))))
        return
    both = not (args.population or args.htru2)
    if args.population or both:
        _population(args.sizes)
    if args.htru2 or both:
        _htru2(args.aggregation, args.rounds)


if __name__ == "__main__":
    main()
