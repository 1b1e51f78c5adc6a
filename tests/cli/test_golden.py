"""Golden results: field-by-field comparison, tolerances by pattern, `privsim check`,
the Python functions, and `privsim replay`'s differing fields."""

from __future__ import annotations

import json

import pytest

import privsim
from privsim.cli import EXIT_DIFFERS, main
from privsim.golden import (
    GoldenError,
    GoldenMismatch,
    Tolerance,
    check_golden,
    compare,
    read_golden,
)
from tests.cli.helpers import scenario_file, study_file

STORED = {
    "status": "released",
    "accuracy": {"rmse": 7.0, "mae": 2.0},
    "methods": {"a": {"accuracy": {"mae": 1.0}}, "b": {"accuracy": {"mae": 3.0}}},
    "events": [{"eps": 0.5}, {"eps": 0.25}],
    "timing": {"wall_seconds": 1.0},
    "key_seconds": 3.0,
}


def _now(**changes):
    now = json.loads(json.dumps(STORED))
    for path, value in changes.items():
        node = now
        *parents, leaf = path.split(".")
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[leaf] = value
    return now


def test_identical_results_match_and_timings_are_ignored():
    now = _now(**{"timing.wall_seconds": 9.0, "key_seconds": 8.0})
    assert compare(STORED, now) == ()


def test_each_differing_field_is_named_with_both_values():
    now = _now(**{"accuracy.rmse": 7.7, "status": "aborted"})
    diffs = {d.path: d for d in compare(STORED, now)}
    assert set(diffs) == {"accuracy.rmse", "status"}
    assert str(diffs["status"]) == 'status: stored "released", now "aborted"'
    text = str(diffs["accuracy.rmse"])
    assert text.startswith("accuracy.rmse: stored 7.0, now 7.7 (difference 0.7, relative 0.0909")


def test_missing_and_new_fields_and_list_lengths_are_differences():
    now = _now()
    del now["accuracy"]["mae"]
    now["accuracy"]["r2"] = 0.5
    now["events"].append({"eps": 1.0})
    paths = {d.path: str(d) for d in compare(STORED, now)}
    assert paths["accuracy.mae"] == "accuracy.mae: stored 2.0, now <absent>"
    assert paths["accuracy.r2"] == "accuracy.r2: stored <absent>, now 0.5"
    assert "events" in paths


def test_tolerances_by_pattern_with_wildcards_most_specific_first():
    now = _now(**{"methods.a.accuracy.mae": 1.05, "methods.b.accuracy.mae": 3.3})
    assert len(compare(STORED, now)) == 2  # default: float noise only (rel 1e-9)
    # 5% and 10% moves: a 6% tolerance on every method lets a through, not b
    [left] = compare(STORED, now, {"methods.*.accuracy.mae": 0.06})
    assert left.path == "methods.b.accuracy.mae"
    # the specific pattern beats the wildcard one
    assert (
        compare(STORED, now, {"methods.*.accuracy.mae": 0.06, "methods.b.accuracy.mae": 0.2}) == ()
    )
    # ** spans any number of segments; an absolute tolerance in a table
    assert compare(STORED, now, {"**.mae": {"abs": 0.31}}) == ()


def test_list_items_by_index_or_wildcard_and_ignored_fields():
    now = _now(**{"events.1.eps": 0.26})
    assert [d.path for d in compare(STORED, now)] == ["events[1].eps"]
    assert compare(STORED, now, {"events[*].eps": 0.05}) == ()
    assert compare(STORED, now, {"events.1.eps": 0.05}) == ()
    assert compare(STORED, now, ignore=["events"]) == ()


def test_numbers_inside_text_compare_with_the_tolerance():
    stored = {"event": "GaussianDpEvent(noise_multiplier=3.7306)"}
    now = {"event": "GaussianDpEvent(noise_multiplier=3.7307)"}
    assert len(compare(stored, now)) == 1
    assert compare(stored, now, {"event": 1e-4}) == ()
    assert (
        len(compare(stored, {"event": "LaplaceDpEvent(noise_multiplier=3.7306)"}, {"event": 1}))
        == 1
    )


def test_tolerance_rule():
    # |a - b| <= max(abs, rel * max(|a|, |b|))
    assert Tolerance(rel=0.1).allows(10.0, 11.0) and not Tolerance(rel=0.05).allows(10.0, 11.0)
    assert Tolerance(abs=1e-3).allows(0.0, 5e-4)
    with pytest.raises(GoldenError, match="finite number >= 0"):
        Tolerance(rel=-1.0)


