"""One distributed private-sketching replication: shards, owners' sketches, the release
on the bus by the scenario's mode, and its accuracy, privacy and cost."""

from __future__ import annotations

import math
import time
from typing import Any

import dp_accounting
import numpy as np

from privsim import __version__
from privsim.analysis.calibration import gaussian_sigma
from privsim.analysis.ledger import PrivacyLedger
from privsim.data.registry import load_dataset
from privsim.protocols.dca import behaviours as dca
from privsim.protocols.dca.maths import client_noise_std
from privsim.protocols.outcome import SumOutcome
from privsim.protocols.race.distributed import SketchShares, collector, owner
from privsim.protocols.race.lsh import L2Hash
from privsim.protocols.race.private import laplace_scale
from privsim.protocols.race.sketch import RaceSketch
from privsim.runner import (
    OUTPUT_PARTY,
    RunResult,
    _channel_pairs,
    build_world,
    check_fixed_point,
    dca_plan,
    realised_event,
    world_cost,
)
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams

__all__ = ["run_race"]


def _points(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    cfg = scenario.race
    if cfg.dataset == "skin":
        return load_dataset("skin").X
    centres = rng.uniform(0, 255, size=(8, 3))
    labels = rng.integers(0, 8, cfg.synthetic_records)
    return np.clip(centres[labels] + rng.normal(0, 15, (cfg.synthetic_records, 3)), 0, 255)


def run_race(scenario: Scenario, seed: int | None = None) -> RunResult:
    from privsim.scenarios.loader import scenario_to_dict

    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    cfg, priv = scenario.race, scenario.privacy
    streams = Streams(seed)
    rng = streams.generator("race", "data")
    points = _points(scenario, rng)
    order = rng.permutation(points.shape[0])
    queries = points[order[: cfg.queries]]
    shards = np.array_split(points[order[cfg.queries :]], cfg.owners)
    family = L2Hash.draw(cfg.rows, points.shape[1], cfg.bandwidth, streams.generator("race", "lsh"))
    counts = tuple(RaceSketch(family, cfg.width).add(s).counts for s in shards)
    size = cfg.rows * cfg.width
    owners = tuple(f"owner-{k}" for k in range(cfg.owners))
    b = laplace_scale(cfg.rows, priv.epsilon, priv.neighbour)
    ledger = PrivacyLedger(priv.epsilon, priv.delta, on_overspend=priv.on_overspend)
    nodes: tuple[str, ...] = ()
    if cfg.mode == "dca":
        nodes = tuple(f"compute-{k}" for k in range(scenario.population.compute_nodes))
    world = build_world(scenario, streams, [*owners, *nodes, OUTPUT_PARTY], with_nodes=bool(nodes))
    owner_agents = world.add_parties("client", owners)
    sensitivity = math.sqrt(cfg.rows) * (2.0 if priv.neighbour == "replace_one" else 1.0)
    noise_std = sigma = 0.0
    if cfg.mode in ("local", "curator"):
        event = dp_accounting.LaplaceDpEvent(1.0 / priv.epsilon)
        ledger.charge("sketch", event)
        for agent, c in zip(owner_agents, counts, strict=True):
            world.start(agent, owner(agent, c, b if cfg.mode == "local" else 0.0, OUTPUT_PARTY))
        out = world.add_party(OUTPUT_PARTY, "aggregator")
        world.start(
            out, collector(out, owners, size, cfg.timeout, b if cfg.mode == "curator" else 0.0)
        )
    else:
        tolerated = scenario.dca.tolerated
        if cfg.noise == "gaussian":
            sigma = gaussian_sigma(priv.epsilon, priv.delta, sensitivity, priv.calibration)
            noise_std = client_noise_std(sigma, cfg.owners, tolerated)
            ledger.charge("sketch", dp_accounting.GaussianDpEvent(sigma / sensitivity))
        else:
            ledger.charge("sketch", dp_accounting.LaplaceDpEvent(1.0 / priv.epsilon))
        check_fixed_point(scenario, cfg.owners, float(max(c.max() for c in counts)), 40 * b)
        plan = dca_plan(scenario, owners, nodes, size, noise_std)
        inputs = SketchShares(
            counts=counts,
            noise=cfg.noise,
            noise_std=noise_std,
            laplace_scale=b,
            parts=max(1, cfg.owners - tolerated),
            randomness=streams.keystream("race", "shares"),
            seed_rngs=tuple(streams.generator("race", o, "noise") for o in owners),
            fraction_bits=plan.fraction_bits,
            n_nodes=len(nodes),
        )
        for agent in owner_agents:
            world.start(agent, dca.client(agent, inputs, plan))  # type: ignore[arg-type]
        for node in nodes:
            agent = world.add_party(node, "compute")
            world.start(agent, dca.compute_node(agent, plan))
        out = world.add_party(OUTPUT_PARTY, "aggregator")
        world.start(out, dca.aggregator(out, plan))
    if world.bus.encrypt:
        pairs = _channel_pairs(world) if nodes else [(o, OUTPUT_PARTY) for o in owners]
        world.channels.agree(pairs)
    world.run()

    released: np.ndarray | None = None
    included: np.ndarray | None = None
    if isinstance(out.result, SumOutcome):
        released, included = out.result.released, out.result.included
        if cfg.noise == "gaussian":
            ledger.settle(
                "sketch",
                realised_event(
                    "dca", out.result, world, owners, nodes, noise_std, sigma, sensitivity
                ),
            )
        elif included is not None:
            honest = sum(1 for i in np.flatnonzero(included) if owners[i] not in world.coalition)
            if honest < cfg.owners - scenario.dca.tolerated:  # fewer Gamma shares than Lap(b) needs
                ledger.settle("sketch", dp_accounting.NonPrivateDpEvent())
    elif isinstance(out.result, tuple):
        released, included = out.result
    reference = RaceSketch(family, cfg.width)
    result: dict[str, Any] = {
        "privsim_version": __version__,
        "scenario_name": scenario.name,
        "seed": seed,
        "protocol": "race",
        "mode": cfg.mode,
        "status": "released" if released is not None else "aborted",
        "owners": cfg.owners,
        "accuracy": None,
    }
    if released is not None and included is not None:
        reference.counts = sum(
            (counts[i] for i in np.flatnonzero(included)), np.zeros((cfg.rows, cfg.width))
        )
        private = RaceSketch(family, cfg.width)
        private.counts = np.asarray(released, dtype=np.float64).reshape(cfg.rows, cfg.width)
        truth = reference.query(queries) / max(reference.total, 1.0)
        est = private.query(queries) / max(reference.total, 1.0)
        ok = truth > 0
        result["accuracy"] = {
            "mre_vs_nonprivate_sketch": float(np.mean(np.abs(est[ok] - truth[ok]) / truth[ok])),
            "noise_sd_per_cell": float(np.std(private.counts - reference.counts)),
            "included": int(included.sum()),
        }
    cost = world_cost(world)
    roles = {role: {k: getattr(rc, k) for k in rc.__slots__} for role, rc in cost.roles.items()}
    eps = ledger.epsilon()
    result["privacy"] = {
        "target_epsilon": priv.epsilon,
        "delta": priv.delta if cfg.noise == "gaussian" and cfg.mode == "dca" else 0.0,
        "achieved_epsilon": eps if math.isfinite(eps) else "inf",
        "guarantee_met": ledger.within_budget,
        "laplace_scale": b,
    }
    result["communication"] = {
        "messages": cost.messages,
        "bytes": cost.bytes,
        "bytes_per_owner": roles.get("client", {}).get("bytes_sent_mean"),
        "rounds": cost.rounds,
    }
    result["wall_seconds"] = time.perf_counter() - started
    result["scenario"] = scenario_to_dict(scenario)
    return RunResult(data=result)
