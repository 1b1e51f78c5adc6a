"""Issue 16: one study per store (a directory lock and an atomic claim), and a corrupted or
foreign results.sqlite is a named error from report, sweep and replay, never written."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from privsim.cli import main
from privsim.studies import ResultStore, StudyError, load_study
from privsim.studies.store import (
    DB_NAME,
    StoreBusyError,
    StoreError,
    check_store,
    lock_directory,
)
from privsim.studies.sweep import STUDY_FILE, sweep
from tests.studies.test_studies import TINY_BASE


def _study(tmp_path: Path, name: str = "a", seed: int = 3, replications: int = 2) -> Path:
    (tmp_path / "base.toml").write_text(tomli_w.dumps(TINY_BASE))
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nseed = {seed}\nreplications = {replications}\nbase = "base.toml"\n'
        '[grid]\n"privacy.epsilon" = [0.5, 2.0]\n'
    )
    return path


def _row(i: int) -> dict[str, object]:
    return {
        "row_id": f"c-r{i}",
        "cell": "c",
        "replication": i,
        "seed": i,
        "status": "released",
        "padding": "x" * 3000,  # several pages, so a truncation cuts rows
    }


# --- one study per store ---------------------------------------------------------------


def test_a_second_sweep_on_a_locked_directory_is_refused_by_name(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with lock_directory(out):  # as a running sweep holds it
        with pytest.raises(StoreBusyError, match=r"another sweep is running in .* \(pid \d+\)"):
            sweep(load_study(_study(tmp_path)), out, workers=1, progress=None)
    assert not (out / DB_NAME).exists() and not (out / STUDY_FILE).exists()
    # released: the same sweep now runs
    assert sweep(load_study(_study(tmp_path)), out, workers=1, progress=None).ran == 4


def test_the_same_study_check_and_first_write_are_one_transaction(tmp_path):
    """Without the lock (e.g. a file system where flock does not hold), the store itself
    refuses a second study: the claim is checked and written in one transaction."""
    with ResultStore(tmp_path) as first, ResultStore(tmp_path) as second:
        first.claim('{"name": "a"}')
        with pytest.raises(StudyError, match="different study"):
            second.claim('{"name": "b"}')
        second.claim('{"name": "a"}')  # the same study may resume
        assert len(second) == 0 and second.meta("study") == '{"name": "a"}'


def test_two_concurrent_sweeps_of_different_studies_leave_one_studys_rows(tmp_path):
    a = _study(tmp_path, "study-a", seed=1, replications=15)
    b = _study(tmp_path, "study-b", seed=2, replications=15)
    out = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "privsim", "sweep", str(p), "--out", str(out), "--workers", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in (a, b)
    ]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "another sweep is running in" in refused or "different study" in refused
    assert "Traceback" not in refused
    winner = json.loads((out / STUDY_FILE).read_text())["name"]
    expected = {t.row_id for t in load_study(a if winner == "study-a" else b).tasks()}
    with ResultStore(out) as store:
        assert {r["row_id"] for r in store.rows()} == expected  # 30 rows, one study's only
        assert json.loads(store.meta("study") or "{}")["name"] == winner


# --- corrupted or foreign stores --------------------------------------------------------


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(16).randbytes(8192))


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def _short_header(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + b"\x10\x00")


def _truncated(path: Path) -> None:
    with ResultStore(path.parent) as store:
        for i in range(40):
            store.add(_row(i))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _foreign_schema(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")
    db.execute("INSERT INTO invoices VALUES (1, 9.5)")
    db.commit()
    db.close()


def _other_columns(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE rows (row_id TEXT, payload BLOB)")
    db.commit()
    db.close()


def _directory(path: Path) -> None:
    path.mkdir()


CORRUPTIONS = {
    "random bytes": (_random_bytes, "not an SQLite database"),
    "short header": (_short_header, "truncated"),
    "truncated": (_truncated, "integrity check|corrupted"),
    "foreign schema": (_foreign_schema, "foreign tables"),
    "other columns": (_other_columns, "other columns"),
    "a directory": (_directory, "not a regular file"),
}


def _digest(path: Path) -> str:
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def damaged(tmp_path, request):
    """A results directory of a real study (study.json present) with a bad store."""
    make, words = CORRUPTIONS[request.param]
    out = tmp_path / "out"
    out.mkdir()
    study = load_study(_study(tmp_path))
    (out / STUDY_FILE).write_text(json.dumps(study.to_toml_dict()))
    make(out / DB_NAME)
    return out, words, study


def _named_error(capsys, out: Path, words: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith("privsim: error: ") and "Traceback" not in err
    assert str(out / DB_NAME) in err
    assert "Delete it" in err and "another --out" in err
    import re

    assert re.search(words, err), err


@pytest.mark.parametrize("damaged", sorted(CORRUPTIONS), indirect=True)
def test_report_sweep_and_replay_name_a_bad_store_and_never_write_it(damaged, capsys, tmp_path):
    out, words, study = damaged
    before = _digest(out / DB_NAME)
    with pytest.raises(StoreError):
        check_store(out / DB_NAME)
    assert main(["report", str(out)]) == 2
    _named_error(capsys, out, words)
    assert not (out / "report").exists()
    assert main(["sweep", str(_study(tmp_path)), "--out", str(out), "--workers", "1"]) == 2
    _named_error(capsys, out, words)
    row_id = next(study.tasks()).row_id
    assert main(["replay", row_id, "--out", str(out)]) == 2
    _named_error(capsys, out, words)
    assert _digest(out / DB_NAME) == before


def _header_only(path: Path) -> None:
    """What an older privsim left when killed right after switching its new store to
    write-ahead mode: one page with an SQLite header, and no table."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.close()


