"""Figures of a study (matplotlib and seaborn live here and in a protocol's figure code).

:class:`StudyFigures` is the :class:`~privsim.kit.spec.FigureKit` a protocol's study
view draws with:

- a metric against a grid axis with interquartile bands, one line per other field;
- one metric of every method against ε (methods run side by side);
- one-factor-at-a-time plots (a baseline and variations of one field each);
- bytes sent per party of each role against the number of parties and the dimension.

Every figure is honest about what did not release: a cell where every replication
aborted is drawn as a ✕ on the axis floor, a cell whose private releases did not all
meet their (ε, δ) guarantee carries a red ✗, and when any cell aborted or went over
budget a lower panel shows the release and guarantee-met rates. A figure of achieved ε
draws the target ε. Integer grid fields (T, number of parties) sit on categorical axes,
and legends and titles speak in words (the axis labels), not field paths.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

from privsim.analysis.curves import ReportKit
from privsim.analysis.summary import (
    PER_PARTY_SUFFIX,
    exposure_of,
    grid_columns,
    metrics_of,
    views_of,
)
from privsim.outputs import output_folder, write_bytes

__all__ = ["SIZE_AXES", "StudyFigures", "draw_study"]

#: Grid fields that set how many parties or how much data each sends: the
#: communication-cost figure is drawn against every one a study varies.
SIZE_AXES = (
    "grid.population.clients",
    "grid.race.owners",
    "grid.bcd.records",
    "grid.data.dimension",
    "grid.blr.synthetic_dimension",
)

ABORTED_LABEL = "no release: every replication aborted"
INFINITE_LABEL = "median ∞ (a coalition broke the trust): drawn at the top"
OVER_LABEL = "over budget: some private releases miss the (ε, δ) guarantee"
TARGET_LABEL = "target ε"
BASELINE_SUFFIX = " (non-private baseline)"
MARKS = (TARGET_LABEL, ABORTED_LABEL, OVER_LABEL)


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


def _wrap(title: str, width: int = 80) -> str:
    """A title on as many lines as it needs (grid values can make it long)."""
    import textwrap

    return "\n".join(textwrap.wrap(title, width)) or title


def _order(value: Any) -> tuple[int, Any]:
    """Numbers in order, then text in order (a categorical axis of mixed values)."""
    return (0, value) if isinstance(value, int | float | np.number) else (1, str(value))


def _is_epsilon(metric: str) -> bool:
    return metric.endswith("privacy.achieved_epsilon")


class StudyFigures(ReportKit):
    """Draws a study's figures into ``out`` from its rows and their summary (its
    ``curves``, grid ``words`` and ``describe`` are the report kit's).

    ``drawn`` keeps every figure written, by path, so tests can count its artists."""

    def __init__(self, frame: Any, summary: Any, out: Path) -> None:
        super().__init__(frame)
        self.summary = summary
        self.out = out
        self.labels = metrics_of(frame)
        self.drawn: dict[Path, Any] = {}

    # -- the toolkit's primitives -------------------------------------------------------

    def figure(self, width: float, height: float) -> tuple[Any, Any]:
        return plt.subplots(figsize=(width, height))

    def finish(self, fig: Any, ax: Any, name: str, legend_size: int = 8) -> Path:
        """Grid, legend, layout; write the PNG and free the figure."""
        for each in fig.axes:
            each.grid(True, alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if handles:  # the lines first, then the marks of what did not release or hold
            order = sorted(range(len(labels)), key=lambda i: labels[i] in MARKS)
            ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=legend_size)
        fig.tight_layout()
        png = io.BytesIO()  # rendered in memory, written by the guarded writer
        fig.savefig(png, format="png", dpi=120)
        plt.close(fig)
        path = write_bytes(
            f"{_file_name(name)}.png", png.getvalue(), within=self.out, what="figure"
        )
        self.drawn[path] = fig
        return path

    def _discrete(self, x: str, values: Any) -> bool:
        """Integer grid fields (T, numbers of parties) and text fields go on categorical
        axes."""
        import pandas as pd

        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            return True
        return bool(pd.api.types.is_integer_dtype(values)) and not x.endswith("epsilon")

    def positions(self, x: str, values: Any, universe: Any) -> Any:
        """Where ``values`` sit on the x axis: themselves, or their rank among the
        ``universe`` of the field's values when the axis is categorical."""
        if not self._discrete(x, universe):
            return np.asarray(values, dtype=np.float64)
        order = {v: i for i, v in enumerate(sorted(universe.unique(), key=_order))}
        return np.asarray([order[v] for v in values], dtype=np.float64)

    def _x_axis(self, ax: Any, x: str, values: Any) -> None:
        label, logx = self.axes.get(x, (self.words(x), False))
        ax.set_xlabel(label)
        if self._discrete(x, values):
            ticks = sorted(values.unique(), key=_order)
            ax.set_xticks(range(len(ticks)))
            ax.set_xticklabels([str(t) for t in ticks])
            ax.set_xlim(-0.5, len(ticks) - 0.5)
        elif logx:
            ax.set_xscale("log")
            ax.set_xticks(sorted(values.unique()))
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_locator(ticker.NullLocator())

    def _needs_rates(self, rows: Any) -> bool:
        """A rate panel when any cell aborted, failed or went over budget."""
        private = ~rows["non_private"].astype(bool)
        return bool((rows["release_rate"] < 1.0).any() or (rows["met_rate"][private] < 1.0).any())

    def _panels(self, width: float, height: float, rates: bool) -> tuple[Any, Any, Any]:
        if not rates:
            fig, ax = self.figure(width, height)
            return fig, ax, None
        fig, (ax, low) = plt.subplots(
            2, 1, figsize=(width, height * 1.35), sharex=True, height_ratios=(3, 1.2)
        )
        return fig, ax, low

    def _honesty(self, ax: Any, xs: Any, group: Any, labelled: set[str]) -> None:
        """✕ on the floor for cells with no release; red ✗ on the median of cells whose
        private releases missed their guarantee; ▲ at the top for a median of ∞ (a broken
        trust). Each label goes in the legend the first time only."""

        def mark(where: Any, ys: Any, label: str, **style: Any) -> None:
            if where.any():
                ax.scatter(
                    xs[where], ys[where], label=None if label in labelled else label, **style
                )
                labelled.add(label)

        edge = {"transform": ax.get_xaxis_transform(), "s": 70, "zorder": 6, "clip_on": False}
        empty = group["n"].to_numpy() == 0
        mark(empty, np.zeros(len(xs)), ABORTED_LABEL, marker="X", color="dimgrey", **edge)
        over = (
            (~group["non_private"].astype(bool)).to_numpy()
            & (group["met_rate"].to_numpy(dtype=np.float64) < 1.0)
            & ~empty
        )
        medians = group["median"].to_numpy(dtype=np.float64)
        top = np.isposinf(medians) & ~empty
        mark(over & ~top, medians, OVER_LABEL, marker="x", s=60, color="red", zorder=5)
        mark(top, np.ones(len(xs)), INFINITE_LABEL, marker="^", color="red", **edge)

    def _rates(self, low: Any, xs: Any, group: Any, color: Any, first: bool) -> None:
        lines = [("release_rate", "o", "-", "released")]
        if not bool(group["non_private"].astype(bool).all()):
            lines.append(("met_rate", "s", ":", "guarantee met (of released)"))
        for column, marker, style, label in lines:
            low.plot(
                xs,
                group[column],
                marker=marker,
                ms=3,
                color=color,
                ls=style,
                label=label if first else None,
            )
        low.set_ylim(-0.05, 1.05)
        low.set_ylabel("rate", fontsize=8)

    def _target(self, ax: Any, xs: Any, group: Any, color: Any, labelled: set[str]) -> None:
        targets = group["target_epsilon"].to_numpy(dtype=np.float64)
        if np.isfinite(targets).any():
            ax.plot(
                xs,
                targets,
                color=color or "black",
                ls="--",
                lw=1,
                alpha=0.8,
                label=None if TARGET_LABEL in labelled else TARGET_LABEL,
            )
            labelled.add(TARGET_LABEL)

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
        rates = self._needs_rates(rows)
        fig, ax, low = self._panels(6.4, 4.2, rates)
        labelled: set[str] = set()
        groups = rows.groupby(others, sort=True) if others else [((), rows)]
        for i, (key, group) in enumerate(groups):
            key = key if isinstance(key, tuple) else (key,)
            group = group.sort_values(x)
            xs = self.positions(x, group[x], rows[x])
            name = self.describe(others, key) or "median"
            line = ax.plot(xs, group["median"], marker="o", label=name)[0]
            ax.fill_between(xs, group["q25"], group["q75"], alpha=0.2, color=line.get_color())
            self._honesty(ax, xs, group, labelled)
            if _is_epsilon(metric):
                self._target(ax, xs, group, line.get_color() if others else None, labelled)
            if low is not None:
                self._rates(low, xs, group, line.get_color(), i == 0)
        self._x_axis(low if low is not None else ax, x, rows[x])
        if low is not None:
            ax.set_xlabel("")
            low.legend(fontsize=7)
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
        against ``x``, one line per method, median with interquartile band; a
        non-private baseline is labelled so, a private method's cells over budget are
        marked, cells with no release are shown on the floor."""
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
            fig, ax, low = self._panels(6.4, 4.4, self._needs_rates(panel))
            labelled: set[str] = set()
            methods = sorted(
                {m.split(".")[1] for m in panel["metric"].unique()},
                key=lambda m: (order.index(m) if m in order else 99, m),
            )
            for i, method in enumerate(methods):
                group = panel[panel["metric"] == f"methods.{method}.{metric}"].sort_values(x)
                xs = self.positions(x, group[x], rows[x])
                color, style = styles.get(method, (None, "-"))
                baseline = bool(group["non_private"].astype(bool).all())
                line = ax.plot(
                    xs,
                    group["median"],
                    marker="o",
                    ms=3,
                    color=color,
                    ls=style,
                    label=method + (BASELINE_SUFFIX if baseline else ""),
                )[0]
                ax.fill_between(xs, group["q25"], group["q75"], alpha=0.12, color=line.get_color())
                self._honesty(ax, xs, group, labelled)
                if _is_epsilon(metric):
                    self._target(ax, xs, group, None, labelled)
                if low is not None:
                    self._rates(low, xs, group, line.get_color(), i == 0)
            self._x_axis(low if low is not None else ax, x, rows[x])
            if low is not None:
                ax.set_xlabel("")
                low.legend(fontsize=7)
            label = self.labels.get(f"methods.{methods[0]}.{metric}", metric).rsplit(" (", 1)[0]
            ax.set_ylabel(f"{label}\nmedian, band: interquartile range")
            kept = panel[~panel["metric"].isin([f"methods.{m}.{metric}" for m in off_chart])]
            if off_chart and not kept.empty and np.isfinite(kept["q75"].max()):
                ax.set_ylim(bottom=0, top=1.15 * kept["q75"].max())  # these run off the chart
            fixed = [c for c in grid_columns(panel) if c != x and c not in others]
            title = self.describe([*others, *fixed], [*key, *(panel[c].iloc[0] for c in fixed)])
            ax.set_title(_wrap(title), fontsize=9)
            stem = _stem(key) or "all"
            name = f"{metric.replace('.', '_')}_by_method_vs_{_label(x).replace('.', '_')}_{stem}"
            drawn.append(self.finish(fig, ax, name))
        return drawn

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
                xs = self.positions(factor, sel[factor], rows[factor])
                fig, ax, low = self._panels(6.0, 4.0, self._needs_rates(sel))
                labelled: set[str] = set()
                line = ax.plot(xs, sel["median"], marker="o", label="median")[0]
                ax.fill_between(xs, sel["q25"], sel["q75"], alpha=0.2, color=line.get_color())
                self._honesty(ax, xs, sel, labelled)
                if _is_epsilon(metric):
                    self._target(ax, xs, sel, None, labelled)
                if low is not None:
                    self._rates(low, xs, sel, line.get_color(), True)
                    low.legend(fontsize=7)
                ref = summary[summary["metric"] == reference] if reference else summary.iloc[0:0]
                if not ref.empty:
                    ref = ref.merge(sel[keys], on=keys).sort_values(factor)
                    label = self.labels.get(reference or "", reference)
                    ref_xs = self.positions(factor, ref[factor], rows[factor])
                    ax.plot(ref_xs, ref["median"], color="black", ls="--", label=label)
                self._x_axis(low if low is not None else ax, factor, rows[factor])
                ax.set_ylabel(
                    f"{self.labels.get(metric, metric)}\nmedian, band: interquartile range"
                )
                title = self.describe(text, key) if text else f"vary {self.words(factor)}"
                ax.set_title(_wrap(title), fontsize=9)
                stem = _stem(key)
                name = f"{metric.replace('.', '_')}_vs_{_label(factor).replace('.', '_')}"
                drawn.append(self.finish(fig, ax, f"{name}{'_' + stem if stem else ''}"))
        return drawn

    def communication(self) -> list[Path]:
        """Bytes sent per party of each role (median over replications) against every
        size axis the study varies (number of parties N, dimension d), the other grid
        fields at their most frequent value; one line per role, log scale."""
        import pandas as pd
        import seaborn as sns

        summary = self.summary
        if summary.empty:
            return []
        rows = summary[
            summary["metric"].str.startswith("communication.roles.")
            & summary["metric"].str.endswith(PER_PARTY_SUFFIX)
        ]
        drawn = []
        keys = grid_columns(rows)
        done: list[str] = []
        for x in (a for a in SIZE_AXES if a in rows and rows[a].nunique() > 1):
            if any(rows[[x, d]].drop_duplicates().shape[0] == rows[x].nunique() for d in done):
                continue  # set together with an axis already drawn (N clients = K owners)
            together = [
                c
                for c in keys
                if c != x
                and rows[c].nunique() > 1
                and rows[[x, c]].drop_duplicates().shape[0] == rows[x].nunique()
            ]
            if any(not pd.api.types.is_numeric_dtype(rows[c]) for c in together):
                continue  # N set together with a data set: the data set's cost, not N's
            done.append(x)
            fixed = [
                c
                for c in keys
                if c != x
                and rows[c].nunique() > 1
                # a field set together with x in a case moves with it: not held fixed
                and rows[[x, c]].drop_duplicates().shape[0] > rows[x].nunique()
            ]
            sel = rows
            for other in fixed:
                sel = sel[sel[other] == rows[other].mode().iloc[0]]
            sel = sel[(sel["n"] > 0) & (sel["median"] > 0)]  # a role that sends nothing
            if sel[x].nunique() < 2:
                continue
            data = pd.DataFrame(
                {
                    "x": self.positions(x, sel[x], rows[x]),
                    "bytes": sel["median"].to_numpy(),
                    "role": sel["metric"]
                    .str.removeprefix("communication.roles.")
                    .str.removesuffix(PER_PARTY_SUFFIX),
                }
            )
            fig, ax = self.figure(6.0, 4.0)
            sns.lineplot(data=data, x="x", y="bytes", hue="role", marker="o", ax=ax)
            ax.set_yscale("log")
            ax.set_ylabel("bytes sent per party\n(median over replications)")
            self._x_axis(ax, x, rows[x])
            ax.set_title(
                _wrap(self.describe(fixed, [rows[c].mode().iloc[0] for c in fixed])), fontsize=9
            )
            drawn.append(self.finish(fig, ax, f"bytes_per_party_vs_{_label(x).replace('.', '_')}"))
        return drawn


def draw_study(frame: Any, summary: Any, directory: str | Path) -> list[Path]:
    """Write the study's PNG figures into ``directory``: each protocol present draws its
    own (its study view's ``figures``, or its headline metrics against every axis), and
    the communication cost against every size axis the study varies."""
    return draw_with(StudyFigures(frame, summary, Path(directory)))


def _varies(summary: Any, metric: str) -> bool:
    """The metric's cell medians take more than one value (so a figure says something)."""
    rows = summary[summary["metric"] == metric] if "metric" in summary else summary.iloc[0:0]
    return bool(rows["median"].nunique() > 1) if len(rows) else False


def draw_with(kit: StudyFigures) -> list[Path]:
    """:func:`draw_study` on a given kit (tests read ``kit.drawn``)."""
    output_folder(kit.out, "figure directory")
    drawn: list[Path] = []
    for view in views_of(kit.frame):
        if view.figures is not None:
            drawn += view.figures(kit, kit.summary)
        else:
            drawn += kit.series(view.headline or ("privacy.achieved_epsilon",))
    exposure = [m for m in exposure_of(kit.frame) if _varies(kit.summary, m)]
    if exposure:  # what the coalition learns against each axis, one factor at a time
        if not any(p.name.startswith("privacy_achieved_epsilon") for p in drawn):
            exposure.insert(0, "privacy.achieved_epsilon")
        for metric in exposure:
            drawn += kit.one_factor(metric)
    drawn += kit.communication()
    return list(dict.fromkeys(drawn))  # two protocols sharing a view draw it once
