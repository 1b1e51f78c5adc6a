"""A sweep killed (``kill -9``, workers and all) at any instant resumes: the store is created
atomically, so a kill leaves no ``results.sqlite`` or a whole one, never a file a resumed
sweep must refuse, and the temporary files of a killed creation never pile up."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from privsim.studies import ResultStore, load_study
from privsim.studies.store import (
    DB_NAME,
    LOCK_NAME,
    check_store,
    is_unstarted,
    rows_without_timing,
)
from privsim.studies.sweep import sweep
from tests.studies.test_studies import _study_file, stored_rows

GRID = '"privacy.epsilon" = [0.5, 1.0, 2.0, 4.0]'
REPLICATIONS = 32  # 128 rows of 15 to 30 ms each
#: Kill instants, seconds after the sweep took its directory lock (Python's start-up before
#: it, about a second, varies from machine to machine). Early: log-uniform over the first
#: 0.5 s, where the store is created (a few milliseconds after the lock) and the worker
#: starts. Late: uniform over a sweep's rows.
EARLY_KILLS, LATE_KILLS = 7, 5
SEED = 20240611


def _kill_instants() -> list[float]:
    """The early instants come first, in increasing order: each kill finds no store yet
    until one lands inside or after its creation."""
    rng = random.Random(SEED)
    log_early = sorted(rng.uniform(math.log(1e-4), math.log(0.5)) for _ in range(EARLY_KILLS))
    late = [rng.uniform(0.25, 0.75) for _ in range(LATE_KILLS)]
    return [math.exp(t) for t in log_early] + late


def _sweep_command(study: Path, out: Path) -> list[str]:
    out_and_workers = ["--out", str(out), "--workers", "1"]
    return [sys.executable, "-m", "privsim", "sweep", str(study), *out_and_workers]


#: A parent process that has done what ``privsim sweep STUDY`` does before it takes its
#: directory lock (import privsim, load and validate the study: some 4 s of start-up) and
#: then, for each JSON line ``[stderr path, script, *argv]`` on its stdin, forks a child
#: that runs ``script`` with ``sys.argv = ["-c", *argv]`` in a session of its own (as
#: ``start_new_session``), stdin and stdout on /dev/null and stderr to the file; it prints
#: the child's pid, then, once the child has ended, its exit status as Popen reports one.
#: So each killed sweep is a real process (killed with its workers by ``kill -9`` of its
#: group) that reaches its lock in milliseconds instead of a Python start-up; the sweeps
#: that must finish still run as ``python -m privsim``.
_FORK_SERVER = """
import atexit, json, os, sys, traceback
from privsim.cli import main
from privsim.studies import load_study
import privsim.studies.sweep

load_study(sys.argv[1])
for line in sys.stdin:
    err, script, *argv = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            sys.argv = ["-c", *argv]
            try:
                exec(compile(script, "<forked>", "exec"), {"__name__": "__main__"})
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
            except BaseException:
                traceback.print_exc()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""

#: What ``python -m privsim ARGS`` runs.
_PRIVSIM_MAIN = "import sys\nfrom privsim.cli import main\nsys.exit(main(sys.argv[1:]))\n"


