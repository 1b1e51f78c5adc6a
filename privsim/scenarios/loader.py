"""Reading and writing scenarios: TOML <-> dict <-> validated :class:`Scenario`.

Every field is checked for its type by :mod:`privsim.scenarios.convert`, unknown keys are
refused with the list of known ones, and errors name the dotted field path and the fix.
The protocol tables a scenario may hold are those of the registered protocols.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import ScenarioError
from privsim.scenarios.schema import Scenario

__all__ = [
    "ScenarioError",
    "builtin_scenario",
    "builtin_scenario_path",
    "builtin_scenarios",
    "load_scenario",
    "scenario_from_dict",
    "scenario_to_dict",
    "scenario_to_toml",
    "set_fields",
]


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    """Validate a plain dict (as parsed from TOML) into a :class:`Scenario`."""
    return Scenario.from_dict(data)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(
            "", f"file {str(p)!r} does not exist", "give the path of a scenario .toml file"
        ) from None
    except (OSError, ValueError) as exc:  # a directory, not UTF-8, unreadable, bad name
        raise ScenarioError(
            "",
            f"{str(p)[:200]!r} is not a readable text file ({type(exc).__name__})",
            "give a scenario .toml file",
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(
            "", f"{p} is not valid TOML ({exc})", "correct the TOML syntax"
        ) from None
    except RecursionError:
        raise ScenarioError(
            "", f"{p} nests lists or tables too deeply", "give plain values, lists and tables"
        ) from None
    return scenario_from_dict(data)


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (lists, dicts, numbers, strings), TOML- and JSON-ready,
    with the common tables and the tables its protocol reads."""
    return scenario.to_dict()


def scenario_to_toml(scenario: Scenario) -> str:
    return tomli_w.dumps(scenario_to_dict(scenario))


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped with privsim."""
    return sorted(
        p.name.removesuffix(".toml")
        for p in resources.files("privsim.scenarios").iterdir()
        if p.name.endswith(".toml")
    )


def builtin_scenario_path(name: str) -> Path:
    path = resources.files("privsim.scenarios") / f"{name}.toml"
    if not path.is_file():
        raise ScenarioError(
            "", f"no built-in scenario {name!r}", f"use one of {builtin_scenarios()}"
        )
    return Path(str(path))


def builtin_scenario(name: str = "quickstart") -> Scenario:
    """A scenario shipped with privsim, validated (``privsim scenario`` lists them)."""
    return load_scenario(builtin_scenario_path(name))
