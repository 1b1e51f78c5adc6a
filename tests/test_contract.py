"""The contract every registered protocol keeps, parametrised over the registry: a
protocol is held to it the day it is registered (built-in or plug-in).

For each protocol, on its spec's small example scenario:
- ``privsim run`` works and prints the common report; a one-cell sweep works;
- the result and the flattened study row carry the common fields;
- the same seed gives the same result (timings aside);
- with no coalition the achieved ε is within the target;
- a coalition that includes every party an event trusts makes that release ε = ∞,
  reported as not met (read from the ledger's own event records, so a new trust
  assumption is covered without editing this test);
- a bad value or an unknown key in each of the protocol's tables is a named error.

And one plug-in's accounting: a protocol whose mechanism is randomized response
(``tests/plugins/noisy_sum``, entry point ``noisy_rr``) reports, at δ > 0, at least the
ε of the worst-case ε-DP pair composed, never the smaller Laplace figure.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
import warnings
from pathlib import Path
from typing import Any

import dp_accounting
import pytest
import tomli_w
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.pld.common import DifferentialPrivacyParameters

from privsim import registry
from privsim.api import run
from privsim.cli import main
from privsim.kit.result import without_timing
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.sim.ledger import PURE_MARGIN, PrivacyLedger
from privsim.studies.store import load
from privsim.studies.study import study_from_dict
from privsim.studies.sweep import sweep

SPECS = registry.specs()
COMMON_RESULT_KEYS = {
    "privsim_version",
    "scenario_name",
    "protocol",
    "seed",
    "root_entropy",
    "status",
    "abort",
    "privacy",
    "accuracy",
    "parties",
    "communication",
    "coalition",
    "methods",
    "timing",
    "scenario",
}
COMMON_ROW_COLUMNS = (
    "protocol",
    "status",
    "privacy.target_epsilon",
    "privacy.achieved_epsilon",
    "privacy.delta",
    "privacy.guarantee_met",
    "timing.wall_seconds",
    "coalition.members",
)


def _run(data: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(data)).to_dict()


def _example(name: str, **changes: Any) -> dict[str, Any]:
    base = set_fields(SPECS[name].example, {"threat.colluding_clients": 0})
    return set_fields(base, changes)


def _guarantees(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The run's privacy section and each method's, by where they are."""
    return [("run", result["privacy"])] + [
        (f"methods.{m}", v["privacy"]) for m, v in result["methods"].items()
    ]


@pytest.fixture(params=sorted(SPECS))
def spec(request):
    return SPECS[request.param]


def test_the_example_runs_from_the_command_line(spec, tmp_path, capsys):
    path = tmp_path / "example.toml"
    path.write_text(tomli_w.dumps(_example(spec.name)))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"protocol {spec.name}" in out and "Privacy" in out
    (written,) = (tmp_path / "out").glob("*.json")
    result = json.loads(written.read_text())
    assert COMMON_RESULT_KEYS <= set(result) and spec.name in result
    assert result["status"] == "released"
    assert set(spec.exposure) <= set(result["coalition"]["exposure"])


def test_a_one_cell_sweep_flattens_the_common_fields(spec, tmp_path):
    study = study_from_dict(
        {"name": f"contract-{spec.name}", "seed": 1, "replications": 1, "base": _example(spec.name)}
    )
    summary = sweep(study, tmp_path / "out", workers=1, progress=None)
    assert (summary.total, summary.errors) == (1, 0)
    frame = load(tmp_path / "out")
    for column in COMMON_ROW_COLUMNS:
        assert column in frame, column
    assert frame["protocol"].iloc[0] == spec.name and frame["status"].iloc[0] == "released"


def test_the_same_seed_gives_the_same_result(spec):
    example = _example(spec.name)
    assert without_timing(_run(example)) == without_timing(_run(example))


def test_no_coalition_keeps_every_private_release_within_its_target(spec):
    result = _run(_example(spec.name))
    events = result["privacy"]["events"] + [
        e for m in result["methods"].values() for e in m["privacy"]["events"]
    ]
    assert events, "a protocol must charge its mechanisms to the ledger"
    for where, privacy in _guarantees(result):
        if privacy["non_private"]:
            continue
        assert privacy["guarantee_met"] is True, where
        assert privacy["achieved_epsilon"] <= privacy["target_epsilon"] * (1 + 1e-6), where


