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
    "grid.bcd.records": ("number of records N", True),
    "grid.bcd.correlation": ("correlation between predictors", False),
    "grid.bcd.r_squared": ("R² of the data-generating model", False),
    "grid.bcd.gamma": ("loss scaling γ", False),
    "grid.race.owners": ("data owners K", True),
}


def _finish(fig: Any, ax: Any, path: Path, legend_size: int = 8) -> Path:
    """Grid, legend, layout; write the PNG and free the figure."""
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _stem(values: Any) -> str:
    return "_".join(str(v) for v in values).replace(".", "_").replace("/", "_")


def _label(column: str) -> str:
    return column.removeprefix("grid.")


def _series_plot(summary: Any, x: str, metric: str, path: Path, logy: bool = False) -> Path | None:
    rows = summary[summary["metric"] == metric]
    if rows.empty or x not in rows or rows[x].nunique() < 2:
        return None
    others = [
        c
        for c in grid_columns(rows)
        if c != x
        and rows[c].nunique() > 1
        # a field that moves with x (set together in a case) is not a series of its own
        and rows[[x, c]].drop_duplicates().shape[0] > rows[x].nunique()
    ]
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
    return _finish(fig, ax, path)


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
        stem = _stem(key) or "all"
        drawn.append(
            _finish(
                fig, ax, out / f"{prefix}_by_method_vs_{_label(x).replace('.', '_')}_{stem}.png"
            )
        )
    return drawn


def _one_factor_plots(summary: Any, metric: str, out: Path) -> list[Path]:
    """One-factor-at-a-time studies (a baseline and variations of one field each): for
    each numeric grid field, the metric against that field with every other field at
    its baseline (its most frequent value); panels per value of text fields."""
    rows = summary[summary["metric"] == metric]
    if rows.empty:
        return []
    keys = grid_columns(rows)
    import pandas as pd

    text = [c for c in keys if not pd.api.types.is_numeric_dtype(rows[c])]
    numeric = [c for c in keys if c not in text and rows[c].nunique() > 1]
    drawn = []
    panels = rows.groupby(text, sort=True) if text else [((), rows)]
    for key, panel in panels:
        key = key if isinstance(key, tuple) else (key,)
        baseline = {c: panel[c].mode().iloc[0] for c in numeric}
        for factor in numeric:
            sel = panel
            for other in numeric:
                if other != factor:
                    sel = sel[sel[other] == baseline[other]]
            if sel[factor].nunique() < 2:
                continue
            sel = sel.sort_values(factor)
            fig, ax = plt.subplots(figsize=(6.0, 4.0))
            line = ax.plot(sel[factor], sel["median"], marker="o", label="DP-BCD, median")[0]
            ax.fill_between(sel[factor], sel["q25"], sel["q75"], alpha=0.2, color=line.get_color())
            ref = summary[summary["metric"] == "reference.r2_central"]
            if metric == "accuracy.r2" and not ref.empty:
                ref = ref.merge(sel[keys], on=keys).sort_values(factor)
                ax.plot(ref[factor], ref["median"], color="black", ls="--", label="centralised")
            label, logx = AXES.get(factor, (_label(factor), False))
            ax.set_xlabel(label)
            ax.set_ylabel(f"{METRICS.get(metric, metric)}\nmedian, band: interquartile range")
            if logx or factor in ("grid.bcd.records",):
                ax.set_xscale("log")
            ax.set_title(", ".join(str(k) for k in key) or f"vary {_label(factor)}", fontsize=9)
            stem = _stem(key)
            name = f"{metric.replace('.', '_')}_vs_{_label(factor).replace('.', '_')}"
            drawn.append(_finish(fig, ax, out / f"{name}{'_' + stem if stem else ''}.png"))
    return drawn


