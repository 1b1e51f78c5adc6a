"""Nothing half-read, nothing read that is not asked for (issue 29, section 5): a
``--set`` value that holds a second assignment is refused, not cut short; a grid or
cases listing values equal as numbers (``1`` and ``1.0``) is refused, naming the field
and both values; ``privsim scenario`` prints built-ins only, never a file a path names."""

from __future__ import annotations

import pytest
import tomli_w

from privsim.cli import EXIT_INVALID, main
from privsim.overrides import SetError, parse_settings
from privsim.scenarios import ScenarioError, builtin_scenario_path, builtin_scenarios
from privsim.studies.study import StudyError, study_from_dict
from tests.cli.helpers import scenario_file, study_file

TWO_ASSIGNMENTS = [
    "privacy.epsilon=2\nprivacy.delta=0.5",
    'name="x"\nprotocol="race"',
    "privacy.epsilon=2\r\nprivacy.delta=0.5",
    "dca.tolerated=5\n[privacy]\nepsilon=9",
    'network.encryption="none"\n\n\nbaseline=false',
]


@pytest.mark.parametrize("option", TWO_ASSIGNMENTS)
def test_a_set_value_with_a_second_assignment_is_refused(option):
    with pytest.raises(SetError, match="more than one TOML assignment"):
        parse_settings([option])


@pytest.mark.parametrize("command", ["run", "validate"])
def test_the_command_refuses_it_before_any_run(tmp_path, capsys, command):
    path = scenario_file(tmp_path)
    out = ["--out", str(tmp_path / "out")] if command == "run" else []
    code = main([command, str(path), "--set", TWO_ASSIGNMENTS[0], *out])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and "privacy.epsilon" in err and "one value per --set" in err
    assert not (tmp_path / "out").exists()


def test_sweep_refuses_it_too(tmp_path, capsys):
    study = study_file(tmp_path)
    code = main(["sweep", str(study), "--out", str(tmp_path / "o"), "--set", TWO_ASSIGNMENTS[1]])
    assert code == EXIT_INVALID and "more than one TOML assignment" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value", ["2", "2 # a comment", "[1,\n 2]", '"a\\nb"', "{ model = 'constant', value = 0.1 }"]
)
def test_one_value_over_lines_or_with_a_comment_is_still_one_value(value):
    assert list(parse_settings([f"x.y={value}"])) == ["x.y"]


@pytest.mark.parametrize(
    ("values", "first", "second"),
    [
        ([1, 1.0], "1", "1.0"),
        ([0.5, 2, 2.0], "2", "2.0"),
        ([[1, 2], [1.0, 2.0]], "[1, 2]", "[1.0, 2.0]"),
    ],
)
def test_grid_values_equal_as_numbers_are_refused_naming_both(values, first, second):
    with pytest.raises(StudyError) as info:
        study_from_dict({"name": "twice", "grid": {"privacy.epsilon": values}})
    text = str(info.value)
    assert "grid field 'privacy.epsilon'" in text and "equal as numbers" in text
    assert f"lists {first} and {second}" in text


def test_a_repeated_value_written_the_same_way_is_still_named_once():
    with pytest.raises(StudyError, match=r"lists 1\.0 more than once"):
        study_from_dict({"name": "twice", "grid": {"privacy.epsilon": [1.0, 2.0, 1.0]}})


def test_booleans_are_not_numbers_and_distinct_values_pass():
    study = study_from_dict({"name": "ok", "grid": {"baseline": [True, False]}})
    assert study.n_cells == 2
    study = study_from_dict({"name": "ok", "grid": {"privacy.epsilon": [1, 1.5, 2.5]}})
    assert study.n_cells == 3


def test_cases_equal_as_numbers_are_refused():
    cases = [{"privacy.epsilon": 1}, {"privacy.epsilon": 1.0}]
    with pytest.raises(StudyError, match=r"the cases .* are equal as numbers"):
        study_from_dict({"name": "twice", "cases": cases})


def test_sweep_names_the_field_and_both_values(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text(
        tomli_w.dumps({"name": "s", "base": "quickstart", "grid": {"dca.tolerated": [10, 10.0]}})
    )
    assert main(["sweep", str(study), "--out", str(tmp_path / "o")]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "'dca.tolerated' lists 10 and 10.0 (equal as numbers)" in err


@pytest.mark.parametrize(
    "name",
    ["../studies/example", "/etc/hostname", "studies/example", "..", "quickstart.toml", "nope"],
)
def test_privsim_scenario_takes_built_in_names_only(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "example.toml").write_text('name = "secret"\n')
    assert main(["scenario", name]) == EXIT_INVALID
    captured = capsys.readouterr()
    assert captured.out == "" and "secret" not in captured.err
    assert "no built-in scenario" in captured.err
    assert all(b in captured.err for b in builtin_scenarios())


def test_a_path_is_told_it_is_not_a_name():
    with pytest.raises(ScenarioError, match="a built-in is named, never given as a path"):
        builtin_scenario_path("../scenarios/quickstart")


def test_every_built_in_still_prints(capsys):
    for name in builtin_scenarios():
        assert main(["scenario", name]) == 0
        assert capsys.readouterr().out.strip()
