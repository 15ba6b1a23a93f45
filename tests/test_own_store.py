"""examples/sqlite_store.py, a third-party backend in one SQLite file, passes
the public store conformance suite, second processes and `kill -9` included,
and its demo resumes."""

from __future__ import annotations

import functools
import importlib
import re
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


# -- what open_store makes of a backend that breaks the contract --------------


class Broken:
    """A dict-backed key store whose answers a test spoils one at a time."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def get(self, key: str) -> object:
        return self.data.get(key)

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put(self, key: str, data: bytes) -> None:
        self.data[key] = data

    def create(self, key: str, data: bytes) -> object:
        if key in self.data:
            return False
        self.data[key] = data
        return True

    def list(self, prefix: str) -> list[str]:
        return [k for k in self.data if k.startswith(prefix)]

    def delete(self, keys: list[str]) -> None:
        for k in keys:
            self.data.pop(k, None)


def _counted_flow(store: durable.Store, calls: list[int]) -> durable.Workflow[[], list[int]]:
    """Three steps that append their argument to `calls`, run `r` of `own`."""

    @durable.step(name="add")
    def add(i: int) -> int:
        calls.append(i)
        return i + 1

    @durable.workflow(name="own", store=store, run_id="r")
    def flow() -> list[int]:
        return [add(i) for i in range(3)]

    return flow


def test_a_backend_error_is_a_storage_error_and_keeps_the_records() -> None:
    backend = Broken()
    store = durable.open_store(backend)
    calls: list[int] = []
    flow = _counted_flow(store, calls)

    real_create = backend.create

    def create(key: str, data: bytes) -> object:
        if key.endswith("steps/00000001"):
            raise OSError("the disk is full")
        return real_create(key, data)

    backend.create = create  # type: ignore[method-assign]
    with pytest.raises(durable.StorageError, match="the disk is full") as err:
        flow()
    assert err.value.url == "tests.test_own_store.Broken" and calls == [0, 1]
    backend.create = real_create  # type: ignore[method-assign]
    assert flow() == [1, 2, 3] and calls == [0, 1, 1, 2]


def test_a_release_the_store_failed_does_not_lock_this_process_out() -> None:
    """The released marker's write fails once (the store was away as the run
    ended): the run's own process calls it again at once and it replays,
    rather than finding the run held by itself until the lease expires."""
    backend = Broken()
    store = durable.open_store(backend, lease_ttl=600)
    calls: list[int] = []
    flow = _counted_flow(store, calls)

    real_create = backend.create

    def create(key: str, data: bytes) -> object:
        if "/lease/" in key and b'"released"' in data:
            backend.create = real_create  # type: ignore[method-assign]  # once
            raise OSError("connection reset")
        return real_create(key, data)

    backend.create = create  # type: ignore[method-assign]
    assert flow() == [1, 2, 3] and calls == [0, 1, 2]
    assert backend.create == real_create  # the marker's write did fail
    assert flow() == [1, 2, 3] and calls == [0, 1, 2]


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        ("create", "create('w/r/k') returned None: it must return True or False"),
        ("get", "get('w/r/k') returned str: it must return bytes"),
    ],
)
def test_a_wrong_answer_is_refused_not_trusted(spoil: str, message: str) -> None:
    backend = Broken()
    store = durable.open_store(backend)
    if spoil == "create":
        backend.create = lambda key, data: None  # type: ignore[method-assign]
        with pytest.raises(durable.StorageError, match=re.escape(message)):
            store.create("w/r/k", b"v")
    else:
        backend.data["w/r/k"] = "text"  # type: ignore[assignment]
        with pytest.raises(durable.StorageError, match=re.escape(message)):
            store.get("w/r/k")


def test_open_store_names_what_a_backend_lacks_and_refuses_foreign_options() -> None:
    with pytest.raises(durable.ConfigurationError, match="lacks get_many, put, create, list, delete"):
        durable.open_store(dict())  # has get only
    with pytest.raises(durable.ConfigurationError, match="not endpoint_url"):
        durable.open_store(Broken(), endpoint_url="http://x")
    store = durable.open_store(Broken(), lease_ttl=5)
    assert store.lease_ttl == 5 and durable.open_store(store) is store
    with pytest.raises(durable.ConfigurationError, match="already open"):
        durable.open_store(store, lease_ttl=1)
