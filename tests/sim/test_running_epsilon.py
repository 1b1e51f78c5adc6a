"""ε so far, one release at a time (:mod:`privsim.sim.running`): the same figure as
composing everything at once where the ledger's rules are exact (plain Gaussians,
RDP-composed releases), and for Poisson-sampled rounds at a fixed PLD interval never
below the ledger's figure and within the discretisation's pessimism of it."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from privsim.sim.events import pld_interval
from privsim.sim.ledger import epsilon_of
from privsim.sim.running import RunningEpsilon
from privsim.sim.sampling import Sampling

DELTA = 1e-5


def _curve(events: list[dp_accounting.DpEvent], neighbour: str, interval: float) -> list[float]:
    running = RunningEpsilon(DELTA, neighbour=neighbour, interval=interval)  # type: ignore[arg-type]
    out = []
    for event in events:
        running.add(event)
        out.append(running.epsilon)
    return out


def test_plain_gaussians_are_composed_exactly() -> None:
    events = [dp_accounting.GaussianDpEvent(z) for z in (1.0, 2.0, 3.0, 1.5)]
    curve = _curve(events, "add_remove", 1e-4)
    for r in range(1, len(events) + 1):
        assert curve[r - 1] == epsilon_of(events[:r], DELTA)


def test_rounds_sampled_without_replacement_match_the_ledger() -> None:
    """The ledger composes them as the running curve does (the smaller of the PLD of
    their dominating pairs and the RDP sum), at the same interval: the same figure."""
    sampling = Sampling.fixed(1000, 50, "server")
    events = [sampling.wrap(dp_accounting.GaussianDpEvent(z)) for z in (0.9, 1.0, 1.1)]
    curve = _curve(events, "replace_one", 1e-4)
    for r in range(1, 4):
        assert curve[r - 1] == pytest.approx(
            epsilon_of(events[:r], DELTA, neighbour="replace_one"), rel=1e-12
        )


def test_poisson_rounds_lie_at_or_above_the_ledger_and_close_to_it() -> None:
    """30 rounds with realised multipliers that differ (dropouts): the running figure at
    the interval for 30 distinct rounds is an upper bound like the ledger's, at most
    0.5% above it (the ledger's own interval at 30 distinct leaves is the same, so they
    differ only by the order of the compositions), and it never decreases."""
    zs = 1.2 * np.sqrt(np.linspace(0.6, 1.0, 30))
    events = [
        dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(float(z)))
        for z in zs
    ]
    interval = pld_interval([(e, 1) for e in events])
    curve = _curve(events, "add_remove", interval)
    assert curve == sorted(curve)
    final = epsilon_of(events, DELTA)
    assert final <= curve[-1] * (1 + 1e-9)
    assert curve[-1] <= final * 1.005


def test_nothing_released_and_non_private_releases() -> None:
    running = RunningEpsilon(DELTA, neighbour="add_remove", interval=1e-4)
    assert running.epsilon == 0.0
    running.add(dp_accounting.NoOpDpEvent())
    assert running.epsilon == 0.0
    running.add(dp_accounting.NonPrivateDpEvent())
    assert math.isinf(running.epsilon)
