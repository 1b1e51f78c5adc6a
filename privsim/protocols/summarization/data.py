"""The covariate-shift set-ups (the paper's Allstate and MNIST are not available offline).

Each set-up follows §4's Allstate design: the owners split a source domain, one owner
also holds 70% of the target domain; of the target's remaining 30%, a quarter is the
consumer's validation set D_v (labels removed) and the rest the test set; the seed set
D_init comes from another domain.

- ``synthetic``: K Gaussian blobs in R⁵ (one per owner) and a target blob; label
  1[sin(2x₀) + x₁ − 0.5x₂ > 0] for every domain (covariate shift only); seed: uniform
  points in the source box.
- ``digits``: scikit-learn's bundled 8×8 digits (pixels/16). A random 60% is the source:
  a digit of class c goes to owner c mod K with probability 0.8, else to a random owner;
  the target domain is 500 digits drawn without replacement from the other 40% with
  class weights 4 for digits 0–4 and 1 for 5–9, a quarter of them D_v, the rest the
  test set (no owner holds target digits: the set is too small to give 70% away);
  seed: random source digits held out.
- ``occupancy``: the registry's three files are three time periods. The owners split the
  training period; owner 0 also holds 70% of the second test period; validation and test
  come from the rest of it; seed: the first test period. Label: occupancy.
- ``wine``: the owners split the red wines; owner 0 also holds 70% of the white; the
  target is white wine; label quality ≥ 6; seed: red wines held out.

- ``csv``: the user's own set-up, one file whose role column assigns every row to an
  owner (``owner-0`` …), the consumer's validation set, the test set or the seed set
  (:func:`load_user_csv`). The file is the split: no draw is made.

Scaling (``summarization.standardise``): occupancy's, wine's and a CSV's features are
centred and scaled by the seed set's mean and standard deviation (``"seed"``, the
default: D_init is public, §4 lets it be random), or left as they are (``"none"``). The
owners' own statistics would be released outside the ledger: ``"owners"`` (occupancy and
wine only) scales by the source domain's mean and spread, as the study tables of docs/reproductions/summarization.md
were measured, and the ledger records that as a non-private release. Synthetic and
digits are on a public scale (generated; pixels / 16) and never standardised.
"""

from __future__ import annotations

import functools
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.data.stats import finite_mean_and_sd
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.scenarios.errors import FieldError
from privsim.scenarios.loader import InputFileError, read_input_text

__all__ = [
    "CSV_ROLES",
    "MAX_CLASSES",
    "SetUp",
    "build_setup",
    "check_setup",
    "load_user_csv",
    "records_of",
]

F64 = npt.NDArray[np.float64]

#: Rows of the registry's occupancy files, in the order it concatenates them.
OCCUPANCY_PERIODS = (8143, 2665, 9752)
WINE_RED, WINE_WHITE = 1599, 4898
DIGITS = 1797
DIGITS_TARGET = 500  # target-domain digits drawn from the held-out 40%
TARGET_SHARE = 0.7  # of the target domain given to owner 0
VALIDATION_SHARE = 0.25  # of the rest: D_v; the remainder is the test set


@dataclass(frozen=True, slots=True, kw_only=True)
class SetUp:
    """One replication's data: each owner's (X, y), D_v (no labels), the test set, the
    seed set and its labels."""

    name: str
    owners: tuple[tuple[F64, F64], ...]
    validation: F64
    test: tuple[F64, F64]
    seed: tuple[F64, F64]

    @property
    def dimension(self) -> int:
        return int(self.validation.shape[1])


def records_of(cfg: SummarizationConfig) -> int:
    """How many points the owners hold in all (known before loading, except for a CSV:
    its rows are counted, and every named error of the file raised, here)."""
    if cfg.dataset == "synthetic":
        return cfg.synthetic_records
    if cfg.dataset == "digits":
        return round(DIGITS * 0.6) - cfg.seed_size
    if cfg.dataset == "csv":  # reads (and checks) the file, once per version of it
        return sum(len(x) for x, _ in load_user_csv(cfg).owners)
    if cfg.dataset == "occupancy":
        return OCCUPANCY_PERIODS[0] + round(TARGET_SHARE * OCCUPANCY_PERIODS[2])
    return WINE_RED - cfg.seed_size + round(TARGET_SHARE * WINE_WHITE)


