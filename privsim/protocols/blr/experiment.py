"""One BLR replication: every chosen method on the same train/test split, side by side.

``run_blr(scenario, seed)`` is a pure function of its inputs. The split, the auxiliary
threshold search and every method's noise come from streams of ``seed`` named by method
and purpose; the data table itself (and the synthetic default) depends only on the
scenario. The distributed methods are simulated on the bus — DDP as one DCA round,
proj DDP as Algorithm 2's two rounds — with the scenario's network, faults and coalition
(the same realised faults and coalition for both). Central methods compute the same
releases as a trusted curator would.

Privacy: every release records a ``dp_accounting`` event in the method's own ledger,
which refuses a method whose composition exceeds (ε, δ) (unless the scenario allows
overspending); distributed releases are settled with what the realised coalition and
dropouts leave (:func:`privsim.runner.realised_event`).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim import __version__
from privsim.analysis.calibration import gaussian_sigma, split_gaussian
from privsim.analysis.ledger import BudgetExceededError, PrivacyLedger
from privsim.data.registry import load_csv, load_dataset
from privsim.protocols.blr import behaviours as blr
from privsim.protocols.blr.maths import (
    marginal_std,
    moment_sensitivity,
    statistics_sensitivity,
)
from privsim.protocols.blr.messages import MOMENT_KINDS, STATISTIC_KINDS
from privsim.protocols.blr.regression import (
    RegressionSplit,
    fit,
    mean_absolute_error,
    moment_release,
    projection_bounds,
    scale_to_range,
    split,
    statistic_release,
)
from privsim.protocols.blr.search import ThresholdChoice, ThresholdGrid, search_thresholds
from privsim.protocols.dca import behaviours as dca
from privsim.protocols.dca.batched import ShareRound, client_population, compute_node_batched
from privsim.protocols.dca.inputs import ClientInputs
from privsim.protocols.dca.maths import client_noise_std
from privsim.protocols.outcome import SumOutcome
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
from privsim.scenarios.schema import BlrConfig, Scenario
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["check_data", "load_table", "prepare", "run_blr"]

F64 = npt.NDArray[np.float64]


def load_table(scenario: Scenario) -> tuple[str, F64, F64]:
    """The raw (X, y) of the scenario's data set, before scaling."""
    cfg = scenario.blr
    if cfg.dataset == "synthetic":
        rng = Streams(scenario.seed).generator("data", "blr-synthetic")
        d, n = cfg.synthetic_dimension, cfg.synthetic_records
        beta = rng.standard_normal(d) / math.sqrt(cfg.prior_precision)
        x = rng.standard_normal((n, d))
        y = x @ beta + rng.standard_normal(n) / math.sqrt(cfg.noise_precision)
        return "synthetic", x, y
    if cfg.dataset == "csv":
        table = load_csv(cfg.csv_path, features=cfg.features, target=cfg.target)
    else:
        table = load_dataset(cfg.dataset)
    return table.name, table.X, table.y


def check_data(scenario: Scenario) -> None:
    """Fail early if the data set is missing or smaller than train + test."""
    _, x, _ = load_table(scenario)
    need = scenario.population.clients + scenario.blr.test
    if need > x.shape[0]:
        raise ValueError(
            f"blr: {scenario.population.clients} training + {scenario.blr.test} test records "
            f"requested but the data set has {x.shape[0]}; lower population.clients or blr.test"
        )


def prepare(scenario: Scenario, seed: int) -> tuple[str, RegressionSplit]:
    """Load, centre and scale (§4), then draw this replication's split."""
    name, x, y = load_table(scenario)
    x, y = scale_to_range(x, y, scenario.blr.range_length)
    n_train = scenario.population.clients
    data = split(x, y, n_train, scenario.blr.test, Streams(seed).generator("blr", "split"))
    return name, data


def _ledger(scenario: Scenario) -> PrivacyLedger:
    p = scenario.privacy
    return PrivacyLedger(p.epsilon, p.delta, on_overspend=p.on_overspend)


def _privacy(ledger: PrivacyLedger) -> dict[str, Any]:
    eps = ledger.epsilon()
    return {
        "epsilon": eps if math.isfinite(eps) else "inf",
        "guarantee_met": ledger.within_budget,
    }


def _refused(exc: BudgetExceededError) -> dict[str, Any]:
    """A method whose planned releases exceed the budget runs nothing and spends nothing."""
    return {
        "status": "refused",
        "detail": str(exc),
        "mae": None,
        "epsilon": 0.0,
        "guarantee_met": True,
    }


class _Budget:
    """Noise multipliers z = σ/Δ of the scenario's budget: whole, and split in two."""

    def __init__(self, scenario: Scenario) -> None:
        p, share = scenario.privacy, scenario.blr.std_share
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the ledger reports what classic delivers
            self.whole = gaussian_sigma(p.epsilon, p.delta, 1.0, p.calibration)
            self.moments, self.statistics = split_gaussian(
                p.epsilon, p.delta, (share, 1.0 - share), p.calibration
            )


