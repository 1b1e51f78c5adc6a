"""A study: a base scenario, a grid over any of its fields, and a number of replications.

    name = "epsilon-sweep"
    seed = 7                      # the study seed
    replications = 25
    base = "quickstart"           # a built-in scenario or a TOML path (relative to this file)

    [overrides]                   # optional: fields changed in the base for every row
    "network.encryption" = "none"

    [grid]                        # dotted scenario fields -> values
    "privacy.epsilon" = [0.5, 1.0, 2.0]
    "protocol" = ["dca", "trusted_aggregator"]

    [[cases]]                     # optional: fields that vary together (one case each)
    "blr.dataset" = "wine-red"
    "population.clients" = 1000

The cells are every case combined with every grid point.

Every grid cell is validated as a full scenario before any work starts. Each replication's
seed is a hash of the study seed, the cell's coordinates and the replication number, so
a row can be replayed alone and results do not depend on executor, worker count or
completion order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privsim import registry
from privsim.scenarios.convert import set_fields
from privsim.scenarios.loader import (
    ScenarioError,
    builtin_scenario_path,
    builtin_scenarios,
    scenario_from_dict,
)
from privsim.scenarios.schema import Scenario

__all__ = ["Study", "StudyError", "Task", "apply_fields", "load_study"]


class StudyError(ValueError):
    """A study file is invalid; the message names the key and the fix."""


def apply_fields(base: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the scenario dict ``base`` with dotted ``fields`` set."""
    return set_fields(base, fields)


@dataclass(frozen=True, slots=True)
class Task:
    """One replication of one grid cell: everything a worker needs, and its row id."""

    row_id: str
    cell: str
    coordinates: tuple[tuple[str, Any], ...]
    replication: int
    seed: int


def _canonical(coordinates: Mapping[str, Any]) -> str:
    return json.dumps(dict(sorted(coordinates.items())), sort_keys=True, separators=(",", ":"))


def _digest(*parts: object, size: int = 8) -> bytes:
    text = "|".join(str(p) for p in parts).encode()
    return hashlib.blake2b(text, digest_size=size, person=b"privsim-study").digest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Study:
    name: str
    seed: int
    replications: int
    base: dict[str, Any]
    grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    cases: tuple[dict[str, Any], ...] = ()
    source: str = ""

    def cells(self) -> list[dict[str, Any]]:
        """Grid cells as coordinate dicts, in a fixed order (cases as given, then keys
        sorted, values as given); a case's fields are coordinates like the grid's."""
        keys = sorted(self.grid)
        points = [
            dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(self.grid[k] for k in keys))
        ]
        return [{**case, **point} for case in (self.cases or ({},)) for point in points]

    def scenario(self, coordinates: Mapping[str, Any]) -> Scenario:
        return scenario_from_dict(apply_fields(self.base, coordinates))

    def tasks(self) -> Iterator[Task]:
        for coords in self.cells():
            canon = _canonical(coords)
            cell = _digest(self.name, canon, size=5).hex()
            for r in range(self.replications):
                seed = int.from_bytes(_digest(self.seed, canon, r), "little") >> 1  # 63 bits
                yield Task(f"{cell}-r{r}", cell, tuple(sorted(coords.items())), r, seed)

    def validate(self) -> None:
        """Build every cell's scenario once: any bad field or value fails here, before work."""
        for coords in self.cells():
            try:
                scenario = self.scenario(coords)
                registry.get(scenario.protocol).preflight(scenario)  # e.g. the data set exists
            except (ValueError, OSError) as exc:
                if not isinstance(exc, ScenarioError):
                    raise StudyError(f"cell {coords}: {exc}") from None
                where = exc.field
                origin = (
                    "grid"
                    if any(where == k or where.startswith(k + ".") for k in coords)
                    else "base"
                )
                raise StudyError(f"{origin} cell {coords}: {exc}") from None

    def to_toml_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "seed": self.seed,
            "replications": self.replications,
            "base": self.base,
            "grid": {k: list(v) for k, v in self.grid.items()},
            **({"cases": [dict(c) for c in self.cases]} if self.cases else {}),
        }