def _split_target(
    x: F64, y: F64, rng: np.random.Generator
) -> tuple[tuple[F64, F64], F64, tuple[F64, F64]]:
    """(owner 0's 70%, D_v, test) of a target domain."""
    order = rng.permutation(len(x))
    cut = round(TARGET_SHARE * len(x))
    rest = order[cut:]
    val = rest[: round(VALIDATION_SHARE * len(rest))]
    test = rest[len(val) :]
    return (x[order[:cut]], y[order[:cut]]), x[val], (x[test], y[test])


def _deal(x: F64, y: F64, k: int, rng: np.random.Generator) -> list[tuple[F64, F64]]:
    parts = np.array_split(rng.permutation(len(x)), k)
    return [(x[p], y[p]) for p in parts]


def _standardise(s: SetUp, mean: F64, sd: F64) -> SetUp:
    def f(a: F64) -> F64:
        return np.asarray((a - mean) / sd, dtype=np.float64)

    return SetUp(
        name=s.name,
        owners=tuple((f(x), y) for x, y in s.owners),
        validation=f(s.validation),
        test=(f(s.test[0]), s.test[1]),
        seed=(f(s.seed[0]), s.seed[1]),
    )


def _scaled(raw: SetUp, cfg: SummarizationConfig, owners_mean: F64, owners_sd: F64) -> SetUp:
    """``raw`` as ``cfg.standardise`` says: by the seed set's mean and sd (public), as it
    is, or by the owners' (source domain's) ``owners_mean`` and ``owners_sd`` — the
    non-private preprocessing the ledger records
    (:func:`privsim.protocols.summarization.accounting.charge`)."""
    if cfg.standardise == "none":
        return raw
    if cfg.standardise == "owners":
        return _standardise(raw, owners_mean, owners_sd)
    seed = raw.seed[0]
    mean, sd = finite_mean_and_sd(seed, field="summarization.features", where="the seed set")
    constant = np.flatnonzero(sd == 0)
    if constant.size:
        raise FieldError(
            "summarization.seed_size",
            f"the {len(seed)} seed points of the {raw.name} set-up are constant in feature "
            f"{int(constant[0])}: the features cannot be standardised by them",
            'give a larger seed set, or set summarization.standardise = "none"',
        )
    return _standardise(raw, mean, sd)


def _label(x: F64) -> F64:
    return (np.sin(2 * x[:, 0]) + x[:, 1] - 0.5 * x[:, 2] > 0).astype(np.float64)


