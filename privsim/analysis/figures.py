"""Figures of a study (the only module that imports matplotlib).

- a metric against ε with interquartile bands, one line per method (or other series);
- a metric against the coalition size T, the tolerated T or the dropout rate;
- communication cost against the number of clients N, per role, on log–log axes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker

from privsim.studies.summary import METRICS, grid_columns

__all__ = ["draw_study"]

AXES = {
    "grid.privacy.epsilon": ("privacy budget ε", True),
    "grid.threat.colluding_clients": ("colluding clients T", False),
    "grid.dca.tolerated": ("tolerated dropped-or-colluding clients T", False),
    "grid.faults.absent": ("probability a client is absent", False),
    "grid.faults.crash": ("probability a client crashes", False),
    "grid.population.clients": ("number of clients N", True),
    "grid.data.dimension": ("dimension d", True),
}


def _label(column: str) -> str:
    return column.removeprefix("grid.")


def _series_plot(summary: Any, x: str, metric: str, path: Path, logy: bool = False) -> Path | None:
    rows = summary[summary["metric"] == metric]
    if rows.empty or x not in rows or rows[x].nunique() < 2:
        return None
    others = [c for c in grid_columns(rows) if c != x and rows[c].nunique() > 1]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    groups = rows.groupby(others, sort=True) if others else [((), rows)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values(x)
        name = ", ".join(f"{_label(c)}={v}" for c, v in zip(others, key, strict=True)) or "median"
        line = ax.plot(group[x], group["median"], marker="o", label=name)[0]
        ax.fill_between(group[x], group["q25"], group["q75"], alpha=0.2, color=line.get_color())
    label, logx = AXES.get(x, (_label(x), False))
    ax.set_xlabel(label)
    ax.set_ylabel(f"{METRICS.get(metric, metric)}\nmedian, band: interquartile range")
    if logx:
        ax.set_xscale("log")
        ticks = sorted(rows[x].unique())
        ax.set_xticks(ticks)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def draw_study(summary: Any, directory: str | Path) -> list[Path]:
    """Write the study's PNG figures into ``directory``; returns their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    drawn: list[Path] = []
    axes = [c for c in AXES if c in summary]
    for x in axes:
        stem = _label(x).replace(".", "_")
        if x == "grid.population.clients":
            for metric in (
                "bytes",
                "cost.client.bytes_sent_mean",
                "cost.compute.bytes_received_mean",
            ):
                p = _series_plot(
                    summary, x, metric, out / f"{metric.replace('.', '_')}_vs_{stem}.png", logy=True
                )
                drawn += [p] if p else []
            continue
        for metric in ("accuracy.rmse", "epsilon"):
            p = _series_plot(summary, x, metric, out / f"{metric.replace('.', '_')}_vs_{stem}.png")
            drawn += [p] if p else []
    return drawn
