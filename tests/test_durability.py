"""Durability levels (issue 13, item 1): when a local run log is fdatasync'ed.

fdatasync calls are counted by wrapping `os.fdatasync` in this process;
manifests and blobs are written with `os.fsync` (atomic files), so every
counted call is one of the run log's."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage import log as log_module
from durable._storage.durability import resolve_durability
from durable._storage.logentry import parse
from durable.errors import ConfigurationError
from tests.clikit import child_env as cli_env
from tests.clikit import durable as cli
from tests.clikit import write_flow


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of the synced file at each fdatasync (what it covered)."""
    seen: list[int] = []
    real = os.fdatasync

    def counting(fd: int) -> None:
        real(fd)
        seen.append(os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fdatasync", counting)
    return seen


def flow_of(store: durable.Store, n: int, **options: Any) -> tuple[Any, list[int]]:
    """A workflow of n steps that, after each step returns, reads the log as
    another process would (a fresh store object, no lease): the record must
    already be in the file, whatever the level."""
    in_file: list[int] = []
    reader = durable.open_store(store.url)

    @durable.step(name="work")
    def work(i: int) -> int:
        return i * 10

    @durable.workflow(name="flow", store=store, run_id="r", **options)
    def flow(fail: bool = False) -> int:
        total = 0
        for i in range(n):
            total += work(i)
            in_file.append(len(reader.peek_records("flow", "r")))
        if fail:
            raise RuntimeError("the body fails after its steps")
        return total

    return flow, in_file


def test_fsync_syncs_every_record_before_its_step_returns(tmp_path: Path, syncs: list[int]) -> None:
    flow, in_file = flow_of(durable.open_store(tmp_path / "s"), 5)
    assert flow() == 100
    assert in_file == [1, 2, 3, 4, 5]
    assert len(syncs) == 5  # one per record; the run's end finds nothing left to sync
    assert syncs == sorted(syncs) and len(set(syncs)) == 5


def test_none_never_syncs_but_writes_at_once(tmp_path: Path, syncs: list[int]) -> None:
    flow, in_file = flow_of(durable.open_store(tmp_path / "s", durability="none"), 5)
    assert flow() == 100
    assert in_file == [1, 2, 3, 4, 5]  # a process crash after any step loses nothing
    assert syncs == []


@pytest.mark.parametrize("ending", ["completed", "failed", "suspended"])
def test_batch_writes_at_once_and_syncs_at_the_run_end(
    tmp_path: Path, syncs: list[int], ending: str
) -> None:
    store = durable.open_store(tmp_path / "s", durability="batch", sync_interval=3600)
    flow, in_file = flow_of(store, 5)
    if ending == "suspended":
        flow = flow_with_suspend(store)
        with pytest.raises(durable.Suspended):
            flow()
    elif ending == "failed":
        with pytest.raises(RuntimeError):
            flow(fail=True)
    else:
        assert flow() == 100
    if ending != "suspended":
        assert in_file == [1, 2, 3, 4, 5]
    size = os.path.getsize(tmp_path / "s" / "flow" / "r" / "records.log")
    assert syncs == [size]  # one sync, at the end, covering every record


def flow_with_suspend(store: durable.Store) -> Any:
    @durable.step(name="work")
    def work(i: int) -> int:
        return i

    @durable.workflow(name="flow", store=store, run_id="r")
    def flow() -> int:
        total = sum(work(i) for i in range(5))
        durable.suspend("waiting")
        return total

    return flow


def test_batch_syncs_again_once_the_interval_passed(tmp_path: Path, syncs: list[int]) -> None:
    # An interval shorter than any step: every record finds it passed.
    store = durable.open_store(tmp_path / "s", durability="batch", sync_interval=1e-9)
    flow, _ = flow_of(store, 4)
    assert flow() == 60
    assert len(syncs) == 4


def test_the_workflow_option_wins_over_the_store_and_the_environment(
    tmp_path: Path, syncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_DURABILITY", "fsync")
    store = durable.open_store(tmp_path / "s")
    assert store.durability == "fsync"
    flow, _ = flow_of(store, 3, durability="none")
    assert flow() == 30 and syncs == []
    monkeypatch.setenv("DURABLE_DURABILITY", "none")
    assert durable.open_store(tmp_path / "t").durability == "none"
    assert durable.open_store(tmp_path / "t", durability="batch").durability == "batch"
    assert resolve_durability(None, None) == "none"
    assert resolve_durability("fsync", "none") == "fsync"
    assert resolve_durability(None, "batch") == "batch"
    monkeypatch.delenv("DURABLE_DURABILITY")
    assert resolve_durability() == "fsync"


def test_with_options_sets_the_level(tmp_path: Path, syncs: list[int]) -> None:
    flow, _ = flow_of(durable.open_store(tmp_path / "s", durability="none"), 3)
    assert flow.with_options(durability="fsync", run_id="again")() == 30
    assert len(syncs) == 3


@pytest.mark.parametrize(
    "make",
    [
        lambda p: durable.open_store(p, durability="sometimes"),
        lambda p: durable.open_store(p, durability=None, sync_interval=0),
        lambda p: durable.workflow(durability="fast")(lambda: 1),
        lambda p: durable.workflow(lambda: 1).with_options(durability="always"),  # "FSYNC" is fsync
    ],
)
def test_a_bad_level_or_interval_is_refused(tmp_path: Path, make: Callable[[Path], object]) -> None:
    with pytest.raises(ConfigurationError) as e:
        make(tmp_path / "s")
    assert "'fsync', 'batch', 'none'" in str(e.value) or "sync_interval" in str(e.value)


def test_a_bad_level_in_the_environment_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_DURABILITY", "paranoid")
    with pytest.raises(ConfigurationError, match=r"DURABLE_DURABILITY must be one of 'fsync'.*'paranoid'"):
        durable.open_store(tmp_path / "s")


def test_configure_sets_the_level_of_stores_that_have_none(
    tmp_path: Path, syncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_DURABILITY", "fsync")
    store = durable.open_store(tmp_path / "s")  # opened before configure(): still follows it
    try:
        durable.configure(durability="none")
        assert store.durability == "none"
        flow, _ = flow_of(store, 3)
        assert flow() == 30 and syncs == []
        # The store's own level and the workflow's option win over configure().
        assert durable.open_store(tmp_path / "t", durability="batch").durability == "batch"
        assert flow.with_options(durability="fsync", run_id="again")() == 30
        assert len(syncs) == 3
    finally:
        durable.configure(durability=None)
    assert store.durability == "fsync"


def test_an_object_store_takes_every_level(syncs: list[int]) -> None:
    for level in ("fsync", "batch", "none"):
        store = durable.open_store(f"memory://durability-{level}", durability=level)
        flow, in_file = flow_of(store, 3)
        assert flow() == 30 and in_file == [1, 2, 3]
    assert syncs == []  # each PUT is whole once it returns: there is no log to sync


def test_concurrent_committers_share_one_sync(
    tmp_path: Path, syncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group commit: 8 threads append to one held log. The first sync is held
    back until every thread has written, so the others find it in flight and
    wait for the next one, which covers them all: 2 syncs for 8 records (1
    when the first already covered all). Each commit returns only once its
    record lies in a synced prefix of the file."""
    store = durable.open_store(tmp_path / "s")
    store.open_run("w", "r")
    n, appended = 8, threading.Semaphore(0)
    real_write = log_module.write_all

    def counted(fd: int, frame: bytes) -> None:  # every append's one write
        real_write(fd, frame)
        appended.release()

    monkeypatch.setattr(log_module, "write_all", counted)
    real_sync = os.fdatasync
    first = threading.Lock()

    def held_back(fd: int) -> None:
        if first.acquire(blocking=False):  # only the first sync waits for the writers
            for _ in range(n):
                assert appended.acquire(timeout=30)
        real_sync(fd)  # the fixture's: it notes what the sync covered

    monkeypatch.setattr(os, "fdatasync", held_back)
    path = tmp_path / "s" / "w" / "r" / "records.log"
    covered: dict[str, bool] = {}

    def commit(i: int) -> None:
        name = f"steps/{i:08d}"
        assert store.save_record("w", "r", name, b"x" * 100) is None
        synced_prefix = path.read_bytes()[: max(syncs, default=0)]
        covered[name] = name in parse(synced_prefix, "r")[0]

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert covered == {f"steps/{i:08d}": True for i in range(n)}
    assert 1 <= len(syncs) <= 2 < n
    store.end_run("w", "r")
    assert 1 <= len(syncs) <= 2  # nothing left to sync at the end
    assert sorted(store.load_records("w", "r")) == sorted(covered)


COUNTED_FLOW = """
import atexit
import os

import durable

calls = []
real = os.fdatasync


def counting(fd):
    calls.append(fd)
    real(fd)


os.fdatasync = counting
atexit.register(lambda: open(os.environ["SYNCS"], "w").write(str(len(calls))))


@durable.step
def square(i: int) -> int:
    return i * i


@durable.workflow
def flow(n: int = 3) -> int:
    return sum(square(i) for i in range(n))
"""


def test_durable_run_takes_a_level(tmp_path: Path) -> None:
    write_flow(tmp_path, COUNTED_FLOW)
    env = cli_env(tmp_path, SYNCS=str(tmp_path / "syncs"))
    for level, run_id, expected in (("none", "a", "0"), ("fsync", "b", "3")):
        done = cli(
            tmp_path, "run", "flow.py:flow", "--run-id", run_id, "--durability", level, env=env
        )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "syncs").read_text() == expected
    bad = cli(tmp_path, "run", "flow.py:flow", "--durability", "sometimes", env=env)
    assert bad.returncode == 2 and "fsync" in bad.stderr and "batch" in bad.stderr


RECOVERED_FLOW = """
import os

import durable


@durable.step
def square(i: int) -> int:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(f"square{i}\\n")
    if os.environ.get("FAIL_AT") == str(i):
        raise ValueError(f"failing at {i}")
    return i * i


@durable.workflow
def flow(n: int = 3) -> int:
    return sum(square(i) for i in range(n))
"""


def test_the_commands_that_write_records_take_a_level(
    tmp_path: Path, syncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # DESIGN §5: `--durability` was `durable run`'s only; `recover` (which
    # resumes runs) and `fork` (which copies records) refused it.
    from collections import Counter

    from durable._cli.main import main

    name = f"recovered_{os.getpid()}_{id(syncs)}"
    write_flow(tmp_path, RECOVERED_FLOW, f"{name}.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))  # `recover` adds the working folder
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOW_COUNTS", str(tmp_path / "counts.txt"))
    store = str(tmp_path / "store")
    flow = __import__(name).flow.with_options(store=store)
    monkeypatch.setenv("FAIL_AT", "2")
    for run_id in ("a", "b"):
        with pytest.raises(ValueError):
            flow.with_options(run_id=run_id)()
    monkeypatch.delenv("FAIL_AT")
    syncs.clear()
    assert main(["recover", f"{name}:flow", "--store", store, "--durability", "none"]) == 0
    assert syncs == []  # both runs finished, and no record was synced
    assert main(["fork", "a", "--at", "3", "--new-run-id", "f0", "--store", store,
                 "--durability", "none"]) == 0  # fmt: skip
    assert syncs == []
    assert main(["fork", "a", "--at", "3", "--new-run-id", "f1", "--store", store,
                 "--durability", "fsync"]) == 0  # fmt: skip
    assert len(syncs) == 4  # one per copied record: 3 steps and the failed attempt
    counted = Counter((tmp_path / "counts.txt").read_text().split())
    assert counted == {"square0": 2, "square1": 2, "square2": 4}  # failed twice, recovered once each
    sys.modules.pop(name, None)