def load_study(path: str | Path) -> Study:
    """Read a study TOML, resolve its base scenario and validate every grid cell."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StudyError(f"study file {str(p)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{p} is not valid TOML ({exc}); correct the syntax") from None
    return study_from_dict(data, p.parent, source=str(p))


def study_from_dict(data: Mapping[str, Any], root: Path | None = None, source: str = "") -> Study:
    known = {"name", "seed", "replications", "base", "overrides", "grid", "cases"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise StudyError(f"unknown study key '{unknown[0]}'; use {sorted(known)}")
    name = data.get("name", "study")
    seed = data.get("seed", 0)
    reps = data.get("replications", 1)
    if not isinstance(name, str) or not name:
        raise StudyError('name must be a non-empty string, e.g. name = "epsilon-sweep"')
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise StudyError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise StudyError(f"replications must be an integer >= 1, got {reps!r}")
    base_ref = data.get("base", "quickstart")
    if isinstance(base_ref, dict):
        base = dict(base_ref)
    elif isinstance(base_ref, str):
        candidate = (root / base_ref) if root is not None else Path(base_ref)
        if base_ref in builtin_scenarios() and not candidate.exists():
            candidate = builtin_scenario_path(base_ref)
        if not candidate.exists():
            raise StudyError(
                f"base {base_ref!r} is neither a built-in scenario {builtin_scenarios()} nor a file"
            )
        base = tomllib.loads(candidate.read_text(encoding="utf-8"))
    else:
        raise StudyError("base must be a built-in scenario name, a TOML path, or a table")
    overrides = data.get("overrides", {})
    if not isinstance(overrides, dict):
        raise StudyError(
            'overrides must be a table of dotted fields, e.g. "network.encryption" = "none"'
        )
    base = apply_fields(base, overrides)
    raw_grid = data.get("grid", {})
    if not isinstance(raw_grid, dict):
        raise StudyError("grid must be a table of dotted scenario fields to lists of values")
    grid: dict[str, tuple[Any, ...]] = {}
    for key, values in raw_grid.items():
        if not isinstance(values, list):
            raise StudyError(f"grid field '{key}' must be a list of values, got {values!r}")
        if not values:
            raise StudyError(f"grid field '{key}' has no values; give at least one")
        grid[key] = tuple(values)
    raw_cases = data.get("cases", [])
    if not isinstance(raw_cases, list) or not all(isinstance(c, dict) and c for c in raw_cases):
        raise StudyError(
            'cases must be an array of tables of dotted fields, e.g. [[cases]] "blr.dataset" = "abalone"'
        )
    cases = tuple(dict(c) for c in raw_cases)
    if cases and len({tuple(sorted(c)) for c in cases}) != 1:
        raise StudyError("every case must set the same fields; give each case every field")
    clash = sorted(set(cases[0]) & set(grid)) if cases else []
    if clash:
        raise StudyError(f"field '{clash[0]}' is both in a case and in the grid; keep it in one")
    study = Study(
        name=name, seed=seed, replications=reps, base=base, grid=grid, cases=cases, source=source
    )
    try:
        scenario_from_dict(base)
    except ScenarioError as exc:
        raise StudyError(f"base scenario: {exc}") from None
    firsts = {key: values[0] for key, values in grid.items()}
    firsts.update(cases[0] if cases else {})
    for key in firsts:  # an unknown field is caught before values are checked
        try:
            scenario_from_dict(apply_fields(base, {key: firsts[key]}))
        except ScenarioError as exc:
            if "unknown field" in str(exc) or "expected a table" in str(exc):
                raise StudyError(f"grid field '{key}' is not a scenario field: {exc}") from None
    study.validate()
    return study
