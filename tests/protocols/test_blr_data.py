"""BLR data: the paper's preprocessing, a user's own CSV, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from privsim.data.registry import DataError
from privsim.protocols.blr.experiment import prepare, run_blr
from privsim.protocols.blr.regression import scale_to_range
from privsim.scenarios import scenario_from_dict


def _scenario(**blr):
    return scenario_from_dict(
        {
            "name": "csv",
            "protocol": "blr",
            "population": {"clients": 120, "compute_nodes": 2},
            "privacy": {"epsilon": 2.0, "delta": 1e-4},
            "network": {"encryption": "none"},
            "blr": {"test": 60, "grid_points": 4, "grid_repeats": 2, **blr},
        }
    )


def test_every_column_is_centred_and_scaled_to_the_range():
    rng = np.random.default_rng(0)
    x = rng.gamma(2.0, 3.0, size=(500, 3)) + 100.0
    y = rng.standard_normal(500) * 40.0
    xs, ys = scale_to_range(x, y, 10.0)
    table = np.column_stack([xs, ys])
    np.testing.assert_allclose(table.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(table.max(axis=0) - table.min(axis=0), 10.0, rtol=1e-12)


def test_a_constant_column_is_an_error_that_says_what_to_do():
    with pytest.raises(ValueError, match=r"column\(s\) \[1\] are constant.*drop"):
        scale_to_range(np.column_stack([np.arange(5.0), np.ones(5)]), np.arange(5.0))


def test_a_users_csv_works_like_a_named_data_set(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((200, 2))
    y = x @ np.array([1.5, -0.5]) + 0.3 * rng.standard_normal(200)
    path = tmp_path / "mine.csv"
    lines = ["age,income,unused,target"] + [
        f"{a},{b},{k},{t}" for k, (a, b, t) in enumerate(zip(x[:, 0], x[:, 1], y, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    scenario = _scenario(
        dataset="csv", csv_path=str(path), features=["age", "income"], target="target"
    )
    name, data = prepare(scenario, 1)
    assert name == "mine" and data.x_train.shape == (120, 2) and data.x_test.shape == (60, 2)
    result = run_blr(scenario, 1).to_dict()
    assert result["blr"]["dataset"]["dimension"] == 2
    assert all(m["status"] == "released" for m in result["methods"].values())
    # NP on this nearly linear data predicts far better than predicting 0 (the target's
    # scaled spread is ~10/6 per unit sd, so predicting 0 would give an MAE near 1.3).
    assert result["methods"]["NP"]["accuracy"]["mae"] < 0.5


def test_a_missing_data_directory_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVSIM_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"winequality-red\.csv.*PRIVSIM_DATA_DIR"):
        prepare(_scenario(dataset="wine-red"), 0)


def test_more_records_than_the_data_set_has_is_an_error_naming_the_fields():
    with pytest.raises(ValueError, match=r"population\.clients or blr\.test"):
        prepare(_scenario(dataset="synthetic", synthetic_records=100), 0)
