"""Interactive figures of the HTML study report (plotly, drawn from plain figure dicts).

One point per released replication, placed against the study's main grid axis (ε when
it varies) and spread sideways within its cell, with the cell's median and
interquartile range (linear interpolation, as the summary tables) as a line with error
bars. Hovering a point names its row, its seed and the ``privsim replay`` command that
reruns it. Metrics that every method of a protocol reports (``methods.<m>.<metric>``)
share one figure per cell of the other grid fields, a trace per method; other metrics
get one figure with a trace per cell of the other grid fields (fields that a case sets
together split the lines once). Integer and text grid fields (T, N, a mode) are
categorical axes; achieved ε is drawn with the target ε = ε line; a positive metric
whose largest value exceeds 20 times its median gets a log axis; a metric with one
value everywhere gets no figure (the tables say it). Above :data:`WEBGL_POINTS`
points a figure draws with WebGL.
"""

from __future__ import annotations

import html
import itertools
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.colors import TABLEAU_COLORS

from privsim.analysis.curves import ReportKit
from privsim.analysis.summary import axes_of, grid_columns, metrics_of, views_of

__all__ = ["HtmlFigure", "figure_block", "protocol_figures", "study_figures"]

#: Above this many points a figure draws them with WebGL rather than SVG.
WEBGL_POINTS = 4000
#: Figures per metric family at most (one per cell of the other grid fields).
MAX_PANELS = 12

