"""Iterative private learning: what sampling buys, what coalitions and dropouts cost.

    python benchmarks/fedlearn_reproductions.py                 # every table
    python benchmarks/fedlearn_reproductions.py --only anchors  # one of them
    python benchmarks/fedlearn_reproductions.py --seeds 10

Tables (markdown, printed):

``anchors``: TensorFlow Federated's DP tutorial setting (q = 120/3383, z = 1.2, 100
rounds, δ = 1e-5) run as a protocol — 3,383 clients, Poisson cohorts, trusted
aggregation with noise on the sum or on the mean, and DCA — without dropouts and with 30%
of every cohort offline (availability 0.7). The ledger reports the PLD figure; the RDP
figure of the same realised events is beside it (dp-accounting's RdpAccountant).

``amplification``: ε of R = 100 rounds at noise multiplier z under Poisson sampling at
q, against full participation (q = 1), by the ledger; and the accuracy at equal ε (4, 1e-5
over 30 rounds): full participation (cohorts of all 100 clients) against cohorts of 20,
each with the planner's z, on scikit-learn's digits, ``--seeds`` seeds: medians with 95%
bootstrap intervals, and a Wilcoxon signed-rank test paired by seed with its power
against a shift of 0.05.

``coalitions``: DCA over 1,000 clients, cohorts of 100, 20 rounds, the noise planned for
(4, 1e-5) with T = 0: the realised ε round by round when nobody colludes or drops, when
10% of the population colludes (about 10% of each cohort), and when 20% of each cohort
drops after sampling; medians over seeds with 95% bootstrap intervals.

``bits``: the distributed discrete Gaussian through SecAgg+ at 8 to 20 modulus bits
against a trusted curator at the same ε (Kairouz, Liu & Steinke 2021): medians with
95% bootstrap intervals over ``--seeds`` seeds.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from privsim.api import run
from privsim.kit.stats import bootstrap_median_ci, paired_test
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError


def _run(data: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(data)).to_dict()


def _both(data: dict[str, Any]) -> tuple[float, float]:
    """A training's ε by the ledger (PLD) and, for the same realised events, by
    dp-accounting's RdpAccountant."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    from privsim.protocols.fedlearn.run import train

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = train(scenario_from_dict(data))
    accountant = RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    for entry in t.ledger.entries:
        accountant.compose(entry.event_against(t.coalition))
    delta = t.ledger.delta
    return t.ledger.guarantee(t.coalition).epsilon, float(accountant.get_epsilon(delta))


TFF = {
    "name": "tff-anchor",
    "seed": 1,
    "protocol": "fedlearn",
    "population": {"clients": 3383, "compute_nodes": 3},
    "privacy": {
        "epsilon": 100.0,
        "delta": 1e-5,
        "neighbour": "add_remove",
        "on_overspend": "warn",
    },
    "training": {
        "rounds": 100,
        "sampling": "poisson",
        "rate": 120 / 3383,
        "noise_multiplier": 1.2,
        "aggregation": "trusted",
        "algorithm": "dp_sgd",
        "server_lr": 0.5,
    },
    "dataset": {"source": "synthetic", "synthetic_iid": True, "synthetic_features": 20},
    "model": {"name": "softmax"},
    "network": {"encryption": "none"},
    "dca": {"on_excess_dropout": "release"},
}


def anchors() -> None:
    print("| aggregation | noise | online | ε (ledger, PLD) | ε (RDP, same events) |")
    print("|---|---|---:|---:|---:|")
    shapes = [
        ("trusted", "sum", {"training.central_noise": "sum"}),
        ("trusted", "mean", {"training.central_noise": "mean"}),
        ("dca", "shares, T = 1", {"training.aggregation": "dca", "dca.tolerated": 1}),
        ("dca", "shares, T = 2σ of the cohort", {"training.aggregation": "dca"}),
    ]
    for online in (1.0, 0.7):
        for aggregation, noise, changes in shapes:
            data = set_fields(
                TFF,
                {
                    **changes,
                    "availability.model": "bernoulli" if online < 1 else "always",
                    "availability.probability": online,
                },
            )
            pld, rdp = _both(data)
            print(f"| {aggregation} | {noise} | {online:.0%} | {pld:.3f} | {rdp:.3f} |")


