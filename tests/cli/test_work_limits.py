"""Bounded work, refused before it starts (issue 29, section 3): every command estimates
its work and refuses what is past a documented limit with a named error, in seconds;
``--allow-large`` (``allowing_large()`` / ``allow_large=True`` in Python) goes ahead; a
worker count is capped at what the machine or the cluster has; every numeric
environment variable is read by one parser, and a value that is not finite, not whole or
negative is named, never a traceback."""

from __future__ import annotations

import time
from typing import Any

import pytest
import tomli_w

from privsim import registry
from privsim.api import WorkLimitError, allowing_large
from privsim.audit.harness import audit, audit_plan, check_audit_work
from privsim.audit.reference import gaussian_plan
from privsim.cli import EXIT_INVALID, build_parser, main
from privsim.limits import (
    ALLOW_LARGE_ENV,
    MAX_CELLS,
    MAX_LIST_ITEMS,
    EnvError,
    allow_large,
    parse_count,
)
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.checks import MAX_MEMORY_ENV, MAX_TIME_ENV, memory_limit, time_limit
from privsim.scenarios.convert import set_fields
from privsim.sim import workers as round_workers
from privsim.studies import executors
from privsim.studies.executors import DaskExecutor, WorkerCountError
from privsim.studies.study import MAX_TASKS_ENV, Study, StudyError, max_tasks, study_from_dict
from tests.cli.helpers import scenario_file
from tests.conftest import BASE, make_scenario

#: A refusal answers in seconds (generous for a loaded CI machine).
QUICK = 20.0


@pytest.fixture(autouse=True)
def _restored_environment(monkeypatch):
    """``main`` sets $PRIVSIM_ALLOW_LARGE, $PRIVSIM_ROUND_PROCESSES and the limits for the
    command's processes; recorded here first, so that monkeypatch restores them."""
    for name in (ALLOW_LARGE_ENV, MAX_TIME_ENV, MAX_MEMORY_ENV, MAX_TASKS_ENV):
        monkeypatch.setenv(name, "")  # recorded (so restored, even if main sets it) ...
        monkeypatch.delenv(name)  # ... then unset for the test
    monkeypatch.setenv(round_workers.ENV, "1")


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - started


# ------------------------------------------------------------------ the override flag


@pytest.mark.parametrize("command", ["run", "sweep", "audit", "validate", "check", "replay"])
def test_every_command_that_works_takes_allow_large(command):
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    options = {o for a in sub.choices[command]._actions for o in a.option_strings}  # type: ignore[union-attr]
    assert "--allow-large" in options


def test_allowing_large_lifts_the_limits_within_its_block_only():
    assert not allow_large()
    with allowing_large():
        assert allow_large() and max_tasks() > 10**12
    assert not allow_large() and max_tasks() == 10**6
    with allowing_large(False):
        assert not allow_large()


# ------------------------------------------------------------------------------ audit


