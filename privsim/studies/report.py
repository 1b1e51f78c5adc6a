"""``privsim report``: summary tables in Markdown and figures for a results directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privsim.analysis.summary import grid_columns, metrics_of, summarise, views_of
from privsim.studies.store import load

__all__ = ["write_report"]


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _markdown_table(frame: Any) -> str:
    cols = list(frame.columns)
    lines = [
        "| " + " | ".join(c.removeprefix("grid.") for c in cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def _study_name(directory: Path) -> str:
    """The study's own name (from its results directory), else the directory's."""
    import json

    try:
        return str(json.loads((directory / "study.json").read_text(encoding="utf-8"))["name"])
    except (OSError, ValueError, KeyError, TypeError):
        return directory.name


def write_report(directory: str | Path) -> tuple[Path, list[Path]]:
    """Write ``report/summary.md`` and ``report/*.png``; returns their paths."""
    from privsim.analysis.figures import draw_study

    directory = Path(directory)
    frame = load(directory)
    summary = summarise(frame)
    out = directory / "report"
    out.mkdir(parents=True, exist_ok=True)
    figures = draw_study(frame, summary, out) if not summary.empty else []
    keys = grid_columns(frame)
    status = frame.groupby("status").size().to_dict() if "status" in frame else {}
    parts = [
        f"# Study report: {_study_name(directory)}",
        "",
        f"{len(frame)} replications: "
        + ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
        + ".",
        "",
        "Per grid cell: the replications (rows), how many released, how many of those do "
        "not meet their privacy guarantee (over_budget; non-private baselines aside), then "
        "n, median, interquartile range (q25–q75) and mean ± sd over released replications.",
    ]
    for metric, label in metrics_of(frame).items():
        rows = summary[summary["metric"] == metric] if not summary.empty else summary
        if rows.empty:
            continue
        table = rows[
            [*keys, "rows", "released", "over_budget", "n", "median", "q25", "q75", "mean", "sd"]
        ]
        parts += ["", f"## {label} (`{metric}`)", "", _markdown_table(table)]
    for view in views_of(frame):
        for title, body in view.sections(frame) if view.sections else []:
            parts += ["", f"## {title}", "", body]
    if figures:
        parts += ["", "## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    errors = frame[frame["status"] == "error"] if "status" in frame else frame.iloc[0:0]
    if not errors.empty:
        parts += ["", "## Failed replications", ""]
        parts += [f"- `{r['row_id']}`: {r.get('error', '')}" for _, r in errors.head(20).iterrows()]
    md = out / "summary.md"
    md.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return md, figures
