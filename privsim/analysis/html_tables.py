"""Tables and text of the HTML study report: sortable tables from data frames (every
cell carries its exact value in ``data-value``, the text shows it rounded), the
release, abort and guarantee-met rates per grid cell, and the little Markdown the
protocols' report sections use (tables, paragraphs, ``code``, **bold**)."""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np

from privsim.analysis.summary import grid_columns

__all__ = ["cell_rates", "markdown_to_html", "sortable_table"]


def _exact(value: Any) -> str:
    """The value as the ``data-value`` attribute holds it: ``repr`` of a float (every
    digit, so a reader recovers the same double), the text of anything else."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return "nan" if math.isnan(value) else repr(float(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    return "" if value is None else str(value)


def _shown(value: Any, column: str) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return "–"
        if column.endswith("rate"):
            return f"{100 * value:.1f}%"
        return f"{value:.4g}"
    return "" if value is None else str(value)


def sortable_table(frame: Any, *, name: str = "", headers: dict[str, str] | None = None) -> str:
    """``frame`` as an HTML table whose columns sort on a click (the page's script).
    ``name`` goes in ``data-table``; ``headers`` renames columns for display (the
    column's own name stays in ``data-column``)."""
    headers = headers or {}
    head = "".join(
        f'<th data-column="{html.escape(str(c))}" title="click to sort">'
        f"{html.escape(headers.get(str(c), str(c).removeprefix('grid.')))}</th>"
        for c in frame.columns
    )
    body = []
    for row in frame.itertuples(index=False, name=None):
        cells = "".join(
            f'<td data-value="{html.escape(_exact(v))}"'
            + ("" if _is_number(v) else ' class="text"')
            + f">{html.escape(_shown(v, str(c)))}</td>"
            for c, v in zip(frame.columns, row, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="scroll"><table class="sortable" data-table="{html.escape(name)}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


def cell_rates(frame: Any) -> Any:
    """Per grid cell: replications, how many released, aborted and failed, the release
    and abort rates over the cell's replications, and the guarantee-met rate over its
    released rows that claim a guarantee (labelled non-private rows aside; NaN when
    there are none)."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame()
    keys = grid_columns(frame)
    status = frame["status"] if "status" in frame else pd.Series("released", index=frame.index)
    met = (
        frame["privacy.guarantee_met"].astype("boolean")
        if "privacy.guarantee_met" in frame
        else pd.Series(pd.NA, index=frame.index, dtype="boolean")
    )
    private = (
        ~frame["privacy.non_private"].astype("boolean").fillna(False)
        if "privacy.non_private" in frame
        else pd.Series(True, index=frame.index, dtype="boolean")
    )
    parts = pd.DataFrame(
        {
            "released": status == "released",
            "aborted": status == "aborted",
            "error": status == "error",
            "claimed": (status == "released") & private & met.notna(),
            "met": ((status == "released") & private & met.fillna(False)).astype(bool),
            "non_private": (status == "released") & ~private,
        }
    )
    for k in keys:
        parts[k] = frame[k]
    groups = parts.groupby(keys, dropna=False, sort=True) if keys else [((), parts)]
    records = []
    for coords, cell in groups:
        coords = coords if isinstance(coords, tuple) else (coords,)
        n = len(cell)
        claimed = int(cell["claimed"].sum())
        records.append(
            {
                **dict(zip(keys, coords, strict=True)),
                "rows": n,
                "released": int(cell["released"].sum()),
                "aborted": int(cell["aborted"].sum()),
                "errors": int(cell["error"].sum()),
                "non_private": int(cell["non_private"].sum()),
                "release rate": cell["released"].sum() / n,
                "abort rate": cell["aborted"].sum() / n,
                "guarantee-met rate": cell["met"].sum() / claimed if claimed else float("nan"),
            }
        )
    return pd.DataFrame.from_records(records)


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def _inline(text: str) -> str:
    out = html.escape(text)
    out = _CODE.sub(r"<code>\1</code>", out)
    return _BOLD.sub(r"<strong>\1</strong>", out)


def _table(lines: list[str]) -> str:
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    head, rows = cells(lines[0]), [cells(x) for x in lines[2:]]
    return (
        '<div class="scroll"><table class="sortable"><thead><tr>'
        + "".join(f'<th title="click to sort">{_inline(h)}</th>' for h in head)
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows)
        + "</tbody></table></div>"
    )


def markdown_to_html(text: str) -> str:
    """The Markdown of a protocol's report section: pipe tables (sortable), bullet
    lines, paragraphs; inline code and bold. Everything else is escaped text."""
    blocks: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            table = lines[i:j]
            blocks.append(_table(table) if len(table) >= 2 else f"<p>{_inline(line)}</p>")
            i = j
        elif line.lstrip().startswith(("- ", "* ")):
            j = i
            items = []
            while j < len(lines) and lines[j].lstrip().startswith(("- ", "* ")):
                items.append(f"<li>{_inline(lines[j].lstrip()[2:])}</li>")
                j += 1
            blocks.append(f"<ul>{''.join(items)}</ul>")
            i = j
        elif line.strip():
            j = i
            para = []
            while (
                j < len(lines)
                and lines[j].strip()
                and not lines[j].lstrip().startswith(("|", "- ", "* "))
            ):
                para.append(lines[j].strip())
                j += 1
            blocks.append(f"<p>{_inline(' '.join(para))}</p>")
            i = j
        else:
            i += 1
    return "\n".join(blocks)
