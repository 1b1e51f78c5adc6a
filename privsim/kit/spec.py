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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from privsim.kit.result import RunResult
    from privsim.scenarios.schema import Scenario

__all__ = ["FigureKit", "ProtocolSpec", "StudyView"]


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
    rows frame."""

    metrics: Mapping[str, str] = field(default_factory=dict)
    method_metrics: Mapping[str, str] = field(default_factory=dict)
    axes: Mapping[str, tuple[str, bool]] = field(default_factory=dict)
    headline: tuple[str, ...] = ()
    figures: Callable[[FigureKit, Any], list[Path]] | None = None
    sections: Callable[[Any], list[tuple[str, str]]] | None = None


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
      disk); a study runs it for every cell before any work starts.
    - ``report(result) -> lines``: the protocol's section of ``privsim run``'s report.
    - ``flatten(result) -> columns``: the protocol's own study-row columns (the common
      ones are flattened once, by the study worker).
    - ``study``: its study view (metrics, axes, figures, report sections).
    - ``exposure``: the coalition-exposure metrics its results carry, with their meaning.
    - ``example``: a small, fast scenario (plain data) for the contract test and docs.
    """

    name: str
    summary: str
    tables: Mapping[str, type]
    run: Callable[[Scenario, int], RunResult]
    example: Mapping[str, Any]
    check: Callable[[Scenario], None] = _no_check
    preflight: Callable[[Scenario], None] = _no_check
    report: Callable[[Mapping[str, Any]], list[str]] = _no_lines
    flatten: Callable[[Mapping[str, Any]], dict[str, Any]] = _no_columns
    study: StudyView = field(default_factory=StudyView)
    exposure: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"protocol name must be a plain identifier, got {self.name!r}")
        for table, cls in self.tables.items():
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise ValueError(f"protocol {self.name!r}: table {table!r} must be a dataclass")
