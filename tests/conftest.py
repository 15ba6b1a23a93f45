from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable.testing import FakeClock, fake_clock, memory_store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store() -> durable.Store:
    return memory_store()


@pytest.fixture
def local_store(tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path / "store")


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with fake_clock() as c:
        yield c


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    """Environment for child interpreters: this checkout importable, store in tmp."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["DURABLE_STORE"] = str(tmp_path / "store")
    env["PYTHONUNBUFFERED"] = "1"
    return env


PY = sys.executable
