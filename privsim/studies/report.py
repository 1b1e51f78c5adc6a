"""``privsim report``: summary tables in Markdown and figures for a results directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privsim.studies.store import load
from privsim.studies.summary import grid_columns, metrics_of, summarise

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


def write_report(directory: str | Path) -> tuple[Path, list[Path]]:
    """Write ``report/summary.md`` and ``report/*.png``; returns their paths."""
    from privsim.analysis.figures import draw_study

    directory = Path(directory)
    frame = load(directory)
    summary = summarise(frame)
    out = directory / "report"
    out.mkdir(parents=True, exist_ok=True)
    figures = draw_study(summary, out) if not summary.empty else []
    from privsim.analysis.figures import draw_coefficients, draw_iterations

    figures += draw_coefficients(frame, out) + draw_iterations(frame, out)
    keys = grid_columns(frame)
    status = frame.groupby("status").size().to_dict() if "status" in frame else {}
    parts = [
        f"# Study report: {directory.name}",
        "",
        f"{len(frame)} replications: "
        + ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
        + ".",
        "",
        "Per grid cell: median, interquartile range (q25–q75) and mean ± sd over released replications.",
    ]
    for metric, label in metrics_of(frame).items():
        rows = summary[summary["metric"] == metric] if not summary.empty else summary
        if rows.empty:
            continue
        table = rows[[*keys, "n", "median", "q25", "q75", "mean", "sd"]]
        parts += ["", f"## {label} (`{metric}`)", "", _markdown_table(table)]
    from privsim.studies.blr_checks import figure2_checks

    checks = figure2_checks(frame)
    if checks:
        parts += [
            "",
            "## Distributed against trusted aggregator, with and without projection",
            "",
            "Median test MAE per cell. ≈: the difference of the medians is smaller than both "
            "interquartile ranges; (p): two-sided Mann–Whitney U p-value of the two methods' "
            "MAEs. Projection helps: both projected medians are below the unprojected ones.",
            "",
            checks,
        ]
    from privsim.studies.bcd_checks import bcd_table

    bcd = bcd_table(frame)
    if bcd:
        parts += [
            "",
            "## Block coordinate descent: aborts, R² and AAPD per cell",
            "",
            "Aborted: share of replications stopped by the rule ‖v_out‖ > ξ (nothing "
            "published). R² in sample, of the published model; AAPD: mean over "
            "coefficients of |β̂ − β*|/|β*| against the centralised solution β*.",
            "",
            bcd,
        ]
    if figures:
        parts += ["", "## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    errors = frame[frame["status"] == "error"] if "status" in frame else frame.iloc[0:0]
    if not errors.empty:
        parts += ["", "## Failed replications", ""]
        parts += [f"- `{r['row_id']}`: {r.get('error', '')}" for _, r in errors.head(20).iterrows()]
    md = out / "summary.md"
    md.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return md, figures
