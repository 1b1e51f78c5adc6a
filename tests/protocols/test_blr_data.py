"""BLR data: the paper's preprocessing, a user's own CSV, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from privsim.data.registry import DataError
from privsim.protocols.blr.experiment import prepare, run_blr
from privsim.protocols.blr.regression import scale_to_bounds, scale_to_range
from privsim.protocols.blr.report import report_lines
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.errors import FieldError, ScenarioError


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


def replace_blr(scenario, **blr):
    """``scenario`` with ``blr`` fields replaced (through the plain form, as a TOML)."""
    plain = scenario.to_dict()
    plain["blr"] = {**plain["blr"], **blr}
    return scenario_from_dict(plain)


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


def _write_csv(path, x, y):
    lines = ["age,income,unused,target"] + [  # repr: the values read back exactly
        f"{a!r},{b!r},{k},{t!r}"
        for k, (a, b, t) in enumerate(
            zip(x[:, 0].tolist(), x[:, 1].tolist(), y.tolist(), strict=True)
        )
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _linear(n=200, seed=4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2))
    return x, x @ np.array([1.5, -0.5]) + 0.3 * rng.standard_normal(n)


#: Public bounds of the CSV's columns (as a user would know them: ±4 sd of the design).
BOUNDS = {"feature_bounds": [[-4.0, 4.0], [-4.0, 4.0]], "target_bounds": [-7.0, 7.0]}


def _csv_scenario(path, **blr):
    return _scenario(
        dataset="csv", csv_path=str(path), features=["age", "income"], target="target", **blr
    )


def test_a_users_csv_works_like_a_named_data_set(tmp_path):
    x, y = _linear()
    scenario = _csv_scenario(_write_csv(tmp_path / "mine.csv", x, y), **BOUNDS)
    name, data = prepare(scenario, 1)
    assert name == "mine" and data.x_train.shape == (120, 2) and data.x_test.shape == (60, 2)
    result = run_blr(scenario, 1).to_dict()
    assert result["blr"]["dataset"]["dimension"] == 2
    assert result["blr"]["dataset"]["scaling"] == {"features": "bounds", "target": "bounds"}
    assert all(m["status"] == "released" for m in result["methods"].values())
    # NP on this nearly linear data predicts far better than predicting 0 (the target's
    # sd is ~1.6, 10/14 of it once mapped from [−7, 7] onto range 10, so predicting 0
    # would give an MAE near 0.9).
    assert result["methods"]["NP"]["accuracy"]["mae"] < 0.3


def test_a_csv_with_public_bounds_is_mapped_onto_the_range_box_and_clipped(tmp_path):
    x, y = _linear()
    x[0, 0], y[1] = 100.0, -50.0  # outside the bounds: clipped to them
    scenario = _csv_scenario(_write_csv(tmp_path / "mine.csv", x, y), **BOUNDS)
    _, data = prepare(replace_blr(scenario, test=80), 1)
    table = np.vstack(
        [
            np.column_stack([data.x_train, data.y_train]),
            np.column_stack([data.x_test, data.y_test]),
        ]
    )
    assert np.all(np.abs(table) <= 5.0 + 1e-12)
    xs, ys = scale_to_bounds(x, y, [(-4.0, 4.0), (-4.0, 4.0)], (-7.0, 7.0), 10.0)
    np.testing.assert_allclose(xs[:, 1], x[:, 1] * 10.0 / 8.0)  # affine, by the bounds only
    assert xs[0, 0] == 5.0 and ys[1] == -5.0
    np.testing.assert_allclose(ys[2:], y[2:] * 10.0 / 14.0)


def test_a_csv_without_bounds_is_used_as_given(tmp_path):
    x, y = _linear()
    scenario = _csv_scenario(_write_csv(tmp_path / "mine.csv", x, y))
    _, data = prepare(replace_blr(scenario, test=80), 1)
    rows = {tuple(r) for r in np.column_stack([x, y]).tolist()}
    assert all(tuple(r) in rows for r in np.column_stack([data.x_train, data.y_train]).tolist())
    result = run_blr(scenario, 1).to_dict()
    assert result["blr"]["dataset"]["scaling"] == {"features": "none", "target": "none"}
    lines = "\n".join(report_lines(result))
    assert "MAE in the target's own units" in lines


def test_a_csv_record_holding_a_maximum_moves_only_its_own_scaled_row(tmp_path):
    """No data-dependent scaling (issue 23): two neighbouring CSVs that differ only in the
    record holding a column's maximum give every other record the same scaled values
    under public bounds; the §4 whole-data scaling would move them all."""
    x, y = _linear()
    top = int(np.argmax(x[:, 0]))
    x2 = x.copy()
    x2[top, 0] = x[top, 0] + 2.5  # the neighbour: a larger maximum
    bounds = ([(-4.0, 4.0), (-4.0, 4.0)], (-7.0, 7.0))
    a, b = scale_to_bounds(x, y, *bounds)[0], scale_to_bounds(x2, y, *bounds)[0]
    others = np.arange(len(x)) != top
    np.testing.assert_array_equal(a[others], b[others])
    before, after = scale_to_range(x, y)[0], scale_to_range(x2, y)[0]
    assert not np.allclose(before[others, 0], after[others, 0])
    # The same through the data path: each neighbour's table as the run scales it.
    for label, xs in (("one", x), ("two", x2)):
        _write_csv(tmp_path / f"{label}.csv", xs, y)
    one = prepare(replace_blr(_csv_scenario(tmp_path / "one.csv", **BOUNDS), test=80), 3)[1]
    two = prepare(replace_blr(_csv_scenario(tmp_path / "two.csv", **BOUNDS), test=80), 3)[1]
    # All 200 records are used (120 + 80) in the same order (the split depends on the
    # seed and the count only): exactly one scaled row differs, the changed record's.
    stacked = [np.vstack([d.x_train, d.x_test]) for d in (one, two)]
    changed = np.flatnonzero(np.any(stacked[0] != stacked[1], axis=1))
    assert changed.size == 1
    np.testing.assert_array_equal(stacked[0][changed[0]], a[top])
    np.testing.assert_array_equal(stacked[1][changed[0]], b[top])


@pytest.mark.parametrize(
    ("blr", "field", "words"),
    [
        ({"dataset": "synthetic", "target_bounds": [0.0, 1.0]}, "blr.target_bounds", "CSV only"),
        (
            {"dataset": "wine-red", "feature_bounds": [[0.0, 1.0]]},
            "blr.feature_bounds",
            "CSV only",
        ),
        ({"feature_bounds": [[0.0, 1.0]]}, "blr.feature_bounds", "1 bounds for 2 features"),
        (
            {"feature_bounds": [[0.0, 1.0], [3.0, 3.0]]},
            "blr.feature_bounds[1]",
            "not an interval",
        ),
        ({"target_bounds": [2.0, -2.0]}, "blr.target_bounds", "not an interval"),
    ],
)
def test_public_bounds_are_checked_with_named_errors(blr, field, words):
    csv = {"dataset": "csv", "csv_path": "x.csv", "features": ["a", "b"], "target": "y"}
    with pytest.raises((FieldError, ScenarioError)) as info:
        _scenario(**{**csv, **blr})
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_a_missing_data_directory_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVSIM_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"winequality-red\.csv.*PRIVSIM_DATA_DIR"):
        prepare(_scenario(dataset="wine-red"), 0)


def test_more_records_than_the_data_set_has_is_an_error_naming_the_fields():
    with pytest.raises(ValueError, match=r"population\.clients or blr\.test"):
        prepare(_scenario(dataset="synthetic", synthetic_records=100), 0)
