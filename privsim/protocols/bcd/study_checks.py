"""Per-cell summary of a (DP-)BCD study, in the terms of de Jong et al. (2022) §3.2–3.3:
abort rate, R² of the published model against the centralised one, and AAPD of β."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TITLE", "bcd_sections", "bcd_table"]

TITLE = "Block coordinate descent: aborts, R² and AAPD per cell"

PREAMBLE = (
    "Aborted: share of replications stopped by the rule ‖v_out‖ > ξ (nothing "
    "published). R² in sample, of the published model; AAPD: mean over "
    "coefficients of |β̂ − β*|/|β*| against the centralised solution β*."
)


def bcd_table(frame: Any) -> str:
    """A Markdown table, one row per grid cell (empty if the study is not a BCD study)."""
    if "accuracy.r2" not in frame.columns or "bcd.reference.r2_central" not in frame.columns:
        return ""
    keys = sorted(c for c in frame.columns if c.startswith("grid."))
    head = [k.removeprefix("grid.") for k in keys] + [
        "runs",
        "aborted",
        "median R² (IQR)",
        "centralised R²",
        "AAPD mean",
        "AAPD median",
        "mean |β̂ − β*|",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for coords, group in frame.groupby(keys, sort=True, dropna=False) if keys else [((), frame)]:
        coords = coords if isinstance(coords, tuple) else (coords,)
        ok = group[group["status"] == "released"]
        r2 = ok["accuracy.r2"].to_numpy(dtype=np.float64)
        aapd = ok["accuracy.aapd"].to_numpy(dtype=np.float64)
        abs_err = (
            ok["accuracy.beta_abs_error"].to_numpy(dtype=np.float64)
            if "accuracy.beta_abs_error" in ok
            else np.zeros(0)
        )
        central = group["bcd.reference.r2_central"].to_numpy(dtype=np.float64)
        if r2.size:
            q25, med, q75 = np.percentile(r2, [25, 50, 75])
            r2_text = f"{med:.3g} ({q25:.3g} – {q75:.3g})"
            aapd_text = (f"{100 * aapd.mean():.0f}%", f"{100 * np.median(aapd):.0f}%")
        else:
            r2_text, aapd_text = "-", ("-", "-")
        cells = [str(c) for c in coords] + [
            str(len(group)),
            f"{100 * (1 - len(ok) / len(group)):.1f}%",
            r2_text,
            f"{np.median(central):.3g}",
            *aapd_text,
            f"{abs_err.mean():.3g}" if abs_err.size else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bcd_sections(frame: Any) -> list[tuple[str, str]]:
    """The study report's BCD section: the per-cell table with its legend."""
    table = bcd_table(frame)
    return [(TITLE, PREAMBLE + "\n\n" + table)] if table else []
