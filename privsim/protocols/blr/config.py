"""The ``[blr]`` table."""

from __future__ import annotations

from dataclasses import dataclass

from privsim.data.registry import REGISTRY
from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["BLR_METHODS", "BlrConfig"]

#: Every BLR method, in the order they are reported.
BLR_METHODS = ("NP", "proj_NP", "TA", "proj_TA", "DDP", "proj_DDP", "input_perturbation")


#: Largest scale, bound, precision or grid end accepted, and its inverse the smallest
#: (see ``BlrConfig``).
SCALE_LIMIT = 1e6


@dataclass(frozen=True, slots=True, kw_only=True)
class BlrConfig:
    """DP Bayesian linear regression (protocol ``"blr"``, Heikkilä et al. 2017 §3.2–4).

    Each of ``population.clients`` training records is one client; ``test`` records are
    held out. ``dataset``: a registered data set (read from ``$PRIVSIM_DATA_DIR``),
    ``"csv"`` (``csv_path`` with ``features`` and ``target`` columns) or ``"synthetic"``
    (``synthetic_dimension`` features drawn from the model, no download). Every column
    is centred and scaled to a range of ``range_length``; clients clip to
    ±``assumed_bound``. ``std_share`` of the budget estimates the marginal stds for the
    projected methods; thresholds are searched on a ``grid_points``² grid over
    [``grid_low``, ``grid_high``] with ``grid_repeats`` auxiliary data sets.
    """

    dataset: str = "synthetic"
    csv_path: str = ""
    features: tuple[str, ...] = ()
    target: str = ""
    synthetic_dimension: int = 10
    synthetic_records: int = 4000
    test: int = 500
    methods: tuple[str, ...] = BLR_METHODS
    std_share: float = 0.3
    range_length: float = 10.0
    assumed_bound: float = 7.5
    prior_precision: float = 1.0
    noise_precision: float = 1.0
    variance_floor: float = 0.5
    grid_low: float = 0.1
    grid_high: float = 2.1
    grid_points: int = 20
    grid_repeats: int = 20
    bounds_timeout: float = 1.0

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in BLR_METHODS]
        if unknown or not self.methods:
            raise FieldError(
                "blr.methods",
                f"unknown method(s) {unknown}" if unknown else "no method given",
                f"choose from {list(BLR_METHODS)}",
            )
        if self.dataset not in ("synthetic", "csv") and self.dataset not in REGISTRY:
            shown = self.dataset if len(self.dataset) <= 40 else self.dataset[:40] + "…"
            raise FieldError(
                "blr.dataset",
                f"no data set {shown!r}",
                f"use 'synthetic', 'csv' (with csv_path) or a registered one: {sorted(REGISTRY)}",
            )
        if self.dataset == "csv" and not (self.csv_path and self.features and self.target):
            raise FieldError(
                "blr.csv_path",
                "dataset = 'csv' needs csv_path, features and target",
                'add csv_path = "data.csv", features = ["a", "b"], target = "y"',
            )
        if self.dataset == "csv":
            if self.target in self.features:
                raise FieldError(
                    "blr.target",
                    f"the target {self.target!r} is also listed in blr.features",
                    "remove it from the features: a model cannot be given its own answer",
                )
            repeated = sorted({c for c in self.features if self.features.count(c) > 1})
            if repeated:
                raise FieldError(
                    "blr.features", f"column {repeated[0]!r} is listed twice", "list it once"
                )
        if not 0 < self.std_share < 1:
            raise FieldError(
                "blr.std_share",
                f"must be in (0, 1), got {self.std_share}",
                "give the share of the budget for the marginal stds, e.g. 0.3",
            )
        for name in (
            "range_length",
            "assumed_bound",
            "prior_precision",
            "noise_precision",
            "variance_floor",
            "grid_low",
            "bounds_timeout",
        ):
            require_positive(f"blr.{name}", getattr(self, name))
        if not self.grid_high > self.grid_low:
            raise FieldError(
                "blr.grid_high",
                f"must exceed grid_low = {self.grid_low}, got {self.grid_high}",
                "give an interval, e.g. grid_low = 0.1, grid_high = 2.1",
            )
        for name in (
            "grid_points",
            "grid_repeats",
            "test",
            "synthetic_dimension",
            "synthetic_records",
        ):
            if getattr(self, name) < 1:
                raise FieldError(
                    f"blr.{name}", f"must be >= 1, got {getattr(self, name)}", "give 1 or more"
                )
        # Every column is scaled to range_length and clipped to assumed_bound, so the
        # sufficient statistics are sums of squares of these: beyond SCALE_LIMIT they
        # overflow a float (NaN results); likewise the precisions and the grid.
        for name in (
            "range_length",
            "assumed_bound",
            "prior_precision",
            "noise_precision",
            "variance_floor",
            "grid_low",
            "grid_high",
        ):
            value = getattr(self, name)
            if not 1 / SCALE_LIMIT <= value <= SCALE_LIMIT:
                raise FieldError(
                    f"blr.{name}",
                    f"{value:g} is outside [{1 / SCALE_LIMIT:g}, {SCALE_LIMIT:g}]: the "
                    "statistics would overflow or the posterior become singular",
                    "give a value of the order of the shipped scenario's (privsim scenario blr)",
                )
