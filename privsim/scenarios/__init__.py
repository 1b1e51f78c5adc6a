"""Declarative scenarios: frozen dataclasses validated on construction, read from TOML."""

from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.loader import (
    builtin_scenario,
    builtin_scenario_path,
    builtin_scenarios,
    load_scenario,
    scenario_from_dict,
    scenario_path,
    scenario_to_dict,
    scenario_to_toml,
)
from privsim.scenarios.schema import Scenario

__all__ = [
    "FieldError",
    "Scenario",
    "ScenarioError",
    "builtin_scenario",
    "builtin_scenario_path",
    "builtin_scenarios",
    "load_scenario",
    "scenario_from_dict",
    "scenario_path",
    "scenario_to_dict",
    "scenario_to_toml",
]
