"""The worker processes as real processes: they end within seconds of a run killed with
``kill -9``, busy or idle; a Ctrl-C to the terminal's process group interrupts the run
once and its workers are killed at once; a user's script without an ``if __name__ ==
"__main__"`` guard is not run again by the workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.helpers import _default_sigint, scenario_file
from tests.processes import alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

ROOT = Path(__file__).resolve().parents[2]


def _wait(condition, what: str, limit: float) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > limit:
            raise AssertionError(f"waited {limit} s for {what}")
        time.sleep(0.05)
    return time.monotonic() - started


def _python(script: str, tmp_path: Path, **popen) -> subprocess.Popen[str]:
    path = tmp_path / "user_script.py"
    path.write_text(script, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PRIVSIM_ROUND_PROCESSES", None)
    env.update(popen.pop("env", {}))
    return subprocess.Popen(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as at a terminal, even when the tests run in the background, where a
        # shell starts them with SIGINT ignored (and a child would inherit that)
        preexec_fn=_default_sigint,
        **popen,
    )


# One worker busy with a long task, the other idle; every child of the script (the
# workers and loky's resource trackers) is listed.
KILLED = """
import json, os, time
from privsim.sim import workers

def nap(seconds):
    time.sleep(seconds)

pool = workers.Pool.local(2)
pool.submit(nap, 300)
pids = pool.pids()
time.sleep(1.0)  # the workers reach their initializer
me = os.getpid()
children = open(f"/proc/{me}/task/{me}/children").read().split()
print(json.dumps({"workers": pids, "children": [int(c) for c in children]}), flush=True)
time.sleep(300)
"""


def test_no_worker_outlives_a_run_killed_with_sigkill(tmp_path):
    proc = _python(KILLED, tmp_path)
    seen: dict[str, list[int]] = {"children": []}
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        seen = json.loads(line)
        assert len(seen["workers"]) == 2 and set(seen["workers"]) <= set(seen["children"])
        assert all(alive(p) for p in seen["children"])
        proc.send_signal(signal.SIGKILL)  # no chance to stop its workers itself
        proc.wait()
        took = _wait(lambda: not any(alive(p) for p in seen["children"]), "the workers to end", 30)
        assert took < 5  # the watchdog checks every second
        assert proc.stderr is not None
        assert proc.stderr.read() == ""  # no traceback, no warning of loky's tracker
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in seen["children"]:  # none left behind by a failure
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# Four tasks of five minutes on two workers; the script counts the KeyboardInterrupts it
# gets and lists the workers still alive once the interrupted map has stopped them.
INTERRUPTED = """
import json, os, sys, time
from privsim.sim import workers

def nap(seconds):
    open(f"started-{os.getpid()}", "w").close()  # past its imports, in the task
    try:
        time.sleep(seconds)
    except KeyboardInterrupt:  # the worker got the Ctrl-C
        open(f"interrupted-{os.getpid()}", "w").close()
        raise
    return seconds

pids = workers.Pool.local(2).pids()
print(json.dumps(pids), flush=True)
interrupts = 0
try:
    for _ in workers.map_unordered(nap, [300] * 4, 2):
        pass
except KeyboardInterrupt:
    interrupts += 1
alive = [p for p in pids if os.path.exists(f"/proc/{p}") and
         open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
try:
    time.sleep(2.0)  # a second interrupt would come now
except KeyboardInterrupt:
    interrupts += 1
print(json.dumps({"interrupts": interrupts, "alive": alive}), flush=True)
"""


def test_ctrl_c_interrupts_the_run_once_and_kills_its_workers(tmp_path):
    # a session of its own: the signal goes to the whole group, as a terminal's Ctrl-C
    proc = _python(INTERRUPTED, tmp_path, start_new_session=True)
    pids: list[int] = []
    survivors: list[int] = []
    try:
        assert proc.stdout is not None
        pids = json.loads(proc.stdout.readline())
        assert len(pids) == 2
        # the workers are busy with their tasks (not still importing, as on a loaded
        # machine they can be seconds after the pool starts)
        _wait(lambda: len(list(tmp_path.glob("started-*"))) >= 2, "both workers' tasks", 120)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert time.monotonic() - started < 15  # not the tasks' five minutes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        survivors[:] = [p for p in pids if alive(p)]
        for pid in survivors:  # none left behind by a failure
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, stderr
    assert json.loads(stdout) == {"interrupts": 1, "alive": []}
    assert stderr == ""  # no traceback of a worker, no warning
    assert not list(tmp_path.glob("interrupted-*"))  # the workers ignored it
    assert survivors == []


# A user's script with no __main__ guard: a pooled map of its own function and of
# privsim's, and a DCA round on two worker processes.
UNGUARDED = """
print("MARKER", flush=True)
import math
from privsim.kit.securesum import pool
from privsim.protocols.dca.run import simulate
from privsim.scenarios import load_scenario
from privsim.sim import workers

def square(x):
    return x * x

assert sorted(workers.map_unordered(square, list(range(30)), 2)) == [x * x for x in range(30)]
assert sorted(workers.map_unordered(math.factorial, list(range(30)), 2))[-1] > 0
pool.MIN_SECONDS = 0.0  # the smallest round goes to the workers
workers.WorkerUsage.cpu_seconds = ()
sim = simulate(load_scenario("small.toml"))
print("pooled", len(workers.WorkerUsage.cpu_seconds), sim.outcome.ok, flush=True)
"""


def test_the_workers_do_not_run_the_users_script_again(tmp_path):
    scenario_file(
        tmp_path,
        population={"clients": 60, "compute_nodes": 3},
        dca={"delivery": "batched", "shares": "seeded"},
        network={"encryption": "aes-gcm"},
    )
    proc = _python(UNGUARDED, tmp_path, env={"PRIVSIM_ROUND_PROCESSES": "2"})
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    lines = stdout.splitlines()
    assert lines.count("MARKER") == 1, stdout
    pooled = lines[-1].split()
    assert pooled[0] == "pooled" and int(pooled[1]) >= 1 and pooled[2] == "True"
