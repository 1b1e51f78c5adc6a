"""Per-cell summary of a (DP-)BCD study, in the terms of de Jong et al. (2022) §3.2–3.3:
abort rate (with its Wilson interval), R² of the published model against the centralised
one (median with its percentile-bootstrap interval; the loss R² − R²* paired by
replication, tested with a one-sided Wilcoxon signed-rank test, with the test's power to
detect a loss of 0.01), and AAPD of β."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim.kit.stats import bootstrap_median_ci, paired_test, wilson_interval

__all__ = ["TITLE", "bcd_sections", "bcd_table"]

TITLE = "Block coordinate descent: aborts, R² and AAPD per cell"

#: The R² loss the test should detect.
R2_LOSS = 0.01

PREAMBLE = (
    "Aborted: share of replications stopped by the rule ‖v_out‖ > ξ (nothing "
    "published), with its 95% Wilson interval. R² in sample, of the published model: "
    "median with its 95% percentile-bootstrap interval [lo, hi] and the interquartile "
    "range. R² − R²*: median loss against the centralised solution, paired by "
    "replication, with its bootstrap interval; p: one-sided Wilcoxon signed-rank test "
    "that the published R² is below the centralised one; power: the test's estimated "
    "probability at α = 0.05 of detecting a loss of 0.01 with these replications. "
    "AAPD: mean over coefficients of |β̂ − β*|/|β*| against the centralised solution β*."
)


def bcd_table(frame: Any) -> str:
    """A Markdown table, one row per grid cell (empty if the study is not a BCD study)."""
    if "accuracy.r2" not in frame.columns or "bcd.reference.r2_central" not in frame.columns:
        return ""
    keys = sorted(c for c in frame.columns if c.startswith("grid."))
    head = [k.removeprefix("grid.") for k in keys] + [
        "runs",
        "aborted",
        "aborted 95% CI",
        "median R² [95% CI] (IQR)",
        "centralised R²",
        "R² − R²*",
        "p",
        "power",
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
        name = tuple(str(c) for c in coords)
        test_text = ["-", "-", "-"]
        if r2.size:
            q25, med, q75 = np.percentile(r2, [25, 50, 75])
            lo, hi = bootstrap_median_ci(r2, name=("bcd.r2", *name))
            r2_text = f"{med:.3g} [{lo:.3g}, {hi:.3g}] ({q25:.3g} – {q75:.3g})"
            aapd_text = (f"{100 * aapd.mean():.0f}%", f"{100 * np.median(aapd):.0f}%")
            loss = paired_test(
                r2,
                ok["bcd.reference.r2_central"].to_numpy(dtype=np.float64),
                alternative="less",
                shift=R2_LOSS,
                name=("bcd.r2_loss", *name),
            )
            if loss.p == loss.p:
                d_lo, d_hi = loss.diff_ci
                test_text = [
                    f"{loss.median_diff:+.3g} [{d_lo:+.3g}, {d_hi:+.3g}]",
                    "<0.001" if loss.p < 0.001 else f"{loss.p:.3f}",
                    f"{loss.power:.2f}",
                ]
        else:
            r2_text, aapd_text = "-", ("-", "-")
        a_lo, a_hi = wilson_interval(len(group) - len(ok), len(group))
        cells = [str(c) for c in coords] + [
            str(len(group)),
            f"{100 * (1 - len(ok) / len(group)):.1f}%",
            f"{100 * a_lo:.1f}–{100 * a_hi:.1f}%",
            r2_text,
            f"{np.median(central):.3g}",
            *test_text,
            *aapd_text,
            f"{abs_err.mean():.3g}" if abs_err.size else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bcd_sections(frame: Any) -> list[tuple[str, str]]:
    """The study report's BCD section: the per-cell table with its legend."""
    table = bcd_table(frame)
    return [(TITLE, PREAMBLE + "\n\n" + table)] if table else []
