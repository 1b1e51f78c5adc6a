"""Issue 16, Dask trust: a sweep over a mutual-TLS Dask cluster, and a client that keeps
only plain row data for the task it submitted from what workers return."""

from __future__ import annotations

import datetime
import ipaddress
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
import tomli_w

from privsim.cli import main
from privsim.studies import ResultStore, load_study
from privsim.studies import executors as executors_module
from privsim.studies.executors import (
    DaskExecutor,
    SchedulerError,
    accept_row,
    dask_security,
    row_as_json,
)
from privsim.studies.store import rows_without_timing
from privsim.studies.study import Task
from privsim.studies.sweep import sweep
from privsim.studies.worker import run_task
from tests.studies.test_studies import TINY_BASE


def _study(tmp_path: Path) -> Path:
    (tmp_path / "base.toml").write_text(tomli_w.dumps(TINY_BASE))
    path = tmp_path / "tls.toml"
    path.write_text(
        'name = "tls"\nseed = 5\nreplications = 1\nbase = "base.toml"\n'
        '[grid]\n"privacy.epsilon" = [0.5, 2.0]\n'
    )
    return path


def _write_pki(directory: Path) -> dict[str, str]:
    """A throwaway CA and one certificate it signed (for scheduler, worker and client)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid = {"not_valid_before": now - datetime.timedelta(minutes=5)}
    valid["not_valid_after"] = now + datetime.timedelta(days=1)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("privsim-test-ca"))
        .issuer_name(name("privsim-test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid["not_valid_before"])
        .not_valid_after(valid["not_valid_after"])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("privsim-test-node"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid["not_valid_before"])
        .not_valid_after(valid["not_valid_after"])
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = {
        "ca": directory / "ca.pem",
        "cert": directory / "node.pem",
        "key": directory / "node-key.pem",
    }
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return {k: str(v) for k, v in files.items()}


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A LocalCluster (one worker process) that speaks only mutual TLS."""
    from distributed import LocalCluster
    from distributed.security import Security

    pki = _write_pki(tmp_path_factory.mktemp("pki"))
    roles = {
        f"tls_{role}_{part}": pki[part]
        for role in ("scheduler", "worker", "client")
        for part in ("cert", "key")
    }
    security = Security(tls_ca_file=pki["ca"], require_encryption=True, **roles)
    cluster = LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        protocol="tls://",
        security=security,
        dashboard_address=None,
    )
    try:
        assert cluster.scheduler_address.startswith("tls://")
        yield cluster.scheduler_address, pki
    finally:
        cluster.close()


def test_a_sweep_over_a_tls_dask_cluster(tls_cluster, tmp_path, capsys):
    address, pki = tls_cluster
    path = _study(tmp_path)
    argv = ["sweep", str(path), "--out", str(tmp_path / "tls"), "--scheduler", address]
    argv += ["--tls-ca-file", pki["ca"], "--tls-cert", pki["cert"], "--tls-key", pki["key"]]
    assert main(argv) == 0, capsys.readouterr().err
    sweep(load_study(path), tmp_path / "pool", workers=1, progress=None)
    with ResultStore(tmp_path / "tls") as a, ResultStore(tmp_path / "pool") as b:
        rows = a.rows()
        assert len(rows) == 2 and {r["status"] for r in rows} == {"released"}
        assert rows_without_timing(rows) == rows_without_timing(b.rows())  # JSON is lossless


def test_a_tls_scheduler_without_certificates_is_a_named_error(tls_cluster, tmp_path):
    address, pki = tls_cluster
    with pytest.raises(SchedulerError, match="needs TLS: give --tls-ca-file"):
        DaskExecutor(address)
    with pytest.raises(SchedulerError, match="add --tls-key"):
        dask_security(address, pki["ca"], pki["cert"], None)
    with pytest.raises(SchedulerError, match="need a tls:// scheduler"):
        dask_security("tcp://127.0.0.1:8786", pki["ca"], pki["cert"], pki["key"])
    with pytest.raises(SchedulerError, match=r"--tls-cert .*no such file"):
        dask_security(address, pki["ca"], str(tmp_path / "missing.pem"), pki["key"])
    assert (
        main(["sweep", str(_study(tmp_path)), "--out", str(tmp_path / "o"), "--tls-cert", "x"]) == 2
    )
    assert not (tmp_path / "o").exists()


