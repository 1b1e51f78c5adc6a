"""`--workers` on `privsim sweep` and `privsim audit`: a count beyond what the machine can
use (more than 4 per core) or below 1 is refused, naming the option, the machine's cores
and the fix, before any process starts; no more local workers start than there are tasks.

No test here starts a worker process: a fake pool records how many it was asked for and
runs the tasks in this process."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, ClassVar

import pytest

from privsim.cli import EXIT_INVALID, main
from privsim.studies import executors
from privsim.studies.executors import (
    WORKERS_PER_CORE,
    DaskExecutor,
    LocalExecutor,
    WorkerCountError,
    check_workers,
    pool_size,
)
from privsim.studies.study import Task
from tests.cli.helpers import scenario_file, study_file

CORES = 2


class FakePool:
    """A ProcessPoolExecutor that starts no process: it records its size and runs each
    task at submission, in this process."""

    sizes: ClassVar[list[int]] = []

    def __init__(self, max_workers: int, **_: Any) -> None:
        FakePool.sizes.append(max_workers)

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


@pytest.fixture
def machine(monkeypatch):
    """A machine of CORES cores whose process pools are :class:`FakePool`."""
    monkeypatch.setattr(executors.os, "cpu_count", lambda: CORES)
    monkeypatch.setattr(executors, "ProcessPoolExecutor", FakePool)
    FakePool.sizes = []
    return FakePool


def _echo(base: dict[str, Any], task: Task) -> dict[str, Any]:
    return {"row_id": task.row_id, "status": "ok"}


def _tasks(n: int) -> list[Task]:
    return [Task(f"c-r{i}", "c", (), i, i) for i in range(n)]


def test_up_to_4_workers_per_core_are_allowed_and_more_refused(machine):
    limit = WORKERS_PER_CORE * CORES
    assert check_workers(None) is None and check_workers(1) == 1
    assert check_workers(limit) == limit
    with pytest.raises(WorkerCountError) as info:
        check_workers(limit + 1)
    assert str(info.value) == (
        f"--workers {limit + 1}: this machine has 2 cores, and more than {limit} worker "
        f"processes (4 per core) only compete for them; give --workers {limit} or fewer (one "
        "per core, 2, is usually fastest), or leave --workers out for one per core"
    )


@pytest.mark.parametrize("count", [0, -3, True, 2.5])
def test_a_worker_count_below_1_or_not_whole_is_refused(count, machine):
    with pytest.raises(WorkerCountError, match=r"--workers .*: a number of worker processes"):
        check_workers(count)


def test_pool_size_never_exceeds_the_tasks():
    assert pool_size(8, 3) == 3 and pool_size(2, 100) == 2
    assert pool_size(8, None) == 8 and pool_size(8, 0) == 1


def test_sweep_refuses_100000_workers_before_anything_starts(machine, tmp_path, capsys):
    study = study_file(tmp_path, replications=1)
    out = tmp_path / "out"
    argv = ["sweep", str(study), "--out", str(out), "--workers", "100000", "--replications", "1"]
    assert main(argv) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("privsim: error: --workers 100000: this machine has 2 cores")
    assert "give --workers 8 or fewer" in err
    assert machine.sizes == [] and not out.exists()  # no pool, no results directory


def test_sweep_refuses_0_workers(machine, tmp_path, capsys):
    study = study_file(tmp_path, replications=1)
    assert main(["sweep", str(study), "--out", str(tmp_path / "o"), "--workers", "0"]) == 2
    assert "--workers 0: a number of worker processes is a whole number >= 1" in (
        capsys.readouterr().err
    )


def test_audit_refuses_100000_workers(machine, tmp_path, capsys):
    path = scenario_file(tmp_path)
    argv = ["audit", str(path), "--trials", "8", "--workers", "100000", "--out", str(tmp_path)]
    assert main(argv) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("privsim: error: --workers 100000: this machine has 2 cores")
    assert "leave --workers out to run the trials in this process" in err
    assert machine.sizes == []


def test_a_local_pool_starts_no_more_workers_than_tasks(machine):
    rows = list(LocalExecutor(8).run(_echo, {}, _tasks(3)))
    assert len(rows) == 3 and machine.sizes == [3]
    assert list(LocalExecutor(8).run(_echo, {}, [])) == [] and machine.sizes == [3]


def test_a_sweep_of_two_tasks_starts_two_workers_of_the_eight_asked(machine, tmp_path, capsys):
    study = study_file(tmp_path, replications=1)  # ε in {0.5, 1}: 2 tasks
    out = tmp_path / "out"
    assert main(["sweep", str(study), "--out", str(out), "--workers", "8"]) == 0
    printed = capsys.readouterr().out
    assert "2 rows in" in printed and "2 run (0 errors)" in printed
    assert machine.sizes == [2]
    # resumed with nothing left to run: no pool at all
    assert main(["sweep", str(study), "--out", str(out), "--workers", "8"]) == 0
    assert machine.sizes == [2]


def test_a_local_dask_cluster_starts_no_more_workers_than_tasks(machine, monkeypatch):
    distributed = pytest.importorskip("distributed")
    asked: list[int] = []

    class Started(Exception):
        pass

    def cluster(n_workers: int, **_: Any) -> None:
        asked.append(n_workers)
        raise Started  # stop before anything starts

    monkeypatch.setattr(distributed, "LocalCluster", cluster)
    with pytest.raises(Started):
        DaskExecutor("local", 8, tasks=3)
    with pytest.raises(Started):
        DaskExecutor("local", None, tasks=100)
    assert asked == [3, CORES]
    with pytest.raises(WorkerCountError, match="--workers 100000"):
        DaskExecutor("local", 100000, tasks=3)
    assert asked == [3, CORES]
