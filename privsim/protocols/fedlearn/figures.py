"""Figures of a fedlearn study: the learning curves over replications.

Drawn from the rounds every replication keeps (the study view's ``curves``, handed over
as ``kit.curves``: one line per replication and round), over the released replications
of each grid cell, one line per cell (the grid fields that vary):

- test accuracy against round: the median over the cell's replications, with a band
  from their 10th to their 90th percentile (linear interpolation);
- test accuracy against ε so far, the privacy–utility curve: round r of a cell is the
  point (median ε_r, median accuracy_r) over its replications, with the accuracy's
  10th–90th percentile band (the HTML page adds ε's as horizontal bars);
- ε so far against round, with the same band and the target ε dashed.

The static report (PNG, through the :class:`~privsim.kit.spec.FigureKit`) adds the final
accuracy, the achieved ε and (with canaries) the empirical ε against every varied grid
field, and in a threat study the attack's success against the coalition's size
(:mod:`.attack_figures`); the HTML page draws the same three curves (plotly figure dicts,
:func:`html_figures`) and, when the rows hold an empirical ε, that ε against the claimed
one, a point per replication. Rounds whose ε is
infinite (a coalition broke an event's trust) are left out of the ε figures and counted
in their titles. No plotly import here, and matplotlib only for its palette: the kit
draws, the page renders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privsim.kit.spec import FigureKit, StudyKit
from privsim.protocols.fedlearn.attack_figures import draw_attack
from privsim.protocols.fedlearn.report import EMPIRICAL_COLUMN

__all__ = [
    "BAND",
    "EMPIRICAL_TITLE",
    "PLOTS",
    "Curve",
    "curves_of",
    "draw_curves",
    "draw_study",
    "empirical_figure",
    "html_figures",
]

PROTOCOL = "fedlearn"
#: The band's percentiles over a cell's replications, and the band in words.
LOW, HIGH = 10.0, 90.0
BAND = "10th–90th percentile over replications"
#: The target ε's legend entry (the study figures' own, so it sorts after the lines).
TARGET_LABEL = "target ε"
#: Past this many rounds a curve is drawn without markers (static figures).
MARKED_ROUNDS = 40
#: The claimed ε of a row, and the title of the figure that sets the empirical one beside it.
CLAIMED_COLUMN = "privacy.achieved_epsilon"
EMPIRICAL_TITLE = "Empirical ε from canaries against the claimed ε (a point per replication)"


def _palette() -> tuple[str, ...]:
    """The HTML page's palette: matplotlib's tab10, as the page's own figures (its
    colours as hex strings; imported here only, when a page is drawn)."""
    from matplotlib.colors import TABLEAU_COLORS

    return tuple(TABLEAU_COLORS.values())


@dataclass(frozen=True, slots=True)
class Plot:
    """One curve figure: per-round column ``x`` against ``y``, its file name and words."""

    x: str
    y: str
    name: str
    x_label: str
    y_label: str
    title: str


PLOTS = (
    Plot(
        "round",
        "test_accuracy",
        "accuracy_vs_round",
        "round",
        "test accuracy",
        "Test accuracy by round",
    ),
    Plot(
        "epsilon",
        "test_accuracy",
        "accuracy_vs_epsilon",
        "ε so far",
        "test accuracy",
        "Privacy–utility: test accuracy against ε so far (a point per round)",
    ),
    Plot("round", "epsilon", "epsilon_vs_round", "round", "ε so far", "ε so far by round"),
)


@dataclass(frozen=True, slots=True)
class Curve:
    """One cell's curve: per round, the medians of ``x`` and ``y`` over the cell's
    replications and their 10th and 90th percentiles, ``n`` replications each; the
    cell's ``target`` ε (NaN when unknown)."""

    label: str
    rounds: np.ndarray
    x: np.ndarray
    x_lo: np.ndarray
    x_hi: np.ndarray
    y: np.ndarray
    y_lo: np.ndarray
    y_hi: np.ndarray
    n: np.ndarray
    target: float


def _order(value: Any) -> tuple[int, float, str]:
    """Numbers in numeric order, then text in order."""
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def _numbers(values: Any) -> np.ndarray:
    import pandas as pd

    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _varying(table: Any) -> list[str]:
    grid = sorted(c for c in table.columns if c.startswith("grid."))
    return [c for c in grid if table[c].astype(str).nunique() > 1]


