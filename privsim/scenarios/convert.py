"""Conversion between plain data (as parsed from TOML) and frozen config dataclasses.

Driven by the dataclasses' type hints: every field is checked for its type, unknown keys
are refused with the list of known ones, and errors name the dotted field path and the
fix. Any protocol's config table goes through the same conversion.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import reprlib
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from privsim.limits import ALLOW_LARGE_ENV, list_limit
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.sim.latency import (
    ConstantLatency,
    EmpiricalLatency,
    LatencyModel,
    LogNormalLatency,
    UniformLatency,
)

__all__ = [
    "INFINITE_OK",
    "LATENCY_MODELS",
    "MAX_DEPTH",
    "check_depth",
    "from_plain",
    "plain_fields",
    "set_fields",
    "to_plain",
]

LATENCY_MODELS: dict[str, type] = {
    "constant": ConstantLatency,
    "uniform": UniformLatency,
    "lognormal": LogNormalLatency,
    "empirical": EmpiricalLatency,
}
_MODEL_NAMES = {cls: name for name, cls in LATENCY_MODELS.items()}


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 40, 40
_REPR.maxlist = _REPR.maxdict = 4

#: Fields where an infinite number means something (an unlimited link bandwidth).
INFINITE_OK = frozenset({"bandwidth"})
#: How deeply plain data may nest: far more than any scenario needs, far less than
#: Python's recursion limit.
MAX_DEPTH = 32


def check_depth(
    data: Any, path: str = "", limit: int = MAX_DEPTH, items: int | None = None
) -> None:
    """Refuse data nested more than ``limit`` lists or tables deep, or holding a list or
    table of more than ``items`` entries, naming the field (walked without recursion, so
    any depth is refused cleanly; a long list is refused before its items are read)."""
    stack: list[tuple[Any, str, int]] = [(data, path, 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > limit:
            raise ScenarioError(
                where,
                f"nested more than {limit} lists or tables deep",
                "give a plain value, list or table",
            )
        if items is not None and isinstance(value, Mapping | list | tuple) and len(value) > items:
            raise ScenarioError(
                where,
                f"holds {len(value)} entries, more than the limit of {items} "
                "(validating them would take minutes)",
                "give fewer (a coalition as a count: colluding_clients = 5000), or pass "
                f"--allow-large (allow_large=True in Python, {ALLOW_LARGE_ENV}=1) to read it anyway",
            )
        if isinstance(value, Mapping):
            stack.extend((v, _join(where, str(k)), depth + 1) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))


def _describe(value: Any) -> str:
    names = {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "a table",
    }
    return f"{_REPR.repr(value)} ({names.get(type(value), type(value).__name__)})"


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
        errors: list[ScenarioError] = []
        for arg in args:
            try:
                return _convert(value, arg, path)
            except ScenarioError as exc:
                errors.append(exc)
        if len(args) == 1 and dataclasses.is_dataclass(args[0]):  # an optional table
            raise errors[0]  # its own error names the field and the fix
        if args and all(typing.get_origin(a) is Literal for a in args):  # an optional choice
            choices = [o for a in args for o in typing.get_args(a)]
            optional = " or leave the field out" if len(args) < len(typing.get_args(tp)) else ""
            raise ScenarioError(path, f"got {_describe(value)}", f"use one of {choices}{optional}")
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
        if math.isinf(value) and path.rsplit(".", 1)[-1] not in INFINITE_OK:
            raise ScenarioError(path, f"got {value}", "write a finite number")
        try:
            return float(value)
        except OverflowError:
            raise ScenarioError(
                path, f"{_describe(value)} is too large for a number", "write a smaller number"
            ) from None
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
    if dataclasses.is_dataclass(tp):
        return "a table"
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
    cls = LATENCY_MODELS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ScenarioError(
            _join(path, "model"),
            f"unknown latency model {_describe(name)}",
            f"use one of {list(LATENCY_MODELS)}",
        )
    rest = {k: v for k, v in value.items() if k != "model"}
    model: LatencyModel = _dataclass(cls, rest, path)
    try:  # checked here: LinkSpec's isinstance check reads the mean (an overflow)
        mean = float(model.mean)
    except OverflowError:
        mean = math.inf
    if not math.isfinite(mean):
        where = _join(path, "sigma") if "sigma" in rest else path
        raise ScenarioError(
            where,
            f"the delays' mean overflows a float ({_describe(rest)})",
            "give a delay model of seconds, e.g. median = 0.05, sigma = 0.5",
        )
    return model


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """A config class's resolved type hints (resolved once: they never change)."""
    return typing.get_type_hints(cls)


def _dataclass(cls: type, value: Any, path: str) -> Any:
    if dataclasses.is_dataclass(value) and isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise ScenarioError(
            path, f"expected a table, got {_describe(value)}", f"write a [{path}] table"
        )
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(str(k) for k in set(value) - set(fields))
    if unknown:
        name = unknown[0] if len(unknown[0]) <= 40 else unknown[0][:40] + "…"
        raise ScenarioError(
            _join(path, name), "unknown field", f"remove it, or use one of {sorted(fields)}"
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


def from_plain(cls: type, value: Any, path: str) -> Any:
    """Validate ``value`` (a table) into the config dataclass ``cls``; ``path`` is the
    table's dotted name, used in errors. No list in it may be longer than
    :func:`~privsim.limits.list_limit`."""
    check_depth(value, path, items=list_limit())
    return _dataclass(cls, value, path)


def to_plain(value: Any) -> Any:
    """A config value as plain data (lists, dicts, numbers, strings)."""
    return _plain(value)


def plain_fields(obj: Any) -> dict[str, Any]:
    """A config dataclass's fields as plain data (``None`` fields left out)."""
    return _plain_fields(obj)


def set_fields(base: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of the plain scenario ``base`` with dotted ``fields`` set
    (``{"dca.tolerated": 5}``); missing tables are created."""
    out = copy.deepcopy(dict(base))
    for path, value in fields.items():
        node = out
        *parents, leaf = path.split(".")
        for p in parents:
            child = node.get(p)
            if not isinstance(child, dict):
                child = {}
                node[p] = child
            node = child
        node[leaf] = value
    return out
