"""Who takes part in a round: the server's sample of the population, and which picked
clients are online. Both cost O(cohort), never O(population)."""

from __future__ import annotations

import csv
import io
import math
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
from privsim.protocols.fedlearn.config import AvailabilityConfig, TrainingConfig
from privsim.scenarios.errors import FieldError

__all__ = ["Availability", "load_trace", "planned_cohort", "sample_cohort"]

I64 = npt.NDArray[np.int64]


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


@dataclass(frozen=True, slots=True)
class Availability:
    """Which picked clients are online in round r: ``always``; ``bernoulli`` with
    probability p each round; or ``trace``, client i online when the round's start
    r·``round_seconds`` (mod ``period``) lies in one of its windows. A window [start,
    end) with start in the period may run past its end: it wraps around, covering
    [start, period) and then [0, end − period) of the next. A client the trace does not
    list is never online."""

    config: AvailabilityConfig
    windows: Mapping[int, tuple[tuple[float, float], ...]]

    @classmethod
    def of(cls, config: AvailabilityConfig, population: int) -> Availability:
        if config.model != "trace":
            return cls(config, {})
        windows = load_trace(Path(config.trace), population)
        for client, spans in windows.items():
            for lo, hi in spans:
                if not (0.0 <= lo < config.period and hi - lo <= config.period):
                    raise FieldError(
                        "availability.trace",
                        f"client-{client}'s window [{lo:g}, {hi:g}) does not start within "
                        f"the period [0, {config.period:g}) or is longer than it",
                        "give start in [0, availability.period) and end − start at most the "
                        "period (a window past the period's end wraps around to the next)",
                    )
        return cls(config, windows)

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
        return np.array(
            [
                any(lo <= clock < hi or lo <= later < hi for lo, hi in self.windows.get(int(c), ()))
                for c in clients
            ],
            dtype=bool,
        )


def _client_index(text: str, population: int, where: str) -> int:
    raw = text.strip()
    tail = raw.removeprefix("client-")
    if not tail.isdigit() or int(tail) >= population:
        raise FieldError(
            "availability.trace",
            f"{where}: client {raw!r} is not one of client-0 … client-{population - 1}",
            "name clients by their index (0 … N−1) or id (client-i), within population.clients",
        )
    return int(tail)


def load_trace(path: Path, population: int) -> dict[int, tuple[tuple[float, float], ...]]:
    """A trace CSV with a header ``client,start,end``: one online window [start, end) per
    row, in seconds of the trace's period; a client may have several rows."""
    if not path.is_file():
        raise FieldError(
            "availability.trace", f"no file {str(path)!r}", "give the path of the trace CSV"
        )
    try:  # the guarded reader: a regular file within the data size limit
        data = read_input_bytes(
            path,
            "availability trace",
            limit=input_limit(MAX_DATA_BYTES, MAX_DATA_ENV),
            env=MAX_DATA_ENV,
        )
        text = data.decode("utf-8")
    except InputFileError as exc:
        raise FieldError("availability.trace", exc.problem, exc.fix) from None
    except UnicodeDecodeError as exc:
        raise FieldError(
            "availability.trace",
            f"{path.name} is not UTF-8 text (undecodable byte at offset {exc.start})",
            "save the trace as a UTF-8 CSV",
        ) from None
    try:
        return _windows(csv.DictReader(io.StringIO(text, newline="")), path, population)
    except csv.Error as exc:  # a field past csv's limit (128 kB), a NUL byte
        raise FieldError(
            "availability.trace",
            f"{path.name} is not a CSV privsim can read: {exc}",
            "give a plain CSV of short fields: client,start,end",
        ) from None


def _windows(
    reader: csv.DictReader[str], path: Path, population: int
) -> dict[int, tuple[tuple[float, float], ...]]:
    """The windows of each client, read from the trace's rows."""
    found: dict[int, list[tuple[float, float]]] = {}
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
                f"{where}: start and end must be numbers, got {row['start']!r}, {row['end']!r}",
                "give each window's start and end in seconds",
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise FieldError(
                "availability.trace",
                f"{where}: the window [{lo}, {hi}) is empty or not finite",
                "give start < end",
            )
        found.setdefault(client, []).append((lo, hi))
    return {c: tuple(w) for c, w in found.items()}
