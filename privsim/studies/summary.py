"""Summary tables of a study: per grid cell, median, IQR and mean ± sd of each metric."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["METHOD_METRICS", "METRICS", "grid_columns", "metrics_of", "summarise"]

#: Metrics summarised when present: column -> label with unit.
METRICS = {
    "accuracy.rmse": "RMSE of the released sum (per coordinate)",
    "accuracy.r2": "R² of the published model (in sample)",
    "reference.r2_central": "R² of the centralised least-squares solution",
    "accuracy.aapd": "AAPD of β against the centralised solution",
    "accuracy.beta_abs_error": "mean |β̂ − β*| against the centralised solution",
    "accuracy.mre_vs_nonprivate_sketch": "mean relative error of the released sketch's KDE",
    "accuracy.noise_sd_per_cell": "noise sd per sketch cell",
    "bytes_per_owner": "bytes sent per data owner (mean)",
    "epsilon": "achieved ε",
    "bytes": "bytes on the wire (all parties)",
    "messages": "messages",
    "duration": "simulated protocol duration (s)",
    "parties.included": "clients included",
    "cost.client.bytes_sent_mean": "bytes sent per client (mean)",
    "cost.compute.bytes_received_mean": "bytes received per compute node (mean)",
    "wall_seconds": "wall time per replication (s)",
}


#: Per-method metric families (BLR): column prefix -> label.
METHOD_METRICS = {
    "mae": "test MAE",
    "epsilon": "achieved ε",
    "bytes": "bytes on the wire",
    "included": "clients included",
    "guarantee_met": "share of runs within the (ε, δ) budget",
}


def metrics_of(frame: Any) -> dict[str, str]:
    """The metrics present in ``frame``: the fixed ones and every per-method column."""
    found = {m: label for m, label in METRICS.items() if m in frame}
    for prefix, label in METHOD_METRICS.items():
        for column in sorted(c for c in frame.columns if c.startswith(prefix + ".")):
            method = column.removeprefix(prefix + ".")
            found[column] = f"{label} ({method})"
    return found


def grid_columns(frame: Any) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith("grid."))


def summarise(frame: Any) -> Any:
    """One row per (grid cell, metric): n, median, q25, q75, mean, sd."""
    import pandas as pd

    keys = grid_columns(frame)
    ok = frame[frame["status"] == "released"] if "status" in frame else frame
    records: list[dict[str, Any]] = []
    metrics = metrics_of(frame)
    groups = ok.groupby(keys, dropna=False, sort=True) if keys else [((), ok)]
    for coords, group in groups:
        coords = coords if isinstance(coords, tuple) else (coords,)
        for metric in metrics:
            if metric not in group:
                continue
            values = (
                pd.to_numeric(group[metric], errors="coerce")
                .astype(np.float64)
                .replace([np.inf, -np.inf], np.nan)
                .dropna()
            )
            if values.empty:
                continue
            records.append(
                {
                    **dict(zip(keys, coords, strict=True)),
                    "metric": metric,
                    "n": int(values.size),
                    "median": float(values.median()),
                    "q25": float(values.quantile(0.25)),
                    "q75": float(values.quantile(0.75)),
                    "mean": float(values.mean()),
                    "sd": float(values.std(ddof=1)) if values.size > 1 else 0.0,
                }
            )
    return pd.DataFrame.from_records(records)
