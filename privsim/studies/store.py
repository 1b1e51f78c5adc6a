"""The results store: one SQLite database per study, one row per replication.

SQLite rather than Parquet: every finished replication is committed in its own
transaction (write-ahead log, synchronous commits), so a study killed at any instant —
even with ``kill -9`` — leaves a consistent file holding exactly the rows that finished;
the row id is the primary key, so a resumed study can neither duplicate nor lose a row.
Parquet files are immutable and would need one file per row or periodic rewrites to get
the same guarantee. Rows are stored as JSON documents and flattened on loading.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from privsim.kit.result import without_timing

__all__ = ["DB_NAME", "ResultStore", "load"]

DB_NAME = "results.sqlite"

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


class ResultStore:
    """Append-only, crash-safe store of study rows."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / DB_NAME
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

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

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def rows(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self._db.execute("SELECT row FROM rows ORDER BY row_id")]

    def row(self, row_id: str) -> dict[str, Any] | None:
        found = self._db.execute("SELECT row FROM rows WHERE row_id = ?", (row_id,)).fetchone()
        return None if found is None else json.loads(found[0])

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])


def load(directory: str | Path) -> Any:
    """A study's rows as a pandas DataFrame, one row per replication, columns flattened
    (``grid.privacy.epsilon``, ``accuracy.rmse``, ``privacy.achieved_epsilon`` …)."""
    import pandas as pd

    path = Path(directory) / DB_NAME
    if not path.exists():
        raise FileNotFoundError(
            f"no study results at {path}; run 'privsim sweep STUDY.toml --out {directory}'"
        )
    with ResultStore(directory) as store:
        rows = store.rows()
    return pd.json_normalize(rows, sep=".")


def rows_without_timing(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with wall-clock fields removed (for comparing runs across executors)."""
    return [without_timing(r) for r in rows]
