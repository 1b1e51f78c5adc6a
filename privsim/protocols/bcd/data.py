"""Data for the BCD experiments: the synthetic design of §3.2 and the real data sets of
§3.3 with the paper's preprocessing, split into the parties' column blocks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.data.registry import load_csv, load_dataset
from privsim.protocols.bcd.config import BcdConfig
from privsim.scenarios.errors import FieldError

__all__ = ["PartitionedData", "load_partitioned", "synthetic"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PartitionedData:
    """Records split by columns: ``blocks[j]`` are party j's columns; party 0 holds y."""

    name: str
    x: F64
    y: F64
    columns: tuple[str, ...]
    blocks: tuple[tuple[int, ...], ...]
    beta_true: F64 | None = None

    def block(self, j: int) -> F64:
        return np.asarray(self.x[:, list(self.blocks[j])], dtype=np.float64)


def synthetic(cfg: BcdConfig, rng: np.random.Generator) -> PartitionedData:
    """§3.2: N records of p standard normal predictors with pairwise correlation ρ,
    β ~ N(μ_β, σ_β²), and y = Xβ + e with Var(e) set so that the population R² is the
    configured one: R² = βᵀΣβ / (βᵀΣβ + σ_e²)."""
    p, n, rho = cfg.predictors, cfg.records, cfg.correlation
    # Equicorrelated normals: x = sqrt(ρ)·z₀ + sqrt(1 − ρ)·z_j.
    common = rng.standard_normal((n, 1))
    x = math.sqrt(rho) * common + math.sqrt(1.0 - rho) * rng.standard_normal((n, p))
    beta = rng.normal(cfg.beta_mean, cfg.beta_sd, size=p)
    sigma = np.full((p, p), rho) + (1.0 - rho) * np.eye(p)
    signal = float(beta @ sigma @ beta)
    noise_sd = math.sqrt(signal * (1.0 - cfg.r_squared) / cfg.r_squared)
    y = x @ beta + noise_sd * rng.standard_normal(n)
    names = tuple(f"x{i}" for i in range(p))
    blocks = _blocks(names, cfg)  # bcd.blocks if given, else an even split
    return PartitionedData("synthetic", x, y, names, blocks, beta_true=beta)


#: The second party's columns in the paper's (and the authors' code's) splits; party 0
#: (the label owner) holds the rest.
FOREST_FIRES_SECOND_PARTY = ("FFMC", "DMC", "DC", "ISI")
GARMENTS_SECOND_PARTY = (
    "idle_time",
    "idle_men",
    "no_of_style_change",
    "no_of_workers",
    "department_finishing ",
    "department_sweing",
)


def _dummies(frame: Any, column: str) -> Any:
    """0/1 columns for every level but the first, levels in order of first appearance
    (as R's readr ``col_factor()``, which the forest fires preparation follows)."""
    import pandas as pd

    levels = list(dict.fromkeys(frame[column].tolist()))
    cat = pd.Categorical(frame[column], categories=levels)
    return pd.get_dummies(cat, prefix=column, drop_first=True).astype(np.float64)


def _forest_fires() -> tuple[F64, F64, tuple[str, ...]]:
    """517 records, 27 predictors, no intercept (van Kesteren et al.'s preparation, which
    the paper and the authors' code use): target log(area + 1), not centred; X, Y, FFMC,
    DMC, DC, ISI, temp, RH, wind, rain standardised; month and day as 0/1 dummies with the
    first level in file order dropped (mar, fri), not centred."""
    import pandas as pd

    frame = load_dataset("forestfires").frame
    numeric = ["X", "Y", "FFMC", "DMC", "DC", "ISI", "temp", "RH", "wind", "rain"]
    values = frame[numeric].astype(np.float64)
    standardised = (values - values.mean()) / values.std(ddof=0)
    table = pd.concat([standardised, _dummies(frame, "month"), _dummies(frame, "day")], axis=1)
    y = np.log1p(frame["area"].to_numpy(dtype=np.float64))
    return table.to_numpy(dtype=np.float64), y, tuple(str(c) for c in table.columns)


