"""Checks every scenario passes before it runs, whatever its protocol: the party ids and
roles it names exist, its common numbers are finite, and the run fits in memory.

The protocol says which parties its run creates (``ProtocolSpec.parties``) and how much
memory it needs (``ProtocolSpec.footprint``); this module holds the scenario to both, so
an id that names nobody or a size that cannot run is a named error at validation, not a
traceback (or silence) after the run started.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from privsim.limits import allow_large, env_value
from privsim.scenarios.errors import FieldError

if TYPE_CHECKING:
    from privsim.scenarios.schema import Scenario

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_MAX_SECONDS",
    "MAX_MEMORY_ENV",
    "MAX_SECONDS_EVEN_LARGE",
    "MAX_TIME_ENV",
    "check_footprint",
    "check_numbers",
    "check_parties",
    "check_time",
    "format_bytes",
    "format_seconds",
    "memory_limit",
    "parse_bytes",
    "parse_seconds",
    "time_limit",
]

#: Environment variable holding the memory limit (``privsim run --max-memory`` sets it).
MAX_MEMORY_ENV = "PRIVSIM_MAX_MEMORY"
#: The default limit on a run's estimated peak memory.
DEFAULT_MAX_MEMORY = 8 << 30

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 1 << 10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 1 << 20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 1 << 30,
    "t": 10**12,
    "tb": 10**12,
    "tib": 1 << 40,
}


def _quantity(text: str, units: Mapping[str, float], what: str, kind: str, example: str) -> float:
    """A positive number with an optional unit from ``units`` (case-insensitive)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in units:
        raise ValueError(f"{what} {text[:40]!r} is not {kind}; write e.g. {example}")
    value = float(match.group(1)) * units[unit]
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} {text[:40]!r} must be a finite number > 0")
    return value


def parse_bytes(text: str) -> int:
    """``"8GiB"``, ``"500 MB"``, ``"2e9"`` or ``"1048576"`` as a number of bytes."""
    return int(
        _quantity(text, _UNITS, "memory limit", "a size", "8GiB, 500MB or a number of bytes")
    )


def _limit(env: str, parse: Callable[[str], float], default: float, example: str) -> float:
    """The limit in ``$env`` (parsed), or ``default``; a bad value names the variable."""
    return env_value(env, parse, default, what="a limit", example=example)


def memory_limit() -> int:
    """The limit on a run's estimated memory: ``$PRIVSIM_MAX_MEMORY`` or 8 GiB."""
    return int(_limit(MAX_MEMORY_ENV, parse_bytes, DEFAULT_MAX_MEMORY, "8GiB"))


def format_bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


#: Environment variable holding the limit on a run's estimated wall time, in seconds
#: (``privsim run --max-time`` sets it).
MAX_TIME_ENV = "PRIVSIM_MAX_SECONDS"
#: The default limit on a run's estimated wall time: a day.
DEFAULT_MAX_SECONDS = 24 * 3600.0

_TIME_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_seconds(text: str) -> float:
    """``"90s"``, ``"30m"``, ``"6h"``, ``"2d"`` or ``"3600"`` as seconds."""
    return _quantity(text, _TIME_UNITS, "time limit", "a duration", "6h, 90m or 3600")


def time_limit() -> float:
    """The limit on a run's estimated wall time: ``$PRIVSIM_MAX_SECONDS`` or a day."""
    return _limit(MAX_TIME_ENV, parse_seconds, DEFAULT_MAX_SECONDS, "6h")


