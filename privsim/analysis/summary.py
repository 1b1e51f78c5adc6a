"""Summary tables of a study: per grid cell, the abort, release and guarantee-met rates
and, of each metric, the median with its bootstrap interval, IQR and mean ± sd.

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
    "PER_PARTY_SUFFIX",
    "axes_of",
    "exposure_of",
    "grid_columns",
    "hashable_grid",
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

#: Per-party traffic columns, one per role: ``communication.roles.<role>`` + this.
PER_PARTY_SUFFIX = ".bytes_sent_mean"

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
    found.update({m: label for m, label in exposure_of(frame).items() if m not in found})
    for column in sorted(c for c in frame.columns if c.endswith(PER_PARTY_SUFFIX)):
        role = column.removeprefix("communication.roles.").removesuffix(PER_PARTY_SUFFIX)
        if column.startswith("communication.roles.") and column not in found:
            found[column] = f"bytes sent per {role} (mean over parties)"
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


def exposure_of(frame: Any) -> dict[str, str]:
    """The numeric exposure metrics the protocols present declare (``ProtocolSpec.exposure``)
    and the rows carry, ``coalition.exposure.<key>`` -> label."""
    if "protocol" not in frame:
        return {}
    found: dict[str, str] = {}
    for name in sorted(p for p in frame["protocol"].dropna().unique() if p in registry.names()):
        for key in registry.get(name).exposure:
            column = f"coalition.exposure.{key}"
            if column in frame and frame[column].map(_is_number).any():
                found[column] = "coalition exposure: " + key.replace("_", " ")
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool)


def _always(frame: Any, column: str) -> bool:
    return column in frame and bool(frame[column].fillna(False).astype(bool).all())


def hashable_grid(frame: Any) -> Any:
    """``frame`` with each list value of a grid column (a grid over a list-valued field,
    e.g. ``threat.colluding_servers``) written as text, ``[a, b]``, so cells group by it;
    ``frame`` itself if there is none."""
    listed = [
        c for c in grid_columns(frame) if frame[c].map(lambda v: isinstance(v, list | tuple)).any()
    ]
    if not listed:
        return frame
    out = frame.copy()
    for c in listed:
        out[c] = out[c].map(
            lambda v: "[" + ", ".join(map(str, v)) + "]" if isinstance(v, list | tuple) else v
        )
    return out


def grid_columns(frame: Any) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith("grid."))


def _bools(group: Any, column: str, default: bool) -> Any:
    return group[column].astype("boolean").fillna(default)


def _over_budget(group: Any) -> int:
    """Released rows whose guarantee was not met (labelled non-private rows aside)."""
    if "privacy.guarantee_met" not in group or "status" not in group:
        return 0
    released = group["status"] == "released"
    met = _bools(group, "privacy.guarantee_met", True)
    private = (
        ~_bools(group, "privacy.non_private", False) if "privacy.non_private" in group else True
    )
    return int((released & ~met & private).sum())


def _prefix(metric: str) -> str:
    """``methods.<m>.`` for a per-method column, else the empty prefix (the run's own)."""
    if metric.startswith("methods."):
        method = metric.removeprefix("methods.").split(".", 1)[0]
        return f"methods.{method}."
    return ""


def _guarantee(released: Any, prefix: str) -> tuple[bool, float]:
    """(non-private, guarantee-met rate) of the released rows, for the run itself or for
    one method (``prefix``): a non-private release has no rate (NaN)."""
    flag, met = f"{prefix}privacy.non_private", f"{prefix}privacy.guarantee_met"
    if flag in released and len(released) and bool(_bools(released, flag, False).all()):
        return True, np.nan
    if met not in released or not len(released):
        return False, np.nan
    values = released[met].astype("boolean").dropna()
    return False, float(values.mean()) if len(values) else np.nan


def _applicable(frame: Any, cell: Any, metrics: dict[str, str]) -> list[str]:
    """Metrics that rows of the cell's protocol(s) report somewhere in the study (so an
    all-aborted cell still gets a row per metric, and no metric of another protocol)."""
    same = (
        frame[frame["protocol"].isin(cell["protocol"].unique())] if "protocol" in frame else frame
    )
    return [m for m in metrics if m in same and same[m].notna().any()]


def summarise(frame: Any) -> Any:
    """One row per (grid cell, metric).

    Columns: the grid fields, ``metric``; the cell's replications (``rows``) and how many
    ``released``, ``aborted`` (stopped by the protocol) and failed (``errors``), with
    ``abort_rate`` and ``release_rate`` (of rows); ``non_private`` (the run, or the
    method of a ``methods.<m>.*`` metric, is a labelled non-private baseline) and
    ``met_rate`` (share of released rows that met their (ε, δ) guarantee; NaN for a
    non-private baseline) and ``target_epsilon`` (the cell's target ε; NaN likewise);
    ``over_budget`` (released private rows not meeting it); then
    over the released rows: ``n`` (of which ``infinite``: ε = ∞ where a coalition broke
    an event's trust; kept, so such a cell's median may be ∞), ``median`` with its 95%
    percentile-bootstrap interval
    (``median_lo``, ``median_hi``; 1000 resamples, seeded by metric and cell), ``q25``,
    ``q75``, ``mean``, ``sd``. A cell where nothing released keeps its rows, with n = 0
    and NaN statistics: aborted cells are shown, not dropped."""
    import pandas as pd

    from privsim.kit.stats import bootstrap_median_ci

    frame = hashable_grid(frame)
    keys = grid_columns(frame)
    records: list[dict[str, Any]] = []
    metrics = metrics_of(frame)
    groups = frame.groupby(keys, dropna=False, sort=True) if keys else [((), frame)]
    for coords, cell in groups:
        coords = coords if isinstance(coords, tuple) else (coords,)
        status = cell["status"] if "status" in cell else pd.Series("released", index=cell.index)
        group = cell[status == "released"]
        counts = {
            "rows": len(cell),
            "released": len(group),
            "aborted": int((status == "aborted").sum()),
            "errors": int((status == "error").sum()),
            "abort_rate": float((status == "aborted").mean()) if len(cell) else np.nan,
            "release_rate": len(group) / len(cell) if len(cell) else np.nan,
            "over_budget": _over_budget(cell),
        }
        for metric in _applicable(frame, cell, metrics):
            values = (
                pd.to_numeric(group[metric], errors="coerce").astype(np.float64).dropna()
                if metric in group
                else pd.Series([], dtype=np.float64)
            )
            if values.empty and len(group):
                continue  # released, but this metric is not reported here
            non_private, met_rate = _guarantee(group, _prefix(metric))
            lo, hi = bootstrap_median_ci(
                values.to_numpy(), resamples=1000, name=(metric, *map(str, coords))
            )
            target = f"{_prefix(metric)}privacy.target_epsilon"
            target = target if target in cell else "privacy.target_epsilon"
            nan = values.empty
            infinite = int(np.isinf(values.to_numpy()).sum())
            exact = "linear" if infinite == 0 else None  # no interpolation towards ∞
            records.append(
                {
                    **dict(zip(keys, coords, strict=True)),
                    "metric": metric,
                    **counts,
                    "non_private": non_private,
                    "target_epsilon": (
                        float(pd.to_numeric(cell[target], errors="coerce").median())
                        if target in cell and not non_private
                        else np.nan
                    ),
                    "met_rate": met_rate,
                    "n": int(values.size),
                    "infinite": infinite,
                    "median": np.nan if nan else float(values.median()),
                    "median_lo": lo,
                    "median_hi": hi,
                    "q25": np.nan
                    if nan
                    else float(values.quantile(0.25, interpolation=exact or "lower")),
                    "q75": np.nan
                    if nan
                    else float(values.quantile(0.75, interpolation=exact or "higher")),
                    "mean": np.nan if nan else float(values.mean()),
                    "sd": float(values.std(ddof=1))
                    if values.size > 1 and not infinite
                    else (np.nan if nan or infinite else 0.0),
                }
            )
    return pd.DataFrame.from_records(records)
