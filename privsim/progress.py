"""Progress of long work on stderr, through rich: a bar for a sweep's rows, a spinner with
the elapsed time for a single long run.

Shown on a terminal; quiet when stderr is not one (a log, a pipe, a test) unless asked
(``show=True``, ``--progress``), in which case a plain line is written every
:data:`LOG_EVERY` seconds instead of a redrawn bar.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Literal, TextIO, TypeVar

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text

__all__ = ["LOG_EVERY", "RowBar", "mode", "track", "working"]

#: Seconds between two progress lines when stderr is not a terminal (``--progress``).
LOG_EVERY = 10.0

Mode = Literal["live", "log", "off"]
T = TypeVar("T")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def mode(stream: TextIO | None, show: bool | None = None) -> Mode:
    """``live`` (a redrawn bar) on a terminal, ``log`` (a line now and then) when asked
    for on anything else, ``off`` otherwise or when ``show`` is False."""
    if stream is None or show is False:
        return "off"
    if _is_terminal(stream):
        return "live"
    return "log" if show else "off"


def _clock(seconds: float) -> str:
    if seconds == float("inf") or seconds != seconds:
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _progress(stream: TextIO, *columns: object, transient: bool) -> Progress:
    from rich.console import Console
    from rich.progress import Progress

    return Progress(
        *columns,  # type: ignore[arg-type]
        console=Console(file=stream),
        transient=transient,
        redirect_stdout=False,
        redirect_stderr=False,
    )


class _Rate:
    """Rows per second, from rich's recent-speed estimate."""

    def __init__(self, unit: str) -> None:
        self.unit = unit

    def __call__(self, task: Task) -> Text:
        from rich.text import Text

        speed = task.speed
        return Text(f"{speed:.2f} {self.unit}/s" if speed else f"- {self.unit}/s", style="cyan")


class RowBar:
    """Progress of ``total`` items (``completed`` done before), with rate, elapsed and
    remaining time and the number of errors; a context manager."""

    def __init__(
        self,
        description: str,
        total: int,
        completed: int = 0,
        *,
        stream: TextIO | None,
        show: bool | None = None,
        unit: str = "rows",
    ) -> None:
        self.description, self.total, self.done = description, total, completed
        self.errors, self.unit = 0, unit
        self.stream = stream
        self.mode = mode(stream, show)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._started = time.monotonic()
        self._start_done = completed
        self._logged = 0.0

    def __enter__(self) -> RowBar:
        if self.mode == "live" and self.stream is not None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                ProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            rate = _Rate(self.unit)

            class RateColumn(ProgressColumn):
                def render(self, task: Task) -> Text:
                    return rate(task)

            self._progress = _progress(
                self.stream,
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                RateColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[errors]} errors"),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                self.description, total=self.total, completed=self.done, errors=0
            )
        return self

    def advance(self, error: bool = False) -> None:
        self.done += 1
        self.errors += int(error)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, errors=self.errors)
        elif self.mode == "log":
            now = time.monotonic()
            if now - self._logged >= LOG_EVERY or self.done == self.total:
                self._logged = now
                self._log(now)

    def _log(self, now: float) -> None:
        assert self.stream is not None
        ran = self.done - self._start_done
        rate = ran / max(now - self._started, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        self.stream.write(
            f"{self.description}: {self.done}/{self.total} {self.unit}, {rate:.2f}/s, "
            f"elapsed {_clock(now - self._started)}, ETA {_clock(left)}, {self.errors} errors\n"
        )
        self.stream.flush()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def working(
    description: str,
    *,
    stream: TextIO | None,
    show: bool | None = None,
    delay: float = 2.0,
) -> Iterator[None]:
    """A spinner with the elapsed time while the body runs, shown only once it has run
    ``delay`` seconds (a short run prints nothing); cleared when it ends."""
    how = mode(stream, show)
    if how == "off" or stream is None:
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def log() -> None:
        if done.wait(delay):
            return
        while True:
            stream.write(f"{description}: running, elapsed {_clock(time.monotonic() - started)}\n")
            stream.flush()
            if done.wait(LOG_EVERY):
                return

    def live() -> None:
        from rich.progress import ProgressColumn, SpinnerColumn, TextColumn
        from rich.text import Text

        class Elapsed(ProgressColumn):  # since the work began, not since the spinner
            def render(self, task: Task) -> Text:
                return Text(_clock(time.monotonic() - started), style="progress.elapsed")

        if done.wait(delay):
            return
        progress = _progress(
            stream, SpinnerColumn(), TextColumn("{task.description}"), Elapsed(), transient=True
        )
        progress.add_task(description, total=None)
        progress.start()
        done.wait()
        progress.stop()

    thread = threading.Thread(target=live if how == "live" else log, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=2.0)


def track(
    items: Iterable[T],
    description: str,
    total: int,
    *,
    stream: TextIO | None,
    show: bool | None = None,
    unit: str = "steps",
) -> Iterator[T]:
    """``items``, one at a time, with a :class:`RowBar` advancing as each is taken: the
    one-line way to give a script's loop (repetitions of a reproduction) its progress,
    e.g. ``for rep in track(range(reps), "Figure 3", reps, stream=sys.stderr)``."""
    with RowBar(description, total, stream=stream, show=show, unit=unit) as bar:
        for item in items:
            yield item
            bar.advance()
