"""The ``[bcd]`` table."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["BcdConfig"]


#: The data sets BCD reads (``forestfires`` and ``garments`` with the paper's preprocessing).
DATASETS = ("synthetic", "forestfires", "garments", "csv")
#: Largest |γ|, |β mean|, β sd or convergence bound accepted (see ``BcdConfig``).
SCALE_LIMIT = 1e6


@dataclass(frozen=True, slots=True, kw_only=True)
class BcdConfig:
    """(DP) block coordinate descent on vertically partitioned data (protocol ``"bcd"``,
    de Jong et al. 2022). ``parties`` hold disjoint column blocks of the same records;
    party 0 holds the label. ``dataset``: ``"synthetic"`` (``records`` × ``predictors``
    standard normal, equicorrelated with ``correlation``; β ~ N(``beta_mean``,
    ``beta_sd``²); noise set for the population ``r_squared``), ``"forestfires"``,
    ``"garments"`` (registry, paper's preprocessing: forest fires' numeric columns
    standardised as the authors did, garments unscaled) or ``"csv"`` (``csv_path`` with
    ``features`` and ``target`` columns). A user's CSV is used as given — never centred
    by its own means, which would be statistics of the private data outside the privacy
    ledger — minus public centres when given: ``feature_centres`` (one per feature, in
    the order of ``features``) and ``target_centre``. BCD fits no intercept (as the
    paper), so give centres known in advance. ``blocks`` names each party's columns for
    named data (default: the paper's split, or an even split).
    ``method``: ``"dp-bcd"`` (Algorithm 2) or ``"bcd"`` (Algorithm 1). ``stopping``:
    ``"iterations"`` (exactly ``iterations`` passes) or ``"convergence"`` (stop when a pass
    lowers ‖v‖² by at most ``convergence_bound``, at most ``iterations`` passes).
    ``step_budget``: ``"split"`` gives each step ε/(kT), as Algorithm 2 (the steps
    compose to ε); ``"whole"`` gives every step the whole ε (composing to kT·ε, over the
    budget: refused unless ``privacy.on_overspend = "warn"``, when the ledger reports the
    kT·ε spent) — what the paper's synthetic numbers are consistent with.
    ``length_scale``: ``"proof"`` draws the perturbation's length with standard deviation
    ξ/√ε_step, the scale the privacy proof needs; ``"prose"`` uses the paper's prose,
    ξ/ε_step, which is *not* ε-DP (kept to test readings of the paper; the ledger records
    the run as non-private). ``abort_rule = false`` publishes even when ‖v_out‖ > ξ, which
    voids the proof (non-private too)."""

    method: Literal["dp-bcd", "bcd"] = "dp-bcd"
    """``dp-bcd`` (Algorithm 2, objective perturbation) or ``bcd`` (Algorithm 1, not private)."""
    dataset: str = "synthetic"
    """``synthetic``, ``forestfires``, ``garments`` (registry, the paper's preprocessing) or
    ``csv`` (your file)."""
    csv_path: str = ""
    """``dataset = "csv"``: the file, relative to the working directory."""
    features: tuple[str, ...] = ()
    """``dataset = "csv"``: the feature columns."""
    target: str = ""
    """``dataset = "csv"``: the label column (held by party 0)."""
    feature_centres: tuple[float, ...] = ()
    """``dataset = "csv"``: one public centre per feature, subtracted from it (empty: used as
    given; BCD fits no intercept)."""
    target_centre: float = 0.0
    """``dataset = "csv"``: a public centre subtracted from the target."""
    blocks: tuple[tuple[str, ...], ...] = ()
    """Each party's columns, one list per party (empty: the paper's split for its data sets, else
    an even split)."""
    parties: int = 2
    """k, the parties holding disjoint column blocks (at least 2)."""
    records: int = 1000
    """``dataset = "synthetic"``: N, the records."""
    predictors: int = 9
    """``dataset = "synthetic"``: the columns."""
    correlation: float = 0.3
    """``dataset = "synthetic"``: the equicorrelation of the standard normal predictors."""
    r_squared: float = 0.3
    """``dataset = "synthetic"``: the population R² the noise is set for."""
    beta_mean: float = 2.0
    """``dataset = "synthetic"``: the mean of the true coefficients."""
    beta_sd: float = 1.5
    """``dataset = "synthetic"``: the standard deviation of the true coefficients."""
    iterations: int = 5
    """T, the passes over the parties (the most passes with ``stopping = "convergence"``)."""
    gamma: float = 1.2
    """γ > 1: a step is aborted when ‖v_out‖ > ξ = γ‖v − Xβ̂‖."""
    step_budget: Literal["split", "whole"] = "split"
    """``split`` gives each step ε/(kT), as Algorithm 2; ``whole`` gives every step the whole ε
    (over budget: refused unless ``privacy.on_overspend`` allows)."""
    length_scale: Literal["proof", "prose"] = "proof"
    """The perturbation length's standard deviation: ``proof`` (ξ/√ε_step, what the proof needs)
    or ``prose`` (ξ/ε_step, the paper's prose; not ε-DP, recorded as non-private)."""
    abort_rule: bool = True
    """``false`` publishes even when ‖v_out‖ > ξ, which voids the proof
    (recorded as non-private)."""
    stopping: Literal["iterations", "convergence"] = "iterations"
    """``iterations`` (exactly ``iterations`` passes) or ``convergence`` (stop when a pass lowers
    ‖v‖² by at most ``convergence_bound``)."""
    convergence_bound: float = 0.0
    """B_C of the convergence criterion."""
    step_timeout: float = 10.0
    """Simulated seconds a party waits for the next message before it stops with a timeout."""

    def __post_init__(self) -> None:
        if self.parties < 2:
            raise FieldError("bcd.parties", f"must be >= 2, got {self.parties}", "give 2 or more")
        if self.records < 1:
            raise FieldError("bcd.records", f"must be >= 1, got {self.records}", "give N >= 1")
        if self.iterations < 1:
            raise FieldError(
                "bcd.iterations", f"must be >= 1, got {self.iterations}", "give T >= 1"
            )
        if not self.gamma > 1:
            raise FieldError(
                "bcd.gamma",
                f"must be > 1, got {self.gamma}",
                "give the allowed loss factor, e.g. 1.2",
            )
        if not 0 <= self.correlation < 1:
            raise FieldError(
                "bcd.correlation", f"must be in [0, 1), got {self.correlation}", "e.g. 0.3"
            )
        if not 1e-6 <= self.r_squared < 1:
            raise FieldError(
                "bcd.r_squared",
                f"must be in [1e-6, 1), got {self.r_squared}",
                "e.g. 0.3 (below 1e-6 the noise swamps a float)",
            )
        if self.predictors < self.parties:
            raise FieldError(
                "bcd.predictors",
                f"{self.predictors} predictors cannot be split over {self.parties} parties",
                "give at least one predictor per party",
            )
        if self.blocks and len(self.blocks) != self.parties:
            raise FieldError(
                "bcd.blocks",
                f"{len(self.blocks)} blocks for {self.parties} parties",
                "give one list of columns per party",
            )
        self._check_blocks()
        if self.dataset == "csv" and not (self.csv_path and self.features and self.target):
            raise FieldError(
                "bcd.csv_path",
                "dataset = 'csv' needs csv_path, features and target",
                'add csv_path = "data.csv", features = ["a", "b"], target = "y"',
            )
        require_positive("bcd.step_timeout", self.step_timeout)
        if self.dataset not in DATASETS:
            shown = self.dataset if len(self.dataset) <= 40 else self.dataset[:40] + "…"
            raise FieldError(
                "bcd.dataset", f"no data set {shown!r}", f"use one of {list(DATASETS)}"
            )
        self._check_centres()
        if self.dataset == "csv" and self.target in self.features:
            raise FieldError(
                "bcd.target",
                f"the target {self.target!r} is also listed in bcd.features",
                "remove it from the features: a model cannot be given its own answer",
            )
        if self.dataset == "synthetic" and self.records <= self.predictors:
            raise FieldError(
                "bcd.records",
                f"{self.records} records for {self.predictors} predictors: each party's "
                "least squares needs more records than columns",
                f"give records > {self.predictors}",
            )
        # The synthetic design and γ scale the data and the perturbation: beyond
        # SCALE_LIMIT the sums of squares overflow a float and the results are NaN.
        for name in ("gamma", "beta_mean", "beta_sd", "convergence_bound"):
            value = getattr(self, name)
            if not (math.isfinite(value) and abs(value) <= SCALE_LIMIT):
                raise FieldError(
                    f"bcd.{name}",
                    f"must be finite and at most {SCALE_LIMIT:g} in size, got {value!r}",
                    "give a value of the order of the paper's (privsim scenario bcd)",
                )
        for name in ("beta_sd", "convergence_bound"):
            if getattr(self, name) < 0:
                raise FieldError(
                    f"bcd.{name}", f"must be >= 0, got {getattr(self, name)}", "give 0 or more"
                )

    def _check_centres(self) -> None:
        """Public centres belong to a CSV: one finite number per feature."""
        given = [
            name
            for name, value in (
                ("feature_centres", self.feature_centres),
                ("target_centre", self.target_centre),
            )
            if value
        ]
        if given and self.dataset != "csv":
            raise FieldError(
                f"bcd.{given[0]}",
                f"public centres apply to a user's CSV only; data set {self.dataset!r} is "
                "prepared as the paper's authors did",
                "remove it, or use dataset = 'csv'",
            )
        if self.feature_centres and len(self.feature_centres) != len(self.features):
            raise FieldError(
                "bcd.feature_centres",
                f"{len(self.feature_centres)} centres for {len(self.features)} features",
                "give one public centre per feature, in the order of bcd.features",
            )
        centres = [(f"bcd.feature_centres[{j}]", c) for j, c in enumerate(self.feature_centres)]
        for name, value in [*centres, ("bcd.target_centre", self.target_centre)]:
            if not (math.isfinite(value) and abs(value) <= SCALE_LIMIT):
                raise FieldError(
                    name,
                    f"must be finite and at most {SCALE_LIMIT:g} in size, got {value!r}",
                    "give a public centre known in advance (not the data's mean), or leave "
                    "it out to use the column as given",
                )

    def _check_blocks(self) -> None:
        """Every party's block names at least one column, no column twice; synthetic
        columns are x0 … x(p−1)."""
        seen: set[str] = set()
        for j, block in enumerate(self.blocks):
            if not block:
                raise FieldError(f"bcd.blocks[{j}]", "no column", "give each party a column")
            for column in block:
                if column in seen:
                    raise FieldError(
                        f"bcd.blocks[{j}]",
                        f"column {column!r} is given to two parties",
                        "give every column to exactly one party",
                    )
                seen.add(column)
        if self.blocks and self.dataset == "synthetic":
            names = {f"x{i}" for i in range(self.predictors)}
            unknown = sorted(seen - names)
            if unknown:
                raise FieldError(
                    "bcd.blocks",
                    f"no column {unknown[0]!r} in the synthetic data",
                    f"use x0 … x{self.predictors - 1}",
                )
            if seen != names:
                left = sorted(names - seen, key=lambda c: int(c[1:]))
                raise FieldError(
                    "bcd.blocks",
                    f"column(s) {left[:5]} given to no party",
                    "give every column to exactly one party",
                )
