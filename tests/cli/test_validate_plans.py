"""`privsim validate` plans the privacy budget as `run` charges it: it refuses exactly
what run refuses over budget, with run's message and exit status (2), for every
protocol that declares ``ProtocolSpec.plan``; for one that does not, it says the budget
is checked at run time instead of calling the scenario valid.

The same on every protocol's example and its ``overspend`` (under ``refuse`` and
``warn``), and the plan's ledger against the run's, are contract checks
(``privsim.testing``: ``validate_agrees_with_run``, ``the_plan_charges_what_the_run_charges``),
run on every protocol by tests/test_contract.py; here, the built-in scenarios."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from privsim import registry
from privsim.cli import EXIT_INVALID, main
from tests.cli.test_exit_codes import OVER_BUDGET, _argv

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "noisy_sum"
SPECS = registry.specs()


def _file(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "scenario.toml"
    path.write_text(tomli_w.dumps(data))
    return str(path)


def _validate(protocol: str, settings: tuple[str, ...]) -> list[str]:
    """``privsim validate`` of the small scenario ``privsim run`` gets in test_exit_codes."""
    return [a for a in _argv("validate", protocol, settings) if a != "--no-progress"]


def _error(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if "error" in line]


def test_every_built_in_protocol_but_blr_declares_a_plan():
    # BLR refuses method by method and never refuses a whole run (tests/cli/test_exit_codes)
    built_in = [s for s in SPECS.values() if s.run.__module__.startswith("privsim.protocols.")]
    assert {s.name for s in built_in if s.plan is None} == {"blr"}


@pytest.mark.parametrize("protocol", sorted(OVER_BUDGET))
def test_validate_refuses_the_small_over_budget_scenarios_with_runs_message(
    protocol, tmp_path, capsys
):
    settings = OVER_BUDGET[protocol]
    assert main(_validate(protocol, settings)) == EXIT_INVALID
    planned = _error(capsys)
    out = str(tmp_path / "out")
    assert main(_argv("run", protocol, settings, "--out", out, "--encryption", "none")) == 2
    assert planned == _error(capsys) and len(planned) == 1
    within = main(_validate(protocol, ()))
    assert within == 0 and "valid scenario" in capsys.readouterr().out


@pytest.fixture
def plugins(monkeypatch):
    """The noisy-sum plug-in (with a plan), and a copy of it without one."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    from privsim_noisy_sum import PROTOCOL

    monkeypatch.setattr(registry, "_specs", dict(registry.specs()))
    monkeypatch.setattr(registry, "_tables", registry.tables())
    if PROTOCOL.name not in registry.specs():
        registry.register(PROTOCOL)
    unplanned = dataclasses.replace(PROTOCOL, name="noisy_sum_unplanned", plan=None)
    registry.register(unplanned)
    return PROTOCOL, unplanned


def test_a_plugin_with_a_plan_is_valid_and_one_without_is_checked_at_run_time(
    plugins, tmp_path, capsys
):
    planned, unplanned = plugins
    assert main(["validate", _file(tmp_path, dict(planned.example))]) == 0
    assert "valid scenario 'noisy-sum-example' (noisy_sum)" in capsys.readouterr().out
    example = {**planned.example, "protocol": unplanned.name}
    assert main(["validate", _file(tmp_path, example)]) == 0
    out = capsys.readouterr().out
    assert "valid scenario" not in out
    assert "privacy budget, checked at run time" in out and "declares no plan" in out
