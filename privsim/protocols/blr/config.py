"""The ``[blr]`` table."""

from __future__ import annotations

import math
from collections import Counter
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
    (``synthetic_dimension`` features drawn from the model, no download). Scaling: a
    registered or synthetic data set has every column centred and scaled to a range of
    ``range_length`` by its own mean and range, the paper's declared preprocessing
    (§4). A user's CSV is never scaled by its own statistics (they would be released
    outside the privacy ledger): ``feature_bounds`` (one public ``[lo, hi]`` per
    feature, in the order of ``features``) and ``target_bounds`` (``[lo, hi]``) clip
    each column to its bounds and map it onto the same range-``range_length`` box;
    without them the CSV's columns are used as given, so scale them yourself by public
    constants to about ±``range_length``/2. Clients clip to ±``assumed_bound``.
    ``std_share`` of the budget estimates the marginal stds for the
    projected methods; thresholds are searched on a ``grid_points``² grid over
    [``grid_low``, ``grid_high``] with ``grid_repeats`` auxiliary data sets.
    """

    dataset: str = "synthetic"
    """``synthetic`` (drawn from the model, no download), ``csv`` (your file) or a registered data
    set read from ``$PRIVSIM_DATA_DIR`` (e.g. ``abalone``, ``wine-red``, ``wine-white``)."""
    csv_path: str = ""
    """``dataset = "csv"``: the file, relative to the working directory."""
    features: tuple[str, ...] = ()
    """``dataset = "csv"``: the feature columns."""
    target: str = ""
    """``dataset = "csv"``: the target column."""
    feature_bounds: tuple[tuple[float, float], ...] = ()
    """``dataset = "csv"``: one public ``[lo, hi]`` per feature, in the order of ``features``, to
    clip each column and map it onto the range-``range_length`` box (empty: columns used as
    given)."""
    target_bounds: tuple[float, float] | None = None
    """``dataset = "csv"``: the target's public ``[lo, hi]`` (unset: used as given)."""
    synthetic_dimension: int = 10
    """``dataset = "synthetic"``: the number of features."""
    synthetic_records: int = 4000
    """``dataset = "synthetic"``: records drawn, at least ``population.clients`` + ``test``."""
    test: int = 500
    """Records held out to measure the test MAE."""
    methods: tuple[str, ...] = BLR_METHODS
    """The methods run side by side: ``NP``, ``proj_NP``, ``TA``, ``proj_TA``, ``DDP``,
    ``proj_DDP``, ``input_perturbation``."""
    std_share: float = 0.3
    """The share of the budget (in (0, 1)) spent estimating the marginal stds for the projected
    methods (Algorithm 2's first round)."""
    range_length: float = 10.0
    """The range every column is scaled to (§4: 10)."""
    assumed_bound: float = 7.5
    """Clients clip every value to ±``assumed_bound``; it sets the sensitivities of unprojected
    methods."""
    prior_precision: float = 1.0
    """The precision of the Gaussian prior on the regression coefficients."""
    noise_precision: float = 1.0
    """The precision of the model's observation noise."""
    variance_floor: float = 0.5
    """A non-positive variance estimate is replaced by this value."""
    grid_low: float = 0.1
    """The smallest projection threshold fraction of the search grid."""
    grid_high: float = 2.1
    """The largest projection threshold fraction of the search grid."""
    grid_points: int = 20
    """Points per axis of the threshold grid (``grid_points``² pairs for features and target)."""
    grid_repeats: int = 20
    """Auxiliary data sets drawn per grid point to score it."""
    bounds_timeout: float = 1.0
    """Simulated seconds between the bounds' broadcast and the start of round 2 (proj DDP)."""

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
            counts = Counter(self.features)  # linear: a CSV may have thousands of columns
            repeated = sorted(c for c, k in counts.items() if k > 1)
            if repeated:
                raise FieldError(
                    "blr.features", f"column {repeated[0]!r} is listed twice", "list it once"
                )
        self._check_bounds()
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

    def _check_bounds(self) -> None:
        """Public bounds belong to a CSV, one ``[lo, hi]`` per feature, with lo < hi."""
        given = [
            name
            for name, value in (
                ("feature_bounds", self.feature_bounds),
                ("target_bounds", self.target_bounds),
            )
            if value
        ]
        if given and self.dataset != "csv":
            raise FieldError(
                f"blr.{given[0]}",
                f"public bounds apply to a user's CSV only; data set {self.dataset!r} is "
                "centred and scaled to range_length as the paper does (§4)",
                "remove it, or use dataset = 'csv'",
            )
        if self.feature_bounds and len(self.feature_bounds) != len(self.features):
            raise FieldError(
                "blr.feature_bounds",
                f"{len(self.feature_bounds)} bounds for {len(self.features)} features",
                "give one [lo, hi] per feature, in the order of blr.features",
            )
        pairs = [(f"blr.feature_bounds[{j}]", b) for j, b in enumerate(self.feature_bounds)]
        if self.target_bounds is not None:
            pairs.append(("blr.target_bounds", self.target_bounds))
        for name, bounds in pairs:
            if len(bounds) != 2:
                raise FieldError(
                    name, f"expected [lo, hi], got {len(bounds)} items", "give [lo, hi]"
                )
            lo, hi = bounds
            width = hi - lo
            if not (
                math.isfinite(lo)
                and math.isfinite(hi)
                and math.isfinite(width)
                and width > 0
                and math.isfinite(self.range_length / width)
            ):
                raise FieldError(
                    name,
                    f"[{lo:g}, {hi:g}] is not an interval of finite, nonzero width",
                    "give public bounds lo < hi that the column's values should lie in "
                    "(values outside are clipped to them)",
                )
