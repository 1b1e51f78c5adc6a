"""Reading and writing scenarios: TOML <-> dict <-> validated :class:`Scenario`.

Every field is checked for its type by :mod:`privsim.scenarios.convert`, unknown keys are
refused with the list of known ones, and errors name the dotted field path and the fix.
The protocol tables a scenario may hold are those of the registered protocols.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from privsim.inputs import (
    MAX_INPUT_BYTES,
    MAX_TOML_BYTES,
    InputFileError,
    InputMissingError,
    read_input_text,
    read_toml,
)
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import ScenarioError
from privsim.scenarios.schema import Scenario

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_TOML_BYTES",
    "InputFileError",
    "ScenarioError",
    "builtin_scenario",
    "builtin_scenario_path",
    "builtin_scenarios",
    "load_scenario",
    "read_input_text",
    "scenario_from_dict",
    "scenario_path",
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
        data = read_toml(p, "scenario file")
    except InputMissingError:
        raise ScenarioError(
            "", f"file {str(p)!r} does not exist", "give the path of a scenario .toml file"
        ) from None
    except InputFileError as exc:  # /dev/zero, a FIFO, a directory, huge, deep, not TOML
        raise ScenarioError("", exc.problem, exc.fix) from None
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
    """The file of the built-in scenario ``name``: a name of :func:`builtin_scenarios`
    only, never a path (``../studies/example`` or ``/etc/x`` is a :class:`ScenarioError`
    listing the built-ins)."""
    names = builtin_scenarios()
    if name not in names:
        text = str(name)
        shown = repr(text if len(text) <= 60 else text[:60] + "…")
        path_like = any(mark in text for mark in ("/", "\\", ".."))
        problem = f"no built-in scenario {shown}" + (
            " (a built-in is named, never given as a path)" if path_like else ""
        )
        raise ScenarioError("", problem, f"use one of {names}")
    return Path(str(resources.files("privsim.scenarios") / f"{name}.toml"))


def scenario_path(ref: str | Path, *, root: Path | None = None) -> Path:
    """The file a command's scenario argument ``ref`` names: a path that exists
    (relative to ``root`` when given) wins; otherwise a built-in scenario's name — no
    path separator, no ``.toml`` — is that built-in's file (so ``privsim run blr`` runs
    the built-in unless a file ``blr`` is in the folder). Anything else is a
    :class:`ScenarioError` listing the built-ins."""
    text = str(ref)
    candidate = Path(text) if root is None else root / text
    if _exists(candidate):
        return candidate
    names = builtin_scenarios()
    is_name = not any(mark and mark in text for mark in ("/", os.sep, os.altsep))
    if is_name and text in names:
        return builtin_scenario_path(text)
    shown = repr(text if len(text) <= 200 else text[:200] + "…")  # not a screenful
    problem = (
        f"{shown} is neither a scenario file nor a built-in scenario"
        if is_name and not text.endswith(".toml")
        else f"file {shown} does not exist"
    )
    raise ScenarioError(
        "", problem, f"give the path of a scenario .toml file, or one of the built-ins {names}"
    )


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def builtin_scenario(name: str = "quickstart") -> Scenario:
    """A scenario shipped with privsim, validated (``privsim scenario`` lists them)."""
    return load_scenario(builtin_scenario_path(name))
