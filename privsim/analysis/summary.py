"""Summary tables of a study: per grid cell, median, IQR and mean ± sd of each metric.

Which columns are metrics, and how they are labelled, comes from the common result
sections (below) and from the study view of every protocol present in the rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsim import registry
from privsim.kit.spec import StudyView

__all__ = [
    "COMMON_AXES",
    "COMMON_METRICS",
    "axes_of",
    "grid_columns",
    "metrics_of",
    "summarise",
    "views_of",
]

#: Metrics of every protocol's rows: column -> label with unit.
COMMON_METRICS = {
    "privacy.achieved_epsilon": "achieved ε",
    "communication.bytes": "bytes on the wire (all parties)",
    "communication.messages": "messages",
    "communication.duration": "simulated protocol duration (s)",
    "timing.wall_seconds": "wall time per replication (s)",
}

#: Grid fields every protocol shares: field -> (axis label, log scale).
COMMON_AXES = {
    "privacy.epsilon": ("privacy budget ε", True),
    "threat.colluding_clients": ("colluding clients T", False),
    "faults.absent": ("probability a client is absent", False),
    "faults.crash": ("probability a client crashes", False),
    "population.clients": ("number of clients N", True),
}


def views_of(frame: Any) -> list[StudyView]:
    """The study views of the protocols whose rows are in ``frame``."""
    if "protocol" not in frame:
        return []
    names = [p for p in frame["protocol"].dropna().unique() if p in registry.names()]
    return [registry.get(p).study for p in sorted(names)]


def axes_of(frame: Any) -> dict[str, tuple[str, bool]]:
    """Axis labels of the grid columns, keyed ``grid.<field>``."""
    axes = dict(COMMON_AXES)
    for view in views_of(frame):
        axes.update(view.axes)
    return {f"grid.{k}": v for k, v in axes.items()}


def metrics_of(frame: Any) -> dict[str, str]:
    """The metrics present in ``frame``: each protocol's, the common ones, and every
    per-method column ``methods.<m>.<suffix>`` of a protocol's method metrics."""
    found: dict[str, str] = {}
    views = views_of(frame)
    for view in views:
        found.update({m: label for m, label in view.metrics.items() if m in frame})
    found.update({m: label for m, label in COMMON_METRICS.items() if m in frame})
    for view in views:
        for suffix, label in view.method_metrics.items():
            for column in sorted(c for c in frame.columns if c.startswith("methods.")):
                method, _, rest = column.removeprefix("methods.").partition(".")
                if rest == suffix and not (
                    rest.startswith("privacy.")
                    and _always(frame, f"methods.{method}.privacy.non_private")
                ):  # a non-private baseline has no guarantee to summarise
                    found[column] = f"{label} ({method})"
    return found


def _always(frame: Any, column: str) -> bool:
    return column in frame and bool(frame[column].fillna(False).astype(bool).all())


def grid_columns(frame: Any) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith("grid."))


def _over_budget(group: Any) -> int:
    """Released rows whose guarantee was not met (labelled non-private rows aside)."""
    if "privacy.guarantee_met" not in group or "status" not in group:
        return 0
    released = group["status"] == "released"
    met = group["privacy.guarantee_met"].astype("boolean").fillna(True)
    private = (
        ~group["privacy.non_private"].astype("boolean").fillna(False)
        if "privacy.non_private" in group
        else True
    )
    return int((released & ~met & private).sum())


def summarise(frame: Any) -> Any:
    """One row per (grid cell, metric): the cell's rows, how many released, how many of
    those are over budget, then n, median, q25, q75, mean, sd of the metric over the
    released rows."""
    import pandas as pd

    keys = grid_columns(frame)
    records: list[dict[str, Any]] = []
    metrics = metrics_of(frame)
    groups = frame.groupby(keys, dropna=False, sort=True) if keys else [((), frame)]
    for coords, cell in groups:
        coords = coords if isinstance(coords, tuple) else (coords,)
        group = cell[cell["status"] == "released"] if "status" in cell else cell
        counts = {"rows": len(cell), "released": len(group), "over_budget": _over_budget(cell)}
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
                    **counts,
                    "n": int(values.size),
                    "median": float(values.median()),
                    "q25": float(values.quantile(0.25)),
                    "q75": float(values.quantile(0.75)),
                    "mean": float(values.mean()),
                    "sd": float(values.std(ddof=1)) if values.size > 1 else 0.0,
                }
            )
    return pd.DataFrame.from_records(records)
