"""Golden results for scenario regression tests: rerun a scenario, compare field by field.

A golden file is a run's JSON result without its timings, with the seed it was run at
and the tolerances it is compared with::

    {"privsim_golden": 1, "seed": 7, "tolerances": {"accuracy.*": {"rel": 0.01}},
     "ignore": ["communication.duration"], "result": {...}}

(a result file written by ``privsim run`` is read as a golden file too). Numbers compare
within ``|a - b| <= max(abs, rel * max(|a|, |b|))`` (by default ``rel = 1e-9``, so the
last bits of a float computed by another BLAS do not count); everything else compares
exactly. Tolerances and ignored fields are given by dotted path patterns: ``*`` matches
one path segment (a key or a list index), ``**`` any number of them, and list items are
written ``events[0]`` or ``events.0`` alike. The most specific pattern (fewest wildcards,
then longest) wins.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privsim.inputs import Shape
from privsim.kit.result import jsonable, without_timing

if TYPE_CHECKING:
    from privsim.scenarios.schema import Scenario

__all__ = [
    "DEFAULT_TOLERANCE",
    "Difference",
    "GoldenError",
    "GoldenMismatch",
    "GoldenReport",
    "Tolerance",
    "UnmatchedPatternWarning",
    "assert_golden",
    "check_golden",
    "compare",
    "field_paths",
    "format_differences",
    "parse_tolerances",
    "read_golden",
    "write_golden",
]

GOLDEN_FORMAT = 1
#: How many differing fields a report lists before "... and N more".
SHOWN = 40


class GoldenError(ValueError):
    """A golden file that cannot be used (missing, unreadable, malformed), or a bad
    tolerance; the message says the fix."""


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far a number may move: ``|a - b| <= max(abs, rel * max(|a|, |b|))``."""

    rel: float = 0.0
    abs: float = 0.0

    def __post_init__(self) -> None:
        for name in ("rel", "abs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise GoldenError(f"tolerance {name} must be a number, got {value!r}")
            if not (value >= 0 and math.isfinite(value)):
                raise GoldenError(f"tolerance {name} must be a finite number >= 0, got {value}")

    def allows(self, a: float, b: float) -> bool:
        if a == b:
            return True
        return abs(a - b) <= max(self.abs, self.rel * max(abs(a), abs(b)))

    def __str__(self) -> str:
        parts = [f"rel {self.rel:g}"] * bool(self.rel) + [f"abs {self.abs:g}"] * bool(self.abs)
        return ", ".join(parts) or "exact"


#: Float noise only: the same code and seed on another machine.
DEFAULT_TOLERANCE = Tolerance(rel=1e-9)


@dataclass(frozen=True, slots=True)
class Difference:
    """One field that differs: its dotted path, the stored and the new value."""

    path: str
    stored: Any
    now: Any
    tolerance: Tolerance | None = None

    def __str__(self) -> str:
        stored = _show(self.stored)
        now = _show(self.now)
        text = f"{self.path}: stored {stored}, now {now}"
        if _is_number(self.stored) and _is_number(self.now) and self.tolerance is not None:
            a, b = float(self.stored), float(self.now)
            gap = abs(a - b)
            rel = gap / max(abs(a), abs(b))
            text += f" (difference {gap:.4g}, relative {rel:.3g}; tolerance {self.tolerance})"
        elif isinstance(self.stored, str) and self.tolerance is not None:
            text += f" (numbers in the text compared with tolerance {self.tolerance})"
        return text


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()


def _show(value: Any) -> str:
    if value is ABSENT:
        return "<absent>"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_SPLIT = re.compile(r"\.|\[|\]")


def _segments(path: str) -> tuple[str, ...]:
    return tuple(s for s in _SPLIT.split(path) if s)


def _pattern(text: Any, kind: str = "pattern") -> tuple[str, ...]:
    """A user's pattern as its segments, runs of ``**`` as one (``**.**`` matches what
    ``**`` does); a pattern that is not text is a :class:`GoldenError` naming it."""
    if not isinstance(text, str):
        shown = _show(text) if isinstance(text, int | float | bool | type(None)) else "a value"
        raise GoldenError(
            f"{kind} pattern {shown} is {type(text).__name__}, not text: a pattern is a dotted "
            "field path such as 'accuracy.*' or 'communication.duration' (a string in JSON)"
        )
    out: list[str] = []
    for segment in _segments(text):
        if not (segment == "**" and out and out[-1] == "**"):
            out.append(segment)
    return tuple(out)


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether ``path`` matches ``pattern`` (``*``: one segment, ``**``: any number),
    by stepping the set of pattern positions reachable after each path segment: time
    O(len(pattern) · len(path)), without backtracking, whatever the pattern."""
    fixed = sum(1 for s in pattern if s != "**")
    if fixed > len(path):  # each segment but ** takes one of the path's
        return False
    if fixed == len(pattern):  # no **: segment by segment
        same = len(pattern) == len(path)
        return same and all(p in ("*", s) for p, s in zip(pattern, path, strict=True))
    end = len(pattern)

    def closure(positions: set[int]) -> set[int]:  # ** may match no segment at all
        return positions | {i + 1 for i in positions if i < end and pattern[i] == "**"}

    positions = closure({0})
    for segment in path:
        after = set()
        for i in positions:
            if i == end:
                continue
            head = pattern[i]
            if head == "**":
                after.add(i)  # ** takes this segment and may take more
            elif head in ("*", segment):
                after.add(i + 1)
        positions = closure(after)
        if not positions:
            return False
    return end in positions


def _specificity(pattern: tuple[str, ...]) -> tuple[int, int]:
    wild = sum(2 if s == "**" else 1 for s in pattern if s in ("*", "**"))
    return (-wild, len(pattern))


@dataclass(frozen=True, slots=True)
class _Rules:
    tolerances: tuple[tuple[tuple[str, ...], Tolerance], ...]
    ignore: tuple[tuple[str, ...], ...]
    default: Tolerance

    def ignored(self, path: tuple[str, ...]) -> bool:
        return any(_matches(p, path) for p in self.ignore)

    def tolerance(self, path: tuple[str, ...]) -> Tolerance:
        found = [(p, t) for p, t in self.tolerances if _matches(p, path)]
        if not found:
            return self.default
        return max(found, key=lambda pt: _specificity(pt[0]))[1]


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _walk(stored: Any, now: Any, path: str, rules: _Rules, out: list[Difference]) -> None:
    segs = _segments(path)
    if path and rules.ignored(segs):
        return
    if isinstance(stored, Mapping) and isinstance(now, Mapping):
        for key in list(stored) + [k for k in now if k not in stored]:
            _walk(stored.get(key, ABSENT), now.get(key, ABSENT), _join(path, str(key)), rules, out)
        return
    if isinstance(stored, list) and isinstance(now, list) and len(stored) == len(now):
        for i, (a, b) in enumerate(zip(stored, now, strict=True)):
            _walk(a, b, _join(path, i), rules, out)
        return
    if _is_number(stored) and _is_number(now):
        tolerance = rules.tolerance(segs)
        if not tolerance.allows(float(stored), float(now)):
            out.append(Difference(path, stored, now, tolerance))
        return
    if isinstance(stored, str) and isinstance(now, str) and stored != now:
        tolerance = rules.tolerance(segs)
        if _same_text_with_numbers(stored, now, tolerance):
            return
        numeric = _NUMBER.search(stored) and _NUMBER.sub("#", stored) == _NUMBER.sub("#", now)
        out.append(Difference(path or "result", stored, now, tolerance if numeric else None))
        return
    if stored != now or type(stored) is not type(now):
        out.append(Difference(path or "result", stored, now))


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _same_text_with_numbers(a: str, b: str, tolerance: Tolerance) -> bool:
    """Two texts that differ only in the decimal numbers they hold, each within
    ``tolerance`` (a DP event written as ``GaussianDpEvent(noise_multiplier=3.73)``);
    whole numbers (a party id such as ``client-3``) must be equal."""
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    pairs = zip(_NUMBER.findall(a), _NUMBER.findall(b), strict=True)
    return all(
        x == y
        if _WHOLE.fullmatch(x) and _WHOLE.fullmatch(y)
        else tolerance.allows(float(x), float(y))
        for x, y in pairs
    )


_WHOLE = re.compile(r"[-+]?\d+")


def parse_tolerances(
    rel: Mapping[str, float] | None = None,
    abs: Mapping[str, float] | None = None,
) -> dict[str, Tolerance]:
    """Per-pattern tolerances from relative and absolute ones given separately (a
    pattern in both gets both)."""
    out: dict[str, Tolerance] = {}
    for pattern in dict.fromkeys([*(rel or {}), *(abs or {})]):
        out[pattern] = Tolerance(
            rel=(rel or {}).get(pattern, 0.0), abs=(abs or {}).get(pattern, 0.0)
        )
    return out


def _tolerance(pattern: str, value: Any) -> Tolerance:
    if isinstance(value, Tolerance):
        return value
    if _is_number(value):
        return Tolerance(rel=float(value))
    if isinstance(value, Mapping) and set(value) <= {"rel", "abs"}:
        return Tolerance(rel=value.get("rel", 0.0), abs=value.get("abs", 0.0))
    raise GoldenError(
        f"tolerance for {pattern!r}: expected a relative tolerance (a number) or a table "
        f"{{rel = ..., abs = ...}}, got {value!r}"
    )


def _rules(
    tolerances: Mapping[str, Any] | None, ignore: Sequence[str], default: Tolerance
) -> _Rules:
    """The tolerance and ignore patterns, checked (each one text, the ignore patterns a
    list and the tolerances a table: a :class:`GoldenError` otherwise)."""
    if tolerances is not None and not isinstance(tolerances, Mapping):
        raise GoldenError(
            f"tolerances must be a table of pattern -> tolerance, got {type(tolerances).__name__}"
        )
    if isinstance(ignore, str | bytes) or not isinstance(ignore, Sequence):
        raise GoldenError(
            f"ignore must be a list of patterns, got {type(ignore).__name__}; write e.g. "
            '["communication.duration"]'
        )
    pairs = tuple(
        (_pattern(pattern, "tolerance"), _tolerance(pattern, value))
        for pattern, value in (tolerances or {}).items()
    )
    return _Rules(pairs, tuple(_pattern(p, "ignore") for p in ignore), default)


def compare(
    stored: Any,
    now: Any,
    tolerances: Mapping[str, Any] | None = None,
    ignore: Sequence[str] = (),
    *,
    default: Tolerance = DEFAULT_TOLERANCE,
) -> tuple[Difference, ...]:
    """Every field where ``now`` differs from ``stored`` (timings aside), in the stored
    order. ``tolerances``: pattern -> :class:`Tolerance`, a relative tolerance, or
    ``{"rel": ..., "abs": ...}``; ``ignore``: patterns of fields left out."""
    rules = _rules(tolerances, ignore, default)
    out: list[Difference] = []
    _walk(_plain(stored), _plain(now), "", rules, out)
    return tuple(out)


def _plain(value: Any) -> Any:
    """JSON data as a result file holds it (tuples as lists, inf as text), timings aside."""
    return without_timing(json.loads(json.dumps(jsonable(value), default=str)))


class UnmatchedPatternWarning(UserWarning):
    """A tolerance or ignore pattern that matches no field of the result (a typo, or a
    field that is not there), so it changes nothing. ``kind`` is "tolerance" or "ignore";
    ``detail`` says why and names fields that exist."""

    def __init__(self, kind: str, pattern: str, detail: str) -> None:
        super().__init__(f"{kind} pattern {pattern!r} {detail}")
        self.kind, self.pattern, self.detail = kind, pattern, detail


#: How many existing field paths an unmatched pattern's warning names.
SUGGESTED = 3


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], bool]]:
    """Every field path of plain result data, each with whether it holds a value (a
    leaf, which a tolerance applies to) rather than a table or a list."""
    if isinstance(value, Mapping | list):
        if prefix:
            yield prefix, False
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for key, item in items:
            yield from _paths(item, (*prefix, str(key)))
    else:
        yield prefix, True


def field_paths(result: Any) -> list[str]:
    """The dotted path of every value in a result (timings aside), as the tolerance and
    ignore patterns match them: ``privacy.achieved_epsilon``, ``privacy.events.0.label``."""
    return [".".join(path) for path, leaf in _paths(_plain(result)) if leaf]


def _unmatched_detail(
    kind: str, text: str, paths: list[tuple[tuple[str, ...], bool]]
) -> str | None:
    """Why the pattern ``text`` changes nothing in a result with ``paths``, or None when
    it matches a field (any field for ``ignore``, a value for a tolerance)."""
    pattern = _pattern(text, kind)
    hits = [leaf for path, leaf in paths if _matches(pattern, path)]
    if any(hits) or (hits and kind == "ignore"):
        return None
    if hits:  # a tolerance on a table: it applies to values only
        return (
            "names a table or list of the result, not a value, so no number takes its "
            f"tolerance; write {text + '.*'!r} (its values) or {text + '.**'!r} (every value "
            "under it)"
        )
    values = list(dict.fromkeys(".".join(path) for path, leaf in paths if leaf))
    near = difflib.get_close_matches(text, values, n=SUGGESTED, cutoff=0.5)
    tops = list(dict.fromkeys(path[0] for path, _ in paths if path))
    more = f" and {len(tops) - 10} more" if len(tops) > 10 else ""
    shown = (
        f"the nearest fields are {', '.join(near)}"
        if near
        else f"the result's top-level fields are {', '.join(tops[:10])}{more}"
    )
    return (
        f"matches no field of the result, so it changes nothing; {shown}. A field is the "
        "dotted path of a value in the result JSON that privsim run writes (all of them: "
        "privsim.golden.field_paths(result)); * matches one segment, ** any number"
    )


def _warn_unmatched(
    results: Sequence[Any],
    tolerances: Mapping[str, Any] | None,
    ignore: Sequence[str],
    stacklevel: int,
) -> None:
    """An :class:`UnmatchedPatternWarning` for every pattern of ``tolerances`` and
    ``ignore`` that matches no field of any of ``results``."""
    paths = [p for r in results if r is not None for p in _paths(_plain(r))]
    given = [("tolerance", t) for t in (tolerances or {})] + [("ignore", i) for i in ignore]
    for kind, text in given:
        detail = _unmatched_detail(kind, text, paths)
        if detail is not None:
            warnings.warn(UnmatchedPatternWarning(kind, text, detail), stacklevel=stacklevel)


def format_differences(differences: Sequence[Difference], limit: int = SHOWN) -> str:
    """One line per differing field (at most ``limit``, then how many more)."""
    lines = [f"  {d}" for d in differences[:limit]]
    if len(differences) > limit:
        lines.append(f"  ... and {len(differences) - limit} more")
    return "\n".join(lines)


#: What a golden file (or a result file read as one) must look like, as read.
GOLDEN_SHAPE = Shape(
    top=dict,
    optional={
        "privsim_golden": int,
        "seed": (int, type(None)),
        "tolerances": (dict, type(None)),
        "ignore": (list, type(None)),
        "result": dict,
    },
)


@dataclass(frozen=True, slots=True)
class Golden:
    """A golden file's content."""

    seed: int | None
    result: dict[str, Any]
    tolerances: dict[str, Any] = field(default_factory=dict)
    ignore: tuple[str, ...] = ()


def read_golden(path: str | Path) -> Golden:
    """A golden file (or a ``privsim run`` result file, read as one)."""
    from privsim.inputs import (
        InputFileError,
        InputKindError,
        InputMissingError,
        InputTooLargeError,
        read_json,
    )

    p = Path(path)
    try:
        data = read_json(p, "golden file", shape=GOLDEN_SHAPE)
    except InputMissingError:
        raise GoldenError(
            f"no golden file {p}; write it with --update (privsim check), update=True "
            "(check_golden) or pytest --privsim-update-golden"
        ) from None
    except (InputKindError, InputTooLargeError) as exc:  # /dev/zero, a FIFO, a directory
        raise GoldenError(
            f"{exc.problem}; give the path of a golden JSON file, or write one with --update"
        ) from None
    except InputFileError as exc:  # unreadable, not UTF-8, not JSON, too deep, a list
        raise GoldenError(f"{exc.problem}; rewrite it with --update") from None
    if "privsim_golden" not in data:  # a plain result file
        seed = data.get("seed")
        return Golden(seed if isinstance(seed, int) else None, without_timing(data))
    result = data.get("result")
    if data["privsim_golden"] != GOLDEN_FORMAT or not isinstance(result, dict):
        raise GoldenError(
            f"golden file {p} has format {data['privsim_golden']!r}, not {GOLDEN_FORMAT}, or no "
            "result; rewrite it with --update"
        )
    tolerances = data.get("tolerances") or {}
    ignore = data.get("ignore") or []
    if not isinstance(tolerances, dict) or not isinstance(ignore, list):
        raise GoldenError(f"golden file {p}: 'tolerances' must be an object, 'ignore' a list")
    _rules(tolerances, ignore, DEFAULT_TOLERANCE)  # a bad tolerance fails here, named
    seed = data.get("seed")
    return Golden(seed if isinstance(seed, int) else None, result, tolerances, tuple(ignore))


def write_golden(
    path: str | Path,
    result: Mapping[str, Any],
    *,
    seed: int,
    tolerances: Mapping[str, Any] | None = None,
    ignore: Sequence[str] = (),
) -> Path:
    """Write a golden file (atomically): the result without timings, its seed, and the
    tolerances and ignored fields future checks use."""
    from privsim.results import write_json_atomic

    tol = {
        k: (v if not isinstance(v, Tolerance) else {"rel": v.rel, "abs": v.abs})
        for k, v in (tolerances or {}).items()
    }
    _rules(tol, ignore, DEFAULT_TOLERANCE)
    data = {
        "privsim_golden": GOLDEN_FORMAT,
        "seed": seed,
        "tolerances": tol,
        "ignore": list(ignore),
        "result": _plain(result),
    }
    return write_json_atomic(path, data, what="golden file")


@dataclass(frozen=True, slots=True)
class GoldenReport:
    """The outcome of a golden check: where, at which seed, and every differing field
    (none when it matches, or when the golden file was just written)."""

    golden: Path
    seed: int
    differences: tuple[Difference, ...] = ()
    updated: bool = False

    @property
    def ok(self) -> bool:
        return not self.differences

    def __str__(self) -> str:
        if self.updated:
            return f"wrote golden file {self.golden} (seed {self.seed})"
        if self.ok:
            return f"matches golden file {self.golden} (seed {self.seed}, timings aside)"
        n = len(self.differences)
        return (
            f"{n} field{'s' * (n != 1)} differ from golden file {self.golden} "
            f"(seed {self.seed}, timings aside):\n{format_differences(self.differences)}"
        )


class GoldenMismatch(AssertionError):
    """A scenario's result no longer matches its golden file; the message lists every
    differing field with both values."""

    def __init__(self, report: GoldenReport) -> None:
        super().__init__(str(report))
        self.report = report


def _scenario(scenario: Scenario | str | Path) -> Scenario:
    from privsim.scenarios.loader import load_scenario
    from privsim.scenarios.schema import Scenario

    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


def check_golden(
    scenario: Scenario | str | Path,
    golden: str | Path,
    *,
    seed: int | None = None,
    tolerances: Mapping[str, Any] | None = None,
    ignore: Sequence[str] = (),
    update: bool = False,
) -> GoldenReport:
    """Run ``scenario`` (a :class:`~privsim.scenarios.schema.Scenario` or a TOML path) and
    compare its result with the golden file ``golden``, field by field, timings aside.

    The seed is ``seed``, else the golden file's, else the scenario's. ``tolerances``
    and ``ignore`` add to (and, for the same pattern, replace) the file's own. With
    ``update``, the golden file is (re)written from this run, keeping the file's
    tolerances and ignored fields plus the ones given. A pattern of ``tolerances`` or
    ``ignore`` that matches no field of the result (or of the golden one) is an
    :class:`UnmatchedPatternWarning`: a typo would otherwise change nothing, silently."""
    return _check_golden(scenario, golden, seed, tolerances, ignore, update, stacklevel=4)


def _check_golden(
    scenario: Scenario | str | Path,
    golden: str | Path,
    seed: int | None,
    tolerances: Mapping[str, Any] | None,
    ignore: Sequence[str],
    update: bool,
    *,
    stacklevel: int,
) -> GoldenReport:
    """:func:`check_golden`; ``stacklevel`` points a pattern's warning at the caller."""
    from privsim.inputs import input_exists
    from privsim.runs import run

    _rules(tolerances, ignore, DEFAULT_TOLERANCE)  # every pattern named before the run
    if not str(golden):  # Path("") would be the current directory
        raise GoldenError("the golden file is an empty path; give a file name, e.g. golden.json")
    path = Path(golden)
    stored = None if update and not input_exists(path, "golden file") else read_golden(path)
    sc = _scenario(scenario)
    used_seed = (
        seed
        if seed is not None
        else (stored.seed if stored and stored.seed is not None else sc.seed)
    )
    tol = {**(stored.tolerances if stored else {}), **(tolerances or {})}
    skip = tuple(dict.fromkeys([*(stored.ignore if stored else ()), *ignore]))
    result = run(sc, used_seed).to_dict()
    _warn_unmatched(
        [stored.result if stored else None, result], tolerances, ignore, stacklevel=stacklevel
    )
    if update:
        write_golden(path, result, seed=used_seed, tolerances=tol, ignore=skip)
        return GoldenReport(path, used_seed, updated=True)
    assert stored is not None
    return GoldenReport(path, used_seed, compare(stored.result, result, tol, skip))


def assert_golden(
    scenario: Scenario | str | Path,
    golden: str | Path,
    *,
    seed: int | None = None,
    tolerances: Mapping[str, Any] | None = None,
    ignore: Sequence[str] = (),
    update: bool = False,
) -> GoldenReport:
    """:func:`check_golden`, raising :class:`GoldenMismatch` (an ``AssertionError``
    listing every differing field) when the result differs."""
    report = _check_golden(scenario, golden, seed, tolerances, ignore, update, stacklevel=4)
    if not report.ok:
        raise GoldenMismatch(report)
    return report
