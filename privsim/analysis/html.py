"""The HTML study report: one self-contained page per study (``privsim report DIR
--html``).

The page holds the release, abort and guarantee-met rates per grid cell, interactive
figures (one point per replication; hover for its row, seed and replay command; then
the protocols' own, :attr:`~privsim.kit.spec.StudyView.html_figures`), the
summary tables (sortable), the paper's values beside ours where the protocol's study
view gives them (:attr:`~privsim.kit.spec.StudyView.reference`), the protocols' report
sections, the failed replications and the study file. Every script and style is inline
(plotly's library included): the page opens from disk, with no server and no network.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from privsim.analysis.html_figures import (
    HtmlFigure,
    figure_block,
    protocol_figures,
    study_figures,
)
from privsim.analysis.html_tables import cell_rates, markdown_to_html, sortable_table
from privsim.analysis.summary import (
    grid_columns,
    hashable_grid,
    metrics_of,
    summarise,
    views_of,
)
from privsim.version import __version__

__all__ = ["render_html", "study_toml", "with_base", "write_html"]

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 0 24px 48px; color: #222; }
h1 { font-size: 22px; margin-top: 24px; } h2 { font-size: 18px; margin-top: 36px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; } h3 { font-size: 15px; }
nav a { margin-right: 14px; } code, pre { font: 12px/1.4 ui-monospace, monospace; }
pre { background: #f6f6f6; padding: 12px; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
td.text { text-align: left; } .scroll { overflow-x: auto; max-width: 100%; }
figure.plot { margin: 12px 0 24px; border: 1px solid #eee; }
.note { color: #555; }
"""

# Sorting: a click on a header sorts by that column, again reverses; numbers (the
# cell's exact data-value where it has one) before text; missing values last either way.
_SCRIPT = """
(function () {
  function key(cell) {
    const raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent;
    const text = raw.trim().replace(/%$/, "");
    const n = Number(text);
    if (text === "" || text === "nan" || text === "–") return [2, 0];
    return Number.isNaN(n) ? [1, raw] : [0, n];
  }
  function compare(a, b) {
    if (a[0] !== b[0]) return a[0] - b[0];
    if (a[0] === 0) return a[1] - b[1];
    return String(a[1]).localeCompare(String(b[1]));
  }
  function sortBy(table, th, col) {
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(h => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort((r, s) => {
      const a = key(r.cells[col]), b = key(s.cells[col]);
      if ((a[0] === 2) !== (b[0] === 2)) return a[0] === 2 ? 1 : -1;  // missing: last
      const c = compare(a, b);
      return ascending ? c : -c;
    });
    rows.forEach(r => body.appendChild(r));
  }
  document.querySelectorAll("table.sortable").forEach(table => {
    table.querySelectorAll("th").forEach((th, col) => {
      th.addEventListener("click", () => sortBy(table, th, col));
    });
  });
})();
"""


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    # a "</script>" inside the library would end the inline block early
    return str(get_plotlyjs()).replace("</script>", "<\\/script>")


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n{body}\n</section>'


def _status_line(frame: Any) -> str:
    if "status" not in frame:
        return f"{len(frame)} replications."
    counts = frame.groupby("status").size().to_dict()
    return f"{len(frame)} replications: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


#: The summary's statistics, shown right after the grid fields (the counts and rates
#: follow): what a reader looks for first.
_FIRST = ("n", "median", "median_lo", "median_hi", "q25", "q75", "mean", "sd")


def _statistics_first(table: Any) -> Any:
    keys = [c for c in table.columns if c.startswith("grid.")]
    first = [c for c in _FIRST if c in table.columns]
    rest = [c for c in table.columns if c not in keys and c not in first]
    return table[keys + first + rest]


