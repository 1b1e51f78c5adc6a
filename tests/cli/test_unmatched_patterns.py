"""A --rel, --abs or --ignore pattern (or a tolerances / ignore pattern of the Python API)
that matches no field of the result changes nothing; it is warned about, naming the
pattern and fields that exist, instead of being accepted silently."""

from __future__ import annotations

import warnings

import pytest

from privsim import assert_golden, check_golden
from privsim.cli import main
from privsim.golden import UnmatchedPatternWarning, field_paths
from privsim.runs import run
from tests.cli.helpers import golden_files
from tests.conftest import make_scenario


@pytest.fixture
def golden(tmp_path):
    """A small scenario and its golden file: (scenario path, golden path)."""
    return golden_files(tmp_path)


def _check(golden, *options: str) -> int:
    scenario, path = golden
    return main(["check", str(scenario), "--golden", str(path), *options])


def test_rel_that_matches_no_field_is_warned_and_the_check_still_runs(golden, capsys):
    assert _check(golden, "--rel", "[=1") == 0
    captured = capsys.readouterr()
    assert "matches golden file" in captured.out
    [line] = captured.err.splitlines()
    assert line.startswith(
        "privsim: warning: --rel '[=1': the pattern '[' matches no field of the result, so "
        "it changes nothing; the result's top-level fields are privsim_version, "
    )
    assert "privsim.golden.field_paths(result)" in line


def test_a_misspelt_field_is_warned_with_the_nearest_fields(golden, capsys):
    assert _check(golden, "--abs", "privacy.achieved_epsilom=1e-6") == 0
    err = capsys.readouterr().err
    assert "--abs 'privacy.achieved_epsilom=1e-6': the pattern 'privacy.achieved_epsilom'" in err
    assert "the nearest fields are privacy.achieved_epsilon" in err


def test_an_ignore_pattern_that_matches_nothing_is_warned(golden, capsys):
    assert _check(golden, "--ignore", "comunication.duration") == 0
    err = capsys.readouterr().err
    assert "privsim: warning: --ignore 'comunication.duration': the pattern" in err
    assert "communication.duration" in err


def test_a_tolerance_on_a_table_is_warned_with_the_patterns_that_work(golden, capsys):
    assert _check(golden, "--rel", "accuracy=0.01") == 0
    err = capsys.readouterr().err
    assert "--rel 'accuracy=0.01': the pattern 'accuracy' names a table or list" in err
    assert "write 'accuracy.*' (its values) or 'accuracy.**'" in err


def test_a_pattern_given_to_rel_and_abs_is_warned_once_naming_both(golden, capsys):
    assert _check(golden, "--rel", "nosuch=0.1", "--abs", "nosuch=1") == 0
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("privsim: warning: --rel 'nosuch=0.1' and --abs 'nosuch=1': ")


def test_patterns_that_match_are_not_warned(golden, capsys):
    options = [
        *("--rel", "accuracy.*=0.01", "--abs", "privacy.achieved_epsilon=1e-6"),
        *("--rel", "communication.roles.**=0.1", "--ignore", "communication"),
        *("--ignore", "privacy.events[0]", "--ignore", "privacy.events.*.label"),
    ]
    assert _check(golden, *options) == 0
    assert capsys.readouterr().err == ""


def test_update_warns_too_before_storing_the_pattern(golden, capsys):
    assert _check(golden, "--update", "--rel", "acuracy.rmse=0.01") == 0
    assert "the pattern 'acuracy.rmse' matches no field" in capsys.readouterr().err


def test_the_python_api_warns_at_the_callers_line(golden):
    scenario, path = golden
    with pytest.warns(UnmatchedPatternWarning) as caught:
        assert_golden(scenario, path, tolerances={"[": 1.0}, ignore=["nosuch.field"])
    assert [(w.message.kind, w.message.pattern) for w in caught] == [
        ("tolerance", "["),
        ("ignore", "nosuch.field"),
    ]
    assert str(caught[0].message).startswith("tolerance pattern '[' matches no field")
    assert {w.filename for w in caught} == {__file__}
    with pytest.warns(UnmatchedPatternWarning, match="'privacy.achieved_epsilom'") as caught:
        check_golden(scenario, path, tolerances={"privacy.achieved_epsilom": {"abs": 1e-6}})
    assert caught[0].filename == __file__


def test_the_python_api_is_quiet_for_patterns_that_match(golden):
    scenario, path = golden
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmatchedPatternWarning)
        assert assert_golden(scenario, path, tolerances={"accuracy.*": 0.01}).ok


def test_field_paths_lists_every_value_as_patterns_match_it():
    paths = field_paths(run(make_scenario(), 3).to_dict())
    assert "privacy.achieved_epsilon" in paths and "accuracy.rmse" in paths
    assert "privacy.events.0.label" in paths
    assert not any(p.startswith("timing.") for p in paths)  # timings are never compared
