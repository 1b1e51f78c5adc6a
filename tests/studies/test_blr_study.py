"""Studies of BLR runs: cases that vary fields together, per-method columns and figures."""

from __future__ import annotations

import pytest

from privsim.studies import StudyError, load
from privsim.studies.report import write_report
from privsim.studies.study import study_from_dict
from privsim.studies.sweep import sweep

BASE = {
    "name": "blr-small",
    "seed": 3,
    "protocol": "blr",
    "population": {"clients": 150, "compute_nodes": 2},
    "privacy": {"epsilon": 1.0, "delta": 1e-4},
    "network": {"encryption": "none"},
    "blr": {
        "dataset": "synthetic",
        "synthetic_dimension": 3,
        "synthetic_records": 400,
        "test": 100,
        "grid_points": 5,
        "grid_repeats": 2,
    },
}


def _study(**changes):
    data = {
        "name": "blr-cases",
        "seed": 1,
        "replications": 2,
        "base": BASE,
        "grid": {"privacy.epsilon": [1.0, 4.0]},
        "cases": [
            {"population.clients": 150, "blr.test": 100},
            {"population.clients": 250, "blr.test": 50},
        ],
    }
    data.update(changes)
    return study_from_dict(data)


def test_cases_vary_fields_together_with_every_grid_point():
    study = _study()
    cells = study.cells()
    assert len(cells) == 4
    assert {(c["population.clients"], c["blr.test"]) for c in cells} == {(150, 100), (250, 50)}
    assert {c["privacy.epsilon"] for c in cells} == {1.0, 4.0}
    seeds = [t.seed for t in study.tasks()]
    assert len(set(seeds)) == len(seeds) == 8


@pytest.mark.parametrize(
    ("cases", "words"),
    [
        ([{"population.clients": 150}, {"blr.test": 10}], "same fields"),
        ([{"privacy.epsilon": 2.0}], "both in a case and in the grid"),
        ([{"blr.nonsense": 1}], "not a scenario field"),
        ("wine", "array of tables"),
        ([{"population.clients": 10_000}], "training"),  # more records than the data set
    ],
)
def test_bad_cases_fail_before_any_work(cases, words):
    with pytest.raises(StudyError, match=words):
        _study(cases=cases)


def test_blr_sweep_stores_one_column_per_method_and_draws_method_figures(tmp_path):
    study = _study()
    summary = sweep(study, tmp_path / "out", workers=1, progress=None)
    assert summary.errors == 0
    frame = load(tmp_path / "out")
    for method in ("NP", "TA", "DDP", "proj_DDP", "input_perturbation"):
        assert frame[f"methods.{method}.accuracy.mae"].notna().all()
        assert (frame[f"methods.{method}.status"] == "released").all()
    # DDP and proj DDP ran on the bus: their messages are in the row.
    assert (
        frame["methods.proj_DDP.communication.messages"]
        > frame["methods.DDP.communication.messages"]
    ).all()
    # BLR's own columns: clients included per distributed method and round
    clients = frame["grid.population.clients"]
    assert (frame["methods.DDP.details.included"] == clients).all()
    assert (frame["methods.proj_DDP.details.included_round1"] == clients).all()
    assert frame["blr.thresholds.feature"].notna().all()
    md, figures = write_report(tmp_path / "out")
    text = md.read_text()
    assert "test MAE (proj_DDP)" in text
    assert "Distributed against trusted aggregator" in text  # the Figure 2 checks
    by_method = [
        p for p in figures if p.name.startswith("accuracy_mae_by_method_vs_privacy_epsilon")
    ]
    assert len(by_method) == 2  # one per case: MAE by method against ε
    # N varies with the data, so the communication cost is drawn too.
    assert "bytes_per_party_vs_population_clients.png" in {p.name for p in figures}
