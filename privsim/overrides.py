"""Scenario fields set from the command line: ``--set path=value``.

``path`` is a dotted scenario field (``privacy.epsilon``, ``network.link.latency.median``)
and ``value`` is a TOML value (``2.0``, ``[1, 2]``, ``"none"``, ``{ model = "constant",
value = 0.01 }``); a bare word that is not TOML (``none``, ``aes-gcm``) is taken as a
string. Unknown fields and wrong values are refused with the option, the field and the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from privsim.inputs import InputFileError, InputSyntaxError, parse_toml
from privsim.scenarios.errors import ScenarioError
from privsim.scenarios.schema import Scenario

__all__ = ["SetError", "apply_settings", "parse_settings", "scenario_hash"]

#: A path segment: a TOML bare key.
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
#: A bare word taken as a string when it is not a TOML value (``none``, ``aes-gcm``).
_BARE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.:/+-]*")


class SetError(ValueError):
    """A ``--set`` option that cannot apply; ``field`` is the dotted field it names and
    the message says the problem and the fix."""

    def __init__(self, option: str, field: str, problem: str, fix: str = "") -> None:
        where = f"scenario field '{field}': " if field else ""
        super().__init__(
            f"--set {option[:120]}: {where}{problem}" + (f". Fix: {fix}" if fix else "")
        )
        self.field = field


def _value(option: str, path: str, text: str) -> Any:
    try:  # the guarded parser: depth and dotted keys bounded before tomllib sees them
        parsed = parse_toml(f"v = {text}", "--set value")
    except InputSyntaxError:
        if _BARE_WORD.fullmatch(text) and text not in ("true", "false"):
            return text
        raise SetError(
            option,
            path,
            f"{text[:60]!r} is not a TOML value",
            'write a number (2.0), true/false, a quoted string ("none"), a list ([1, 2]) '
            'or an inline table ({ model = "constant", value = 0.01 })',
        ) from None
    except InputFileError:  # nested too deeply (lists, tables or dotted keys)
        raise SetError(option, path, "the value nests too deeply", "give a plain value") from None
    if list(parsed) != ["v"]:  # "2\nprivacy.delta=0.5": a second assignment, never dropped
        extra = next(k for k in parsed if k != "v")
        raise SetError(
            option,
            path,
            f"the value holds more than one TOML assignment (a line break, then {extra!r}...)",
            "give one value per --set, and each field its own --set",
        )
    return parsed["v"]


def parse_settings(options: Sequence[str]) -> dict[str, Any]:
    """``["privacy.epsilon=2", "dca.tolerated=5"]`` as ``{"privacy.epsilon": 2, ...}``
    (values parsed as TOML); a malformed option is a :class:`SetError`."""
    out: dict[str, Any] = {}
    for option in options:
        path, sep, text = option.partition("=")
        path, text = path.strip(), text.strip()
        if not sep or not path:
            raise SetError(
                option, path, "expected PATH=VALUE", "write e.g. --set privacy.epsilon=2.0"
            )
        if not all(_SEGMENT.fullmatch(p) for p in path.split(".")):
            raise SetError(
                option,
                path,
                f"{path[:80]!r} is not a dotted field path",
                "write the field's dotted path, e.g. network.link.bandwidth",
            )
        if path in out:
            raise SetError(option, path, "the field is set twice", "give each field once")
        out[path] = _value(option, path, text)
    return out


def _check_tables(plain: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """A path that runs through a value (``privacy.epsilon.x``) would replace the value
    by a table: refuse it, naming the value."""
    for path, value in settings.items():
        node: Any = plain
        parts = path.split(".")
        for i, part in enumerate(parts[:-1]):
            node = node.get(part) if isinstance(node, Mapping) else None
            if node is not None and not isinstance(node, Mapping):
                where = ".".join(parts[: i + 1])
                raise SetError(
                    f"{path}={value!r}",
                    where,
                    f"'{where}' is a value, not a table, so it has no field "
                    f"'{'.'.join(parts[i + 1 :])}'",
                    f"set {where} itself, e.g. --set {where}=...",
                )


def apply_settings(scenario: Scenario, settings: Mapping[str, Any]) -> Scenario:
    """``scenario`` with the ``--set`` fields changed and validated; an error names the
    option and the field."""
    if not settings:
        return scenario
    _check_tables(scenario.to_dict(every_table=True), settings)
    try:
        return scenario.replace(settings)
    except ScenarioError as exc:
        option = next(
            (
                f"{p}={v!r}"
                for p, v in settings.items()
                if exc.field == p or exc.field.startswith(p + ".") or p.startswith(exc.field)
            ),
            None,
        )
        if option is None:  # a problem of the scenario itself, not of a --set value
            raise
        raise SetError(option, "", str(exc)) from None


def scenario_hash(scenario: Scenario, length: int = 8) -> str:
    """A short hash of the effective scenario, its default seed aside (the run's seed is
    named separately): two scenarios that differ in any field have different hashes."""
    plain = {k: v for k, v in scenario.to_dict().items() if k != "seed"}
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.blake2b(text.encode(), digest_size=16, person=b"privsim-scenario")
    return digest.hexdigest()[:length]
