"""A real table split over clients: a stratified held-out test set, then the training
records partitioned IID, with Dirichlet label skew, or with quantity skew.

The partition functions are pure: they take labels or a record count, the number of
clients and a generator, and return ``(rows, offsets)`` — a permutation of the record
positions grouped by client, client j owning ``rows[offsets[j]:offsets[j+1]]``.
"""

from __future__ import annotations

import heapq
import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from privsim.data.stats import finite_mean_and_sd
from privsim.protocols.fedlearn.data import CohortData, client_ids
from privsim.scenarios.errors import FieldError

__all__ = [
    "PARTITIONS",
    "Partitioned",
    "dirichlet_partition",
    "iid_partition",
    "quantity_partition",
    "stratified_split",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

PARTITIONS = ("iid", "dirichlet", "quantity")


def _offsets(sizes: I64) -> I64:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def stratified_split(
    labels: I64, test_fraction: float, rng: np.random.Generator
) -> tuple[I64, I64]:
    """(train, test) positions: each class c gives ⌊f·n_c + ½⌋ of its records, chosen at
    random, to the test set, so the test set has the data's class proportions."""
    train, test = [], []
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        cut = math.floor(test_fraction * members.size + 0.5)
        test.append(members[:cut])
        train.append(members[cut:])
    return (
        np.sort(np.concatenate(train)).astype(np.int64),
        np.sort(np.concatenate(test)).astype(np.int64),
    )


def iid_partition(n: int, n_clients: int, rng: np.random.Generator) -> tuple[I64, I64]:
    """A random permutation cut into ``n_clients`` parts of ⌊n/J⌋ or ⌈n/J⌉ records."""
    sizes = np.full(n_clients, n // n_clients, dtype=np.int64)
    sizes[: n % n_clients] += 1
    return rng.permutation(n).astype(np.int64), _offsets(sizes)


def quantity_partition(
    n: int, n_clients: int, alpha: float, rng: np.random.Generator
) -> tuple[I64, I64]:
    """Quantity skew: client sizes n_j = 1 + ⌊p_j (n − J)⌋ (+1 for the largest remainders,
    so Σ n_j = n exactly), p ~ Dir(α·1_J); records assigned by a random permutation. Every
    client holds at least one record; α → ∞ gives equal sizes, small α a few large clients."""
    p = rng.dirichlet(np.full(n_clients, alpha))
    share = p * (n - n_clients)
    sizes = np.floor(share).astype(np.int64)
    short = (n - n_clients) - int(sizes.sum())
    if short > 0:
        sizes[np.argsort(sizes - share, kind="stable")[:short]] += 1  # largest remainders
    return rng.permutation(n).astype(np.int64), _offsets(sizes + 1)


def dirichlet_partition(
    labels: I64, n_clients: int, alpha: float, rng: np.random.Generator
) -> tuple[I64, I64]:
    """Label skew (Hsu et al. 2019; Flower Datasets' DirichletPartitioner): for each class
    c, p_c ~ Dir(α·1_J) and the class's records, in random order, are cut at
    ⌊n_c · Σ_{i≤j} p_ci⌋, client j taking the j-th piece. Small α gives each client a few
    classes; large α gives every client about the global class proportions.

    A client left empty then takes one record, chosen at random, from the client holding
    the most records at that moment (repeated until no client is empty; needs n ≥ J).
    Flower resamples instead, which may never succeed when J is close to n; moving records
    always does and changes the largest clients by one record each."""
    n = labels.size
    owner = np.empty(n, dtype=np.int64)
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        p = rng.dirichlet(np.full(n_clients, alpha))
        cuts = np.floor(np.cumsum(p)[:-1] * members.size).astype(np.int64)
        owner[members] = np.searchsorted(cuts, np.arange(members.size), side="right")
    counts = np.bincount(owner, minlength=n_clients)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        order = np.argsort(owner, kind="stable")
        starts = _offsets(counts)
        heap = [(-int(counts[j]), int(j)) for j in np.flatnonzero(counts > 1)]
        heapq.heapify(heap)
        pools: dict[int, list[int]] = {}
        for e in empty.tolist():
            size, j = heapq.heappop(heap)
            if j not in pools:  # the donor's records, in random order
                pools[j] = rng.permutation(order[starts[j] : starts[j + 1]]).tolist()
            owner[pools[j].pop()] = e
            if -size - 1 > 1:
                heapq.heappush(heap, (size + 1, j))
        counts = np.bincount(owner, minlength=n_clients)
    return np.argsort(owner, kind="stable").astype(np.int64), _offsets(counts)


class Partitioned:
    """A real table (X, y) as a federated population: a stratified test set of
    ``test_fraction`` of each class, and the rest split over ``n_clients`` clients
    (``partition``: 'iid', 'dirichlet' label skew with concentration α, or 'quantity'
    skew with concentration α; see the partition functions). Labels are mapped to
    0..K−1 (``classes[k]`` is label k's original value); features are standardised with
    the training part's mean and standard deviation (a constant column is centred only).

    ``train_rows[offsets[j]:offsets[j+1]]`` are client j's rows of the original table and
    ``test_rows`` the test set's, so every record's place can be checked. A cohort costs
    O(k · n_max) to build. Errors name the field: ``X``, ``y``, ``n_clients``,
    ``partition``, ``alpha``, ``test_fraction``."""

    def __init__(
        self,
        X: F64,
        y: npt.ArrayLike,
        n_clients: int,
        *,
        partition: Literal["iid", "dirichlet", "quantity"] = "iid",
        alpha: float = 0.5,
        test_fraction: float = 0.2,
        rng: np.random.Generator,
    ) -> None:
        X = np.asarray(X, dtype=np.float64)
        y_raw = np.asarray(y)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise FieldError(
                "X", f"must be a non-empty 2-d table, got shape {X.shape}", "give (n, d) features"
            )
        if y_raw.shape != (X.shape[0],):
            raise FieldError(
                "y",
                f"must have shape ({X.shape[0]},), got {y_raw.shape}",
                "give one label per row of X",
            )
        if not np.isfinite(X).all():
            raise FieldError("X", "holds NaN or infinite values", "drop or impute them first")
        if partition not in PARTITIONS:
            raise FieldError(
                "partition", f"no partition {partition!r}", f"use one of {list(PARTITIONS)}"
            )
        if not (alpha > 0 and math.isfinite(alpha)):
            raise FieldError("alpha", f"must be a finite number > 0, got {alpha!r}", "e.g. 0.5")
        if not 0 < test_fraction < 1:
            raise FieldError(
                "test_fraction",
                f"must be strictly between 0 and 1, got {test_fraction!r}",
                "e.g. 0.2",
            )
        if (
            isinstance(n_clients, bool)
            or not isinstance(n_clients, int | np.integer)
            or n_clients < 1
        ):
            raise FieldError(
                "n_clients", f"must be an integer >= 1, got {n_clients!r}", "give 1 or more"
            )
        classes, codes = np.unique(y_raw, return_inverse=True)
        if classes.size < 2:
            raise FieldError("y", "holds a single class", "give labels of two or more classes")
        codes = codes.astype(np.int64)
        train, test = stratified_split(codes, test_fraction, rng)
        if test.size == 0:
            raise FieldError(
                "test_fraction",
                f"{test_fraction} of {codes.size} records leaves no test record",
                "raise test_fraction",
            )
        if n_clients > train.size:
            raise FieldError(
                "n_clients",
                f"{n_clients} clients but only {train.size} training records: "
                "every client needs one",
                f"give at most {train.size} clients",
            )
        if partition == "iid":
            rows, offsets = iid_partition(train.size, int(n_clients), rng)
        elif partition == "dirichlet":
            rows, offsets = dirichlet_partition(codes[train], int(n_clients), alpha, rng)
        else:
            rows, offsets = quantity_partition(train.size, int(n_clients), alpha, rng)
        self.mean, std = finite_mean_and_sd(X[train], field="X", where="the training records")
        self.std = np.where(std > 0, std, 1.0)
        self.classes = classes
        self.partition, self.alpha, self.test_fraction = (
            partition,
            float(alpha),
            float(test_fraction),
        )
        self.n_clients, self.n_features, self.n_classes = (
            int(n_clients),
            X.shape[1],
            int(classes.size),
        )
        self.train_rows = train[rows]
        self.offsets = offsets
        self.test_rows = test
        self._X = (X[self.train_rows] - self.mean) / self.std
        self._y = codes[self.train_rows]
        self._X_test = (X[test] - self.mean) / self.std
        self._y_test = codes[test]
        for array in (
            self.train_rows,
            self.offsets,
            self.test_rows,
            self._X,
            self._y,
            self._X_test,
            self._y_test,
        ):
            array.flags.writeable = False

    def cohort(self, clients: npt.ArrayLike) -> CohortData:
        ids = client_ids(np.asarray(clients), self.n_clients)
        return CohortData.from_records(ids, self._X, self._y, self.offsets)

    def records(self, clients: npt.ArrayLike) -> I64:
        ids = client_ids(np.asarray(clients), self.n_clients)
        return np.asarray(self.offsets[ids + 1] - self.offsets[ids], dtype=np.int64)

    def test_set(self) -> tuple[F64, I64]:
        return self._X_test, self._y_test

    def label_counts(self) -> npt.NDArray[np.int64]:
        """(n_clients, K) records of each class per client."""
        owner = np.repeat(np.arange(self.n_clients), np.diff(self.offsets))
        table = np.zeros((self.n_clients, self.n_classes), dtype=np.int64)
        np.add.at(table, (owner, self._y), 1)
        return table
