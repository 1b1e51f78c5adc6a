"""The dataset registry against the shared data directory (PRIVSIM_DATA_DIR)."""

import os

import numpy as np
import pytest

from privsim.data.registry import DATA_DIR_ENV, REGISTRY, DataError, load_csv, load_dataset

needs_data = pytest.mark.skipif(not os.environ.get(DATA_DIR_ENV), reason=f"{DATA_DIR_ENV} not set")

EXPECTED = {  # name: (rows, features) as documented in SOURCES.md
    "wine-red": (1599, 11),
    "wine-white": (4898, 11),
    "abalone": (4177, 8),
    "airfoil": (1503, 5),
    "forestfires": (517, 10),
    "garments": (1197, 9),
    "occupancy": (20560, 5),
    "htru2": (17898, 8),
    "skin": (245057, 3),
}


@needs_data
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_data_set_loads_with_its_documented_shape(name):
    ds = load_dataset(name)
    assert (len(ds), len(ds.features)) == EXPECTED[name]
    assert np.isfinite(ds.X).all() and np.isfinite(ds.y).all()


@needs_data
def test_documented_encodings_and_class_counts():
    abalone = load_dataset("abalone")
    assert int((abalone.frame["sex"] == 0).sum()) == 1528  # M
    assert int(load_dataset("htru2").y.sum()) == 1639
    assert int(load_dataset("skin").y.sum()) == 50859
    assert int(load_dataset("occupancy").y.sum()) == 1729 + 972 + 2049


def test_missing_directory_and_file_name_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(DataError, match=DATA_DIR_ENV):
        load_dataset("abalone")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(DataError, match=r"abalone\.data.*PRIVSIM_DATA_DIR"):
        load_dataset("abalone")


def test_checksum_mismatch_is_refused(tmp_path, monkeypatch):
    (tmp_path / "abalone.data").write_text("M,0.4,0.3,0.1,0.5,0.2,0.1,0.1,9\n")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(DataError, match="sha256"):
        load_dataset("abalone")


def test_users_own_csv(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("a,b,label,name\n1,2,0,x\n3,4,1,y\n")
    ds = load_csv(path, features=["a", "b"], target="label")
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="no column"):
        load_csv(path, features=["a", "c"], target="label")
    with pytest.raises(ValueError, match="not numeric"):
        load_csv(path, features=["name"], target="label")
