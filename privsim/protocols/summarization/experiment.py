"""One replication: the set-up, the private protocol on the bus, the two baselines, and
their quality, cost and privacy.

``run_summarization(scenario, seed)`` is a pure function of its inputs: the split, h1,
the curator's rounding, MWEM and auction coins, the baselines' draws and the network all
come from streams named under ``seed``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from privsim.kit.result import Abort, MethodResult, Privacy, RunResult
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.summarization import accounting, baselines
from privsim.protocols.summarization.auction import expected_asks, nobody_asked, parsimony_bound
from privsim.protocols.summarization.behaviours import (
    CuratorOutcome,
    CuratorPlan,
    consumer,
    curator,
    owner,
)
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.protocols.summarization.data import SetUp, build_setup
from privsim.protocols.summarization.metrics import (
    cost_by_party,
    exposure,
    percent_increase,
    points_accessed,
    svm_accuracy,
)
from privsim.protocols.summarization.objective import mmd2
from privsim.protocols.summarization.rff import FourierHash
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.streams import Streams

__all__ = ["CONSUMER", "CURATOR", "plan_ledger", "run_summarization"]

CURATOR = accounting.CURATOR
CONSUMER = "consumer"


def _quality(setup: SetUp, x: np.ndarray, y: np.ndarray, gamma: float) -> dict[str, float]:
    if len(x) == 0:
        return {"mmd2": math.nan, "svm_accuracy": math.nan, "size": 0}
    return {
        "mmd2": mmd2(x, setup.validation, gamma),
        "svm_accuracy": svm_accuracy(x, y, *setup.test),
        "size": len(x),
    }


def _picked(setup: SetUp, picks: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    x = np.stack([setup.owners[k][0][r] for k, r in picks])
    y = np.asarray([setup.owners[k][1][r] for k, r in picks])
    return x, y


def _baselines(
    scenario: Scenario, cfg: SummarizationConfig, setup: SetUp, h1: FourierHash, streams: Streams
) -> dict[str, dict[str, float]]:
    """Non-private greedy and uniform sampling on the same split."""
    greedy = baselines.greedy(
        [h1(x) for x, _ in setup.owners],
        h1(setup.validation),
        np.zeros((0, cfg.dimension)),
        cfg.summary_size,
    )
    uniform = baselines.uniform(
        [len(x) for x, _ in setup.owners],
        cfg.summary_size,
        streams.generator("summarization", "uniform"),
    )
    return {
        "greedy": _quality(setup, *_picked(setup, greedy), cfg.gamma),
        "uniform": _quality(setup, *_picked(setup, uniform), cfg.gamma),
    }


def plan_ledger(scenario: Scenario) -> PrivacyLedger:
    """The ledger as :func:`run_summarization` charges it, before anything runs."""
    priv = scenario.privacy
    ledger = PrivacyLedger(priv.epsilon, priv.delta, on_overspend=priv.on_overspend)
    accounting.charge(ledger, scenario.table("summarization", SummarizationConfig))
    return ledger


def run_summarization(scenario: Scenario, seed: int) -> RunResult:
    """One replication; see the module docstring."""
    started = time.perf_counter()
    cfg = scenario.table("summarization", SummarizationConfig)
    priv = scenario.privacy
    streams = Streams(seed)
    setup = build_setup(cfg, streams.generator("summarization", "data"))
    h1 = FourierHash.draw(
        setup.dimension, cfg.dimension, cfg.gamma, streams.generator("summarization", "h1")
    )
    ledger = plan_ledger(scenario)

    owners = accounting.owner_names(cfg.owners)
    world = build_world(scenario, streams, [CONSUMER, CURATOR, *owners])
    plan = CuratorPlan(
        owners=owners,
        consumer=CONSUMER,
        hash1=h1,
        summary_size=cfg.summary_size,
        eta=cfg.eta,
        t_init=cfg.t_init,
        t_sub=cfg.t_sub,
        epsilon_validation=cfg.epsilon_validation,
        epsilon_first=cfg.epsilon_first,
        epsilon_summary=cfg.summary_epsilon,
        auction_epsilon=cfg.auction_epsilon,
        auction=cfg.auction,
        tau=cfg.tau,
        sensitivity=2.0 if priv.neighbour == "replace_one" else 1.0,
        timeout=cfg.timeout,
        release_last=cfg.release == "last",
        seed_points=setup.seed[0],
    )
    cons = world.add_party(CONSUMER, "consumer")
    cur = world.add_party(CURATOR, "curator")
    world.start(cons, consumer(cons, setup.validation, CURATOR))
    world.start(cur, curator(cur, plan))
    for agent, (x, y) in zip(world.add_parties("client", owners), setup.owners, strict=True):
        world.start(agent, owner(agent, x, y, h1, CURATOR))
    agree_channels(world, lambda _: [(CURATOR, p) for p in (CONSUMER, *owners)])
    world.run()

    out = (
        cur.result
        if isinstance(cur.result, CuratorOutcome)
        else CuratorOutcome(status="aborted", detail="the curator crashed")
    )
    accounting.settle(ledger, cfg, out.validation_released, out.epochs)
    # A summary of no point holds no owner's data (every owner absent, its messages lost):
    # nothing to release, and no quality to measure.
    no_data = out.status == "released" and not out.points
    released = out.status == "released" and not no_data
    x = np.stack(out.points) if out.points else np.zeros((0, setup.dimension))
    y = np.asarray(out.labels)
    accuracy: dict[str, Any] | None = None
    methods: dict[str, MethodResult] = {}
    if released:
        accuracy = _quality(setup, x, y, cfg.gamma)
    if cfg.baselines:
        base = _baselines(scenario, cfg, setup, h1, streams)
        if accuracy is not None:
            g = base["greedy"]["mmd2"]
            accuracy["mmd2_increase_pct"] = percent_increase(accuracy["mmd2"], g)
            base["uniform"]["mmd2_increase_pct"] = percent_increase(base["uniform"]["mmd2"], g)
            base["greedy"]["mmd2_increase_pct"] = 0.0
        free = PrivacyLedger(priv.epsilon, priv.delta)
        free.non_private("greedy", "exact hashed means broadcast (Kim et al. 2016)")
        nothing = PrivacyLedger(priv.epsilon, priv.delta)  # uniform: nothing data-dependent
        methods = {
            "greedy": MethodResult(
                status="released", privacy=Privacy.of(free), accuracy=base["greedy"]
            ),
            "uniform": MethodResult(
                status="released", privacy=Privacy.of(nothing), accuracy=base["uniform"]
            ),
        }
        if accuracy is not None:
            methods["private"] = MethodResult(
                status="released", privacy=Privacy.of(ledger, world.coalition), accuracy=accuracy
            )
    accessed = points_accessed(world, CURATOR)
    m = len(setup.validation)
    p = len(out.points)
    details = {
        "dataset": setup.name,
        "owners": cfg.owners,
        "summary_size": cfg.summary_size,
        "epochs": out.epochs,
        "validation_points": m,
        "seed_points": len(setup.seed[0]),
        "owner_points": [len(xk) for xk, _ in setup.owners],
        "points_accessed": accessed + m,
        "owner_points_accessed": accessed,
        "k13_bound": cfg.owners ** (1 / 3) * max(p, 1),
        "accessed_per_summary_point": accessed / max(p, 1),
        "parsimony_ratio": (accessed + m) / max(p + m, 1),
        "auction": cfg.auction,
        "expected_asks_per_epoch": expected_asks(cfg.owners, cfg.auction_epsilon, cfg.auction),
        "nobody_asked_per_epoch": nobody_asked(cfg.owners, cfg.auction_epsilon, cfg.auction),
        "parsimony_bound": parsimony_bound(
            cfg.owners, cfg.auction_epsilon, out.epochs, cfg.tau, cfg.auction
        ),
        "asks": sum(out.asks),
        "empty_epochs": out.empty,
        "rejected_points": out.rejected,
        "dropped_owners": list(dict.fromkeys(out.dropped)),
        "per_party": cost_by_party(world),
        "composition": accounting.composition_figures(cfg, out.epochs),
    }
    return RunResult.of_world(
        scenario,
        seed,
        world,
        ledger,
        holders=owners,
        included=sorted({s for s, _ in out.picks}),
        abort=None
        if released
        else Abort(
            reason="no_data",
            detail="the curator received no owner's point (every owner absent, or its "
            "messages lost): the summary would be empty",
        )
        if no_data
        else Abort(reason=out.status, detail=out.detail),
        privacy={
            "trusted": "the curator (it holds D_v and every collected point)",
            "epsilon_summary": cfg.summary_epsilon,
            "auction": cfg.auction,
            "auction_epoch": list(accounting.auction_epoch(cfg)),
        },
        accuracy=accuracy,
        output_party=CURATOR,
        exposure=exposure(world, owners, out.picks, out.epochs, cfg.auction),
        methods=methods,
        details=details,
        started=started,
    )
