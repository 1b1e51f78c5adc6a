"""Figure 1 analogue for a study: MMD² increase over greedy and linear-SVM accuracy
against the summary size, for greedy, private and uniform (median and interquartile
band over replications; the increase on a log scale, greedy being its reference)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privsim.kit.spec import FigureKit

__all__ = ["draw_study"]

STYLES = {"greedy": ("C0", "o"), "private": ("C3", "s"), "uniform": ("C2", "^")}
AXIS = "grid.summarization.summary_size"


def draw_study(kit: FigureKit, summary: Any) -> list[Path]:
    """The two panels from the study's rows (``kit.frame``), released runs only."""
    frame = getattr(kit, "frame", None)
    if frame is None or AXIS not in frame:
        return []
    frame = frame[frame["status"] == "released"]
    paths = []
    for metric, label, name in (
        ("mmd2_increase_pct", "MMD² increase over greedy (%)", "mmd2-increase"),
        ("svm_accuracy", "linear-SVM accuracy (target test set)", "svm-accuracy"),
    ):
        fig, ax = kit.figure(5.0, 3.4)
        increase = metric == "mmd2_increase_pct"
        for method, (colour, marker) in STYLES.items():
            column = f"methods.{method}.accuracy.{metric}"
            if column not in frame or (increase and method == "greedy"):
                continue  # greedy is the reference of the increase (0 by definition)
            grouped = frame.groupby(AXIS)[column]
            med, lo, hi = grouped.median(), grouped.quantile(0.25), grouped.quantile(0.75)
            ax.plot(med.index, med.values, color=colour, marker=marker, label=method)
            ax.fill_between(med.index, lo.values, hi.values, color=colour, alpha=0.2)
        if increase:
            ax.set_yscale("log")
        ax.set_xlabel("summary size p")
        ax.set_ylabel(label)
        paths.append(kit.finish(fig, ax, name))
    return paths
