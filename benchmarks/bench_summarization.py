"""Summarisation on the occupancy set-up with K = 10 owners: the simulated protocol
(owners, curator and consumer on the bus, MWEM hashes, PrivAuction; no baselines) against
a plain numpy greedy with no simulation (exact hashed means, the same h1), for a
p = 500 summary; time per epoch and in all. Targets: the protocol within 3× of the
greedy, and 500 points in under a minute on 2 cores. Needs ``PRIVSIM_DATA_DIR``.

    python benchmarks/bench_summarization.py
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from privsim.api import run
from privsim.protocols.summarization.baselines import greedy
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.protocols.summarization.data import build_setup
from privsim.protocols.summarization.rff import FourierHash
from privsim.scenarios import builtin_scenario, scenario_from_dict
from privsim.scenarios.convert import set_fields

P, K = 500, 10


def _protocol_seconds() -> tuple[float, float]:
    """Wall time of the whole run (set-up included) and of its init part (set-up, h1
    and the two T_init MWEM releases: p = 1)."""
    base = builtin_scenario("summarization").to_dict()
    common = {
        "summarization.dataset": "occupancy",
        "summarization.owners": K,
        "summarization.auction_epsilon": 0.5,
        "population.clients": K,
        "summarization.baselines": False,
        "network.encryption": "none",
        "privacy.epsilon": 1000.0,
    }
    times = []
    for p in (1, P):
        scenario = scenario_from_dict(set_fields(base, {**common, "summarization.summary_size": p}))
        started = time.perf_counter()
        run(scenario)
        times.append(time.perf_counter() - started)
    return times[1], times[0]


def _greedy_seconds() -> float:
    cfg = SummarizationConfig(dataset="occupancy", owners=K, summary_size=P)
    started = time.perf_counter()
    setup = build_setup(cfg, np.random.default_rng(0))
    h1 = FourierHash.draw(setup.dimension, cfg.dimension, cfg.gamma, np.random.default_rng(1))
    greedy([h1(x) for x, _ in setup.owners], h1(setup.validation), h1(setup.seed[0]), P)
    return time.perf_counter() - started


def main() -> None:
    with threadpool_limits(limits=1):  # one BLAS thread each, as a study worker runs
        total, init = _protocol_seconds()
        plain = _greedy_seconds()
    per_epoch = (total - init) / (P - 1)
    print(f"occupancy, K = {K}, p = {P} (wall seconds; other load on the machine inflates them)")
    print(f"{'':34}{'total':>10}{'per epoch (ms)':>16}")
    print(f"{'simulated protocol (bus, MWEM)':34}{total:10.2f}{1000 * per_epoch:16.2f}")
    print(f"{'  of which set-up + T_init MWEM':34}{init:10.2f}{'':>16}")
    print(f"{'plain numpy greedy':34}{plain:10.2f}{1000 * plain / P:16.2f}")
    # The target compares the epochs (the protocol's bids, auction and hashes against the
    # greedy's); the whole run adds a fixed part (data set-up, the two T_init MWEM
    # releases, the summary's SVM and MMD metrics, the ledger's PLD figures).
    print(
        f"ratio protocol / greedy per epoch: {per_epoch * P / plain:.2f} (target <= 3); "
        f"whole runs: {total / plain:.2f}; 500 points in {total:.1f} s (target < 60)"
    )


if __name__ == "__main__":
    main()
