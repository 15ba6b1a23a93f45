"""examples/sqlite_store.py, a third-party backend in one SQLite file, passes
the public store conformance suite, second processes and `kill -9` included,
and its demo resumes."""

from __future__ import annotations

import functools
import importlib
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import durable
from durable.testing.store_conformance import Opener, StoreConformance

from .conftest import ROOT

EXAMPLES = ROOT / "examples"


@pytest.fixture
def sqlite_store(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The example as a module its second processes import too (they get
    this process's sys.path), so the opener pickles by reference."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return importlib.import_module("sqlite_store")


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def opener(self, sqlite_store: ModuleType, tmp_path: Path) -> Opener:
        return functools.partial(sqlite_store.open_sqlite_store, str(tmp_path / "runs.db"))


def test_the_database_is_in_wal_mode_with_one_row_per_key(
    sqlite_store: ModuleType, tmp_path: Path
) -> None:
    store = sqlite_store.open_sqlite_store(str(tmp_path / "runs.db"))
    assert isinstance(store, durable.Store) and store.url == f"sqlite://{tmp_path / 'runs.db'}"
    assert store.create("w/r/a", b"1") and not store.create("w/r/a", b"2")
    with sqlite3.connect(tmp_path / "runs.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT key, data FROM objects").fetchall() == [("w/r/a", b"1")]


def test_the_demo_runs_then_replays(tmp_path: Path, child_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "sqlite_store.py"), str(tmp_path / "runs.db")],
        env=child_env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split("== second call")
    assert first.count("fetching 10 numbers") == 1 and first.count("adding them up") == 1
    assert "fetching" not in second and "adding" not in second
    assert second.count("the sum of the first 10 numbers is 45") == 1
