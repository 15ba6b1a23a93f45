"""Nothing is written after the lease is lost (issue 11, item 3): every write
to a run checks the run's lease first, and manifest writes are
compare-and-swap. The real-process test stops a holder on S3 (moto) past its
lease with SIGSTOP; another process takes the run over and completes it; the
first, continued, writes nothing and raises LeaseLostError."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from tests import forkcli
from tests.conftest import ROOT, Place

HOLDER = """
import json, os, sys
import durable

@durable.step(name="work", cache=os.environ.get("CACHED") == "1")
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # the parent stops us here, then lets us go on
        if os.environ.get("CLOCK_BACK"):  # the wall clock set back meanwhile (NTP, a VM)
            import time
            real = time.time
            time.time = lambda: real() - float(os.environ["CLOCK_BACK"])
    return f"{i} by {os.getpid()}"

@durable.workflow(name="fence", run_id="shared")
def fence() -> list:
    return [work(i) for i in range(4)]

store = durable.open_store(os.environ["FENCE_STORE"], lease_ttl=float(os.environ["TTL"]))
try:
    run = fence.with_options(store=store, wait=120).run()
except durable.LeaseLostError as e:
    print("LEASE_LOST", e.position, flush=True)
    print(str(e).replace("\\n", " "), flush=True)
    sys.exit(4)