def _synthetic(cfg: SummarizationConfig, rng: np.random.Generator) -> SetUp:
    n, k = 5, cfg.owners
    target_n = max(cfg.synthetic_records // 4, 80)
    centres = rng.normal(0.0, 2.0, size=(k, n))
    target_centre = rng.normal(0.0, 2.0, size=n)
    source = cfg.synthetic_records - round(TARGET_SHARE * target_n)
    counts = np.bincount(np.arange(source) % k, minlength=k)
    owners = []
    for j in range(k):
        x = centres[j] + rng.normal(0.0, 1.0, size=(counts[j], n))
        owners.append((x, _label(x)))
    tx = target_centre + rng.normal(0.0, 0.8, size=(target_n, n))
    mine, val, test = _split_target(tx, _label(tx), rng)
    owners[0] = (np.vstack([owners[0][0], mine[0]]), np.concatenate([owners[0][1], mine[1]]))
    seed = rng.uniform(-4.0, 4.0, size=(cfg.seed_size, n))
    return SetUp(
        name="synthetic",
        owners=tuple(owners),
        validation=val,
        test=test,
        seed=(seed, _label(seed)),
    )


def _digits(cfg: SummarizationConfig, rng: np.random.Generator) -> SetUp:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = np.asarray(bunch.data, dtype=np.float64) / 16.0
    y = np.asarray(bunch.target, dtype=np.float64)
    order = rng.permutation(len(x))
    cut = round(0.6 * len(x))
    source, target = order[:cut], order[cut:]
    seed_idx, source = source[: cfg.seed_size], source[cfg.seed_size :]
    k = cfg.owners
    home = y[source].astype(np.int64) % k
    stray = rng.random(source.size) >= 0.8
    home[stray] = rng.integers(0, k, int(stray.sum()))
    owners = [(x[source[home == j]], y[source[home == j]]) for j in range(k)]
    weights = np.where(y[target] < 5, 4.0, 1.0)
    drawn = rng.choice(target, size=DIGITS_TARGET, replace=False, p=weights / weights.sum())
    val, test = drawn[: DIGITS_TARGET // 4], drawn[DIGITS_TARGET // 4 :]
    return SetUp(
        name="digits",
        owners=tuple(owners),
        validation=x[val],
        test=(x[test], y[test]),
        seed=(x[seed_idx], y[seed_idx]),
    )


def _occupancy(cfg: SummarizationConfig, rng: np.random.Generator) -> SetUp:
    from privsim.data.registry import load_dataset

    data = load_dataset("occupancy")
    x, y = data.X, data.y
    a, b, _ = OCCUPANCY_PERIODS
    train, first, second = slice(0, a), slice(a, a + b), slice(a + b, None)
    owners = _deal(x[train], y[train], cfg.owners, rng)
    mine, val, test = _split_target(x[second], y[second], rng)
    owners[0] = (np.vstack([owners[0][0], mine[0]]), np.concatenate([owners[0][1], mine[1]]))
    pick = rng.choice(b, size=min(cfg.seed_size, b), replace=False)
    raw = SetUp(
        name="occupancy",
        owners=tuple(owners),
        validation=val,
        test=test,
        seed=(x[first][pick], y[first][pick]),
    )
    return _scaled(raw, cfg, x[train].mean(0), x[train].std(0) + 1e-12)


def _wine(cfg: SummarizationConfig, rng: np.random.Generator) -> SetUp:
    from privsim.data.registry import load_dataset

    red, white = load_dataset("wine-red"), load_dataset("wine-white")
    rx, ry = red.X, (red.y >= 6).astype(np.float64)
    wx, wy = white.X, (white.y >= 6).astype(np.float64)
    order = rng.permutation(len(rx))
    seed_idx, rest = order[: cfg.seed_size], order[cfg.seed_size :]
    owners = _deal(rx[rest], ry[rest], cfg.owners, rng)
    mine, val, test = _split_target(wx, wy, rng)
    owners[0] = (np.vstack([owners[0][0], mine[0]]), np.concatenate([owners[0][1], mine[1]]))
    raw = SetUp(
        name="wine",
        owners=tuple(owners),
        validation=val,
        test=test,
        seed=(rx[seed_idx], ry[seed_idx]),
    )
    return _scaled(raw, cfg, rx.mean(0), rx.std(0) + 1e-12)


#: The roles of a user's CSV rows besides ``owner-<k>``.
CSV_ROLES = ("validation", "test", "seed")
#: Most classes a CSV's label may hold: more reads as a regression target, not the class
#: labels the linear-SVM accuracy needs.
MAX_CLASSES = 100
_CSV = "summarization.csv_path"
_OWNER = re.compile(r"owner-(\d{1,9})")


def load_user_csv(cfg: SummarizationConfig) -> SetUp:
    """The set-up in ``cfg.csv_path``: each row's role column says whose it is.

    Every problem is a :class:`FieldError` naming the field to fix and, like BLR's and
    BCD's :func:`~privsim.data.registry.load_csv`, the file and the column or data row,
    never the file's contents. The file is read through the guarded reader (regular files
    of at most 64 MiB of UTF-8 text) and kept per process, keyed by its path, size and
    modification time, so a scenario's validation and its replications read it once.
    The arrays returned are shared and read-only."""
    path = Path(cfg.csv_path)
    shown = repr(str(path)) if len(str(path)) <= 200 else repr(str(path)[:200] + "…")
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise FieldError(
            _CSV,
            f"CSV file {shown} does not exist",
            "give the path of your CSV file (a relative path is from the working directory)",
        ) from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, no permission
        raise FieldError(
            _CSV, f"CSV file {shown} cannot be read ({type(exc).__name__})", "give a readable file"
        ) from None
    return _read_user_csv(
        str(path.absolute()),
        stat.st_size,
        stat.st_mtime_ns,
        cfg.features,
        cfg.target,
        cfg.role_column,
        cfg.owners,
        cfg.standardise == "seed",
    )


def _first_row(mask: Any) -> int:
    """The 1-based data row of the first True in ``mask``."""
    return int(np.flatnonzero(np.asarray(mask))[0]) + 1


@functools.lru_cache(maxsize=4)
def _read_user_csv(
    path: str,
    size: int,
    mtime_ns: int,
    features: tuple[str, ...],
    target: str,
    role_column: str,
    owners: int,
    standardise: bool,
) -> SetUp:
    """:func:`load_user_csv` once its file is known; ``size`` and ``mtime_ns`` key the cache."""
    import pandas as pd

    p = Path(path)
    try:
        text = read_input_text(p, "CSV file")
    except InputFileError as exc:  # a directory, a FIFO, a device, over 64 MiB
        raise FieldError(_CSV, exc.problem, "give the path of a CSV file") from None
    except FileNotFoundError:
        raise FieldError(
            _CSV, f"CSV file {str(p)[:200]!r} does not exist", "give its path"
        ) from None
    except UnicodeDecodeError as exc:
        raise FieldError(
            _CSV,
            f"{p}: not UTF-8 text (undecodable byte at offset {exc.start})",
            "save it as a UTF-8 CSV",
        ) from None
    except (OSError, ValueError) as exc:
        raise FieldError(
            _CSV,
            f"CSV file {str(p)[:200]!r} cannot be read ({type(exc).__name__})",
            "give a readable file",
        ) from None
    try:
        # index_col=False: pandas would otherwise read rows that all have more fields
        # than the header as indexed by their first fields, shifting every column; the
        # warning it gives instead becomes the error below.
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(text), dtype={role_column: str}, index_col=False)
    except pd.errors.ParserWarning:
        raise FieldError(
            _CSV,
            f"{p}: not a well-formed CSV (rows with more fields than the header)",
            "give every row as many comma-separated fields as the header",
        ) from None
    except pd.errors.EmptyDataError:
        raise FieldError(
            _CSV, f"{p}: the file is empty", "give a header row and data rows"
        ) from None
    except pd.errors.ParserError as exc:
        line = re.search(r"line (\d+)", str(exc))
        where = f" at line {line.group(1)}" if line else ""
        raise FieldError(
            _CSV,
            f"{p}: not a well-formed CSV{where} (rows with different numbers of fields?)",
            "give every row as many comma-separated fields as the header",
        ) from None
    except (ValueError, MemoryError) as exc:
        raise FieldError(
            _CSV, f"{p}: cannot be parsed ({type(exc).__name__})", "give a CSV file"
        ) from None
    columns = {str(c) for c in frame.columns}
    for field, names in (
        ("summarization.features", features),
        ("summarization.target", (target,)),
        ("summarization.role_column", (role_column,)),
    ):
        missing = [c for c in names if c not in columns]
        if missing:
            raise FieldError(
                field,
                f"{p}: no column(s) {missing} (the file has {len(columns)} columns)",
                "name columns of the file's header row, and check that it is comma-separated",
            )
    if len(frame) == 0:
        raise FieldError(_CSV, f"{p}: a header but no data rows", "give the data rows")

    x = np.empty((len(frame), len(features)))
    for j, c in enumerate(features):
        values = pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64)
        text_cells = frame[c].notna().to_numpy() & np.isnan(values)
        if text_cells.any():
            raise FieldError(
                "summarization.features",
                f"{p}: column {c!r} is not numeric (data row {_first_row(text_cells)})",
                "encode it as numbers first, or leave it out of summarization.features",
            )
        bad = ~np.isfinite(values)
        if bad.any():
            raise FieldError(
                "summarization.features",
                f"{p}: column {c!r} has {int(bad.sum())} missing, NaN or infinite value(s) "
                f"(the first in data row {_first_row(bad)})",
                "fill or drop those rows",
            )
        x[:, j] = values

    roles = frame[role_column].str.strip().to_numpy(dtype=object)
    unset = frame[role_column].isna().to_numpy()
    if unset.any():
        raise FieldError(
            "summarization.role_column",
            f"{p}: {int(unset.sum())} row(s) have no {role_column!r} (the first is data row "
            f"{_first_row(unset)})",
            "give every row a role: owner-<k>, validation, test or seed",
        )
    known = {f"owner-{k}" for k in range(owners)} | set(CSV_ROLES)
    unknown = np.array([r not in known for r in roles])
    if unknown.any():
        row = _first_row(unknown)
        beyond = _OWNER.fullmatch(roles[row - 1])
        if beyond and int(beyond.group(1)) >= owners:
            k = int(beyond.group(1))
            raise FieldError(
                "summarization.owners",
                f"{p}: data row {row} is owner-{k}'s but there are {owners} owners "
                f"(owner-0 … owner-{owners - 1})",
                f"set summarization.owners and population.clients to {k + 1}, or correct "
                f"the {role_column!r} column",
            )
        raise FieldError(
            "summarization.role_column",
            f"{p}: {int(unknown.sum())} row(s) have a {role_column!r} that is not a role "
            f"(the first is data row {row})",
            f"give each row owner-0 … owner-{owners - 1}, validation, test or seed",
        )
    for k in range(owners):
        if not (roles == f"owner-{k}").any():
            raise FieldError(
                "summarization.owners",
                f"{p}: no row is owner-{k}'s ({owners} owners)",
                "give every owner rows, or give fewer owners",
            )
    for role in CSV_ROLES:
        if not (roles == role).any():
            raise FieldError(
                "summarization.role_column",
                f"{p}: no row has the role {role!r}",
                "mark the consumer's validation set (D_v), the test set and the seed set "
                "(D_init): each needs at least one row",
            )

    # Labels: read for the owners' and the test rows; D_v is unlabelled and the seed
    # set's labels are not used, so those may be left empty.
    labels = pd.to_numeric(frame[target], errors="coerce").to_numpy(dtype=np.float64)
    read = np.isin(roles, ["validation", "seed"], invert=True)
    text_cells = read & frame[target].notna().to_numpy() & np.isnan(labels)
    if text_cells.any():
        raise FieldError(
            "summarization.target",
            f"{p}: column {target!r} is not numeric (data row {_first_row(text_cells)})",
            "encode the classes as whole numbers, e.g. 0 and 1",
        )
    bad = read & ~np.isfinite(labels)
    if bad.any():
        raise FieldError(
            "summarization.target",
            f"{p}: column {target!r} has {int(bad.sum())} missing, NaN or infinite value(s) "
            f"in owner or test rows (the first in data row {_first_row(bad)})",
            "label every owner and test row (validation and seed rows may be left empty)",
        )
    fractional = read & np.isfinite(labels) & (labels != np.round(labels))
    if fractional.any():
        raise FieldError(
            "summarization.target",
            f"{p}: column {target!r} is not a class label (a fraction in data row "
            f"{_first_row(fractional)})",
            "give classes as whole numbers, e.g. 0 and 1: the accuracy is a classifier's",
        )
    is_owner = np.isin(roles, CSV_ROLES, invert=True)
    classes = np.unique(labels[is_owner])
    if not 2 <= classes.size <= MAX_CLASSES:
        raise FieldError(
            "summarization.target",
            f"{p}: the owners' rows hold {classes.size} class(es) in column {target!r}",
            f"give a label of 2 to {MAX_CLASSES} classes: the summary's accuracy is a classifier's",
        )

    if standardise:  # by the public seed set (§4: D_init may be random), never the owners'
        on_seed = roles == "seed"
        mean, sd = finite_mean_and_sd(
            x[on_seed], field="summarization.features", columns=features, where=f"{p} (seed rows)"
        )
        constant = np.flatnonzero(sd == 0)
        if constant.size:
            raise FieldError(
                "summarization.features",
                f"{p}: column {features[constant[0]]!r} is constant over the seed rows "
                "and cannot be standardised by them",
                "drop it from summarization.features, give seed rows that vary in it, or "
                'set summarization.standardise = "none" and scale it by public constants',
            )
        x = (x - mean) / sd

    def rows(role: str) -> tuple[F64, F64]:
        chosen = roles == role
        a, b = x[chosen], labels[chosen]
        a.flags.writeable = b.flags.writeable = False  # the cache's copy is shared
        return a, b

    return SetUp(
        name=p.stem,
        owners=tuple(rows(f"owner-{k}") for k in range(owners)),
        validation=rows("validation")[0],
        test=rows("test"),
        seed=rows("seed"),
    )


