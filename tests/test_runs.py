"""The Python side of run management: runs(), history(), delete(),
keep_last and gc(), against real stores (a local folder; S3 on moto)."""

from __future__ import annotations

import dataclasses
import datetime
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage import runs
from durable.testing import fake_clock

from .clikit import child_env, read_until, write_flow

T0 = 1_700_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path / "store")


def make_flow(store: durable.Store, calls: list[str], **options: Any) -> Any:
    @durable.step
    def fetch(n: int) -> list[int]:
        calls.append("fetch")
        return list(range(n))

    @durable.step(retries=2, retry_delay=5.0)
    def flaky(xs: list[int]) -> int:
        calls.append("flaky")
        if calls.count("flaky") < 3:
            raise ConnectionError(f"glitch {calls.count('flaky')}")
        return sum(xs)

    @durable.step
    def shout(word: str) -> str:
        calls.append("shout")
        if word == "boom":
            raise ValueError("cannot shout boom")
        return word.upper() * 40

    @durable.step(persist=False)
    def secret() -> str:
        return "hunter2"

    @durable.workflow(name="flow", store=store, **options)
    def flow(n: int, word: str = "hi", decision: str | None = None) -> str:
        total = flaky(fetch(n))
        squares = durable.loop_over(lambda x: x * x, range(n))
        durable.sleep(30)
        secret()
        loud = shout(word)
        if decision is None:
            durable.suspend("waiting for decision")
        return f"{total}:{sum(squares)}:{loud[:2]}:{decision}"

    return flow