def _targets(frame: Any, keys: Sequence[str]) -> dict[tuple[str, ...], float]:
    """The target ε of each cell (by the text of its grid values), from the rows."""
    column = "privacy.target_epsilon"
    if column not in frame or any(k not in frame for k in keys):
        return {}
    targets = _numbers(frame[column])
    cells = [tuple(str(v) for v in vs) for vs in zip(*(frame[k] for k in keys), strict=True)]
    if not keys:
        cells = [()] * len(frame)
    found: dict[tuple[str, ...], list[float]] = {}
    for cell, target in zip(cells, targets, strict=True):
        if math.isfinite(target):
            found.setdefault(cell, []).append(float(target))
    return {cell: float(np.median(values)) for cell, values in found.items()}


def curves_of(kit: StudyKit, x: str, y: str) -> tuple[list[Curve], int]:
    """The cells' curves of ``y`` against ``x`` (per-round columns of ``kit.curves``)
    over the released fedlearn replications, in the order of their grid values; and how
    many (replication, round) points were left out for an infinite value."""
    table = kit.curves
    if table is None or table.empty or x not in table or y not in table:
        return [], 0
    if "protocol" in table:
        table = table[table["protocol"] == PROTOCOL]
    if "run_status" in table:
        table = table[table["run_status"] == "released"]
    if table.empty or "round" not in table:
        return [], 0
    keys = _varying(table)
    xs, ys = _numbers(table[x]), _numbers(table[y])
    infinite = np.isinf(xs) | np.isinf(ys)
    dropped = int(infinite.sum())
    usable = np.isfinite(xs) & np.isfinite(ys)
    targets = _targets(kit.frame, keys)
    rounds = _numbers(table["round"])
    cells: dict[tuple[str, ...], list[int]] = {}
    labels: dict[tuple[str, ...], tuple[Any, ...]] = {}
    for i, values in enumerate(zip(*(table[k] for k in keys), strict=True) if keys else []):
        cell = tuple(str(v) for v in values)
        cells.setdefault(cell, []).append(i)
        labels.setdefault(cell, values)
    if not keys:
        cells, labels = {(): list(range(len(table)))}, {(): ()}
    out = []
    for cell in sorted(cells, key=lambda c: [_order(v) for v in c]):
        index = np.asarray(cells[cell])
        index = index[usable[index]]
        if not index.size:
            continue
        columns = _round_stats(rounds[index], xs[index], ys[index])
        out.append(
            Curve(
                label=kit.describe(keys, labels[cell]) if keys else "median",
                rounds=columns[0].astype(int),
                x=columns[1],
                x_lo=columns[2],
                x_hi=columns[3],
                y=columns[4],
                y_lo=columns[5],
                y_hi=columns[6],
                n=columns[7].astype(int),
                target=targets.get(cell, math.nan),
            )
        )
    return out, dropped


