"""What validates, runs (issue 16): each item of the issue's list as a regression test.

Party ids and roles resolve before the run, data files are opened and checked by
``privsim validate``, absurd numbers are refused naming the field, sizes that cannot fit
in memory are refused before they start, and a NaN never reaches a result.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim import registry
from privsim.api import ResultError, nan_field, run, validate
from privsim.cli import main
from privsim.data.registry import DataError, UnknownDatasetError, load_csv, load_dataset
from privsim.kit.spec import Numbered
from privsim.scenarios import Scenario, ScenarioError, scenario_from_dict, scenario_to_toml
from privsim.scenarios.checks import MAX_MEMORY_ENV, parse_bytes
from privsim.scenarios.loader import builtin_scenario, load_scenario
from privsim.studies.study import MAX_TASKS_ENV, Study, StudyError, load_study, study_from_dict
from tests.conftest import BASE, make_scenario, needs_data


def _refused(field: str, **changes: Any) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        make_scenario(**changes)
    assert info.value.field == field, str(info.value)
    return info.value


def _builtin(name: str, changes: dict[str, Any]) -> Scenario:
    return builtin_scenario(name).replace(changes)


def _refused_builtin(name: str, field: str, changes: dict[str, Any]) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        _builtin(name, changes)
    assert info.value.field == field, str(info.value)
    return info.value


# ------------------------------------------------------------------ party ids and roles


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("threat.colluding_servers", {"threat": {"colluding_servers": ["compute-99"]}}),
        ("threat.colluding_servers", {"threat": {"colluding_servers": ["client-40"]}}),
        ("threat.colluding_clients", {"threat": {"colluding_clients": ["client-7", "ghost"]}}),
        (
            "network.star_center",
            {"network": {"topology": "star", "star_center": "hub", "encryption": "none"}},
        ),
        (
            "network.edges[1]",
            {
                "network": {
                    "topology": "edges",
                    "edges": [["client-0", "compute-0"], ["client-1", "compute-9"]],
                    "encryption": "none",
                }
            },
        ),
        (
            "network.overrides[0].source",
            {"network": {"overrides": [{"source": "ghost", "target": "*"}], "encryption": "none"}},
        ),
        (
            "network.overrides[0].target",
            {
                "network": {
                    "overrides": [{"source": "client", "target": "client-400"}],
                    "encryption": "none",
                }
            },
        ),
        ("faults.roles", {"faults": {"roles": ["wizard"]}}),
        ("faults.roles", {"faults": {"roles": ["client", "wizard"], "absent": 0.1}}),
        ("faults.absent_parties", {"faults": {"absent_parties": ["client-0", "nobody"]}}),
        ("faults.crashes", {"faults": {"crashes": [["compute-3", 0.1]]}}),
    ],
)
def test_a_party_id_or_role_that_does_not_exist_is_named(field, changes):
    err = _refused(field, **changes)
    assert "no party" in str(err) or "no role" in str(err)
    assert "Fix:" in str(err)
    assert "client-0 … client-39" in str(err) or "roles among" in str(err)


def test_existing_party_ids_and_roles_validate():
    make_scenario(
        threat={"colluding_clients": ["client-3", "client-39"], "colluding_servers": ["compute-2"]},
        network={
            "encryption": "none",
            "overrides": [
                {"source": "compute", "target": "*", "loss": 0.0},
                {"source": "client-5", "target": "aggregator", "loss": 0.0},
            ],
        },
        faults={"roles": ["client", "compute"], "crashes": [["client-1", 0.2]]},
    )


def test_the_trusted_aggregator_accepts_and_ignores_compute_nodes():
    sc = make_scenario(protocol="trusted_aggregator", threat={"colluding_servers": ["compute-0"]})
    assert run(sc).status == "released"
    with pytest.raises(ScenarioError, match="compute-7"):
        make_scenario(protocol="trusted_aggregator", threat={"colluding_servers": ["compute-7"]})


def test_each_protocol_declares_its_parties():
    race = _builtin("race", {})
    parties = registry.get("race").parties(race)  # type: ignore[misc]
    assert "owner-9" in parties["client"] and "owner-10" not in parties["client"]
    bcd = _builtin("bcd", {"bcd.parties": 3, "threat.colluding_servers": ["party-2"]})
    assert list(registry.get("bcd").parties(bcd)["party"]) == ["party-0", "party-1", "party-2"]  # type: ignore[misc]
    _refused_builtin("bcd", "faults.roles", {"faults.roles": ["client"], "faults.crash": 0.5})
    _refused_builtin("race", "threat.colluding_clients", {"threat.colluding_clients": ["client-1"]})
    blr = registry.get("blr").parties(_builtin("blr", {}))  # type: ignore[misc]
    assert "client-1999" in blr["client"] and "client-2000" not in blr["client"]
    for spec in registry.specs().values():
        if spec.name in ("dca", "trusted_aggregator", "blr", "bcd", "race"):
            assert spec.parties is not None and spec.footprint is not None, spec.name


def test_numbered_ids_are_checked_without_building_them():
    ids = Numbered("client", 10**12)
    assert "client-999999999999" in ids and "client-1000000000000" not in ids
    assert "client-01" not in ids and "client--1" not in ids and "client-" not in ids
    assert "client-" + "9" * 5000 not in ids  # no int() of 5000 digits
    assert len(Numbered("owner", 3)) == 3 and list(Numbered("owner", 3))[-1] == "owner-2"


# ------------------------------------------------------------------------------- data


def _blr_csv(path: Path | str, **blr: Any) -> Scenario:
    return _builtin(
        "blr",
        {
            "population.clients": 60,
            "blr.test": 20,
            "blr.dataset": "csv",
            "blr.csv_path": str(path),
            "blr.features": ["a", "b"],
            "blr.target": "y",
            "blr.grid_points": 3,
            "blr.grid_repeats": 2,
            "network.encryption": "none",
            **{f"blr.{k}": v for k, v in blr.items()},
        },
    )


SECRET = "s3cr3t-patient-name"


def _files(tmp_path: Path) -> dict[str, Path]:
    texts = {
        "non-numeric": f"a,b,y\n1,{SECRET},3\n2,x,4\n",
        "nan": "a,b,y\n1,2,3\n2,nan,4\n",
        "inf": "a,b,y\n1,2,3\n2,-inf,4\n",
        "blank": "a,b,y\n1,2,3\n2,,4\n",
        "empty": "",
        "header-only": "a,b,y\n",
        "ragged": f"a,b,y\n1,2,3\n1,2,3,4,{SECRET}\n",
        "no-column": "a,c,y\n1,2,3\n",
    }
    out = {}
    for name, text in texts.items():
        out[name] = tmp_path / f"{name}.csv"
        out[name].write_text(text, encoding="utf-8")
    out["undecodable"] = tmp_path / "undecodable.csv"
    out["undecodable"].write_bytes(b"a,b,y\n1,2,3\n\xff\xfe\x81,2,3\n")
    out["directory"] = tmp_path / "adir.csv"
    out["directory"].mkdir()
    out["missing"] = tmp_path / "missing.csv"
    return out


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("missing", "does not exist"),
        ("directory", "is a directory"),
        ("non-numeric", "not numeric"),
        ("nan", "NaN or infinite"),
        ("inf", "NaN or infinite"),
        ("blank", "missing, NaN or infinite"),
        ("empty", "empty"),
        ("header-only", "no data rows"),
        ("ragged", "not a well-formed CSV"),
        ("no-column", "no column(s) ['b']"),
        ("undecodable", "not UTF-8"),
    ],
)
def test_validate_opens_the_data_and_names_the_file_and_field(tmp_path, capsys, kind, words):
    path = _files(tmp_path)[kind]
    scenario = _blr_csv(path)  # the scenario itself is fine: the file is the problem
    with pytest.raises(ScenarioError) as info:
        validate(scenario)
    text = str(info.value)
    assert info.value.field == "blr.csv_path" and path.name in text and words in text, text
    assert SECRET not in text  # never the file's contents
    toml = tmp_path / f"{kind}.toml"
    toml.write_text(scenario_to_toml(scenario))
    assert main(["validate", str(toml)]) == 2
    err = capsys.readouterr().err
    assert "blr.csv_path" in err and path.name in err and SECRET not in err


def test_a_csv_path_too_long_for_the_file_system_is_named(tmp_path):
    with pytest.raises(ScenarioError, match=r"blr\.csv_path.*cannot be read"):
        validate(_blr_csv(tmp_path / ("x" * 5000 + ".csv")))


def test_a_good_csv_validates_and_runs(tmp_path):
    path = tmp_path / "good.csv"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = x @ [1.0, -0.5] + 0.1 * rng.normal(size=200)
    path.write_text("a,b,y\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(x, y, strict=True)))
    scenario = validate(_blr_csv(path))
    assert run(scenario).status in ("released", "aborted")


def test_unknown_data_set_names_are_named_errors_listing_the_registered_ones():
    err = _refused_builtin("blr", "blr.dataset", {"blr.dataset": "iris-unicorn"})
    assert "wine-red" in str(err) and "iris-unicorn" in str(err)
    _refused_builtin("bcd", "bcd.dataset", {"bcd.dataset": "iris-unicorn"})
    with pytest.raises(UnknownDatasetError, match="registered") as info:
        load_dataset("iris-unicorn")
    assert isinstance(info.value, KeyError) and isinstance(info.value, DataError)
    assert str(info.value).startswith("no data set 'iris-unicorn'")  # not a KeyError repr


def test_an_unknown_data_set_in_a_study_grid_fails_before_any_work():
    data = {
        "name": "unicorn",
        "base": "blr",
        "grid": {"blr.dataset": ["synthetic", "iris-unicorn"]},
    }
    with pytest.raises(StudyError, match=r"grid cell.*blr\.dataset.*no data set 'iris-unicorn'"):
        study_from_dict(data)


def test_a_study_whose_data_file_is_bad_fails_before_any_work(tmp_path):
    files = _files(tmp_path)
    data = {
        "name": "bad-files",
        "base": "blr",
        "overrides": {
            "blr.dataset": "csv",
            "blr.features": ["a", "b"],
            "blr.target": "y",
            "population.clients": 60,
            "blr.test": 20,
            "blr.csv_path": str(files["nan"]),
        },
        "grid": {"blr.csv_path": [str(files["missing"]), str(files["nan"])]},
    }
    with pytest.raises(StudyError, match=r"grid cell.*'blr\.csv_path'.*missing\.csv"):
        study_from_dict(data)


def test_a_blr_target_among_the_features_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match=r"blr\.target.*also listed"):
        _blr_csv(tmp_path / "x.csv", features=["a", "y"])
    with pytest.raises(ScenarioError, match=r"bcd\.target.*also listed"):
        _builtin(
            "bcd",
            {
                "bcd.dataset": "csv",
                "bcd.csv_path": "x.csv",
                "bcd.features": ["a", "b", "y"],
                "bcd.target": "y",
            },
        )
    (tmp_path / "x.csv").write_text("a,y\n1,2\n")
    with pytest.raises(ValueError, match="also a feature"):
        load_csv(tmp_path / "x.csv", features=["a", "y"], target="y")


@pytest.mark.parametrize(
    ("blocks", "field", "words"),
    [
        ([["x0", "x1", "x2", "x3"], ["x4", "x5", "x6", "x7", "x99"]], "bcd.blocks", "x99"),
        ([["x0", "x1", "x2", "x3", "x4"], ["x4", "x5", "x6", "x7", "x8"]], "bcd.blocks[1]", "two"),
        ([["x0", "x1", "x2", "x3"], ["x4", "x5", "x6", "x7"]], "bcd.blocks", "no party"),
        ([[], ["x0"]], "bcd.blocks[0]", "no column"),
    ],
)
def test_bcd_blocks_with_unknown_overlapping_or_missing_columns_are_refused(blocks, field, words):
    err = _refused_builtin("bcd", field, {"bcd.blocks": blocks})
    assert words in str(err)


def test_bcd_blocks_on_synthetic_data_are_honoured():
    blocks = [["x0", "x8"], ["x1", "x2", "x3", "x4", "x5", "x6", "x7"]]
    sc = _builtin("bcd", {"bcd.blocks": blocks, "bcd.records": 200, "network.encryption": "none"})
    result = run(sc).to_dict()
    assert [len(b) for b in result["bcd"]["dataset"]["blocks"]] == [2, 7]


@needs_data
def test_bcd_blocks_naming_a_real_data_sets_unknown_column_fail_validation():
    sc = _builtin(
        "bcd",
        {"bcd.dataset": "forestfires", "bcd.blocks": [["X", "Y"], ["nope"]]},
    )
    with pytest.raises(ScenarioError, match=r"bcd\.blocks.*nope"):
        validate(sc)


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("name", "field", "changes"),
    [
        ("bcd", "bcd.gamma", {"bcd.gamma": math.inf}),
        ("bcd", "bcd.gamma", {"bcd.gamma": 1e300}),
        ("bcd", "bcd.beta_mean", {"bcd.beta_mean": 1e308}),
        ("bcd", "bcd.beta_sd", {"bcd.beta_sd": -1.0}),
        ("bcd", "bcd.records", {"bcd.records": -5}),
        ("bcd", "bcd.records", {"bcd.records": 5}),  # fewer records than predictors
        ("quickstart", "data.mean", {"data.mean": 1e308}),
        ("quickstart", "data.scale", {"data.scale": -1.0}),
        ("quickstart", "faults.crash_window[1]", {"faults.crash_window": [0.0, math.inf]}),
        ("quickstart", "faults.crash_window[1]", {"faults.crash_window": [0.0, 1e300]}),
        ("quickstart", "network.link.latency.sigma", {"network.link.latency.sigma": 1e12}),
        ("quickstart", "network.link.bandwidth", {"network.link.bandwidth": 5e-324}),
        ("quickstart", "privacy.epsilon", {"privacy.epsilon": 1e308}),
        ("quickstart", "privacy.epsilon", {"privacy.epsilon": math.inf}),
        ("race", "privacy.epsilon", {"privacy.epsilon": 1e308}),
        ("race", "race.synthetic_records", {"race.synthetic_records": 1}),
        ("race", "dca.fraction_bits", {"privacy.epsilon": 1e-300}),
        ("quickstart", "dca.fraction_bits", {"dca.fraction_bits": 52}),
        ("blr", "blr.synthetic_records", {"blr.synthetic_records": -3}),
        ("blr", "blr.synthetic_records", {"blr.synthetic_records": 100}),  # < N + test
        ("blr", "blr.range_length", {"blr.range_length": 1e300}),
        # found by the hostile corpus: tiny values that overflowed or went singular
        ("blr", "blr.prior_precision", {"blr.prior_precision": 5e-324}),
        ("blr", "blr.assumed_bound", {"blr.assumed_bound": 5e-324}),
        ("race", "race.bandwidth", {"race.bandwidth": 5e-300}),
        ("bcd", "bcd.r_squared", {"bcd.r_squared": 1e-308}),
        ("quickstart", "data.clip_norm", {"data.clip_norm": 5e-324}),
        ("quickstart", "data.clip_norm", {"data.clip_norm": 1e-9}),  # below 2^-32 · 1024
    ],
)
def test_absurd_numbers_are_refused_naming_the_field(name, field, changes):
    _refused_builtin(name, field, changes)


def test_an_infinite_bandwidth_still_means_an_unlimited_link():
    sc = make_scenario(network={"encryption": "none", "link": {"bandwidth": math.inf}})
    assert sc.network.link.bandwidth == math.inf
    assert Scenario.from_dict(sc.to_dict()) == sc  # round trip through plain data


def test_a_huge_but_finite_data_mean_runs_correctly():
    """data.mean = 1e50 is clipped like any large value: a meaningful relative error."""
    sc = make_scenario(data={"dimension": 4, "mean": 1e50, "clip_norm": 1.0})
    acc = run(sc).accuracy
    assert acc is not None and 0 <= acc["relative_l2_error"] < 10


def test_a_nan_in_a_result_is_a_named_error(monkeypatch):
    """The last guard: whatever a protocol computes, a NaN is never returned as a result."""
    spec = registry.get("dca")

    def broken(scenario: Scenario, seed: int) -> Any:
        return dataclasses.replace(spec.run(scenario, seed), accuracy={"rmse": math.nan})

    monkeypatch.setattr(registry, "get", lambda name: dataclasses.replace(spec, run=broken))
    with pytest.raises(ResultError, match=r"'accuracy\.rmse'"):
        run(make_scenario())


def test_nan_field_finds_the_path_of_a_nan():
    assert nan_field({"a": [1.0, {"b": math.nan}]}) == "a[1].b"
    assert nan_field({"a": np.array([[0.0, np.nan]])}) == "a[0, 1]"
    assert nan_field({"a": [1.0, math.inf, "nan", np.float64(2.0)]}) is None


# ------------------------------------------------------------------------------ sizes


@pytest.mark.parametrize(
    ("name", "field", "changes"),
    [
        ("quickstart", "data.dimension", {"data.dimension": 10**12}),
        ("quickstart", "population.clients", {"population.clients": 10**7}),
        ("race", "race.width", {"race.width": 10**12}),
        ("blr", "blr.grid_points", {"blr.grid_points": 10**5}),
        ("bcd", "bcd.records", {"bcd.records": 10**10}),
    ],
)
def test_sizes_that_cannot_fit_in_memory_are_refused_naming_the_field(name, field, changes):
    started = time.perf_counter()
    err = _refused_builtin(name, field, changes)
    assert "memory" in str(err) and "--max-memory" in str(err)
    assert time.perf_counter() - started < 30  # refused, not attempted (generous bound)


def test_the_memory_limit_can_be_raised(monkeypatch, tmp_path, capsys):
    changes = {"population.clients": 20_000_000, "dca.tolerated": 10, "baseline": False}
    _refused_builtin("quickstart", "population.clients", changes)
    monkeypatch.setenv(MAX_MEMORY_ENV, "64GiB")
    assert _builtin("quickstart", changes).population.clients == 20_000_000
    monkeypatch.setenv(MAX_MEMORY_ENV, "1MB")
    _refused_builtin("quickstart", "population.clients", {"population.clients": 300})
    monkeypatch.delenv(MAX_MEMORY_ENV)
    path = tmp_path / "big.toml"
    path.write_text(scenario_to_toml(_builtin("quickstart", {})))
    assert main(["validate", str(path), "--max-memory", "1MB"]) == 2
    assert "population.clients" in capsys.readouterr().err
    monkeypatch.delenv(MAX_MEMORY_ENV, raising=False)
    assert main(["validate", str(path), "--max-memory", "16GiB"]) == 0
    assert main(["validate", str(path), "--max-memory", "lots"]) == 2
    assert "not a size" in capsys.readouterr().err


def test_parse_bytes():
    assert parse_bytes("8GiB") == 8 << 30 and parse_bytes("500 MB") == 500 * 10**6
    assert parse_bytes("1048576") == 1 << 20 and parse_bytes("2e9") == 2 * 10**9
    for bad in ("", "-1GB", "8 parsecs", "inf"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


def test_a_study_too_large_is_refused_before_any_cell_is_built(monkeypatch):
    built = []
    monkeypatch.setattr(Study, "iter_cells", lambda self: built.append(1) or iter(()))
    with pytest.raises(StudyError, match=r"replications = 1000000000000"):
        study_from_dict({"name": "big", "replications": 10**12})
    grid = {"privacy.epsilon": [0.5 + i for i in range(2000)], "seed": list(range(2000))}
    started = time.perf_counter()
    with pytest.raises(StudyError, match=r"grid: 2000 privacy.epsilon × 2000 seed = 4000000"):
        study_from_dict({"name": "big", "grid": grid})
    assert time.perf_counter() - started < 30 and built == []
    monkeypatch.setenv(MAX_TASKS_ENV, "10")
    with pytest.raises(StudyError, match="more than the limit of 10"):
        study_from_dict({"name": "big", "replications": 11})


def test_a_repeated_grid_value_or_case_is_refused():
    with pytest.raises(
        StudyError, match=r"grid field 'privacy\.epsilon' lists 1\.0 more than once"
    ):
        study_from_dict({"name": "twice", "grid": {"privacy.epsilon": [1.0, 2.0, 1.0]}})
    case = {"privacy.epsilon": 1.0}
    with pytest.raises(StudyError, match="cases: the case"):
        study_from_dict({"name": "twice", "cases": [case, dict(case)]})


# ---------------------------------------------------------- files and deep structures


def test_deep_nesting_and_long_strings_are_named_errors(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("name = 'x'\nseed = " + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(ScenarioError, match="too deeply"):
        load_scenario(deep)
    with pytest.raises(StudyError, match="too deeply"):
        load_study(deep)
    value: Any = 1
    for _ in range(1000):
        value = [value]
    data = copy.deepcopy(BASE)
    data["threat"] = {"colluding_servers": value}
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    assert info.value.field.startswith("threat.colluding_servers")
    with pytest.raises(StudyError, match="nested too deeply"):
        study_from_dict({"name": "deep", "overrides": {"threat.colluding_servers": value}})
    data = copy.deepcopy(BASE)
    data["data"]["distribution"] = "x" * 5000
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    assert info.value.field == "data.distribution" and len(str(info.value)) < 400


def test_a_directory_or_unreadable_file_as_scenario_or_study_is_named(tmp_path):
    with pytest.raises(ScenarioError, match="not a readable text file"):
        load_scenario(tmp_path)
    with pytest.raises(StudyError, match="not a readable text file"):
        load_study(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"name = '\xff\xfe'\n")
    with pytest.raises(ScenarioError, match="not a readable text file"):
        load_scenario(bad)
    with pytest.raises(StudyError, match="not a readable text file"):
        load_study(bad)
    with pytest.raises(StudyError, match="base scenario file"):
        study_from_dict({"name": "s", "base": "."}, tmp_path)
    with pytest.raises(StudyError, match="neither a built-in"):
        study_from_dict({"name": "s", "base": "b" * 5000}, tmp_path)


def test_a_run_estimated_beyond_the_time_limit_is_refused_naming_its_slowest_field(monkeypatch):
    from privsim.scenarios import builtin_scenario
    from privsim.scenarios.checks import MAX_TIME_ENV

    bcd = builtin_scenario("bcd")
    with pytest.raises(ScenarioError) as info:
        bcd.replace({"bcd.iterations": 10**9})
    assert info.value.field == "bcd.iterations" and "--max-time" in str(info.value)
    monkeypatch.setenv(MAX_TIME_ENV, str(10**9))  # the user raises the limit
    assert bcd.replace({"bcd.iterations": 10**9}).table("bcd", type(bcd.bcd)).iterations == 10**9


def test_validate_prints_the_estimates_and_run_honours_max_time(tmp_path, capsys, monkeypatch):
    from privsim.cli import main
    from privsim.scenarios import builtin_scenario_path
    from privsim.scenarios.checks import MAX_TIME_ENV

    # `--max-time` sets the variable for the process: monkeypatch restores it afterwards
    monkeypatch.setenv(MAX_TIME_ENV, "1d")
    path = str(builtin_scenario_path("quickstart"))
    assert main(["validate", path]) == 0
    out = capsys.readouterr().out
    assert "estimated peak memory" in out and "wall time" in out
    # the quickstart is estimated at about a second: a 10 ms limit refuses it by name
    assert main(["run", path, "--out", str(tmp_path), "--max-time", "0.01s"]) == 2
    err = capsys.readouterr().err
    assert "population.clients" in err and "--max-time" in err
    assert not list(tmp_path.iterdir())  # refused before anything ran or was written


def test_a_set_that_shrinks_a_refused_file_is_checked_after_it(tmp_path, capsys):
    """The work limits apply to the scenario as run: a file too large for them runs once
    --set makes it small, and a --set that does not is refused for the file's own field."""
    path = tmp_path / "big.toml"
    path.write_text(
        scenario_to_toml(_builtin("quickstart", {})).replace("clients = 2000", "clients = 10000000")
    )
    assert main(["validate", str(path)]) == 2
    capsys.readouterr()
    assert main(["validate", str(path), "--set", "population.clients=1000"]) == 0
    assert main(["validate", str(path), "--set", "privacy.epsilon=2"]) == 2
    err = capsys.readouterr().err
    assert "population.clients" in err and "baseline = false" in err
    assert "--set privacy.epsilon" not in err
