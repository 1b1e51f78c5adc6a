"""The scenario schema: one frozen dataclass per TOML table, validated on construction.

Engine objects (latency models, :class:`~privsim.sim.network.LinkSpec`,
:class:`~privsim.sim.network.LinkOverride`, :class:`~privsim.sim.faults.FaultSpec`) are
used directly, so a scenario and the engine cannot drift apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from privsim.sim.faults import FaultSpec
from privsim.sim.latency import LogNormalLatency
from privsim.sim.network import LinkOverride, LinkSpec

__all__ = [
    "BLR_METHODS",
    "BcdConfig",
    "BlrConfig",
    "DataConfig",
    "DcaConfig",
    "FieldError",
    "NetworkConfig",
    "PopulationConfig",
    "PrivacyConfig",
    "RaceConfig",
    "Scenario",
    "ThreatConfig",
]


class FieldError(ValueError):
    """A field's value is invalid; ``field`` is its dotted path within the scenario."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        super().__init__(f"{field}: {problem}. Fix: {fix}")
        self.field = field
        self.problem = problem
        self.fix = fix


def _positive(path: str, value: float, unit: str = "") -> None:
    if not (value > 0 and math.isfinite(value)):
        raise FieldError(
            path, f"must be a finite number > 0{unit}, got {value!r}", "give a positive value"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PopulationConfig:
    """``clients`` data holders (N) and ``compute_nodes`` (M, DCA only)."""

    clients: int
    compute_nodes: int = 3

    def __post_init__(self) -> None:
        if self.clients < 2:
            raise FieldError(
                "population.clients", f"must be >= 2, got {self.clients}", "set clients = 2 or more"
            )
        if self.compute_nodes < 1:
            raise FieldError(
                "population.compute_nodes",
                f"must be >= 1, got {self.compute_nodes}",
                "set compute_nodes >= 2",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class DataConfig:
    """Each client's d-dimensional vector z_i. ``synthetic``: coordinates mean + scale·u
    with u standard normal (``distribution = "gaussian"``) or uniform with unit variance
    (``"uniform"``, cheaper at scale), then clipped by the client to L2 norm ``clip_norm``."""

    source: Literal["synthetic"] = "synthetic"
    distribution: Literal["gaussian", "uniform"] = "gaussian"
    dimension: int = 10
    clip_norm: float = 1.0
    mean: float = 0.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.dimension < 1:
            raise FieldError(
                "data.dimension", f"must be >= 1, got {self.dimension}", "set dimension >= 1"
            )
        _positive("data.clip_norm", self.clip_norm)
        if not self.scale >= 0:
            raise FieldError(
                "data.scale", f"must be >= 0, got {self.scale}", "give a non-negative scale"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkConfig:
    """Links (``link`` default, ``overrides`` per role or party), topology and channels."""

    link: LinkSpec = field(
        default_factory=lambda: LinkSpec(latency=LogNormalLatency(median=0.05, sigma=0.5))
    )
    overrides: tuple[LinkOverride, ...] = ()
    topology: Literal["complete", "star", "edges"] = "complete"
    star_center: str = ""
    edges: tuple[tuple[str, str], ...] = ()
    encryption: Literal["aes-gcm", "none"] = "aes-gcm"

    def __post_init__(self) -> None:
        if self.topology == "star" and not self.star_center:
            raise FieldError(
                "network.star_center",
                "a star topology needs its center",
                'name a party, e.g. star_center = "aggregator"',
            )
        if self.topology == "edges" and not self.edges:
            raise FieldError(
                "network.edges",
                "topology 'edges' needs a list of edges",
                'write edges = [["a", "b"], ...]',
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreatConfig:
    """The realised coalition: ``colluding_clients`` is a count T (drawn) or party ids;
    ``colluding_servers`` names compute nodes (``compute-0``…) or the ``aggregator``."""

    colluding_clients: int | tuple[str, ...] = 0
    colluding_servers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.colluding_clients, int) and self.colluding_clients < 0:
            raise FieldError(
                "threat.colluding_clients",
                f"must be >= 0, got {self.colluding_clients}",
                "give a count or a list of ids",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivacyConfig:
    """Budget and calibration of the Gaussian mechanism (see :mod:`privsim.analysis.calibration`)."""

    epsilon: float
    delta: float
    neighbour: Literal["replace_one", "add_remove"] = "replace_one"
    calibration: Literal["exact", "classic"] = "exact"
    on_overspend: Literal["refuse", "warn"] = "refuse"

    def __post_init__(self) -> None:
        _positive("privacy.epsilon", self.epsilon)
        if not 0 < self.delta < 1:
            raise FieldError(
                "privacy.delta", f"must be in (0, 1), got {self.delta}", "use e.g. delta = 1e-5"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class DcaConfig:
    """DCA parameters: ``tolerated`` is T of Theorem 1 (dropped-or-colluding clients the
    noise is scaled for); timeouts in simulated seconds; ``on_excess_dropout`` says
    what to do when more than T clients are missing. ``delivery`` chooses how client
    shares travel: ``per_message`` (one event per share), ``batched`` (one event per
    node, identical results, for large N) or ``auto`` (batched from 100 clients)."""

    tolerated: int = 0
    fraction_bits: int = 32
    share_timeout: float = 1.0
    agreement_timeout: float = 0.5
    sum_timeout: float = 0.5
    on_excess_dropout: Literal["abort", "release"] = "abort"
    delivery: Literal["auto", "per_message", "batched"] = "auto"

    def __post_init__(self) -> None:
        if self.tolerated < 0:
            raise FieldError("dca.tolerated", f"must be >= 0, got {self.tolerated}", "give T >= 0")
        if not 1 <= self.fraction_bits <= 52:
            raise FieldError(
                "dca.fraction_bits",
                f"must be in [1, 52], got {self.fraction_bits}",
                "use e.g. fraction_bits = 32",
            )
        for name in ("share_timeout", "agreement_timeout", "sum_timeout"):
            _positive(f"dca.{name}", getattr(self, name), " seconds")


#: Every BLR method, in the order they are reported.
BLR_METHODS = ("NP", "proj_NP", "TA", "proj_TA", "DDP", "proj_DDP", "input_perturbation")


@dataclass(frozen=True, slots=True, kw_only=True)
class BlrConfig:
    """DP Bayesian linear regression (protocol ``"blr"``, Heikkilä et al. 2017 §3.2–4).

    Each of ``population.clients`` training records is one client; ``test`` records are
    held out. ``dataset``: a registered data set (read from ``$PRIVSIM_DATA_DIR``),
    ``"csv"`` (``csv_path`` with ``features`` and ``target`` columns) or ``"synthetic"``
    (``synthetic_dimension`` features drawn from the model, no download). Every column
    is centred and scaled to a range of ``range_length``; clients clip to
    ±``assumed_bound``. ``std_share`` of the budget estimates the marginal stds for the
    projected methods; thresholds are searched on a ``grid_points``² grid over
    [``grid_low``, ``grid_high``] with ``grid_repeats`` auxiliary data sets.
    """

    dataset: str = "synthetic"
    csv_path: str = ""
    features: tuple[str, ...] = ()
    target: str = ""
    synthetic_dimension: int = 10
    synthetic_records: int = 4000
    test: int = 500
    methods: tuple[str, ...] = BLR_METHODS
    std_share: float = 0.3
    range_length: float = 10.0
    assumed_bound: float = 7.5
    prior_precision: float = 1.0
    noise_precision: float = 1.0
    variance_floor: float = 0.5
    grid_low: float = 0.1
    grid_high: float = 2.1
    grid_points: int = 20
    grid_repeats: int = 20
    bounds_timeout: float = 1.0

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in BLR_METHODS]
        if unknown or not self.methods:
            raise FieldError(
                "blr.methods",
                f"unknown method(s) {unknown}" if unknown else "no method given",
                f"choose from {list(BLR_METHODS)}",
            )
        if self.dataset == "csv" and not (self.csv_path and self.features and self.target):
            raise FieldError(
                "blr.csv_path",
                "dataset = 'csv' needs csv_path, features and target",
                'add csv_path = "data.csv", features = ["a", "b"], target = "y"',
            )
        if not 0 < self.std_share < 1:
            raise FieldError(
                "blr.std_share",
                f"must be in (0, 1), got {self.std_share}",
                "give the share of the budget for the marginal stds, e.g. 0.3",
            )
        for name in (
            "range_length",
            "assumed_bound",
            "prior_precision",
            "noise_precision",
            "variance_floor",
            "grid_low",
            "bounds_timeout",
        ):
            _positive(f"blr.{name}", getattr(self, name))
        if not self.grid_high > self.grid_low:
            raise FieldError(
                "blr.grid_high",
                f"must exceed grid_low = {self.grid_low}, got {self.grid_high}",
                "give an interval, e.g. grid_low = 0.1, grid_high = 2.1",
            )
        for name in ("grid_points", "grid_repeats", "test", "synthetic_dimension"):
            if getattr(self, name) < 1:
                raise FieldError(
                    f"blr.{name}", f"must be >= 1, got {getattr(self, name)}", "give 1 or more"
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class BcdConfig:
    """(DP) block coordinate descent on vertically partitioned data (protocol ``"bcd"``,
    de Jong et al. 2022). ``parties`` hold disjoint column blocks of the same records;
    party 0 holds the label. ``dataset``: ``"synthetic"`` (``records`` × ``predictors``
    standard normal, equicorrelated with ``correlation``; β ~ N(``beta_mean``,
    ``beta_sd``²); noise set for the population ``r_squared``), ``"forestfires"``,
    ``"garments"`` (registry, paper's preprocessing) or ``"csv"``. ``blocks`` names each
    party's columns for named data (default: the paper's split, or an even split).
    ``method``: ``"dp-bcd"`` (Algorithm 2) or ``"bcd"`` (Algorithm 1). ``stopping``:
    ``"iterations"`` (exactly ``iterations`` passes) or ``"convergence"`` (stop when a pass
    lowers ‖v‖² by at most ``convergence_bound``, at most ``iterations`` passes).
    ``step_budget``: ``"split"`` gives each step ε/(kT), as Algorithm 2 (the steps
    compose to ε); ``"whole"`` gives every step the whole ε (composing to kT·ε, which the
    ledger reports) — what the paper's synthetic numbers are consistent with.
    ``length_scale``: ``"proof"`` draws the perturbation's length with standard deviation
    ξ/√ε_step, the scale the privacy proof needs; ``"prose"`` uses the paper's prose,
    ξ/ε_step, which is *not* ε-DP (kept to test readings of the paper; the result says
    so). ``abort_rule = false`` publishes even when ‖v_out‖ > ξ, which voids the proof."""

    method: Literal["dp-bcd", "bcd"] = "dp-bcd"
    dataset: str = "synthetic"
    csv_path: str = ""
    features: tuple[str, ...] = ()
    target: str = ""
    blocks: tuple[tuple[str, ...], ...] = ()
    parties: int = 2
    records: int = 1000
    predictors: int = 9
    correlation: float = 0.3
    r_squared: float = 0.3
    beta_mean: float = 2.0
    beta_sd: float = 1.5
    iterations: int = 5
    gamma: float = 1.2
    step_budget: Literal["split", "whole"] = "split"
    length_scale: Literal["proof", "prose"] = "proof"
    abort_rule: bool = True
    stopping: Literal["iterations", "convergence"] = "iterations"
    convergence_bound: float = 0.0
    step_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.parties < 2:
            raise FieldError("bcd.parties", f"must be >= 2, got {self.parties}", "give 2 or more")
        if self.iterations < 1:
            raise FieldError(
                "bcd.iterations", f"must be >= 1, got {self.iterations}", "give T >= 1"
            )
        if not self.gamma > 1:
            raise FieldError(
                "bcd.gamma",
                f"must be > 1, got {self.gamma}",
                "give the allowed loss factor, e.g. 1.2",
            )
        if not 0 <= self.correlation < 1:
            raise FieldError(
                "bcd.correlation", f"must be in [0, 1), got {self.correlation}", "e.g. 0.3"
            )
        if not 0 < self.r_squared < 1:
            raise FieldError(
                "bcd.r_squared", f"must be in (0, 1), got {self.r_squared}", "e.g. 0.3"
            )
        if self.predictors < self.parties:
            raise FieldError(
                "bcd.predictors",
                f"{self.predictors} predictors cannot be split over {self.parties} parties",
                "give at least one predictor per party",
            )
        if self.blocks and len(self.blocks) != self.parties:
            raise FieldError(
                "bcd.blocks",
                f"{len(self.blocks)} blocks for {self.parties} parties",
                "give one list of columns per party",
            )
        if self.dataset == "csv" and not (self.csv_path and self.features and self.target):
            raise FieldError(
                "bcd.csv_path",
                "dataset = 'csv' needs csv_path, features and target",
                'add csv_path = "data.csv", features = ["a", "b"], target = "y"',
            )
        _positive("bcd.step_timeout", self.step_timeout)


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceConfig:
    """Distributed private RACE sketching (protocol ``"race"``, Coleman & Shrivastava
    2021): ``owners`` (K) data owners each sketch a shard of ``dataset`` (``"skin"`` from
    the registry, or ``"synthetic"``: ``synthetic_records`` points in [0, 255]³) with
    ``rows`` × ``width`` counts under shared L2 LSH functions of ``bandwidth``; the merged
    sketch is released by ``mode`` ``"local"`` (each owner adds Laplace), ``"dca"``
    (secure sum with distributed ``noise``: ``"laplace"`` as Gamma differences, pure ε, or
    ``"gaussian"``, (ε, δ)) or ``"curator"`` (a trusted curator adds Laplace). Accuracy:
    mean relative error of the normalised query on ``queries`` held-out points."""

    mode: Literal["local", "dca", "curator"] = "dca"
    noise: Literal["laplace", "gaussian"] = "laplace"
    dataset: Literal["skin", "synthetic"] = "synthetic"
    synthetic_records: int = 50_000
    owners: int = 10
    rows: int = 80
    width: int = 1000
    bandwidth: float = 5.0
    queries: int = 500
    timeout: float = 2.0

    def __post_init__(self) -> None:
        for name in ("owners", "rows", "width", "queries", "synthetic_records"):
            if getattr(self, name) < 1:
                raise FieldError(
                    f"race.{name}", f"must be >= 1, got {getattr(self, name)}", "give 1 or more"
                )
        _positive("race.bandwidth", self.bandwidth)
        _positive("race.timeout", self.timeout)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """A complete, validated scenario. Variants: ``dataclasses.replace`` or a sweep grid."""

    name: str
    population: PopulationConfig
    privacy: PrivacyConfig
    seed: int = 0
    protocol: Literal["dca", "trusted_aggregator", "blr", "bcd", "race"] = "dca"
    baseline: bool = True
    data: DataConfig = field(default_factory=DataConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    faults: FaultSpec = field(default_factory=FaultSpec)
    threat: ThreatConfig = field(default_factory=ThreatConfig)
    dca: DcaConfig = field(default_factory=DcaConfig)
    blr: BlrConfig = field(default_factory=BlrConfig)
    bcd: BcdConfig = field(default_factory=BcdConfig)
    race: RaceConfig = field(default_factory=RaceConfig)

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise FieldError(
                "seed", f"must be >= 0, got {self.seed}", "give a non-negative integer seed"
            )
        if self.protocol == "race" and self.population.clients != self.race.owners:
            raise FieldError(
                "population.clients",
                f"protocol 'race' has {self.race.owners} data owners (race.owners) but "
                f"population.clients = {self.population.clients}",
                f"set population.clients = {self.race.owners}: the owners are DCA's clients",
            )
        n, t = self.population.clients, self.dca.tolerated
        if n <= t + 1:
            raise FieldError(
                "dca.tolerated",
                f"N = {n} clients with T = {t} leaves N - T - 1 = {n - t - 1} honest clients to carry the "
                "noise (Theorem 1 needs N > T + 1)",
                f"lower dca.tolerated below {n - 1} or raise population.clients above {t + 1}",
            )
        if self.protocol in ("dca", "blr") and self.population.compute_nodes < 2:
            raise FieldError(
                "population.compute_nodes",
                "DCA needs at least 2 compute nodes (one node would see every input)",
                "set compute_nodes = 2 or more",
            )
        colluders = self.threat.colluding_clients
        if isinstance(colluders, int) and colluders > n:
            raise FieldError(
                "threat.colluding_clients",
                f"{colluders} colluding clients but only {n} clients",
                f"use at most {n}",
            )
