"""The results store: one SQLite database per study, one row per replication.

SQLite rather than Parquet: every finished replication is committed in its own
transaction (write-ahead log, synchronous commits), so a study killed at any instant —
even with ``kill -9`` — leaves a consistent file holding exactly the rows that finished;
the row id is the primary key, so a resumed study can neither duplicate nor lose a row.
Parquet files are immutable and would need one file per row or periodic rewrites to get
the same guarantee. Rows are stored as JSON documents and flattened on loading.

A store is created atomically: its SQLite file, schema and all, is built under a
temporary name in the same directory (``.results.sqlite.<random>.tmp``), fsynced, and only
then renamed to ``results.sqlite`` (and the directory fsynced). A sweep killed at any
instant therefore leaves either no ``results.sqlite`` or a complete store; a temporary
file left by a kill is never read as a store, and the next sweep of the directory deletes
it (:func:`remove_leftovers`). A ``results.sqlite`` that an older privsim left when killed
before its first write — 0 bytes, or an SQLite header without tables
(:func:`is_unstarted`) — holds nothing: a sweep replaces it the same way.

An existing file is checked read-only before anything opens it for writing (an SQLite
header, this schema, SQLite's quick integrity check): a corrupted or foreign
``results.sqlite`` is a :class:`StoreError` naming the file, and is never written. A store
belongs to one study (``meta.study``, set in the transaction of the first write), and a
sweep holds an exclusive lock on its directory (:func:`lock_directory`).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from privsim.inputs import InputFileError, Shape, input_exists, parse_json, read_input_head
from privsim.kit.result import without_timing
from privsim.outputs import open_lock, output_folder, refuse_links_out
from privsim.studies.study import StudyError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the store's transaction still guards it
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DB_NAME",
    "LOCK_NAME",
    "ResultStore",
    "StoreBusyError",
    "StoreError",
    "check_store",
    "is_unstarted",
    "load",
    "lock_directory",
    "remove_leftovers",
    "stored_row",
]

DB_NAME = "results.sqlite"
LOCK_NAME = "sweep.lock"
#: The temporary names a store is built under before it is renamed to ``DB_NAME``.
_TMP_GLOB = f".{DB_NAME}.*.tmp"
#: SQLite's files beside a database (write-ahead log, its index, a rollback journal).
_SIDE_FILES = ("-wal", "-shm", "-journal")
#: Why a file without rows or tables is there, and what to do about it.
_UNSTARTED_HINT = (
    ", as a sweep stopped before its first write leaves it (run that sweep again to resume it)"
)
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: The files SQLite writes in place for a store (the database and the files beside it).
_STORE_FILES = (DB_NAME, *(DB_NAME + side for side in _SIDE_FILES))
#: What a stored row must look like: its identity, its status, and the flags the
#: summaries count (a guarantee that is "yes" is refused here, not by pandas later).
ROW_SHAPE = Shape(
    top=dict,
    required={"row_id": str, "cell": str, "replication": int, "seed": int, "status": str},
    optional={
        "protocol": str,
        "grid": dict,
        "privacy": dict,
        "privacy.guarantee_met": (bool, type(None)),
        "privacy.non_private": (bool, type(None)),
        "methods": dict,
        "methods.*": dict,
        "methods.*.privacy": dict,
        "methods.*.privacy.guarantee_met": (bool, type(None)),
        "methods.*.privacy.non_private": (bool, type(None)),
        "error": (str, type(None)),
    },
)
#: The tables and columns of a results store; any other table makes a file foreign.
_TABLES = {
    "rows": ("row_id", "cell", "replication", "seed", "status", "row"),
    "meta": ("key", "value"),
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
    row_id TEXT PRIMARY KEY,
    cell TEXT NOT NULL,
    replication INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    row TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class StoreError(StudyError):
    """A ``results.sqlite`` is corrupted, foreign or unreadable; the message names the
    file and what to do. Nothing was written into it."""


class StoreBusyError(StudyError):
    """Another sweep holds the study directory's lock."""


def _unusable(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} {what}: privsim cannot use it as a results store, and did not write to it. "
        "Delete it (or move it away) to start the study afresh, or choose another --out "
        "directory"
    )


def _read_only(path: Path) -> sqlite3.Connection:
    uri = f"{path.resolve().as_uri()}?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def is_unstarted(path: str | Path) -> bool:
    """Whether ``path`` is what an older privsim left when killed between creating its store
    and writing the schema: a file of 0 bytes, or a sound SQLite file with no table (nor any
    other schema entry). It holds nothing, so a sweep may replace it. Read-only."""
    path = Path(path)
    try:
        if not path.is_file():
            return False
        if path.stat().st_size == 0:
            return True
        head = read_input_head(path, "results store", 100)
    except (OSError, InputFileError):
        return False
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return False
    try:
        db = _read_only(path)
        try:
            if db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                return False
            return db.execute("PRAGMA quick_check(1)").fetchone() == ("ok",)
        finally:
            db.close()
    except sqlite3.Error:
        return False