def _central(
    method: str,
    scenario: Scenario,
    data: RegressionSplit,
    budget: _Budget,
    choice: ThresholdChoice | None,
    streams: Streams,
) -> dict[str, Any]:
    cfg = scenario.blr
    d = data.dimension
    assumed = np.full(d + 1, cfg.assumed_bound)
    x, y = data.x_train, data.y_train
    n = x.shape[0]
    rng = streams.generator("blr", method, "noise")
    ledger = _ledger(scenario)
    neighbour = scenario.privacy.neighbour
    out: dict[str, Any] = {}
    try:
        if method == "NP":
            released = statistic_release(x, y, np.full(d + 1, np.inf), 0.0, None)
        elif method == "proj_NP":
            assert choice is not None
            std = np.sqrt(np.mean(np.column_stack([x, y]) ** 2, axis=0))
            bounds = projection_bounds(std, choice.feature, choice.target, assumed)
            released = statistic_release(x, y, bounds, 0.0, None)
            out["bounds"] = bounds.tolist()
        elif method in ("TA", "input_perturbation"):
            ledger.charge("statistics", dp_accounting.GaussianDpEvent(budget.whole))
            sens = statistics_sensitivity(assumed[:-1], cfg.assumed_bound, neighbour)
            # Input perturbation: every client adds the whole noise to its own statistics.
            copies = n if method == "input_perturbation" else 1
            released = statistic_release(
                x, y, assumed, math.sqrt(copies) * budget.whole * sens, rng
            )
        elif method == "proj_TA":
            assert choice is not None
            ledger.charge("moments", dp_accounting.GaussianDpEvent(budget.moments))
            ledger.charge("statistics", dp_accounting.GaussianDpEvent(budget.statistics))
            moments = moment_release(
                x, y, assumed, budget.moments * moment_sensitivity(assumed), rng
            )
            std = marginal_std(moments, n, cfg.variance_floor)
            bounds = projection_bounds(std, choice.feature, choice.target, assumed)
            sens = statistics_sensitivity(bounds[:-1], float(bounds[-1]), neighbour)
            released = statistic_release(x, y, bounds, budget.statistics * sens, rng)
            out["bounds"] = bounds.tolist()
        else:
            raise ValueError(f"{method} is not a central method")
    except BudgetExceededError as exc:
        return _refused(exc)
    mean = fit(
        released, d, prior_precision=cfg.prior_precision, noise_precision=cfg.noise_precision
    )
    privacy = (
        {"epsilon": "inf", "guarantee_met": False}  # no noise at all: not private
        if method in ("NP", "proj_NP")
        else _privacy(ledger)
    )
    return {"status": "released", "mae": mean_absolute_error(mean, data), **privacy, **out}


def _world(scenario: Scenario, seed: int, n: int) -> tuple[World, tuple[str, ...], tuple[str, ...]]:
    if any(s.startswith("compute-") for s in scenario.threat.colluding_servers):
        raise ValueError(
            "protocol 'blr' delivers client shares in batches, which keep no per-share view "
            "for colluding compute nodes; name only the aggregator in threat.colluding_servers"
        )
    clients = tuple(f"client-{i}" for i in range(n))
    nodes = tuple(f"compute-{k}" for k in range(scenario.population.compute_nodes))
    world = build_world(scenario, Streams(seed), [*clients, *nodes, OUTPUT_PARTY], with_nodes=True)
    return world, clients, nodes


def _run_world(world: World) -> None:
    if world.bus.encrypt:
        world.channels.agree(_channel_pairs(world))
    world.run()


def _communication(world: World) -> dict[str, Any]:
    cost = world_cost(world)
    return {
        "messages": cost.messages,
        "bytes": cost.bytes,
        "rounds": cost.rounds,
        "duration": world.agents[OUTPUT_PARTY].finished_at,
        "key_agreement_seconds": world.channels.key_agreement_seconds,
    }