def build_setup(cfg: SummarizationConfig, rng: np.random.Generator) -> SetUp:
    """The replication's set-up (the split is drawn from ``rng``)."""
    if cfg.dataset == "csv":
        setup = load_user_csv(cfg)
    else:
        build = {"synthetic": _synthetic, "digits": _digits, "occupancy": _occupancy, "wine": _wine}
        setup = build[cfg.dataset](cfg, rng)
    check_setup(setup, cfg)
    return setup


def check_setup(setup: SetUp, cfg: SummarizationConfig) -> None:
    """Named errors for inputs the protocol cannot run on: an empty owner, a validation
    set of the wrong dimension, a summary larger than the owners' data."""
    for k, (x, _) in enumerate(setup.owners):
        if len(x) == 0:
            raise FieldError(
                "summarization.owners",
                f"owner-{k} holds no data ({cfg.owners} owners for data set {cfg.dataset!r})",
                "give fewer owners",
            )
    n = setup.owners[0][0].shape[1]
    if setup.validation.ndim != 2 or setup.validation.shape[1] != n or len(setup.validation) == 0:
        raise FieldError(
            "summarization.dataset",
            f"the validation set has shape {setup.validation.shape}, the owners' points "
            f"have {n} features",
            "give a validation set of the owners' dimension with at least one point",
        )
    total = sum(len(x) for x, _ in setup.owners)
    if cfg.summary_size > total:
        raise FieldError(
            "summarization.summary_size",
            f"a summary of {cfg.summary_size} points from owners holding {total}",
            f"give summary_size <= {total}",
        )