_PALETTE = tuple(TABLEAU_COLORS.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class HtmlFigure:
    """One figure of the page: its title, its ``<div>`` and script, and what it shows —
    the metric columns, the grid values its rows are restricted to, and its number of
    points (released rows with a finite value; a protocol's figure: its markers), for
    the page's reader and the test."""

    title: str
    html: str
    columns: tuple[str, ...]
    where: tuple[tuple[str, Any], ...]
    points: int
    #: ``rows``: the page's own figure, a point per released row; ``protocol``: a
    #: protocol's own (:attr:`~privsim.kit.spec.StudyView.html_figures`), whose
    #: ``points`` are the markers it draws.
    kind: str = "rows"


def _numbers(values: Any) -> Any:
    import pandas as pd

    out = pd.to_numeric(values, errors="coerce").astype(np.float64)
    return out.replace([np.inf, -np.inf], np.nan)


def _varying(frame: Any) -> list[str]:
    return [c for c in grid_columns(frame) if frame[c].astype(str).nunique() > 1]


def _x_axis(frame: Any, varying: Sequence[str]) -> str | None:
    """ε when it varies, else the first numeric varying grid field, else the first."""
    if "grid.privacy.epsilon" in varying:
        return "grid.privacy.epsilon"
    numeric = [c for c in varying if _numbers(frame[c]).notna().all()]
    ordered = numeric or list(varying)
    return ordered[0] if ordered else None


def _splits(frame: Any, varying: Sequence[str], x: str | None) -> list[str]:
    """The varying grid fields besides ``x`` that are not determined by the others (a
    case that sets N and the test size together splits the lines once, not twice)."""
    keep = [c for c in varying if c != x]
    labelled = axes_of(frame)
    # drop unlabelled fields first: the line names keep the ones with a label
    for column in sorted(keep, key=lambda c: (c in labelled, c)):
        others = [c for c in keep if c != column] + ([x] if x else [])
        if not others:
            continue
        per = frame.groupby([frame[o].astype(str) for o in others])[column]
        if per.apply(lambda s: s.astype(str).nunique()).max() <= 1:
            keep.remove(column)
    return keep


def _families(frame: Any) -> dict[str, list[tuple[str, str, str | None]]]:
    """Metric families: ``methods.<m>.<suffix>`` columns grouped by suffix (one trace
    per method), every other metric alone; entries (column, label, method)."""
    families: dict[str, list[tuple[str, str, str | None]]] = {}
    for column, label in metrics_of(frame).items():
        if column.startswith("methods."):
            method, _, suffix = column.removeprefix("methods.").partition(".")
            short = label.removesuffix(f" ({method})")
            families.setdefault(f"methods.*.{suffix}", []).append((column, short, method))
        else:
            families.setdefault(column, []).append((column, label, None))
    return families


def _integers(values: Any) -> bool:
    """A grid field of whole numbers (T, N, K) or of booleans: a categorical axis."""
    import pandas as pd

    return bool(pd.api.types.is_integer_dtype(values) or pd.api.types.is_bool_dtype(values))


def _order(text: str) -> tuple[int, float, str]:
    """Categories in numeric order where they are numbers, else alphabetical."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _label(column: str, axes: dict[str, tuple[str, bool]]) -> str:
    return axes.get(column, (column.removeprefix("grid."), False))[0]


def _where_text(where: Sequence[tuple[str, Any]], axes: dict[str, tuple[str, bool]]) -> str:
    return ", ".join(f"{_label(c, axes)} = {v}" for c, v in where)


def _select(frame: Any, where: Sequence[tuple[str, Any]]) -> Any:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where:
        mask &= (frame[column].astype(str) == str(value)).to_numpy()
    return frame[mask]


def _jitter(x: np.ndarray, rank: np.ndarray, count: int, log: bool, span: float) -> np.ndarray:
    """Spread the replications of one cell side by side around their x (display only:
    the hover text shows the exact value)."""
    offset = (rank - (count - 1) / 2) / max(count, 1)
    if log:
        return x * np.power(10.0, offset * 0.06)
    return x + offset * 0.04 * span


def _groups(
    rows: Any,
    members: Sequence[tuple[str, str, str | None]],
    splits: Sequence[str],
    axes: dict[str, tuple[str, bool]],
) -> list[tuple[str, Any, str]]:
    """The traces of a figure: (name, rows, metric column), one per method, else one
    per cell of the splitting grid fields."""
    if any(m for _, _, m in members):
        return [(m or c, rows, c) for c, _, m in members]
    column, label = members[0][0], members[0][1]
    if not splits:
        return [(label, rows, column)]
    out = []
    for coords, part in rows.groupby([rows[s].astype(str) for s in splits], sort=True):
        coords = coords if isinstance(coords, tuple) else (coords,)
        name = ", ".join(f"{_label(s, axes)} = {v}" for s, v in zip(splits, coords, strict=True))
        out.append((name, part, column))
    return out


def _median_trace(
    part: Any, y: np.ndarray, x: str, categorical: bool, name: str, colour: str
) -> dict[str, Any]:
    """The cells' medians joined by a line, with their interquartile ranges as error
    bars (linear interpolation, as the summary tables')."""
    keys = part[x].astype(str).to_numpy()
    positions = _numbers(part[x]).to_numpy()
    cells = []
    for key in set(keys):
        mask = keys == key
        q25, q50, q75 = np.percentile(y[mask], [25, 50, 75])
        cells.append((key, float(positions[mask][0]), q25, q50, q75))
    cells.sort(key=lambda c: _order(c[0]) if categorical else (0, c[1], ""))
    return {
        "type": "scatter",
        "x": [c[0] if categorical else c[1] for c in cells],
        "y": [c[3] for c in cells],
        "mode": "lines",
        "name": f"median, IQR: {name}",
        "legendgroup": name,
        "showlegend": False,
        "line": {"color": colour, "width": 2},
        "error_y": {
            "type": "data",
            "symmetric": False,
            "array": [c[4] - c[3] for c in cells],
            "arrayminus": [c[3] - c[2] for c in cells],
            "color": colour,
            "thickness": 1.5,
            "width": 4,
        },
        # the hover belongs to the replications (a median can sit on a point): the
        # tables give the cell's numbers
        "hoverinfo": "skip",
    }


def _heavy_tailed(values: np.ndarray) -> bool:
    """Positive values whose largest is over 20 times their median: a linear axis would
    squash every median against zero (BLR's MAEs have such draws)."""
    return bool(values.size) and bool((values > 0).all()) and values.max() > 20 * np.median(values)


def _layout(
    frame: Any, x: str | None, categorical: bool, log: bool, title: str, family: str, axes: Any
) -> dict[str, Any]:
    grid = {"gridcolor": "#e8e8e8", "zeroline": False, "linecolor": "#999", "showline": True}
    xaxis: dict[str, Any] = {**grid, "title": {"text": _label(x, axes) if x else "replication"}}
    if x is not None and categorical:
        order = sorted(set(frame[x].astype(str)), key=_order)
        xaxis.update(type="category", categoryorder="array", categoryarray=order)
    elif x is not None:
        ticks = sorted(set(_numbers(frame[x]).dropna()))
        xaxis["type"] = "log" if log else "linear"
        if len(ticks) <= 12:
            xaxis.update(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return {
        "title": {"text": title, "font": {"size": 14}},
        "height": 480,
        "margin": {"l": 70, "r": 20, "t": 50, "b": 40},
        "legend": {"font": {"size": 11}, "orientation": "h", "yanchor": "top", "y": -0.18},
        "hovermode": "closest",
        "hoverlabel": {"align": "left"},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"family": "system-ui, sans-serif", "size": 12, "color": "#333"},
        "xaxis": xaxis,
        "yaxis": {**grid, "title": {"text": family}},
    }


def _figure(
    frame: Any,
    members: Sequence[tuple[str, str, str | None]],
    x: str | None,
    splits: Sequence[str],
    where: tuple[tuple[str, Any], ...],
    results_dir: str,
    axes: dict[str, tuple[str, bool]],
    div_id: str,
) -> HtmlFigure | None:
    import plotly.io as pio

    released = frame[frame["status"] == "released"] if "status" in frame else frame
    rows = _select(released, where)
    numeric = x is not None and bool(_numbers(frame[x]).notna().all())
    categorical = x is not None and (_integers(frame[x]) or not numeric)
    log = x is not None and not categorical and bool(axes.get(x, ("", False))[1])
    span = float(np.ptp(_numbers(frame[x]).to_numpy())) if numeric and x is not None else 1.0
    groups = _groups(rows, members, splits, axes)
    size = sum(int(_numbers(part[c]).notna().sum()) for _, part, c in groups if c in part)
    kind = "scattergl" if size > WEBGL_POINTS else "scatter"
    points: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    plotted: list[np.ndarray] = []
    for i, (name, part, column) in enumerate(groups):
        if column not in part:
            continue
        values = _numbers(part[column])
        ok = values.notna().to_numpy()
        if not ok.any():
            continue
        part, y = part[ok], values[ok].to_numpy()
        plotted.append(y)
        colour = _PALETTE[i % len(_PALETTE)]
        if x is None:
            xs = part["replication"].to_numpy() if "replication" in part else np.arange(len(part))
            shown: Any = xs
            x_text = [str(v) for v in xs]
        else:
            xs = _numbers(part[x]).to_numpy()
            by_cell = part.groupby(part[x].astype(str))
            rank = by_cell.cumcount().to_numpy().astype(np.float64)
            if categorical:
                shown = x_text = part[x].astype(str).tolist()
            else:
                shown = _jitter(xs, rank, int(by_cell.size().max()), log, span)
                x_text = [f"{v:.6g}" for v in xs]
        replay = [
            f"privsim replay {shlex.quote(str(r))} --out {shlex.quote(results_dir)}"
            for r in part["row_id"]
        ]
        seeds = part["seed"].astype(str).tolist() if "seed" in part else [""] * len(part)
        custom = list(
            zip(
                part["row_id"].astype(str).tolist(),
                seeds,
                replay,
                x_text,
                [f"{v:.6g}" for v in y],
                strict=True,
            )
        )
        points.append(
            {
                "type": kind,
                "x": shown,
                "y": y,
                "mode": "markers",
                "name": name,
                "legendgroup": name,
                "marker": {"color": colour, "size": 6, "opacity": 0.55},
                "customdata": custom,
                "hovertemplate": (
                    "<b>row %{customdata[0]}</b><br>seed %{customdata[1]}<br>"
                    + (f"{_label(x, axes)} = %{{customdata[3]}}<br>" if x else "")
                    + "value %{customdata[4]}<br>%{customdata[2]}<extra>%{fullData.name}</extra>"
                ),
            }
        )
        if x is not None:
            lines.append(_median_trace(part, y, x, categorical, name, colour))
    if not points or np.unique(np.concatenate(plotted)).size <= 1:
        return None  # nothing, or one value everywhere: the tables say it
    family = members[0][1]
    columns = tuple(c for c, _, _ in members)
    if x == "grid.privacy.epsilon" and columns[0].endswith("privacy.achieved_epsilon"):
        targets = sorted(
            {
                (float(v), k)
                for k, v in zip(frame[x].astype(str), _numbers(frame[x]), strict=True)
                if np.isfinite(v)
            }
        )
        lines.append(
            {
                "type": "scatter",
                "x": [k if categorical else v for v, k in targets],
                "y": [v for v, _ in targets],
                "mode": "lines",
                "name": "target ε",
                "line": {"color": "black", "dash": "dash", "width": 1},
                "hoverinfo": "skip",
            }
        )
    title = family + (f" — {_where_text(where, axes)}" if where else "")
    layout = _layout(frame, x, categorical, log, title, family, axes)
    every = np.concatenate(plotted)
    if _heavy_tailed(every):
        layout["yaxis"]["type"] = "log"
        layout["yaxis"]["title"]["text"] = f"{family} (log scale: heavy tail)"
    figure = {"data": [*points, *lines], "layout": layout}
    div = pio.to_html(
        figure,
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        default_width="100%",
        default_height="480px",
        config={"displaylogo": False, "responsive": True},
        validate=False,
    )
    total = sum(len(p) for p in plotted)
    return HtmlFigure(title=title, html=div, columns=columns, where=where, points=total)


def study_figures(frame: Any, results_dir: str) -> list[HtmlFigure]:
    """Every figure of the page, from the study's rows (one point per released
    replication, medians and quartiles over the same rows as the summary's);
    ``results_dir`` goes into the replay commands."""
    if frame.empty:
        return []
    axes = axes_of(frame)
    varying = _varying(frame)
    x = _x_axis(frame, varying)
    splits = _splits(frame, varying, x)
    out: list[HtmlFigure] = []
    counter = itertools.count()
    for members in _families(frame).values():
        panels: list[tuple[tuple[str, Any], ...]] = [()]
        if any(m for _, _, m in members) and splits:
            values = [sorted(set(frame[s].astype(str))) for s in splits]
            panels = [
                tuple(zip(splits, combo, strict=True)) for combo in itertools.product(*values)
            ]
            panels = panels[:MAX_PANELS]
        for where in panels:
            fig = _figure(
                frame,
                members,
                x,
                [] if where else splits,
                where,
                results_dir,
                axes,
                f"figure-{next(counter)}",
            )
            if fig is not None:
                out.append(fig)
    return out


def _markers(trace: Any) -> int:
    """The markers a trace draws: its points when its mode has markers (plotly's
    default mode draws them below 20 points)."""
    size = len(trace.get("x") or trace.get("y") or ())
    mode = trace.get("mode")
    if trace.get("type", "scatter") not in ("scatter", "scattergl"):
        return 0
    if mode is None:
        return size if size < 20 else 0
    return size if "markers" in str(mode) else 0


def _styled(figure: Any, title: str) -> dict[str, Any]:
    """A protocol's figure dict in the page's style: its layout over the page's (axes,
    fonts, legend, background), axis by axis."""
    layout = dict(figure.get("layout") or {})
    base = _layout(None, None, False, False, title, "", {})
    for axis in ("xaxis", "yaxis"):
        base[axis] = {k: v for k, v in base[axis].items() if k != "title"}
        base[axis] = {**base[axis], **dict(layout.pop(axis, None) or {})}
    return {"data": list(figure.get("data") or []), "layout": {**base, **layout}}


def protocol_figures(frame: Any) -> list[HtmlFigure]:
    """The figures the protocols present draw themselves
    (:attr:`~privsim.kit.spec.StudyView.html_figures`, e.g. per-round curves with their
    replication bands), in the page's style (their ``div``s named ``protocol-figure-N``,
    apart from the page's own ``figure-N``)."""
    import plotly.io as pio

    if frame.empty:
        return []
    kit = ReportKit(frame)
    out: list[HtmlFigure] = []
    for view in views_of(frame):
        for title, figure in view.html_figures(kit) if view.html_figures else []:
            styled = _styled(figure, title)
            div = pio.to_html(
                styled,
                full_html=False,
                include_plotlyjs=False,
                div_id=f"protocol-figure-{len(out)}",
                default_width="100%",
                default_height=f"{styled['layout'].get('height', 480)}px",
                config={"displaylogo": False, "responsive": True},
                validate=False,
            )
            points = sum(_markers(t) for t in styled["data"])
            out.append(
                HtmlFigure(
                    title=title, html=div, columns=(), where=(), points=points, kind="protocol"
                )
            )
    return out


def figure_block(fig: HtmlFigure) -> str:
    """The figure's container: its ``div`` with what it shows in data attributes."""
    where = json.dumps({c: v for c, v in fig.where}, default=str)
    return (
        f'<figure class="plot" data-kind="{html.escape(fig.kind)}" data-points="{fig.points}" '
        f'data-columns="{html.escape(json.dumps(list(fig.columns)))}" '
        f'data-where="{html.escape(where)}">{fig.html}</figure>'
    )
