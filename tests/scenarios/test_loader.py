"""Scenario validation: every bad input names the field and the fix."""

import dataclasses

import pytest

from privsim.scenarios import (
    ScenarioError,
    builtin_scenario_path,
    builtin_scenarios,
    load_scenario,
    scenario_from_dict,
    scenario_to_dict,
    scenario_to_toml,
)
from privsim.sim.latency import LogNormalLatency
from tests.conftest import BASE, _merge, make_scenario


def _error(changes=None, remove=None) -> ScenarioError:
    data = _merge(BASE, changes or {})
    for path in remove or []:
        *parents, leaf = path.split(".")
        node = data
        for p in parents:
            node = node[p]
        del node[leaf]
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    return info.value


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"population": {"clients": "many"}}, "population.clients", "expected an integer"),
        ({"population": {"clients": 2.5}}, "population.clients", "expected an integer"),
        ({"privacy": {"epsilon": "1"}}, "privacy.epsilon", "expected a number"),
        ({"baseline": "yes"}, "baseline", "true or false"),
        ({"dca": {"tolerated": 39}}, "dca.tolerated", "N > T + 1"),
        (
            {"population": {"clients": 6}, "dca": {"tolerated": 5}},
            "dca.tolerated",
            "lower dca.tolerated",
        ),
        (
            {"network": {"link": {"latency": {"model": "constant", "value": -0.1}}}},
            "network.link.latency.value",
            "negative",
        ),
        (
            {"network": {"link": {"latency": {"model": "warp"}}}},
            "network.link.latency.model",
            "lognormal",
        ),
        ({"network": {"link": {"loss": 1.5}}}, "network.link.loss", "[0, 1]"),
        ({"faults": {"absent": -0.2}}, "faults.absent", "[0, 1]"),
        ({"faults": {"crash": 2}}, "faults.crash", "[0, 1]"),
        ({"privacy": {"delta": 1.0}}, "privacy.delta", "(0, 1)"),
        ({"privacy": {"calibration": "fast"}}, "privacy.calibration", "exact"),
        ({"population": {"compute_nodes": 1}}, "population.compute_nodes", "at least 2"),
        ({"threat": {"colluding_clients": 99}}, "threat.colluding_clients", "at most 40"),
        ({"population": {"colour": "red"}}, "population.colour", "unknown field"),
        ({"network": {"topology": "star"}}, "network.star_center", "center"),
    ],
)
def test_invalid_fields_are_named_with_a_fix(changes, field, words):
    err = _error(changes)
    assert err.field == field
    assert words in str(err) and "Fix:" in str(err)


def test_missing_required_field_is_named():
    err = _error(remove=["privacy.epsilon"])
    assert err.field == "privacy.epsilon" and "missing" in str(err)
    err = _error(remove=["population"])
    assert err.field == "population"


def test_round_trip_through_toml(tmp_path):
    sc = make_scenario(
        threat={"colluding_clients": ["client-1", "client-2"]},
        network={"link": {"latency": {"model": "lognormal", "median": 0.1, "sigma": 0.4}}},
    )
    path = tmp_path / "s.toml"
    path.write_text(scenario_to_toml(sc))
    back = load_scenario(path)
    assert back == sc
    assert isinstance(back.network.link.latency, LogNormalLatency)
    assert scenario_to_dict(back) == scenario_to_dict(sc)


def test_builtin_quickstart_loads_and_bad_files_are_explained(tmp_path):
    assert "quickstart" in builtin_scenarios()
    sc = load_scenario(builtin_scenario_path("quickstart"))
    assert sc.population.clients >= 1000 and sc.protocol == "dca"
    assert dataclasses.replace(sc, seed=3).seed == 3
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario(tmp_path / "missing.toml")
