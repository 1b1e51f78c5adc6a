"""Worker processes: results independent of the number of workers, workers reused from
one pool to the next, a failed task named with its traceback, the workers killed once
the work fails or is abandoned, a task's module imported without its package's
``__init__``."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from privsim.sim import workers
from tests.processes import alive

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _pid(_: object) -> int:
    return os.getpid()


def _modules(prefix: str) -> list[str]:
    return sorted(m for m in sys.modules if m.startswith(prefix))


def test_results_are_the_same_on_one_or_two_workers():
    tasks = list(range(1, 40))
    workers.WorkerUsage.cpu_seconds = ()  # no earlier pool's figures
    inline = sorted(workers.map_unordered(math.factorial, tasks, 1))
    assert workers.WorkerUsage.cpu_seconds == ()  # one worker: in this process
    pooled = sorted(workers.map_unordered(math.factorial, tasks, 2))
    assert pooled == inline == [math.factorial(t) for t in tasks]
    # the tasks ran on the pool's workers (a worker that started first may take them all)
    assert 1 <= len(workers.WorkerUsage.cpu_seconds) <= 2


@linux_only
def test_a_finished_pool_leaves_its_workers_to_the_next():
    first = set(workers.map_unordered(_pid, range(20), 2))
    pids = workers.Pool.local(2).pids()
    assert len(pids) == 2 and first <= set(pids) and os.getpid() not in pids
    again = set(workers.map_unordered(_pid, range(20), 2))
    assert again <= set(pids)  # no new interpreters
    assert all(alive(p) for p in pids)


@linux_only
def test_a_failed_task_raises_with_its_traceback_and_kills_the_workers():
    pids = workers.Pool.local(2).pids()
    with pytest.raises(RuntimeError, match=r"worker process failed(.|\n)*ValueError"):
        list(workers.map_unordered(math.sqrt, [4.0, -1.0, 9.0], 2))
    assert not any(alive(p) for p in pids)
    assert sorted(workers.map_unordered(math.sqrt, [4.0, 9.0], 2)) == [2.0, 3.0]  # new ones


@linux_only
def test_abandoning_the_results_kills_the_workers():
    pids = workers.Pool.local(2).pids()
    results = workers.map_unordered(math.factorial, [10, 20, 30, 40], 2)
    next(results)
    results.close()  # the consumer stops early (as on Ctrl-C)
    assert not any(alive(p) for p in pids)


def test_a_closed_pool_takes_no_more_tasks():
    pool = workers.Pool.local(2)
    assert pool.submit(math.factorial, 5).result(timeout=60) == 120
    pool.close()
    with pytest.raises(RuntimeError, match="stopped"):
        pool.submit(math.factorial, 5).result(timeout=1)


def test_a_task_given_alone_is_imported_without_its_packages_init():
    from privsim.kit.secagg import bulk

    workers.Pool.local(1).close(abort=True)  # a fresh worker, no earlier task's imports
    pool = workers.Pool.local(1)
    try:
        secret = np.frombuffer(bytes(range(32)), np.uint8)[None]
        keys = pool.submit(workers.alone(bulk.public_keys), secret)
        assert keys.result(timeout=60).tobytes() == bulk.public_keys(secret).tobytes()
        loaded = pool.submit(_modules, "privsim.kit").result(timeout=60)
    finally:
        pool.close(abort=True)
    assert "privsim.kit.secagg.bulk" in loaded
    assert "privsim.kit.secagg" not in loaded  # nor the round machinery
    assert "privsim.kit.secagg.round" not in loaded


def _loaded_alone(name: str) -> list[str]:
    """In a worker: the modules loaded once ``name`` is imported as a task's module."""
    from privsim.sim import worker_task

    worker_task._import_alone(name)
    return sorted(sys.modules)


def _loaded_by_import(name: str) -> list[str]:
    """In a worker: the modules loaded once ``name`` is imported the usual way."""
    import importlib

    importlib.import_module(name)
    return sorted(sys.modules)


def test_a_tasks_module_loads_none_of_the_package_inits_it_meets():
    """A batched SecAgg round's shard tasks import the integer noise samplers: the
    samplers' package ``__init__`` (its accountant, and with it dp-accounting and SciPy)
    is not run in the worker, only the modules the task needs."""
    workers.Pool.local(1).close(abort=True)  # a fresh worker
    pool = workers.Pool.local(1)
    try:
        loaded = pool.submit(_loaded_alone, "privsim.kit.secagg.shard").result(timeout=60)
        later = pool.submit(_loaded_by_import, "privsim.kit.intnoise").result(timeout=60)
    finally:
        pool.close(abort=True)
    assert "privsim.kit.intnoise.samplers" in loaded
    assert "privsim.kit.intnoise" not in loaded
    assert not any(m.split(".")[0] in ("dp_accounting", "scipy", "pandas") for m in loaded)
    assert "privsim.kit.intnoise.accounting" in later  # a later import runs the __init__


def test_the_worker_count_is_checked(monkeypatch):
    monkeypatch.setenv(workers.ENV, "3")
    assert workers.workers() == 3
    for bad in ("two", "0", "100000"):
        monkeypatch.setenv(workers.ENV, bad)
        with pytest.raises(ValueError, match=workers.ENV):
            workers.workers()