def check_store(path: str | Path, *, unstarted_ok: bool = False) -> None:
    """Refuse (:class:`StoreError`) a ``results.sqlite`` that is empty, not SQLite,
    truncated or otherwise corrupted, or has another schema: checked through a read-only
    connection, before anything writes. A missing file passes (a new store), and so does,
    with ``unstarted_ok`` (for a sweep, which replaces it), an unstarted one
    (:func:`is_unstarted`)."""
    path = Path(path)
    if not input_exists(path, "results store"):  # a name too long: named, not an OSError
        return
    if not path.is_file():
        raise _unusable(path, "is not a regular file")
    if is_unstarted(path):
        if unstarted_ok:
            return
        what = "is empty (0 bytes)" if path.stat().st_size == 0 else "has no tables"
        raise _unusable(path, what + _UNSTARTED_HINT)
    try:
        head = read_input_head(path, "results store", 100)
    except InputFileError as exc:  # a FIFO swapped in, no permission
        raise _unusable(path, f"cannot be read ({exc.reason})") from None
    if not head:
        raise _unusable(path, "is empty (0 bytes)")
    if not head.startswith(_SQLITE_MAGIC):
        raise _unusable(path, "is not an SQLite database (random or foreign bytes)")
    if len(head) < 100:
        raise _unusable(path, f"is truncated ({len(head)} bytes, shorter than an SQLite header)")
    try:
        db = _read_only(path)
        try:
            names = [
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            foreign = sorted(n for n in names if n not in _TABLES and not n.startswith("sqlite_"))
            if foreign:
                raise _unusable(path, f"has foreign tables ({', '.join(foreign[:5])})")
            for table in names:
                if table not in _TABLES:
                    continue
                columns = tuple(r[1] for r in db.execute(f"PRAGMA table_info({table})"))
                if columns != _TABLES[table]:
                    raise _unusable(path, f"has a table '{table}' with other columns {columns}")
            verdict = db.execute("PRAGMA quick_check(1)").fetchone()
            if verdict is None or verdict[0] != "ok":
                raise _unusable(path, "fails SQLite's integrity check (truncated or damaged)")
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise _unusable(path, f"is corrupted or unreadable (SQLite: {exc})") from None


def _create(path: Path) -> None:
    """Put a complete, empty store at ``path`` unless a store is there: built under a
    temporary name beside it, fsynced, then renamed into place. An unstarted file
    (:func:`is_unstarted`) is replaced; anything else at ``path`` is left for SQLite (and
    its named error)."""
    if path.exists() and not is_unstarted(path):
        return
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        _build_empty(tmp)
        _publish(tmp, path)
    except OSError as exc:
        raise StoreError(
            f"{path} cannot be created ({exc.strerror or exc}): make {path.parent} writable, "
            "or choose another --out directory"
        ) from None
    finally:
        _remove_with_side_files(tmp)


def _build_empty(tmp: Path) -> None:
    """A new SQLite file at ``tmp`` with the store's schema, in write-ahead mode, on disk."""
    db = sqlite3.connect(tmp, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
    finally:
        db.close()  # the last connection: the schema is checkpointed into the file
    _fsync(tmp)


def _publish(tmp: Path, path: Path) -> None:
    """Rename the complete store ``tmp`` to ``path`` (replacing an unstarted file), after
    deleting SQLite files that a store gone from ``path`` left beside it (a write-ahead log
    there would be replayed into the new store)."""
    for side in _SIDE_FILES:
        path.with_name(path.name + side).unlink(missing_ok=True)
    if path.exists():
        os.replace(tmp, path)
    else:
        _link_new(tmp, path)
    _fsync(path.parent)


def _link_new(tmp: Path, path: Path) -> None:
    """``tmp`` as the new ``path``, never replacing a store that another process created
    meanwhile (a hard link fails if ``path`` exists; the caller then uses that store)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    except OSError:  # no hard links on this file system: the directory lock guards sweeps
        os.replace(tmp, path)


def _fsync(path: Path) -> None:
    """Flush a file, or a directory's entries (POSIX only), to disk."""
    if path.is_dir() and not hasattr(os, "O_DIRECTORY"):
        return  # pragma: no cover - directories cannot be opened (Windows)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_with_side_files(path: Path) -> None:
    for name in (path.name, *(path.name + side for side in _SIDE_FILES)):
        path.with_name(name).unlink(missing_ok=True)


def remove_leftovers(directory: str | Path) -> int:
    """Delete what killed store creations left (``.results.sqlite.*.tmp`` and SQLite's files
    beside them), never a store; how many files that was. Call it only under
    :func:`lock_directory`: a creation running meanwhile would lose its temporary file."""
    leftovers = sorted(Path(directory).glob(_TMP_GLOB + "*"))
    for leftover in leftovers:
        leftover.unlink(missing_ok=True)
    return len(leftovers)


class ResultStore:
    """Append-only, crash-safe store of study rows.

    An existing file is checked first (:func:`check_store`); a missing or unstarted one is
    created atomically (see the module's docstring). ``readonly`` opens an existing store
    for reading only (``report``, ``replay``, :func:`load`)."""

    def __init__(
        self, directory: str | Path, *, readonly: bool = False, check: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        if check:
            check_store(self.path, unstarted_ok=not readonly)
        try:
            if readonly:
                if not self.path.is_file():
                    raise FileNotFoundError(f"no study results at {self.path}")
                self._db = _read_only(self.path)
                return
            output_folder(self.directory, "results directory")
            # SQLite writes these in place, following links: none may lead outside
            refuse_links_out(self.directory, _STORE_FILES, "results store file")
            _create(self.path)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise _unusable(self.path, f"cannot be opened (SQLite: {exc})") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT row_id FROM rows")}

    def add(self, row: dict[str, Any]) -> bool:
        """Commit one row; False if a row with that id is already stored."""
        cur = self._db.execute(
            "INSERT OR IGNORE INTO rows (row_id, cell, replication, seed, status, row) VALUES (?, ?, ?, ?, ?, ?)",
            (
                row["row_id"],
                row["cell"],
                row["replication"],
                row["seed"],
                row["status"],
                json.dumps(row, sort_keys=True),
            ),
        )
        return cur.rowcount == 1

    def claim(self, study: str) -> None:
        """Bind the store to ``study`` (a canonical description), or refuse
        (:class:`StudyError`) if it holds another study's results. The check and the first
        write are one ``BEGIN IMMEDIATE`` transaction, so of two sweeps of different
        studies racing for one store, the second is refused before it writes a row."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            found = self.meta("study")
            if found is None:
                self.set_meta("study", study)
            elif found != study:
                raise StudyError(
                    f"{self.directory} holds results of a different study (name, seed, base or "
                    "grid changed); to resume it, give the same study file and --set options; "
                    "else use a new --out directory"
                )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def _decode(self, row_id: str, text: str) -> dict[str, Any]:
        try:
            row = parse_json(text, "stored row", source=row_id[:40], shape=ROW_SHAPE)
        except InputFileError as exc:  # not JSON, too deep, a list, a "yes" guarantee
            raise _unusable(
                self.path, f"holds a row {row_id[:40]!r} that privsim cannot use ({exc.reason})"
            ) from None
        return dict(row)

    def rows(self) -> list[dict[str, Any]]:
        found = self._db.execute("SELECT row_id, row FROM rows ORDER BY row_id")
        return [self._decode(str(i), str(r)) for i, r in found]

    def row(self, row_id: str) -> dict[str, Any] | None:
        found = self._db.execute("SELECT row FROM rows WHERE row_id = ?", (row_id,)).fetchone()
        return None if found is None else self._decode(row_id, str(found[0]))

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])


def load(directory: str | Path) -> Any:
    """A study's rows as a pandas DataFrame, one row per replication, columns flattened
    (``grid.privacy.epsilon``, ``accuracy.rmse``, ``privacy.achieved_epsilon`` …)."""
    import pandas as pd

    path = Path(directory) / DB_NAME
    if not input_exists(path, "results store"):
        raise FileNotFoundError(
            f"no study results at {path}; run 'privsim sweep STUDY.toml --out {directory}'"
        )
    with ResultStore(directory, readonly=True) as store:
        rows = store.rows()
    return _infinite_as_floats(pd.json_normalize(rows, sep="."))


def _infinite_as_floats(frame: Any) -> Any:
    """JSON has no infinity: results write ε = ∞ as ``"inf"``. A column of numbers and
    such strings becomes a float column, so medians and comparisons work."""
    import pandas as pd

    words = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}
    for column in frame.select_dtypes(include=["object", "string"]).columns:
        values = frame[column]
        text = values.map(lambda v: isinstance(v, str))
        if not text.any() or not values[text].isin(list(words)).all():
            continue
        rest = values[~text].dropna()
        if rest.map(lambda v: isinstance(v, int | float) and not isinstance(v, bool)).all():
            frame[column] = pd.to_numeric(values.replace(words), errors="coerce")
    return frame


def stored_row(directory: str | Path, row_id: str) -> dict[str, Any] | None:
    """One stored row, read-only; None when there is no store or no such row."""
    if not input_exists(Path(directory) / DB_NAME, "results store"):
        return None
    with ResultStore(directory, readonly=True) as store:
        return store.row(row_id)


@contextmanager
def lock_directory(directory: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on a study directory (``sweep.lock`` in it, which records the
    holder's pid); a second holder is refused at once with :class:`StoreBusyError`. The
    operating system releases the lock when its process ends, even by ``kill -9``."""
    if fcntl is None:  # pragma: no cover - not POSIX
        yield
        return
    # O_NOFOLLOW: a sweep.lock that is a link (to a file of the user's, say) is refused
    fh = open_lock(directory, LOCK_NAME, "sweep lock file")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read(20).strip() or "unknown"
            raise StoreBusyError(
                f"another sweep is running in {directory} (pid {holder}); wait for it to "
                "finish, or use another --out directory"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()  # releases the lock


def rows_without_timing(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with wall-clock fields removed (for comparing runs across executors)."""
    return [without_timing(r) for r in rows]
