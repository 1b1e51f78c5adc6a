"""The share round on worker processes: the same bytes as in one process, for every
share mode, with and without encryption and with dropouts; the seeded round's fused
expansion equals the share array's; a worker's failure is named."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from privsim.kit.securesum import pool
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.job import ShareJob
from privsim.kit.securesum.seeded import SEED_WORDS, add_expansions, seeded_shares
from privsim.protocols.dca.run import simulate
from privsim.sim.keystream import KeyStream
from tests.conftest import make_scenario
from tests.kit.broken_data import BrokenData


def test_fused_expansions_equal_the_seeded_share_array():
    rng = np.random.default_rng(3)
    n, m, d = 6, 5, 33
    x = rng.integers(0, 2**64, size=(n, d), dtype=np.uint64)
    seeds = rng.integers(0, 2**64, size=(n, m - 1, SEED_WORDS), dtype=np.uint64)
    shares = np.empty((n, m, d), dtype=np.uint64)
    seeded_shares(x, seeds, shares)
    sums = np.zeros((m - 1, d), dtype=np.uint64)
    corrections = add_expansions(x, seeds, sums)
    np.testing.assert_array_equal(corrections, shares[:, 0])
    np.testing.assert_array_equal(sums, shares[:, 1:].sum(axis=0, dtype=np.uint64))


def _fingerprint(sim) -> tuple[bytes, str, int, int]:
    """Released bytes, a digest of the trace (who sent what, when, how big) and the
    channels' nonce counters: what must not depend on where the round was computed."""
    trace = hashlib.sha256()
    for record in sim.world.trace.records():
        trace.update(repr(record).encode())
    counters = sum(int(t.next.sum()) for t in sim.world.channels._tables.values() if t.dense)
    floors = sum(int(t.floor.sum()) for t in sim.world.channels._tables.values() if t.dense)
    return np.asarray(sim.outcome.released).tobytes(), trace.hexdigest(), counters, floors


@pytest.mark.parametrize("encryption", ["none", "aes-gcm"])
@pytest.mark.parametrize("shares", ["full", "seeded", "shamir"])
def test_worker_processes_release_the_same_bytes_as_one_process(shares, encryption, monkeypatch):
    dca = {"delivery": "batched", "shares": shares, "tolerated": 10}
    if shares == "shamir":
        dca["threshold"] = 2
    scenario = make_scenario(
        population={"clients": 60, "compute_nodes": 3},
        data={"dimension": 50},
        dca=dca,
        network={"encryption": encryption},
        faults={"absent": 0.1},
    )
    monkeypatch.setenv(pool.ENV, "1")
    alone = _fingerprint(simulate(scenario, seed=11))
    monkeypatch.setattr(pool, "MIN_SECONDS", 0.0)
    monkeypatch.setattr(pool, "SLICES_PER_WORKER", 3)  # uneven slices, out-of-order replies
    monkeypatch.setenv(pool.ENV, "2")
    monkeypatch.setattr(pool.WorkerUsage, "cpu_seconds", ())  # no earlier pool's figures
    pooled = simulate(scenario, seed=11)
    assert pooled.outcome.ok
    # the round really ran on the workers (one that started first may have taken every slice)
    assert 1 <= len(pool.WorkerUsage.cpu_seconds) <= 2
    assert _fingerprint(pooled) == alone


def _broken_job(nodes: tuple[object, ...] = ("n0", "n1")) -> ShareJob:
    """A job over four clients whose data fail to load."""
    stream = KeyStream(bytes(16), "test")
    inputs = ClientInputs(
        data=BrokenData(),
        noise=stream,
        randomness=stream,
        noise_std=1.0,
        fraction_bits=16,
        n_nodes=2,
    )
    return ShareJob(
        inputs=inputs,
        clients=("a", "b", "c", "d"),
        nodes=nodes,  # type: ignore[arg-type]
        share_mode="full",
        dimension=3,
        header=b"",
        seed_header=b"",
    )


def test_a_failing_worker_names_its_error(monkeypatch):
    monkeypatch.setenv(pool.ENV, "2")
    with pytest.raises(
        RuntimeError, match=r"worker process failed(.|\n)*ValueError: rows of a broken"
    ):
        pool.node_sums(_broken_job(), np.arange(4, dtype=np.int64), None)


def test_the_worker_count_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv(pool.ENV, "3")
    assert pool.workers() == 3
    monkeypatch.setenv(pool.ENV, "1")
    assert not pool.use_processes(1e6)
    for bad in ("two", "0", "-3"):
        monkeypatch.setenv(pool.ENV, bad)
        with pytest.raises(ValueError, match=f"{pool.ENV}='{bad}'.*whole number"):
            pool.workers()


def test_a_job_that_does_not_pickle_stays_in_its_process(monkeypatch):
    monkeypatch.setenv(pool.ENV, "2")
    job = _broken_job(nodes=(lambda: None,))  # a lambda does not pickle
    assert pool.node_sums(job, np.arange(2, dtype=np.int64), None) is None
