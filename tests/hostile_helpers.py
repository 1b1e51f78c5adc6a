"""Helpers of the hostile-input tests (``test_hostile*.py``, ``cli/test_patterns.py``):
a hang turned into a failure."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


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
