"""Declarative scenarios: frozen dataclasses validated on construction, read from TOML."""

from privsim.scenarios.loader import (
    ScenarioError,
    builtin_scenario_path,
    builtin_scenarios,
    load_scenario,
    scenario_from_dict,
    scenario_to_dict,
    scenario_to_toml,
)
from privsim.scenarios.schema import Scenario

__all__ = [
    "Scenario",
    "ScenarioError",
    "builtin_scenario_path",
    "builtin_scenarios",
    "load_scenario",
    "scenario_from_dict",
    "scenario_to_dict",
    "scenario_to_toml",
]
