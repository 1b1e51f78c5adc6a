"""One (DP-)BCD replication on the bus: data, parties, publication, and what it cost.

``run_bcd(scenario, seed)`` is a pure function of its inputs: the data (synthetic draws
come from the seed; real data are fixed), each party's perturbations (its own stream) and
the network all derive from ``seed``.

Privacy. Each DP step spends ε_step = ε/(kT); the ledger composes the steps actually
taken by simple composition (Lemma 1) — the paper's accounting. The guarantee is the
paper's *locally sensitive* DP (Definition 2): it holds for the data set at hand against
its one-record removals, with ξ computed from the data themselves; it is not standard
(ε, δ)-DP over all neighbouring data sets, and the result says so.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from privsim import __version__
from privsim.protocols.bcd.behaviours import BcdOutcome, BcdPlan, party
from privsim.protocols.bcd.data import PartitionedData, load_partitioned
from privsim.protocols.bcd.maths import aapd, centralised_solution, r_squared, step_budget
from privsim.protocols.bcd.messages import Remainder
from privsim.runner import RunResult, build_world, world_cost
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["PRIVACY_NOTION", "run_bcd", "simulate_bcd"]

PRIVACY_NOTION = (
    "locally sensitive differential privacy (de Jong et al. 2022, Definition 2): the data "
    "set against its one-record removals, with simple composition over steps; not "
    "standard (epsilon, delta)-DP"
)


def simulate_bcd(scenario: Scenario, seed: int) -> tuple[World, PartitionedData, BcdPlan]:
    """Build and run the world; the coalition view holds the adversary's received
    remainders (the scenario's ``threat.colluding_servers``, e.g. ``["party-1"]``)."""
    cfg = scenario.bcd
    streams = Streams(seed)
    data = load_partitioned(cfg, streams.generator("data", "bcd"))
    names = tuple(f"party-{j}" for j in range(cfg.parties))
    dp = cfg.method == "dp-bcd"
    plan = BcdPlan(
        parties=names,
        iterations=cfg.iterations,
        gamma=cfg.gamma,
        step_epsilon=(
            scenario.privacy.epsilon
            if cfg.step_budget == "whole"
            else step_budget(scenario.privacy.epsilon, cfg.parties, cfg.iterations)
        )
        if dp
        else None,
        convergence_bound=cfg.convergence_bound if cfg.stopping == "convergence" else None,
        step_timeout=cfg.step_timeout,
        prose_scale=cfg.length_scale == "prose",
        abort_rule=cfg.abort_rule,
    )
    world = build_world(scenario, streams, list(names), with_nodes=True)
    agents = world.add_parties("party", names)
    for j, agent in enumerate(agents):
        world.start(agent, party(agent, j, data.block(j), data.y if j == 0 else None, plan))
    if world.bus.encrypt:
        world.channels.agree([(a, b) for i, a in enumerate(names) for b in names[i + 1 :]])
    world.run()
    return world, data, plan


def _beta(data: PartitionedData, published: dict[int, Any]) -> np.ndarray:
    beta = np.zeros(data.x.shape[1])
    for j, block in enumerate(data.blocks):
        beta[list(block)] = published[j]
    return beta


def run_bcd(scenario: Scenario, seed: int | None = None) -> RunResult:
    """One replication; see the module docstring."""
    from privsim.scenarios.loader import scenario_to_dict

    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    cfg = scenario.bcd
    world, data, plan = simulate_bcd(scenario, seed)
    outcomes = [world.agents[p].result for p in plan.parties]
    owner = outcomes[0]
    central = centralised_solution(data.x, data.y)
    r2_central = r_squared(data.y, data.x @ central)
    published = all(isinstance(o, BcdOutcome) and o.status == "published" for o in outcomes)
    steps = sum(o.steps for o in outcomes if isinstance(o, BcdOutcome))
    step_eps = plan.step_epsilon or 0.0
    result: dict[str, Any] = {
        "privsim_version": __version__,
        "scenario_name": scenario.name,
        "seed": seed,
        "root_entropy": world.streams.entropy,
        "protocol": "bcd",
        "method": cfg.method,
        "status": "released" if published else "aborted",
        "abort": None,
        "dataset": {
            "name": data.name,
            "records": int(data.x.shape[0]),
            "predictors": int(data.x.shape[1]),
            "columns": list(data.columns),
            "blocks": [[data.columns[i] for i in b] for b in data.blocks],
        },
        "accuracy": None,
        "iterations": owner.iterations if isinstance(owner, BcdOutcome) else 0,
        "steps": steps,
        "privacy": {
            "notion": (
                "none (BCD)"
                if plan.step_epsilon is None
                else PRIVACY_NOTION
                if cfg.length_scale == "proof" and cfg.abort_rule
                else "NOT a valid guarantee: "
                + ("the prose's length scale ξ/ε; " if cfg.length_scale == "prose" else "")
                + ("abort rule off; " if not cfg.abort_rule else "")
                + "kept only to test readings of the paper"
            ),
            "target_epsilon": scenario.privacy.epsilon if plan.step_epsilon else None,
            "epsilon_per_step": plan.step_epsilon,
            "epsilon_spent": steps * step_eps if plan.step_epsilon is not None else "inf",
            "epsilon_per_party": {
                p: o.steps * step_eps
                for p, o in zip(plan.parties, outcomes, strict=True)
                if isinstance(o, BcdOutcome)
            },
        },
        "reference": {"r2_central": r2_central, "beta_central": central.tolist()},
    }
    last = outcomes[-1]
    if isinstance(last, BcdOutcome):  # the remainder after each full pass is y − Xβ_t
        sst = float(np.sum((data.y - data.y.mean()) ** 2))
        result["r2_by_iteration"] = [1.0 - r**2 / sst for r in last.remainders]
    if published:
        beta = _beta(data, owner.published)
        result["accuracy"] = {
            "r2": r_squared(data.y, data.x @ beta),
            "r2_central": r2_central,
            "aapd": aapd(beta, central),
            "beta_abs_error": float(np.mean(np.abs(beta - central))),
            "beta": beta.tolist(),
        }
    else:
        reasons = [
            o.detail for o in outcomes if isinstance(o, BcdOutcome) and o.status != "published"
        ]
        result["abort"] = {"reason": "aborted", "detail": "; ".join(r for r in reasons if r)}
    cost = world_cost(world)
    view = world.coalition_view()
    result["communication"] = {
        "messages": cost.messages,
        "bytes": cost.bytes,
        "rounds": cost.rounds,
        "duration": max((a.finished_at or 0.0) for a in world.agents.values()),
    }
    result["adversary_view"] = {
        "members": sorted(view.members),
        "remainders_received": sum(
            1
            for m in view.messages_of(Remainder)
            if m.dst in view.members and m.src not in view.members
        ),
    }
    result["xi"] = {
        p: o.xis for p, o in zip(plan.parties, outcomes, strict=True) if isinstance(o, BcdOutcome)
    }
    result["wall_seconds"] = time.perf_counter() - started
    result["scenario"] = scenario_to_dict(scenario)
    return RunResult(data=result)
