"""The values de Jong et al. (2022) publish, beside a BCD study's (for the HTML report).

The paper's numbers are those quoted in ``docs/reproductions/dp-bcd.md`` and ``dp-bcd-tables.md``: §3.2 (synthetic
data: AAPD of β at the baseline and at γ = 1.15, the average R² at γ = 3) and §3.3 (forest
fires: median R² at ε = 1 and 2; the non-private R² of both data sets). A quoted value
is set beside the study's cell with the same settings (Algorithm 2 as proven: ε/(2T)
per step, length sd ξ/√ε_step, abort rule on): grid fields from the rows, the others
from the study's base (``base.<field>`` columns), else the config's defaults.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.kit.frames import scenario_field
from privsim.protocols.bcd.config import BcdConfig

__all__ = ["PAPER", "paper_values"]

#: Algorithm 2 as proven (the reading of docs/reproductions/dp-bcd.md): ε/(2T) per step, sd ξ/√ε_step, the
#: abort rule on.
_AS_PROVEN = {"bcd.step_budget": "split", "bcd.length_scale": "proof", "bcd.abort_rule": True}

_BASELINE = {
    **_AS_PROVEN,
    "bcd.dataset": "synthetic",
    "bcd.correlation": 0.3,
    "bcd.r_squared": 0.3,
    "bcd.gamma": 1.2,
    "bcd.records": 1000,
    "privacy.epsilon": 1.0,
}

#: (quantity, settings, the paper's value as printed, our statistic, our column).
PAPER: tuple[tuple[str, dict[str, Any], str, str, str], ...] = (
    ("AAPD of β, synthetic baseline, ε = 1 (§3.2)", _BASELINE, "47%", "median", "accuracy.aapd"),
    (
        "AAPD of β, γ = 1.15, ε = 1 (§3.2)",
        {**_BASELINE, "bcd.gamma": 1.15},
        "295%",
        "median",
        "accuracy.aapd",
    ),
    (
        "average R², γ = 3, ε = 1 (§3.2)",
        {**_BASELINE, "bcd.gamma": 3.0},
        "≈ −2.5",
        "mean",
        "accuracy.r2",
    ),
    (
        "median R², forest fires, ε = 1 (§3.3)",
        {**_AS_PROVEN, "bcd.dataset": "forestfires", "privacy.epsilon": 1.0},
        "−4.07",
        "median",
        "accuracy.r2",
    ),
    (
        "median R², forest fires, ε = 2 (§3.3)",
        {**_AS_PROVEN, "bcd.dataset": "forestfires", "privacy.epsilon": 2.0},
        "−0.94",
        "median",
        "accuracy.r2",
    ),
    (
        "non-private R², forest fires (ours: closed-form least squares)",
        {"bcd.dataset": "forestfires"},
        "0.07",
        "median",
        "accuracy.r2_central",
    ),
    (
        "non-private R², garments (ours: closed-form least squares)",
        {"bcd.dataset": "garments"},
        "0.24",
        "median",
        "accuracy.r2_central",
    ),
)


def _field(frame: Any, name: str) -> Any:
    """A scenario field per row: the grid's column, the study base's, else the default."""
    return scenario_field(frame, name, BcdConfig(), table="bcd", target="privacy.epsilon")


def _matches(frame: Any, settings: dict[str, Any]) -> Any:
    mask = np.ones(len(frame), dtype=bool)
    for name, value in settings.items():
        column = _field(frame, name)
        if isinstance(value, float):
            numbers = np.asarray(column.map(_as_float), dtype=np.float64)
            mask &= np.isclose(numbers, value, rtol=1e-9, atol=0.0)
        else:
            mask &= (column.astype(str) == str(value)).to_numpy()
    return mask


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def paper_values(frame: Any) -> list[tuple[str, Any]]:
    """One table: every quoted value whose settings this study ran, with our statistic
    over the cell's released runs (AAPD as a percentage), the runs and the abort rate."""
    import pandas as pd

    if "protocol" not in frame:
        return []
    rows = frame[frame["protocol"] == "bcd"]
    records = []
    for quantity, settings, paper, stat, column in PAPER:
        cell = rows[_matches(rows, settings)]
        if cell.empty or column not in cell:
            continue
        released = cell[cell["status"] == "released"]
        values = pd.to_numeric(released[column], errors="coerce").dropna()
        ours = (
            float(values.median() if stat == "median" else values.mean()) if len(values) else np.nan
        )
        if column == "accuracy.aapd":
            ours *= 100.0
        records.append(
            {
                "quantity": quantity,
                "paper": paper,
                "ours": ours,
                "our statistic": f"{stat} over released runs"
                + (" (%)" if column == "accuracy.aapd" else ""),
                "runs": len(cell),
                "abort rate": float((cell["status"] == "aborted").mean()),
            }
        )
    if not records:
        return []
    title = "de Jong et al. (2022): the published values beside this study's"
    return [(title, pd.DataFrame.from_records(records))]
