"""The results store keys rows by ``row_id``: a resumed or retried replication can never
duplicate a row, and the schema says so (the database, not the caller, enforces it)."""

from __future__ import annotations

import errno
import json
import math
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from privsim.studies import store as store_module
from privsim.studies.store import (
    DB_NAME,
    ResultStore,
    StoreError,
    check_store,
    load,
    rows_without_timing,
    stored_row,
)
from privsim.studies.study import StudyError


def _row(row_id: str, value: float = 1.0, *, cell: str = "c0", replication: int = 0) -> dict:
    return {
        "row_id": row_id,
        "cell": cell,
        "replication": replication,
        "seed": 1234 + replication,
        "status": "released",
        "accuracy": {"rmse": value},
    }


def test_adding_the_same_row_id_twice_keeps_the_first_row(tmp_path):
    with ResultStore(tmp_path) as store:
        assert store.add(_row("c0/r0", 1.0)) is True
        assert store.add(_row("c0/r0", 2.0)) is False  # the retry's row is not stored
        assert store.add(_row("c0/r1", 3.0, replication=1)) is True
        assert len(store) == 2
        assert store.done() == {"c0/r0", "c0/r1"}
        assert store.row("c0/r0")["accuracy"]["rmse"] == 1.0
        assert [r["row_id"] for r in store.rows()] == ["c0/r0", "c0/r1"]


def test_a_reopened_store_still_refuses_a_stored_row_id(tmp_path):
    with ResultStore(tmp_path) as store:
        store.add(_row("c0/r0", 1.0))
    with ResultStore(tmp_path) as store:  # a resumed sweep opens the same file
        assert store.add(_row("c0/r0", 5.0)) is False
        assert len(store) == 1 and store.row("c0/r0")["accuracy"]["rmse"] == 1.0
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        assert db.execute("SELECT COUNT(*) FROM rows WHERE row_id = 'c0/r0'").fetchone() == (1,)
    finally:
        db.close()


def test_the_schema_declares_row_id_the_primary_key(tmp_path):
    ResultStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        columns = {name: pk for _, name, _, _, _, pk in db.execute("PRAGMA table_info(rows)")}
        # pk is the column's position in the primary key (0: not part of it)
        assert {name for name, pk in columns.items() if pk} == {"row_id"}
        # ... so the database itself refuses a second row with the same id
        db.execute(
            "INSERT INTO rows (row_id, cell, replication, seed, status, row) "
            "VALUES ('x', 'c', 0, 0, 'ok', '{}')"
        )
        try:
            db.execute(
                "INSERT INTO rows (row_id, cell, replication, seed, status, row) "
                "VALUES ('x', 'c', 1, 1, 'ok', '{}')"
            )
        except sqlite3.IntegrityError:
            pass
        else:
            raise AssertionError("a second row with the same row_id was accepted")
    finally:
        db.close()


def test_meta_values_are_replaced_not_duplicated(tmp_path):
    with ResultStore(tmp_path) as store:
        assert store.meta("study") is None
        store.set_meta("study", "a")
        store.set_meta("study", "b")
        assert store.meta("study") == "b"
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        assert db.execute("SELECT COUNT(*) FROM meta WHERE key = 'study'").fetchone() == (1,)
    finally:
        db.close()


# -- the rest of the store's contract ---------------------------------------------------


def test_rows_are_stored_as_sorted_json_and_read_back_in_row_id_order(tmp_path):
    with ResultStore(tmp_path / "a" / "b") as store:  # missing parents are created
        store.add(_row("c1/r0", 2.0, cell="c1"))
        store.add(_row("c0/r0", 1.0))
        assert [r["row_id"] for r in store.rows()] == ["c0/r0", "c1/r0"]
        assert store.row("missing") is None
    db = sqlite3.connect(tmp_path / "a" / "b" / DB_NAME)
    try:
        (text,) = db.execute("SELECT row FROM rows WHERE row_id = 'c1/r0'").fetchone()
        assert text == json.dumps(_row("c1/r0", 2.0, cell="c1"), sort_keys=True)
        assert db.execute("SELECT cell, replication, seed, status FROM rows").fetchall() == [
            ("c1", 0, 1234, "released"),
            ("c0", 0, 1234, "released"),
        ]
    finally:
        db.close()


def test_every_commit_is_durable_in_write_ahead_mode(tmp_path):
    with ResultStore(tmp_path) as store:
        assert store._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


def test_a_store_is_usable_from_another_thread(tmp_path):
    with ResultStore(tmp_path) as store:
        errors: list[BaseException] = []

        def work() -> None:
            try:
                store.add(_row("c0/r0"))
            except BaseException as exc:
                errors.append(exc)

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        assert errors == [] and len(store) == 1
    with ResultStore(tmp_path, readonly=True) as reader:
        seen: list[int] = []
        worker = threading.Thread(target=lambda: seen.append(len(reader)))
        worker.start()
        worker.join()
        assert seen == [1]