print("DONE", json.dumps(run.value), flush=True)
"""


def spawn(script: Path, env: dict[str, str], **extra: str) -> subprocess.Popen[str] | forkcli.Forked:
    """`python SCRIPT`, its stdin and stdout pipes: a process of its own,
    forked from an interpreter that imported durable once (`forkcli`)."""
    return forkcli.popen([str(script)], script.parent, dict(env, **extra), stdin_pipe=True)


def takes_over(script: Path, env: dict[str, str]) -> None:
    """A second process that runs the script to its end, executing steps 1
    to 3 itself (step 0 was recorded by the first holder)."""
    second = spawn(script, env)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out
    tag, _, value = out.strip().partition(" ")
    assert tag == "DONE"
    assert json.loads(value)[1:] == [f"{i} by {second.pid}" for i in (1, 2, 3)]


def snapshot(store: durable.Store) -> dict[str, bytes]:
    keys = store.list("")  # the runs and the cache
    return store.get_many(keys)


def stop_take_over_and_go_on(
    script: Path, env: dict[str, str], s3_url: str, *, clear_cache: bool, **extra: str
) -> tuple[subprocess.Popen[str] | forkcli.Forked, str, dict[str, bytes]]:
    """Stop (SIGSTOP) a holder inside its operation 1, let a second process
    wait for its lease to expire, take the run over and complete it, then
    continue the first: (the first process, what it printed, the store as
    the second left it)."""
    first = spawn(script, env, HOLD_AT="1", **extra)
    assert first.stdout is not None and first.stdin is not None
    try:
        assert first.stdout.readline().strip() == "HOLDING"  # 0 recorded, 1 running
        os.kill(first.pid, signal.SIGSTOP)
        takes_over(script, env)
        store = durable.open_store(s3_url)
        if clear_cache:  # as `durable cache clear` would
            store.delete([k for k in store.list("") if not k.startswith("fence/")])
        before = snapshot(store)
        first.stdin.write("\n")
        first.stdin.flush()
        os.kill(first.pid, signal.SIGCONT)
        said, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.kill()
            first.wait()
    return first, said, before


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["", "clock_set_back", "cache_cleared"])
def test_a_holder_stopped_past_its_lease_writes_nothing_after_a_takeover(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], fault: str
) -> None:
    """Also when the holder's wall clock is set back while it is stopped (it
    must not go on trusting its lease by that clock), and when its step is
    cached and the cache was cleared meanwhile (it must not store its output
    there either)."""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **s3_env)
    env.update(FENCE_STORE=s3_url, COUNT_LOG=str(log), TTL="2")
    env.update(CACHED="1" if fault == "cache_cleared" else "0")
    first, said, before = stop_take_over_and_go_on(
        script, env, s3_url, clear_cache=fault == "cache_cleared",
        CLOCK_BACK="1000" if fault == "clock_set_back" else "",
    )  # fmt: skip
    said, message = said.strip().split("\n")
    assert (first.returncode, said) == (4, "LEASE_LOST 1")
    # Step 1 did run here (its record was the write refused): the message
    # must not say otherwise.
    assert "nothing from position 1 on was recorded, and no later step was started" in message
    # Not one object written, changed or removed by the continued holder.
    assert snapshot(durable.open_store(s3_url)) == before
    (run,) = _listing(s3_url)
    assert (run.run_id, run.status, run.steps) == ("shared", "completed", 4)
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    # Step 1 ran in both (the first was stopped inside it); the rest once.
    assert executed == {(0, True): 1, (1, True): 1, (1, False): 1, (2, False): 1, (3, False): 1}


def _listing(url: str) -> list[Any]:
    from durable._manage import runs as run_management

    return run_management.list_runs(durable.open_store(url), "fence")


def test_every_write_checks_the_lease(place: Place) -> None:
    """A store's writes to a run whose lease it lost (another process took
    over) raise LeaseLostError and leave the store as it was."""
    if not place.object_leases:
        pytest.skip("a local lease is lost by its file being deleted: test_lease_file_*")
    store = place.open(lease_ttl=30)
    lease: Any = store.acquire("w", "r", 30)
    store.save_manifest("w", "r", b"m1")
    store.save_record("w", "r", "steps/00000000", b"rec0")
    # Another process takes the run over (as after a long stall).
    takeover = {"host": "elsewhere", "pid": 1, "token": "t", "since": time.time(),
                "expires": time.time() + 60}  # fmt: skip
    store.put(f"w/r/lease/{lease.generation + 1:010d}", json.dumps(takeover).encode())
    lease.lease.fresh_until = 0.0  # as if it had stalled past its lease
    before = place.open().get_many(place.open().list("w/r/"))
    writes = [
        lambda: store.save_record("w", "r", "steps/00000001", b"rec1"),
        lambda: store.replace_record("w", "r", "attempts/00000001", b"a"),
        lambda: store.drop_records("w", "r", ["steps/00000000"]),
        lambda: store.put_blob("w", "r", b"blob"),
        lambda: store.save_manifest("w", "r", b"failed"),
        lambda: store.delete_run("w", "r", keep_lease=True),
    ]
    for write in writes:
        with pytest.raises(durable.LeaseLostError):
            write()
    assert place.open().get_many(place.open().list("w/r/")) == before
    lease.release()  # writes nothing either
    assert place.open().get_many(place.open().list("w/r/")) == before


def test_older_manifest_generations_never_decide_and_stale_writers_are_refused(
    place: Place,
) -> None:
    """Older manifest generations are deleted two at a time (one request per
    resume, not two): at most two are left beside the newest, which alone is
    the manifest, and a writer that last read one of them is refused."""
    if not place.object_leases:
        pytest.skip("a local manifest is one file replaced in place")
    stale = place.open(own_client=True)
    store = place.open()
    lease: Any = store.acquire("w", "r", 30)
    store.save_manifest("w", "r", b"m0")
    assert stale.load_manifest("w", "r") == b"m0"
    left = []
    for i in range(1, 6):
        store.save_manifest("w", "r", f"m{i}".encode())
        left.append(len(place.open(own_client=True).list("w/r/run/")))
    assert left == [2, 1, 2, 1, 2]  # the first save found one older: kept
    assert place.open(own_client=True).load_manifest("w", "r") == b"m5"
    with pytest.raises(durable.LeaseLostError):
        stale.save_manifest("w", "r", b"stale")
    lease.release()
    assert place.open(own_client=True).load_manifest("w", "r") == b"m5"


# -- item 2: a lease file is never unlinked while it can be locked ------------


def test_rm_against_a_starter_that_opened_the_lease_file_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forced interleaving of the issue: a starter opens the lease file,
    `durable rm` removes the run (lease included), a second starter creates
    and locks a new lease file, then the first starter's lock call runs. It
    locks the deleted file, must notice, and find the run held."""
    import threading

    from durable._manage import delete as run_management
    from durable._storage import lease as leases

    store_root = tmp_path / "s"
    flow = durable.workflow(name="wf", store=durable.open_store(store_root))(lambda: 1)
    flow.with_options(run_id="r")()
    real = leases.lock_exclusive
    opened, go = threading.Event(), threading.Event()

    def paused_lock(fd: int, blocking: bool) -> bool:
        if threading.get_ident() == first_thread[0] and not opened.is_set():
            opened.set()  # the lease file is open; hold the lock call here
            assert go.wait(60)
        return real(fd, blocking)

    monkeypatch.setattr(leases, "lock_exclusive", paused_lock)
    first_thread: list[int] = []
    outcome: list[object] = []

    def first_starter() -> None:
        first_thread.append(threading.get_ident())
        try:
            outcome.append(durable.open_store(store_root).acquire("wf", "r", 30))
        except durable.RunLockedError as e:
            outcome.append(e)

    thread = threading.Thread(target=first_starter)
    thread.start()
    assert opened.wait(60)
    run_management.delete_run(durable.open_store(store_root), "wf", "r")  # durable rm
    second = durable.open_store(store_root).acquire("wf", "r", 30)  # a new lease file
    go.set()
    thread.join(60)
    (first,) = outcome
    assert isinstance(first, durable.RunLockedError), "two processes hold the run"
    assert first.holder == f"pid {os.getpid()} on {socket.gethostname()}"
    second.check()  # still the one holder
    second.release()


