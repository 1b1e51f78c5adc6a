"""``workers.use``: a run's bulk work (the DCA share round, the channels' key agreement,
SecAgg's bulk cryptography) goes to the caller's executor, with the same bytes as on
privsim's own workers or in one process, and privsim starts no worker of its own."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from privsim.kit.securesum import pool
from privsim.protocols.dca.run import simulate
from privsim.sim import channels as channels_module
from privsim.sim import workers
from tests.conftest import make_scenario
from tests.kit.test_share_pool import _fingerprint


class Counting(ThreadPoolExecutor):
    """A thread pool that counts the tasks it is given, and what they are."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.tasks: list[str] = []
        self._tasks_lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs):
        task = args[0]  # the function that privsim's worker_task.call runs
        name = getattr(task, "__name__", None) or getattr(task, "name", repr(task))
        with self._tasks_lock:
            self.tasks.append(name)
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def counting():
    ex = Counting()
    yield ex
    ex.shutdown()


def _no_local_pool(monkeypatch) -> None:
    def refuse(size):
        raise AssertionError("privsim started its own workers")

    monkeypatch.setattr(workers.Pool, "local", staticmethod(refuse))


def test_the_size_is_seen_from_every_thread(counting, monkeypatch):
    monkeypatch.setenv(workers.ENV, "1")
    seen: list[int] = []
    with workers.use(counting, 3):
        thread = threading.Thread(target=lambda: seen.append(workers.workers()))
        thread.start()
        thread.join()
        assert workers.workers() == 3
    assert seen == [3]
    assert workers.workers() == 1
    with pytest.raises(ValueError, match="whole number"):
        with workers.use(counting, 0):
            pass


def test_a_dca_round_and_its_key_agreement_go_to_the_given_executor(counting, monkeypatch):
    scenario = make_scenario(
        population={"clients": 60, "compute_nodes": 3},
        data={"dimension": 50},
        dca={"delivery": "batched", "shares": "seeded", "tolerated": 10},
        network={"encryption": "aes-gcm"},
        faults={"absent": 0.1},
    )
    monkeypatch.setenv(pool.ENV, "1")
    alone = _fingerprint(simulate(scenario, seed=11))
    monkeypatch.delenv(pool.ENV)
    monkeypatch.setattr(pool, "MIN_SECONDS", 0.0)
    monkeypatch.setattr(channels_module, "PARALLEL_PAIRS", 0)
    _no_local_pool(monkeypatch)
    with workers.use(counting, 2):
        routed = simulate(scenario, seed=11)
    assert routed.outcome.ok
    assert _fingerprint(routed) == alone
    assert "_slice_sums" in counting.tasks  # the share round
    assert "_agree_slice" in counting.tasks  # the key agreement


def test_a_map_runs_on_the_given_executor_and_leaves_it_running(counting, monkeypatch):
    _no_local_pool(monkeypatch)
    with workers.use(counting, 2):
        assert sorted(workers.map_unordered(abs, [-3, 1, -2], 2)) == [1, 2, 3]
        with pytest.raises(RuntimeError, match=r"worker process failed(.|\n)*TypeError"):
            list(workers.map_unordered(np.sqrt, ["x", "y"], 2))
    assert counting.tasks.count("abs") == 3
    assert counting.submit(abs, -1).result() == 1  # privsim did not shut it down


def test_a_secagg_round_goes_to_the_given_executor(counting, monkeypatch):
    from tests.protocols.test_secagg_golden import CASES, GOLDEN, assert_matches, summary

    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    name = "secagg_plus-random-faults-1"
    _no_local_pool(monkeypatch)
    with workers.use(counting, 2):
        assert_matches(name, summary(CASES[name], processes=2), golden)
    assert {"public_keys", "agreements"} <= set(counting.tasks)
