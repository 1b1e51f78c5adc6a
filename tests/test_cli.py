import json

import pytest

from privsim.cli import main
from privsim.scenarios import scenario_to_toml
from tests.conftest import make_scenario


def test_run_scenario_file_writes_json_and_prints_report(tmp_path, capsys):
    path = tmp_path / "small.toml"
    path.write_text(scenario_to_toml(make_scenario(baseline=True)))
    assert main(["run", str(path), "--seed", "5", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Privacy" in out and "trusted aggregator" in out and "compute" in out
    result = json.loads(next((tmp_path / "out").glob("test-*-seed5.json")).read_text())
    assert result["seed"] == 5 and result["status"] == "released"
    assert result["communication"]["by_kind"]["Share"] == 40 * 3
    assert result["scenario"]["population"]["clients"] == 40


def test_same_seed_gives_the_same_result_file_apart_from_timings(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(scenario_to_toml(make_scenario()))
    results = []
    for out in ("a", "b"):
        assert main(["run", str(path), "--out", str(tmp_path / out)]) == 0
        data = json.loads(next((tmp_path / out).glob("test-*-seed11.json")).read_text())
        assert data.pop("timing")["wall_seconds"] > 0
        results.append(data)
    assert results[0] == results[1]


def test_bad_scenario_exits_2_with_field_named(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(scenario_to_toml(make_scenario()).replace("clients = 40", "clients = -3"))
    assert main(["run", str(path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "population.clients" in err and "Fix:" in err


def test_scenario_command_prints_the_quickstart(capsys):
    assert main(["scenario", "quickstart"]) == 0
    assert "[population]" in capsys.readouterr().out


def test_budget_refusal_is_reported(tmp_path, capsys):
    sc = make_scenario(privacy={"epsilon": 10.0, "delta": 1e-4, "calibration": "classic"})
    path = tmp_path / "classic.toml"
    path.write_text(scenario_to_toml(sc))
    assert main(["run", str(path), "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "on_overspend" in captured.err


def test_quickstart_runs_from_the_command_line(tmp_path, capsys):
    assert main(["run", "--out", str(tmp_path)]) == 0
    assert "quickstart" in capsys.readouterr().out


def test_blr_scenario_runs_from_the_command_line(tmp_path, capsys):
    import tomllib

    import tomli_w

    from privsim.scenarios import builtin_scenario_path

    data = tomllib.loads(builtin_scenario_path("blr").read_text())
    data["population"]["clients"] = 300
    data["blr"].update(synthetic_records=500, test=100, grid_points=5, grid_repeats=2)
    path = tmp_path / "blr.toml"
    path.write_text(tomli_w.dumps(data))
    assert main(["run", str(path), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for method in ("NP", "proj_NP", "TA", "proj_TA", "DDP", "proj_DDP", "input_perturbation"):
        assert any(
            line.startswith(f"{method} ") and "released" in line for line in out.splitlines()
        )
    result = json.loads(next(tmp_path.glob("blr-*-seed2017.json")).read_text())
    assert result["methods"]["proj_DDP"]["communication"]["rounds"] >= 6  # two DCA rounds
    assert result["methods"]["DDP"]["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)


def test_protocols_command_lists_every_registered_protocol(capsys):
    assert main(["protocols"]) == 0
    out = capsys.readouterr().out
    for name in ("dca", "trusted_aggregator", "blr", "bcd", "race"):
        assert any(line.startswith(name + " ") for line in out.splitlines()), name
