"""Figure 2 of Heikkilä et al. (2017) beside a BLR study (for the HTML report).

The paper's Figure 2 is drawn, not tabulated, and its MAEs are not on our scale (its
wine loader shifts the scaling, see docs/reproductions/dca-blr.md): what can be set beside ours are its
settings (§4: test sets of 500 / 1000 / 1000 records, 25 repetitions, δ = 1e-4, a 20-point
threshold grid on [0.1, 2.1] with 20 auxiliary repeats) and its findings (§5 and the
caption): DDP is indistinguishable from TA and proj DDP from proj TA, and projection
improves the MAE. A finding is counted per grid cell over the released repetitions:
"indistinguishable" when the difference of the two medians is inside both interquartile
ranges, with the smallest two-sided Mann–Whitney U p-value over the cells; "improves"
when both projected medians are below the unprojected ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.kit.frames import scenario_field
from privsim.protocols.blr.config import BlrConfig

__all__ = ["PAPER_SETTINGS", "figure2_reference"]

#: The paper's settings for Figure 2 (§4), field -> (what, the paper's value).
PAPER_SETTINGS = {
    "blr.test": ("test records (red wine, white wine, abalone)", "500, 1000, 1000"),
    "blr.grid_points": ("threshold grid points per axis", "20"),
    "blr.grid_repeats": ("auxiliary data sets per threshold search", "20"),
    "privacy.delta": ("δ", "1e-4"),
}


def _field(frame: Any, name: str) -> Any:
    """A scenario field per row: the grid's column, the study base's, else the default."""
    return scenario_field(frame, name, BlrConfig(), table="blr", target="privacy.delta")


def _mae(frame: Any, method: str) -> Any:
    import pandas as pd

    values = pd.to_numeric(frame[f"methods.{method}.accuracy.mae"], errors="coerce")
    return values[np.isfinite(values)]


def _quartiles(values: Any) -> tuple[float, float, float]:
    return (
        float(values.median()),
        float(values.quantile(0.25)),
        float(values.quantile(0.75)),
    )


def _indistinguishable(a: Any, b: Any) -> bool:
    qa, qb = _quartiles(a), _quartiles(b)
    return abs(qa[0] - qb[0]) <= min(qa[2] - qa[1], qb[2] - qb[1])


def _p_value(a: Any, b: Any) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def _distinct(values: Any) -> str:
    return ", ".join(sorted({str(v) for v in values}))


def figure2_reference(frame: Any) -> list[tuple[str, Any]]:
    """One table: the paper's settings and findings beside this study's (empty when
    the study did not run TA, DDP, proj TA and proj DDP)."""
    import pandas as pd

    methods = ("TA", "DDP", "proj_TA", "proj_DDP")
    if "protocol" not in frame or not all(f"methods.{m}.accuracy.mae" in frame for m in methods):
        return []
    rows = frame[(frame["protocol"] == "blr") & (frame["status"] == "released")]
    if rows.empty:
        return []
    keys = sorted(c for c in rows.columns if c.startswith("grid."))
    cells = [g for _, g in rows.groupby(keys, sort=True)] if keys else [rows]
    cells = [g for g in cells if all(len(_mae(g, m)) >= 2 for m in methods)]
    records: list[dict[str, Any]] = []
    for name, (what, paper) in PAPER_SETTINGS.items():
        values = _field(rows, name)
        if name == "blr.test":  # per data set
            values = _field(rows, "blr.dataset").astype(str) + " " + values.astype(str)
        records.append({"quantity": what, "paper": paper, "this study": _distinct(values)})
    sizes = rows.groupby(keys).size() if keys else [len(rows)]
    records.append(
        {
            "quantity": "repetitions per cell",
            "paper": "25",
            "this study": f"{int(np.min(sizes))}–{int(np.max(sizes))} released",
        }
    )
    for left, right, claim in (
        ("DDP", "TA", "DDP indistinguishable from TA"),
        ("proj_DDP", "proj_TA", "proj DDP indistinguishable from proj TA"),
    ):
        same = sum(_indistinguishable(_mae(g, left), _mae(g, right)) for g in cells)
        p = min((_p_value(_mae(g, left), _mae(g, right)) for g in cells), default=float("nan"))
        records.append(
            {
                "quantity": claim,
                "paper": "effectively indistinguishable (§5)",
                "this study": f"{same} of {len(cells)} cells; smallest Mann–Whitney p = {p:.2g}",
            }
        )
    helps = sum(
        _quartiles(_mae(g, "proj_TA"))[0] < _quartiles(_mae(g, "TA"))[0]
        and _quartiles(_mae(g, "proj_DDP"))[0] < _quartiles(_mae(g, "DDP"))[0]
        for g in cells
    )
    records.append(
        {
            "quantity": "projection lowers the median MAE (TA and DDP)",
            "paper": "can improve the results markedly (§5)",
            "this study": f"{helps} of {len(cells)} cells",
        }
    )
    title = (
        "Heikkilä et al. (2017), Figure 2: the paper's settings and findings beside this study's"
    )
    return [(title, pd.DataFrame.from_records(records))]
