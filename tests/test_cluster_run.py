"""One run sharded over a Dask cluster (:mod:`privsim.cluster`): the round's shards run on
the cluster's workers, and the result is the same bytes as the run in one process, for
every share mode, with and without encryption and with dropouts; ``privsim run
--scheduler`` does the same from the command line, and its TLS options are checked as a
sweep's are."""

from __future__ import annotations

import json

import pytest

from privsim.api import run
from privsim.cluster import on_cluster
from privsim.kit.result import without_timing
from privsim.kit.securesum import pool
from privsim.protocols.dca.run import simulate
from privsim.studies import executors
from privsim.studies.executors import SchedulerError
from tests.conftest import make_scenario
from tests.kit.test_share_pool import _fingerprint

distributed = pytest.importorskip("distributed")


def _executed(client) -> int:
    """Tasks the cluster's workers have run so far."""
    return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())


def _scenario(shares: str, encryption: str):
    dca = {"delivery": "batched", "shares": shares, "tolerated": 30}
    if shares == "shamir":
        dca["threshold"] = 2
    return make_scenario(
        population={"clients": 120, "compute_nodes": 3},
        data={"dimension": 40},
        dca=dca,
        network={"encryption": encryption},
        faults={"absent": 0.1},
    )


@pytest.mark.parametrize("encryption", ["none", "aes-gcm"])
@pytest.mark.parametrize("shares", ["full", "seeded", "shamir"])
def test_a_round_on_the_cluster_releases_the_same_bytes(
    shares, encryption, dask_scheduler, monkeypatch
):
    scenario = _scenario(shares, encryption)
    monkeypatch.setenv(pool.ENV, "1")
    alone = _fingerprint(simulate(scenario, seed=5))
    monkeypatch.setattr(pool, "MIN_SECONDS", 0.0)  # a small round goes to the workers too
    with on_cluster(dask_scheduler) as cluster:
        assert cluster.workers == 2
        before = _executed(cluster.client)
        sharded = simulate(scenario, seed=5)
        ran = _executed(cluster.client) - before
    assert sharded.outcome.ok
    # Every shard is one task: two workers, SLICES_PER_WORKER shards each.
    assert ran == 2 * pool.SLICES_PER_WORKER
    assert _fingerprint(sharded) == alone


def test_the_api_runs_on_a_cluster_with_the_same_result(dask_scheduler, monkeypatch):
    scenario = _scenario("full", "none")
    local = without_timing(run(scenario, 3).to_dict())
    monkeypatch.setattr(pool, "MIN_SECONDS", 0.0)
    remote = without_timing(run(scenario, 3, scheduler=dask_scheduler).to_dict())
    assert json.dumps(remote, sort_keys=True) == json.dumps(local, sort_keys=True)


def test_an_unreachable_scheduler_is_a_named_error(monkeypatch):
    # Dask retries the refused connection until the timeout, then the same named error
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SchedulerError, match="cannot reach the Dask scheduler"):
        with on_cluster("tcp://127.0.0.1:9"):
            pass


def test_the_cli_runs_on_a_cluster(dask_scheduler, tmp_path, capsys):
    from privsim.cli import main

    code = main(["run", "quickstart", "--scheduler", dask_scheduler, "--out", str(tmp_path)])
    assert code == 0
    [written] = list(tmp_path.glob("*.json"))
    local = tmp_path / "local"
    assert main(["run", "quickstart", "--out", str(local)]) == 0
    [again] = list(local.glob("*.json"))
    on_cluster_result = without_timing(json.loads(written.read_text()))
    assert on_cluster_result == without_timing(json.loads(again.read_text()))
    assert "Result file" in capsys.readouterr().out


def test_the_cli_refuses_tls_files_without_a_tls_scheduler(tmp_path, capsys):
    from privsim.cli import main

    pem = tmp_path / "x.pem"
    pem.write_text("-")
    code = main(
        [
            "run",
            "quickstart",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--tls-ca-file",
            str(pem),
            "--tls-cert",
            str(pem),
            "--tls-key",
            str(pem),
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert "tls://" in capsys.readouterr().err


def test_a_secagg_plus_round_on_the_cluster_releases_the_same_bytes(dask_scheduler, monkeypatch):
    from privsim.kit.secagg import round as secagg_round
    from privsim.protocols.secagg import run as secagg_run

    scenario = make_scenario(
        protocol="secagg_plus",
        population={"clients": 60},
        secagg={"dimension": 8, "target_dropout": 0.1, "target_corruption": 0.05},
        network={"encryption": "none"},
        faults={"absent": 0.05},
    )
    monkeypatch.setenv(pool.ENV, "1")
    alone = secagg_run.simulate(scenario, seed=2)
    monkeypatch.setattr(secagg_round, "MIN_AGREEMENTS_FOR_PROCESSES", 0)
    with on_cluster(dask_scheduler) as cluster:
        before = _executed(cluster.client)
        sharded = secagg_run.simulate(scenario, seed=2)
        ran = _executed(cluster.client) - before
    assert ran > 0  # key agreements, sealed shares and masks ran on the workers
    assert sharded.outcome.released is not None
    assert sharded.outcome.released.tobytes() == alone.outcome.released.tobytes()


def test_a_batched_secagg_plus_round_on_the_cluster_is_the_per_client_round(
    dask_scheduler, monkeypatch
):
    """Clients as a batched population, their cryptography in shards on the cluster:
    the release, live sets and every message's size, times and fate are those of the
    per-client round in one process."""
    from privsim.kit.secagg import round as secagg_round
    from privsim.protocols.secagg import run as secagg_run
    from tests.protocols.test_secagg_batched import _trace_rows

    def scenario(how: str):
        return make_scenario(
            protocol="secagg_plus",
            population={"clients": 200},
            secagg={
                "dimension": 8,
                "target_dropout": 0.3,
                "target_corruption": 0.05,
                "round_timeout": 2.0,
                "delivery": how,
            },
            network={
                "encryption": "sized",
                "link": {"latency": {"model": "lognormal", "median": 0.05, "sigma": 0.6}},
            },
            faults={"absent": 0.05, "crash": 0.2, "crash_window": [0.0, 6.0]},
        )

    monkeypatch.setenv(pool.ENV, "1")
    alone = secagg_run.simulate(scenario("per_client"), seed=3)
    monkeypatch.setattr(secagg_round, "MIN_AGREEMENTS_FOR_PROCESSES", 0)
    with on_cluster(dask_scheduler) as cluster:
        before = _executed(cluster.client)
        sharded = secagg_run.simulate(scenario("batched"), seed=3)
        ran = _executed(cluster.client) - before
    assert ran > 0  # keys, agreements, sealing and masks ran on the workers
    assert sharded.outcome.ok and sharded.outcome.keys_reconstructed > 0
    assert alone.outcome.released is not None and sharded.outcome.released is not None
    assert sharded.outcome.released.tobytes() == alone.outcome.released.tobytes()
    assert [s.tolist() for s in sharded.outcome.survivors] == [
        s.tolist() for s in alone.outcome.survivors
    ]
    assert (_trace_rows(sharded) == _trace_rows(alone)).all()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--scheduler", "local", "--workers", "0"], "--workers 0"),
        (["--scheduler", ""], "cannot reach the Dask scheduler"),
        (["--tls-cert", "a.pem"], "TLS needs --tls-ca-file, --tls-cert and --tls-key"),
    ],
)
def test_bad_cluster_options_are_named_errors(options, named, tmp_path, capsys):
    from privsim.cli import main

    assert main(["run", "quickstart", *options, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written