def _ddp(scenario: Scenario, seed: int, data: RegressionSplit, budget: _Budget) -> dict[str, Any]:
    """DDP: the statistics of data clipped to the assumed bounds, one DCA round."""
    cfg = scenario.blr
    d = data.dimension
    n = data.x_train.shape[0]
    assumed = np.full(d + 1, cfg.assumed_bound)
    sens = statistics_sensitivity(assumed[:-1], cfg.assumed_bound, scenario.privacy.neighbour)
    sigma = budget.whole * sens
    ledger = _ledger(scenario)
    try:
        ledger.charge("statistics", dp_accounting.GaussianDpEvent(budget.whole))
    except BudgetExceededError as exc:
        return _refused(exc)
    noise_std = client_noise_std(sigma, n, scenario.dca.tolerated)
    check_fixed_point(scenario, n, cfg.assumed_bound**2, noise_std)
    world, clients, nodes = _world(scenario, seed, n)
    streams = world.streams
    records = blr.Records(data.x_train, data.y_train, assumed, "statistics")
    plan = dca_plan(scenario, clients, nodes, records.dimension, noise_std, STATISTIC_KINDS)
    inputs = ClientInputs(
        data=records,
        noise=streams.keystream("blr", "DDP", "noise"),
        randomness=streams.keystream("blr", "DDP", "shares"),
        noise_std=noise_std,
        fraction_bits=plan.fraction_bits,
        n_nodes=len(nodes),
    )
    world.add_parties("client", clients)
    shares = ShareRound(world, plan, inputs)
    world.start_group("clients", client_population(world, plan, inputs))
    for node in nodes:
        world.start(
            world.add_party(node, "compute"), compute_node_batched(world.agents[node], plan, shares)
        )
    out = world.add_party(OUTPUT_PARTY, "aggregator")
    world.start(out, dca.aggregator(out, plan))
    _run_world(world)
    outcome = out.result if isinstance(out.result, SumOutcome) else None
    return _finish_ddp(
        scenario, world, ledger, data, outcome, clients, nodes, noise_std, sigma, sens
    )


def _finish_ddp(
    scenario: Scenario,
    world: World,
    ledger: PrivacyLedger,
    data: RegressionSplit,
    outcome: SumOutcome | None,
    clients: tuple[str, ...],
    nodes: tuple[str, ...],
    noise_std: float,
    sigma: float,
    sens: float,
) -> dict[str, Any]:
    cfg = scenario.blr
    result: dict[str, Any] = {"communication": _communication(world)}
    if outcome is None or outcome.released is None:
        ledger.settle("statistics", dp_accounting.NoOpDpEvent())
        reason = "aggregator crashed" if outcome is None else f"{outcome.abort}: {outcome.detail}"
        return {"status": "aborted", "detail": reason, "mae": None, **_privacy(ledger), **result}
    ledger.settle(
        "statistics",
        realised_event("dca", outcome, world, clients, nodes, noise_std, sigma, sens),
    )
    assert outcome.included is not None
    mean = fit(
        outcome.released,
        data.dimension,
        prior_precision=cfg.prior_precision,
        noise_precision=cfg.noise_precision,
    )
    return {
        "status": "released",
        "mae": mean_absolute_error(mean, data),
        "included": int(outcome.included.sum()),
        **_privacy(ledger),
        **result,
    }


def _proj_ddp(
    scenario: Scenario,
    seed: int,
    data: RegressionSplit,
    budget: _Budget,
    choice: ThresholdChoice,
) -> dict[str, Any]:
    """proj DDP: Algorithm 2 as two DCA rounds on the bus."""
    cfg = scenario.blr
    d = data.dimension
    n = data.x_train.shape[0]
    neighbour = scenario.privacy.neighbour
    assumed = np.full(d + 1, cfg.assumed_bound)
    ledger = _ledger(scenario)
    try:
        ledger.charge("moments", dp_accounting.GaussianDpEvent(budget.moments))
        ledger.charge("statistics", dp_accounting.GaussianDpEvent(budget.statistics))
    except BudgetExceededError as exc:
        return _refused(exc)
    moment_sens = moment_sensitivity(assumed)
    moment_sigma = budget.moments * moment_sens
    moment_noise = client_noise_std(moment_sigma, n, scenario.dca.tolerated)
    check_fixed_point(scenario, n, cfg.assumed_bound**2, moment_noise)
    check_fixed_point(
        scenario,
        n,
        cfg.assumed_bound**2,
        client_noise_std(
            budget.statistics * statistics_sensitivity(assumed[:-1], cfg.assumed_bound, neighbour),
            n,
            scenario.dca.tolerated,
        ),
    )
    world, clients, nodes = _world(scenario, seed, n)
    plan = blr.ProjectionPlan(
        moments=dca_plan(scenario, clients, nodes, d + 1, moment_noise, MOMENT_KINDS),
        statistics=dca_plan(
            scenario, clients, nodes, d * (d + 1) // 2 + d, math.nan, STATISTIC_KINDS
        ),
        assumed_bounds=assumed,
        feature_fraction=choice.feature,
        target_fraction=choice.target,
        variance_floor=cfg.variance_floor,
        statistic_multiplier=budget.statistics,
        bounds_timeout=cfg.bounds_timeout,
        neighbour=neighbour,
    )
    out = blr.launch_projected(world, plan, data.x_train, data.y_train, stream=("blr", "proj_DDP"))
    _run_world(world)
    result = out.result
    communication = _communication(world)
    if not isinstance(result, blr.ProjectionOutcome):
        ledger.settle("moments", dp_accounting.NoOpDpEvent())
        ledger.settle("statistics", dp_accounting.NoOpDpEvent())
        return {
            "status": "aborted",
            "detail": "aggregator crashed",
            "mae": None,
            **_privacy(ledger),
            "communication": communication,
        }
    ledger.settle(
        "moments",
        realised_event(
            "dca", result.moments, world, clients, nodes, moment_noise, moment_sigma, moment_sens
        ),
    )
    stats = result.statistics
    if stats is None or stats.released is None or result.bounds is None:
        ledger.settle("statistics", dp_accounting.NoOpDpEvent())
        failed = stats if stats is not None else result.moments
        return {
            "status": "aborted",
            "detail": f"{failed.abort}: {failed.detail}",
            "mae": None,
            **_privacy(ledger),
            "communication": communication,
        }
    bounds = result.bounds
    sens = statistics_sensitivity(bounds[:-1], float(bounds[-1]), neighbour)
    ledger.settle(
        "statistics",
        realised_event(
            "dca",
            stats,
            world,
            clients,
            nodes,
            plan.statistic_noise_std(bounds),
            budget.statistics * sens,
            sens,
        ),
    )
    assert stats.included is not None and result.moments.included is not None
    mean = fit(
        stats.released, d, prior_precision=cfg.prior_precision, noise_precision=cfg.noise_precision
    )
    return {
        "status": "released",
        "mae": mean_absolute_error(mean, data),
        "included": int(stats.included.sum()),
        "included_round1": int(result.moments.included.sum()),
        "bounds": bounds.tolist(),
        **_privacy(ledger),
        "communication": communication,
    }


