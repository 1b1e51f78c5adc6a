"""What a protocol declares, once: :class:`ProtocolSpec`.

A protocol is one package under ``privsim/protocols/NAME/`` (or a third-party package
registered through the ``privsim.protocols`` entry-point group) that exports its specs.
The spec names its config tables, its run function, how its result reads in a report and
flattens into study rows, how its study figures and report sections are drawn, and a
small example scenario that the contract test runs. Privacy is not declared here: the
run charges every mechanism to the ledger with the parties it trusts, and the result
carries what the ledger computed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, overload

if TYPE_CHECKING:
    from privsim.kit.audit import AuditPlan
    from privsim.kit.result import RunResult
    from privsim.scenarios.schema import Scenario

__all__ = ["PARTY_BYTES", "FigureKit", "Footprint", "Numbered", "ProtocolSpec", "StudyView"]


class FigureKit(Protocol):
    """The plotting toolkit a study report hands a protocol's figure function.
    ``frame`` is the study's rows (one per replication, dotted columns)."""

    frame: Any

    def series(
        self, metrics: Sequence[str], *, axes: Sequence[str] | None = None, logy: bool = False
    ) -> list[Path]:
        """Each metric against each of ``axes`` (grid columns; default: every one that
        varies), median with interquartile band, one line per value of the others."""
        ...

    def by_method(
        self, metric: str, styles: Mapping[str, tuple[str, str]], *, off_chart: Sequence[str] = ()
    ) -> list[Path]:
        """``methods.<m>.<metric>`` of every method against ε, one line per method."""
        ...

    def one_factor(self, metric: str, *, reference: str | None = None) -> list[Path]:
        """The metric against each numeric grid field, the others at their baseline."""
        ...

    def figure(self, width: float, height: float) -> tuple[Any, Any]:
        """A new (figure, axes) pair."""
        ...

    def finish(self, fig: Any, ax: Any, name: str, legend_size: int = 8) -> Path:
        """Grid, legend, layout; write ``name``.png into the report folder."""
        ...


class Numbered(Sequence[str]):
    """The party ids ``prefix-0`` … ``prefix-(count−1)``, without building them: a
    population of 10⁷ clients is checked against without 10⁷ strings."""

    __slots__ = ("prefix", "size")

    def __init__(self, prefix: str, count: int) -> None:
        self.prefix, self.size = prefix, max(0, count)

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if not -self.size <= index < self.size:
            raise IndexError(index)
        return f"{self.prefix}-{index % self.size}"

    def __contains__(self, party: object) -> bool:
        if not isinstance(party, str) or not party.startswith(self.prefix + "-"):
            return False
        tail = party[len(self.prefix) + 1 :]
        if not (0 < len(tail) <= 20 and tail.isascii() and tail.isdigit()):
            return False
        return str(int(tail)) == tail and int(tail) < self.size

    def __iter__(self) -> Iterator[str]:
        return (f"{self.prefix}-{i}" for i in range(self.size))

    def __repr__(self) -> str:
        return f"Numbered({self.prefix!r}, {self.size})"


#: Memory per simulated party (agent, inbox, queued and delivered messages, trace
#: records), for footprints: about 6 KiB per client was measured for DCA at N = 2·10⁵.
PARTY_BYTES = 8 << 10


class Footprint(NamedTuple):
    """A run's estimated peak memory in ``bytes``, the scenario field that dominates it
    (named in the error when the limit is exceeded) and the formula, for the message;
    and its estimated wall time in ``seconds`` on one core of the reference machine,
    with the field that dominates that (``slow_field``, default ``field``)."""

    bytes: int
    field: str
    formula: str = ""
    seconds: float = 0.0
    slow_field: str = ""


def _no_check(scenario: Scenario) -> None:
    return None


def _no_lines(result: Mapping[str, Any]) -> list[str]:
    return []