def _zero_bytes_and_a_stale_log(path: Path) -> None:
    """0 bytes beside the write-ahead log of another store (whose file was deleted while its
    log stayed): a new store must not replay that log, which holds row ``c-r0``."""
    other = path.parent.parent / "other"
    with ResultStore(other) as store:
        store.add(_row(0))
        log = Path(f"{other / DB_NAME}-wal")
        Path(f"{path}-wal").write_bytes(log.read_bytes())
    _zero_bytes(path)


UNSTARTED = {
    "zero bytes": _zero_bytes,
    "header only": _header_only,
    "zero bytes and a stale log": _zero_bytes_and_a_stale_log,
}


@pytest.mark.parametrize("left", sorted(UNSTARTED))
def test_a_store_left_empty_by_an_interrupted_first_write_resumes(tmp_path, capsys, left):
    """Older privsim versions created results.sqlite in place, so a sweep killed between
    creating the file and its first write left 0 bytes or an SQLite header without tables.
    Such a file holds no row and no schema: it is the sweep's own unfinished store, not a
    damaged or foreign one. It used to be refused ("is empty"), so that sweep could never
    resume; now the sweep replaces it (atomically) with a new store and runs every row.
    Read-only commands, which have nothing to read, still name it and leave it as it is."""
    out = tmp_path / "out"
    out.mkdir()
    study = load_study(_study(tmp_path))
    (out / STUDY_FILE).write_text(json.dumps(study.to_toml_dict()))
    UNSTARTED[left](out / DB_NAME)
    before = _digest(out / DB_NAME)
    assert main(["report", str(out)]) == 2
    _named_error(capsys, out, r"sweep stopped before its first write .*run that sweep again")
    assert _digest(out / DB_NAME) == before
    assert main(["sweep", str(_study(tmp_path)), "--out", str(out), "--workers", "1"]) == 0
    with ResultStore(out, readonly=True) as store:
        assert store.done() == {t.row_id for t in study.tasks()}  # and no stale c-r0
    assert main(["report", str(out)]) == 0


def test_a_damaged_study_file_or_row_is_a_named_error(tmp_path, capsys):
    out = tmp_path / "out"
    sweep(load_study(_study(tmp_path)), out, workers=1, progress=None)
    (out / STUDY_FILE).write_bytes(b"\xff\xfe not json")
    for argv in (
        ["sweep", str(_study(tmp_path)), "--out", str(out)],
        ["replay", "x-r0", "--out", str(out)],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{out / STUDY_FILE} is unreadable" in err and "another --out" in err
    # a row tampered into non-JSON: the report names the file and the row
    with ResultStore(out) as store:
        row_id = sorted(store.done())[0]
        store._db.execute("UPDATE rows SET row = '{broken' WHERE row_id = ?", (row_id,))
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out / DB_NAME) in err and row_id in err


def test_a_fresh_or_healthy_store_passes_the_check(tmp_path):
    check_store(tmp_path / DB_NAME)  # missing: a new store
    with ResultStore(tmp_path) as store:
        store.add(_row(0))
    check_store(tmp_path / DB_NAME)
    with ResultStore(tmp_path, readonly=True) as store:
        assert store.row("c-r0") == _row(0)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.add(_row(1))
