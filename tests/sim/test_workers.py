"""Worker processes: results independent of the number of workers, a failed task named
with its traceback, no worker left once the work is done or abandoned."""

from __future__ import annotations

import math
import os

import pytest

from privsim.sim import workers


def _children() -> set[int]:
    path = f"/proc/{os.getpid()}/task/{os.getpid()}/children"
    if not os.path.exists(path):  # pragma: no cover - not Linux
        pytest.skip("needs /proc to list child processes")
    with open(path) as f:
        return {int(p) for p in f.read().split()}


def test_results_are_the_same_on_one_or_two_workers():
    tasks = list(range(1, 40))
    before = _children()
    workers.WorkerUsage.cpu_seconds = ()  # no earlier pool's figures
    inline = sorted(workers.map_unordered(math.factorial, tasks, 1))
    pooled = sorted(workers.map_unordered(math.factorial, tasks, 2))
    assert pooled == inline == [math.factorial(t) for t in tasks]
    assert len(workers.WorkerUsage.cpu_seconds) == 2
    assert _children() <= before  # both workers were stopped and reaped


def test_a_failed_task_raises_with_its_traceback_and_stops_the_workers():
    before = _children()
    with pytest.raises(RuntimeError, match=r"worker process failed(.|\n)*ValueError"):
        list(workers.map_unordered(math.sqrt, [4.0, -1.0, 9.0], 2))
    assert _children() <= before


def test_abandoning_the_results_stops_the_workers():
    before = _children()
    results = workers.map_unordered(math.factorial, [10, 20, 30, 40], 2)
    next(results)
    results.close()  # the consumer stops early (as on Ctrl-C)
    assert _children() <= before
