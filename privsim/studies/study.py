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
import math
import reprlib
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privsim import registry
from privsim.inputs import InputMissingError, read_toml
from privsim.limits import MAX_CELLS, allow_large, env_value, parse_count
from privsim.progress import track
from privsim.scenarios.convert import check_depth, set_fields
from privsim.scenarios.loader import (
    InputFileError,
    ScenarioError,
    builtin_scenarios,
    scenario_from_dict,
    scenario_path,
)
from privsim.scenarios.schema import FieldError, Scenario, check_safe_name

__all__ = [
    "DEFAULT_MAX_TASKS",
    "MAX_TASKS_ENV",
    "Study",
    "StudyError",
    "Task",
    "apply_fields",
    "load_study",
    "max_tasks",
]

#: Environment variable raising the limit on a study's tasks (cells × replications).
MAX_TASKS_ENV = "PRIVSIM_MAX_TASKS"
DEFAULT_MAX_TASKS = 10**6


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
        return list(self.iter_cells())

    def iter_cells(self) -> Iterator[dict[str, Any]]:
        """The cells of :meth:`cells`, one at a time (nothing grid-sized is built)."""
        keys = sorted(self.grid)
        for case in self.cases or ({},):
            for combo in itertools.product(*(self.grid[k] for k in keys)):
                yield {**case, **dict(zip(keys, combo, strict=True))}

    @property
    def n_cells(self) -> int:
        """How many cells, from the grid's sizes (without expanding it)."""
        return max(1, len(self.cases)) * math.prod(len(v) for v in self.grid.values())

    def scenario(self, coordinates: Mapping[str, Any]) -> Scenario:
        return scenario_from_dict(apply_fields(self.base, coordinates))

    def tasks(self) -> Iterator[Task]:
        for coords in self.iter_cells():
            canon = _canonical(coords)
            cell = _digest(self.name, canon, size=5).hex()
            for r in range(self.replications):
                seed = int.from_bytes(_digest(self.seed, canon, r), "little") >> 1  # 63 bits
                yield Task(f"{cell}-r{r}", cell, tuple(sorted(coords.items())), r, seed)

    def validate(self) -> None:
        """Build every cell's scenario once: any bad field or value fails here, before work.
        A large grid reports its progress on stderr."""
        total = self.n_cells
        cells = self.iter_cells()
        if total >= 1000:
            cells = track(cells, "validating cells", total, stream=sys.stderr, unit="cells")
        for coords in cells:
            try:
                scenario = self.scenario(coords)
                registry.get(scenario.protocol).preflight(scenario)  # e.g. the data set exists
            except (ValueError, OSError) as exc:
                if not isinstance(exc, ScenarioError | FieldError):
                    raise StudyError(f"cell {_short(coords)}: {exc}") from None
                if isinstance(exc, FieldError):  # from a preflight: name the field
                    exc = ScenarioError(exc.field, exc.problem, exc.fix)
                where = exc.field
                origin = (
                    "grid"
                    if any(where == k or where.startswith(k + ".") for k in coords)
                    else "base"
                )
                raise StudyError(f"{origin} cell {_short(coords)}: {exc}") from None

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
    return study_from_dict(_read_toml(p, "study file"), p.parent, source=str(p))


def _read_toml(p: Path, what: str) -> dict[str, Any]:
    """A TOML file's tables, or a :class:`StudyError` naming the file (through the
    guarded reader: a regular file, within the size and depth limits)."""
    try:
        return read_toml(p, what)
    except InputMissingError:
        raise StudyError(f"{what} {str(p)!r} does not exist") from None
    except InputFileError as exc:  # /dev/zero, a FIFO, a directory, huge, deep, not TOML
        raise StudyError(str(exc)) from None


