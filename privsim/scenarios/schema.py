"""The scenario schema: the common tables every protocol shares, and the protocol's own.

A :class:`Scenario` is immutable data validated on construction. Its common tables
(population, privacy, network, faults, threat) are fields; every other table belongs to a
protocol, which declares it in the protocol registry (:mod:`privsim.registry`), and is
reached by name: ``scenario.dca``, ``scenario.blr`` or ``scenario.table("race")``. Engine
objects (latency models, :class:`~privsim.sim.network.LinkSpec`,
:class:`~privsim.sim.network.LinkOverride`, :class:`~privsim.sim.faults.FaultSpec`) are
used directly, so a scenario and the engine cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from privsim import registry
from privsim.scenarios.checks import check_footprint, check_numbers, check_parties
from privsim.scenarios.convert import from_plain, plain_fields, set_fields, to_plain
from privsim.scenarios.errors import FieldError, ScenarioError, require_positive
from privsim.sim.faults import FaultSpec
from privsim.sim.latency import LogNormalLatency
from privsim.sim.network import LinkOverride, LinkSpec

__all__ = [
    "SAFE_NAME",
    "FieldError",
    "NetworkConfig",
    "PopulationConfig",
    "PrivacyConfig",
    "Scenario",
    "ScenarioFields",
    "ThreatConfig",
    "check_safe_name",
]

T = TypeVar("T")

#: Largest privacy.epsilon accepted: e^ε already overflows a float far below it, and the
#: Gaussian calibration and the accountants cannot work with more.
MAX_EPSILON = 1e4

#: A scenario's or study's name becomes part of a file name (``NAME-seedS.json`` in
#: ``--out``): one path component of letters, digits, ``.``, ``_`` and ``-``, starting with
#: a letter or digit, at most 128 characters (no separators, no ``..``, never absolute).
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_safe_name(field: str, value: object) -> None:
    """``value`` must be a safe file name (:data:`SAFE_NAME`), else a :class:`FieldError`
    naming ``field`` (the value is shown shortened, never in full)."""
    if isinstance(value, str) and SAFE_NAME.fullmatch(value):
        return
    if isinstance(value, str):
        shown = repr(value) if len(value) <= 40 else f"{value[:32]!r}... ({len(value)} characters)"
    else:
        shown = type(value).__name__
    raise FieldError(
        field,
        f"{shown} is not a safe file name",
        "use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit "
        '(no / or \\), e.g. name = "my-scenario"',
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PopulationConfig:
    """``clients`` data holders (N) and ``compute_nodes`` (M, DCA only)."""

    clients: int
    """N, the number of clients (data holders; a protocol's owners or parties where it has them),
    at least 2."""
    compute_nodes: int = 3
    """M, the compute nodes of a DCA secure sum (DCA, and BLR and RACE when
    they sum through DCA)."""

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
class NetworkConfig:
    """Links (``link`` default, ``overrides`` per role or party), topology and channels."""

    link: LinkSpec = field(
        default_factory=lambda: LinkSpec(latency=LogNormalLatency(median=0.05, sigma=0.5))
    )
    """The default link of every directed pair of parties: latency model, uplink bandwidth and
    loss (the ``[network.link]`` table)."""
    overrides: tuple[LinkOverride, ...] = ()
    """Link parameters replaced for messages from a role or party to another
    (``[[network.overrides]]`` tables)."""
    topology: Literal["complete", "star", "edges"] = "complete"
    """``complete`` (every pair may talk), ``star`` (every message goes to or from
    ``star_center``) or ``edges`` (only the pairs in ``edges``); sending across a missing edge
    is an error."""
    star_center: str = ""
    """The party at the centre of a ``star`` topology, e.g. ``aggregator``."""
    edges: tuple[tuple[str, str], ...] = ()
    """The undirected edges of an ``edges`` topology, as pairs of party ids."""
    encryption: Literal["aes-gcm", "sized", "none"] = "aes-gcm"
    """``aes-gcm`` seals every message with AES-256-GCM under keys agreed by X25519 (wire sizes
    are ciphertext sizes); ``sized`` encrypts nothing and agrees no keys but charges every
    message the AES-GCM envelope (nonce and tag), so wire bytes, queueing and every simulated
    time are those of ``aes-gcm`` at a fraction of the wall time (for studies whose subject is
    not the channel's cryptography); ``none`` skips the cryptography and the envelope (28 bytes
    fewer per message). The cryptography itself changes no protocol result: ``sized`` gives
    ``aes-gcm``'s results and trace exactly."""

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
class PoisoningConfig:
    """Malicious clients in training (``threat.poisoning``): a ``share`` of the population,
    drawn from the run's streams, skip clipping and send a poisoned update."""

    share: float
    """The share of the population that is malicious, in [0, 1)."""
    kind: Literal["scale", "sign_flip", "replace"] = "scale"
    """``scale``: the honest update times ``factor``, unclipped; ``sign_flip``: its negative
    times ``factor``; ``replace``: model replacement (Bagdasaryan et al. 2020), the update that
    moves the global model to a chosen model, boosted by the planned cohort."""
    factor: float = 10.0
    """The boost of ``scale`` and ``sign_flip`` (> 0)."""

    def __post_init__(self) -> None:
        if not (isinstance(self.share, (int, float)) and 0.0 <= self.share < 1.0):
            raise FieldError(
                "threat.poisoning.share",
                f"must be in [0, 1), got {self.share!r}",
                "give the malicious share of the population, e.g. 0.05",
            )
        if not (math.isfinite(self.factor) and 0.0 < self.factor <= 1e6):
            raise FieldError(
                "threat.poisoning.factor",
                f"must be in (0, 1e6], got {self.factor!r}",
                "give the boost of the poisoned update, e.g. 10",
            )


TrainingAttackName = Literal[
    "reconstruction", "membership", "dropout_isolation", "model_inconsistency"
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreatConfig:
    """The realised coalition: ``colluding_clients`` is a count T (drawn) or party ids;
    ``colluding_servers`` names compute nodes (``compute-0``…) or the ``aggregator``."""

    colluding_clients: int | tuple[str, ...] = 0
    """The colluding clients: a count, the members drawn at random from the run's streams, or a
    list of party ids (``["client-3", ...]``)."""
    colluding_servers: tuple[str, ...] = ()
    """Colluding servers by party id: compute nodes (``compute-0``, ...), the ``aggregator``, a
    curator or a protocol's own server roles."""
    attack: TrainingAttackName | None = None
    """An attack on training mounted by the colluding servers (``fedlearn`` only):
    ``reconstruction`` and ``membership`` (passive), ``dropout_isolation`` and
    ``model_inconsistency`` (an active server); see the threat models' training page."""
    target: str | None = None
    """The client the active attacks isolate (default: one drawn from the run's streams)."""
    poisoning: PoisoningConfig | None = None
    """Malicious clients in training (``fedlearn`` only), e.g.
    ``{share = 0.1, kind = "scale"}``."""

    def __post_init__(self) -> None:
        if isinstance(self.colluding_clients, int) and self.colluding_clients < 0:
            raise FieldError(
                "threat.colluding_clients",
                f"must be >= 0, got {self.colluding_clients}",
                "give a count or a list of ids",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivacyConfig:
    """Budget (ε, δ), neighbour relation and Gaussian calibration (see
    :mod:`privsim.sim.calibration`). ``on_overspend``: a mechanism whose planned
    composition exceeds the budget is refused (``refuse``), or runs with a warning
    (``warn``) or silently (``allow``); ``privsim run`` exits nonzero when the achieved
    guarantee is not met unless this is ``allow`` (studies of attacks)."""

    epsilon: float
    """The target ε of the budget: mechanisms are calibrated to it and the ledger refuses a plan
    that exceeds it (at most 10⁴)."""
    delta: float
    """The target δ, in (0, 1); the achieved ε is reported at this δ."""
    neighbour: Literal["replace_one", "add_remove"] = "replace_one"
    """Neighbouring data sets: ``replace_one`` (one record replaced) or ``add_remove`` (one record
    added or removed); it sets the sensitivities."""
    calibration: Literal["exact", "classic"] = "exact"
    """Gaussian noise calibration: ``exact`` (the analytic Gaussian mechanism) or ``classic`` (σ =
    √(2 ln(1.25/δ))·Δ/ε, for paper-faithful reproductions; not a proven guarantee for ε ≥ 1)."""
    on_overspend: Literal["refuse", "warn", "allow"] = "refuse"
    """A mechanism whose planned composition exceeds the budget is refused (``refuse``: nothing
    runs, exit status 2), runs with a warning (``warn``) or runs silently (``allow``, for
    studies of attacks)."""

    def __post_init__(self) -> None:
        require_positive("privacy.epsilon", self.epsilon)
        if self.epsilon > MAX_EPSILON:
            raise FieldError(
                "privacy.epsilon",
                f"{self.epsilon:g} is beyond any meaningful guarantee (at most {MAX_EPSILON:g})",
                "give a budget such as 1.0; for no privacy compare with a non-private baseline",
            )
        if not 0 < self.delta < 1:
            raise FieldError(
                "privacy.delta", f"must be in (0, 1), got {self.delta}", "use e.g. delta = 1e-5"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioFields:
    """The common part of a scenario: every protocol reads these tables."""

    name: str
    """The scenario's name, used in result file names: 1 to 128 letters, digits, ``.``, ``_`` or
    ``-``, starting with a letter or digit."""
    population: PopulationConfig
    """The ``[population]`` table."""
    privacy: PrivacyConfig
    """The ``[privacy]`` table."""
    seed: int = 0
    """The default root seed of a run (``--seed`` overrides it); every random stream is derived
    from it by name."""
    protocol: str = "dca"
    """The protocol to run: a registered name (``privsim protocols`` lists them)."""
    baseline: bool = True
    """DCA only: also run the trusted-aggregator baseline on the same data and report it under
    ``methods.trusted_aggregator``."""
    network: NetworkConfig = field(default_factory=NetworkConfig)
    """The ``[network]`` table."""
    faults: FaultSpec = field(default_factory=FaultSpec)
    """The ``[faults]`` table."""
    threat: ThreatConfig = field(default_factory=ThreatConfig)
    """The ``[threat]`` table."""

    def __post_init__(self) -> None:
        check_safe_name("name", self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario(ScenarioFields):
    """A complete, validated scenario: the common tables, the protocol's name and every
    registered protocol table in ``tables`` (defaults where none was given; a table that
    another protocol owns is inert). Variants: :meth:`replace` or a sweep grid."""

    #: Protocol tables as (name, config) pairs sorted by name; a mapping is accepted.
    tables: Any = ()

    def __post_init__(self) -> None:
        check_safe_name("name", self.name)  # it names the result file
        if self.seed < 0:
            raise FieldError(
                "seed", f"must be >= 0, got {self.seed}", "give a non-negative integer seed"
            )
        spec = registry.get(self.protocol)  # a FieldError naming 'protocol' if unknown
        known = registry.tables()
        given = dict(self.tables)
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise FieldError(
                unknown[0], "unknown table", f"remove it, or use one of {sorted(known)}"
            )
        filled = {name: given.get(name) or cls() for name, cls in sorted(known.items())}
        for name, value in filled.items():
            if not isinstance(value, known[name]):
                raise FieldError(
                    name,
                    f"expected a {known[name].__name__}, got {type(value).__name__}",
                    f"give a [{name}] table",
                )
        object.__setattr__(self, "tables", tuple(filled.items()))
        n = self.population.clients
        colluders = self.threat.colluding_clients
        if isinstance(colluders, int) and colluders > n:
            raise FieldError(
                "threat.colluding_clients",
                f"{colluders} colluding clients but only {n} clients",
                f"use at most {n}",
            )
        if not spec.training_threats:
            threat = self.threat
            for name in ("attack", "target", "poisoning"):
                if getattr(threat, name) is not None:
                    raise FieldError(
                        f"threat.{name}",
                        f"protocol {self.protocol!r} mounts no attack on training",
                        f"remove threat.{name}, or use protocol 'fedlearn'",
                    )
        spec.check(self)
        # Before any run: the common numbers, the memory the run needs, and every
        # party id and role the scenario names (privsim.scenarios.checks).
        check_numbers(self)
        if spec.footprint is not None:
            check_footprint(self, spec.footprint(self))
        if spec.parties is not None:
            check_parties(self, spec.parties(self))

    def __getattr__(self, name: str) -> Any:
        # Protocol tables by name (scenario.dca, scenario.blr); reached only for names
        # that are not fields.
        if name.startswith("__"):
            raise AttributeError(name)
        for table, value in object.__getattribute__(self, "tables"):
            if table == name:
                return value
        raise AttributeError(f"scenario has no field or table {name!r}")

    def table(self, name: str, cls: type[T]) -> T:
        """The protocol table ``name``, checked to be a ``cls``."""
        value = dict(self.tables)[name]
        if not isinstance(value, cls):
            raise TypeError(f"table {name!r} is a {type(value).__name__}, not a {cls.__name__}")
        return value

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Validate plain data (as parsed from TOML): the common fields, then each
        registered protocol table; errors name the dotted field and the fix."""
        if not isinstance(data, Mapping):
            raise ScenarioError("", f"expected a table, got {type(data).__name__}", "give a table")
        known = registry.tables()
        common = {k: v for k, v in data.items() if k not in known}
        protocol = common.get("protocol", "dca")
        if isinstance(protocol, str) and protocol not in registry.names():
            raise ScenarioError(
                "protocol",
                f"unknown protocol {protocol!r}",
                f"use one of {list(registry.names())}",
            )
        given = {}
        for name, table in known.items():
            if name in data:
                given[name] = from_plain(table, data[name], name)
        fields_ = {f.name for f in dataclasses.fields(ScenarioFields)}
        unknown = sorted(set(common) - fields_)
        if unknown:
            raise ScenarioError(
                unknown[0],
                "unknown field",
                f"remove it, or use one of {sorted(fields_ | set(known))}",
            )
        base = from_plain(ScenarioFields, common, "")
        try:
            return cls(**plain_dataclass_values(base), tables=given)
        except FieldError as exc:
            raise ScenarioError(exc.field, exc.problem, exc.fix) from None

    def to_dict(self, *, every_table: bool = False) -> dict[str, Any]:
        """Plain data (TOML- and JSON-ready): the common fields and the tables the
        protocol reads (every table with ``every_table``)."""
        out = {f.name: to_plain(getattr(self, f.name)) for f in dataclasses.fields(ScenarioFields)}
        out = {k: v for k, v in out.items() if v is not None}
        reads = set(registry.get(self.protocol).tables)
        for name, value in self.tables:
            if every_table or name in reads:
                out[name] = plain_fields(value)
        return out

    def replace(self, changes: Mapping[str, Any]) -> Scenario:
        """A copy with dotted fields set, validated like a file, e.g.
        ``scenario.replace({"dca.tolerated": 5, "privacy.epsilon": 2.0})``."""
        return Scenario.from_dict(set_fields(self.to_dict(every_table=True), changes))


def plain_dataclass_values(obj: Any) -> dict[str, Any]:
    """A dataclass's init fields as a dict of (unconverted) values."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