def test_read_only_stores_read_and_never_write(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"^no study results at {tmp_path / DB_NAME}$"):
        ResultStore(tmp_path, readonly=True)
    assert not (tmp_path / DB_NAME).exists()
    with ResultStore(tmp_path) as store:
        store.add(_row("c0/r0"))
    with ResultStore(tmp_path, readonly=True) as store:
        assert store.done() == {"c0/r0"} and store.rows()[0]["row_id"] == "c0/r0"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.add(_row("c0/r1", replication=1))
    assert stored_row(tmp_path, "c0/r0")["row_id"] == "c0/r0"
    assert stored_row(tmp_path, "c9/r9") is None
    assert stored_row(tmp_path / "nowhere", "c0/r0") is None
    assert not (tmp_path / "nowhere").exists()


def test_an_existing_file_is_checked_before_it_is_opened(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"not a database at all" * 10)
    with pytest.raises(StoreError, match="is not an SQLite database") as caught:
        ResultStore(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / DB_NAME) in message
    assert "did not write to it" in message
    assert message.endswith(
        "Delete it (or move it away) to start the study afresh, or choose another --out directory"
    )


def test_a_row_that_is_not_a_json_object_is_a_named_error(tmp_path):
    long_id = "c0/" + "r" * 60
    with ResultStore(tmp_path) as store:
        store.add(_row(long_id))
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        db.execute("UPDATE rows SET row = '[1, 2]'")
        db.commit()
    finally:
        db.close()
    with ResultStore(tmp_path) as store:
        for read in (store.rows, lambda: store.row(long_id)):
            with pytest.raises(StoreError) as caught:
                read()
            message = str(caught.value)
            assert message.startswith(f"{tmp_path / DB_NAME} holds a row {long_id[:40]!r} that")
            assert long_id[:41] not in message


def test_load_flattens_rows_and_reads_infinite_epsilons_as_floats(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"run 'privsim sweep STUDY\.toml --out"):
        load(tmp_path)
    with ResultStore(tmp_path) as store:
        for k, eps in enumerate([1.5, "inf"]):
            store.add({**_row(f"c0/r{k}", replication=k), "privacy": {"achieved_epsilon": eps}})
    frame = load(tmp_path)
    assert list(frame["row_id"]) == ["c0/r0", "c0/r1"]
    assert list(frame["accuracy.rmse"]) == [1.0, 1.0]
    assert frame["privacy.achieved_epsilon"].tolist() == [1.5, math.inf]
    assert len(ResultStore(tmp_path, readonly=True)) == 2


def test_rows_without_timing_drop_only_wall_clock_fields():
    rows = [{**_row("c0/r0"), "timing": {"wall_seconds": 1.0}}, _row("c0/r1", replication=1)]
    stripped = rows_without_timing(rows)
    assert [r["row_id"] for r in stripped] == ["c0/r0", "c0/r1"]
    assert all("wall_seconds" not in json.dumps(r) for r in stripped)
    assert stripped[0]["accuracy"] == {"rmse": 1.0}


def test_unchecked_garbage_is_still_a_named_error(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"\x00garbage" * 64)
    with pytest.raises(StoreError) as caught:
        ResultStore(tmp_path, check=False)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / DB_NAME} cannot be opened (SQLite: ")
    assert "did not write to it" in message


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: p.mkdir(), "is not a regular file"),
        (lambda p: p.write_bytes(b""), "is empty (0 bytes)"),
        (
            lambda p: p.write_bytes(b"x" * 200),
            "is not an SQLite database (random or foreign bytes)",
        ),
    ],
)
def test_unusable_files_are_named_with_what_is_wrong(tmp_path, make, what):
    make(tmp_path / DB_NAME)
    with pytest.raises(StoreError) as caught:
        check_store(tmp_path / DB_NAME)
    assert str(caught.value).startswith(f"{tmp_path / DB_NAME} {what}")


def test_foreign_tables_are_listed(tmp_path):
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        for name in "abcdefg":
            db.execute(f"CREATE TABLE {name} (x)")
        db.commit()
    finally:
        db.close()
    with pytest.raises(StoreError, match=r"has foreign tables \(a, b, c, d, e\)"):
        check_store(tmp_path / DB_NAME)


def test_a_store_of_another_study_is_refused(tmp_path):
    with ResultStore(tmp_path) as store:
        store.claim("study A")
        store.claim("study A")  # the same study again: fine
        with pytest.raises(StudyError, match=r"use a new --out directory$"):
            store.claim("study B")
        assert store.meta("study") == "study A"