def _search(
    scenario: Scenario, data: RegressionSplit, budget: _Budget, seed: int
) -> ThresholdChoice:
    """One auxiliary search per replication serves every projected method, at the noise
    level of round 2 as released: σ₂ times sqrt(N/(N − T − 1)) when the distributed
    method runs (Theorem 1 scaling), σ₂ otherwise."""
    cfg: BlrConfig = scenario.blr
    n = data.x_train.shape[0]
    z = budget.statistics
    if "proj_DDP" in cfg.methods:
        z *= math.sqrt(n / (n - scenario.dca.tolerated - 1))
    return search_thresholds(
        n,
        data.dimension,
        z,
        Streams(seed).generator("blr", "threshold-search"),
        grid=ThresholdGrid(
            low=cfg.grid_low, high=cfg.grid_high, points=cfg.grid_points, repeats=cfg.grid_repeats
        ),
        prior_precision=cfg.prior_precision,
        noise_precision=cfg.noise_precision,
        neighbour=scenario.privacy.neighbour,
    )


def run_blr(scenario: Scenario, seed: int | None = None) -> RunResult:
    """Every method of ``scenario.blr.methods`` on one split; see the module docstring."""
    from privsim.scenarios.loader import scenario_to_dict

    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    cfg = scenario.blr
    name, data = prepare(scenario, seed)
    budget = _Budget(scenario)
    streams = Streams(seed)
    projected = any(m.startswith("proj") for m in cfg.methods)
    search_started = time.perf_counter()
    choice = _search(scenario, data, budget, seed) if projected else None
    search_seconds = time.perf_counter() - search_started
    methods: dict[str, Any] = {}
    for method in cfg.methods:
        t0 = time.perf_counter()
        if method == "DDP":
            methods[method] = _ddp(scenario, seed, data, budget)
        elif method == "proj_DDP":
            assert choice is not None
            methods[method] = _proj_ddp(scenario, seed, data, budget, choice)
        else:
            methods[method] = _central(method, scenario, data, budget, choice, streams)
        methods[method]["wall_seconds"] = time.perf_counter() - t0
    released = [m for m in methods.values() if m["status"] == "released"]
    result: dict[str, Any] = {
        "privsim_version": __version__,
        "scenario_name": scenario.name,
        "seed": seed,
        "root_entropy": streams.entropy,
        "protocol": "blr",
        "status": "released" if released else "aborted",
        "dataset": {
            "name": name,
            "train": int(data.x_train.shape[0]),
            "test": int(data.x_test.shape[0]),
            "dimension": data.dimension,
        },
        "privacy": {
            "target_epsilon": scenario.privacy.epsilon,
            "delta": scenario.privacy.delta,
            "calibration": scenario.privacy.calibration,
            "noise_multiplier": budget.whole,
            "noise_multipliers_projected": [budget.moments, budget.statistics],
        },
        "thresholds": None
        if choice is None
        else {"feature": choice.feature, "target": choice.target, "search_seconds": search_seconds},
        "methods": methods,
        "wall_seconds": time.perf_counter() - started,
        "scenario": scenario_to_dict(scenario),
    }
    return RunResult(data=result)
