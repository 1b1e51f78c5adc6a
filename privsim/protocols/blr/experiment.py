"""One BLR replication: every chosen method on the same train/test split, side by side.

``run_blr(scenario, seed)`` is a pure function of its inputs. The split, the auxiliary
threshold search and every method's noise come from streams of ``seed`` named by method
and purpose; the data table itself (and the synthetic default) depends only on the
scenario. The distributed methods are simulated on the bus — DDP as one DCA round
(:mod:`privsim.kit.securesum.round`), proj DDP as Algorithm 2's two rounds — with the
scenario's network, faults and coalition (the same realised faults and coalition for
both). Central methods compute the same releases as a trusted curator would.

Privacy: every method has its own ledger (the methods are alternative releases of the
same data, not a composition). Each release is charged as a ``dp_accounting`` event with
the parties it trusts — nobody (input perturbation), the curator (TA, proj TA), not all
compute nodes colluding (DDP, proj DDP, whose noise comes in shares from the honest
included clients) — and the ledger refuses a method whose composition exceeds (ε, δ)
(unless the scenario allows overspending). NP and proj NP are labelled non-private
baselines. A method's reported ε is what its ledger computes against the realised
coalition.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.data.registry import (
    DATA_DIR_ENV,
    DataError,
    DataFormatError,
    load_csv,
    load_dataset,
)
from privsim.kit.result import (
    Abort,
    Coalition,
    Communication,
    MethodResult,
    Parties,
    Privacy,
    RunResult,
    Timing,
)
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.maths import client_noise_std
from privsim.kit.securesum.outcome import SumOutcome
from privsim.kit.world import agree_channels, build_world, no_data_reason
from privsim.protocols.blr import behaviours as blr
from privsim.protocols.blr.attacks import reconstruct_record, reconstruction_error
from privsim.protocols.blr.config import BlrConfig
from privsim.protocols.blr.maths import (
    marginal_std,
    moment_sensitivity,
    project,
    statistics_sensitivity,
)
from privsim.protocols.blr.messages import MOMENT_KINDS, STATISTIC_KINDS
from privsim.protocols.blr.regression import (
    RegressionSplit,
    fit,
    mean_absolute_error,
    moment_release,
    projection_bounds,
    scale_to_bounds,
    scale_to_range,
    split,
    statistic_release,
)
from privsim.protocols.blr.search import ThresholdChoice, ThresholdGrid, search_thresholds
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma, split_gaussian
from privsim.sim.ledger import BudgetExceededError, PrivacyLedger, Trust
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["check_data", "load_table", "prepare", "run_blr", "scaling"]

F64 = npt.NDArray[np.float64]

OUTPUT_PARTY = securesum.OUTPUT_PARTY
#: The methods simulated on the bus, each in its own world.
DISTRIBUTED = ("DDP", "proj_DDP")
#: How the run's privacy section reads: the methods are alternatives, not a composition.
RUN_NOTION = (
    "per method: the weakest private method's guarantee; non-private methods are labelled baselines"
)
CURATOR = Trust.each(OUTPUT_PARTY, description="the curator honest")


def _config(scenario: Scenario) -> BlrConfig:
    return scenario.table("blr", BlrConfig)


def _tolerated(scenario: Scenario) -> int:
    return scenario.table("dca", DcaConfig).tolerated


def load_table(scenario: Scenario) -> tuple[str, F64, F64]:
    """The raw (X, y) of the scenario's data set, before scaling. The synthetic data
    follow the model: β ~ N(0, λ₀⁻¹ I), x ~ N(0, I), y = xᵀβ + e with e ~ N(0, λ⁻¹)."""
    cfg = _config(scenario)
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
    """Fail early, naming the field, if the data set cannot be read (missing file or
    directory, not UTF-8 text, empty, a column missing, non-numeric or not finite) or
    holds fewer records than train + test."""
    cfg = _config(scenario)
    field = "blr.csv_path" if cfg.dataset == "csv" else "blr.dataset"
    try:
        _, x, _ = load_table(scenario)
    except (DataError, DataFormatError) as exc:
        fix = (
            "correct the file or the columns (blr.features, blr.target)"
            if cfg.dataset == "csv"
            else f"put the data set's files in ${DATA_DIR_ENV}, or use 'synthetic'"
        )
        raise FieldError(field, str(exc), fix) from None
    test = cfg.test
    need = scenario.population.clients + test
    if need > x.shape[0]:
        raise FieldError(
            "population.clients",
            f"{scenario.population.clients} training + {test} test records requested but "
            f"the data set has {x.shape[0]}",
            "lower population.clients or blr.test",
        )


def scaling(cfg: BlrConfig) -> dict[str, str]:
    """How the features' and the target's scale was set: ``"range"`` (a built-in data
    set, centred and scaled to ``range_length`` by its own statistics, §4), ``"bounds"``
    (a CSV column mapped from its public bounds) or ``"none"`` (a CSV column as given)."""
    if cfg.dataset != "csv":
        return {"features": "range", "target": "range"}
    return {
        "features": "bounds" if cfg.feature_bounds else "none",
        "target": "bounds" if cfg.target_bounds is not None else "none",
    }


def prepare(scenario: Scenario, seed: int) -> tuple[str, RegressionSplit]:
    """Load and scale, then draw this replication's split. A built-in data set is
    centred and scaled to ``range_length`` (§4); a user's CSV is mapped from the public
    bounds given (``blr.feature_bounds``, ``blr.target_bounds``) or used as given,
    never scaled by its own statistics."""
    cfg = _config(scenario)
    name, x, y = load_table(scenario)
    if cfg.dataset == "csv":
        x, y = scale_to_bounds(x, y, cfg.feature_bounds, cfg.target_bounds, cfg.range_length)
    else:
        x, y = scale_to_range(x, y, cfg.range_length)
    n_train = scenario.population.clients
    data = split(x, y, n_train, cfg.test, Streams(seed).generator("blr", "split"))
    return name, data


def _ledger(scenario: Scenario) -> PrivacyLedger:
    p = scenario.privacy
    return PrivacyLedger(p.epsilon, p.delta, on_overspend=p.on_overspend)


class _Budget:
    """Noise multipliers z = σ/Δ of the scenario's budget: whole, and split in two."""

    def __init__(self, scenario: Scenario) -> None:
        p, share = scenario.privacy, _config(scenario).std_share
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the ledger reports what classic delivers
            self.whole = gaussian_sigma(p.epsilon, p.delta, 1.0, p.calibration)
            self.moments, self.statistics = split_gaussian(
                p.epsilon, p.delta, (share, 1.0 - share), p.calibration
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    """What one method did, before its guarantee is computed against the coalition."""

    status: str
    ledger: PrivacyLedger
    mae: float | None = None
    abort: Abort | None = None
    details: dict[str, Any] = field(default_factory=dict)
    privacy_details: dict[str, Any] = field(default_factory=dict)
    world: World | None = None
    clients: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    included: tuple[str, ...] | None = None
    #: The released sum of the clients' statistics and the bounds its records were
    #: projected to (distributed methods), for the record-reconstruction attack.
    statistics: F64 | None = None
    bounds: F64 | None = None


def _refused(scenario: Scenario, exc: BudgetExceededError) -> _Run:
    """A method whose planned releases exceed the budget runs nothing and spends nothing."""
    return _Run(
        status="refused", ledger=_ledger(scenario), abort=Abort(reason="refused", detail=str(exc))
    )


def _central(
    method: str,
    scenario: Scenario,
    data: RegressionSplit,
    budget: _Budget,
    choice: ThresholdChoice | None,
    streams: Streams,
) -> _Run:
    """NP, proj NP, TA, proj TA or input perturbation, computed as a curator would
    (input perturbation: as every client adding the whole noise to its own statistics)."""
    cfg = _config(scenario)
    d = data.dimension
    assumed = np.full(d + 1, cfg.assumed_bound)
    x, y = data.x_train, data.y_train
    n = x.shape[0]
    rng = streams.generator("blr", method, "noise")
    ledger = _ledger(scenario)
    neighbour = scenario.privacy.neighbour
    details: dict[str, Any] = {}
    multipliers: dict[str, Any] = {}
    try:
        if method == "NP":
            ledger.non_private("statistics", "non-private baseline")
            released = statistic_release(x, y, np.full(d + 1, np.inf), 0.0, None)
        elif method == "proj_NP":
            assert choice is not None
            ledger.non_private("statistics", "non-private baseline")
            std = np.sqrt(np.mean(np.column_stack([x, y]) ** 2, axis=0))
            bounds = projection_bounds(std, choice.feature, choice.target, assumed)
            released = statistic_release(x, y, bounds, 0.0, None)
            details["bounds"] = bounds.tolist()
        elif method in ("TA", "input_perturbation"):
            # Input perturbation adds its noise where the data is: it trusts nobody.
            trust = CURATOR if method == "TA" else Trust.nobody()
            ledger.charge("statistics", dp_accounting.GaussianDpEvent(budget.whole), trust=trust)
            multipliers["noise_multiplier"] = budget.whole
            sens = statistics_sensitivity(assumed[:-1], cfg.assumed_bound, neighbour)
            # Input perturbation: every client adds the whole noise to its own statistics.
            copies = n if method == "input_perturbation" else 1
            released = statistic_release(
                x, y, assumed, math.sqrt(copies) * budget.whole * sens, rng
            )
        elif method == "proj_TA":
            assert choice is not None
            ledger.charge("moments", dp_accounting.GaussianDpEvent(budget.moments), trust=CURATOR)
            ledger.charge(
                "statistics", dp_accounting.GaussianDpEvent(budget.statistics), trust=CURATOR
            )
            multipliers["noise_multipliers"] = [budget.moments, budget.statistics]
            moments = moment_release(
                x, y, assumed, budget.moments * moment_sensitivity(assumed), rng
            )
            std = marginal_std(moments, n, cfg.variance_floor)
            bounds = projection_bounds(std, choice.feature, choice.target, assumed)
            sens = statistics_sensitivity(bounds[:-1], float(bounds[-1]), neighbour)
            released = statistic_release(x, y, bounds, budget.statistics * sens, rng)
            details["bounds"] = bounds.tolist()
        else:
            raise ValueError(f"{method} is not a central method")
    except BudgetExceededError as exc:
        return _refused(scenario, exc)
    mean = fit(
        released, d, prior_precision=cfg.prior_precision, noise_precision=cfg.noise_precision
    )
    return _Run(
        status="released",
        ledger=ledger,
        mae=mean_absolute_error(mean, data),
        details=details,
        privacy_details=multipliers,
    )


def _world(scenario: Scenario, seed: int, n: int) -> tuple[World, tuple[str, ...], tuple[str, ...]]:
    """A world for one distributed method: ``n`` clients, the compute nodes and the
    aggregator, with the scenario's network, faults and coalition. Colluding compute
    nodes are allowed; the batched share delivery keeps no per-share view for them
    (the coalition's view is then incomplete, its privacy loss is not)."""
    clients = tuple(f"client-{i}" for i in range(n))
    nodes = securesum.node_names(scenario)
    world = build_world(scenario, Streams(seed), [*clients, *nodes, OUTPUT_PARTY])
    return world, clients, nodes


def _run_world(world: World) -> None:
    agree_channels(world, securesum.channel_pairs)
    world.run()


def _included(clients: tuple[str, ...], outcome: SumOutcome | None) -> tuple[str, ...] | None:
    if outcome is None or outcome.included is None:
        return None
    return tuple(clients[i] for i in np.flatnonzero(outcome.included))


def _sum_abort(outcome: SumOutcome) -> Abort:
    return Abort(reason=str(outcome.abort), detail=outcome.detail)


def _ddp(scenario: Scenario, seed: int, data: RegressionSplit, budget: _Budget) -> _Run:
    """DDP: the statistics of data clipped to the assumed bounds, one DCA round; each
    client adds σ/sqrt(N − T − 1) (Theorem 1)."""
    cfg = _config(scenario)
    d = data.dimension
    n = data.x_train.shape[0]
    assumed = np.full(d + 1, cfg.assumed_bound)
    sens = statistics_sensitivity(assumed[:-1], cfg.assumed_bound, scenario.privacy.neighbour)
    sigma = budget.whole * sens
    noise_std = client_noise_std(sigma, n, _tolerated(scenario))
    ledger = _ledger(scenario)
    clients = tuple(f"client-{i}" for i in range(n))
    try:
        securesum.charge(
            ledger,
            "statistics",
            event=dp_accounting.GaussianDpEvent(budget.whole),
            clients=clients,
            nodes=securesum.node_names(scenario),
            share_multiplier=noise_std / sens,
        )
    except BudgetExceededError as exc:
        return _refused(scenario, exc)
    securesum.check_fixed_point(scenario, n, cfg.assumed_bound**2, noise_std)
    world, clients, nodes = _world(scenario, seed, n)
    streams = world.streams
    records = blr.Records(data.x_train, data.y_train, assumed, "statistics")
    plan = securesum.plan(scenario, clients, nodes, records.dimension, noise_std, STATISTIC_KINDS)
    inputs = ClientInputs(
        data=records,
        noise=streams.keystream("blr", "DDP", "noise"),
        randomness=streams.keystream("blr", "DDP", "shares"),
        noise_std=noise_std,
        fraction_bits=plan.fraction_bits,
        n_nodes=len(nodes),
    )
    out = securesum.launch(world, plan, inputs, batched=True)
    _run_world(world)
    outcome = securesum.outcome_of(out)
    securesum.settle(ledger, "statistics", outcome, clients)
    run = _Run(
        status="aborted",
        ledger=ledger,
        world=world,
        clients=clients,
        nodes=nodes,
        privacy_details={"noise_multiplier": budget.whole, "client_noise_std": noise_std},
    )
    if outcome.released is None or outcome.included is None:
        return replace(run, abort=_sum_abort(outcome))
    mean = fit(
        outcome.released,
        data.dimension,
        prior_precision=cfg.prior_precision,
        noise_precision=cfg.noise_precision,
    )
    return replace(
        run,
        status="released",
        mae=mean_absolute_error(mean, data),
        included=_included(clients, outcome),
        details={"included": int(outcome.included.sum())},
        statistics=outcome.released,
        bounds=assumed,
    )


def _proj_ddp(
    scenario: Scenario,
    seed: int,
    data: RegressionSplit,
    budget: _Budget,
    choice: ThresholdChoice,
) -> _Run:
    """proj DDP: Algorithm 2 as two DCA rounds on the bus, 'moments' then 'statistics',
    each charged as a secure-sum release with Theorem 1's noise shares."""
    cfg = _config(scenario)
    d = data.dimension
    n = data.x_train.shape[0]
    tolerated = _tolerated(scenario)
    neighbour = scenario.privacy.neighbour
    assumed = np.full(d + 1, cfg.assumed_bound)
    moment_sens = moment_sensitivity(assumed)
    moment_noise = client_noise_std(budget.moments * moment_sens, n, tolerated)
    ledger = _ledger(scenario)
    clients = tuple(f"client-{i}" for i in range(n))
    nodes = securesum.node_names(scenario)
    try:
        securesum.charge(
            ledger,
            "moments",
            event=dp_accounting.GaussianDpEvent(budget.moments),
            clients=clients,
            nodes=nodes,
            share_multiplier=moment_noise / moment_sens,
        )
        # Round 2's σ₂ = z₂·Δ₂ follows from the published bounds, but each share's
        # multiplier σ₂/(Δ₂·sqrt(N − T − 1)) does not depend on them.
        securesum.charge(
            ledger,
            "statistics",
            event=dp_accounting.GaussianDpEvent(budget.statistics),
            clients=clients,
            nodes=nodes,
            share_multiplier=client_noise_std(budget.statistics, n, tolerated),
        )
    except BudgetExceededError as exc:
        return _refused(scenario, exc)
    securesum.check_fixed_point(scenario, n, cfg.assumed_bound**2, moment_noise)
    securesum.check_fixed_point(
        scenario,
        n,
        cfg.assumed_bound**2,
        client_noise_std(
            budget.statistics * statistics_sensitivity(assumed[:-1], cfg.assumed_bound, neighbour),
            n,
            tolerated,
        ),
    )
    world, clients, nodes = _world(scenario, seed, n)
    plan = blr.ProjectionPlan(
        moments=securesum.plan(scenario, clients, nodes, d + 1, moment_noise, MOMENT_KINDS),
        statistics=securesum.plan(
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
    run = _Run(
        status="aborted",
        ledger=ledger,
        world=world,
        clients=clients,
        nodes=nodes,
        privacy_details={"noise_multipliers": [budget.moments, budget.statistics]},
    )
    if not isinstance(result, blr.ProjectionOutcome):
        ledger.withhold("moments")
        ledger.withhold("statistics")
        crashed = Abort(reason="sums_missing", detail=f"{OUTPUT_PARTY} crashed or never finished")
        return replace(run, abort=crashed)
    securesum.settle(ledger, "moments", result.moments, clients)
    securesum.settle(ledger, "statistics", result.statistics, clients)
    stats = result.statistics
    if stats is None or stats.released is None or result.bounds is None:
        return replace(run, abort=_sum_abort(stats if stats is not None else result.moments))
    assert stats.included is not None and result.moments.included is not None
    mean = fit(
        stats.released, d, prior_precision=cfg.prior_precision, noise_precision=cfg.noise_precision
    )
    return replace(
        run,
        status="released",
        mae=mean_absolute_error(mean, data),
        included=_included(clients, stats),
        statistics=stats.released,
        bounds=result.bounds,
        details={
            "included": int(stats.included.sum()),
            "included_round1": int(result.moments.included.sum()),
            "bounds": result.bounds.tolist(),
        },
    )


def _search(
    scenario: Scenario, data: RegressionSplit, budget: _Budget, seed: int
) -> ThresholdChoice:
    """One auxiliary search per replication serves every projected method, at the noise
    level of round 2 as released: σ₂ times sqrt(N/(N − T − 1)) when the distributed
    method runs (Theorem 1 scaling), σ₂ otherwise."""
    cfg = _config(scenario)
    n = data.x_train.shape[0]
    z = budget.statistics
    if "proj_DDP" in cfg.methods:
        z *= math.sqrt(n / (n - _tolerated(scenario) - 1))
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


def _view_complete(world: World, nodes: Collection[str]) -> bool:
    """Batched delivery keeps no per-share view for colluding compute nodes."""
    return not any(node in world.coalition for node in nodes)


def _method_result(run: _Run, coalition: Collection[str], wall_seconds: float) -> MethodResult:
    world = run.world
    return MethodResult(
        status=run.status,
        privacy=Privacy.of(run.ledger, coalition, **run.privacy_details),
        abort=run.abort,
        accuracy=None if run.mae is None else {"mae": run.mae},
        communication=None
        if world is None
        else Communication.of_world(world, output_party=OUTPUT_PARTY),
        details=run.details,
        timing=Timing(
            wall_seconds=wall_seconds,
            key_agreement_seconds=0.0 if world is None else world.channels.key_agreement_seconds,
        ),
    )


def _exposure(run: _Run | None, data: RegressionSplit) -> dict[str, float | None]:
    """The record-reconstruction attack (:mod:`privsim.protocols.blr.attacks`) on a
    distributed method's released statistics: a coalition that knows every other
    included record (projected as the clients projected them) and its members' own
    noise shares estimates the first honest included client's (x, y). ``record_error``:
    ‖(x̂, ŷ) − (x, y)‖₂ up to sign; ``record_error_relative``: over ‖(x, y)‖₂. None when
    no distributed method released (or every included client colludes)."""
    empty: dict[str, float | None] = {"record_error": None, "record_error_relative": None}
    if run is None or run.world is None or run.statistics is None or run.bounds is None:
        return empty
    members = run.world.coalition
    included = run.included or ()
    honest = [c for c in included if c not in members]
    if not honest:
        return empty
    index = {c: i for i, c in enumerate(run.clients)}
    target = index[honest[0]]
    others = [index[c] for c in included if c != honest[0]]
    table = project(np.column_stack([data.x_train, data.y_train]), run.bounds)
    released = np.asarray(run.statistics, dtype=np.float64)
    view = run.world.coalition_view()
    noise_key = STATISTIC_KINDS.state_key("noise")
    for member in sorted(members):  # colluding clients subtract their own noise shares
        state = view.private.get(member, {})
        if member in index and member in included and noise_key in state:
            released = released - np.asarray(state[noise_key])
    x_hat, y_hat = reconstruct_record(released, table[others, :-1], table[others, -1])
    truth = table[target]
    error = reconstruction_error(x_hat, y_hat, truth[:-1], float(truth[-1]))
    norm = float(np.linalg.norm(truth))
    return {"record_error": error, "record_error_relative": error / norm if norm > 0 else None}


def run_blr(scenario: Scenario, seed: int | None = None) -> RunResult:
    """Every method of ``blr.methods`` on one split; see the module docstring."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    cfg = _config(scenario)
    name, data = prepare(scenario, seed)
    budget = _Budget(scenario)
    streams = Streams(seed)
    projected = any(m.startswith("proj") for m in cfg.methods)
    search_started = time.perf_counter()
    choice = _search(scenario, data, budget, seed) if projected else None
    search_seconds = time.perf_counter() - search_started
    runs: dict[str, _Run] = {}
    walls: dict[str, float] = {}
    # A curator who received no client's record has nothing to release: the central
    # methods abort when the bus methods could not have reached anyone either.
    clients = [f"client-{i}" for i in range(data.x_train.shape[0])]
    no_data = no_data_reason(scenario, seed, clients, OUTPUT_PARTY)
    for method in cfg.methods:
        t0 = time.perf_counter()
        if no_data and method not in DISTRIBUTED:
            abort = Abort(reason="no_data", detail=no_data)
            runs[method] = _Run(status="aborted", ledger=_ledger(scenario), abort=abort)
        elif method == "DDP":
            runs[method] = _ddp(scenario, seed, data, budget)
        elif method == "proj_DDP":
            assert choice is not None
            runs[method] = _proj_ddp(scenario, seed, data, budget, choice)
        else:
            runs[method] = _central(method, scenario, data, budget, choice, streams)
        walls[method] = time.perf_counter() - t0

    # The distributed methods' worlds share one realised coalition (same seed); the
    # central methods are judged against it too, or against the named servers.
    shown = next((m for m in reversed(DISTRIBUTED) if m in runs and runs[m].world), None)
    main = runs[shown] if shown is not None else None
    world = main.world if main is not None else None
    realised: Collection[str] = (
        world.coalition if world is not None else tuple(scenario.threat.colluding_servers)
    )
    methods = {
        m: _method_result(r, r.world.coalition if r.world is not None else realised, walls[m])
        for m, r in runs.items()
    }
    released = any(m.status == "released" for m in methods.values())
    if world is not None and main is not None:
        assert shown is not None
        communication = methods[shown].communication  # the shown method's, computed once
        parties = Parties.of_world(world, main.clients, main.included)
        coalition = Coalition.of_world(
            world, _exposure(main, data), view_complete=_view_complete(world, main.nodes)
        )
    else:
        communication, parties = None, None
        coalition = Coalition(
            members=tuple(sorted(scenario.threat.colluding_servers)),
            exposure=_exposure(None, data),
        )
    return RunResult(
        scenario_name=scenario.name,
        protocol="blr",
        seed=seed,
        root_entropy=streams.entropy,
        status="released" if released else "aborted",
        abort=None
        if released
        else Abort(
            reason="no_data" if no_data else "nothing_released",
            detail=(f"{no_data}; " if no_data else "")
            + "; ".join(f"{m}: {r.abort.reason}" for m, r in methods.items() if r.abort),
        ),
        privacy=Privacy.worst([m.privacy for m in methods.values()], notion=RUN_NOTION),
        accuracy=None,
        communication=communication,
        parties=parties,
        coalition=coalition,
        methods=methods,
        details={
            "dataset": {
                "name": name,
                "train": int(data.x_train.shape[0]),
                "test": int(data.x_test.shape[0]),
                "dimension": data.dimension,
                "scaling": scaling(cfg),
            },
            "thresholds": None
            if choice is None
            else {
                "feature": choice.feature,
                "target": choice.target,
                "search_seconds": search_seconds,
            },
            "noise_multiplier": budget.whole,
            "noise_multipliers_projected": [budget.moments, budget.statistics],
            "calibration": scenario.privacy.calibration,
            "traffic_of": shown,
        },
        timing=Timing(
            wall_seconds=time.perf_counter() - started,
            key_agreement_seconds=sum(
                r.world.channels.key_agreement_seconds for r in runs.values() if r.world
            ),
        ),
        scenario=scenario.to_dict(),
    )
