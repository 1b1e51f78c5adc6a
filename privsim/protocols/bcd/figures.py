"""Figures of a (DP-)BCD study, drawn with the study report's :class:`FigureKit`.

- R² and AAPD of the published model against each numeric factor, one factor at a time
  (de Jong et al. 2022, Figures 1–4), the centralised R² as the reference;
- per predictor, the mean coefficient with its 2.5–97.5 percentile range over
  replications and the centralised coefficient (Figures 5 and 7);
- R² after each iteration, one line per ε (Figures 6 and 8).

The last two need the study's rows (every replication's β and R² path), not the per-cell
summary: they are drawn when the kit carries the rows as ``kit.frame``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privsim.kit.spec import FigureKit

__all__ = ["draw_coefficients", "draw_iterations", "draw_study"]

EPSILON = "grid.privacy.epsilon"


def _grid(frame: Any) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith("grid."))


#: Grid fields in words, for titles (the study view's axis labels, and the rest).
WORDS = {
    "grid.privacy.epsilon": "ε",
    "grid.bcd.dataset": "data set",
    "grid.bcd.records": "records N",
    "grid.bcd.gamma": "loss scaling γ",
    "grid.bcd.correlation": "correlation",
    "grid.bcd.r_squared": "R² of the model",
}


def _words(column: str) -> str:
    return WORDS.get(column, column.rsplit(".", 1)[-1].replace("_", " "))


def _stem(values: Any) -> str:
    return "_".join(str(v) for v in values).replace(".", "_").replace("/", "_")


def draw_coefficients(kit: FigureKit, frame: Any) -> list[Path]:
    """Figures 5 and 7 of de Jong et al.: per predictor, the mean DP-BCD coefficient with
    its 2.5–97.5 percentile range over released replications, and the centralised
    coefficient; one figure per grid cell of a study with real (fixed) data."""
    needed = ("accuracy.beta", "bcd.reference.beta_central", "status")
    if any(c not in frame.columns for c in needed):
        return []
    keys = _grid(frame)
    drawn = []
    ok = frame[frame["status"] == "released"]
    for coords, group in ok.groupby(keys, sort=True) if keys else [((), ok)]:
        coords = coords if isinstance(coords, tuple) else (coords,)
        cell = dict(zip(keys, coords, strict=True))
        if cell.get("grid.bcd.dataset", "synthetic") == "synthetic":
            continue  # a new data set every replication: no fixed coefficients to show
        betas = np.array(group["accuracy.beta"].tolist(), dtype=float)
        central = np.array(group["bcd.reference.beta_central"].iloc[0], dtype=float)
        mean = betas.mean(axis=0)
        lo, hi = np.percentile(betas, [2.5, 97.5], axis=0)
        idx = np.arange(central.size)
        fig, ax = kit.figure(7.0, 0.22 * central.size + 1.6)
        ax.errorbar(
            mean,
            idx,
            xerr=[mean - lo, hi - mean],
            fmt="o",
            ms=3,
            capsize=2,
            label="DP-BCD: mean, 2.5–97.5 percentiles",
        )
        ax.scatter(central, idx, marker="x", color="black", zorder=5, label="centralised")
        names = group["bcd.dataset.columns"].iloc[0] if "bcd.dataset.columns" in group else None
        ax.set_yticks(idx)
        ax.set_yticklabels(names if names else [str(i) for i in idx], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("coefficient")
        title = ", ".join(f"{_words(k)} = {v}" for k, v in cell.items())
        ax.set_title(title, fontsize=8)
        drawn.append(kit.finish(fig, ax, f"coefficients_{_stem(coords)}", legend_size=7))
    return drawn


def draw_iterations(kit: FigureKit, frame: Any) -> list[Path]:
    """Figures 6 and 8 of de Jong et al.: R² of the model after each iteration, median
    over replications, one line per ε; one figure per data set (studies whose other grid
    fields are all text; numeric factors have their one-factor figures)."""
    if "bcd.r2_by_iteration" not in frame.columns or EPSILON not in frame.columns:
        return []
    import pandas as pd

    drawn = []
    panel_keys = [c for c in _grid(frame) if c != EPSILON]
    if any(pd.api.types.is_numeric_dtype(frame[c]) for c in panel_keys):
        return []
    for key, panel in frame.groupby(panel_keys, sort=True) if panel_keys else [((), frame)]:
        key = key if isinstance(key, tuple) else (key,)
        fig, ax = kit.figure(6.0, 4.0)
        for eps, group in panel.groupby(EPSILON, sort=True):
            runs = [r for r in group["bcd.r2_by_iteration"] if isinstance(r, list) and r]
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
        if "bcd.reference.r2_central" in panel:
            ax.axhline(
                float(panel["bcd.reference.r2_central"].median()),
                color="black",
                ls="--",
                label="centralised",
            )
        ax.set_ylim(bottom=max(ax.get_ylim()[0], -0.5))
        ax.set_xlabel("iteration")
        ax.set_ylabel("R² (median over replications)")
        ax.set_title(", ".join(str(k) for k in key), fontsize=9)
        drawn.append(kit.finish(fig, ax, f"r2_by_iteration_{_stem(key) or 'all'}"))
    return drawn


def draw_study(kit: FigureKit, summary: Any) -> list[Path]:
    """The one-factor R² (with the centralised R²) and AAPD figures from the summary;
    the coefficient and R²-by-iteration figures from the rows, when the kit has them."""
    drawn = kit.one_factor("accuracy.r2", reference="bcd.reference.r2_central")
    drawn += kit.one_factor("accuracy.aapd")
    return drawn + draw_coefficients(kit, kit.frame) + draw_iterations(kit, kit.frame)
