"""Reading and writing scenarios: TOML <-> dict <-> validated :class:`Scenario`.

Conversion is driven by the dataclasses' type hints, so every field is checked
for its type, unknown keys are refused with the list of known ones, and errors name
the dotted field path and how to fix it.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import tomli_w

from privsim.scenarios.schema import FieldError, Scenario
from privsim.sim.latency import (
    ConstantLatency,
    EmpiricalLatency,
    LatencyModel,
    LogNormalLatency,
    UniformLatency,
)

__all__ = [
    "ScenarioError",
    "builtin_scenario_path",
    "builtin_scenarios",
    "load_scenario",
    "scenario_from_dict",
    "scenario_to_dict",
    "scenario_to_toml",
]

LATENCY_MODELS: dict[str, type] = {
    "constant": ConstantLatency,
    "uniform": UniformLatency,
    "lognormal": LogNormalLatency,
    "empirical": EmpiricalLatency,
}
_MODEL_NAMES = {cls: name for name, cls in LATENCY_MODELS.items()}


class ScenarioError(ValueError):
    """A scenario is invalid: ``field`` is the dotted path, the message says the fix."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        where = field or "scenario"
        super().__init__(f"scenario field '{where}': {problem}. Fix: {fix}")
        self.field = field


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _describe(value: Any) -> str:
    names = {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "a table",
    }
    return f"{value!r} ({names.get(type(value), type(value).__name__)})"


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if tp is LatencyModel:
        return _latency(value, path)
    if origin is Literal:
        options = typing.get_args(tp)
        if value not in options:
            raise ScenarioError(path, f"got {_describe(value)}", f"use one of {list(options)}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(tp)):
            return None
        for arg in args:
            try:
                return _convert(value, arg, path)
            except ScenarioError:
                continue
        expected = " or ".join(_type_name(a) for a in args)
        raise ScenarioError(
            path, f"expected {expected}, got {_describe(value)}", f"write {expected}"
        )
    if origin is tuple:
        items = typing.get_args(tp)
        if not isinstance(value, list | tuple):
            raise ScenarioError(
                path, f"expected a list, got {_describe(value)}", "write a TOML array [...]"
            )
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(_convert(v, items[0], f"{path}[{i}]") for i, v in enumerate(value))
        if len(value) != len(items):
            raise ScenarioError(
                path, f"expected {len(items)} items, got {len(value)}", f"write {len(items)} items"
            )
        return tuple(
            _convert(v, a, f"{path}[{i}]")
            for i, (v, a) in enumerate(zip(value, items, strict=True))
        )
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise ScenarioError(
                path, f"expected true or false, got {_describe(value)}", "write true or false"
            )
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(
                path, f"expected an integer, got {_describe(value)}", "write a whole number"
            )
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(
                path, f"expected a number, got {_describe(value)}", "write a number, e.g. 0.5"
            )
        if math.isnan(value):
            raise ScenarioError(path, "got nan", "write a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ScenarioError(
                path, f"expected a string, got {_describe(value)}", 'write a quoted string "..."'
            )
        return value
    raise TypeError(f"unsupported scenario field type {tp!r} at {path}")


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is tuple:
        return "a list"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        tp, str(tp)
    )


def _latency(value: Any, path: str) -> LatencyModel:
    if isinstance(value, LatencyModel):
        return value
    if not isinstance(value, Mapping) or "model" not in value:
        raise ScenarioError(
            path,
            f"expected a latency table with a 'model' key, got {_describe(value)}",
            f'write e.g. {{ model = "lognormal", median = 0.05, sigma = 0.5 }}; models: {list(LATENCY_MODELS)}',
        )
    name = value["model"]
    cls = LATENCY_MODELS.get(name)
    if cls is None:
        raise ScenarioError(
            _join(path, "model"),
            f"unknown latency model {name!r}",
            f"use one of {list(LATENCY_MODELS)}",
        )
    rest = {k: v for k, v in value.items() if k != "model"}
    model: LatencyModel = _dataclass(cls, rest, path)
    return model


def _dataclass(cls: type, value: Any, path: str) -> Any:
    if dataclasses.is_dataclass(value) and isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise ScenarioError(
            path, f"expected a table, got {_describe(value)}", f"write a [{path}] table"
        )
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ScenarioError(
            _join(path, unknown[0]), "unknown field", f"remove it, or use one of {sorted(fields)}"
        )
    kwargs = {}
    for name, f in fields.items():
        if name in value:
            kwargs[name] = _convert(value[name], hints[name], _join(path, name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ScenarioError(
                _join(path, name),
                "missing required field",
                f"add {name} = ... to [{path or 'top level'}]",
            )
    try:
        return cls(**kwargs)
    except FieldError as exc:
        raise ScenarioError(exc.field, exc.problem, exc.fix) from None
    except ValueError as exc:
        text = str(exc)
        first = text.split(" ", 1)[0]
        where = _join(path, first) if first in fields else path
        raise ScenarioError(where, text, "correct the value") from None


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    """Validate a plain dict (as parsed from TOML) into a :class:`Scenario`."""
    scenario: Scenario = _dataclass(Scenario, data, "")
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(
            "", f"file {str(p)!r} does not exist", "give the path of a scenario .toml file"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(
            "", f"{p} is not valid TOML ({exc})", "correct the TOML syntax"
        ) from None
    return scenario_from_dict(data)


def _plain(value: Any) -> Any:
    if isinstance(value, LatencyModel) and dataclasses.is_dataclass(value):
        return {"model": _MODEL_NAMES[type(value)], **_plain_fields(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain_fields(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _plain_fields(obj: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        v = getattr(obj, f.name)
        if v is None:
            continue
        out[f.name] = _plain(v)
    return out


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (lists, dicts, numbers, strings), TOML- and JSON-ready.
    The ``blr`` and ``bcd`` tables appear only for their protocol (inert otherwise)."""
    plain = _plain_fields(scenario)
    for table in ("blr", "bcd", "race"):  # protocol tables appear only for their protocol
        if scenario.protocol != table:
            plain.pop(table, None)
    return plain


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