def amplification(seeds: int) -> None:
    import dp_accounting

    from privsim.sim.ledger import epsilon_of

    print("ε of R = 100 rounds at δ = 1e-5, Poisson sampling at q (q = 1: every client):\n")
    print("| z | q = 0.01 | q = 0.05 | q = 0.2 | q = 1 |")
    print("|---:|---:|---:|---:|---:|")
    for z in (0.8, 1.0, 1.2):
        row = []
        for q in (0.01, 0.05, 0.2, 1.0):
            inner = dp_accounting.GaussianDpEvent(z)
            event = inner if q == 1 else dp_accounting.PoissonSampledDpEvent(q, inner)
            row.append(epsilon_of([dp_accounting.SelfComposedDpEvent(event, 100)], 1e-5))
        print(f"| {z} | " + " | ".join(f"{e:.3g}" for e in row) + " |")
    base = {
        "name": "amplification",
        "protocol": "fedlearn",
        "population": {"clients": 100},
        "privacy": {"epsilon": 4.0, "delta": 1e-5},
        "training": {"rounds": 30, "aggregation": "trusted", "client_lr": 0.5},
        "dataset": {"source": "digits"},
        "model": {"name": "softmax"},
        "network": {"encryption": "none"},
    }
    arms = {"all 100 every round": 100, "cohorts of 20": 20}
    found: dict[str, list[float]] = {a: [] for a in arms}
    z: dict[str, float] = {}
    for seed in range(seeds):
        for arm, cohort in arms.items():
            result = _run(set_fields(base, {"seed": seed, "training.cohort": cohort}))
            found[arm].append(result["accuracy"]["test_accuracy"])
            z[arm] = result["fedlearn"]["noise"]["noise_multiplier"]
    print(f"\nAccuracy at equal ε = 4 (δ = 1e-5, 30 rounds, digits, {seeds} seeds):\n")
    print("| participation | planner's z | median accuracy | 95% interval |")
    print("|---|---:|---:|---|")
    for arm, values in found.items():
        lo, hi = bootstrap_median_ci(values, name=("fedlearn", arm))
        print(f"| {arm} | {z[arm]:.3f} | {np.median(values):.3f} | [{lo:.3f}, {hi:.3f}] |")
    test = paired_test(found["cohorts of 20"], found["all 100 every round"], shift=0.05)
    print(
        f"\n{test.name}: median difference {test.median_diff:+.3f} "
        f"[{test.diff_ci[0]:+.3f}, {test.diff_ci[1]:+.3f}], p = {test.p:.3g}, "
        f"power {test.power:.2f} against a shift of {test.shift}"
    )


