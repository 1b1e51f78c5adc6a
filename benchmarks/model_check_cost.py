"""What the model-hash check (``training.model_check``) costs a round, with and without.

    python benchmarks/model_check_cost.py
    python benchmarks/model_check_cost.py --rounds 10 --encryption aes-gcm

The defence against model inconsistency (Pasquini, Francati & Ateniese, CCS 2022): every
picked client sends the SHA-256 digest of the model it received to its peers (SecAgg+:
its neighbours in the round's graph; DCA and ``trusted``: every other picked client) and
withholds its update on a mismatch. DP-FedAvg of softmax regression on Synthetic-IID (60
features, 10 classes, 610 parameters; 100 clients) at ε = 8, δ = 1e-5, through
``trusted`` and ``dca`` (fixed cohorts of 20) and ``secagg_plus`` (Poisson at q = 0.2,
32-bit modulus), no attack, each run a ``train`` of the scenario at seed 1. Each row is
the mean per round of the bytes every party sent, the messages, the simulated seconds
(the round's trace) and the wall milliseconds, without and with the check.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

AGGREGATIONS = ("trusted", "dca", "secagg_plus")

BASE: dict[str, Any] = {
    "name": "bench-model-check",
    "seed": 1,
    "protocol": "fedlearn",
    "population": {"clients": 100, "compute_nodes": 3},
    "privacy": {"epsilon": 8.0, "delta": 1e-5, "on_overspend": "allow"},
    "training": {"local_epochs": 1, "cohort": 20},
    "dataset": {"source": "synthetic", "synthetic_iid": True},
    "model": {"name": "softmax"},
    "network": {"encryption": "none"},
}


def scenario_of(aggregation: str, check: bool, rounds: int, encryption: str) -> Any:
    """The benchmark's scenario for one aggregation, with or without the check."""
    from privsim.scenarios import scenario_from_dict
    from privsim.scenarios.convert import set_fields

    fields: dict[str, Any] = {
        "training.aggregation": aggregation,
        "training.rounds": rounds,
        "training.eval_every": rounds,
        "training.model_check": check,
        "network.encryption": encryption,
    }
    if aggregation == "secagg_plus":
        fields |= {
            "training.sampling": "poisson",
            "training.rate": 0.2,
            "privacy.neighbour": "add_remove",
        }
    return scenario_from_dict(set_fields(BASE, fields))


def per_round(aggregation: str, check: bool, rounds: int, encryption: str) -> dict[str, float]:
    """Mean per released round: bytes, messages, simulated seconds, wall milliseconds."""
    from privsim.protocols.fedlearn.run import train

    t = train(scenario_of(aggregation, check, rounds, encryption), 1)
    done = [r for r in t.records if r.status == "released"]
    return {
        "bytes": statistics.fmean(sum(r.bytes.values()) for r in done),
        "messages": statistics.fmean(r.messages for r in done),
        "seconds": statistics.fmean(r.simulated_seconds for r in done),
        "wall_ms": 1000.0 * statistics.fmean(r.wall_seconds for r in done),
        "picked": statistics.fmean(r.picked for r in done),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--encryption", default="none", choices=("none", "sized", "aes-gcm"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    header = (
        f"{'aggregation':<12} {'check':<5} {'picked':>6} {'bytes/round':>12} "
        f"{'msgs/round':>10} {'sim s/round':>11} {'wall ms/round':>13}"
    )
    print(header)
    print("-" * len(header))
    for aggregation in AGGREGATIONS:
        rows = {c: per_round(aggregation, c, args.rounds, args.encryption) for c in (False, True)}
        for check, row in rows.items():
            print(
                f"{aggregation:<12} {'on' if check else 'off':<5} {row['picked']:>6.1f} "
                f"{row['bytes']:>12,.0f} {row['messages']:>10.1f} {row['seconds']:>11.4f} "
                f"{row['wall_ms']:>13.1f}"
            )
        off, on = rows[False], rows[True]
        print(
            f"{'':<12} {'+':<5} {'':>6} {on['bytes'] - off['bytes']:>+12,.0f} "
            f"{on['messages'] - off['messages']:>+10.1f} {on['seconds'] - off['seconds']:>+11.4f} "
            f"{on['wall_ms'] - off['wall_ms']:>+13.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