def _summary_tables(frame: Any, summary: Any) -> str:
    parts = [
        '<p class="note">Per grid cell, over its released replications: n, the median '
        "(with its confidence interval median_lo–median_hi where the summary gives one), "
        "the interquartile range (q25–q75) and mean ± sd; then the cell's replications "
        "(rows), how many released, and how many of those do not meet their privacy "
        "guarantee (over_budget; non-private baselines aside). Click a header to sort.</p>"
    ]
    for metric, label in metrics_of(frame).items():
        rows = summary[summary["metric"] == metric] if not summary.empty else summary
        if rows.empty:
            continue
        table = _statistics_first(rows.drop(columns=["metric"]).reset_index(drop=True))
        parts.append(f"<h3>{html.escape(label)} (<code>{html.escape(metric)}</code>)</h3>")
        parts.append(sortable_table(table, name=metric))
    return "\n".join(parts)


def _figures(figures: Sequence[HtmlFigure], results_dir: str) -> str:
    note = (
        '<p class="note">One point per released replication (spread sideways within its '
        "cell); the line is the cell's median with its interquartile range. Hover a point "
        "for its row, seed and the command that replays it "
        f"(<code>privsim replay ROW --out {html.escape(results_dir)}</code>). "
        "Click a legend entry to hide it.</p>"
    )
    own = [f for f in figures if f.kind != "rows"]
    if own:  # the protocols' figures say what their lines and bands are
        note += (
            '<p class="note">After these, the protocols\' own figures (such as per-round '
            "curves, with the band over replications each names).</p>"
        )
    return note + "\n".join(figure_block(f) for f in figures)


def _dotted(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping):
            out.update(_dotted(value, f"{prefix}{key}."))
        elif isinstance(value, str | int | float | bool):
            out[f"{prefix}{key}"] = value
    return out


def with_base(frame: Any, study: Mapping[str, Any]) -> Any:
    """``frame`` with the study base's fixed fields as constant ``base.<field>`` columns
    (what a reference needs to know of the settings outside the grid)."""
    import pandas as pd

    base = study.get("base")
    if not isinstance(base, Mapping):
        return frame
    fixed = {f"base.{k}": v for k, v in _dotted(base).items() if f"base.{k}" not in frame}
    if not fixed:
        return frame
    extra = pd.DataFrame({k: [v] * len(frame) for k, v in fixed.items()}, index=frame.index)
    return pd.concat([frame, extra], axis=1)


def _references(frame: Any) -> str:
    parts = []
    for view in views_of(frame):
        for title, table in view.reference(frame) if view.reference else []:
            parts.append(f"<h3>{html.escape(title)}</h3>")
            parts.append(sortable_table(table, name=f"reference: {title}"))
    return "\n".join(parts)


def _protocol_sections(frame: Any) -> list[tuple[str, str]]:
    return [
        (title, markdown_to_html(body))
        for view in views_of(frame)
        for title, body in (view.sections(frame) if view.sections else [])
    ]


def _failures(frame: Any) -> str:
    if "status" not in frame:
        return ""
    errors = frame[frame["status"] == "error"]
    if errors.empty:
        return ""
    items = "".join(
        f"<li><code>{html.escape(str(r['row_id']))}</code>: "
        f"{html.escape(str(r.get('error', '')))}</li>"
        for _, r in errors.head(50).iterrows()
    )
    more = f"<p>… and {len(errors) - 50} more.</p>" if len(errors) > 50 else ""
    return f"<ul>{items}</ul>{more}"


def _channel_note(frame: Any, study: Mapping[str, Any]) -> str:
    """A sentence for the page's head when the study's channels are ``sized``: its bytes
    and times are AES-GCM's, but nothing was encrypted."""
    modes: set[Any] = set()
    if "grid.network.encryption" in frame:
        modes = set(frame["grid.network.encryption"].dropna().tolist())
    else:
        overrides, base = study.get("overrides"), study.get("base")
        if isinstance(overrides, Mapping) and "network.encryption" in overrides:
            modes = {overrides["network.encryption"]}
        elif isinstance(base, Mapping):
            modes = {_dotted(base).get("network.encryption")}
    if "sized" not in modes:
        return ""
    return (
        " Channels: network.encryption = sized in "
        + ("every cell" if modes == {"sized"} else "some cells")
        + ": AES-GCM's wire bytes and times, nothing encrypted."
    )


