"""A user's data whose statistics overflow (issue 39): features of ±1e308 or one
record at 1e200 would standardise every record by a non-finite mean or standard
deviation, and labels 0 and 1e300 would be cast to int64 with an invalid-value warning.
Each is a named error naming the field, with no numpy warning on the way."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim.data.stats import finite_mean_and_sd
from privsim.protocols.fedlearn import EXAMPLE
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError

NAMED = (FieldError, ScenarioError)


@pytest.fixture(autouse=True)
def _warnings_are_errors() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _table(path: Path, a: Any, b: Any, label: Any) -> Path:
    rows = ["a,b,label"] + [
        f"{float(x)!r},{float(y)!r},{float(z)!r}" for x, y, z in zip(a, b, label, strict=True)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def _fedlearn_csv(path: Path) -> Any:
    fields = {
        "dataset.source": "csv",
        "dataset.path": str(path),
        "dataset.features": ["a", "b"],
        "dataset.target": "label",
        "population.clients": 10,
        "training.cohort": 5,
        "training.rounds": 1,
        "training.aggregation": "trusted",
    }
    from privsim.api import run

    return run(scenario_from_dict(set_fields(EXAMPLE, fields)), seed=0)


def _data(n: int = 200) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=n), rng.normal(size=n)
    return a, b, (a + b > 0).astype(float)


@pytest.mark.parametrize("how", ["±1e308", "one record at 1e200"])
def test_a_fedlearn_csv_whose_statistics_overflow_is_refused(tmp_path: Path, how: str) -> None:
    a, b, label = _data()
    if how == "±1e308":
        a = np.where(np.arange(a.size) % 2 == 0, 1e308, -1e308) * 1.0
        a[:4] = 1e308  # the training part's sum overflows whatever the split
    else:
        a[np.arange(a.size) % 2 == 0] = 1e200  # enough that the training part holds some
    with pytest.raises(NAMED, match="cannot be standardised") as found:
        _fedlearn_csv(_table(tmp_path / "big.csv", a, b, label))
    assert found.value.field == "dataset.features"


def test_a_single_outlier_at_1e200_in_the_training_part_is_refused() -> None:
    x = np.random.default_rng(1).normal(size=(100, 3))
    x[17, 1] = 1e200
    with pytest.raises(FieldError, match=r"column 'b'.*standard deviation overflows") as found:
        finite_mean_and_sd(x, field="f", columns=("a", "b", "c"))
    assert found.value.field == "f"
    mean, sd = finite_mean_and_sd(np.delete(x, 17, axis=0), field="f")
    assert np.isfinite(mean).all() and np.isfinite(sd).all()


def test_labels_0_and_1e300_are_refused_by_name(tmp_path: Path) -> None:
    a, b, _ = _data()
    label = np.where(a > 0, 1e300, 0.0)
    with pytest.raises(NAMED, match="beyond the integers") as found:
        _fedlearn_csv(_table(tmp_path / "labels.csv", a, b, label))
    assert found.value.field == "dataset.target"


def test_a_summarization_csv_whose_seed_rows_overflow_is_refused(tmp_path: Path) -> None:
    from privsim.protocols.summarization.config import SummarizationConfig
    from privsim.protocols.summarization.data import load_user_csv

    rng = np.random.default_rng(3)
    roles = ["owner-0"] * 20 + ["owner-1"] * 20 + ["validation"] * 5 + ["test"] * 5
    roles += ["seed"] * 10
    x = rng.normal(size=(len(roles), 2))
    x[-3:, 0] = 1e200  # seed rows: the statistics standardising every record
    y = (x[:, 1] > 0).astype(int)
    lines = ["x0,x1,label,role"] + [
        f"{float(r[0])!r},{float(r[1])!r},{c},{role}"
        for r, c, role in zip(x, y, roles, strict=True)
    ]
    path = tmp_path / "setup.csv"
    path.write_text("\n".join(lines) + "\n")
    cfg = SummarizationConfig(
        dataset="csv", csv_path=str(path), features=("x0", "x1"), target="label", owners=2
    )
    with pytest.raises(FieldError, match=r"column 'x0' cannot be standardised") as found:
        load_user_csv(cfg)
    assert found.value.field == "summarization.features"