class _ForkServer:
    """:data:`_FORK_SERVER` as a child process of the test."""

    def __init__(self, study: Path, directory: Path) -> None:
        self.directory = directory
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER, str(study)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.started = 0

    def start(self, script: str, *argv: str) -> _Forked:
        self.started += 1
        err = self.directory / f"forked-{self.started}.err"
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([str(err), script, *argv]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the fork server ended ({self.proc.wait()})")
        return _Forked(int(line), err, self.proc.stdout)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


class _Forked:
    """A child of the fork server, with what the tests use of a Popen: ``pid``,
    ``poll()``, ``returncode`` and ``communicate()`` (stderr)."""

    def __init__(self, pid: int, err: Path, status_from: Any) -> None:
        self.pid, self.err, self.returncode = pid, err, None
        self._ended = threading.Event()

        def read_status() -> None:
            self.returncode = int(status_from.readline())
            self._ended.set()

        threading.Thread(target=read_status, daemon=True).start()

    def poll(self) -> int | None:
        return self.returncode if self._ended.is_set() else None

    def communicate(self, timeout: float = 600) -> tuple[None, bytes]:
        if not self._ended.wait(timeout):
            raise AssertionError(f"the forked sweep (pid {self.pid}) still running")
        return None, self.err.read_bytes()


def _wait_for_lock(proc: subprocess.Popen[bytes] | _Forked, out: Path) -> bool:
    """Wait until ``proc`` holds the directory lock (``sweep.lock`` names its pid); False if
    it ended first."""
    lock, mine = out / LOCK_NAME, f"{proc.pid}\n"
    deadline = time.monotonic() + 120
    while proc.poll() is None:
        try:
            if lock.read_text() == mine:
                return True
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the sweep (pid {proc.pid}) never took {lock}")
        time.sleep(0.0005)
    return False


def _run_and_kill(server: _ForkServer, args: list[str], out: Path, after: float) -> str:
    """Start the sweep ``privsim ARGS`` (a child of ``server``, in a session of its own),
    SIGKILL its process group ``after`` seconds after it took the lock; what the kill left
    in ``out``."""
    proc = server.start(_PRIVSIM_MAIN, *args)
    if _wait_for_lock(proc, out):
        time.sleep(after)
        if proc.poll() is None:  # else it finished first: its group is gone
            os.killpg(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"the sweep failed ({proc.returncode}): {err.decode()}")
    return _state(out)


def _state(out: Path) -> str:
    """What is in ``out`` after a kill; a store there must open (else StoreError)."""
    temporary = sorted(p.name for p in out.glob(f".{DB_NAME}.*"))
    store = f"{stored_rows(out)} rows" if (out / DB_NAME).exists() else "no store"
    return f"{store}, temporary files {temporary}" if temporary else store


def test_a_sweep_killed_at_random_instants_resumes_to_the_uninterrupted_rows(tmp_path):
    """Kill the same sweep again and again, each time at an instant drawn from a fixed-seed
    RNG, and resume it with the same command after each kill: the store always opens, and
    the final rows are an uninterrupted sweep's (no row lost or duplicated)."""
    study = _study_file(tmp_path, GRID, replications=REPLICATIONS)
    out = tmp_path / "killed"
    cmd = _sweep_command(study, out)
    server = _ForkServer(study, tmp_path)
    try:
        # each sweep resumes what the kill before it left (a refused store fails it)
        landed = [_run_and_kill(server, cmd[3:], out, after) for after in _kill_instants()]
    finally:
        server.close()
    finished = subprocess.run(cmd, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert sorted(p.name for p in out.iterdir()) == [DB_NAME, "study.json", LOCK_NAME]
    full = tmp_path / "uninterrupted"
    sweep(load_study(study), full, workers=2, progress=None)
    with ResultStore(out, readonly=True) as a, ResultStore(full, readonly=True) as b:
        resumed, reference = a.rows(), b.rows()
    total = 4 * REPLICATIONS
    assert len(resumed) == total and len({r["row_id"] for r in resumed}) == total, landed
    assert rows_without_timing(resumed) == rows_without_timing(reference)


#: Run privsim's CLI, SIGKILLing itself at one step of creating the store (argv[1]).
_DIE_IN_CREATION = """
import os, signal, sqlite3, sys
from privsim.studies import store
from privsim.cli import main

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

def die_after(real):
    def wrapped(*args, **kwargs):
        real(*args, **kwargs)
        die()
    return wrapped

def connect_dying_in_schema(path, *args, **kwargs):
    db = real_connect(path, *args, **kwargs)
    if str(path).endswith(".tmp"):  # the store being built: die between its two tables
        db.set_trace_callback(lambda sql: "CREATE TABLE IF NOT EXISTS meta" in sql and die())
    return db

step = sys.argv[1]
real_connect = sqlite3.connect
if step == "in the schema":
    store.sqlite3.connect = connect_dying_in_schema
elif step == "built, not renamed":
    store._publish = die
elif step == "renamed, not tidied":
    store._link_new = die_after(store._link_new)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("step", ["in the schema", "built, not renamed", "renamed, not tidied"])
def test_a_sweep_killed_inside_store_creation_leaves_no_store_or_a_whole_one(tmp_path, step):
    """Killed at each step of creating its store, a sweep leaves no ``results.sqlite`` (only
    a temporary file, never read as a store) or a complete empty store; the next sweep
    deletes the temporary files and runs every row."""
    study = _study_file(tmp_path, '"privacy.epsilon" = [1.0]', replications=2)
    out = tmp_path / "out"
    args = ["sweep", str(study), "--out", str(out), "--workers", "1"]
    killed = subprocess.run([sys.executable, "-c", _DIE_IN_CREATION, step, *args])
    assert killed.returncode == -signal.SIGKILL
    assert list(out.glob(f".{DB_NAME}.*.tmp")), "the kill did not land inside the creation"
    store = out / DB_NAME
    if step == "renamed, not tidied":
        check_store(store)  # a whole store: its schema, no row
        assert not is_unstarted(store) and stored_rows(out) == 0
    else:
        assert not store.exists()
    resumed = subprocess.run([sys.executable, "-m", "privsim", *args], capture_output=True)
    assert resumed.returncode == 0, resumed.stderr
    assert not list(out.glob(f".{DB_NAME}.*")), "temporary files were left behind"
    assert stored_rows(out) == 2
