"""Federated data: clients' records served a cohort at a time, in time and memory that
depend only on the cohort, never on the population.

Two sources implement :class:`FederatedData`: :class:`LeafSynthetic` (LEAF's and
FedProx's Synthetic(α, β), generated per client on demand, for populations of millions)
and :class:`~privsim.protocols.fedlearn.partition.Partitioned` (a real table split over
clients). :func:`load_source` reads a real table by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from privsim.scenarios.errors import FieldError

__all__ = [
    "MAX_CLASSES",
    "SOURCES",
    "CohortData",
    "FederatedData",
    "LeafSynthetic",
    "client_ids",
    "load_source",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CohortData:
    """The records of k clients, padded to the largest: client i's records are rows
    ``0 .. counts[i]-1`` of ``X[i]`` and ``y[i]`` (``mask[i]`` marks them); padding is
    zeros. The arrays are read-only."""

    clients: I64  # (k,) population indices, in the order asked for
    X: F64  # (k, n_max, d)
    y: I64  # (k, n_max)
    mask: B  # (k, n_max)
    counts: I64  # (k,)

    def __post_init__(self) -> None:
        k = self.clients.shape[0]
        if (
            self.X.ndim != 3
            or self.X.shape[0] != k
            or self.y.shape != self.X.shape[:2]
            or self.mask.shape != self.y.shape
            or self.counts.shape != (k,)
        ):
            raise ValueError(
                f"inconsistent cohort shapes: clients {self.clients.shape}, X {self.X.shape}, "
                f"y {self.y.shape}, mask {self.mask.shape}, counts {self.counts.shape}"
            )
        for array in (self.clients, self.X, self.y, self.mask, self.counts):
            array.flags.writeable = False

    @property
    def n_records(self) -> int:
        """Records in the cohort, padding excluded."""
        return int(self.counts.sum())

    @classmethod
    def from_records(cls, clients: I64, X: F64, y: I64, offsets: I64) -> CohortData:
        """Pad the records of ``clients`` out of a table sorted by client, client j owning
        rows ``offsets[j] .. offsets[j+1]-1``. Cost O(k · n_max), never O(population)."""
        clients = np.asarray(clients, dtype=np.int64)
        starts = offsets[clients]
        counts = offsets[clients + 1] - starts
        n_max = int(counts.max()) if clients.size else 0
        positions = np.arange(n_max)
        mask = positions[None, :] < counts[:, None]
        source = (starts[:, None] + positions[None, :])[mask]
        Xp = np.zeros((clients.size, n_max, X.shape[1]))
        yp = np.zeros((clients.size, n_max), dtype=np.int64)
        Xp[mask] = X[source]
        yp[mask] = y[source]
        return cls(clients=clients.copy(), X=Xp, y=yp, mask=mask, counts=counts)


@runtime_checkable
class FederatedData(Protocol):
    """A population of ``n_clients`` clients holding labelled records (labels 0..K−1)."""

    n_clients: int
    n_features: int
    n_classes: int

    def cohort(self, clients: I64) -> CohortData:
        """The training records of these clients; cost O(their records)."""
        ...

    def test_set(self) -> tuple[F64, I64]:
        """The held-out test records (X, y)."""
        ...

    def records(self, clients: I64) -> I64:
        """How many training records each of these clients holds."""
        ...


def client_ids(clients: I64, n_clients: int) -> I64:
    """``clients`` as int64 ids, checked to lie in the population 0..n_clients−1."""
    ids = np.asarray(clients)
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise ValueError(f"clients must be a 1-d array of integer ids, got {ids.dtype} {ids.shape}")
    ids = ids.astype(np.int64, copy=False)
    if ids.size and (ids.min() < 0 or ids.max() >= n_clients):
        bad = int(ids[(ids < 0) | (ids >= n_clients)][0])
        raise ValueError(f"client id {bad} is outside the population 0..{n_clients - 1}")
    return ids


# -- LEAF Synthetic(α, β) ---------------------------------------------------------------------


def _require(field: str, ok: bool, value: object, what: str, fix: str) -> None:
    if not ok:
        raise FieldError(field, f"must be {what}, got {value!r}", fix)


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


class LeafSynthetic:
    """Synthetic(α, β) of LEAF (Caldas et al. 2018) and FedProx (Li et al. 2020, §5.1 and
    their ``generate_synthetic.py``), generated client by client on demand.

    Client k draws u_k ~ N(0, α²), B_k ~ N(0, β²) (α, β are standard deviations, as
    ``np.random.normal(0, alpha)`` in the reference code), W_k ∈ R^{c×d} and b_k ∈ R^c
    with entries ~ N(u_k, 1), v_k ∈ R^d with entries ~ N(B_k, 1), and records
    x ~ N(v_k, Σ), Σ = diag(j^{−1.2}), j = 1..d, labelled y = argmax(W_k x + b_k)
    (the softmax of the paper does not change the argmax). With ``iid=True`` every client
    shares one (W, b) and v_k = B_k·1: the paper's Synthetic-IID (with β = 0, v_k = 0).

    Note: u_k shifts every class's score by the same u_k(1ᵀx + 1), so the labels do not
    depend on α at all; β (through v_k) and the per-client draws of W_k, b_k make the
    clients heterogeneous — Synthetic(0, 0) is as non-IID in its labels as (1, 1).

    Record counts: n_k = min(⌊LogNormal(μ, σ)⌋ + min_records, max_records), FedProx's
    ⌊LogNormal(4, 2)⌋ + 50 capped at 500 by default (median 104, mean ≈ 185, 15% of the
    clients at the cap): the power law of the paper, with a cap so that a cohort of 1000
    (at most 1000 × 400 training records × d) fits in memory. The last
    ``⌊test_fraction · n_k⌋`` records of each client are its test records (FedProx's 80/20
    per-client split); the test set is the test records of clients
    0 .. min(n_clients, test_clients) − 1, so it costs O(test size) to build.

    Parameters: ``n_clients`` the population N; ``alpha``, ``beta`` as above; ``seed`` an
    integer or a ``SeedSequence`` (e.g. ``Streams.seed_sequence("data", "synthetic")``);
    ``n_features`` d = 60 and ``n_classes`` c = 10 (the paper's); ``iid``;
    ``records_log_mean`` μ = 4, ``records_log_sd`` σ = 2, ``min_records`` 50,
    ``max_records`` 500; ``test_fraction`` 0.2; ``test_clients`` 1000 (a test set of about
    37 000 records, built in about 0.2 s). Errors name the parameter.

    Client k's records are a pure function of (seed, k): its generator is
    ``SeedSequence(entropy, spawn_key=(*seed.spawn_key, 0, k))`` (the shared (W, b) of
    ``iid`` uses ``(…, 1)``), whatever cohort it is drawn in and in whatever order;
    constructing a population draws nothing.
    """

    __slots__ = (
        "_base",
        "_entropy",
        "_scale",
        "_shared",
        "_test",
        "alpha",
        "beta",
        "iid",
        "max_records",
        "min_records",
        "n_classes",
        "n_clients",
        "n_features",
        "records_log_mean",
        "records_log_sd",
        "test_clients",
        "test_fraction",
    )

    def __init__(
        self,
        n_clients: int,
        *,
        alpha: float,
        beta: float,
        seed: int | np.random.SeedSequence,
        n_features: int = 60,
        n_classes: int = 10,
        iid: bool = False,
        records_log_mean: float = 4.0,
        records_log_sd: float = 2.0,
        min_records: int = 50,
        max_records: int = 500,
        test_fraction: float = 0.2,
        test_clients: int = 1000,
    ) -> None:
        for field, count, low in (
            ("n_clients", n_clients, 1),
            ("n_features", n_features, 1),
            ("n_classes", n_classes, 2),
            ("min_records", min_records, 1),
            ("test_clients", test_clients, 1),
        ):
            _require(
                field,
                _is_int(count) and count >= low,
                count,
                f"an integer >= {low}",
                f"give {low} or more",
            )
        for field, value in (("alpha", alpha), ("beta", beta), ("records_log_sd", records_log_sd)):
            _require(
                field,
                value >= 0 and math.isfinite(value),
                value,
                "a finite number >= 0",
                "give 0 or more",
            )
        _require(
            "records_log_mean",
            math.isfinite(records_log_mean),
            records_log_mean,
            "finite",
            "e.g. 4",
        )
        _require(
            "max_records",
            _is_int(max_records) and max_records >= min_records,
            max_records,
            f"an integer >= min_records = {min_records}",
            "raise max_records or lower min_records",
        )
        _require(
            "test_fraction",
            0 < test_fraction < 1,
            test_fraction,
            "strictly between 0 and 1",
            "e.g. 0.2",
        )
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self._entropy = root.entropy
        self._base = tuple(root.spawn_key)
        self.n_clients, self.n_features, self.n_classes = (
            int(n_clients),
            int(n_features),
            int(n_classes),
        )
        self.alpha, self.beta, self.iid = float(alpha), float(beta), bool(iid)
        self.records_log_mean, self.records_log_sd = float(records_log_mean), float(records_log_sd)
        self.min_records, self.max_records = int(min_records), int(max_records)
        self.test_fraction, self.test_clients = float(test_fraction), int(test_clients)
        self._scale = np.arange(1, self.n_features + 1, dtype=np.float64) ** -0.6  # sqrt(Σ_jj)
        self._shared: tuple[F64, F64] | None = None
        self._test: tuple[F64, I64] | None = None

    def _generator(self, *key: int) -> np.random.Generator:
        seq = np.random.SeedSequence(self._entropy, spawn_key=(*self._base, *key))
        return np.random.Generator(np.random.PCG64(seq))

    def _split(self, total: int) -> int:
        """Training records of a client of ``total`` records (the rest are its test set)."""
        return total - int(self.test_fraction * total)

    def _count(self, gen: np.random.Generator) -> int:
        draw = gen.lognormal(self.records_log_mean, self.records_log_sd)
        return int(min(math.floor(min(draw, 1e18)) + self.min_records, self.max_records))

    def _model(self, gen: np.random.Generator) -> tuple[F64, F64, F64]:
        """Client parameters (W_k, b_k, v_k), drawn after the count, always in this order."""
        c, d = self.n_classes, self.n_features
        u = self.alpha * gen.standard_normal()
        shift = self.beta * gen.standard_normal()
        W = u + gen.standard_normal((c, d))
        b = u + gen.standard_normal(c)
        v = shift + gen.standard_normal(d)
        if self.iid:
            if self._shared is None:
                shared = self._generator(1)
                W_all = shared.standard_normal((c, d))
                self._shared = (W_all, shared.standard_normal(c))
            W, b = self._shared
            v = np.full(d, shift)
        return W, b, v

    def _fill(self, gen: np.random.Generator, v: F64, W: F64, b: F64, X: F64) -> I64:
        """Records x = v + sqrt(Σ) z into ``X`` (n, d) in place; returns their labels."""
        gen.standard_normal(out=X)
        X *= self._scale
        X += v
        return np.argmax(X @ W.T + b, axis=1).astype(np.int64)

    def records(self, clients: I64) -> I64:
        ids = client_ids(clients, self.n_clients)
        return np.array(
            [self._split(self._count(self._generator(0, int(k)))) for k in ids], dtype=np.int64
        )

    def cohort(self, clients: I64) -> CohortData:
        ids = client_ids(clients, self.n_clients)
        gens = [self._generator(0, int(k)) for k in ids]
        counts = np.array([self._split(self._count(g)) for g in gens], dtype=np.int64)
        n_max = int(counts.max()) if ids.size else 0
        X = np.zeros((ids.size, n_max, self.n_features))
        y = np.zeros((ids.size, n_max), dtype=np.int64)
        for i, gen in enumerate(gens):
            W, b, v = self._model(gen)
            y[i, : counts[i]] = self._fill(gen, v, W, b, X[i, : counts[i]])
        mask = np.arange(n_max)[None, :] < counts[:, None]
        return CohortData(clients=ids.copy(), X=X, y=y, mask=mask, counts=counts)

    def test_set(self) -> tuple[F64, I64]:
        """The test records of clients 0 .. min(n_clients, test_clients) − 1, in order
        (each client's records after its training ones, from the same stream)."""
        if self._test is None:
            parts_X, parts_y = [], []
            for k in range(min(self.n_clients, self.test_clients)):
                gen = self._generator(0, k)
                total = self._count(gen)
                n_train = self._split(total)
                W, b, v = self._model(gen)
                train = np.empty((n_train, self.n_features))
                self._fill(gen, v, W, b, train)  # advances the stream past the training records
                test = np.empty((total - n_train, self.n_features))
                parts_y.append(self._fill(gen, v, W, b, test))
                parts_X.append(test)
            X, y = np.concatenate(parts_X), np.concatenate(parts_y)
            X.flags.writeable = False
            y.flags.writeable = False
            self._test = (X, y)
        return self._test


# -- real data by name ------------------------------------------------------------------------

#: Named real sources and what they are (registry names of privsim.data, plus digits and csv).
SOURCES = {
    "htru2": "UCI HTRU2 pulsars (privsim.data registry): 17898 x 8, binary",
    "skin": "UCI Skin Segmentation (registry): 245057 x 3 (B, G, R), binary (skin = 1)",
    "occupancy": "UCI Occupancy Detection, all three files (registry): 20560 x 5, binary",
    "digits": "scikit-learn's bundled 8x8 digits: 1797 x 64, 10 classes (no download)",
    "csv": "a CSV file of your own: csv_path, features and target",
}
#: A target with more distinct values than this looks continuous, not like class labels.
MAX_CLASSES = 100
#: Whole-number labels are kept as integers up to this magnitude (2^53: every integer
#: below it is a float exactly; beyond, the cast to int64 is lossy or invalid).
_EXACT_INTEGERS = float(2**53)


def load_source(
    source: str,
    *,
    csv_path: str | Path | None = None,
    features: tuple[str, ...] | list[str] = (),
    target: str | None = None,
    sep: str = ",",
) -> tuple[F64, I64, str]:
    """A real classification table by name: (X, y, name). The classes are the target
    column's distinct values: integer labels are kept as they are (the registry's binary
    sets are 0/1 already: skin's 1/2 is mapped to skin = 1, non-skin = 0 by the registry),
    other values are replaced by their rank among the distinct values (0..K−1).
    :class:`~privsim.protocols.fedlearn.partition.Partitioned` maps any labels to 0..K−1
    and keeps the mapping. A registry set needs ``$PRIVSIM_DATA_DIR`` (an error if unset).
    Errors name the field: ``source``, ``csv_path``, ``features``, ``target``."""
    from privsim.data.registry import load_csv, load_dataset

    if source in ("htru2", "skin", "occupancy"):
        table = load_dataset(source)
        X, raw, name, column = table.X, table.y, source, table.target
    elif source == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        X, raw, name, column = (
            np.asarray(digits.data, dtype=np.float64),
            np.asarray(digits.target),
            "digits",
            "target",
        )
    elif source == "csv":
        if csv_path is None:
            raise FieldError("csv_path", "source 'csv' needs a file", "give csv_path = 'data.csv'")
        if not features:
            raise FieldError(
                "features", "source 'csv' needs feature columns", "give features = ['a', 'b']"
            )
        if not target:
            raise FieldError(
                "target", "source 'csv' needs a target column", "give target = 'label'"
            )
        table = load_csv(csv_path, features=list(features), target=target, sep=sep)
        X, raw, name, column = table.X, table.y, f"csv:{Path(csv_path).name}", target
    else:
        raise FieldError("source", f"no data source {source!r}", f"use one of {sorted(SOURCES)}")
    values = np.unique(raw)
    if values.size > MAX_CLASSES:
        raise FieldError(
            "target",
            f"column {column!r} has {values.size} distinct values: it looks continuous, not like "
            "class labels",
            "give a column of class labels (at most 100 distinct values)",
        )
    if values.size < 2:
        raise FieldError(
            "target",
            f"column {column!r} holds a single value",
            "give a column with two or more classes",
        )
    if np.all(values == np.round(values)):
        if not np.all(np.abs(values) <= _EXACT_INTEGERS):  # int64 cast: invalid values
            big = float(values[np.argmax(np.abs(values))])
            raise FieldError(
                "target",
                f"column {column!r} holds the label {big:g}, beyond the integers a float "
                f"holds exactly (±2^53): it cannot be read as a class",
                "give class labels as small whole numbers, e.g. 0 … K−1",
            )
        y = np.asarray(raw).astype(np.int64)
    else:
        y = np.searchsorted(values, raw).astype(np.int64)
    return np.asarray(X, dtype=np.float64), y, name
