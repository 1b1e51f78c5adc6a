"""Federated data for fedlearn: LEAF Synthetic(α, β) generated per client, real tables
partitioned over clients, and real sources by name."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from privsim.data.registry import DATA_DIR_ENV, DataError
from privsim.protocols.fedlearn.data import FederatedData, LeafSynthetic, load_source
from privsim.protocols.fedlearn.partition import Partitioned, quantity_partition
from privsim.scenarios.errors import FieldError
from tests.conftest import needs_data

# -- LeafSynthetic ----------------------------------------------------------------------------


def _label_table(data, clients):
    cohort = data.cohort(clients)
    table = np.stack(
        [
            np.bincount(cohort.y[i, : cohort.counts[i]], minlength=data.n_classes)
            for i in range(len(clients))
        ]
    )
    return table.astype(np.float64)


def _mean_tv(table):
    """Mean over clients of the total variation between the client's label distribution
    and the pooled one, and what multinomial sampling alone would give: for n draws from
    g, E|p̂_c − g_c| ≈ sqrt(2 g_c(1 − g_c) / (π n)) (normal approximation)."""
    n = table.sum(axis=1)
    shares = table / n[:, None]
    pooled = table.sum(axis=0) / table.sum()
    tv = 0.5 * np.abs(shares - pooled).sum(axis=1)
    sampling = 0.5 * np.sqrt(2 * pooled * (1 - pooled) / np.pi).sum() / np.sqrt(n)
    return float(tv.mean()), float(sampling.mean())


def test_a_client_is_the_same_in_every_cohort_and_population():
    data = LeafSynthetic(1000, alpha=1.0, beta=1.0, seed=21)
    assert isinstance(data, FederatedData)
    a = data.cohort(np.array([5, 17, 3]))
    b = data.cohort(np.array([3, 999, 5, 17, 5]))
    c = LeafSynthetic(10**6, alpha=1.0, beta=1.0, seed=np.random.SeedSequence(21)).cohort(
        np.array([17])
    )
    for client, i, j in ((5, 0, 2), (17, 1, 3), (3, 2, 0)):
        n = a.counts[i]
        assert b.counts[j] == n and n == data.records(np.array([client]))[0]
        np.testing.assert_array_equal(a.X[i, :n], b.X[j, :n])
        np.testing.assert_array_equal(a.y[i, :n], b.y[j, :n])
    np.testing.assert_array_equal(b.X[2], b.X[4])  # asked twice in one cohort
    np.testing.assert_array_equal(c.X[0, : c.counts[0]], a.X[1, : a.counts[1]])
    assert not b.X[0, b.counts[0] :].any() and not b.mask[0, b.counts[0] :].any()
    other = LeafSynthetic(1000, alpha=1.0, beta=1.0, seed=22).cohort(np.array([5]))
    assert not np.array_equal(other.X[0, :5], a.X[0, :5])
    assert a.X.flags.writeable is False


def test_record_counts_follow_the_capped_lognormal():
    data = LeafSynthetic(10**6, alpha=0.5, beta=0.5, seed=23)
    counts = data.records(np.arange(2000))
    # n_k = min(⌊LogNormal(4, 2)⌋ + 50, 500), 80% of it for training: 40 .. 400
    assert counts.min() >= 40 and counts.max() == 400
    # P(⌊LN(4, 2)⌋ + 50 >= 500) = P(Z >= (ln 450 − 4)/2) = 0.147; 2000 clients: sd 0.008
    at_cap = float(np.mean(counts == 400))
    expected = 0.5 * math.erfc((math.log(450) - 4) / 2 / math.sqrt(2))
    assert abs(at_cap - expected) < 4 * math.sqrt(expected * (1 - expected) / 2000)
    # median ⌊e^4⌋ + 50 = 104 records, 83 for training
    assert 70 <= np.median(counts) <= 100


def test_a_million_clients_construct_instantly_and_a_cohort_is_cheap():
    start = time.perf_counter()
    data = LeafSynthetic(10**6, alpha=1.0, beta=1.0, seed=24)
    assert time.perf_counter() - start < 0.05  # nothing is drawn at construction
    clients = np.random.default_rng(0).choice(10**6, size=1000, replace=False)
    start = time.perf_counter()
    cohort = data.cohort(clients)
    elapsed = time.perf_counter() - start
    # measured 0.15 s (median of 10; 0.55 s the first time the process maps the 180 MB);
    # the bound leaves room for a loaded CI machine
    assert elapsed < 3.0
    assert cohort.X.shape == (1000, int(cohort.counts.max()), 60)
    np.testing.assert_array_equal(cohort.clients, clients)


def test_synthetic_labels_are_non_iid_except_in_synthetic_iid():
    clients = np.arange(200)
    # Synthetic-IID (shared W, b; v_k = 0): clients differ from the pooled label
    # distribution only by multinomial sampling: measured 0.95–1.01 × the expectation
    # over 5 seeds; the mean over 200 clients has a relative sd of about 3%.
    tv, sampling = _mean_tv(
        _label_table(LeafSynthetic(1000, alpha=0.0, beta=0.0, iid=True, seed=25), clients)
    )
    assert 0.8 * sampling < tv < 1.2 * sampling
    # Synthetic(1, 1) and Synthetic(0, 0) alike: each client has its own W_k, b_k and
    # v_k, and x concentrates near v_k (Σ_jj = j^−1.2 is small past the first features),
    # so most of a client's records fall in one or two classes: measured mean TV 0.80
    # to 0.83 and majority share 0.80 to 0.85, against a pooled majority of 0.12 to 0.17.
    for alpha_beta in (1.0, 0.0):
        table = _label_table(
            LeafSynthetic(1000, alpha=alpha_beta, beta=alpha_beta, seed=25), clients
        )
        tv, sampling = _mean_tv(table)
        assert tv > 0.6 and tv > 5 * sampling
        majority = (table.max(axis=1) / table.sum(axis=1)).mean()
        assert majority > 0.6 > 3 * (table.sum(axis=0).max() / table.sum())


def test_alpha_does_not_change_the_labels():
    # u_k adds u_k(1ᵀx + 1) to every class's score: the argmax, hence the data, is the same
    a = LeafSynthetic(100, alpha=0.0, beta=1.0, seed=26).cohort(np.arange(50))
    b = LeafSynthetic(100, alpha=3.0, beta=1.0, seed=26).cohort(np.arange(50))
    np.testing.assert_array_equal(a.X, b.X)
    assert np.mean(a.y[a.mask] == b.y[b.mask]) > 0.999  # up to rounding at exact ties


def test_synthetic_test_set():
    data = LeafSynthetic(10**6, alpha=1.0, beta=1.0, seed=27, test_clients=30)
    X, y = data.test_set()
    assert X is data.test_set()[0]  # built once
    # client k of t_k records holds out its last ⌊0.2 t_k⌋ = h_k; with n_k = t_k − h_k
    # training records, 0.25 n_k − 1.25 < h_k ≤ 0.25 n_k
    train = data.records(np.arange(30)).sum()
    assert X.shape[1] == 60 and 0.25 * train - 1.25 * 30 < X.shape[0] <= 0.25 * train
    assert y.shape == (X.shape[0],) and set(np.unique(y)) <= set(range(10))
    train = data.cohort(np.arange(30))
    seen = {row.tobytes() for row in train.X[train.mask]}
    assert not any(row.tobytes() in seen for row in X)  # held out, not copied
    small = LeafSynthetic(5, alpha=1.0, beta=1.0, seed=27, test_clients=30).test_set()[0]
    assert 5 * 10 <= small.shape[0] < X.shape[0]  # only the 5 clients there are


def test_synthetic_errors_name_the_field():
    cases = [
        ((0,), {}, "n_clients"),
        ((10,), {"alpha": -1.0}, "alpha"),
        ((10,), {"beta": float("nan")}, "beta"),
        ((10,), {"n_classes": 1}, "n_classes"),
        ((10,), {"min_records": 100, "max_records": 50}, "max_records"),
        ((10,), {"test_fraction": 1.0}, "test_fraction"),
        ((10,), {"test_clients": 0}, "test_clients"),
    ]
    for args, options, field in cases:
        kwargs = {"alpha": 1.0, "beta": 1.0, "seed": 0} | options
        with pytest.raises(FieldError) as err:
            LeafSynthetic(*args, **kwargs)
        assert err.value.field == field
    with pytest.raises(ValueError, match="client id 10 is outside"):
        LeafSynthetic(10, alpha=1.0, beta=1.0, seed=0).cohort(np.array([3, 10]))


# -- Partitioned ------------------------------------------------------------------------------


def _table(per_class=2500, classes=10, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), per_class)
    X = rng.normal(size=(y.size, 3)) + y[:, None]
    return X, y


def _shares(data):
    table = data.label_counts()
    return table / table.sum(axis=1, keepdims=True)


def _check_every_record_once(data, n):
    rows = np.concatenate([data.train_rows, data.test_rows])
    np.testing.assert_array_equal(np.sort(rows), np.arange(n))
    assert np.diff(data.offsets).min() >= 1  # every client holds a record


def test_dirichlet_small_alpha_gives_each_client_one_main_class():
    # With Dir(0.1·1) a class's records go mostly to one or two clients, so a client holds
    # big pieces of few classes: the share of clients whose top class is more than half
    # of their records is 0.71 on average (30 seeds, 20 clients each, sd 0.1); over 5
    # seeds (100 clients) the sd is 0.045, so 0.5 is 4.5 sd below.
    X, y = _table()
    dominated = []
    for seed in range(5):
        data = Partitioned(
            X, y, 20, partition="dirichlet", alpha=0.1, rng=np.random.default_rng(seed)
        )
        _check_every_record_once(data, y.size)
        dominated.extend(_shares(data).max(axis=1) > 0.5)
    assert np.mean(dominated) > 0.5


def test_dirichlet_large_alpha_keeps_the_global_proportions():
    # Client j's share of class c is p_cj ~ Beta(α, α(J−1)), relative sd
    # s = sqrt((J−1)/(αJ+1)) = 0.097 for α = 100, J = 20. Its class proportions
    # q_jc = p_cj / Σ_c' p_c'j (balanced classes) deviate from 1/K by about
    # (s/K)·sqrt(1 − 1/K) = 0.0092; the floor cuts add < 1/250. The largest of the 200
    # deviations stays below 5 sd (measured 2.3 to 3.8 sd over 30 seeds).
    X, y = _table()
    J, K, alpha = 20, 10, 100.0
    sd = math.sqrt((J - 1) / (alpha * J + 1)) / K * math.sqrt(1 - 1 / K)
    data = Partitioned(X, y, J, partition="dirichlet", alpha=alpha, rng=np.random.default_rng(1))
    _check_every_record_once(data, y.size)
    assert np.abs(_shares(data) - 1 / K).max() < 5 * sd
    skewed = Partitioned(X, y, J, partition="dirichlet", alpha=0.1, rng=np.random.default_rng(1))
    assert np.abs(_shares(skewed) - 1 / K).max() > 0.3


def test_dirichlet_fills_empty_clients_when_clients_are_many():
    X, y = _table(per_class=25, classes=4)  # 80 training records for 70 clients
    data = Partitioned(X, y, 70, partition="dirichlet", alpha=0.1, rng=np.random.default_rng(2))
    _check_every_record_once(data, y.size)
    assert data.records(np.arange(70)).sum() == 80


def test_iid_and_quantity_partitions():
    X, y = _table(per_class=101, classes=3)
    iid = Partitioned(X, y, 7, partition="iid", rng=np.random.default_rng(3))
    _check_every_record_once(iid, y.size)
    sizes = iid.records(np.arange(7))
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == iid.train_rows.size
    for alpha in (0.05, 1.0, 1000.0):
        q = Partitioned(X, y, 50, partition="quantity", alpha=alpha, rng=np.random.default_rng(4))
        _check_every_record_once(q, y.size)
        assert q.records(np.arange(50)).sum() == q.train_rows.size
    # Dir(α·1_J) shares have coefficient of variation sqrt((J−1)/(Jα+1)): 4.06 for
    # α = 0.05 and 0.031 for α = 1000 (J = 100); measured 2.9–7.1 and 0.028–0.035 over
    # 20 seeds
    cv = {}
    for alpha in (0.05, 1000.0):
        rows, offsets = quantity_partition(10_000, 100, alpha, np.random.default_rng(5))
        np.testing.assert_array_equal(np.sort(rows), np.arange(10_000))
        sizes = np.diff(offsets)
        assert sizes.sum() == 10_000 and sizes.min() >= 1
        cv[alpha] = sizes.std() / sizes.mean()
    assert cv[0.05] > 2.0 and cv[1000.0] < 0.06


def test_partitioned_test_set_labels_and_standardisation():
    rng = np.random.default_rng(6)
    y = np.array([3] * 50 + [7] * 30 + [11] * 20)
    X = np.column_stack([rng.normal(5.0, 2.0, 100), np.full(100, 4.0), y * 1.0])
    data = Partitioned(X, y, 4, test_fraction=0.2, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(data.classes, [3, 7, 11])
    X_test, y_test = data.test_set()
    np.testing.assert_array_equal(np.bincount(y_test), [10, 6, 4])  # stratified: 20% of each
    cohort = data.cohort(np.arange(4))
    train = cohort.X[cohort.mask]
    np.testing.assert_allclose(train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(train.std(axis=0), [1.0, 0.0, 1.0], atol=1e-12)  # constant: centred
    np.testing.assert_allclose(X_test, (X[data.test_rows] - data.mean) / data.std)
    for j in range(4):  # a client's records are its rows of the table
        rows = data.train_rows[data.offsets[j] : data.offsets[j + 1]]
        np.testing.assert_allclose(
            cohort.X[j, : cohort.counts[j]], (X[rows] - data.mean) / data.std
        )
        np.testing.assert_array_equal(data.classes[cohort.y[j, : cohort.counts[j]]], y[rows])
    again = Partitioned(X, y, 4, test_fraction=0.2, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(again.train_rows, data.train_rows)


def test_partitioned_errors_name_the_field():
    X, y = _table(per_class=10, classes=2)  # 16 training records
    cases = [
        ((X, y, 17), {}, "n_clients"),
        ((X, y, 0), {}, "n_clients"),
        ((X, y, 4), {"partition": "shards"}, "partition"),
        ((X, y, 4), {"alpha": 0.0}, "alpha"),
        ((X, y, 4), {"test_fraction": 0.0}, "test_fraction"),
        ((X, np.zeros(20), 4), {}, "y"),
        ((X, y[:5], 4), {}, "y"),
        ((X * np.nan, y, 4), {}, "X"),
    ]
    for args, options, field in cases:
        with pytest.raises(FieldError) as err:
            Partitioned(*args, rng=np.random.default_rng(0), **options)
        assert err.value.field == field, (field, str(err.value))
    with pytest.raises(FieldError, match="17 clients but only 16 training records"):
        Partitioned(X, y, 17, rng=np.random.default_rng(0))


# -- real sources -------------------------------------------------------------------------------


def test_digits_needs_no_download():
    X, y, name = load_source("digits")
    assert (X.shape, name) == ((1797, 64), "digits")
    np.testing.assert_array_equal(np.unique(y), np.arange(10))


def test_a_users_csv(tmp_path):
    path = tmp_path / "mine.csv"
    rows = ["a,b,label,value,half"] + [
        f"{i},{i % 3},{[3, 5, 9][i % 3]},{i * 0.37},{i % 2 + 0.5}" for i in range(150)
    ]
    path.write_text("\n".join(rows) + "\n")
    X, y, name = load_source("csv", csv_path=path, features=("a", "b"), target="label")
    assert X.shape == (150, 2) and name == "csv:mine.csv"
    np.testing.assert_array_equal(np.unique(y), [3, 5, 9])  # integer labels kept
    _, y_half, _ = load_source("csv", csv_path=path, features=["a"], target="half")
    np.testing.assert_array_equal(np.unique(y_half), [0, 1])  # 0.5, 1.5 -> ranks
    with pytest.raises(FieldError, match="'value' has 150 distinct values") as err:
        load_source("csv", csv_path=path, features=["a"], target="value")
    assert err.value.field == "target"
    for kwargs, field in (
        ({"features": ["a"], "target": "label"}, "csv_path"),
        ({"csv_path": path, "target": "label"}, "features"),
        ({"csv_path": path, "features": ["a"]}, "target"),
    ):
        with pytest.raises(FieldError) as err:
            load_source("csv", **kwargs)
        assert err.value.field == field
    with pytest.raises(FieldError) as err:
        load_source("mnist")
    assert err.value.field == "source" and "digits" in str(err.value)


def test_a_registry_source_without_the_data_directory_is_an_error(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(DataError, match=DATA_DIR_ENV):
        load_source("htru2")


@needs_data
@pytest.mark.parametrize(
    ("source", "shape", "positives"),
    [("htru2", (17898, 8), 1639), ("skin", (245057, 3), 50859), ("occupancy", (20560, 5), 4750)],
)
def test_registry_sources_are_binary(source, shape, positives):
    X, y, name = load_source(source)
    assert X.shape == shape and name == source
    np.testing.assert_array_equal(np.unique(y), [0, 1])
    assert int(y.sum()) == positives
