"""Per-round curves of a study: what each replication's row keeps of its rounds.

A protocol whose study view names a list of per-round dicts in its result
(:attr:`~privsim.kit.spec.StudyView.curves`, e.g. fedlearn's learning curves) has that
list kept in every replication's row, under :data:`CURVES`. Here the rows' lists become
one long table, a line per replication and round (:func:`curves_table`), which the
report writes as ``report/curves.csv`` (:func:`write_curves`) and hands to the
protocol's figure functions as ``kit.curves`` (:class:`ReportKit` for the HTML page).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CURVES",
    "CURVES_FILE",
    "ID_COLUMNS",
    "ReportKit",
    "curves_table",
    "escape_formulas",
    "write_curves",
]

#: The row key (and the rows frame's column) of a replication's per-round dicts.
CURVES = "curves"
#: The long table's file in the report folder.
CURVES_FILE = "curves.csv"
#: The columns that name a replication, first in the table (then ``run_status``, the
#: replication's own status, the grid fields, and the per-round keys).
ID_COLUMNS = ("row_id", "cell", "replication", "seed", "protocol")

#: How results write the non-finite floats (JSON has no infinity).
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _dotted(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A per-round dict with nested dicts as dotted keys (``bytes.client``); lists and
    other non-scalar values are left out (a CSV cell holds one value)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, Mapping):
            out.update(_dotted(value, f"{prefix}{key}."))
        elif value is None or isinstance(value, str | int | float | bool):
            out[f"{prefix}{key}"] = value
    return out


def _as_number(value: Any) -> Any:
    return _NON_FINITE.get(value, value) if isinstance(value, str) else value


def curves_table(frame: Any) -> Any:
    """The per-round curves of every row of ``frame`` (the rows of
    :func:`privsim.studies.load`) as one pandas DataFrame, a line per replication and
    round: :data:`ID_COLUMNS`, ``run_status``, the ``grid.<field>`` columns (a list value
    as its text, as the summaries group it), then each per-round key, nested ones dotted.
    ``"inf"`` and ``"nan"`` (as results write them) are floats. Empty (no columns) when no
    row keeps curves."""
    import pandas as pd

    from privsim.analysis.summary import grid_columns, hashable_grid

    if CURVES not in frame:
        return pd.DataFrame()
    frame = hashable_grid(frame)
    names = [c for c in ID_COLUMNS if c in frame]
    grid = grid_columns(frame)
    head = [*names, "run_status", *grid]
    status = frame["status"] if "status" in frame else pd.Series(None, index=frame.index)
    records: list[dict[str, Any]] = []
    whole: dict[str, bool] = {}  # per-round key -> every value given is an integer
    for i, rounds in enumerate(frame[CURVES]):
        if not isinstance(rounds, list):
            continue
        ids = {c: frame[c].iat[i] for c in names}
        cells = {c: frame[c].iat[i] for c in grid}
        for rnd in rounds:
            if isinstance(rnd, Mapping):
                own = {k: _as_number(v) for k, v in _dotted(rnd).items()}
                for k, v in own.items():
                    integer = v is None or (isinstance(v, int) and not isinstance(v, bool))
                    whole[k] = whole.get(k, True) and integer
                records.append({**own, **ids, "run_status": status.iat[i], **cells})
    if not records:
        return pd.DataFrame()
    table = pd.DataFrame.from_records(records)
    for key, integer in whole.items():  # counts stay counts where a round lacks one
        if integer and key in table and pd.api.types.is_float_dtype(table[key]):
            table[key] = table[key].astype("Int64")
    tail = [c for c in table.columns if c not in head]
    if "round" in tail:  # the round first among the per-round keys
        tail.remove("round")
        tail.insert(0, "round")
    return table[[c for c in head if c in table] + tail].reset_index(drop=True)


def write_curves(frame: Any, out: str | Path) -> Path | None:
    """Write :func:`curves_table` of ``frame`` to ``out/curves.csv`` through the guarded
    writer (a temporary file renamed into place; nothing outside ``out``); returns its
    path, or None (and writes nothing) when no row keeps curves."""
    from privsim.outputs import write_text

    table = curves_table(frame)
    if table.empty:
        return None
    text = escape_formulas(table).to_csv(index=False)
    return write_text(CURVES_FILE, text, within=out, what="curves table")


#: What a spreadsheet reads as the start of a formula in a cell (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape_formulas(table: Any) -> Any:
    """``table`` with every text cell (and column name) that a spreadsheet would run as
    a formula prefixed by a single quote, the CSV-export convention (OWASP); numbers are
    left as they are."""
    import pandas as pd

    def cell(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(FORMULA_STARTS):
            return "'" + value
        return value

    out = table.copy()
    for column in out.columns:
        if pd.api.types.is_object_dtype(out[column]) or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(cell)
    return out.rename(columns=lambda c: cell(c) if isinstance(c, str) else c)


class ReportKit:
    """The :class:`~privsim.kit.spec.StudyKit` of the HTML report: the rows ``frame``,
    their ``curves`` (:func:`curves_table`, built on first use) and grid values in
    words (the study views' axis labels)."""

    def __init__(self, frame: Any) -> None:
        from privsim.analysis.summary import axes_of

        self.frame = frame
        self.axes = axes_of(frame)
        self._curves: Any = None

    @property
    def curves(self) -> Any:
        """The rows' per-round curves, one line per replication and round
        (:func:`curves_table`; built on first use)."""
        if self._curves is None:
            self._curves = curves_table(self.frame)
        return self._curves

    def words(self, column: str) -> str:
        """A grid field in words: its axis label, else its last name without ``_``."""
        if column in self.axes:
            return self.axes[column][0]
        return column.removeprefix("grid.").rsplit(".", 1)[-1].replace("_", " ")

    def describe(self, columns: Sequence[str], values: Sequence[Any]) -> str:
        """``label = value, …`` for a panel or a line."""
        return ", ".join(
            f"{self.words(c)} = {v:g}" if isinstance(v, float) else f"{self.words(c)} = {v}"
            for c, v in zip(columns, values, strict=True)
        )
