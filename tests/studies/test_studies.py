"""Studies: grid validation, seeds, the resumable store, executors, report, replay."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privsim.cli import main
from privsim.studies import ResultStore, StudyError, executors, load, load_study
from privsim.studies.executors import SchedulerError
from privsim.studies.store import rows_without_timing
from privsim.studies.sweep import sweep

TINY_BASE = {
    "name": "tiny",
    "baseline": False,
    "population": {"clients": 30, "compute_nodes": 3},
    "data": {"dimension": 4},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "dca": {"tolerated": 4},
    "network": {"encryption": "none", "link": {"latency": {"model": "constant", "value": 0.01}}},
}


def _study_file(tmp_path: Path, grid: str, replications: int = 2, extra: str = "") -> Path:
    base = tmp_path / "base.toml"
    import tomli_w

    base.write_text(tomli_w.dumps(TINY_BASE))
    path = tmp_path / "study.toml"
    path.write_text(
        f'name = "t"\nseed = 3\nreplications = {replications}\nbase = "base.toml"\n{extra}\n[grid]\n{grid}\n'
    )
    return path


GRID = '"privacy.epsilon" = [0.5, 2.0]\n"protocol" = ["dca", "trusted_aggregator"]'


def test_tasks_have_stable_distinct_seeds(tmp_path):
    study = load_study(_study_file(tmp_path, GRID, replications=3))
    tasks = list(study.tasks())
    assert len(tasks) == 2 * 2 * 3
    assert len({t.seed for t in tasks}) == len(tasks) and len({t.row_id for t in tasks}) == len(
        tasks
    )
    again = list(load_study(_study_file(tmp_path, GRID, replications=3)).tasks())
    assert [(t.row_id, t.seed) for t in tasks] == [(t.row_id, t.seed) for t in again]
    # adding replications keeps the existing rows' ids and seeds
    more = {
        t.row_id: t.seed for t in load_study(_study_file(tmp_path, GRID, replications=5)).tasks()
    }
    assert all(more[t.row_id] == t.seed for t in tasks)


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ('"privacy.epsilom" = [1.0]', "not a scenario field"),
        ('"privacy.epsilon" = []', "no values"),
        ('"privacy.epsilon" = ["lots"]', "expected a number"),
        ('"population.clients" = [10, 3]', "dca.tolerated"),
        ('"privacy.epsilon" = 1.0', "must be a list"),
    ],
)
def test_bad_grids_fail_before_any_work(tmp_path, grid, words):
    with pytest.raises(StudyError, match=words):
        load_study(_study_file(tmp_path, grid))


def test_unreachable_scheduler_fails_before_work(tmp_path, monkeypatch):
    # Dask retries the refused connection until the timeout, then the same named error
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", "1s")
    study = load_study(_study_file(tmp_path, GRID))
    with pytest.raises(SchedulerError, match="cannot reach"):
        sweep(study, tmp_path / "out", scheduler="tcp://127.0.0.1:9", progress=None)
    assert not (tmp_path / "out" / "results.sqlite").exists()


def test_local_sweep_rows_resume_and_report(tmp_path):
    path = _study_file(tmp_path, GRID)
    out = tmp_path / "out"
    summary = sweep(load_study(path), out, workers=2, progress=None)
    assert (summary.total, summary.ran, summary.errors) == (8, 8, 0)
    again = sweep(load_study(path), out, workers=2, progress=None)
    assert (again.already_done, again.ran) == (8, 0)
    frame = load(out)
    assert len(frame) == 8 and frame["row_id"].is_unique
    for column in (
        "grid.privacy.epsilon",
        "grid.protocol",
        "seed",
        "accuracy.rmse",
        "privacy.achieved_epsilon",
        "communication.roles.client.bytes_sent_mean",
        "communication.duration",
        "timing.wall_seconds",
        "protocol",
        "status",
        "version",
    ):
        assert column in frame, column
    assert set(frame["status"]) == {"released"}
    # a smaller epsilon costs accuracy (8 vs 2 rows per protocol; noise ratio 4x)
    by_eps = frame.groupby("grid.privacy.epsilon")["accuracy.rmse"].median()
    assert by_eps[0.5] > by_eps[2.0]
    assert main(["report", str(out)]) == 0
    md = (out / "report" / "summary.md").read_text()
    assert "RMSE" in md and "| privacy.epsilon |" in md
    assert list((out / "report").glob("*.png"))


def test_replay_reproduces_a_row(tmp_path, capsys):
    path = _study_file(tmp_path, GRID, replications=1)
    out = tmp_path / "out"
    sweep(load_study(path), out, workers=1, progress=None)
    row_id = load(out)["row_id"].iloc[0]
    assert main(["replay", row_id, "--out", str(out)]) == 0
    assert "matches the stored row" in capsys.readouterr().out


def test_a_failing_replication_is_recorded_and_the_study_goes_on(tmp_path):
    # classic calibration at eps = 10, delta = 1e-4 under-noises: the ledger refuses the run.
    overrides = '[overrides]\n"privacy.epsilon" = 10.0\n"privacy.delta" = 1e-4\n'
    path = _study_file(
        tmp_path, '"privacy.calibration" = ["exact", "classic"]', replications=2, extra=overrides
    )
    summary = sweep(load_study(path), tmp_path / "out", workers=1, progress=None)
    frame = load(tmp_path / "out")
    assert summary.errors == 2 and len(frame) == 4
    errors = frame[frame["status"] == "error"]
    assert set(errors["grid.privacy.calibration"]) == {"classic"}
    assert errors["error"].str.contains("BudgetExceededError").all()


def test_over_budget_rows_are_counted_by_sweep_and_marked_in_the_report(tmp_path, capsys):
    # classic calibration at eps = 10, delta = 1e-4 delivers eps ≈ 10.6 (T = 0: the
    # honest clients carry exactly sigma_std): with on_overspend = "warn" the rows run
    # and every one of them is over its budget.
    overrides = (
        '[overrides]\n"privacy.epsilon" = 10.0\n"privacy.delta" = 1e-4\n'
        '"privacy.on_overspend" = "warn"\n"dca.tolerated" = 0\n'
    )
    path = _study_file(
        tmp_path, '"privacy.calibration" = ["exact", "classic"]', replications=2, extra=overrides
    )
    summary = sweep(load_study(path), tmp_path / "out", workers=1, progress=None)
    assert (summary.errors, summary.over_budget) == (0, 2)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "2 released rows do not meet their privacy guarantee" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "report" / "summary.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| privacy.calibration"))
    assert "over_budget" in header
    cells = [line for line in md.splitlines() if line.startswith("| classic |")]
    assert cells and all(line.split("|")[4].strip() == "2" for line in cells)  # 2 of 2 over
    exact = [line for line in md.splitlines() if line.startswith("| exact |")]
    assert exact and all(line.split("|")[4].strip() == "0" for line in exact)


def test_dask_local_cluster_gives_the_same_rows_as_the_process_pool(tmp_path):
    path = _study_file(tmp_path, GRID)
    sweep(load_study(path), tmp_path / "pool", workers=2, progress=None)
    sweep(load_study(path), tmp_path / "dask", scheduler="local", workers=2, progress=None)
    with ResultStore(tmp_path / "pool") as a, ResultStore(tmp_path / "dask") as b:
        assert rows_without_timing(a.rows()) == rows_without_timing(b.rows())


def stored_rows(out: Path) -> int:
    """How many rows the store in ``out`` holds, read without writing anything (a test
    polls a running sweep's store this way); 0 while the sweep has not created it. A store
    appears whole (schema and all) or not at all, so an existing file is always readable."""
    if not (out / "results.sqlite").exists():
        return 0
    with ResultStore(out, readonly=True) as store:
        return len(store)


def test_killed_sweep_resumes_without_losing_or_duplicating_rows(tmp_path):
    """kill -9 a running sweep (and its workers), start it again: the final table equals
    an uninterrupted run's."""
    path = _study_file(tmp_path, '"privacy.epsilon" = [0.5, 1.0, 2.0, 4.0]', replications=10)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "privsim", "sweep", str(path), "--out", str(out), "--workers", "1"]
    err = tmp_path / "sweep.stderr"  # a file, not a pipe: a full pipe would stall the sweep
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=stderr
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and stored_rows(out) < 5:
        time.sleep(0.05)
    if proc.poll() is None:  # else the sweep ended by itself: said below, with its stderr
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"sweep ended ({proc.returncode}): {err.read_text()}"
    partial = stored_rows(out)
    assert 5 <= partial < 40, "the kill must land mid-run"
    resumed = subprocess.run(cmd, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    full = tmp_path / "uninterrupted"
    sweep(load_study(path), full, workers=2, progress=None)
    with ResultStore(out) as a, ResultStore(full) as b:
        resumed, reference = a.rows(), b.rows()
    assert len(resumed) == 40 and len({r["row_id"] for r in resumed}) == 40
    assert rows_without_timing(resumed) == rows_without_timing(reference)


def test_study_directory_refuses_a_different_study(tmp_path):
    sweep(
        load_study(_study_file(tmp_path, GRID, replications=1)),
        tmp_path / "out",
        workers=1,
        progress=None,
    )
    with pytest.raises(StudyError, match="different study"):
        sweep(
            load_study(_study_file(tmp_path, '"privacy.epsilon" = [3.0]')),
            tmp_path / "out",
            progress=None,
        )
    assert json.loads((tmp_path / "out" / "study.json").read_text())["name"] == "t"


def _dies_once(base, task):
    """A run function whose worker process dies the first time it meets replication 1."""
    from privsim.studies.worker import run_task

    marker = Path(base["_marker"])
    if task.replication == 1 and not marker.exists():
        marker.write_text("died")
        os._exit(1)
    clean = {k: v for k, v in base.items() if k != "_marker"}
    return run_task(clean, task)


def test_a_worker_that_dies_mid_task_is_retried(tmp_path):
    from privsim.studies.executors import LocalExecutor

    study = load_study(_study_file(tmp_path, '"privacy.epsilon" = [1.0]', replications=3))
    base = {**study.base, "_marker": str(tmp_path / "marker")}
    rows = list(LocalExecutor(2).run(_dies_once, base, list(study.tasks())))
    assert (tmp_path / "marker").exists()  # a worker really died
    assert sorted(r["replication"] for r in rows) == [0, 1, 2]
    assert {r["status"] for r in rows} == {"released"}


def _always_dies_on_one(base, task):
    from privsim.studies.worker import run_task

    if task.replication == 0:
        os._exit(1)
    return run_task(base, task)


def test_a_task_that_always_kills_its_worker_fails_alone(tmp_path):
    from privsim.studies.executors import LocalExecutor

    study = load_study(_study_file(tmp_path, '"privacy.epsilon" = [1.0]', replications=4))
    rows = {
        r["replication"]: r
        for r in LocalExecutor(1).run(_always_dies_on_one, study.base, list(study.tasks()))
    }
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[0]["status"] == "error" and "died" in rows[0]["error"]
    assert all(rows[r]["status"] == "released" for r in (1, 2, 3))
