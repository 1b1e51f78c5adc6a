"""The protocol registry: every protocol declares itself once, and the runner, the
scenario loader, the report, the study worker and the command line look it up.

Built-in protocols are the packages under ``privsim/protocols/`` that export
``PROTOCOLS`` (a tuple of :class:`~privsim.kit.spec.ProtocolSpec`); third-party packages
register theirs through the entry-point group ``privsim.protocols``, the ecosystem's
plug-in convention::

    [project.entry-points."privsim.protocols"]
    noisy_sum = "my_package.protocol:PROTOCOL"

An entry point may name one spec or an iterable of specs. :func:`register` adds one in
process (notebooks, tests).
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from privsim.kit.spec import ProtocolSpec
from privsim.scenarios.errors import FieldError

__all__ = [
    "ENTRY_POINT_GROUP",
    "RegistryError",
    "get",
    "names",
    "register",
    "specs",
    "tables",
]

ENTRY_POINT_GROUP = "privsim.protocols"

_lock = threading.RLock()
_specs: dict[str, ProtocolSpec] | None = None
_tables: dict[str, type] | None = None


class RegistryError(RuntimeError):
    """Two protocols claim the same name, or one table name with different classes."""


def _as_specs(obj: Any, origin: str) -> list[ProtocolSpec]:
    items = [obj] if isinstance(obj, ProtocolSpec) else list(obj)
    for item in items:
        if not isinstance(item, ProtocolSpec):
            raise RegistryError(f"{origin} gives {item!r}, not a privsim ProtocolSpec")
    return items


def _builtin() -> list[ProtocolSpec]:
    found: list[ProtocolSpec] = []
    root = Path(__file__).parent / "protocols"
    for folder in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
        module = importlib.import_module(f"privsim.protocols.{folder.name}")
        found += _as_specs(getattr(module, "PROTOCOLS", ()), f"privsim.protocols.{folder.name}")
    return found


def _plugins() -> list[ProtocolSpec]:
    found: list[ProtocolSpec] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found += _as_specs(ep.load(), f"entry point {ep.name!r} ({ep.value})")
        except Exception as exc:  # one broken plug-in must not break every run
            warnings.warn(
                f"privsim: protocol plug-in {ep.name!r} ({ep.value}) failed to load: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )
    return found


def _add(specs: dict[str, ProtocolSpec], spec: ProtocolSpec) -> None:
    known = specs.get(spec.name)
    if known is not None and known is not spec:
        raise RegistryError(f"two protocols are named {spec.name!r}; rename one")
    specs[spec.name] = spec


def _merge_tables(specs: Iterable[ProtocolSpec]) -> dict[str, type]:
    merged: dict[str, type] = {}
    for spec in specs:
        for name, cls in spec.tables.items():
            if merged.setdefault(name, cls) is not cls:
                raise RegistryError(
                    f"table [{name}] is declared by two protocols with different classes "
                    f"({merged[name].__qualname__}, {cls.__qualname__})"
                )
    return merged


def specs() -> Mapping[str, ProtocolSpec]:
    """Every registered protocol by name (built-ins first, then plug-ins)."""
    global _specs, _tables
    with _lock:
        if _specs is None:
            found: dict[str, ProtocolSpec] = {}
            for spec in [*_builtin(), *_plugins()]:
                _add(found, spec)
            _tables = _merge_tables(found.values())
            _specs = found
        return dict(_specs)


def names() -> tuple[str, ...]:
    return tuple(specs())


def get(name: str) -> ProtocolSpec:
    """The protocol ``name``; a :class:`FieldError` on ``protocol`` if none is registered."""
    found = specs().get(name)
    if found is None:
        raise FieldError(
            "protocol",
            f"unknown protocol {name!r}",
            f"use one of {list(names())} (or install a package that registers it)",
        )
    return found


def tables() -> dict[str, type]:
    """Every table a scenario may hold, by name, with its config class."""
    specs()
    assert _tables is not None
    return dict(_tables)


def register(spec: ProtocolSpec) -> None:
    """Register ``spec`` in this process (after the built-ins and plug-ins)."""
    global _tables
    with _lock:
        specs()
        assert _specs is not None
        merged = _merge_tables([*_specs.values(), spec])
        _add(_specs, spec)
        _tables = merged