def draw_coefficients(frame: Any, directory: str | Path) -> list[Path]:
    """Figures 5 and 7 of de Jong et al.: per predictor, the mean DP-BCD coefficient with
    its 2.5–97.5 percentile range over replications, and the centralised coefficient;
    one figure per grid cell of a BCD study with real data."""
    if "accuracy.beta" not in frame.columns:
        return []
    import numpy as np

    out = Path(directory)
    keys = grid_columns(frame)
    drawn = []
    ok = frame[frame["status"] == "released"]
    for coords, group in ok.groupby(keys, sort=True) if keys else [((), ok)]:
        coords = coords if isinstance(coords, tuple) else (coords,)
        cell = dict(zip(keys, coords, strict=True))
        if cell.get("grid.bcd.dataset", "synthetic") == "synthetic":
            continue
        betas = np.array(group["accuracy.beta"].tolist(), dtype=float)
        central = np.array(group["reference.beta_central"].iloc[0], dtype=float)
        lo, hi = np.percentile(betas, [2.5, 97.5], axis=0)
        idx = np.arange(central.size)
        fig, ax = plt.subplots(figsize=(7.0, 0.22 * central.size + 1.6))
        ax.errorbar(
            betas.mean(axis=0),
            idx,
            xerr=[betas.mean(axis=0) - lo, hi - betas.mean(axis=0)],
            fmt="o",
            ms=3,
            capsize=2,
            label="DP-BCD: mean, 2.5–97.5 percentiles",
        )
        ax.scatter(central, idx, marker="x", color="black", zorder=5, label="centralised")
        names = group["dataset.columns"].iloc[0] if "dataset.columns" in group else None
        ax.set_yticks(idx)
        ax.set_yticklabels(names if names else [str(i) for i in idx], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("coefficient")
        ax.set_title(", ".join(f"{_label(k)}={v}" for k, v in cell.items()), fontsize=8)
        drawn.append(_finish(fig, ax, out / f"coefficients_{_stem(coords)}.png", legend_size=7))
    return drawn


def draw_iterations(frame: Any, directory: str | Path) -> list[Path]:
    """Figures 6 and 8 of de Jong et al.: R² of the model after each iteration, median
    over replications, one line per ε; one figure per data set of a BCD study."""
    if "r2_by_iteration" not in frame.columns or "grid.privacy.epsilon" not in frame.columns:
        return []
    import numpy as np
    import pandas as pd

    out = Path(directory)
    drawn = []
    panel_keys = [c for c in grid_columns(frame) if c != "grid.privacy.epsilon"]
    if any(pd.api.types.is_numeric_dtype(frame[c]) for c in panel_keys):
        return []  # one panel per data set; numeric factors have their own figures
    for key, panel in frame.groupby(panel_keys, sort=True) if panel_keys else [((), frame)]:
        key = key if isinstance(key, tuple) else (key,)
        fig, ax = plt.subplots(figsize=(6.0, 4.0))
        for eps, group in panel.groupby("grid.privacy.epsilon", sort=True):
            runs = [r for r in group["r2_by_iteration"] if isinstance(r, list) and r]
            depth = max((len(r) for r in runs), default=0)
            if not depth:
                continue
            padded = np.full((len(runs), depth), np.nan)
            for i, r in enumerate(runs):
                padded[i, : len(r)] = r
            ax.plot(
                np.arange(1, depth + 1),
                np.nanmedian(padded, axis=0),
                marker="o",
                label=f"ε = {eps:g}",
            )
        if "reference.r2_central" in panel:
            ax.axhline(
                float(panel["reference.r2_central"].median()),
                color="black",
                ls="--",
                label="centralised",
            )
        ax.set_ylim(bottom=max(ax.get_ylim()[0], -0.5))
        ax.set_xlabel("iteration")
        ax.set_ylabel("R² (median over replications)")
        ax.set_title(", ".join(str(k) for k in key), fontsize=9)
        drawn.append(_finish(fig, ax, out / f"r2_by_iteration_{_stem(key) or 'all'}.png"))
    return drawn


def draw_study(summary: Any, directory: str | Path) -> list[Path]:
    """Write the study's PNG figures into ``directory``; returns their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    drawn: list[Path] = []
    if (summary["metric"] == "accuracy.r2").any():  # (DP-)BCD studies
        for metric in ("accuracy.r2", "accuracy.aapd"):
            drawn += _one_factor_plots(summary, metric, out)
        return drawn
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
        for metric in (
            "accuracy.rmse",
            "epsilon",
            "accuracy.mre_vs_nonprivate_sketch",
            "accuracy.noise_sd_per_cell",
        ):
            p = _series_plot(summary, x, metric, out / f"{metric.replace('.', '_')}_vs_{stem}.png")
            drawn += [p] if p else []
    return drawn
