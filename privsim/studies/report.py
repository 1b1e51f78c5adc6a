"""``privsim report``: summary tables in Markdown, figures and the per-round curves
table for a results directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privsim.analysis.curves import write_curves
from privsim.analysis.summary import grid_columns, metrics_of, summarise, views_of
from privsim.outputs import make_folder, write_text
from privsim.studies.store import load

__all__ = ["metric_table", "write_report"]


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "–" if x != x else f"{x:.4g}"
    return str(x)


def _pct(x: Any) -> str:
    return "–" if x != x else f"{100 * x:.0f}%"


def _markdown_table(frame: Any) -> str:
    cols = list(frame.columns)
    lines = [
        "| " + " | ".join(c.removeprefix("grid.") for c in cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def metric_table(rows: Any, keys: list[str]) -> Any:
    """The report's table of one metric: per cell, the rates next to the median and its
    interval (a cell with no release shows "no release" instead of a median)."""
    import pandas as pd

    def median(r: Any) -> str:
        if r["n"] == 0:
            return "no release"
        return f"{r['median']:.4g} [{r['median_lo']:.4g}, {r['median_hi']:.4g}]"

    def met(r: Any) -> str:
        return "non-private" if r["non_private"] else _pct(r["met_rate"])

    return pd.DataFrame(
        {
            **{k: rows[k] for k in keys},
            "rows": rows["rows"],
            "released": rows["released"],
            "over_budget": rows["over_budget"],
            "abort rate": rows["abort_rate"].map(_pct),
            "release rate": rows["release_rate"].map(_pct),
            "guarantee met": rows.apply(met, axis=1),
            "n": rows["n"],
            "median [95% CI]": rows.apply(median, axis=1),
            "IQR": [
                "–" if n == 0 else f"{a:.4g}–{b:.4g}"
                for n, a, b in zip(rows["n"], rows["q25"], rows["q75"], strict=True)
            ],
            "mean ± sd": [
                "–" if n == 0 else f"{m:.4g} ± {sd:.3g}"
                for n, m, sd in zip(rows["n"], rows["mean"], rows["sd"], strict=True)
            ],
        }
    )


def _study_name(directory: Path) -> str:
    """The study's own name (from its results directory's ``study.json``, read through
    the guarded reader: a damaged one is a named error), else the directory's."""
    from privsim.studies.sweep import STUDY_FILE, read_study_file

    study = read_study_file(directory / STUDY_FILE, missing_ok=True)
    return str(study.get("name") or directory.name)


def write_report(directory: str | Path) -> tuple[Path, list[Path]]:
    """Write ``report/summary.md``, ``report/*.png`` and, when the rows keep per-round
    curves, ``report/curves.csv``; returns the summary's and the figures' paths."""
    from privsim.analysis.figures import draw_study

    directory = Path(directory)
    frame = load(directory)
    name = _study_name(directory)  # before anything is written
    summary = summarise(frame)
    out = make_folder(directory, "report", "report directory")  # a link out is refused
    figures = draw_study(frame, summary, out) if not summary.empty else []
    curves = write_curves(frame, out)  # the rounds each replication kept, if any
    keys = grid_columns(frame)
    status = frame.groupby("status").size().to_dict() if "status" in frame else {}
    parts = [
        f"# Study report: {name}",
        "",
        f"{len(frame)} replications: "
        + ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
        + ".",
        "",
        "Per grid cell: the replications (rows), how many released and how many of those "
        "do not meet their privacy guarantee (over_budget; non-private baselines aside); "
        "the share that aborted and the share that released; of the released, the share "
        "that met its (ε, δ) guarantee "
        '("non-private" for a labelled non-private baseline); then over the released '
        "replications n, the median with its 95% percentile-bootstrap interval (1000 "
        "resamples, fixed seed), the interquartile range and mean ± sd. A cell where "
        'nothing released is listed with "no release".',
    ]
    for metric, label in metrics_of(frame).items():
        rows = summary[summary["metric"] == metric] if not summary.empty else summary
        if rows.empty:
            continue
        table = metric_table(rows, keys)
        parts += ["", f"## {label} (`{metric}`)", "", _markdown_table(table)]
    for view in views_of(frame):
        for title, body in view.sections(frame) if view.sections else []:
            parts += ["", f"## {title}", "", body]
    if curves is not None:
        parts += [
            "",
            "## Per-round curves",
            "",
            f"[`{curves.name}`]({curves.name}): every replication's rounds, one line per "
            "replication and round (its row id, cell, replication, seed, status and grid "
            "fields, then the round's figures).",
        ]
    if figures:
        parts += ["", "## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    errors = frame[frame["status"] == "error"] if "status" in frame else frame.iloc[0:0]
    if not errors.empty:
        parts += ["", "## Failed replications", ""]
        parts += [f"- `{r['row_id']}`: {r.get('error', '')}" for _, r in errors.head(20).iterrows()]
    md = write_text("summary.md", "\n".join(parts) + "\n", within=out, what="report")
    return md, figures
