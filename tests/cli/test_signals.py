"""Interrupts, pipes and orphans, with `privsim` as a real process: Ctrl-C keeps every
finished row (exit 130, one line, no traceback); `privsim run | head` ends cleanly;
worker processes end when their parent is killed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from privsim.sim import lifetime
from tests.cli.helpers import privsim_process, scenario_file, study_file

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

#: Replications of about a second each (8000 clients, each agreeing AES-GCM keys with 3
#: nodes in the sweep worker's own process), so a sweep is still running when the test
#: acts.
SLOW_CLIENTS = 8000
SLOW_BASE = {"network": {"encryption": "aes-gcm"}}


def _rows(out: Path) -> int:
    db = out / "results.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM rows").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not there yet
        return 0


def _wait(condition, what: str, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {limit} s for {what}")
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


@linux_only
def test_sigint_stops_a_sweep_keeping_every_finished_row(tmp_path):
    study = study_file(
        tmp_path,
        replications=6,
        clients=SLOW_CLIENTS,
        base_changes=SLOW_BASE,
        **{"privacy.epsilon": [1.0]},
    )
    out = tmp_path / "out"

    def sweep() -> subprocess.Popen[str]:
        return privsim_process(
            "sweep",
            str(study),
            "--out",
            str(out),
            "--workers",
            "1",
            cwd=tmp_path,
            stdout=subprocess.PIPE,
        )

    proc = sweep()
    _wait(lambda: _rows(out) >= 1 or proc.poll() is not None, "a first row")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    kept = _rows(out)
    assert 1 <= kept < 6
    lines = stderr.strip().splitlines()
    assert lines == [
        f"privsim: interrupted: {kept} of 6 rows are stored in {out}; run the same command to resume"
    ]
    assert stdout == ""
    # the same command resumes: only the missing rows run
    again = sweep()
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr
    assert f"6 rows in {out}: {kept} already there, {6 - kept} run" in stdout


def test_sigint_stops_a_run_with_one_line(tmp_path):
    # key agreement of 40,000 clients with 3 nodes (120,000 pairs at about 85 µs each) in
    # the run's own process: about 10 s on an idle machine, so the run is still going
    # when the 2 s line comes
    path = scenario_file(
        tmp_path,
        population={"clients": 40_000, "compute_nodes": 3},
        network={"encryption": "aes-gcm"},
    )
    proc = privsim_process(
        "run",
        str(path),
        "--out",
        "out",
        "--progress",
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        env={"PRIVSIM_ROUND_PROCESSES": "1"},
    )
    assert proc.stderr is not None
    # --progress off a terminal: a line once the run has taken 2 s (it takes far longer)
    assert "running test (dca, seed 11): running, elapsed" in proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.strip().splitlines()[-1] == "privsim: interrupted; no result file was written"
    assert "Traceback" not in stderr and stdout == ""
    assert not (tmp_path / "out").exists()


def test_a_closed_stdout_ends_run_cleanly_with_the_result_written(tmp_path):
    path = scenario_file(tmp_path)
    proc = privsim_process("run", str(path), "--out", "out", cwd=tmp_path, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # as `| head` does once it has its lines
    stderr = proc.stderr.read() if proc.stderr else ""
    proc.wait(timeout=120)
    assert proc.returncode == 141
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert len(list((tmp_path / "out").glob("test-*-seed11.json"))) == 1


def test_run_piped_into_head(tmp_path):
    path = scenario_file(tmp_path)
    done = subprocess.run(
        f"{sys.executable} -m privsim run {path} --out out | head -n 1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.startswith("privsim ") and len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


@linux_only
def test_workers_end_when_the_sweep_is_killed(tmp_path):
    study = study_file(
        tmp_path,
        replications=8,
        clients=SLOW_CLIENTS,
        base_changes=SLOW_BASE,
        **{"privacy.epsilon": [1.0]},
    )
    proc = privsim_process(
        "sweep",
        str(study),
        "--out",
        "out",
        "--workers",
        "2",
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    workers: list[int] = []

    def started() -> bool:
        workers[:] = _children(proc.pid)
        return len(workers) >= 2 or proc.poll() is not None

    _wait(started, "two worker processes")
    assert proc.poll() is None
    proc.kill()  # kill -9: the sweep has no chance to stop its workers itself
    proc.wait()
    _wait(lambda: not any(_alive(w) for w in workers), "the workers to end", limit=30)


def test_the_watchdog_fallback_ends_a_worker_whose_parent_changed(monkeypatch):
    ended = threading.Event()
    monkeypatch.setattr(lifetime, "WATCHDOG_EVERY", 0.01)
    lifetime.watch_parent(os.getppid() + 1_000_000, ended.set)  # as if re-parented
    assert ended.wait(10)