def study_toml(study: Mapping[str, Any]) -> str:
    """The study description (``study.json`` of a results directory) as TOML, the form
    a user wrote it in."""
    import json

    import tomli_w

    try:
        return tomli_w.dumps(dict(study))
    except (TypeError, ValueError):  # not TOML-able (a null inside): show the JSON
        return json.dumps(study, indent=2, sort_keys=True, default=str)


def render_html(frame: Any, *, results_dir: str, study: Mapping[str, Any] | None = None) -> str:
    """The page of a study's rows ``frame`` (as :func:`privsim.studies.load` returns
    them). ``results_dir`` is written into the replay commands; ``study`` (the results
    directory's ``study.json``) names the page and is shown at the end as TOML."""
    study = study or {}
    name = str(study.get("name") or Path(results_dir).name)
    study_text = study_toml(study) if study else ""
    frame = hashable_grid(frame)  # a grid over a list-valued field groups by its text
    summary = summarise(frame)
    figures = study_figures(frame, results_dir)
    figures += protocol_figures(frame)
    sections: list[tuple[str, str, str]] = []
    rates = cell_rates(frame)
    if not rates.empty:
        sections.append(
            (
                "rates",
                "Release, abort and guarantee-met rates per cell",
                '<p class="note">Release and abort rates over each cell\'s replications; the '
                "guarantee-met rate over its released replications that claim a privacy "
                "guarantee (labelled non-private baselines counted apart).</p>"
                + sortable_table(rates, name="rates"),
            )
        )
    if figures:
        sections.append(("figures", "Figures", _figures(figures, results_dir)))
    if not summary.empty:
        sections.append(("summary", "Summary tables", _summary_tables(frame, summary)))
    references = _references(with_base(frame, study))
    if references:
        sections.append(
            (
                "paper",
                "The paper's values beside ours",
                '<p class="note">Published values (from the paper, as quoted in this '
                "project's docs) next to this study's.</p>" + references,
            )
        )
    for i, (title, body) in enumerate(_protocol_sections(frame)):
        sections.append((f"section-{i}", title, body))
    failures = _failures(frame)
    if failures:
        sections.append(("failures", "Failed replications", failures))
    if study_text:
        sections.append(("study", "Study file", f"<pre>{html.escape(study_text)}</pre>"))
    nav = " ".join(f'<a href="#{a}">{html.escape(t)}</a>' for a, t, _ in sections)
    grid = ", ".join(c.removeprefix("grid.") for c in grid_columns(frame)) or "none"
    head = (
        f"<h1>Study report: {html.escape(name)}</h1>\n"
        f"<p>{html.escape(_status_line(frame))}. Grid fields: {html.escape(grid)}."
        f"{html.escape(_channel_note(frame, study))} "
        f"Results directory <code>{html.escape(results_dir)}</code>; privsim "
        f"{html.escape(__version__)}.</p>\n<nav>{nav}</nav>"
    )
    body = "\n".join(_section(a, t, b) for a, t, b in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(name)}: privsim study report</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_STYLE}</style>"
        f'<script type="text/javascript">{_plotly_js()}</script>'
        f"</head><body>\n{head}\n{body}\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def write_html(
    frame: Any,
    path: str | Path,
    *,
    results_dir: str,
    study: Mapping[str, Any] | None = None,
    within: str | Path | None = None,
) -> Path:
    """Write the page (:func:`render_html`) to ``path`` through the guarded writer (a
    temporary file and an atomic rename, so a reader never sees half a page); returns
    it. With ``within``, ``path`` is relative to that directory, and a link on the way
    that leads outside it (a ``report/`` linked elsewhere) is refused."""
    from privsim.outputs import write_text

    page = render_html(frame, results_dir=results_dir, study=study)
    return write_text(path, page, within=within, what="report page")
