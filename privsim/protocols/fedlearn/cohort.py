"""Who takes part in a round: the server's sample of the population, and which picked
clients are online. Both cost O(cohort), never O(population)."""

from __future__ import annotations

import csv
import functools
import io
import math
import os
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from privsim.inputs import (
    MAX_DATA_BYTES,
    MAX_DATA_ENV,
    InputFileError,
    input_limit,
    read_input_bytes,
)
from privsim.limits import ALLOW_LARGE_ENV, allow_large
from privsim.protocols.fedlearn.config import AvailabilityConfig, TrainingConfig
from privsim.scenarios.checks import MAX_MEMORY_ENV, format_bytes, memory_limit
from privsim.scenarios.errors import FieldError

__all__ = [
    "MAX_TRACE_WINDOWS",
    "Availability",
    "load_trace",
    "planned_cohort",
    "sample_cohort",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def planned_cohort(training: TrainingConfig, population: int) -> float:
    """The cohort size the noise and the server's average are planned for: q·N with
    Poisson sampling (its expectation), m with a fixed-size cohort."""
    if training.sampling == "poisson":
        return training.rate * population
    return float(training.cohort)


def sample_cohort(training: TrainingConfig, population: int, rng: np.random.Generator) -> I64:
    """The round's picked clients, sorted. Poisson sampling: K ~ Binomial(N, q), then K
    distinct clients uniformly (the same law as N independent coins of bias q);
    fixed size: m distinct clients. ``Generator.choice`` without replacement draws k of
    N in O(k) time for k ≪ N."""
    if training.sampling == "poisson":
        k = int(rng.binomial(population, training.rate))
    else:
        k = training.cohort
    picked = rng.choice(population, size=k, replace=False) if k else np.empty(0, np.int64)
    return np.sort(np.asarray(picked, dtype=np.int64))


#: The most windows (rows) a trace may hold unless ``--allow-large`` is given: parsed at
#: about 6 s a million rows on the reference machine (measured 6.1 s for 10⁶ rows, 14.5 MB),
#: where the data size limit alone would let 18·10⁶ rows (256 MiB) take two minutes.
MAX_TRACE_WINDOWS = 1_000_000
#: Memory a trace's window takes while it is read and kept (its parsed fields, the
#: per-client arrays and the decoded text): the estimate checked against --max-memory,
#: which ``--allow-large`` does not lift.
TRACE_BYTES_PER_WINDOW = 200
#: The longest client field read as an index (client-i): 19 digits hold any int64.
_MAX_INDEX_DIGITS = 19


@dataclass(frozen=True, slots=True)
class Availability:
    """Which picked clients are online in round r: ``always``; ``bernoulli`` with
    probability p each round; or ``trace``, client i online when the round's start
    r·``round_seconds`` (mod ``period``) lies in one of its windows. A window [start,
    end) with start in the period may run past its end: it wraps around, covering
    [start, period) and then [0, end − period) of the next. A client the trace does not
    list is never online. ``windows`` holds each listed client's window starts and ends
    as two arrays (a round looks them up in one array operation per picked client, however
    many windows a client has)."""

    config: AvailabilityConfig
    windows: Mapping[int, tuple[F64, F64]]

    @classmethod
    def of(cls, config: AvailabilityConfig, population: int) -> Availability:
        if config.model != "trace":
            return cls(config, {})
        clients, lo, hi = _trace_arrays(Path(config.trace), population)
        # a window of a whole period written in decimals may come out a few ulps longer
        slack = 4 * np.spacing(np.maximum(np.abs(hi), config.period))
        longest = config.period + slack
        bad = np.flatnonzero(~((lo >= 0.0) & (lo < config.period) & (hi - lo <= longest)))
        if bad.size:
            i = int(bad[0])
            raise FieldError(
                "availability.trace",
                f"client-{int(clients[i])}'s window [{lo[i]:g}, {hi[i]:g}) does not start "
                f"within the period [0, {config.period:g}) or is longer than it",
                "give start in [0, availability.period) and end − start at most the "
                "period (a window past the period's end wraps around to the next)",
            )
        return cls(config, _by_client(clients, lo, hi))

    def online(
        self, clients: I64, round_index: int, rng: np.random.Generator
    ) -> npt.NDArray[np.bool_]:
        """A mask over ``clients``: who is online this round."""
        cfg = self.config
        if cfg.model == "always":
            return np.ones(clients.size, dtype=bool)
        if cfg.model == "bernoulli":
            return rng.random(clients.size) < cfg.probability
        clock = math.fmod(round_index * cfg.round_seconds, cfg.period)
        later = clock + cfg.period  # the same instant in a window that wrapped around
        out = np.zeros(clients.size, dtype=bool)
        for i, c in enumerate(clients.tolist()):
            spans = self.windows.get(int(c))
            if spans is not None:
                lo, hi = spans
                out[i] = bool(
                    np.any(((lo <= clock) & (clock < hi)) | ((lo <= later) & (later < hi)))
                )
        return out


def _by_client(clients: I64, lo: F64, hi: F64) -> dict[int, tuple[F64, F64]]:
    """Each client's window starts and ends, in the trace's order."""
    order = np.argsort(clients, kind="stable")
    clients, lo, hi = clients[order], lo[order], hi[order]
    keys, first = np.unique(clients, return_index=True)
    bounds = [*first.tolist(), clients.size]
    return {
        int(c): (lo[a:b], hi[a:b])
        for c, a, b in zip(keys.tolist(), bounds[:-1], bounds[1:], strict=True)
    }


def _client_index(text: str, population: int, where: str) -> int:
    raw = text.strip()
    tail = raw.removeprefix("client-")
    # ASCII digits only ('²' and '١' are digits to str.isdigit), and no more than an
    # index can have: int() of thousands of digits is refused (or slow)
    if not (
        tail.isascii()
        and tail.isdigit()
        and len(tail) <= _MAX_INDEX_DIGITS
        and int(tail) < population
    ):
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise FieldError(
            "availability.trace",
            f"{where}: client {shown!r} is not one of client-0 … client-{population - 1}",
            "name clients by their index (0 … N−1) or id (client-i), within population.clients",
        )
    return int(tail)


def load_trace(path: Path, population: int) -> dict[int, tuple[tuple[float, float], ...]]:
    """A trace CSV with a header ``client,start,end``: one online window [start, end) per
    row, in seconds of the trace's period; a client may have several rows."""
    clients, lo, hi = _trace_arrays(path, population)
    found: dict[int, list[tuple[float, float]]] = {}
    for c, a, b in zip(clients.tolist(), lo.tolist(), hi.tolist(), strict=True):
        found.setdefault(c, []).append((a, b))
    return {c: tuple(w) for c, w in found.items()}


def _trace_arrays(path: Path, population: int) -> tuple[I64, F64, F64]:
    """The trace's rows as arrays (client index, start, end), read once per file version
    and population (a study's cells and a run's validation share them; read-only)."""
    try:
        info = os.stat(path)
        stamp: tuple[int, ...] | None = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    except (OSError, ValueError):  # missing, or not a path: named by the read
        stamp = None
    if stamp is None:
        return _read_trace(path, population)
    limits = (allow_large(), memory_limit(), input_limit(MAX_DATA_BYTES, MAX_DATA_ENV))
    return _cached_trace(str(path), population, stamp, limits)


@functools.lru_cache(maxsize=4)
def _cached_trace(
    path: str, population: int, stamp: tuple[int, ...], limits: tuple[object, ...]
) -> tuple[I64, F64, F64]:
    arrays = _read_trace(Path(path), population)
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _read_trace(path: Path, population: int) -> tuple[I64, F64, F64]:
    if not path.is_file():
        raise FieldError(
            "availability.trace", f"no file {_short(str(path))!r}", "give the path of the trace CSV"
        )
    try:  # the guarded reader: a regular file within the data size limit
        data = read_input_bytes(
            path,
            "availability trace",
            limit=input_limit(MAX_DATA_BYTES, MAX_DATA_ENV),
            env=MAX_DATA_ENV,
        )
        text = data.decode("utf-8-sig")  # a spreadsheet's byte-order mark is no column
    except InputFileError as exc:
        raise FieldError("availability.trace", exc.problem, exc.fix) from None
    except UnicodeDecodeError as exc:
        raise FieldError(
            "availability.trace",
            f"{path.name} is not UTF-8 text (undecodable byte at offset {exc.start})",
            "save the trace as a UTF-8 CSV",
        ) from None
    _check_rows(path, max(data.count(b"\n"), data.count(b"\r")))
    del data
    try:
        return _windows(csv.DictReader(io.StringIO(text, newline="")), path, population)
    except csv.Error as exc:  # a field past csv's limit (128 kB), a NUL byte
        raise FieldError(
            "availability.trace",
            f"{path.name} is not a CSV privsim can read: {exc}",
            "give a plain CSV of short fields: client,start,end",
        ) from None


def _check_rows(path: Path, rows: int) -> None:
    """At most :data:`MAX_TRACE_WINDOWS` rows (``--allow-large`` lifts it), and never
    more than the memory limit holds."""
    need, limit = rows * TRACE_BYTES_PER_WINDOW, memory_limit()
    if need > limit:
        raise FieldError(
            "availability.trace",
            f"{path.name} has about {rows:,} rows, which would need about "
            f"{format_bytes(need)} of memory, more than the limit of {format_bytes(limit)}",
            f"give a shorter trace, or raise the limit with --max-memory or {MAX_MEMORY_ENV}",
        )
    if rows > MAX_TRACE_WINDOWS and not allow_large():
        raise FieldError(
            "availability.trace",
            f"{path.name} has about {rows:,} rows, more than the limit of "
            f"{MAX_TRACE_WINDOWS:,} windows (read at about 6 s a million)",
            "merge each client's windows, or pass --allow-large (allow_large=True in Python, "
            f"{ALLOW_LARGE_ENV}=1) to read it anyway",
        )


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _windows(reader: csv.DictReader[str], path: Path, population: int) -> tuple[I64, F64, F64]:
    """The windows of each client, read from the trace's rows, as arrays (client index,
    start, end)."""
    clients, starts, ends = array("q"), array("d"), array("d")
    missing = {"client", "start", "end"} - set(reader.fieldnames or ())
    if missing:
        raise FieldError(
            "availability.trace",
            f"{path.name} lacks the column(s) {sorted(missing)}",
            "give a header row client,start,end",
        )
    for line, row in enumerate(reader, start=2):
        where = f"{path.name} line {line}"
        client = _client_index(row["client"] or "", population, where)
        try:
            lo, hi = float(row["start"]), float(row["end"])
        except (TypeError, ValueError):
            raise FieldError(
                "availability.trace",
                f"{where}: start and end must be numbers, got {_short(repr(row['start']), 60)}, "
                f"{_short(repr(row['end']), 60)}",
                "give each window's start and end in seconds",
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise FieldError(
                "availability.trace",
                f"{where}: the window [{lo}, {hi}) is empty or not finite",
                "give start < end",
            )
        clients.append(client)
        starts.append(lo)
        ends.append(hi)
    return (
        np.frombuffer(clients, dtype=np.int64).copy(),
        np.frombuffer(starts, dtype=np.float64).copy(),
        np.frombuffer(ends, dtype=np.float64).copy(),
    )