def coalitions(seeds: int) -> None:
    base = {
        "name": "coalitions",
        "protocol": "fedlearn",
        "population": {"clients": 1000, "compute_nodes": 3},
        "privacy": {"epsilon": 4.0, "delta": 1e-5, "on_overspend": "warn"},
        "training": {"rounds": 20, "cohort": 100, "aggregation": "dca", "client_lr": 0.5},
        "dataset": {"source": "synthetic", "synthetic_iid": True, "synthetic_features": 20},
        "model": {"name": "softmax"},
        "network": {"encryption": "none"},
        "dca": {"tolerated": 1, "on_excess_dropout": "release"},
    }
    arms = {
        "planned (nobody colludes or drops)": {},
        "10% of the population colludes": {"threat.colluding_clients": 100},
        "20% of each cohort drops": {
            "availability.model": "bernoulli",
            "availability.probability": 0.8,
        },
    }
    shown = (1, 5, 10, 20)
    print("| setting | " + " | ".join(f"ε after round {r}" for r in shown) + " | accuracy |")
    print("|---|" + "---:|" * (len(shown) + 1))
    for arm, changes in arms.items():
        curves, accuracy = [], []
        for seed in range(seeds):
            result = _run(set_fields(base, {**changes, "seed": seed}))
            curves.append([c["epsilon"] for c in result["fedlearn"]["curves"]])
            accuracy.append(result["accuracy"]["test_accuracy"])
        cells = []
        for r in shown:
            values = [c[r - 1] for c in curves]
            lo, hi = bootstrap_median_ci(values, name=("coalitions", arm, r))
            cells.append(f"{np.median(values):.3f} [{lo:.3f}, {hi:.3f}]")
        print(f"| {arm} | " + " | ".join(cells) + f" | {np.median(accuracy):.3f} |")


def bits(seeds: int) -> None:
    """Kairouz, Liu & Steinke (2021): the distributed discrete Gaussian over SecAgg
    matches central DP's accuracy once the modulus has enough bits, and falls apart
    below. DP-FedAvg of softmax regression on Synthetic-IID (20 features, 10 classes:
    210 parameters), 1,000 clients, Poisson cohorts at q = 0.1, 20 rounds, (4, 1e-5):
    SecAgg+ with b-bit sums against a trusted curator at the same ε."""
    base = {
        "name": "bits",
        "protocol": "fedlearn",
        "population": {"clients": 1000},
        "privacy": {"epsilon": 4.0, "delta": 1e-5, "neighbour": "add_remove"},
        "training": {
            "rounds": 20,
            "sampling": "poisson",
            "rate": 0.1,
            "client_lr": 0.5,
            "aggregation": "secagg_plus",
        },
        "dataset": {"source": "synthetic", "synthetic_iid": True, "synthetic_features": 20},
        "model": {"name": "softmax"},
        "network": {"encryption": "none"},
    }
    from privsim.protocols.fedlearn.accounting import integer_of

    arms: dict[str, dict[str, Any]] = {"trusted (central)": {"training.aggregation": "trusted"}}
    for b in (20, 16, 14, 12, 10, 8):
        arms[f"SecAgg+, {b} bits"] = {"training.modulus_bits": b}
    print("| aggregation | scale 2^f | median accuracy | 95% interval | median ε |")
    print("|---|---:|---:|---|---:|")
    for arm, changes in arms.items():
        data = set_fields(base, changes)
        scale = "-"
        if "bits" in arm:
            try:
                scale = str(integer_of(scenario_from_dict(data), 210).fraction_bits)
            except FieldError as exc:  # too few bits for any scale: refused, named
                print(f"| {arm} | refused | | | | ({exc.problem})")
                continue
        accuracy, epsilon = [], []
        for seed in range(seeds):
            result = _run(set_fields(data, {"seed": seed}))
            accuracy.append((result["accuracy"] or {}).get("test_accuracy", float("nan")))
            epsilon.append(result["privacy"]["achieved_epsilon"])
        lo, hi = bootstrap_median_ci(accuracy, name=("bits", arm))
        print(
            f"| {arm} | {scale} | {np.nanmedian(accuracy):.3f} | [{lo:.3f}, {hi:.3f}] | "
            f"{np.median(epsilon):.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=("anchors", "amplification", "coalitions", "bits"))
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    logging.getLogger("absl").setLevel(logging.ERROR)  # dp-accounting's order-by-order notes
    started = time.perf_counter()
    if args.only in (None, "anchors"):
        anchors()
        print()
    if args.only in (None, "amplification"):
        amplification(args.seeds)
        print()
    if args.only in (None, "coalitions"):
        coalitions(args.seeds)
        print()
    if args.only in (None, "bits"):
        bits(args.seeds)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
