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

from privsim.studies.summary import METHOD_METRICS, METRICS, grid_columns

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


#: Line styles of the BLR methods, as in the paper's Figure 2.
METHOD_STYLE = {
    "NP": ("black", "-"),
    "proj_NP": ("grey", "--"),
    "TA": ("tab:blue", "-"),
    "proj_TA": ("tab:blue", "--"),
    "DDP": ("tab:orange", "-"),
    "proj_DDP": ("tab:orange", "--"),
    "input_perturbation": ("tab:red", ":"),
}


def _method_plots(summary: Any, x: str, prefix: str, out: Path) -> list[Path]:
    """One figure per combination of the other grid columns: ``prefix.<method>`` against
    ``x``, one line per method, median with interquartile band."""
    rows = summary[summary["metric"].str.startswith(prefix + ".")]
    if rows.empty or x not in rows or rows[x].nunique() < 2:
        return []
    others = [c for c in grid_columns(rows) if c != x and rows[c].nunique() > 1]
    drawn = []
    groups = rows.groupby(others, sort=True) if others else [((), rows)]
    for key, panel in groups:
        key = key if isinstance(key, tuple) else (key,)
        title = ", ".join(f"{_label(c)}={v}" for c, v in zip(others, key, strict=True))
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        marked = False
        order = list(METHOD_STYLE)
        metrics = sorted(
            panel["metric"].unique(),
            key=lambda m: (
                order.index(m[len(prefix) + 1 :]) if m[len(prefix) + 1 :] in order else 99,
                m,
            ),
        )
        for metric in metrics:
            group = panel[panel["metric"] == metric]
            method = metric.removeprefix(prefix + ".")
            color, style = METHOD_STYLE.get(method, (None, "-"))
            group = group.sort_values(x)
            line = ax.plot(
                group[x], group["median"], marker="o", ms=3, color=color, ls=style, label=method
            )[0]
            ax.fill_between(
                group[x], group["q25"], group["q75"], alpha=0.12, color=line.get_color()
            )
            met = summary[summary["metric"] == f"guarantee_met.{method}"]
            if not met.empty:  # mark cells where the release exceeded its budget
                met = met.merge(group[[*grid_columns(group), "median"]], on=grid_columns(group))
                over = met[met["mean"] < 1.0]
                if not over.empty:
                    ax.scatter(
                        over[x],
                        over["median_y"],
                        marker="x",
                        s=60,
                        color="red",
                        zorder=5,
                        label=None if marked else "over budget: not a valid (ε, δ) guarantee",
                    )
                    marked = True
        label, logx = AXES.get(x, (_label(x), False))
        ax.set_xlabel(label)
        ax.set_ylabel(f"{METHOD_METRICS.get(prefix, prefix)}\nmedian, band: interquartile range")
        if logx:
            ax.set_xscale("log")
            ax.set_xticks(sorted(rows[x].unique()))
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
        if prefix == "mae":
            top = panel[panel["metric"] != "mae.input_perturbation"]["q75"].max()
            ax.set_ylim(bottom=0, top=1.15 * top)  # input perturbation runs off the chart
        ax.set_title(title or prefix, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        stem = "_".join(str(v) for v in key).replace(".", "_").replace("/", "_") or "all"
        path = out / f"{prefix}_by_method_vs_{_label(x).replace('.', '_')}_{stem}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        drawn.append(path)
    return drawn


def draw_study(summary: Any, directory: str | Path) -> list[Path]:
    """Write the study's PNG figures into ``directory``; returns their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    drawn: list[Path] = []
    if summary["metric"].str.startswith("mae.").any():  # per-method studies (BLR)
        return _method_plots(summary, "grid.privacy.epsilon", "mae", out)
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