class Intruder:
    """What a rogue worker might send instead of a row; records any use of it."""

    touched: ClassVar[list[str]] = []

    def __getattribute__(self, name: str) -> Any:
        if name not in ("__class__", "__reduce_ex__", "__reduce__", "__getstate__", "__dict__"):
            Intruder.touched.append(name)
        return object.__getattribute__(self, name)

    def __eq__(self, other: object) -> bool:
        Intruder.touched.append("__eq__")
        return True

    __hash__ = object.__hash__


def _rogue_object(fn: Any, base: dict[str, Any], task: Task) -> Any:
    return Intruder()


def _missing_keys(base: dict[str, Any], task: Task) -> dict[str, Any]:
    return {"row_id": task.row_id, "status": "released", "accuracy": {"rmse": 0.0}}


def _other_task(base: dict[str, Any], task: Task) -> dict[str, Any]:
    row = run_task(base, task)
    return {**row, "row_id": "forged-r0"}


def test_a_worker_returning_a_non_row_is_an_error_row_and_not_trusted(
    tls_cluster, tmp_path, monkeypatch
):
    address, pki = tls_cluster
    study = load_study(_study(tmp_path))
    tasks = list(study.tasks())
    security = dask_security(address, pki["ca"], pki["cert"], pki["key"])
    executor = DaskExecutor(address, security=security)
    try:
        for fn, words in ((_missing_keys, "without cell"), (_other_task, "another task")):
            rows = list(executor.run(fn, study.base, tasks))
            assert sorted(r["row_id"] for r in rows) == sorted(t.row_id for t in tasks)
            assert all(r["status"] == "error" and words in r["error"] for r in rows), [
                r.get("error") for r in rows
            ]
        # a worker that bypasses the JSON encoding and returns an object
        monkeypatch.setattr(executors_module, "row_as_json", _rogue_object)
        Intruder.touched.clear()
        rows = list(executor.run(run_task, study.base, tasks))
    finally:
        executor.close()
    assert all(r["status"] == "error" and "type Intruder" in r["error"] for r in rows), rows
    assert all(
        set(r) == {"row_id", "cell", "replication", "seed", "grid", "status", "error"} for r in rows
    )
    assert Intruder.touched == []  # stored as an error row, nothing of it called


def test_accept_row_keeps_only_plain_row_data_for_the_submitted_task():
    task = Task("abc-r0", "abc", (("privacy.epsilon", 1.0),), 0, 42)
    good = {"row_id": "abc-r0", "cell": "abc", "replication": 0, "seed": 42, "status": "released"}
    assert accept_row(json.dumps(good), task) == good
    assert accept_row(row_as_json(lambda b, t: good, {}, task), task) == good
    deep: Any = 0
    for _ in range(13):
        deep = [deep]
    hostile = {
        "object": Intruder(),
        "bytes": json.dumps(good).encode(),
        "dict, not text": good,
        "invalid JSON": "{'row_id': 1}",
        "a list": json.dumps([good]),
        "missing keys": json.dumps({"row_id": "abc-r0"}),
        "other task": json.dumps({**good, "seed": 43}),
        "seed as text": json.dumps({**good, "seed": "42"}),
        "bool replication": json.dumps({**good, "replication": False}),
        "status not text": json.dumps({**good, "status": 1}),
        "too deep": json.dumps({**good, "x": deep}),
        "10,000 deep": "[" * 10_000 + "]" * 10_000,
        "too long": json.dumps({**good, "x": "y" * 1_000_001}),
    }
    Intruder.touched.clear()
    for label, result in hostile.items():
        row = accept_row(result, task)
        assert row["status"] == "error" and row["row_id"] == "abc-r0", label
        assert row["error"].startswith("refused the worker's result"), label
    assert Intruder.touched == []
