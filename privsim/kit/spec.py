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
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, overload

if TYPE_CHECKING:
    from privsim.kit.audit import AuditPlan
    from privsim.kit.result import RunResult
    from privsim.scenarios.schema import Scenario
    from privsim.sim.ledger import PrivacyLedger

__all__ = [
    "PARTY_BYTES",
    "FigureKit",
    "Footprint",
    "Numbered",
    "ProtocolSpec",
    "StudyKit",
    "StudyView",
    "accuracy_lines",
    "clients_and",
    "detail_columns",
    "party_footprint",
]


class StudyKit(Protocol):
    """What a study report hands a protocol's figure functions: ``frame``, the study's
    rows (one per replication, dotted columns); ``curves``, the per-round curves its
    study view keeps (:attr:`StudyView.curves`) as one long table, a row per
    replication and round: ``row_id``, ``cell``, ``replication``, ``seed``, ``protocol``,
    the row's ``run_status``, its ``grid.<field>`` columns, then each per-round key
    (nested ones dotted, ``bytes.client``); empty when no view keeps curves."""

    frame: Any

    @property
    def curves(self) -> Any: ...

    def describe(self, columns: Sequence[str], values: Sequence[Any]) -> str:
        """``label = value, …`` for grid columns and their values (the axis labels)."""
        ...


class FigureKit(StudyKit, Protocol):
    """The plotting toolkit a study report hands a protocol's figure function (with
    the rows ``frame`` and the ``curves`` of :class:`StudyKit`)."""

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


#: Parties by role, as ``ProtocolSpec.parties`` returns them.
PartiesOf = Callable[["Scenario"], Mapping[str, Sequence[str]]]


def clients_and(servers: Mapping[str, str | Sequence[str]] | None = None) -> PartiesOf:
    """``ProtocolSpec.parties`` for the common shape: ``population.clients`` clients
    ``client-0`` … ``client-(N−1)`` (role ``client``; :class:`Numbered`, so a large
    population costs nothing to check) and named servers by role, e.g.
    ``clients_and({"aggregator": "aggregator"})`` or ``{"compute": ("c-0", "c-1")}``."""
    named = {
        role: (ids,) if isinstance(ids, str) else tuple(ids)
        for role, ids in (servers or {}).items()
    }

    def parties(scenario: Scenario) -> dict[str, Sequence[str]]:
        return {"client": Numbered("client", scenario.population.clients), **named}

    return parties


def party_footprint(
    parties: PartiesOf, *, per_client: Callable[[Scenario], int] | None = None
) -> Callable[[Scenario], Footprint]:
    """``ProtocolSpec.footprint`` from the parties alone: :data:`PARTY_BYTES` for each
    party ``parties(scenario)`` declares, plus ``per_client(scenario)`` bytes for each
    client (its data and messages, e.g. 8 bytes per coordinate) when given. The
    default footprint of a spec that declares ``parties`` and no ``footprint``; it
    estimates no wall time (``seconds`` 0)."""

    def footprint(scenario: Scenario) -> Footprint:
        count = sum(len(ids) for ids in parties(scenario).values())
        extra = 0 if per_client is None else per_client(scenario)
        n = scenario.population.clients
        formula = f"parties·P + N·{extra} B" if extra else "parties·P"
        return Footprint(
            count * PARTY_BYTES + n * extra,
            "population.clients",
            f"{formula}, {count} parties, N = {n}, P = {PARTY_BYTES >> 10} KiB",
        )

    return footprint


