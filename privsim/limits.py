"""Limits on the work a command starts, and the one parser of numeric environment variables.

Every command estimates its work before it starts and refuses work past a limit with a
:class:`WorkLimitError` that gives the estimate, the limit and how to go ahead anyway:
``--allow-large`` on every command that does work, :func:`allowing_large` (or
``allow_large=True``) in the Python API, or ``PRIVSIM_ALLOW_LARGE=1`` in the environment
(which the processes a command starts inherit). The estimates:

- a run: the protocol's footprint (memory and wall time; ``--max-memory``,
  ``--max-time``), and no list in a scenario longer than :data:`MAX_LIST_ITEMS`;
- a study: at most :data:`MAX_CELLS` grid cells, each validated before the sweep starts,
  and ``PRIVSIM_MAX_TASKS`` tasks (cells × replications);
- an audit: its trials' memory (:data:`AUDIT_BYTES_PER_TRIAL`) and wall time (a short
  pilot of the plan's own trials, or the footprint for ``--full-runs``), against the
  same memory and time limits as a run.

Each size limit is set where the work before the first result was measured to take
seconds on the reference machine (2 cores shared with other jobs); the measurements are
beside each constant. ``--allow-large`` lifts every limit but memory, which is a fact of
the machine (``--max-memory`` raises it).

Environment variables holding numbers are read by :func:`env_value` (with a parser such
as :func:`parse_count`): a value that is not finite, not whole where a count is needed,
or negative is an :class:`EnvError` naming the variable, never a traceback.
"""

from __future__ import annotations

import decimal
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = [
    "ALLOW_LARGE_ENV",
    "AUDIT_BYTES_PER_TRIAL",
    "MAX_CELLS",
    "MAX_LIST_ITEMS",
    "WORKERS_PER_CORE",
    "EnvError",
    "WorkLimitError",
    "allow_large",
    "allowing_large",
    "env_value",
    "list_limit",
    "parse_count",
    "usable_cores",
]

T = TypeVar("T")

#: Environment variable that lifts the work limits (``--allow-large`` sets it).
ALLOW_LARGE_ENV = "PRIVSIM_ALLOW_LARGE"

#: The longest list a scenario may hold (colluding clients, absent parties, crashes,
#: edges, features ...). Measured here: a list of 10⁴ party ids parses and validates in
#: 0.2 s, 10⁵ in 1.1 s and 4·10⁶ (a 50 MB file) past 60 s; a table that checks its
#: columns for repeats pairwise takes 2.5 s at 10⁴ columns and 250 s at 10⁵. Longer
#: coalitions are written as a count (``colluding_clients = 50000``, drawn at random).
MAX_LIST_ITEMS = 10_000

#: The most grid cells a study may have: every cell is built and validated as a full
#: scenario before the sweep starts, about 1.5 ms each here (quickstart, ε varying;
#: measured 2.2 s for 10³ cells and 15 s for 10⁴, so 10⁶ would take 25 minutes before
#: the first row).
MAX_CELLS = 10_000

#: Peak memory of an audit per trial on each side: the two samples of statistics, the
#: halves, the pooled selection and its sorted copies (measured: 258 MB more at 8·10⁶
#: trials per side than at 10³, 32 bytes per trial; rounded up).
AUDIT_BYTES_PER_TRIAL = 48

#: Worker processes allowed per core. A worker is CPU-bound, so more than one per core
#: only competes; a few per core are still allowed (a deliberate oversubscription), but
#: a count far beyond (``--workers 1000000``) is a typo that would start that many
#: interpreters.
WORKERS_PER_CORE = 4

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


class EnvError(ValueError):
    """An environment variable whose value privsim cannot use; the message names the
    variable, its value (shortened) and the fix."""

    def __init__(self, name: str, text: str, what: str, problem: str, example: str) -> None:
        shown = text if len(text) <= 40 else text[:40] + "…"
        super().__init__(
            f"{name}={shown!r} is not {what} ({problem}); set it to e.g. {example}, or unset it"
        )
        self.name = name


class WorkLimitError(ValueError):
    """Work past a limit, refused before it starts: ``what`` would take ``estimate``
    where the limit is ``limit``; the message says how to lower it or go ahead."""

    def __init__(
        self, what: str, estimate: str, limit: str, lower: str, *, liftable: bool = True
    ) -> None:
        """``liftable``: whether ``--allow-large`` lifts this limit (not memory's)."""
        anyway = (
            f", or pass --allow-large (allow_large=True in Python, {ALLOW_LARGE_ENV}=1) to "
            "run it anyway"
            if liftable
            else ""
        )
        super().__init__(
            f"{what}: {estimate}, more than the limit of {limit}. Fix: {lower}{anyway}"
        )
        self.what = what


def parse_count(text: str, *, minimum: int = 0) -> int:
    """A whole number >= ``minimum`` written as ``12``, ``1e6`` or ``1_000``; a
    :class:`ValueError` saying why for anything else (``inf``, ``nan``, ``2.5``, ``-1``)."""
    try:
        value = decimal.Decimal(text.strip().replace("_", ""))
    except (decimal.InvalidOperation, ValueError):
        raise ValueError("not a number") from None
    if not value.is_finite():
        raise ValueError("not a finite number")
    if value != value.to_integral_value():
        raise ValueError("not a whole number")
    if value.adjusted() > 18:  # beyond any count privsim could use: no 400-digit ints
        raise ValueError("larger than 10^18")
    count = int(value)
    if count < minimum:
        raise ValueError(f"less than {minimum}")
    return count


def env_value(name: str, parse: Callable[[str], T], default: T, *, what: str, example: str) -> T:
    """The value of the environment variable ``name`` as ``parse`` reads it, or
    ``default`` when it is unset or blank; ``parse``'s :class:`ValueError` becomes an
    :class:`EnvError` naming the variable (``what``: "a worker count"; ``example``: a
    good value)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return parse(text)
    except (ValueError, ArithmeticError) as exc:
        raise EnvError(name, text, what, str(exc) or type(exc).__name__, example) from None


def _flag(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError("give 1 or 0")


def allow_large() -> bool:
    """Whether the work limits are lifted (``$PRIVSIM_ALLOW_LARGE``, ``--allow-large``)."""
    return env_value(ALLOW_LARGE_ENV, _flag, False, what="a switch", example="1")


@contextmanager
def allowing_large(allowed: bool = True) -> Iterator[None]:
    """Within the block, the work limits are lifted (as ``--allow-large`` does; memory
    aside): ``with allowing_large(): study = load_study(...)``. Processes started inside
    inherit it. ``allowed=False`` leaves the limits as they are."""
    if not allowed:
        yield
        return
    before = os.environ.get(ALLOW_LARGE_ENV)
    os.environ[ALLOW_LARGE_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ALLOW_LARGE_ENV, None)
        else:
            os.environ[ALLOW_LARGE_ENV] = before


def list_limit() -> int | None:
    """The longest list a scenario may hold (:data:`MAX_LIST_ITEMS`; None when lifted)."""
    return None if allow_large() else MAX_LIST_ITEMS


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
