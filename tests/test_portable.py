"""`import durable` where there is no `fcntl` (Windows), and the local store's
lock through `msvcrt.locking`. The Windows code path runs on Linux against a
stand-in `msvcrt` (tests/winlike/msvcrt_standin.py) built on open-file-description locks, which
have Windows' semantics: a lock per open file, dropped when the process dies."""

from __future__ import annotations

import ast
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable._storage import oslock as os_lock

WINLIKE = Path(__file__).resolve().parent / "winlike"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the msvcrt stand-in uses Linux OFD locks"
)

SCRIPT = """
import os, sys
assert sys.modules["fcntl"] is None  # tests/winlike/sitecustomize.py shut it out
import msvcrt
import durable
from durable._storage import oslock
from durable.testing import memory_store

LOG, WHERE = sys.argv[1], sys.argv[2]

@durable.step
def work(i: int) -> int:
    with open(LOG, "a") as f:
        f.write(f"{i}\\n")
    if i == 1 and os.environ.get("HOLD"):  # the parent kills us here
        print("HOLDING", flush=True)
        sys.stdin.readline()
    if i == 2 and os.path.exists(LOG + ".fail"):
        os.remove(LOG + ".fail")
        raise RuntimeError("step 2 fails once")
    return i * i

@durable.workflow(run_id="w")
def flow() -> list:
    return [work(i) for i in range(3)]

store = memory_store() if WHERE == "memory" else durable.open_store(WHERE)
# A memory store lives in this process only: its re-run is here too.
for _ in range(2 if WHERE == "memory" else 1):
    try:
        run = flow.with_options(store=store).run()
        print("RUN", run.value, run.steps_executed, run.steps_replayed)
    except RuntimeError as e:
        print("FAILED", e)
print("KIND", oslock.KIND)
print("LOCKS", msvcrt.calls)
"""


@pytest.fixture
def windows_like(tmp_path: Path, child_env: dict[str, str]) -> Iterator[types.SimpleNamespace]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    env = dict(child_env, PYTHONPATH=str(WINLIKE) + os.pathsep + child_env["PYTHONPATH"])
    log = tmp_path / "log"
    children: list[subprocess.Popen[str]] = []

    def start(where: str, hold: bool = False) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, str(script), str(log), where],
            env=dict(env, HOLD="1") if hold else env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        return child

    def run(where: str) -> tuple[int, list[str], str]:
        out, err = start(where).communicate(timeout=120)
        return children[-1].returncode, out.splitlines(), err

    yield types.SimpleNamespace(
        start=start,
        run=run,
        executed=lambda: log.read_text().split(),
        fail_once=lambda: Path(f"{log}.fail").touch(),
    )
    for child in children:
        if child.poll() is None:
            child.kill()
        child.communicate()


LOCK = os_lock.WINDOWS_LOCK_OFFSET
FAILED = "FAILED step 2 fails once"


def test_memory_store_without_fcntl(windows_like: types.SimpleNamespace) -> None:
    windows_like.fail_once()
    code, out, err = windows_like.run("memory")
    assert code == 0, err
    assert out == [FAILED, "RUN [0, 1, 4] 1 2", "KIND msvcrt", "LOCKS []"]
    assert windows_like.executed() == ["0", "1", "2", "2"]


def test_local_store_locks_through_msvcrt_and_replays(
    windows_like: types.SimpleNamespace, tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    windows_like.fail_once()
    for expected in (FAILED, "RUN [0, 1, 4] 1 2"):  # each in a process of its own
        code, out, err = windows_like.run(store)
        assert code == 0, err
        assert out[:2] == [expected, "KIND msvcrt"]
        calls = ast.literal_eval(out[2].removeprefix("LOCKS "))
        # The lease: LK_NBLCK first and LK_UNLCK last; the run log's locks
        # (LK_LOCK) in between, each released (LK_UNLCK) before the next.
        assert calls[0] == (2, LOCK, 1) and calls[-1] == (0, LOCK, 1)
        inner = calls[1:-1]
        assert inner and inner == [(1, LOCK, 1), (0, LOCK, 1)] * (len(inner) // 2)
    assert windows_like.executed() == ["0", "1", "2", "2"]


@pytest.mark.slow
def test_a_held_lease_refuses_a_second_process_until_kill_9(
    windows_like: types.SimpleNamespace, tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    holder = windows_like.start(store, hold=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "HOLDING"
    code, out, err = windows_like.run(store)
    assert code == 1 and "RunLockedError" in err and f"pid {holder.pid}" in err, err
    os.kill(holder.pid, signal.SIGKILL)
    assert holder.wait() == -signal.SIGKILL
    # The OS dropped the dead holder's lock: the next run takes it at once,
    # replays step 0 and runs step 1 (cut short by the kill) and step 2.
    code, out, err = windows_like.run(store)
    assert code == 0, err
    assert out[0] == "RUN [0, 1, 4] 2 1"
    assert windows_like.executed() == ["0", "1", "1", "2"]


# -- the lock itself, on both implementations ---------------------------------


def _load(name: str, path: str | Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _windows_oslock(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """durable/_storage/oslock.py loaded again as Windows would: no fcntl, the stand-in."""
    monkeypatch.setitem(sys.modules, "msvcrt", _load("msvcrt", WINLIKE / "msvcrt_standin.py"))
    monkeypatch.setitem(sys.modules, "fcntl", None)
    return _load("oslock_windows", os_lock.__file__)


@pytest.fixture(params=["flock", "msvcrt"])
def oslock(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = os_lock if request.param == "flock" else _windows_oslock(monkeypatch)
    assert module.KIND == request.param
    return module


def test_one_open_file_at_a_time_holds_the_lock(oslock: types.ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "lease"
    a, b = (os.open(path, os.O_RDWR | os.O_CREAT) for _ in range(2))
    try:
        os.write(a, b"holder")
        assert oslock.lock_exclusive(a, blocking=False)
        assert not oslock.lock_exclusive(b, blocking=False)
        assert os.lseek(a, 0, os.SEEK_CUR) == 6  # the lock moved nobody's position
        assert os.pread(b, 100, 0) == b"holder"  # the holder's document stays readable
        oslock.unlock(a)
        assert oslock.lock_exclusive(b, blocking=False)
        assert not oslock.lock_exclusive(a, blocking=False)
        if oslock.KIND == "msvcrt":  # one byte far past the data; LK_NBLCK, LK_UNLCK
            assert oslock.msvcrt.calls[:3] == [(2, LOCK, 1), (2, LOCK, 1), (0, LOCK, 1)]
    finally:
        os.close(a)
        os.close(b)


def test_a_blocking_lock_waits_for_the_holder(oslock: types.ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "lease"
    a, b = (os.open(path, os.O_RDWR | os.O_CREAT) for _ in range(2))
    taken = threading.Event()

    def wait_for_it() -> None:
        oslock.lock_exclusive(b, blocking=True)
        taken.set()

    try:
        assert oslock.lock_exclusive(a, blocking=True)
        waiter = threading.Thread(target=wait_for_it, daemon=True)
        waiter.start()
        assert not taken.wait(0.3)  # still held by a: it cannot have the lock
        oslock.unlock(a)
        waiter.join(30)
        assert taken.is_set()
    finally:
        os.close(a)
        os.close(b)
