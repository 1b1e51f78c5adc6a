"""Helpers of the hostile-input tests (``test_hostile*.py``, ``cli/test_patterns.py``):
a hang turned into a failure."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings


class Hang(BaseException):
    """No outcome in time (a BaseException, so no ``except Exception`` can swallow it)."""


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """A hang becomes a failure: :class:`Hang` after ``seconds`` (SIGALRM; pytest runs
    tests in the main thread)."""

    def _hang(signum: int, frame: Any) -> None:
        raise Hang(f"no outcome within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, _hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def hostile_settings(variable: str, examples: int) -> settings:
    """Hypothesis settings of a hostile suite: ``examples`` cases unless the environment
    ``variable`` says how many, derandomized (the same cases on every run), no example
    database, and no deadline (a hang is caught by :func:`deadline`; wall times vary
    between machines)."""
    return settings(
        max_examples=int(os.environ.get(variable, str(examples))),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