def test_deleting_a_run_leaves_no_lease_behind(place: Place) -> None:
    store = place.open()
    flow = durable.workflow(name="wf", store=store)(lambda: 1)
    for run_id in ("a", "b", "c"):
        flow.with_options(run_id=run_id)()
    flow.delete("a")
    durable.gc(store, keep_last=1)  # removes the older of b and c
    assert [i.run_id for i in flow.runs()] == ["c"]
    assert {k.split("/")[1] for k in place.open().list("wf/")} == {"c"}
    assert not any("/lease" in k for k in place.open().list("wf/") if not k.startswith("wf/c/"))
    store.acquire("wf", "a", 30).release()  # and the id can be taken again


HOLDER_LOCAL = HOLDER.replace("wait=120", "wait=None")


@pytest.mark.slow
def test_a_holder_whose_run_folder_was_deleted_writes_nothing_more(tmp_path: Path) -> None:
    """The run folder is deleted under a live holder and another process
    runs the run afresh: the first holder's next record write finds its
    lease file gone and raises LeaseLostError, writing nothing."""
    import shutil

    script = tmp_path / "holder.py"
    script.write_text(HOLDER_LOCAL)
    log = tmp_path / "executions.log"
    root = tmp_path / "store"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env.update(FENCE_STORE=str(root), COUNT_LOG=str(log), TTL="30")
    first = spawn(script, env, HOLD_AT="1")
    assert first.stdout is not None and first.stdin is not None
    try:
        assert first.stdout.readline().strip() == "HOLDING"
        shutil.rmtree(root / "fence" / "shared")  # by hand, under the live holder
        second = spawn(script, env)
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0 and out.startswith("DONE"), out
        before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        said, _ = first.communicate("\n", timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert (first.returncode, said.split("\n")[0]) == (4, "LEASE_LOST 1")
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert after == before  # not a byte from the first holder
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    # The second started afresh (the records were deleted with the folder).
    assert executed == {(0, True): 1, (1, True): 1, **{(i, False): 1 for i in range(4)}}
