"""Poisoning through secure aggregation: test accuracy against the malicious share.

    python benchmarks/poisoning_accuracy.py                      # sign_flip, factor 10
    python benchmarks/poisoning_accuracy.py --kind scale --factor 100
    python benchmarks/poisoning_accuracy.py --kind replace --seeds 3

DP-FedAvg of softmax regression on Synthetic-IID (60 features, 10 classes; 100 clients),
15 rounds at ε = 8, δ = 1e-5, planned for 20% dropout (DCA then tolerates T = 4 absent
clients of 20, rejected ones included), through ``trusted`` (the curator clips every
update it receives) and ``dca`` (3 compute nodes), both with fixed cohorts of 20
(replace-one neighbours; DCA's shares on a Poisson sample cannot meet ε = 8 over 15
rounds), and ``secagg_plus`` (distributed discrete Gaussian, 32-bit modulus; Poisson
cohorts at q = 0.2, add/remove-one neighbours, as its accounting needs), with
``training.update_check`` none, ``norm_bound`` and ``range_check``; malicious shares 0,
1, 5, 10 and 20% (``threat.poisoning``). Each cell is the median final test accuracy over
``--seeds`` replications (seeds 1, 2, …), each a ``privsim.run`` of the scenario, so the
table measures the run as users get it. The last column of each row block is the
median count of malicious client-rounds that reached a released sum (the result's
``attack.poisoning.malicious_rounds_included``; blank when the run does not report it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHARES = (0.0, 0.01, 0.05, 0.10, 0.20)
AGGREGATIONS = ("trusted", "secagg_plus", "dca")
CHECKS = ("none", "norm_bound", "range_check")

BASE: dict[str, Any] = {
    "name": "bench-poisoning",
    "seed": 1,
    "protocol": "fedlearn",
    "population": {"clients": 100, "compute_nodes": 3},
    "privacy": {
        "epsilon": 8.0,
        "delta": 1e-5,
        "neighbour": "add_remove",
        "on_overspend": "allow",
    },
    "training": {
        "rounds": 15,
        "sampling": "poisson",
        "rate": 0.2,
        "local_epochs": 1,
        "expected_dropout": 0.2,
        "eval_every": 15,
    },
    "dataset": {"source": "synthetic", "synthetic_iid": True},
    "model": {"name": "softmax"},
    "network": {"encryption": "none"},
}


def scenario_of(
    aggregation: str, check: str, share: float, kind: str, factor: float
) -> dict[str, Any]:
    """The benchmark's scenario for one cell (a plain dict, as a TOML file would give)."""
    out: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    out["training"] |= {"aggregation": aggregation, "update_check": check}
    if aggregation != "secagg_plus":  # fixed cohorts: DCA's shares on a Poisson sample
        out["training"] |= {"sampling": "fixed", "cohort": 20}  # cannot meet ε = 8
        out["privacy"] |= {"neighbour": "replace_one"}
    if share > 0:
        out["threat"] = {"poisoning": {"share": share, "kind": kind, "factor": factor}}
    return out


def one(scenario: dict[str, Any], seed: int) -> tuple[float, int | None]:
    """The final test accuracy of one run, and its malicious client-rounds included."""
    from privsim.api import run
    from privsim.scenarios import scenario_from_dict

    result = run(scenario_from_dict(scenario), seed).to_dict()
    accuracy = float(result["accuracy"]["test_accuracy"])
    poisoning = (result.get("attack") or {}).get("poisoning") or {}
    included = poisoning.get("malicious_rounds_included")
    return accuracy, None if included is None else int(included)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="sign_flip", choices=["scale", "sign_flip", "replace"])
    parser.add_argument("--factor", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--aggregations", nargs="*", default=list(AGGREGATIONS))
    parser.add_argument("--checks", nargs="*", default=list(CHECKS))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    print(
        f"kind = {args.kind}, factor = {args.factor:g}; median final test accuracy over "
        f"{args.seeds} seeds (in brackets: median malicious client-rounds included)"
    )
    header = f"{'aggregation':<12} {'update_check':<12} " + " ".join(
        f"{f'{s:.0%}':>14}" for s in SHARES
    )
    print(header)
    print("-" * len(header))
    for aggregation in args.aggregations:
        for check in args.checks:
            cells = []
            for share in SHARES:
                runs = [
                    one(scenario_of(aggregation, check, share, args.kind, args.factor), seed)
                    for seed in range(1, args.seeds + 1)
                ]
                acc = statistics.median(a for a, _ in runs)
                counts = [c for _, c in runs if c is not None]
                inc = f"({statistics.median(counts):g})" if counts and share > 0 else ""
                cells.append(f"{acc:.3f}{inc:>7}".rjust(14))
            print(f"{aggregation:<12} {check:<12} " + " ".join(cells), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