def _garments() -> tuple[F64, F64, tuple[str, ...]]:
    """1197 records, 17 predictors, no intercept, no scaling (the authors' code): target
    actual_productivity; wip and date dropped; quarter as its integer code (Quarter1 → 0
    … Quarter5 → 4); department and day as 0/1 dummies with the first level in sorted
    order dropped ('finishing', Monday). The raw department column spells finishing two
    ways ('finishing' and 'finishing '): kept as two levels, as the authors did."""
    import pandas as pd

    frame = load_dataset("garments").frame.drop(columns=["wip", "date"])
    quarter = pd.Series(pd.factorize(frame["quarter"])[0], name="quarter", index=frame.index)
    dummies = pd.get_dummies(frame[["department", "day"]], drop_first=True).astype(np.float64)
    numeric = [
        c for c in frame.columns if c not in ("quarter", "department", "day", "actual_productivity")
    ]
    table = pd.concat(
        [quarter.astype(np.float64), frame[numeric].astype(np.float64), dummies], axis=1
    )
    y = frame["actual_productivity"].to_numpy(dtype=np.float64)
    return table.to_numpy(dtype=np.float64), y, tuple(str(c) for c in table.columns)


def _blocks(
    columns: tuple[str, ...], cfg: BcdConfig, default_second: tuple[str, ...] = ()
) -> tuple[tuple[int, ...], ...]:
    index = {c: i for i, c in enumerate(columns)}
    if cfg.blocks:
        unknown = sorted({c for b in cfg.blocks for c in b} - set(index))
        if unknown:
            raise FieldError(
                "bcd.blocks",
                f"no column(s) {unknown[:5]} in data set {cfg.dataset!r}",
                f"use the data's columns: {list(columns)[:40]}",
            )
        named = [tuple(index[c] for c in b) for b in cfg.blocks]
        covered = sorted(i for b in named for i in b)
        if covered != list(range(len(columns))):
            left = sorted(set(range(len(columns))) ^ set(covered))
            raise FieldError(
                "bcd.blocks",
                f"column(s) {[columns[i] for i in left[:5]]} given to no party or to two",
                "give every column to exactly one party",
            )
        return tuple(named)
    if default_second and cfg.parties == 2:
        second = tuple(index[c] for c in default_second)
        first = tuple(i for i in range(len(columns)) if i not in second)
        return (first, second)
    return tuple(
        tuple(int(i) for i in b) for b in np.array_split(np.arange(len(columns)), cfg.parties)
    )


def load_partitioned(cfg: BcdConfig, rng: np.random.Generator) -> PartitionedData:
    """The configured data set split into the parties' blocks. The paper's data sets are
    prepared as the authors did (no intercept). A user's CSV is used as given, minus the
    public centres of the config (``bcd.feature_centres``, ``bcd.target_centre``):
    centring by its own column means would release statistics of every record outside
    the privacy ledger."""
    if cfg.dataset == "synthetic":
        return synthetic(cfg, rng)
    second: tuple[str, ...] = ()
    if cfg.dataset == "forestfires":
        x, y, columns = _forest_fires()
        second = FOREST_FIRES_SECOND_PARTY
    elif cfg.dataset == "garments":
        x, y, columns = _garments()
        second = GARMENTS_SECOND_PARTY
    elif cfg.dataset == "csv":
        table = load_csv(cfg.csv_path, features=cfg.features, target=cfg.target)
        x, y, columns = table.X, table.y, table.features
        if cfg.feature_centres:
            x = x - np.asarray(cfg.feature_centres, dtype=np.float64)
        y = y - cfg.target_centre
    else:
        raise FieldError(
            "bcd.dataset",
            f"no data set {cfg.dataset!r}",
            "use 'synthetic', 'forestfires', 'garments' or 'csv'",
        )
    if y.size and not np.any(y != y[0]):  # R² = 1 − RSS/Σ(y − ȳ)² divides by zero
        raise FieldError(
            "bcd.target" if cfg.dataset == "csv" else "bcd.dataset",
            f"the target of data set {cfg.dataset!r} is constant (the same in every record): "
            "R², the share of its variance a model explains, is undefined",
            "give a target column that varies",
        )
    return PartitionedData(cfg.dataset, x, y, columns, _blocks(columns, cfg, second))