def detail_columns(*keys: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """``ProtocolSpec.flatten`` for the common case: the named keys of the protocol's
    own result section (``details``) as study columns ``<protocol>.<key>``. (The
    common sections, accuracy included, are flattened for every protocol.)"""

    def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
        own = result.get(result["protocol"]) or {}
        return {result["protocol"]: {k: own[k] for k in keys if k in own}}

    return flatten


def _no_check(scenario: Scenario) -> None:
    return None


def accuracy_lines(result: Mapping[str, Any]) -> list[str]:
    """The default ``report``: the result's accuracy figures on one line (numbers to
    four significant digits); nothing when it has none."""
    figures = [
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in (result.get("accuracy") or {}).items()
        if isinstance(v, int | float | str)
    ]
    return [f"Accuracy    {', '.join(figures)}"] if figures else []


def _no_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    return {}


def _doc(text: str) -> dict[str, str]:
    """A field's documentation, as its ``metadata``: ``{"doc": text}`` (one line). The
    reference page (``docs/reference/protocol-api.md``) and :class:`ProtocolSpec`'s
    docstring read it."""
    return {"doc": " ".join(text.split())}


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
    not reproduce a published figure); ``curves``: per-round curves kept per
    replication; ``html_figures``: the protocol's own figures of the HTML report."""

    metrics: Mapping[str, str] = field(default_factory=dict)
    method_metrics: Mapping[str, str] = field(default_factory=dict)
    axes: Mapping[str, tuple[str, bool]] = field(default_factory=dict)
    headline: tuple[str, ...] = ()
    figures: Callable[[FigureKit, Any], list[Path]] | None = None
    sections: Callable[[Any], list[tuple[str, str]]] | None = None
    reference: Callable[[Any], list[tuple[str, Any]]] | None = None
    curves: str = field(
        default="",
        metadata=_doc(
            """The key of the protocol's own result section (``result[protocol][key]``)
            that holds a list of per-round dicts (learning curves): the study worker keeps
            that list in each replication's row, the report writes every row's rounds to
            ``report/curves.csv`` (one line per replication and round) and hands them to
            the figure functions as ``kit.curves``. Empty (the default): none kept."""
        ),
    )
    html_figures: Callable[[StudyKit], list[tuple[str, Mapping[str, Any]]]] | None = field(
        default=None,
        metadata=_doc(
            """``html_figures(kit) -> [(title, figure)]``: the protocol's own figures of
            the HTML report, each a plain plotly figure dict (``{"data": [...], "layout":
            {...}}``) drawn from the :class:`StudyKit` (rows and curves); the page gives
            them its style and draws them after its own. None (the default): the page
            draws only its own figures (one point per replication)."""
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolSpec:
    """One protocol, declared once: what a registry entry (built-in, or a plug-in's
    ``privsim.protocols`` entry point) holds. Only ``name``, ``summary``, ``tables``,
    ``run`` and ``example`` are required; the rest have defaults that fit a protocol of
    N clients and a few named servers.
    """

    name: str = field(
        metadata=_doc(
            "The scenario's ``protocol`` value: a plain identifier (letters, digits, ``_``, ``-``)."
        )
    )
    summary: str = field(metadata=_doc("One line for ``privsim protocols`` and other listings."))
    tables: Mapping[str, type] = field(
        metadata=_doc(
            """The config tables it reads, table name -> frozen dataclass (validated with
            field-naming errors; read in a run with ``scenario.table(name, cls)``). A table may
            be shared, e.g. ``dca`` by every protocol that sums through DCA, as long as the
            class is the same."""
        )
    )
    run: Callable[[Scenario, int], RunResult] = field(
        metadata=_doc(
            """``run(scenario, seed) -> RunResult``: one run, a pure function of its inputs
            (every random number drawn from the seed's streams). It builds its result with
            :meth:`~privsim.kit.result.RunResult.of_world`."""
        )
    )
    example: Mapping[str, Any] = field(
        metadata=_doc(
            """A small, fast scenario (plain data, as parsed from TOML) that releases and meets
            its guarantee: the contract checks (:mod:`privsim.testing`) run it, and ``privsim
            scenario NAME`` prints it."""
        )
    )
    check: Callable[[Scenario], None] = field(
        default=_no_check,
        metadata=_doc(
            """``check(scenario)``: cross-table validation, raising
            :class:`~privsim.scenarios.errors.FieldError` naming the field. Default: none."""
        ),
    )
    preflight: Callable[[Scenario], None] = field(
        default=_no_check,
        metadata=_doc(
            """``preflight(scenario)``: checks that need more than the scenario (a data set
            on disk); a study runs it for every cell before any work starts, and so does
            ``privsim validate``. Default: none."""
        ),
    )
    plan: Callable[[Scenario], PrivacyLedger] | None = field(
        default=None,
        metadata=_doc(
            """``plan(scenario) -> PrivacyLedger``: the ledger as the run charges it, before
            anything runs (:func:`~privsim.kit.budget.ledger_for` charged by the very function
            the run calls to charge, so the two cannot drift); it raises
            :class:`~privsim.sim.ledger.BudgetExceededError` exactly when the run would refuse
            the scenario over its budget. ``privsim validate`` calls it and refuses what
            ``run`` refuses, with the same message and exit status (2). None: validate says
            the budget is checked when the scenario runs."""
        ),
    )
    parties: Callable[[Scenario], Mapping[str, Sequence[str]]] | None = field(
        default=None,
        metadata=_doc(
            """``parties(scenario) -> {role: party ids}``: every party the run will create,
            by role (:class:`Numbered` for populations; :func:`clients_and` for N clients and
            named servers). With it, validation resolves every party id and role the scenario
            names (coalition, topology, link overrides, faults) before the run, and the
            contract's absent-clients check knows the data holders; None: they are checked
            when the world starts."""
        ),
    )
    footprint: Callable[[Scenario], Footprint | int] | None = field(
        default=None,
        metadata=_doc(
            """``footprint(scenario) -> Footprint | int``: the run's estimated peak memory
            in bytes; validation refuses a scenario above the memory limit
            (``PRIVSIM_MAX_MEMORY``, ``--max-memory``). Default, when ``parties`` is given:
            :data:`PARTY_BYTES` per party (:func:`party_footprint`, which also takes the bytes
            each client holds)."""
        ),
    )
    report: Callable[[Mapping[str, Any]], list[str]] = field(
        default=accuracy_lines,
        metadata=_doc(
            """``report(result) -> lines``: the protocol's section of ``privsim run``'s
            report (the header, the abort's reason, privacy, coalition, traffic and timing are
            written for every protocol). Default: the accuracy figures
            (:func:`accuracy_lines`)."""
        ),
    )
    flatten: Callable[[Mapping[str, Any]], dict[str, Any]] = field(
        default=_no_columns,
        metadata=_doc(
            """``flatten(result) -> columns``: the protocol's own study-row columns (the
            common ones, accuracy included, are flattened once, by the study worker;
            :func:`detail_columns` picks keys of the protocol's own section). Default: none."""
        ),
    )
    study: StudyView = field(
        default_factory=StudyView,
        metadata=_doc(
            """Its study view (:class:`StudyView`: metrics, axes, figures, report sections).
            Default: no metrics of its own."""
        ),
    )
    exposure: Mapping[str, str] = field(
        default_factory=dict,
        metadata=_doc(
            """The coalition-exposure metrics its results carry (``coalition.exposure``),
            name -> meaning; the contract checks that the example reports each. Default:
            none."""
        ),
    )
    overspend: Mapping[str, Any] = field(
        default_factory=dict,
        metadata=_doc(
            """Dotted fields that make the example plan more than its budget, e.g.
            ``{"privacy.epsilon": 0.01}``: the contract checks that the default ``refuse``
            refuses it, ``warn`` reports it and ``validate`` agrees with ``run``. Empty (the
        default) for a protocol that cannot overspend by design (noise calibrated to the
            budget); those checks are then skipped."""
        ),
    )
    audit: Callable[[Scenario], AuditPlan] | None = field(
        default=None,
        metadata=_doc(
            """``audit(scenario) -> AuditPlan``: how ``privsim audit`` tests the scenario's
            release empirically (:mod:`privsim.kit.audit`). None (the default): not
            auditable."""
        ),
    )
    training_threats: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict,
        metadata=_doc(
            """The attacks on training the protocol mounts (``threat.attack``,
            ``threat.poisoning``), each named with the dotted fields that set it up on the
            example (the contract test runs every one with no data: nothing may be
            released). Empty (the default): the protocol refuses those fields by name."""
        ),
    )
    attacks: Mapping[str, Callable[..., Any]] = field(
        default_factory=dict,
        metadata=_doc(
            """Named attacks on the coalition's pooled view, each a function of it; their
            summaries are exposure metrics. Default: none."""
        ),
    )

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"protocol name must be a plain identifier, got {self.name!r}")
        for table, cls in self.tables.items():
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise ValueError(f"protocol {self.name!r}: table {table!r} must be a dataclass")
        if self.footprint is None and self.parties is not None:  # derived: bytes per party
            object.__setattr__(self, "footprint", party_footprint(self.parties))


def _field_list(cls: type) -> str:
    """Each field of ``cls`` with its ``metadata["doc"]``, as a docstring's bullet list."""
    return "\n".join(
        textwrap.fill(
            f"- ``{f.name}``: {f.metadata.get('doc', '(undocumented)')}",
            width=88,
            initial_indent="    ",
            subsequent_indent="      ",
        )
        for f in dataclasses.fields(cls)
    )


# help(ProtocolSpec) lists the fields from their own documentation: one source.
ProtocolSpec.__doc__ = f"{(ProtocolSpec.__doc__ or '').rstrip()}\n\n{_field_list(ProtocolSpec)}\n"