def _no_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyView:
    """How a protocol's rows read in a study report.

    ``metrics``: row columns summarised per cell, with their labels; ``method_metrics``:
    per-method columns ``methods.<m>.<suffix>`` by suffix; ``axes``: labels (and log
    scale) of grid fields; ``headline``: metrics drawn against every varied axis when
    ``figures`` is not given; ``figures``: draws the protocol's figures with a
    :class:`FigureKit`; ``sections``: extra report sections (title, Markdown) from the
    rows frame; ``reference``: the paper's values beside ours, as titled tables (pandas
    DataFrames) from the rows frame — which then also holds the study base's fixed
    fields as ``base.<field>`` columns — for the HTML report (empty when the study does
    not reproduce a published figure)."""

    metrics: Mapping[str, str] = field(default_factory=dict)
    method_metrics: Mapping[str, str] = field(default_factory=dict)
    axes: Mapping[str, tuple[str, bool]] = field(default_factory=dict)
    headline: tuple[str, ...] = ()
    figures: Callable[[FigureKit, Any], list[Path]] | None = None
    sections: Callable[[Any], list[tuple[str, str]]] | None = None
    reference: Callable[[Any], list[tuple[str, Any]]] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolSpec:
    """One protocol, declared once.

    - ``name``: the scenario's ``protocol`` value; ``summary``: one line for listings.
    - ``tables``: config tables it reads, name -> frozen dataclass (validated with
      field-naming errors; a table may be shared, e.g. ``dca`` by every protocol that
      sums through DCA, as long as the class is the same).
    - ``run(scenario, seed) -> RunResult``: a pure function of its inputs.
    - ``check(scenario)``: cross-table validation, raising
      :class:`~privsim.scenarios.errors.FieldError`.
    - ``preflight(scenario)``: checks that need more than the scenario (a data set on
      disk); a study runs it for every cell before any work starts, and so does
      ``privsim validate``.
    - ``parties(scenario) -> {role: party ids}``: every party the run will create, by
      role (use :class:`Numbered` for populations). With it, validation resolves every
      party id and role the scenario names (coalition, topology, link overrides,
      faults) before the run; without it they are checked when the world starts.
    - ``footprint(scenario) -> Footprint | int``: the run's estimated peak memory in
      bytes; validation refuses a scenario above the memory limit
      (``PRIVSIM_MAX_MEMORY``, ``--max-memory``).
    - ``report(result) -> lines``: the protocol's section of ``privsim run``'s report.
    - ``flatten(result) -> columns``: the protocol's own study-row columns (the common
      ones are flattened once, by the study worker).
    - ``study``: its study view (metrics, axes, figures, report sections).
    - ``exposure``: the coalition-exposure metrics its results carry, with their meaning.
    - ``example``: a small, fast scenario (plain data) for the contract test and docs.
    - ``overspend``: dotted fields that make the example plan more than its budget (the
      contract test checks the default ``refuse`` refuses it); empty for a protocol that
      cannot overspend by design.
    - ``audit(scenario) -> AuditPlan``: how ``privsim audit`` tests the scenario's
      release empirically (:mod:`privsim.kit.audit`); None: not auditable.
    - ``attacks``: named attacks on the coalition's pooled view, each a function of it
      (see the protocol's ``attacks`` module); their summaries are exposure metrics.
    """

    name: str
    summary: str
    tables: Mapping[str, type]
    run: Callable[[Scenario, int], RunResult]
    example: Mapping[str, Any]
    check: Callable[[Scenario], None] = _no_check
    preflight: Callable[[Scenario], None] = _no_check
    parties: Callable[[Scenario], Mapping[str, Sequence[str]]] | None = None
    footprint: Callable[[Scenario], Footprint | int] | None = None
    report: Callable[[Mapping[str, Any]], list[str]] = _no_lines
    flatten: Callable[[Mapping[str, Any]], dict[str, Any]] = _no_columns
    study: StudyView = field(default_factory=StudyView)
    exposure: Mapping[str, str] = field(default_factory=dict)
    overspend: Mapping[str, Any] = field(default_factory=dict)
    audit: Callable[[Scenario], AuditPlan] | None = None
    attacks: Mapping[str, Callable[..., Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"protocol name must be a plain identifier, got {self.name!r}")
        for table, cls in self.tables.items():
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise ValueError(f"protocol {self.name!r}: table {table!r} must be a dataclass")