def test_a_pure_composition_reports_the_tighter_of_basic_and_pld(spec):
    # Every guarantee says how it was composed. Pure events: the basic theorem's (Σ ε, 0)
    # unless the PLD at δ is more than PURE_MARGIN below it; then the PLD, with the basic
    # figure beside it. A plan made long (its own privacy.delta > 0, the built-in delta)
    # shows the second case wherever the protocol's events are all pure.
    result = _run(_example(spec.name))
    for where, privacy in _guarantees(result):
        found = privacy["details"].get("composition")
        if privacy["non_private"] or found is None:
            continue
        if found["method"] == "pld":
            assert privacy["achieved_epsilon"] == found["pld_epsilon"], where
            assert found["pld_epsilon"] < (1 - PURE_MARGIN) * found["basic_epsilon"], where
            assert privacy["delta"] == found["pld_delta"] > 0, where
        elif found["method"] == "basic":
            assert (privacy["achieved_epsilon"], privacy["delta"]) == (
                found["basic_epsilon"],
                0.0,
            ), where
            if found.get("pld_epsilon") is not None:
                assert found["pld_epsilon"] >= (1 - PURE_MARGIN) * found["basic_epsilon"], where


def test_a_long_composition_of_laplace_events_reports_below_the_basic_sum():
    # The ledger every protocol charges: 500 Laplace releases of ε = 0.01 at any δ > 0
    # compose far below the basic theorem's 5 (the Laplace part of D_v's MWEM run in
    # the summarization example, scaled down; tests/sim/test_pure_composition.py checks
    # the figure against an independent computation).
    for delta in (1e-10, 1e-6, 1e-4, 1e-2):
        ledger = PrivacyLedger(5.0, delta)
        steps = dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(100.0), 500)
        ledger.charge("steps", steps)
        g = ledger.guarantee()
        assert g.composition.method == "pld" and g.delta == delta
        assert g.epsilon < 0.5 * 5.0 == 0.5 * g.composition.basic_epsilon


def test_a_coalition_of_every_trusted_party_leaves_no_guarantee(spec):
    honest = _run(_example(spec.name))
    trusted = sorted(
        {
            party
            for _, privacy in _guarantees(honest)
            for event in privacy["events"]
            if event["trust_kind"] != "nobody"
            for party in event["trusted_parties"]
        }
    )
    if not trusted:
        pytest.skip(f"{spec.name}: every event trusts nobody (noise added where the data is)")
    clients = [p for p in trusted if p.startswith("client-")]
    servers = [p for p in trusted if not p.startswith("client-")]
    broken = _run(
        _example(
            spec.name,
            **{"threat.colluding_servers": servers, "threat.colluding_clients": clients or 0},
        )
    )
    checked = 0
    for where, privacy in _guarantees(broken):
        if any(e["broken"] for e in privacy["events"]):
            assert privacy["achieved_epsilon"] == "inf", where
            assert privacy["guarantee_met"] is False, where
            checked += 1
    assert checked >= 1
    if any(e["broken"] for _, p in _guarantees(broken) for e in p["events"]):
        assert broken["privacy"]["guarantee_met"] is False


def _wrong_value(tp: Any) -> Any:
    """A value of the wrong type for a field of type ``tp``."""
    return {"not": "a value"} if typing.get_origin(tp) is not dict else 3


def test_bad_values_in_the_protocol_tables_are_named_errors(spec):
    for table, cls in spec.tables.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls)[:3]:
            bad = _example(spec.name, **{f"{table}.{f.name}": _wrong_value(hints[f.name])})
            with pytest.raises(ScenarioError) as info:
                scenario_from_dict(bad)
            assert info.value.field.startswith(f"{table}.{f.name}"), info.value
            assert "Fix:" in str(info.value)
        with pytest.raises(ScenarioError) as info:
            scenario_from_dict(_example(spec.name, **{f"{table}.no_such_field": 1}))
        assert info.value.field == f"{table}.no_such_field"


