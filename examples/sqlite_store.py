"""A durable store in one SQLite file: your own backend in about 100 lines.

durable needs six primitives from a backend (`durable.KeyStore`): get,
get_many, put, create, list, delete. The one that matters most is `create`:
a create-only write that exactly one writer wins, across threads and
processes. Here it is an INSERT into a table whose key is the primary key:
SQLite lets one INSERT in and refuses the others with an IntegrityError.
WAL mode lets readers go on while one process writes, `synchronous=FULL`
puts every committed write on disk, and each thread (and each process) has
its own connection, so the file is safe to share between processes on one
machine. Run it to see a workflow resume on it:

    python examples/sqlite_store.py runs.db
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import durable

SCHEMA = "CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, data BLOB NOT NULL)"
BATCH = 500  # keys per IN (...) query, below SQLite's limit on parameters


class SQLiteKeyStore:
    """The key-store primitives over one SQLite file."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.url = f"sqlite://{self.path}"  # what durable's messages call it
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork: a connection
        never crosses into another process)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or self._local.pid != os.getpid():
            # isolation_level=None: every statement commits on its own.
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.execute("PRAGMA synchronous=FULL")
            _patiently(lambda: _set_up(db))
            self._local.db, self._local.pid = db, os.getpid()
        return db

    def get(self, key: str) -> bytes | None:
        row = self._db().execute("SELECT data FROM objects WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, data FROM objects WHERE key IN ({marks})"
            found.update((k, bytes(v)) for k, v in self._db().execute(query, chunk))
        return found

    def _write(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        """One write transaction, which takes the write lock first."""
        db, rows = self._db(), list(rows)
        _patiently(lambda: db.execute("BEGIN IMMEDIATE"))
        try:
            db.executemany(sql, rows)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def put(self, key: str, data: bytes) -> None:
        upsert = "ON CONFLICT (key) DO UPDATE SET data = excluded.data"
        self._write(f"INSERT INTO objects (key, data) VALUES (?, ?) {upsert}", [(key, data)])

    def create(self, key: str, data: bytes) -> bool:
        try:
            self._write("INSERT INTO objects (key, data) VALUES (?, ?)", [(key, data)])
        except sqlite3.IntegrityError:  # the key exists: another writer won
            return False
        return True

    def list(self, prefix: str) -> list[str]:
        # substr, not LIKE or GLOB: a key may hold `%`, `_` and the like.
        query = "SELECT key FROM objects WHERE substr(key, 1, ?) = ? ORDER BY key"
        return [k for (k,) in self._db().execute(query, (len(prefix), prefix))]

    def delete(self, keys: Iterable[str]) -> None:
        self._write("DELETE FROM objects WHERE key = ?", ((k,) for k in keys))


def _set_up(db: sqlite3.Connection) -> None:
    # Switching to WAL takes the file's exclusive lock: only the first
    # connection does it. The table is made under the write lock.
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        db.execute("PRAGMA journal_mode=WAL")
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(SCHEMA)
    finally:
        db.execute("COMMIT")


def _patiently(step: Callable[[], object]) -> None:
    """SQLite waits for a lock (`timeout`) except in a few cases, such as a
    connection's first look at a file another process is setting up, where
    it answers "database is locked" at once: those are tried again."""
    deadline = time.monotonic() + 60
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


def open_sqlite_store(path: str, **options: Any) -> durable.Store:
    """A durable store in the SQLite file at path (store options as for
    `durable.open_store`: signing_key, lease_ttl, ...)."""
    return durable.open_store(SQLiteKeyStore(path), **options)


@durable.step
def fetch(n: int) -> list[int]:
    print(f"  fetching {n} numbers")
    return list(range(n))


@durable.step
def total(numbers: list[int]) -> int:
    print("  adding them up")
    return sum(numbers)


@durable.workflow(run_id="sqlite-demo")
def report(n: int) -> str:
    return f"the sum of the first {n} numbers is {total(fetch(n))}"


if __name__ == "__main__":
    store = open_sqlite_store(sys.argv[1] if len(sys.argv) > 1 else "runs.db")
    for attempt in ("first call", "second call"):
        print(f"== {attempt}")
        print(report.with_options(store=store)(10))
