"""How a BLR study reads: its figure (test MAE of every method against ε, styled as the
paper's Figure 2), its extra row columns, and the claims of Heikkilä et al. (2017) §5
checked on its rows.

Per grid cell (data set, ε, …) over the released repetitions:

1. DDP and TA, and proj DDP and proj TA, are indistinguishable: the difference of their
   medians is smaller than either interquartile range (the bands of the figure overlap
   by more than the gap between the lines), and a two-sided Mann–Whitney U test finds
   no difference (its p-value is shown; the repetitions of the two methods are
   independent draws of the noise on the same splits);
2. projection lowers the median MAE (proj TA < TA, proj DDP < DDP) — the paper's claim
   is for small ε;
3. input perturbation is far worse than DDP (ratio of medians).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privsim.kit.spec import FigureKit

__all__ = ["METHOD_STYLE", "figure2_checks", "figures", "flatten", "sections"]

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

SECTION_TITLE = "Distributed against trusted aggregator, with and without projection"
SECTION_NOTE = (
    "Median test MAE per cell. ≈: the difference of the medians is smaller than both "
    "interquartile ranges; (p): two-sided Mann–Whitney U p-value of the two methods' "
    "MAEs. Projection helps: both projected medians are below the unprojected ones."
)


def _mae(method: str) -> str:
    return f"methods.{method}.accuracy.mae"


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """BLR's own row columns: clients included per distributed method (per round for
    proj DDP) and the projection thresholds of the auxiliary search."""
    included = {
        name: {k: m["details"][k] for k in ("included", "included_round1") if k in m["details"]}
        for name, m in result["methods"].items()
        if m.get("details")
    }
    thresholds = result["blr"]["thresholds"]
    return {
        "methods": {name: {"details": cols} for name, cols in included.items() if cols},
        "blr": {
            "thresholds": thresholds and {k: thresholds[k] for k in ("feature", "target")},
        },
    }


def figures(kit: FigureKit, summary: Any) -> list[Path]:
    """Test MAE of every method against ε (input perturbation runs off the chart)."""
    return kit.by_method("accuracy.mae", METHOD_STYLE, off_chart=("input_perturbation",))


def sections(frame: Any) -> list[tuple[str, str]]:
    """The Figure 2 checks, when the study ran the four methods they compare."""
    checks = figure2_checks(frame)
    return [(SECTION_TITLE, SECTION_NOTE + "\n\n" + checks)] if checks else []


def _stats(values: Any) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (np.nan, np.nan, np.nan)
    return float(np.median(v)), float(np.percentile(v, 25)), float(np.percentile(v, 75))


def _close(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """The median difference is inside both interquartile ranges."""
    return abs(a[0] - b[0]) <= min(a[2] - a[1], b[2] - b[1])


def _p_value(a: Any, b: Any) -> float:
    from scipy.stats import mannwhitneyu

    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def figure2_checks(frame: Any) -> str:
    """A Markdown table of the three checks, one row per grid cell (empty if the study
    lacks the methods)."""
    need = {_mae("TA"), _mae("DDP"), _mae("proj_TA"), _mae("proj_DDP")}
    if not need <= set(frame.columns):
        return ""
    keys = sorted(c for c in frame.columns if c.startswith("grid."))
    ok = frame[frame["status"] == "released"]
    head = [k.removeprefix("grid.") for k in keys] + [
        "TA",
        "DDP",
        "DDP ≈ TA (p)",
        "proj TA",
        "proj DDP",
        "proj DDP ≈ proj TA (p)",
        "projection helps",
        "input pert. / DDP",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ip = _mae("input_perturbation") in frame.columns
    for coords, group in ok.groupby(keys, sort=True) if keys else [((), ok)]:
        coords = coords if isinstance(coords, tuple) else (coords,)
        ta, ddp = _stats(group[_mae("TA")]), _stats(group[_mae("DDP")])
        pta, pddp = _stats(group[_mae("proj_TA")]), _stats(group[_mae("proj_DDP")])
        helps = pta[0] < ta[0] and pddp[0] < ddp[0]
        ratio = _stats(group[_mae("input_perturbation")])[0] / ddp[0] if ip else np.nan
        cells = [str(c) for c in coords] + [
            f"{ta[0]:.3g}",
            f"{ddp[0]:.3g}",
            ("yes" if _close(ta, ddp) else "**no**")
            + f" ({_p_value(group[_mae('TA')], group[_mae('DDP')]):.2f})",
            f"{pta[0]:.3g}",
            f"{pddp[0]:.3g}",
            ("yes" if _close(pta, pddp) else "**no**")
            + f" ({_p_value(group[_mae('proj_TA')], group[_mae('proj_DDP')]):.2f})",
            "yes" if helps else "**no**",
            f"{ratio:.2g}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