def test_runs_lists_newest_first_with_status_steps_position_and_errors(
    store: durable.Store,
) -> None:
    calls: list[str] = []
    flow = make_flow(store, calls)
    with fake_clock(T0):
        assert flow.with_options(run_id="done").run(3, decision="ok").value == "3:5:HI:ok"
    with fake_clock(T0 + 100), pytest.raises(ValueError):
        flow.with_options(run_id="bad")(3, word="boom")
    with fake_clock(T0 + 200), pytest.raises(durable.Suspended):
        flow.with_options(run_id="waiting")(3)
    infos = flow.runs()
    assert [i.run_id for i in infos] == ["waiting", "bad", "done"]
    waiting, bad, done = infos
    assert (done.status, done.steps, done.position, done.error) == ("completed", 6, None, None)
    assert (bad.status, bad.steps, bad.position) == ("failed", 5, 5)
    assert bad.error == "ValueError: cannot shout boom"
    assert (waiting.status, waiting.steps, waiting.position) == ("suspended", 6, 6)
    assert waiting.reason == "waiting for decision"
    assert {i.fingerprint for i in infos} == {flow.fingerprint}
    assert done.created == T0 and done.updated >= done.created
    assert isinstance(done, durable.RunInfo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.status = "x"  # type: ignore[misc]


def test_history_describes_every_position(store: durable.Store) -> None:
    calls: list[str] = []
    flow = make_flow(store, calls)
    with fake_clock(T0) as clock:
        flow.with_options(run_id="h").run(4, decision="yes")
    assert clock.slept == [5.0, 10.0, 30.0]  # two retry delays, then the durable sleep
    initial, *steps = flow.history("h")  # position -1: the arguments it started with
    assert (initial.position, initial.kind, initial.value) == (-1, "initial", {"n": 4, "word": "hi", "decision": "yes"})
    assert [(s.position, s.kind, s.name, s.status) for s in steps] == [
        (0, "step", "make_flow.fetch", "completed"),
        (1, "step", "make_flow.flaky", "completed"),
        (2, "loop", "loop_over(make_flow.flow.<lambda>)", "completed"),
        (3, "sleep", "sleep", "completed"),
        (4, "step", "make_flow.secret", "completed"),
        (5, "step", "make_flow.shout", "completed"),
    ]
    fetch, flaky, loop, nap, secret, shout = steps
    assert fetch.preview == "[0, 1, 2, 3]" and fetch.output_size == 5
    assert fetch.attempts == 1 and fetch.failures == () and fetch.error is None
    assert flaky.attempts == 3
    assert [(f.type, f.message) for f in flaky.failures] == [
        ("ConnectionError", "glitch 1"), ("ConnectionError", "glitch 2"),
    ]  # fmt: skip
    assert flaky.duration == 15.0  # the two retry delays, on the fake clock
    assert loop.preview == "[0, 1, 4, 9]"
    assert nap.duration == 30.0 and nap.started == T0 + 15.0
    assert secret.preview == "(not stored)" and secret.output_size is None
    assert shout.preview is not None and "..." in shout.preview  # shortened
    assert len(shout.preview) < 80 and shout.output_size == 82  # 80 chars + msgpack header
    assert fetch.fingerprint == flow.definition().steps["make_flow.fetch"]
    assert isinstance(fetch, durable.StepInfo)


def test_history_of_a_failed_run_shows_the_failing_step(store: durable.Store) -> None:
    calls: list[str] = []
    flow = make_flow(store, calls)
    with fake_clock(T0), pytest.raises(ValueError):
        flow.with_options(run_id="f").run(2, word="boom")
    last = flow.history("f")[-1]
    assert (last.position, last.name, last.status, last.attempts) == (5, "make_flow.shout", "failed", 1)
    assert last.error == "ValueError: cannot shout boom"
    assert last.output_size is None and last.ended == T0 + 45.0
    with pytest.raises(durable.RunNotFoundError):
        flow.history("no-such-run")


def test_previews_of_pickled_blobbed_and_refused_values(tmp_path: Path) -> None:
    loose = durable.open_store(tmp_path / "s", blob_threshold=64)

    @durable.step
    def pair() -> tuple[int, int]:
        return (1, 2)

    @durable.step
    def big() -> str:
        return "x" * 500

    @durable.workflow(name="shapes", store=loose)
    def shapes() -> int:
        return len(pair()) + len(big())

    shapes.with_options(run_id="p")()
    first, second = shapes.history("p")[1:]
    assert first.preview == "(1, 2)"
    assert second.output_size is not None and second.output_size > 500
    assert second.preview is not None and second.preview.startswith("'xxx")
    strict = durable.workflow(name="shapes", store=durable.open_store(tmp_path / "s", allow_pickle=False))(
        lambda: 0
    )  # fmt: skip
    refused = strict.history("p")[1]
    assert refused.preview is not None and "pickled value" in refused.preview


BLOCKER = """
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import durable
from flow import pipeline
pipeline.with_options(run_id="held", store=sys.argv[1])(1)
"""


@pytest.mark.slow
def test_a_dead_holder_shows_interrupted_a_live_one_running(tmp_path: Path) -> None:
    _holder_dies(tmp_path, str(tmp_path / "store"))


def _holder_dies(tmp_path: Path, url: str, **storage: Any) -> None:
    write_flow(tmp_path)
    write_flow(tmp_path, BLOCKER, name="blocker.py")
    env = child_env(tmp_path, FLOW_BLOCK_AT="2")
    child = subprocess.Popen([sys.executable, "blocker.py", url], cwd=tmp_path, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    watcher = durable.workflow(name="pipeline", store=durable.open_store(url, **storage))(
        lambda: 0
    )  # fmt: skip
    try:
        read_until(child.stdout, "step 2 started")
        (live,) = watcher.runs()
        assert (live.status, live.steps, live.position) == ("running", 1, 1)
        child.kill()
        child.wait(timeout=30)
    finally:
        child.kill()
        child.wait()
    (dead,) = watcher.runs()
    assert (dead.status, dead.steps, dead.position) == ("interrupted", 1, 1)
    assert runs.read_manifest(watcher._store(), "pipeline", "held").status == "running"


@pytest.fixture(scope="module")
def s3_url() -> Iterator[tuple[str, dict[str, Any]]]:
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    options = {"key": "testing", "secret": "testing",
               "client_kwargs": {"endpoint_url": endpoint}}  # fmt: skip
    import s3fs

    s3fs.S3FileSystem(**options).mkdir("runs-bucket")
    yield "s3://runs-bucket/store", options
    server.stop()


@pytest.mark.slow
def test_a_dead_holder_on_s3_shows_interrupted(
    tmp_path: Path, s3_url: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, options = s3_url
    endpoint = options["client_kwargs"]["endpoint_url"]
    # the child reaches the same moto server through the standard AWS variables
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    _holder_dies(tmp_path, url, **options)


def test_delete_removes_a_run_and_refuses_missing_or_held_ones(store: durable.Store) -> None:
    calls: list[str] = []
    flow = make_flow(store, calls)
    with fake_clock(T0):
        flow.with_options(run_id="a").run(1, decision="x")
        flow.with_options(run_id="b").run(1, decision="x")
    flow.delete("a")
    assert [i.run_id for i in flow.runs()] == ["b"]
    assert not (Path(store.url) / "flow" / "a").exists()
    with pytest.raises(durable.RunNotFoundError):
        flow.delete("a")
    lease = store.acquire("flow", "b", 30)
    try:
        with pytest.raises(durable.RunLockedError):
            flow.delete("b")
    finally:
        lease.release()
    assert [i.run_id for i in flow.runs()] == ["b"]


def test_keep_last_removes_the_oldest_completed_runs(store: durable.Store) -> None:
    calls: list[str] = []
    flow = make_flow(store, calls, keep_last=2)
    with fake_clock(T0), pytest.raises(durable.Suspended):
        flow.with_options(run_id="pending")(1)
    for i in range(4):
        with fake_clock(T0 + 10 * (i + 1)):
            flow.with_options(run_id=f"r{i}").run(1, decision="y")
    assert [(i.run_id, i.status) for i in flow.runs()] == [
        ("r3", "completed"), ("r2", "completed"), ("pending", "suspended"),
    ]  # fmt: skip
    with pytest.raises(durable.ConfigurationError):
        durable.workflow(keep_last=0)(lambda: 0)


def test_gc_over_the_whole_store(store: durable.Store) -> None:
    calls: list[str] = []
    flow = make_flow(store, calls)
    other = durable.workflow(name="other", store=store)(lambda n: n)
    now = datetime.datetime.now().timestamp()
    with fake_clock(now - 9 * 86400):
        flow.with_options(run_id="old").run(1, decision="y")
        other.with_options(run_id="old-other")(1)
    with fake_clock(now - 3600), pytest.raises(ValueError):
        flow.with_options(run_id="broke")(1, word="boom")
    with fake_clock(now):
        flow.with_options(run_id="new").run(1, decision="y")
        other.with_options(run_id="new-other")(2)

    def ids(infos: list[durable.RunInfo]) -> set[str]:
        return {i.run_id for i in infos}

    with pytest.raises(durable.ConfigurationError):
        durable.gc(store)
    week = datetime.timedelta(days=7)
    assert ids(durable.gc(store, older_than=week, dry_run=True)) == {"old", "old-other"}
    assert len(runs.list_runs(store)) == 5
    assert ids(durable.gc(store, older_than=week)) == {"old", "old-other"}
    assert ids(durable.gc(store, status="failed")) == {"broke"}
    assert ids(durable.gc(store, keep_last=1)) == set()
    lease = store.acquire("flow", "new", 30)  # a live process holds it
    try:
        assert ids(durable.gc(store, keep_last=0)) == {"new-other"}
    finally:
        lease.release()
    assert ids(runs.list_runs(store)) == {"new"}


def test_a_damaged_manifest_is_listed_as_corrupt(store: durable.Store) -> None:
    flow = durable.workflow(name="w", store=store)(lambda: 1)
    flow.with_options(run_id="ok")()
    flow.with_options(run_id="hurt")()
    path = Path(store.url) / "w" / "hurt" / "run"
    good = path.read_bytes()
    # The tail holds the arguments and result, which a listing never reads:
    # damage there shows when the run is used, not in the list.
    path.write_bytes(good[:-3] + b"zzz")
    assert {i.run_id: i.status for i in flow.runs()} == {"ok": "completed", "hurt": "completed"}
    with pytest.raises(durable.CorruptRecordError):
        flow.with_options(run_id="hurt")()
    with pytest.raises(durable.CorruptRecordError):
        flow.history("hurt")
    path.write_bytes(good[:20] + b"zzz" + good[23:])  # the summary itself
    by_id = {i.run_id: i for i in flow.runs()}
    assert by_id["ok"].status == "completed"
    assert by_id["hurt"].status == "corrupt" and "damaged" in (by_id["hurt"].error or "")
    flow.delete("hurt")  # and it can still be removed
    assert [i.run_id for i in flow.runs()] == ["ok"]
    assert os.listdir(Path(store.url) / "w") == ["ok"]


def test_history_lists_artifacts_with_their_state_now(store: durable.Store, tmp_path: Path) -> None:
    out = tmp_path / "build" / "app.bin"

    @durable.step
    def build() -> int:
        out.parent.mkdir(exist_ok=True)
        out.write_bytes(b"\x7fELF")
        durable.artifact(out)
        return 4

    @durable.workflow(name="builder", store=store)
    def builder() -> int:
        return build()

    builder.with_options(run_id="b")()
    (step,) = builder.history("b")[1:]
    assert [(a["url"], a["kind"], a["state"]) for a in step.artifacts] == [
        (str(out), "file", "present"),
    ]  # fmt: skip
    out.write_bytes(b"\x7fELF, rebuilt")
    assert builder.history("b")[1].artifacts[0]["state"] == "changed"
    out.unlink()
    assert builder.history("b")[1].artifacts[0]["state"] == "missing"
    from durable._cli import format
    from durable._manage import history

    text = format.show_text(*history.describe(store, "builder", "b"))
    assert f"0  {out}  missing" in text


def test_gc_with_an_empty_status_collection_removes_nothing(store: durable.Store) -> None:
    flow = durable.workflow(name="w", store=store)(lambda n: n)
    with fake_clock(T0):
        for rid in ("a", "b"):
            flow.with_options(run_id=rid)(1)
    assert durable.gc(store, status=[]) == []
    assert durable.gc(store, status=(), older_than=0, keep_last=0) == []
    assert {i.run_id for i in flow.runs()} == {"a", "b"}
    assert {i.run_id for i in durable.gc(store, status={"completed"}, keep_last=1)} == {"a"}


def test_an_unknown_status_is_refused_not_matched_by_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from durable._cli.main import main

    store = durable.open_store(tmp_path / "store")
    durable.workflow(name="w", store=store, run_id="a")(lambda: 1)()
    with pytest.raises(durable.ConfigurationError, match="unknown run status 'bogus'"):
        durable.gc(store, status=["completed", "bogus"])
    with pytest.raises(durable.ConfigurationError, match="one of running, completed"):
        runs.list_runs(store, status="Completed")
    url = str(tmp_path / "store")
    for argv in (["runs", "--status", "bogus"], ["gc", "--status", "bogus", "--dry-run"]):
        capsys.readouterr()
        assert main(["--store", url, *argv]) == 2  # a usage error, not "no runs"
        err = capsys.readouterr().err
        assert "unknown run status 'bogus'" in err and "suspended, interrupted" in err, err
    assert [i.run_id for i in runs.list_runs(store)] == ["a"]  # nothing was removed


def test_gc_keep_last_and_older_than_narrow_together(store: durable.Store) -> None:
    flow = durable.workflow(name="w", store=store)(lambda n: n)
    now = datetime.datetime.now().timestamp()
    for days, rid in [(10, "d10"), (9, "d9"), (8, "d8"), (1, "d1"), (0, "d0")]:
        with fake_clock(now - days * 86400 - 60):
            flow.with_options(run_id=rid)(1)
    week = datetime.timedelta(days=7)

    def ids(infos: list[durable.RunInfo]) -> set[str]:
        return {i.run_id for i in infos}

    # beyond the newest one AND older than a week: d1 is beyond it but young
    assert ids(durable.gc(store, keep_last=1, older_than=week, dry_run=True)) == {"d10", "d9", "d8"}
    # older than a week AND beyond the 4 newest: d9 and d8 are among those 4
    assert ids(durable.gc(store, keep_last=4, older_than=week)) == {"d10"}
    assert ids(flow.runs()) == {"d0", "d1", "d8", "d9"}


def test_an_unsigned_manifest_in_a_signed_store_is_listed_not_raised(tmp_path: Path) -> None:
    from durable._storage.manifest import pack_manifest, read_manifest

    store = durable.open_store(tmp_path / "s", signing_key="k")
    flow = durable.workflow(name="w", store=store)(lambda n: n)
    with fake_clock(T0):
        flow.with_options(run_id="ok")(1)
        flow.with_options(run_id="planted")(2)
    manifest = read_manifest(store, "w", "planted")
    assert manifest is not None
    store.save_manifest("w", "planted", pack_manifest(manifest, None))
    by_id = {i.run_id: i for i in flow.runs()}
    assert by_id["ok"].status == "completed"
    planted = by_id["planted"]
    assert planted.status == "unverified" and "not signed" in (planted.error or "")
    # gc goes on past it, and leaves it unless asked for it by status
    assert [i.run_id for i in durable.gc(store, older_than=0)] == ["ok"]
    assert [i.run_id for i in durable.gc(store, keep_last=0)] == []
    assert [i.run_id for i in durable.gc(store, status="unverified")] == ["planted"]
    assert flow.runs() == []


def test_gc_keeps_a_run_that_no_longer_matches_when_its_turn_comes(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gc chooses from one listing, then removes run after run: a run
    resumed in between (here it completes) is checked again under its lease
    and kept, its records with it."""
    calls: list[str] = []

    @durable.step
    def work(n: int) -> int:
        calls.append(f"work{n}")
        if n == 1 and calls.count("work1") == 1:
            raise ConnectionError("the first attempt fails here")
        return n

    @durable.workflow(name="wf", store=store, run_id="victim")
    def flow() -> list[int]:
        return [work(0), work(1)]

    with pytest.raises(ConnectionError):
        flow()
    listing = runs.list_runs

    def listed_then_resumed(*args: Any, **kwargs: Any) -> list[durable.RunInfo]:
        found = listing(*args, **kwargs)
        assert flow() == [0, 1]  # another process resumes it after gc listed it as failed
        return found

    monkeypatch.setattr(runs, "list_runs", listed_then_resumed)
    assert durable.gc(store, status="failed") == []
    monkeypatch.undo()
    assert flow() == [0, 1] and calls == ["work0", "work1", "work1"]  # replayed, not redone
    assert [i.status for i in runs.list_runs(store)] == ["completed"]


CRASHES = """
import os, sys
import durable

@durable.step
def work():
    os._exit(9)  # the process dies mid-run: its manifest still says running

@durable.workflow(name="wf", store=durable.open_store(sys.argv[1]), run_id="crashed")
def flow():
    return work()

flow()
"""


def test_gc_removes_a_run_whose_process_died(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(CRASHES)
    root = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, str(script), str(root)], env=child_env(tmp_path), check=False
    )
    assert done.returncode == 9
    store = durable.open_store(root)
    assert [i.status for i in runs.list_runs(store)] == ["interrupted"]
    assert [i.run_id for i in durable.gc(store, status="interrupted")] == ["crashed"]
    assert runs.list_runs(store) == []


def test_gc_keeps_a_suspended_run_unless_its_status_is_named(store: durable.Store) -> None:
    """A suspended run waits for an answer (a human's decision) however old
    it is: `gc` by age or by `keep_last` leaves it to be resumed; only
    `status="suspended"` removes it."""
    calls: list[str] = []
    flow = make_flow(store, calls)
    now = datetime.datetime.now().timestamp()
    with fake_clock(now - 9 * 86400), pytest.raises(durable.Suspended):
        flow.with_options(run_id="waiting").run(1)  # the decision does not come
    assert flow.runs()[0].status == "suspended"
    with fake_clock(now):
        for rid in ("a", "b"):
            flow.with_options(run_id=rid).run(1, decision="y")
    week = datetime.timedelta(days=7)
    assert durable.gc(store, older_than=week) == []
    assert {i.run_id for i in durable.gc(store, keep_last=1)} == {"a"}
    ran = len(calls)
    assert flow.resume("waiting", decision="y").value == "0:0:HI:y"
    assert calls[ran:] == []  # resumed from its records: no step ran again
    with fake_clock(now), pytest.raises(durable.Suspended):
        flow.with_options(run_id="still").run(1)
    assert {i.run_id for i in durable.gc(store, status="suspended")} == {"still"}
