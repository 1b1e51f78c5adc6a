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

Features are standardised with the source's mean and spread (the experimenter's
preprocessing), except digits (already in [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.protocols.summarization.config import SummarizationConfig
from privsim.scenarios.errors import FieldError

__all__ = ["SetUp", "build_setup", "check_setup", "records_of"]

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
    """How many points the owners hold in all (known before loading)."""
    if cfg.dataset == "synthetic":
        return cfg.synthetic_records
    if cfg.dataset == "digits":
        return round(DIGITS * 0.6) - cfg.seed_size
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
    return _standardise(raw, x[train].mean(0), x[train].std(0) + 1e-12)


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
    return _standardise(raw, rx.mean(0), rx.std(0) + 1e-12)


def build_setup(cfg: SummarizationConfig, rng: np.random.Generator) -> SetUp:
    """The replication's set-up (the split is drawn from ``rng``)."""
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
