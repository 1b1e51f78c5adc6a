"""`--set path=value` on run, validate, sweep and check; `--replications` on sweep."""

from __future__ import annotations

import json

import pytest

from privsim.cli import main
from privsim.overrides import SetError, apply_settings, parse_settings
from privsim.studies.store import load
from tests.cli.helpers import scenario_file, study_file
from tests.conftest import make_scenario


def test_values_are_parsed_as_toml_and_bare_words_as_strings():
    settings = parse_settings(
        [
            "privacy.epsilon=2",
            "dca.tolerated = 7",
            'network.encryption="aes-gcm"',
            "privacy.neighbour=add_remove",
            "faults.crash_window=[0.0, 0.5]",
            'network.link.latency={ model = "constant", value = 0.02 }',
            "baseline=true",
        ]
    )
    assert settings == {
        "privacy.epsilon": 2,
        "dca.tolerated": 7,
        "network.encryption": "aes-gcm",
        "privacy.neighbour": "add_remove",
        "faults.crash_window": [0.0, 0.5],
        "network.link.latency": {"model": "constant", "value": 0.02},
        "baseline": True,
    }


def test_nested_paths_change_the_scenario():
    scenario = apply_settings(
        make_scenario(),
        parse_settings(["network.link.latency.value=0.05", "privacy.epsilon=2.5"]),
    )
    assert scenario.network.link.latency.value == 0.05
    assert scenario.privacy.epsilon == 2.5


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "privacy.epsilonn=1",
            "--set privacy.epsilonn=1: scenario field 'privacy.epsilonn': unknown field",
        ),
        ("nosuch.table=1", "scenario field 'nosuch': unknown field"),
        ("privacy.epsilon=abc", "scenario field 'privacy.epsilon': expected a number, got 'abc'"),
        ("privacy.epsilon=-1", "privacy.epsilon"),
        ("privacy.epsilon=[1", "'[1' is not a TOML value"),
        (
            "privacy.epsilon.x=1",
            "'privacy.epsilon' is a value, not a table, so it has no field 'x'",
        ),
        ("privacy.epsilon", "expected PATH=VALUE"),
        ("=1", "expected PATH=VALUE"),
        ("privacy..epsilon=1", "is not a dotted field path"),
        ("network.encryption=rot13", "scenario field 'network.encryption'"),
    ],
)
def test_bad_paths_and_values_are_named_errors(option, message, tmp_path, capsys):
    with pytest.raises(SetError) as info:
        apply_settings(make_scenario(), parse_settings([option]))
    assert message in str(info.value) and "Fix:" in str(info.value)
    assert main(["validate", str(scenario_file(tmp_path)), "--set", option]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privsim: error: --set") and message in err


def test_a_field_set_twice_is_refused():
    with pytest.raises(SetError, match="set twice"):
        parse_settings(["privacy.epsilon=1", "privacy.epsilon=2"])


def test_run_and_validate_apply_set(tmp_path, capsys):
    path = scenario_file(tmp_path)
    assert main(["validate", str(path), "--set", "population.clients=60"]) == 0
    assert "with 1 --set: valid scenario 'test'" in capsys.readouterr().out
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                str(path),
                "--out",
                str(out),
                "--set",
                "population.clients=60",
                "--set",
                "dca.tolerated=9",
            ]
        )
        == 0
    )
    [written] = out.glob("*.json")
    result = json.loads(written.read_text())
    assert result["scenario"]["population"]["clients"] == 60
    assert result["scenario"]["dca"]["tolerated"] == 9


def test_sweep_set_overrides_the_base_and_replications_the_count(tmp_path, capsys):
    study = study_file(tmp_path, replications=2)
    out = tmp_path / "out"
    args = ["sweep", str(study), "--out", str(out), "--set", "data.mean=0.4", "--replications", "3"]
    assert main(args) == 0
    frame = load(out)
    assert len(frame) == 2 * 3  # two ε cells, three replications
    stored = json.loads((out / "study.json").read_text())
    assert stored["base"]["data"]["mean"] == 0.4 and stored["replications"] == 3


def test_sweep_refuses_set_on_a_field_its_grid_varies(tmp_path, capsys):
    study = study_file(tmp_path)
    assert (
        main(["sweep", str(study), "--out", str(tmp_path / "o"), "--set", "privacy.epsilon=3"]) == 2
    )
    err = capsys.readouterr().err
    assert "varies 'privacy.epsilon' in its grid" in err
    assert (
        main(["sweep", str(study), "--out", str(tmp_path / "o"), "--set", "population.clientz=3"])
        == 2
    )
    assert "'population.clientz': unknown field" in capsys.readouterr().err
    assert not (tmp_path / "o" / "results.sqlite").exists()


def test_an_optional_choice_names_its_choices(tmp_path, capsys):
    """A field that is a choice or absent lists its choices, not a type's repr."""
    code = main(["validate", str(scenario_file(tmp_path)), "--set", "dca.shares=compressed"])
    err = capsys.readouterr().err
    assert code == 2
    assert "use one of ['full', 'seeded', 'shamir'] or leave the field out" in err
    assert "typing" not in err


@pytest.mark.parametrize("bad", ["two", "0"])
def test_a_bad_worker_count_is_named_before_any_run(tmp_path, capsys, monkeypatch, bad):
    monkeypatch.setenv("PRIVSIM_ROUND_PROCESSES", bad)
    code = main(["validate", str(scenario_file(tmp_path))])
    assert code == 2
    assert f"PRIVSIM_ROUND_PROCESSES='{bad}' is not a worker count" in capsys.readouterr().err