def _round_stats(rounds: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Per round, in order: (round, median, 10th and 90th percentile of x, the same of
    y, count), as rows of an (8, rounds) array. One grouped pass (pandas' quantiles,
    linear interpolation as NumPy's percentile), so 10⁵ rounds take a second, not a
    loop over the rounds that rescans every point."""
    import pandas as pd

    points = pd.DataFrame({"round": rounds, "x": xs, "y": ys})
    groups = points.groupby("round", sort=True)
    qs = groups[["x", "y"]].quantile([0.5, LOW / 100.0, HIGH / 100.0]).unstack()
    return np.vstack(
        [
            qs.index.to_numpy(dtype=np.float64),
            *(
                qs[(v, q)].to_numpy(dtype=np.float64)
                for v in "xy"
                for q in (0.5, LOW / 100.0, HIGH / 100.0)
            ),
            groups.size().to_numpy(dtype=np.float64),
        ]
    )


def _shared_target(curves: Sequence[Curve]) -> float | None:
    """The one target ε of every cell, when they share it (drawn once, in black)."""
    targets = {c.target for c in curves}
    if len(targets) == 1:
        (target,) = targets
        return target if math.isfinite(target) else None
    return None


def _title(plot: Plot, dropped: int) -> str:
    if not dropped:
        return plot.title
    return f"{plot.title}; {dropped} round points with ε = ∞ left out"


def draw_curves(kit: FigureKit) -> list[Path]:
    """The three curve figures (accuracy by round, accuracy against ε so far, ε so far
    by round) as PNGs, one line per cell: the median and its 10th–90th percentile band."""
    drawn = []
    for plot in PLOTS:
        curves, dropped = curves_of(kit, plot.x, plot.y)
        if not curves:
            continue
        fig, ax = kit.figure(6.4, 4.2)
        shared = _shared_target(curves) if plot.y == "epsilon" else None
        labelled = False
        for curve in curves:
            marker = "o" if len(curve.x) <= MARKED_ROUNDS else None
            line = ax.plot(curve.x, curve.y, marker=marker, ms=3, label=curve.label)[0]
            colour = line.get_color()
            ax.fill_between(curve.x, curve.y_lo, curve.y_hi, alpha=0.2, color=colour, lw=0)
            if plot.y == "epsilon" and shared is None and math.isfinite(curve.target):
                label = None if labelled else TARGET_LABEL
                ax.axhline(curve.target, color=colour, ls="--", lw=1, label=label)
                labelled = True
        if shared is not None:
            ax.axhline(shared, color="black", ls="--", lw=1, label=TARGET_LABEL)
        ax.set_xlabel(plot.x_label)
        ax.set_ylabel(f"{plot.y_label}\nmedian, band: {LOW:.0f}th–{HIGH:.0f}th percentile")
        ax.set_title(_title(plot, dropped), fontsize=9)
        drawn.append(kit.finish(fig, ax, plot.name))
    return drawn


def draw_study(kit: FigureKit, summary: Any) -> list[Path]:
    """The study's static figures: the final test accuracy and the achieved ε against
    every varied grid field (median, interquartile band), the empirical ε beside it when
    the runs had canaries, then the curves."""
    metrics = ["accuracy.test_accuracy", CLAIMED_COLUMN, EMPIRICAL_COLUMN]
    return kit.series(metrics) + draw_curves(kit) + draw_attack(kit)


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _floats(values: np.ndarray) -> list[float]:
    return [float(v) for v in values]


def _traces(plot: Plot, curve: Curve, colour: str) -> list[dict[str, Any]]:
    """A cell's band (the 90th percentile, then the 10th filled up to it) and its
    median line; hover gives the round, the band and the replications."""
    xs = _floats(curve.x)
    edge = {"width": 0, "color": colour}
    band = {"legendgroup": curve.label, "showlegend": False, "hoverinfo": "skip"}
    median: dict[str, Any] = {
        "type": "scatter",
        "x": xs,
        "y": _floats(curve.y),
        "mode": "lines+markers",
        "name": curve.label,
        "legendgroup": curve.label,
        "line": {"color": colour, "width": 2},
        "marker": {"color": colour, "size": 5},
        "customdata": [
            [int(r), int(n), float(lo), float(hi), float(x)]
            for r, n, lo, hi, x in zip(
                curve.rounds, curve.n, curve.y_lo, curve.y_hi, curve.x, strict=True
            )
        ],
        "hovertemplate": (
            "round %{customdata[0]}"
            + ("" if plot.x == "round" else f"<br>{plot.x_label} %{{customdata[4]:.4g}}")
            + f"<br>{plot.y_label}: median %{{y:.4g}}"
            + f"<br>{LOW:.0f}th–{HIGH:.0f}th percentile %{{customdata[2]:.4g}}–%{{customdata[3]:.4g}}"
            + "<br>%{customdata[1]} replications<extra>%{fullData.name}</extra>"
        ),
    }
    if plot.x != "round":  # the spread of ε over the replications, as horizontal bars
        median["error_x"] = {
            "type": "data",
            "symmetric": False,
            "array": _floats(curve.x_hi - curve.x),
            "arrayminus": _floats(curve.x - curve.x_lo),
            "color": colour,
            "thickness": 1,
            "width": 0,
        }
    return [
        {
            "type": "scatter",
            "x": xs,
            "y": _floats(curve.y_hi),
            "mode": "lines",
            "line": edge,
            **band,
        },
        {
            "type": "scatter",
            "x": xs,
            "y": _floats(curve.y_lo),
            "mode": "lines",
            "line": edge,
            "fill": "tonexty",
            "fillcolor": _rgba(colour, 0.18),
            **band,
        },
        median,
    ]


def html_figures(kit: StudyKit) -> list[tuple[str, dict[str, Any]]]:
    """The same three curve figures for the HTML report, as plotly figure dicts: per
    cell, the median line with markers and its 10th–90th percentile band (on the
    privacy–utility curve, ε's band as horizontal bars), the target ε dashed."""
    out = []
    palette = _palette()
    for plot in PLOTS:
        curves, dropped = curves_of(kit, plot.x, plot.y)
        if not curves:
            continue
        data: list[dict[str, Any]] = []
        targets: list[tuple[float, str]] = []
        for i, curve in enumerate(curves):
            colour = palette[i % len(palette)]
            data += _traces(plot, curve, colour)
            if plot.y == "epsilon" and math.isfinite(curve.target):
                targets.append((curve.target, colour))
        if targets:
            shared = _shared_target(curves)
            lo = float(min(c.x.min() for c in curves))
            hi = float(max(c.x.max() for c in curves))
            for i, (target, colour) in enumerate([(shared, "black")] if shared else targets):
                data.append(
                    {
                        "type": "scatter",
                        "x": [lo, hi],
                        "y": [target, target],
                        "mode": "lines",
                        "name": TARGET_LABEL,
                        "legendgroup": TARGET_LABEL,
                        "showlegend": i == 0,
                        "line": {"color": colour, "dash": "dash", "width": 1},
                        "hoverinfo": "skip",
                    }
                )
        title = _title(plot, dropped)
        layout = {
            "title": {"text": f"{title}<br><sup>median, band: {BAND}</sup>", "font": {"size": 14}},
            "xaxis": {"title": {"text": plot.x_label}},
            "yaxis": {"title": {"text": plot.y_label}},
            "margin": {"l": 70, "r": 20, "t": 70, "b": 40},
            "hovermode": "closest",
        }
        out.append((title, {"data": data, "layout": layout}))
    empirical = empirical_figure(kit)
    return out if empirical is None else [*out, empirical]


def empirical_figure(kit: StudyKit) -> tuple[str, dict[str, Any]] | None:
    """The one-run empirical ε (canaries, final model) against the claimed ε of each
    released fedlearn replication, a trace per cell, with the line where they are equal:
    a point below it is a run whose final model leaks less than the ledger claims for
    every round's release (as expected), one above it a claim to look at. Rows without
    an estimate (too few canaries released) or with an infinite one are left out and
    counted in the title; None when no row has both figures."""
    frame = kit.frame
    if frame is None or EMPIRICAL_COLUMN not in frame or CLAIMED_COLUMN not in frame:
        return None
    rows = frame
    if "protocol" in rows:
        rows = rows[rows["protocol"] == PROTOCOL]
    if "status" in rows:
        rows = rows[rows["status"] == "released"]
    claimed, empirical = _numbers(rows[CLAIMED_COLUMN]), _numbers(rows[EMPIRICAL_COLUMN])
    usable = np.isfinite(claimed) & np.isfinite(empirical)
    if not usable.any():
        return None
    keys = _varying(rows)
    cells: dict[tuple[str, ...], list[int]] = {}
    for i in np.flatnonzero(usable):
        cells.setdefault(tuple(str(rows[k].iloc[i]) for k in keys), []).append(int(i))
    ids = rows["row_id"].astype(str).tolist() if "row_id" in rows else [""] * len(rows)
    palette = _palette()
    data: list[dict[str, Any]] = []
    for n, cell in enumerate(sorted(cells, key=lambda c: [_order(v) for v in c])):
        at = cells[cell]
        colour = palette[n % len(palette)]
        data.append(
            {
                "type": "scatter",
                "x": _floats(claimed[at]),
                "y": _floats(empirical[at]),
                "mode": "markers",
                "name": kit.describe(keys, cell) if keys else "replications",
                "marker": {"color": colour, "size": 7, "opacity": 0.7},
                "customdata": [ids[i] for i in at],
                "hovertemplate": "row %{customdata}<br>claimed ε %{x:.4g}<br>empirical ε "
                "%{y:.4g}<extra>%{fullData.name}</extra>",
            }
        )
    top = float(max(claimed[usable].max(), empirical[usable].max()))
    data.append(
        {
            "type": "scatter",
            "x": [0.0, top],
            "y": [0.0, top],
            "mode": "lines",
            "name": "empirical = claimed",
            "line": {"color": "black", "dash": "dash", "width": 1},
            "hoverinfo": "skip",
        }
    )
    left = int((~usable).sum())
    title = EMPIRICAL_TITLE + (
        f"; {left} replications without a finite estimate left out" if left else ""
    )
    layout = {
        "title": {
            "text": f"{title}<br><sup>one run each, final model only: an estimate, not a "
            "bound (Andrew et al. 2024)</sup>",
            "font": {"size": 14},
        },
        "xaxis": {"title": {"text": "claimed ε (privacy.achieved_epsilon)"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "empirical ε (canaries)"}, "rangemode": "tozero"},
        "margin": {"l": 70, "r": 20, "t": 70, "b": 40},
        "hovermode": "closest",
    }
    return title, {"data": data, "layout": layout}
