"""Figures of a study (matplotlib lives here and in a protocol's own figure code).

:class:`StudyFigures` is the :class:`~privsim.kit.spec.FigureKit` a protocol's study
view draws with:

- a metric against a grid axis with interquartile bands, one line per other field;
- one metric of every method against ε (methods run side by side);
- one-factor-at-a-time plots (a baseline and variations of one field each).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker

from privsim.analysis.summary import axes_of, grid_columns, metrics_of, views_of

__all__ = ["StudyFigures", "draw_study"]


def _stem(values: Any) -> str:
    return "_".join(str(v) for v in values)


def _file_name(name: str, limit: int = 120) -> str:
    """A safe PNG name from grid values: letters, digits, ``_`` and ``-`` only, and at
    most ``limit`` characters (a long name keeps a hash of the whole)."""
    import hashlib
    import re

    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "figure"
    if len(safe) > limit:
        digest = hashlib.blake2b(name.encode(), digest_size=6).hexdigest()
        safe = f"{safe[: limit - 13]}_{digest}"
    return safe


def _label(column: str) -> str:
    return column.removeprefix("grid.")


class StudyFigures:
    """Draws a study's figures into ``out`` from its rows and their summary."""

    def __init__(self, frame: Any, summary: Any, out: Path) -> None:
        self.frame = frame
        self.summary = summary
        self.out = out
        self.axes = axes_of(frame)
        self.labels = metrics_of(frame)

    # -- the toolkit's primitives -------------------------------------------------------

    def figure(self, width: float, height: float) -> tuple[Any, Any]:
        return plt.subplots(figsize=(width, height))

    def finish(self, fig: Any, ax: Any, name: str, legend_size: int = 8) -> Path:
        """Grid, legend, layout; write the PNG and free the figure."""
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=legend_size)
        fig.tight_layout()
        path = self.out / f"{_file_name(name)}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path

    def _x_axis(self, ax: Any, x: str, values: Any) -> None:
        label, logx = self.axes.get(x, (_label(x), False))
        ax.set_xlabel(label)
        if logx:
            ax.set_xscale("log")
            ax.set_xticks(sorted(values.unique()))
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_locator(ticker.NullLocator())

    # -- figure kinds -------------------------------------------------------------------

    def series(
        self, metrics: Sequence[str], *, axes: Sequence[str] | None = None, logy: bool = False
    ) -> list[Path]:
        drawn = []
        xs = [c for c in grid_columns(self.summary)] if axes is None else list(axes)
        for x in xs:
            for metric in metrics:
                p = self._series_plot(x, metric, logy)
                drawn += [p] if p else []
        return drawn

    def _series_plot(self, x: str, metric: str, logy: bool) -> Path | None:
        summary = self.summary
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
        fig, ax = self.figure(6.4, 4.2)
        groups = rows.groupby(others, sort=True) if others else [((), rows)]
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            group = group.sort_values(x)
            name = (
                ", ".join(f"{_label(c)}={v}" for c, v in zip(others, key, strict=True)) or "median"
            )
            line = ax.plot(group[x], group["median"], marker="o", label=name)[0]
            ax.fill_between(group[x], group["q25"], group["q75"], alpha=0.2, color=line.get_color())
        self._x_axis(ax, x, rows[x])
        ax.set_ylabel(f"{self.labels.get(metric, metric)}\nmedian, band: interquartile range")
        if logy:
            ax.set_yscale("log")
        stem = _label(x).replace(".", "_")
        return self.finish(fig, ax, f"{metric.replace('.', '_')}_vs_{stem}")

    def by_method(
        self,
        metric: str,
        styles: Mapping[str, tuple[str, str]],
        *,
        off_chart: Sequence[str] = (),
        x: str = "grid.privacy.epsilon",
    ) -> list[Path]:
        """One figure per combination of the other grid columns: ``methods.<m>.<metric>``
        against ``x``, one line per method, median with interquartile band; cells where
        a private method went over its budget are marked (non-private baselines are not)."""
        summary = self.summary
        pattern = summary["metric"].str.match(
            r"^methods\.[^.]+\." + metric.replace(".", r"\.") + "$"
        )
        rows = summary[pattern]
        if rows.empty or x not in rows or rows[x].nunique() < 2:
            return []
        others = [c for c in grid_columns(rows) if c != x and rows[c].nunique() > 1]
        order = list(styles)
        drawn = []
        groups = rows.groupby(others, sort=True) if others else [((), rows)]
        for key, panel in groups:
            key = key if isinstance(key, tuple) else (key,)
            title = ", ".join(f"{_label(c)}={v}" for c, v in zip(others, key, strict=True))
            fig, ax = self.figure(6.4, 4.4)
            marked = False
            methods = sorted(
                {m.split(".")[1] for m in panel["metric"].unique()},
                key=lambda m: (order.index(m) if m in order else 99, m),
            )
            for method in methods:
                group = panel[panel["metric"] == f"methods.{method}.{metric}"].sort_values(x)
                color, style = styles.get(method, (None, "-"))
                line = ax.plot(
                    group[x], group["median"], marker="o", ms=3, color=color, ls=style, label=method
                )[0]
                ax.fill_between(
                    group[x], group["q25"], group["q75"], alpha=0.12, color=line.get_color()
                )
                marked |= self._mark_over_budget(ax, method, group, x, marked)
            self._x_axis(ax, x, rows[x])
            label = self.labels.get(f"methods.{methods[0]}.{metric}", metric).rsplit(" (", 1)[0]
            ax.set_ylabel(f"{label}\nmedian, band: interquartile range")
            kept = panel[~panel["metric"].isin([f"methods.{m}.{metric}" for m in off_chart])]
            if off_chart and not kept.empty:
                ax.set_ylim(bottom=0, top=1.15 * kept["q75"].max())  # these run off the chart
            ax.set_title(title or metric, fontsize=9)
            stem = _stem(key) or "all"
            name = f"{metric.replace('.', '_')}_by_method_vs_{_label(x).replace('.', '_')}_{stem}"
            drawn.append(self.finish(fig, ax, name))
        return drawn

    def _mark_over_budget(self, ax: Any, method: str, group: Any, x: str, marked: bool) -> bool:
        summary = self.summary
        keys = grid_columns(group)
        met = summary[summary["metric"] == f"methods.{method}.privacy.guarantee_met"]
        private = self.frame.get(f"methods.{method}.privacy.non_private")
        if met.empty or (private is not None and bool(private.fillna(False).all())):
            return False
        met = met.merge(group[[*keys, "median"]], on=keys)
        over = met[met["mean"] < 1.0]
        if over.empty:
            return False
        ax.scatter(
            over[x],
            over["median_y"],
            marker="x",
            s=60,
            color="red",
            zorder=5,
            label=None if marked else "over budget: not a valid (ε, δ) guarantee",
        )
        return True

    def one_factor(self, metric: str, *, reference: str | None = None) -> list[Path]:
        """For each numeric grid field, the metric against that field with every other
        field at its baseline (its most frequent value); panels per value of text fields."""
        import pandas as pd

        summary = self.summary
        rows = summary[summary["metric"] == metric]
        if rows.empty:
            return []
        keys = grid_columns(rows)
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
                fig, ax = self.figure(6.0, 4.0)
                line = ax.plot(sel[factor], sel["median"], marker="o", label="median")[0]
                ax.fill_between(
                    sel[factor], sel["q25"], sel["q75"], alpha=0.2, color=line.get_color()
                )
                ref = summary[summary["metric"] == reference] if reference else summary.iloc[0:0]
                if not ref.empty:
                    ref = ref.merge(sel[keys], on=keys).sort_values(factor)
                    label = self.labels.get(reference or "", reference)
                    ax.plot(ref[factor], ref["median"], color="black", ls="--", label=label)
                self._x_axis(ax, factor, sel[factor])
                ax.set_ylabel(
                    f"{self.labels.get(metric, metric)}\nmedian, band: interquartile range"
                )
                ax.set_title(", ".join(str(k) for k in key) or f"vary {_label(factor)}", fontsize=9)
                stem = _stem(key)
                name = f"{metric.replace('.', '_')}_vs_{_label(factor).replace('.', '_')}"
                drawn.append(self.finish(fig, ax, f"{name}{'_' + stem if stem else ''}"))
        return drawn


def draw_study(frame: Any, summary: Any, directory: str | Path) -> list[Path]:
    """Write the study's PNG figures into ``directory``: each protocol present draws its
    own (its study view's ``figures``, or its headline metrics against every axis)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    kit = StudyFigures(frame, summary, out)
    drawn: list[Path] = []
    for view in views_of(frame):
        if view.figures is not None:
            drawn += view.figures(kit, summary)
        else:
            drawn += kit.series(view.headline or ("privacy.achieved_epsilon",))
    return list(dict.fromkeys(drawn))  # two protocols sharing a view draw it once
