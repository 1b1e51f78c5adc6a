"""BCD on a user's CSV: used as given or by public centres, never by the data's own means
(issue 23, "No data-dependent scaling")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim.protocols.bcd import BCD
from privsim.protocols.bcd.config import BcdConfig
from privsim.protocols.bcd.data import load_partitioned
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario

FEATURES = ("a", "b", "c", "d")
#: The design's means, known in advance (public): the columns are N(mean, 1).
MEANS = np.array([3.0, -2.0, 10.0, 0.5])
BETA = np.array([1.0, -0.5, 0.8, 0.3])
TARGET_MEAN = float(MEANS @ BETA)


def _table(n: int = 300, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = MEANS + rng.standard_normal((n, len(FEATURES)))
    return x, x @ BETA + 0.5 * rng.standard_normal(n)


def _write(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    rows = [",".join(repr(v) for v in (*r, t)) for r, t in zip(x.tolist(), y.tolist(), strict=True)]
    path.write_text(",".join((*FEATURES, "y")) + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _cfg(path: Path, **bcd: Any) -> BcdConfig:
    return BcdConfig(
        dataset="csv",
        csv_path=str(path),
        features=FEATURES,
        target="y",
        **bcd,
    )


def _scenario(path: Path, **bcd: object) -> Scenario:
    plain = {
        **BCD.example,
        "bcd": {
            "dataset": "csv",
            "csv_path": str(path),
            "features": list(FEATURES),
            "target": "y",
            "parties": 2,
            "iterations": 5,
            **bcd,
        },
    }
    return Scenario.from_dict(plain)


def test_a_csv_is_used_as_given_without_centres(tmp_path):
    x, y = _table()
    data = load_partitioned(_cfg(_write(tmp_path / "d.csv", x, y)), np.random.default_rng(0))
    np.testing.assert_array_equal(data.x, x)
    np.testing.assert_array_equal(data.y, y)


def test_public_centres_are_subtracted_as_given(tmp_path):
    x, y = _table()
    cfg = _cfg(_write(tmp_path / "d.csv", x, y), feature_centres=tuple(MEANS), target_centre=2.5)
    data = load_partitioned(cfg, np.random.default_rng(0))
    np.testing.assert_allclose(data.x, x - MEANS, rtol=0, atol=1e-12)
    np.testing.assert_allclose(data.y, y - 2.5, rtol=0, atol=1e-12)


def test_changing_one_record_changes_only_that_records_row(tmp_path):
    """Neighbouring CSVs that differ in the record holding a column's maximum: with
    public centres every other record is prepared identically (centring by the column
    means, as before, moved every row)."""
    x, y = _table()
    top = int(np.argmax(x[:, 2]))
    x2, y2 = x.copy(), y.copy()
    x2[top, 2] += 50.0
    y2[top] += 20.0
    centres: dict[str, Any] = {"feature_centres": tuple(MEANS), "target_centre": TARGET_MEAN}
    rng = np.random.default_rng(0)  # unused for a CSV: the file is the data
    one = load_partitioned(_cfg(_write(tmp_path / "1.csv", x, y), **centres), rng)
    two = load_partitioned(_cfg(_write(tmp_path / "2.csv", x2, y2), **centres), rng)
    others = np.arange(len(x)) != top
    np.testing.assert_array_equal(one.x[others], two.x[others])
    np.testing.assert_array_equal(one.y[others], two.y[others])
    assert not np.allclose((x - x.mean(0))[others], (x2 - x2.mean(0))[others])


def test_a_run_with_public_centres_fits_as_well_as_with_the_true_ones(tmp_path):
    """Plain BCD (Algorithm 1) on the CSV: with the design's public centres it explains
    the target about as well as the centralised least squares on centred data; as given,
    without an intercept, it cannot fit the offset and explains less."""
    x, y = _table()
    path = _write(tmp_path / "d.csv", x, y)
    centred = BCD.run(
        _scenario(path, method="bcd", feature_centres=list(MEANS), target_centre=TARGET_MEAN), 1
    ).to_dict()
    raw = BCD.run(_scenario(path, method="bcd"), 1).to_dict()
    assert centred["status"] == raw["status"] == "released"
    r2 = centred["accuracy"]["r2"]
    assert r2 == pytest.approx(centred["bcd"]["reference"]["r2_central"], abs=0.02)
    assert r2 > 0.7 and raw["accuracy"]["r2"] < r2


@pytest.mark.parametrize(
    ("bcd", "field", "words"),
    [
        ({"dataset": "synthetic", "target_centre": 1.0}, "bcd.target_centre", "CSV only"),
        ({"dataset": "garments", "feature_centres": [0.0]}, "bcd.feature_centres", "CSV only"),
        ({"feature_centres": [0.0, 1.0]}, "bcd.feature_centres", "2 centres for 4 features"),
        ({"target_centre": 1e300}, "bcd.target_centre", "finite and at most"),
    ],
)
def test_public_centres_are_checked_with_named_errors(tmp_path, bcd, field, words):
    csv = {"dataset": "csv", "csv_path": "x.csv", "features": list(FEATURES), "target": "y"}
    plain = {**BCD.example, "bcd": {**BCD.example["bcd"], **csv, **bcd}}
    with pytest.raises((FieldError, ScenarioError)) as info:
        Scenario.from_dict(plain)
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_a_non_finite_centre_given_in_python_is_named():
    with pytest.raises(FieldError, match=r"bcd\.feature_centres\[1\]"):
        BcdConfig(
            dataset="csv",
            csv_path="x.csv",
            features=("a", "b"),
            target="y",
            feature_centres=(0.0, float("nan")),
        )