def test_check_command_writes_then_matches_then_prints_each_difference(tmp_path, capsys):
    path = scenario_file(tmp_path)
    golden = tmp_path / "golden.json"
    assert main(["check", str(path), "--golden", str(golden)]) == 2  # no golden file yet
    assert "no golden file" in capsys.readouterr().err
    assert main(["check", str(path), "--golden", str(golden), "--update"]) == 0
    stored = json.loads(golden.read_text())
    assert stored["privsim_golden"] == 1 and stored["seed"] == 11
    assert "timing" not in stored["result"]
    assert main(["check", str(path), "--golden", str(golden)]) == 0
    assert "matches golden file" in capsys.readouterr().out

    edited = scenario_file(tmp_path, "edited.toml", privacy={"epsilon": 2.0, "delta": 1e-5})
    assert main(["check", str(edited), "--golden", str(golden)]) == EXIT_DIFFERS == 1
    out = capsys.readouterr().out
    assert "fields differ from golden file" in out
    assert "  privacy.target_epsilon: stored 1.0, now 2.0 (difference 1" in out
    assert "  scenario.privacy.epsilon: stored 1.0, now 2.0" in out
    assert "  accuracy.rmse: stored " in out


def test_check_tolerances_from_the_command_line_are_kept_by_update(tmp_path, capsys):
    path = scenario_file(tmp_path)
    golden = tmp_path / "g.json"
    assert (
        main(
            [
                "check",
                str(path),
                "--golden",
                str(golden),
                "--update",
                "--rel",
                "accuracy.*=0.5",
                "--ignore",
                "scenario",
            ]
        )
        == 0
    )
    data = json.loads(golden.read_text())
    assert data["tolerances"] == {"accuracy.*": {"rel": 0.5, "abs": 0.0}}
    assert data["ignore"] == ["scenario"]
    assert main(["check", str(path), "--golden", str(golden), "--update"]) == 0
    assert read_golden(golden).tolerances == {"accuracy.*": {"rel": 0.5, "abs": 0.0}}
    assert main(["check", str(path), "--golden", str(golden), "--rel", "x=-1"]) == 2
    assert "PATTERN=NUMBER" in capsys.readouterr().err


def test_a_run_result_file_is_read_as_a_golden_file(tmp_path, capsys):
    path = scenario_file(tmp_path)
    assert main(["run", str(path), "--seed", "4", "--out", str(tmp_path / "out")]) == 0
    [result] = (tmp_path / "out").glob("*.json")
    assert main(["check", str(path), "--golden", str(result)]) == 0  # its seed, 4, is used
    assert "(seed 4, timings aside)" in capsys.readouterr().out


def test_python_functions_are_exported(tmp_path):
    path = scenario_file(tmp_path)
    golden = tmp_path / "g.json"
    assert privsim.check_golden(path, golden, update=True).updated
    assert privsim.assert_golden(path, golden).ok
    edited = privsim.load_scenario(path).replace({"data.mean": 0.3})
    report = check_golden(edited, golden)
    assert not report.ok and "scenario.data.mean: stored 0.2, now 0.3" in str(report)
    with pytest.raises(GoldenMismatch, match=r"data\.mean") as info:
        privsim.assert_golden(edited, golden)
    assert isinstance(info.value, AssertionError)
    assert privsim.assert_golden(edited, golden, ignore=["scenario", "accuracy", "methods"]).ok


def test_replay_prints_the_fields_that_differ(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert main(["sweep", str(study_file(tmp_path, replications=1)), "--out", str(out)]) == 0
    from privsim.studies.store import load

    row_id = str(load(out)["row_id"].iloc[0])
    capsys.readouterr()
    assert main(["replay", row_id, "--out", str(out)]) == 0
    assert "replay matches the stored row" in capsys.readouterr().out

    import privsim.studies.worker as worker

    real = worker.run_task

    def tampered(base, task):
        row = real(base, task)
        row["accuracy"]["rmse"] += 1.0
        return row

    monkeypatch.setattr(worker, "run_task", tampered)
    assert main(["replay", row_id, "--out", str(out)]) == EXIT_DIFFERS
    text = capsys.readouterr().out
    assert "replay DIFFERS FROM the stored row (timings aside) in 1 field:" in text
    assert "  accuracy.rmse: stored " in text and "(difference 1, " in text
