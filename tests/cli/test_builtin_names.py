"""`privsim run NAME`, `validate NAME`, `check NAME` and `audit NAME` take a built-in
scenario's name wherever they take a file (one resolver,
:func:`privsim.scenarios.scenario_path`, which a study's ``base`` uses too): a path that
exists wins, a name that is neither is a named error listing the built-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privsim.cli import main
from privsim.scenarios import (
    builtin_scenario_path,
    builtin_scenarios,
    scenario_path,
    scenario_to_toml,
)
from privsim.scenarios.errors import ScenarioError
from privsim.studies.study import StudyError, study_from_dict
from tests.conftest import make_scenario

#: The quickstart, small enough for a test (its 20 colluding clients within T).
SMALL = ["--set", "population.clients=100", "--set", "dca.tolerated=40"]


def _mine(path: Path) -> None:
    """A scenario file named ``mine`` (the small test scenario) at ``path``."""
    path.write_text(scenario_to_toml(make_scenario(name="mine")), encoding="utf-8")


def _argv(command: str, scenario: str, tmp_path) -> list[str]:
    """``command`` on ``scenario`` with the options each command needs."""
    return {
        "run": ["run", scenario, "--out", str(tmp_path / "out"), *SMALL],
        "validate": ["validate", scenario],
        "check": ["check", scenario, "--golden", str(tmp_path / "golden.json"), *SMALL],
        "audit": ["audit", scenario, "--trials", "8", "--out", str(tmp_path / "out")],
    }[command]


def test_run_takes_a_builtin_name(tmp_path, capsys):
    assert main(_argv("run", "quickstart", tmp_path)) == 0
    assert "scenario 'quickstart', protocol dca" in capsys.readouterr().out
    (result,) = (tmp_path / "out").glob("quickstart-*.json")
    assert json.loads(result.read_text())["status"] == "released"


def test_validate_takes_a_builtin_name(capsys):
    assert main(["validate", "quickstart"]) == 0
    assert "quickstart: valid scenario 'quickstart'" in capsys.readouterr().out


def test_check_takes_a_builtin_name(tmp_path, capsys):
    assert main([*_argv("check", "quickstart", tmp_path), "--update"]) == 0
    assert main(_argv("check", "quickstart", tmp_path)) == 0
    assert "quickstart: " in capsys.readouterr().out


def test_audit_takes_a_builtin_name(tmp_path, capsys):
    assert main(_argv("audit", "quickstart", tmp_path)) == 0
    assert "audit of quickstart (dca" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "validate", "check", "audit"])
def test_a_name_that_is_neither_a_file_nor_a_builtin_lists_the_builtins(
    command, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(_argv(command, "quickstrat", tmp_path)) == 2
    err = capsys.readouterr().err
    assert "'quickstrat' is neither a scenario file nor a built-in scenario" in err
    assert all(repr(name) in err for name in builtin_scenarios())
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_a_missing_path_is_a_missing_file_even_when_it_ends_in_a_builtins_name(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    for given in ("blr.toml", "scenarios/blr", str(tmp_path / "quickstart")):
        assert main(["validate", given]) == 2
        err = capsys.readouterr().err
        assert f"file {given!r} does not exist" in err and "'quickstart'" in err


def test_a_file_named_like_a_builtin_in_the_current_folder_wins(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _mine(tmp_path / "quickstart")
    assert scenario_path("quickstart") == Path("quickstart")
    assert main(["validate", "quickstart"]) == 0
    assert "valid scenario 'mine'" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path.parent)
    assert scenario_path("quickstart") == builtin_scenario_path("quickstart")


@pytest.mark.parametrize("command", ["run", "validate", "check", "audit"])
def test_the_help_says_a_name_is_a_builtin_and_a_file_wins(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "or the name of a built-in scenario" in text
    assert "a file of that name in the current folder wins" in text


def test_a_study_base_resolves_names_the_same_way(tmp_path):
    assert study_from_dict({"name": "s", "base": "blr"}, tmp_path).base["name"] == "blr"
    _mine(tmp_path / "blr")  # beside the study file: the file wins
    assert study_from_dict({"name": "s", "base": "blr"}, tmp_path).base["name"] == "mine"
    with pytest.raises(StudyError, match="neither a built-in scenario"):
        study_from_dict({"name": "s", "base": "blrr"}, tmp_path)


def test_the_resolver_names_a_typo_and_truncates_a_long_one():
    with pytest.raises(ScenarioError, match=r"'x{200}…' is neither"):
        scenario_path("x" * 5000)