@pytest.mark.parametrize("trials", [10**9, 10**12])
def test_an_audit_of_too_many_trials_is_refused_at_once(tmp_path, capsys, trials):
    path = scenario_file(tmp_path)
    code, seconds = _timed(
        main, ["audit", str(path), "--trials", str(trials), "--out", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and seconds < QUICK
    assert f"--trials {trials}" in err and "memory" in err and "--max-memory" in err
    assert "Traceback" not in err and not list(tmp_path.glob("audit-*.json"))


def test_an_audit_longer_than_the_time_limit_is_refused_unless_allowed(tmp_path, capsys):
    path = scenario_file(tmp_path)
    args = ["audit", str(path), "--trials", "200000", "--out", str(tmp_path / "out")]
    code, seconds = _timed(main, [*args, "--max-time", "0.05"])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and seconds < QUICK
    assert "--trials 200000: the audit would take about" in err and "--allow-large" in err
    assert main([*args, "--max-time", "0.05", "--allow-large"]) in (0, 3)
    assert list((tmp_path / "out").glob("audit-*.json"))


def test_the_api_audit_takes_allow_large(monkeypatch):
    plan = gaussian_plan(1.0, 1e-5)
    scenario = make_scenario()
    monkeypatch.setenv(MAX_TIME_ENV, "0.0001")
    with pytest.raises(WorkLimitError, match="--trials 100000"):
        audit_plan(plan, None, 100_000)
    assert audit_plan(plan, None, 100_000, allow_large=True).trials == 100_000
    with pytest.raises(WorkLimitError, match="memory"):  # memory is never lifted
        audit_plan(plan, None, 10**12, allow_large=True)
    monkeypatch.setenv(MAX_TIME_ENV, "0.05")  # the scenario's run fits, its audit not
    with pytest.raises(WorkLimitError):
        audit(scenario, 300_000)
    assert audit(scenario, 2_000, allow_large=True).trials == 2_000


def test_the_audit_estimate_is_of_the_right_order():
    plan = gaussian_plan(1.0, 1e-5)
    check_audit_work(plan, None, 1_000_000)  # about a second: far within a day
    limit = memory_limit() // 48
    with pytest.raises(WorkLimitError, match=f"give --trials {limit} or fewer"):
        check_audit_work(plan, None, limit + 1)
    assert time_limit() == 24 * 3600.0


# ------------------------------------------------------------------------ worker counts


def test_run_takes_workers_capped_at_the_machine(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    path = scenario_file(tmp_path)
    code, seconds = _timed(main, ["run", str(path), "--workers", "1000000", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and seconds < QUICK
    assert "--workers 1000000: this machine has 2 cores" in err
    assert not list(tmp_path.glob("*.json"))
    assert main(["run", str(path), "--workers", "2", "--out", str(tmp_path)]) == 0
    assert round_workers.workers() == 2


@pytest.mark.parametrize("value", ["1000000", "1e400", "inf", "-inf", "nan", "2.5", "0", "-3"])
def test_a_round_process_count_the_machine_cannot_use_is_named(monkeypatch, value):
    monkeypatch.setenv(round_workers.ENV, value)
    with pytest.raises(EnvError, match=f"PRIVSIM_ROUND_PROCESSES='{value}' is not a worker count"):
        round_workers.workers()


class _Cluster:
    """A Dask client of a remote cluster of two workers (no network)."""

    closed = False

    def __init__(self, address: str, **_: Any) -> None:
        self.address = address

    def scheduler_info(self) -> dict[str, Any]:
        return {"workers": {"tcp://a:1": {}, "tcp://b:1": {}}}

    def close(self) -> None:
        _Cluster.closed = True


def test_workers_on_a_remote_cluster_are_capped_at_its_workers(monkeypatch):
    import distributed

    monkeypatch.setattr(distributed, "Client", _Cluster)
    with pytest.raises(WorkerCountError, match="has 2 workers; give --workers 2 or fewer"):
        DaskExecutor("tcp://cluster:8786", workers=1_000_000)
    assert _Cluster.closed
    assert DaskExecutor("tcp://cluster:8786", workers=2).workers == 2
    assert DaskExecutor("tcp://cluster:8786").workers == 2


# ----------------------------------------------------------------------------- studies


def test_a_grid_past_the_cell_limit_is_refused_before_any_cell_is_built(monkeypatch):
    built: list[int] = []
    monkeypatch.setattr(Study, "iter_cells", lambda self: built.append(1) or iter(()))
    grid = {"privacy.epsilon": [0.5 + i for i in range(1000)], "seed": list(range(1000))}
    _, seconds = _timed(pytest.raises, StudyError, study_from_dict, {"name": "big", "grid": grid})
    with pytest.raises(StudyError, match=r"grid: 1000000 cells, more than the limit of 10000"):
        study_from_dict({"name": "big", "grid": grid})
    assert seconds < QUICK and built == []
    wide = {"privacy.epsilon": [0.5 + i for i in range(MAX_CELLS + 1)]}
    with pytest.raises(StudyError, match="--allow-large"):
        study_from_dict({"name": "big", "grid": wide})
    with allowing_large():
        study = study_from_dict({"name": "big", "grid": wide})
    assert study.n_cells == MAX_CELLS + 1


def test_sweep_refuses_a_large_grid_naming_the_override(tmp_path, capsys):
    grid = {"privacy.epsilon": [0.5 + i for i in range(200)], "seed": list(range(100))}
    study = tmp_path / "big.toml"
    study.write_text(tomli_w.dumps({"name": "big", "base": "quickstart", "grid": grid}))
    code, seconds = _timed(main, ["sweep", str(study), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and seconds < QUICK
    assert "20000 cells" in err and "--allow-large" in err


# --------------------------------------------------------------------- scenario lists


def _colluders(count: int, clients: int) -> dict[str, Any]:
    data = set_fields(BASE, {"population.clients": clients, "dca.tolerated": count + 5})
    return set_fields(data, {"threat.colluding_clients": [f"client-{i}" for i in range(count)]})


def test_a_list_longer_than_the_limit_is_refused_naming_the_field():
    data = _colluders(MAX_LIST_ITEMS + 1, MAX_LIST_ITEMS + 100)
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    assert info.value.field == "threat.colluding_clients"
    assert f"{MAX_LIST_ITEMS + 1} entries" in str(info.value) and "--allow-large" in str(info.value)
    with allowing_large():
        assert len(scenario_from_dict(data).threat.colluding_clients) == MAX_LIST_ITEMS + 1


def test_a_list_at_the_limit_validates_in_seconds():
    scenario, seconds = _timed(scenario_from_dict, _colluders(MAX_LIST_ITEMS, MAX_LIST_ITEMS + 100))
    assert len(scenario.threat.colluding_clients) == MAX_LIST_ITEMS and seconds < QUICK


def test_a_huge_colluder_list_is_refused_in_seconds(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PRIVSIM_MAX_INPUT_BYTES", str(64 << 20))  # past the file cap
    path = tmp_path / "coalition.toml"
    data = set_fields(BASE, {"threat.colluding_clients": [f"c-{i}" for i in range(400_000)]})
    path.write_text(tomli_w.dumps(data))
    code, seconds = _timed(main, ["validate", str(path)])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and seconds < QUICK
    assert "threat.colluding_clients" in err and "400000 entries" in err


# ------------------------------------------------------------------------------- data


def _blr_csv(path: Any, features: list[str]) -> dict[str, Any]:
    example = dict(registry.get("blr").example)
    return set_fields(
        example,
        {
            "blr.dataset": "csv",
            "blr.csv_path": str(path),
            "blr.features": features,
            "blr.target": "y",
            "population.clients": 60,
            "blr.test": 20,
        },
    )


def _wide_csv(path: Any, columns: int, rows: int = 90) -> None:
    header = ",".join([f"f{j}" for j in range(columns)] + ["y"])
    row = ",".join(str(j % 7) for j in range(columns))
    path.write_text(
        header + "\n" + "\n".join(f"{row},{i % 5}" for i in range(rows)) + "\n", encoding="utf-8"
    )


def test_a_wide_csv_reads_only_its_named_columns(tmp_path):
    from privsim.api import validate

    path = tmp_path / "wide.csv"
    _wide_csv(path, 20_000)
    scenario = scenario_from_dict(_blr_csv(path, ["f0", "f1", "f2"]))
    _, seconds = _timed(validate, scenario)
    assert seconds < QUICK


def test_a_csv_row_longer_than_its_header_is_still_named(tmp_path):
    from privsim.api import validate

    path = tmp_path / "ragged.csv"
    _wide_csv(path, 10)
    path.write_text(path.read_text() + "1,2,3,4,5,6,7,8,9,10,11,12\n")
    with pytest.raises(ScenarioError, match="not a well-formed CSV at line 92"):
        validate(scenario_from_dict(_blr_csv(path, ["f0", "f1"])))


def test_a_feature_list_past_the_limit_is_refused(tmp_path):
    features = [f"f{j}" for j in range(MAX_LIST_ITEMS + 1)]
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_blr_csv(tmp_path / "x.csv", features))
    assert info.value.field == "blr.features"


def test_blr_features_at_the_limit_are_refused_by_the_footprint_in_seconds(tmp_path):
    features = [f"f{j}" for j in range(MAX_LIST_ITEMS)]
    with pytest.raises(ScenarioError, match="memory") as info:
        _timed(scenario_from_dict, _blr_csv(tmp_path / "x.csv", features))
    assert "--max-memory" in str(info.value)


# ------------------------------------------------------------------ environment values


BAD_NUMBERS = ["inf", "-inf", "1e400", "nan", "2.5", "-3", "0x10", "lots", "1e19"]


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_a_bad_task_limit_is_named(tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv(MAX_TASKS_ENV, value)
    with pytest.raises(EnvError, match=f"{MAX_TASKS_ENV}='{value}' is not a number of tasks"):
        max_tasks()
    study = tmp_path / "s.toml"
    study.write_text(tomli_w.dumps({"name": "s", "base": "quickstart"}))
    assert main(["sweep", str(study), "--out", str(tmp_path / "out")]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert MAX_TASKS_ENV in err and "Traceback" not in err


@pytest.mark.parametrize("env", [MAX_MEMORY_ENV, MAX_TIME_ENV])
@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "nan", "-3", "lots"])
def test_a_bad_memory_or_time_limit_is_named(monkeypatch, env, value):
    monkeypatch.setenv(env, value)
    with pytest.raises(EnvError, match=f"{env}="):
        scenario_from_dict(BASE)


def test_a_bad_allow_large_switch_is_named(monkeypatch):
    monkeypatch.setenv(ALLOW_LARGE_ENV, "maybe")
    with pytest.raises(EnvError, match="PRIVSIM_ALLOW_LARGE='maybe' is not a switch"):
        allow_large()


def test_parse_count():
    assert parse_count("12") == 12 and parse_count("1e6") == 10**6
    assert parse_count(" 1_000 ") == 1000 and parse_count("2.0") == 2
    for bad in [*BAD_NUMBERS, "", " ", "1e-3"]:
        with pytest.raises(ValueError):
            parse_count(bad)
    with pytest.raises(ValueError, match="less than 1"):
        parse_count("0", minimum=1)
