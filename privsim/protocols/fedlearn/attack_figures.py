"""The figures of a threat study of training (``threat.attack``), one per attack: its
success against the coalition's size, one line per cell of the other fields that vary
among its rows (aggregation, noise), with the ε privsim reports against the same
coalition on a second axis.

Each point is the median over the cell's released replications; an ε that is infinite
in most of them (the coalition broke an event's trust) is drawn at the top of the
second axis as a triangle. A success above 0 where the reported ε is finite and met is
what a reader looks for first: an attack the ledger did not account for.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from privsim.kit.spec import FigureKit

__all__ = ["ATTACK_FIGURE", "COALITION_AXIS", "SUCCESS_COLUMN", "draw_attack"]

SUCCESS_COLUMN = "attack.success"
EPSILON_COLUMN = "privacy.achieved_epsilon"
COALITION_AXIS = "grid.threat.colluding_clients"
ATTACK_AXIS = "grid.threat.attack"
ATTACK_FIGURE = "attack_vs_coalition"


def _numbers(values: Any) -> np.ndarray:
    import pandas as pd

    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _median(values: np.ndarray) -> float:
    """The median, ∞ when most values are; NaN for none."""
    if not values.size:
        return math.nan
    return float(np.median(values))


#: Short names of the fields a line is labelled by (the aggregation by its value alone).
SHORT = {"grid.training.aggregation": "", "grid.training.noise_multiplier": "z"}


def _varying(rows: Any) -> list[str]:
    """The grid fields that split the rows into lines, less those another one already
    decides (the colluding servers of a case, given its aggregation)."""
    keys = [
        c
        for c in sorted(rows.columns)
        if c.startswith("grid.")
        and c not in (COALITION_AXIS, ATTACK_AXIS)
        and rows[c].astype(str).nunique() > 1
    ]

    def cells(columns: list[str]) -> int:
        return len({tuple(str(rows[c].iloc[i]) for c in columns) for i in range(len(rows))})

    whole = cells(keys)
    for key in sorted(keys, key=lambda k: (k in SHORT, k)):  # drop the others first
        rest = [k for k in keys if k != key]
        if rest and cells(rest) == whole:
            keys = rest
    return keys


def _label(keys: list[str], cell: tuple[str, ...]) -> str:
    """``dca, z = 0``: a line's label."""
    words = []
    for key, value in zip(keys, cell, strict=True):
        name = SHORT.get(key, key.rsplit(".", 1)[-1])
        words.append(f"{name} = {value}" if name else value)
    return ", ".join(words)


def draw_attack(kit: FigureKit) -> list[Path]:
    """``attack_vs_coalition[_<attack>].png`` (one per attack) when the rows hold an
    attack's success and the coalition's size varies; nothing otherwise."""
    frame = kit.frame
    if frame is None or SUCCESS_COLUMN not in frame or COALITION_AXIS not in frame:
        return []
    rows = frame[frame["status"] == "released"] if "status" in frame else frame
    rows = rows[rows[SUCCESS_COLUMN].notna()]
    if not len(rows):
        return []
    if ATTACK_AXIS not in rows:
        return [_panel(kit, rows, ATTACK_FIGURE, "")]
    drawn = []
    for attack in sorted(rows[ATTACK_AXIS].astype(str).unique()):
        part = rows[rows[ATTACK_AXIS].astype(str) == attack]
        drawn.append(_panel(kit, part, f"{ATTACK_FIGURE}_{attack}", attack))
    return drawn


def _panel(kit: FigureKit, rows: Any, name: str, attack: str) -> Path:
    """One attack's figure: a line per cell of the fields that vary among its rows."""
    keys = _varying(rows)
    size = _numbers(rows[COALITION_AXIS])
    success = _numbers(rows[SUCCESS_COLUMN])
    epsilon = (
        _numbers(rows[EPSILON_COLUMN]) if EPSILON_COLUMN in rows else np.full(len(rows), np.nan)
    )
    cells: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(rows)):
        cells.setdefault(tuple(str(rows[k].iloc[i]) for k in keys), []).append(i)
    fig, ax = kit.figure(6.4, 4.2)
    right = ax.twinx()
    finite = epsilon[np.isfinite(epsilon)]
    top = float(finite.max()) * 1.15 if finite.size else 1.0
    for cell, at in sorted(cells.items()):
        idx = np.asarray(at)
        xs = np.unique(size[idx][np.isfinite(size[idx])])
        ys = [_median(success[idx][(size[idx] == x) & np.isfinite(success[idx])]) for x in xs]
        es = [_median(epsilon[idx][size[idx] == x]) for x in xs]
        label = _label(keys, cell) if keys else "success"
        line = ax.plot(xs, ys, marker="o", ms=4, label=label)[0]
        colour = line.get_color()
        shown = [(x, e) for x, e in zip(xs, es, strict=True) if math.isfinite(e)]
        if shown:
            right.plot(*zip(*shown, strict=True), ls="--", lw=1, marker="x", ms=4, color=colour)
        broken = [x for x, e in zip(xs, es, strict=True) if e == math.inf]
        if broken:
            right.plot(broken, [top] * len(broken), ls="", marker="^", ms=7, color=colour)
    ax.set_xlabel("colluding clients (threat.colluding_clients)")
    ax.set_ylabel("attack success, median\n(share of targeted client-rounds recovered)")
    ax.set_ylim(-0.03, 1.03)
    right.set_ylabel("reported ε against the coalition, median\n(dashed; ▲ at the top: ∞)")
    right.set_ylim(0.0, top * 1.05)
    title = f"{attack}: " if attack else ""
    ax.set_title(f"{title}success and reported ε against the coalition's size", fontsize=9)
    return kit.finish(fig, ax, name, legend_size=7)
