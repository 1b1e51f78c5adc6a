"""Attacks a coalition mounts on training (``threat.attack``, ``threat.poisoning``), each an
agent behaviour or a function of the coalition's view, scored against the truth the
simulation keeps, beside the ε the ledger reports for the same coalition.

The run calls an attack's :meth:`TrainingAttack.prepare` before a round (an active server
changes what it sends there) and :meth:`TrainingAttack.observe` after it, with the
round as the coalition saw it and the truth to score against (:class:`RoundView`);
:meth:`TrainingAttack.report` gives the result's ``attack`` section, whose
``success`` is the share of targeted client-rounds recovered (relative error under
:data:`RECOVERED`) and ``rounds_recovered`` the rounds in which one was.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "RECOVERED",
    "AttackContext",
    "Finding",
    "RoundTweaks",
    "RoundView",
    "TrainingAttack",
    "largest_of",
    "median_of",
    "relative_error",
    "share_recovered",
]

F64 = npt.NDArray[np.float64]

#: A target is recovered when the attack's estimate is within this relative L2 error.
RECOVERED = 1e-6


def relative_error(estimate: F64, truth: F64) -> float:
    """‖estimate − truth‖₂ / ‖truth‖₂ (∞ for no estimate; the absolute error when the
    truth is 0)."""
    if estimate is None:
        return float("inf")
    diff = float(np.linalg.norm(np.asarray(estimate, dtype=np.float64) - truth))
    scale = float(np.linalg.norm(truth))
    if not np.isfinite(diff):
        return float("inf")
    return diff / scale if scale > 0 else diff


def median_of(values: Sequence[float]) -> float | None:
    """The median of an attack's figures; None when there are none (no targeted
    round: a result holds no NaN)."""
    return float(statistics.median(values)) if values else None


def share_recovered(findings: Sequence[Finding]) -> float | None:
    """``success``: the share of the targeted client-rounds recovered; None when no
    client-round was targeted (the target never picked: nothing to score)."""
    if not findings:
        return None
    return sum(1 for f in findings if f.recovered) / len(findings)


def largest_of(values: Iterable[float]) -> float | None:
    """The largest of an attack's figures; None when there are none."""
    return max(values, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundTweaks:
    """What an active server changes in a round: ``params_for`` a client (the model it is
    sent instead of the round's), and ``isolate``, the client whose masked input the
    SecAgg server tries to open alone by reporting the other clients dropped."""

    params_for: Mapping[str, F64] = field(default_factory=dict)
    isolate: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundView:
    """One finished round as the attack sees it, with the truth kept apart to score it:
    ``names`` the picked real clients in cohort order, ``updates`` their true clipped
    updates (k, P; zero rows for offline clients), ``raw`` the unclipped ones when known,
    ``params`` the round's model, ``run`` the round's worlds and outcome
    (:class:`~privsim.protocols.fedlearn.rounds.RoundRun`; its names may end with
    canaries), ``plan`` the training plan, ``coalition`` the colluding parties,
    ``secure`` the SecAgg round plan (None otherwise), ``records`` each picked client's
    records (X, y) and ``tweaks`` what the attack changed in the round."""

    round: int
    names: tuple[str, ...]
    online: npt.NDArray[np.bool_]
    updates: F64
    params: F64
    run: Any
    plan: Any
    coalition: frozenset[str]
    secure: Any = None
    records: Mapping[str, tuple[F64, npt.NDArray[np.int64]]] = field(default_factory=dict)
    tweaks: RoundTweaks = field(default_factory=RoundTweaks)


@dataclass(frozen=True, slots=True, kw_only=True)
class AttackContext:
    """What an attack is built from, once per run: the ``scenario``, the run's
    ``streams`` (an attack draws from ``streams.generator("attack", ...)`` only), the
    ``learner`` (model and data: the truth to score against), the training ``plan``,
    the realised ``coalition`` and the ``target`` client (``threat.target``, or one
    drawn from the run's streams among the honest clients)."""

    scenario: Any
    streams: Any
    learner: Any
    plan: Any
    coalition: frozenset[str]
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One targeted client-round: its relative ``error`` and whether it was recovered."""

    round: int
    client: str
    error: float

    @property
    def recovered(self) -> bool:
        return self.error < RECOVERED


class TrainingAttack(Protocol):
    """An attack on training, selected by ``threat.attack``."""

    name: str

    def prepare(self, r: int, names: tuple[str, ...], params: F64) -> RoundTweaks:
        """Before round ``r`` (picked ``names``, model ``params``): what the server changes."""
        ...

    def observe(self, view: RoundView) -> list[Finding]:
        """After the round: the targeted client-rounds and their errors."""
        ...

    def report(self, findings: list[Finding], final_params: F64) -> dict[str, Any]:
        """The result's ``attack`` section: at least ``name``, ``success`` and
        ``rounds_recovered``."""
        ...
