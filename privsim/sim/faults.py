"""Fault models: parties absent from the start, crashes at random times, stragglers.

Faults are drawn once per run, before any behaviour starts, from streams named by
role and purpose, so the same parties fail whatever the protocol or the network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from privsim.sim.streams import Streams

__all__ = ["FaultPlan", "FaultSpec", "draw_faults"]


def _check_probability(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p}")


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultSpec:
    """What can go wrong with the parties of ``roles``.

    - ``absent``: probability that a party never starts (it was offline all along);
    - ``crash``: probability that a party crashes at a time uniform in ``crash_window``;
      from then on it does nothing, messages still in its uplink queue are lost, and
      whatever is sent to it is dropped;
    - ``straggler_fraction`` of parties are slowed by ``straggler_slowdown``: their
      sends take that many times longer (transmission and latency);
    - ``absent_parties`` / ``crashes`` name parties and times explicitly (tests, replays).
    """

    absent: float = 0.0
    """Probability that a party of ``roles`` never starts (offline all along)."""
    crash: float = 0.0
    """Probability that a party of ``roles`` crashes at a time uniform in ``crash_window``."""
    crash_window: tuple[float, float] = (0.0, 1.0)
    """The interval [start, end] of simulated seconds in which random crashes happen."""
    straggler_fraction: float = 0.0
    """Fraction of the parties of ``roles`` that are stragglers."""
    straggler_slowdown: float = 1.0
    """Factor by which a straggler's sends take longer (transmission and latency)."""
    roles: tuple[str, ...] = ("client",)
    """The roles the random faults apply to, e.g. ``["client"]`` or ``["client", "compute"]``."""
    absent_parties: tuple[str, ...] = ()
    """Parties absent from the start, by id (on top of the random ones)."""
    crashes: tuple[tuple[str, float], ...] = ()
    """Crashes at given times, as ``[party id, simulated seconds]`` pairs."""

    def __post_init__(self) -> None:
        _check_probability("absent", self.absent)
        _check_probability("crash", self.crash)
        _check_probability("straggler_fraction", self.straggler_fraction)
        lo, hi = self.crash_window
        if not 0.0 <= lo <= hi:
            raise ValueError(
                f"crash_window must satisfy 0 <= start <= end, got {self.crash_window}"
            )
        if not self.straggler_slowdown >= 1.0:
            raise ValueError(f"straggler_slowdown must be >= 1, got {self.straggler_slowdown}")
        for party, t in self.crashes:
            if t < 0:
                raise ValueError(f"crash time of {party} must be >= 0, got {t}")


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """The realised faults of one run."""

    absent: frozenset[str] = frozenset()
    crash_times: Mapping[str, float] = field(default_factory=dict)
    slowdown: Mapping[str, float] = field(default_factory=dict)


def _slows(spec: FaultSpec) -> bool:
    """Whether ``spec`` makes stragglers: some fraction of them, slowed down."""
    return spec.straggler_fraction > 0.0 and spec.straggler_slowdown > 1.0


def draw_faults(
    spec: FaultSpec, parties_by_role: Mapping[str, Sequence[str]], streams: Streams
) -> FaultPlan:
    """Draw the faults of every party of ``spec.roles``, vectorised per role and purpose."""
    absent: set[str] = set(spec.absent_parties)
    crash_times: dict[str, float] = {}
    slowdown: dict[str, float] = {}
    lo, hi = spec.crash_window
    for role in spec.roles:
        parties = parties_by_role.get(role, ())
        n = len(parties)
        if n == 0:
            continue
        # Each purpose has its own stream, started afresh, and a uniform in [0, 1) is
        # never below a probability of 0: a purpose with none is not drawn at all.
        is_absent = np.zeros(n, dtype=bool)
        if spec.absent:
            is_absent = streams.fresh("faults", role, "absent").random(n) < spec.absent
            for i in np.flatnonzero(is_absent).tolist():
                absent.add(parties[i])
        if spec.crash:
            is_crash = streams.fresh("faults", role, "crash").random(n) < spec.crash
            when = streams.fresh("faults", role, "crash-time").uniform(lo, hi, n)
            for i in np.flatnonzero(is_crash & ~is_absent).tolist():
                crash_times[parties[i]] = float(when[i])
        if _slows(spec):
            is_slow = streams.fresh("faults", role, "straggler").random(n) < spec.straggler_fraction
            for i in np.flatnonzero(is_slow).tolist():
                slowdown[parties[i]] = spec.straggler_slowdown
    for party, t in spec.crashes:
        crash_times[party] = float(t)
    return FaultPlan(frozenset(absent), crash_times, slowdown)