def test_infinities_and_nans_written_as_words_are_read_as_floats(tmp_path):
    with ResultStore(tmp_path) as store:
        for k, (eps, flag) in enumerate([(1.5, "inf"), ("-inf", True), ("nan", "inf")]):
            store.add({**_row(f"c0/r{k}", replication=k), "eps": eps, "flag": flag})
    frame = load(tmp_path)
    values = frame["eps"].tolist()
    assert values[:2] == [1.5, -math.inf] and math.isnan(values[2])
    # a column mixing the words with booleans is not numbers: left as it is
    assert frame["flag"].tolist() == ["inf", True, "inf"]


def _damaged_in_the_middle(tmp_path) -> Path:
    """A real store whose SQLite header and schema are intact but one b-tree page in the
    middle of the file is overwritten: it opens and lists its tables, and only SQLite's
    integrity check can tell it is damaged."""
    with ResultStore(tmp_path) as store:
        for k in range(300):  # ~30 pages of 4 KiB
            store.add({**_row(f"c0/r{k:04d}", replication=k), "pad": "x" * 200})
    path = tmp_path / DB_NAME
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size, pages = (
            db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count")
        )
    finally:
        db.close()
    data = bytearray(path.read_bytes())
    assert len(data) == page_size * pages and pages > 8
    start = (pages // 2) * page_size
    for offset in range(start + 8, start + page_size - 8):  # keep the page header's type byte
        data[offset] = 0xFF if data[offset] == 0 else 0
    path.write_bytes(bytes(data))
    return path


def test_a_store_damaged_inside_fails_the_integrity_check_by_name(tmp_path):
    path = _damaged_in_the_middle(tmp_path)
    assert path.read_bytes().startswith(b"SQLite format 3\x00")
    db = sqlite3.connect(path)
    try:  # the schema still reads as a results store's
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        verdict = db.execute("PRAGMA quick_check(1)").fetchone()[0]
    finally:
        db.close()
    assert sorted(names) == ["meta", "rows"] and verdict != "ok"
    before = path.read_bytes()
    for refuse in (lambda: check_store(path), lambda: ResultStore(tmp_path)):
        with pytest.raises(StoreError) as caught:
            refuse()
        assert str(caught.value) == (
            f"{path} fails SQLite's integrity check (truncated or damaged): privsim cannot use "
            "it as a results store, and did not write to it. Delete it (or move it away) to "
            "start the study afresh, or choose another --out directory"
        )
        assert caught.value.__cause__ is None
    assert path.read_bytes() == before


def test_sqlite_internal_tables_do_not_stop_the_column_check(tmp_path):
    # meta, then ANALYZE's sqlite_stat1, then a 'rows' table with other columns: the
    # check skips sqlite_stat1 and goes on to find the bad 'rows'
    path = tmp_path / DB_NAME
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('study', 'x')")
        db.commit()
        db.execute("ANALYZE")
        db.commit()
        db.execute("CREATE TABLE rows (row_id TEXT PRIMARY KEY, other TEXT)")
        db.commit()
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    finally:
        db.close()
    assert names == ["meta", "sqlite_stat1", "rows"]
    with pytest.raises(StoreError) as caught:
        check_store(path)
    assert str(caught.value).startswith(
        f"{path} has a table 'rows' with other columns ('row_id', 'other'): "
    )


def test_a_store_that_cannot_be_read_is_named_with_the_reason(tmp_path, monkeypatch):
    with ResultStore(tmp_path) as store:
        store.add(_row("c0/r0"))
    path = tmp_path / DB_NAME
    real_open = os.open  # the guarded reader opens with os.open (non-blocking, no follow)

    def refusing_open(file, *args, **kwargs):
        if os.fspath(file) == str(path):
            raise OSError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(StoreError) as caught:
        check_store(path)
    assert str(caught.value) == (
        f"{path} cannot be read (Permission denied): privsim cannot use it as a results "
        "store, and did not write to it. Delete it (or move it away) to start the study "
        "afresh, or choose another --out directory"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_load_and_stored_row_open_the_store_read_only(tmp_path, monkeypatch):
    with ResultStore(tmp_path) as store:
        store.add(_row("c0/r0"))
    real_connect = sqlite3.connect
    opened: list[tuple[str, bool]] = []

    def recording_connect(database, *args, **kwargs):
        opened.append((str(database), kwargs.get("uri", False)))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", recording_connect)
    for read in (lambda: load(tmp_path), lambda: stored_row(tmp_path, "c0/r0")):
        opened.clear()
        read()
        assert opened, "the store was not opened"
        for database, uri in opened:
            assert uri is True and database.startswith("file:"), database
            assert database.endswith("?mode=ro"), database