def format_seconds(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


#: The longest estimated wall time accepted even under ``--allow-large``: a run past a
#: year on the reference machine's core would not finish; ``--allow-large`` lifts the
#: limit, never the check that the work can finish.
MAX_SECONDS_EVEN_LARGE = 365 * 86400.0


def check_time(scenario: Scenario, seconds: float, field: str) -> None:
    """Refuse a scenario whose estimated wall time exceeds :func:`time_limit`, naming
    the field that dominates it (a run that would not finish is an error now, not a
    silent hang later). ``--allow-large`` lifts it up to :data:`MAX_SECONDS_EVEN_LARGE`
    (an infinite or absurd estimate is refused whatever the flags)."""
    if not (math.isfinite(seconds) and seconds <= MAX_SECONDS_EVEN_LARGE):
        raise FieldError(
            field,
            f"protocol {scenario.protocol!r} would take about {format_seconds(seconds)} to run "
            f"(an estimate), more than {format_seconds(MAX_SECONDS_EVEN_LARGE)}: it would not "
            "finish, and --allow-large does not lift this",
            f"lower {field}",
        )
    limit = time_limit()
    if (not math.isfinite(seconds) or seconds > limit) and not allow_large():
        raise FieldError(
            field,
            f"protocol {scenario.protocol!r} would take about {format_seconds(seconds)} to run "
            f"(an estimate), more than the limit of {format_seconds(limit)}",
            f"lower {field}, or raise the limit with --max-time or {MAX_TIME_ENV} (e.g. 3d), "
            "or pass --allow-large to run it anyway",
        )


def check_footprint(scenario: Scenario, estimate: Any) -> None:
    """Refuse a scenario whose estimated peak memory (an int, or a
    :class:`~privsim.kit.spec.Footprint` naming the dominant field and the formula)
    exceeds :func:`memory_limit`."""
    if isinstance(estimate, tuple):
        nbytes, field, formula = (*estimate, "")[:3]
        seconds = float(getattr(estimate, "seconds", 0.0))
        slow_field = getattr(estimate, "slow_field", "") or field
    else:
        nbytes, field, formula = estimate, "population.clients", ""
        seconds, slow_field = 0.0, field
    limit = memory_limit()
    if nbytes <= limit:
        check_time(scenario, seconds, str(slow_field))
        return
    how = f" ({formula})" if formula else ""
    raise FieldError(
        str(field),
        f"protocol {scenario.protocol!r} would need about {format_bytes(nbytes)} of memory{how}, "
        f"more than the limit of {format_bytes(limit)}{_also_too_long(seconds)}",
        f"lower {field}, or raise the limit with --max-memory or {MAX_MEMORY_ENV} "
        "(e.g. 32GiB) if the machine has it",
    )


def _also_too_long(seconds: float) -> str:
    """The time estimate, said beside a refusal for memory when it would refuse too."""
    if not (math.isfinite(seconds) and seconds <= MAX_SECONDS_EVEN_LARGE):
        return (
            f"; and it would take about {format_seconds(seconds)} to run (an estimate), more "
            f"than {format_seconds(MAX_SECONDS_EVEN_LARGE)}: it would not finish, and "
            "--allow-large does not lift this"
        )
    if seconds > time_limit() and not allow_large():
        return (
            f"; and it would take about {format_seconds(seconds)} to run (an estimate), more "
            f"than the limit of {format_seconds(time_limit())}"
        )
    return ""


#: Longest delay, time or window accepted, in seconds (about 30 years of simulated time).
MAX_SECONDS = 1e9
#: Largest lognormal sigma accepted: its mean median·e^(σ²/2) must stay a float.
MAX_LOGNORMAL_SIGMA = 20.0
#: Slowest link accepted, in bytes per second (a message must arrive in finite time).
MIN_BANDWIDTH = 1e-3


def _check_link(path: str, latency: Any, bandwidth: float | None) -> None:
    if latency is not None and dataclasses.is_dataclass(latency):
        for f in dataclasses.fields(latency):
            value = getattr(latency, f.name)
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                if isinstance(v, int | float) and not abs(v) <= MAX_SECONDS:
                    raise FieldError(
                        f"{path}.latency.{f.name}",
                        f"{v!r} seconds is beyond {MAX_SECONDS:g} s",
                        "give a delay in seconds, e.g. 0.05",
                    )
        sigma = getattr(latency, "sigma", None)
        if isinstance(sigma, float) and sigma > MAX_LOGNORMAL_SIGMA:
            raise FieldError(
                f"{path}.latency.sigma",
                f"{sigma!r} is beyond {MAX_LOGNORMAL_SIGMA:g}: the delays would overflow",
                "give a spread such as 0.5 (a tail of e^σ per standard deviation)",
            )
    if bandwidth is not None and bandwidth < MIN_BANDWIDTH:
        raise FieldError(
            f"{path}.bandwidth",
            f"{bandwidth!r} bytes/s is below {MIN_BANDWIDTH:g}: no message would arrive",
            "give bytes per second, e.g. 1.25e6",
        )


def check_numbers(scenario: Scenario) -> None:
    """Common numbers the engine cannot use: infinite or absurd times, delays, spreads,
    bandwidths and slowdowns."""
    net = scenario.network
    _check_link("network.link", net.link.latency, net.link.bandwidth)
    for i, override in enumerate(net.overrides):
        _check_link(f"network.overrides[{i}]", override.latency, override.bandwidth)
    faults = scenario.faults
    for i, t in enumerate(faults.crash_window):
        if not abs(t) <= MAX_SECONDS:
            raise FieldError(
                f"faults.crash_window[{i}]",
                f"must be a time of at most {MAX_SECONDS:g} seconds, got {t!r}",
                "give a window such as [0.0, 1.0]; parties that never crash need no window",
            )
    for i, (party, t) in enumerate(faults.crashes):
        if not abs(t) <= MAX_SECONDS:
            raise FieldError(
                f"faults.crashes[{i}]",
                f"crash time of {_short(party)} must be at most {MAX_SECONDS:g} s, got {t!r}",
                "give a time in seconds, or leave the party out",
            )
    if not faults.straggler_slowdown <= MAX_SECONDS:
        raise FieldError(
            "faults.straggler_slowdown",
            f"must be at most {MAX_SECONDS:g}, got {faults.straggler_slowdown!r}",
            "give a factor >= 1, e.g. 20",
        )


def _describe(parties: Mapping[str, Sequence[str]]) -> str:
    parts = []
    for role, ids in parties.items():
        if len(ids) == 0:
            continue
        if len(ids) <= 3:
            shown = ", ".join(ids)
        else:
            shown = f"{ids[0]} … {ids[len(ids) - 1]}"
        parts.append(f"{role}: {shown}")
    return "; ".join(parts) or "none"


def check_parties(scenario: Scenario, parties: Mapping[str, Sequence[str]]) -> None:
    """Every party id and role the scenario names must be one the protocol creates
    (``parties``: role -> ids): the coalition, the star's centre, the edges, the link
    overrides' ends and the faults' roles and parties."""
    protocol = scenario.protocol

    def known(party: str) -> bool:
        return any(party in ids for ids in parties.values())

    def require(field: str, ids: Iterable[str]) -> None:
        for party in ids:
            if not known(party):
                raise FieldError(
                    field,
                    f"protocol {protocol!r} has no party {_short(party)}",
                    f"name parties among {_describe(parties)}",
                )

    threat = scenario.threat
    require("threat.colluding_servers", threat.colluding_servers)
    clients = threat.colluding_clients
    if isinstance(clients, int):
        available = len(parties.get("client", ()))
        if clients > available:
            raise FieldError(
                "threat.colluding_clients",
                f"{clients} colluding clients drawn from the {available} clients of "
                f"protocol {protocol!r}",
                f"use at most {available}, or name the colluding parties "
                "(threat.colluding_servers)",
            )
    else:
        require("threat.colluding_clients", clients)
    net = scenario.network
    if net.star_center:
        require("network.star_center", [net.star_center])
    for i, edge in enumerate(net.edges):
        require(f"network.edges[{i}]", edge)
    for i, override in enumerate(net.overrides):
        for end in ("source", "target"):
            name = getattr(override, end)
            if name != "*" and name not in parties and not known(name):
                raise FieldError(
                    f"network.overrides[{i}].{end}",
                    f"protocol {protocol!r} has no role or party {_short(name)}",
                    f'name a role {sorted(parties)}, a party ({_describe(parties)}) or "*"',
                )
    faults = scenario.faults
    active = faults.absent > 0 or faults.crash > 0 or faults.straggler_fraction > 0
    if active or tuple(faults.roles) != ("client",):
        unknown = [r for r in faults.roles if r not in parties]
        if unknown:
            raise FieldError(
                "faults.roles",
                f"protocol {protocol!r} has no role {_short(unknown[0])}",
                f"use roles among {sorted(parties)}",
            )
    require("faults.absent_parties", faults.absent_parties)
    require("faults.crashes", (party for party, _ in faults.crashes))


def _short(text: str, limit: int = 40) -> str:
    """A user's string quoted, shortened to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "…")