def _as_number(value: Any) -> Any:
    """``value`` with every number that is whole written as an int (``1.0`` as ``1``), so
    values equal as numbers compare equal as canonical JSON; booleans stay booleans."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _as_number(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_number(v) for v in value]
    return value


def _repeated(values: list[Any]) -> tuple[Any, Any] | None:
    """The first value that occurs twice in ``values``, as (its first occurrence, the
    second): compared as canonical JSON with numbers compared as numbers (``1`` and
    ``1.0`` are the same cell)."""
    seen: dict[str, Any] = {}
    for value in values:
        key = json.dumps(_as_number(value), sort_keys=True, default=repr)
        if key in seen:
            return seen[key], value
        seen[key] = value
    return None


def _twice(pair: tuple[Any, Any]) -> str:
    """A repeated value in words: ``1.0 more than once``, or ``1 and 1.0 (equal as
    numbers)`` when they are written differently."""
    first, second = pair
    if json.dumps(first, sort_keys=True, default=repr) == json.dumps(
        second, sort_keys=True, default=repr
    ):
        return f"{_short(first)} more than once"
    return f"{_short(first)} and {_short(second)} (equal as numbers)"


def _twice_case(pair: tuple[Any, Any]) -> str:
    first, second = pair
    if _twice(pair).endswith("more than once"):
        return f"the case {_short(first)} is given more than once"
    return f"the cases {_short(first)} and {_short(second)} are equal as numbers"


def max_tasks() -> int:
    """The limit on a study's tasks (cells × replications): ``$PRIVSIM_MAX_TASKS`` or 10⁶
    (lifted by ``--allow-large``)."""
    if allow_large():
        return sys.maxsize
    return env_value(
        MAX_TASKS_ENV,
        lambda text: parse_count(text, minimum=1),
        DEFAULT_MAX_TASKS,
        what="a number of tasks",
        example="2000000",
    )


def max_cells() -> int:
    """The limit on a study's grid cells, each validated before the sweep starts:
    :data:`~privsim.limits.MAX_CELLS` (lifted by ``--allow-large``)."""
    return sys.maxsize if allow_large() else MAX_CELLS


def _short(value: Any, limit: int = 200) -> str:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, 60, 60
    text = short.repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def study_from_dict(data: Mapping[str, Any], root: Path | None = None, source: str = "") -> Study:
    if not isinstance(data, Mapping):
        raise StudyError(f"a study is a table, got {type(data).__name__}")
    try:
        check_depth(data)
    except ScenarioError as exc:
        raise StudyError(f"study key '{exc.field}': nested too deeply; {exc}") from None
    known = {"name", "seed", "replications", "base", "overrides", "grid", "cases"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise StudyError(f"unknown study key '{unknown[0]}'; use {sorted(known)}")
    name = data.get("name", "study")
    seed = data.get("seed", 0)
    reps = data.get("replications", 1)
    try:
        check_safe_name("name", name)  # it may name files and directories
    except FieldError as exc:
        raise StudyError(
            f"study name: {exc.problem}; {exc.fix.replace('my-scenario', 'epsilon-sweep')}"
        ) from None
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise StudyError(f"seed must be a non-negative integer, got {_short(seed)}")
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise StudyError(f"replications must be an integer >= 1, got {_short(reps)}")
    if reps > max_tasks():
        raise StudyError(
            f"replications = {reps} is more than the limit of {max_tasks()} tasks; lower "
            f"replications, or raise the limit with {MAX_TASKS_ENV}"
        )
    base_ref = data.get("base", "quickstart")
    if isinstance(base_ref, dict):
        base = dict(base_ref)
    elif isinstance(base_ref, str):
        try:  # a file (relative to the study's folder) wins over a built-in's name
            candidate = scenario_path(base_ref, root=root)
        except ScenarioError:
            raise StudyError(
                f"base {_short(base_ref)} is neither a built-in scenario {builtin_scenarios()} "
                "nor a file"
            ) from None
        base = _read_toml(candidate, "base scenario file")
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
            raise StudyError(f"grid field '{key}' must be a list of values, got {_short(values)}")
        if not values:
            raise StudyError(f"grid field '{key}' has no values; give at least one")
        if len(values) > max_cells():  # refused before its values are compared
            raise StudyError(
                f"grid field '{key}' lists {len(values)} values, more than the limit of "
                f"{MAX_CELLS} cells validated before a sweep starts; shorten it, or pass "
                "--allow-large (allow_large=True in Python) to validate them all anyway"
            )
        grid[key] = tuple(values)
        twice = _repeated(values)
        if twice is not None:
            raise StudyError(
                f"grid field '{key}' lists {_twice(twice)}; list each value once (a repeated "
                "cell would repeat its rows)"
            )
    raw_cases = data.get("cases", [])
    if not isinstance(raw_cases, list) or not all(isinstance(c, dict) and c for c in raw_cases):
        raise StudyError(
            'cases must be an array of tables of dotted fields, e.g. [[cases]] "blr.dataset" = "abalone"'
        )
    cases = tuple(dict(c) for c in raw_cases)
    twice = _repeated(list(cases))
    if twice is not None:
        raise StudyError(f"cases: {_twice_case(twice)}; give it once")
    for i, case in enumerate(cases[1:], 1):
        if set(case) != set(cases[0]):
            odd = sorted(set(case) ^ set(cases[0]))[0]
            raise StudyError(
                f"cases: every case must set the same fields, but case {i} and case 0 differ "
                f"in '{odd}'; give each case every field"
            )
    clash = sorted(set(cases[0]) & set(grid)) if cases else []
    if clash:
        raise StudyError(f"field '{clash[0]}' is both in a case and in the grid; keep it in one")
    study = Study(
        name=name, seed=seed, replications=reps, base=base, grid=grid, cases=cases, source=source
    )
    # Sized from the grid's lengths, before any cell is built.
    if study.n_cells * reps > max_tasks():
        sizes = " × ".join(
            [f"{len(cases)} cases"] * bool(cases) + [f"{len(v)} {k}" for k, v in grid.items()]
        )
        raise StudyError(
            f"grid: {sizes} = {study.n_cells} cells × {reps} replications = "
            f"{study.n_cells * reps} tasks, more than the limit of {max_tasks()}; shorten the "
            f"grid or lower replications, or raise the limit with {MAX_TASKS_ENV}"
        )
    if study.n_cells > max_cells():  # each cell is validated before any work starts
        raise StudyError(
            f"grid: {study.n_cells} cells, more than the limit of {MAX_CELLS} cells that are "
            "validated before a sweep starts (about 1.5 ms each: minutes before the first "
            "row); shorten the grid, or pass --allow-large (allow_large=True in Python) to "
            "validate them all anyway"
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