def test_the_default_refuses_a_planned_overspend_and_warn_reports_it(spec):
    from privsim.sim.ledger import BudgetExceededError

    if not spec.overspend:
        pytest.skip(f"{spec.name} declares no way to plan past its budget")
    over = _example(spec.name, **spec.overspend)
    scenario = scenario_from_dict(over)
    assert scenario.privacy.on_overspend == "refuse"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            refused = run(scenario).to_dict()
        except BudgetExceededError as exc:
            assert "on_overspend" in str(exc)
        else:  # methods side by side: each one that would overspend is refused alone
            private = {
                m: v for m, v in refused["methods"].items() if not v["privacy"]["non_private"]
            }
            assert private and all(v["status"] == "refused" for v in private.values())
            assert all("on_overspend" in v["abort"]["detail"] for v in private.values())
    warned = _run(set_fields(over, {"privacy.on_overspend": "warn"}))
    assert warned["privacy"]["guarantee_met"] is False
    achieved = warned["privacy"]["achieved_epsilon"]
    assert achieved == "inf" or achieved > warned["privacy"]["target_epsilon"]


def test_run_exits_nonzero_when_the_guarantee_is_not_met(spec, tmp_path, capsys):
    if not spec.overspend:
        pytest.skip(f"{spec.name} declares no way to plan past its budget")
    over = _example(spec.name, **spec.overspend, **{"privacy.on_overspend": "warn"})
    path = tmp_path / "over.toml"
    path.write_text(tomli_w.dumps(over))
    assert main(["run", str(path), "--out", str(tmp_path / "a")]) == 3
    assert "NOT met" in capsys.readouterr().err
    assert main(["run", str(path), "--out", str(tmp_path / "b"), "--allow-overspend"]) == 0
    assert list((tmp_path / "a").glob("*.json"))  # the result is written all the same


PLUGIN = Path(__file__).parent / "plugins" / "noisy_sum"


@pytest.fixture
def rr_plugin(monkeypatch):
    """The randomized-response plug-in: the installed one if the registry has it (a
    run of this file with the plug-in installed), else registered for this test only."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    from privsim_noisy_sum.rr import PROTOCOL

    if PROTOCOL.name not in registry.specs():
        monkeypatch.setattr(registry, "_specs", dict(registry.specs()))
        monkeypatch.setattr(registry, "_tables", registry.tables())
        registry.register(PROTOCOL)
    return registry.get(PROTOCOL.name)


def _composed_epsilon(parts: list[pld.PrivacyLossDistribution], delta: float) -> float:
    total = pld.identity()
    for part in parts:
        total = total.compose(part)
    return float(total.get_epsilon_for_delta(delta))


@pytest.mark.parametrize("neighbour", ["replace_one", "add_remove"])
def test_a_randomized_response_plugin_reports_at_least_the_generic_pair(rr_plugin, neighbour):
    example = set_fields(dict(rr_plugin.example), {"privacy.neighbour": neighbour})
    result = _run(example)
    privacy = result["privacy"]
    details = privacy["details"]
    (event,) = privacy["events"]
    assert "RandomizedResponseDpEvent" in event["realised"]
    assert result["status"] == "released" and privacy["delta"] == 1e-5 > 0
    # The plug-in's 8 answers at eps_q = 4/16 = 0.25 each and its Gaussian, composed
    # independently of the ledger: as the worst-case eps-DP pair, and as Laplace.
    questions, eps_q, sigma = 8, details["answer_epsilon"], details["sigma"]
    assert eps_q == pytest.approx(0.25, rel=1e-12)
    gaussian = pld.from_gaussian_mechanism(sigma)
    generic = pld.from_privacy_parameters(DifferentialPrivacyParameters(eps_q, 0.0))
    laplace = pld.from_laplace_mechanism(1.0 / eps_q)
    worst = _composed_epsilon([generic.self_compose(questions), gaussian], 1e-5)
    as_laplace = _composed_epsilon([laplace.self_compose(questions), gaussian], 1e-5)
    achieved = privacy["achieved_epsilon"]
    # Binary randomized response IS the worst-case pair: the ledger's figure is the same
    # pair discretised by dp-accounting (interval 1e-4 per pair, 9 pairs), so it agrees
    # to 1e-3; Laplace lies 0.066 below (3.3196 against 3.3860), far outside that.
    assert achieved == pytest.approx(3.3860, abs=1e-3)
    assert achieved >= worst - 1e-3 and worst == pytest.approx(3.3860, abs=1e-3)
    assert as_laplace == pytest.approx(3.3196, abs=1e-3) and achieved > as_laplace + 0.05
    assert privacy["guarantee_met"] and achieved <= privacy["target_epsilon"]
    assert not math.isnan(result["accuracy"]["rmse"])
