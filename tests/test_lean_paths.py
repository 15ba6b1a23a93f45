"""The lean record and replay paths (issue 13, items 2 and 3) keep every
check: a record decoded lazily is still refused when it is damaged or
forged, the moment replay reaches it, and finally (a body that catches the
error cannot go on); a changed argument is refused on the argument digest's
fast path; a log deleted under the open file is never written to."""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core.recorded import Recorded
from durable._storage import manifest as manifest_codec
from durable._storage.manifest import pack_manifest, read_manifest, unpack_manifest
from durable._storage.records import RunRecord, StepRecord, seal_record
from tests.conftest import rewrite_record

RUN = ("lean", "r1")


def flow(store: durable.Store, counts: Counter[int], *, catch: bool = False) -> Any:
    @durable.step(name="work")
    def work(i: int) -> int:
        counts[i] += 1
        return i * 10

    @durable.workflow(name="lean", store=store, run_id="r1")
    def run(n: int = 4, stop: bool = True) -> list[int]:
        out = []
        for i in range(n):
            try:
                out.append(work(i))
            except durable.DurableError:
                if not catch:
                    raise
        if stop:
            durable.suspend("checked later")
        return out

    return run


def record_four(store: durable.Store, counts: Counter[int], *, catch: bool = False) -> None:
    with pytest.raises(durable.Suspended):
        flow(store, counts, catch=catch)()
    assert counts == Counter({0: 1, 1: 1, 2: 1, 3: 1})


def damaged(store: durable.Store, name: str) -> bytes:
    raw = store.load_records(*RUN)[name]
    return raw[:-1] + bytes([raw[-1] ^ 0x01])  # one flipped bit in the body


@pytest.mark.parametrize("catch", [False, True], ids=["raised", "caught-by-the-body"])
def test_a_damaged_record_is_refused_when_replay_reaches_it(tmp_path: Path, catch: bool) -> None:
    store = durable.open_store(tmp_path / "s")
    counts: Counter[int] = Counter()
    record_four(store, counts, catch=catch)
    # A valid log entry holding a damaged record: only the record's own
    # envelope (checked when decoded) tells.
    rewrite_record(store, RUN, "steps/00000002", damaged(store, "steps/00000002"), None)
    with pytest.raises(durable.CorruptRecordError, match="checksum mismatch") as err:
        flow(store, counts, catch=catch)(stop=False)
    assert err.value.position == 2
    # Positions 0 and 1 replayed, 2 was refused, 3 neither replayed nor ran.
    assert counts == Counter({0: 1, 1: 1, 2: 1, 3: 1})
    manifest = read_manifest(store, *RUN)
    assert manifest is not None and manifest.status == "suspended"  # a refusal changes nothing
    # Refused again on every resume: the bytes were not dropped as decoded.
    with pytest.raises(durable.CorruptRecordError):
        flow(store, counts, catch=catch)(stop=False)
    assert counts == Counter({0: 1, 1: 1, 2: 1, 3: 1})


def test_a_record_that_is_not_a_record_is_refused_when_reached(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")
    counts: Counter[int] = Counter()
    record_four(store, counts)
    rewrite_record(store, RUN, "steps/00000001", seal_record(b"\x93\x01\x02\x03", None), None)
    with pytest.raises(durable.CorruptRecordError, match="undecodable") as err:
        flow(store, counts)(stop=False)
    assert err.value.position == 1
    assert counts == Counter({0: 1, 1: 1, 2: 1, 3: 1})


def test_a_forged_record_is_refused_when_reached(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s", signing_key="k")
    counts: Counter[int] = Counter()
    record_four(store, counts, catch=True)
    # An intact, unsigned record (CRC envelope) where a signed one belongs.
    rec = StepRecord(3, "step", "work", "f" * 32, "d" * 32, encoding="m", value=b"\x00")
    rewrite_record(store, RUN, "steps/00000003", seal_record(rec.to_bytes(), None), None)
    with pytest.raises(durable.IntegrityError, match="not signed") as err:
        flow(store, counts, catch=True)(stop=False)
    assert err.value.position == 3
    assert counts == Counter({0: 1, 1: 1, 2: 1, 3: 1})


def test_undecoded_records_are_decoded_for_a_run_that_completes(tmp_path: Path) -> None:
    """A resume that stops before reaching a record still completes only
    with every record checked: the damaged one past the body's end is found."""
    store = durable.open_store(tmp_path / "s")
    counts: Counter[int] = Counter()
    record_four(store, counts)
    rewrite_record(store, RUN, "steps/00000003", damaged(store, "steps/00000003"), None)
    with pytest.raises(durable.CorruptRecordError) as err:
        flow(store, counts)(n=2, stop=False)  # the body stops before position 3
    assert err.value.position == 3
    assert counts == Counter({0: 1, 1: 1, 2: 1, 3: 1})


@pytest.mark.parametrize("now", [5, True, 1.0, "1", -1, 2**70], ids=repr)
def test_a_changed_argument_is_refused_on_the_fast_path(tmp_path: Path, now: Any) -> None:
    """A scalar positional argument takes the digest's fast path; every kind
    of change (value, and type: True and 1.0 are not 1) is still refused."""
    store = durable.open_store(tmp_path / "s")
    calls: list[Any] = []

    @durable.step(name="echo")
    def echo(x: Any, scale: int = 2) -> str:
        calls.append(x)
        return repr(x)

    @durable.workflow(name="args", store=store, run_id="a1")
    def run(x: Any) -> str:
        out = echo(x)
        durable.suspend("here")
        return out

    with pytest.raises(durable.Suspended):
        run(1)
    with pytest.raises(durable.Suspended):
        run.resume("a1")  # the same call: replayed
    assert calls == [1]
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        run.resume("a1", x=now)
    assert calls == [1]


def test_a_log_deleted_under_the_open_file_is_not_written_to(tmp_path: Path) -> None:
    """The log stays open for the run; when its file is deleted (a restart
    or removal by another store object), the next append goes to a new file
    at the path, never into the deleted one."""
    store = durable.open_store(tmp_path / "s")
    log = tmp_path / "s" / "lean" / "r1" / "records.log"
    first = b"\x01"

    store.open_run(*RUN)
    try:
        store.save_record(*RUN, "steps/00000000", seal_record(first, None))
        os.unlink(log)
        store.save_record(*RUN, "steps/00000001", seal_record(b"\x02", None))
    finally:
        store.end_run(*RUN)
    assert sorted(durable.open_store(tmp_path / "s").load_records(*RUN)) == ["steps/00000001"]


def test_the_plan_is_stored_in_runs_and_read_back_entry_by_entry(tmp_path: Path) -> None:
    """A completed run's re-call decodes its plan as a few runs, not one
    list per position; every position's entry comes back as it was."""
    store = durable.open_store(tmp_path / "s")
    counts: Counter[int] = Counter()
    flow(store, counts)(stop=False)
    manifest = read_manifest(store, *RUN)
    assert manifest is not None
    # A name no random field of the manifest (token, digests) can hold by chance,
    # as the two bytes of a one-letter name could.
    name = "plan-only-step-name"
    plan = [["step", name]] * 3 + [None, None, ["loop", "b"], ["step", name]]
    manifest.plan = plan
    raw = pack_manifest(manifest, None)
    assert raw.count(name.encode()) == 2  # stored once per run of it, not per position
    back = unpack_manifest(raw, None, run_id="r1", name="lean/r1/run")
    assert back.plan == plan
    old_style = dataclasses.replace(manifest, plan=None)
    assert unpack_manifest(pack_manifest(old_style, None), None, run_id="r1", name="x").plan is None


def test_a_plan_that_is_not_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = RunRecord("lean", "r1", "f", {}, {}, "m", b"\x80")
    # A validly sealed manifest whose plan is not a plan (a negative count).
    monkeypatch.setattr(manifest_codec, "_plan_runs", lambda plan: {"runs": [[["s", "a"], -2]]})
    bad = pack_manifest(manifest, None)
    monkeypatch.undo()
    with pytest.raises(durable.CorruptRecordError, match="not a plan"):
        unpack_manifest(bad, None, run_id="r1", name="lean/r1/run")
    assert unpack_manifest(pack_manifest(manifest, None), None, run_id="r1", name="x").plan is None


def _shapes(a: Any, b: Any = 3, c: Any = "x", d: Any = None, e: Any = 1.5) -> None:
    """Positional parameters with scalar defaults of every kind."""


@pytest.mark.parametrize(
    "args",
    [(1,), (1, 2), (1, 2, "y"), (True, 2**70, b"z", None, -0.0), ("é", 1.0, 1 + 2j), (-1, False)],
    ids=repr,
)
def test_the_fast_digest_is_the_bound_calls_digest(args: tuple[Any, ...]) -> None:
    """The fast path (positional scalars, defaults filled from the shape)
    hashes exactly what binding the call would (arguments passed by keyword
    take the binding path), as does a call that spells out its defaults;
    another value is another digest."""
    from durable._core.identity import call_digest

    sig = inspect.signature(_shapes)
    names = list(sig.parameters)
    fast = call_digest(sig, args, {}, "shapes")
    assert fast == call_digest(sig, (), dict(zip(names, args, strict=False)), "shapes")
    spelled = {n: p.default for n, p in sig.parameters.items() if n not in names[: len(args)]}
    assert fast == call_digest(sig, args, spelled, "shapes")
    other = (args[0] + 1 if type(args[0]) is int else "other", *args[1:])
    assert call_digest(sig, other, {}, "shapes") != fast


def test_decoded_records_share_their_empty_parts_and_refuse_changes() -> None:
    """A replay keeps every record: those without attempts, artifacts or
    extras share one empty each, which cannot be changed through any of
    them (a shared dict that could be would change every record), and a
    decoded record encodes to the bytes it was decoded from."""
    made = [StepRecord(i, "step", "s", "fp", "d", "msgpack", b"\x01") for i in (1, 2)]
    body = made[0].to_bytes()
    first, second = (StepRecord.from_bytes(r.to_bytes()) for r in made)
    assert first.extra is second.extra and first.attempts is second.attempts
    assert first.to_bytes() == body
    for change in (
        lambda: first.extra.__setitem__("x", 1),
        lambda: first.extra.update(x=1),
        lambda: first.extra.setdefault("x", 1),
        lambda: first.attempts.append(None),  # type: ignore[arg-type]
        lambda: first.artifacts.append({}),
    ):
        with pytest.raises((TypeError, AttributeError)):
            change()
    assert second.extra == {} and not second.attempts and not second.artifacts
    kept = StepRecord(3, "step", "s", "fp", "d", extra={"redacted": True})
    assert StepRecord.from_bytes(kept.to_bytes()).extra == {"redacted": True}


def test_a_decoded_record_keeps_the_position_it_was_asked_for(local_store: durable.Store) -> None:
    """The position a record decodes to is equal to the one replay asked
    for, and is that object (the key it is held under), not a copy: a
    replay keeps one position per record. Another position is refused."""
    body = StepRecord(1000, "step", "s", "fp", "d", "msgpack", b"\x01").to_bytes()
    raw = seal_record(body, None)
    asked = int("1000")  # another int object than the one decoded
    records = Recorded(local_store, "run")
    records.keep_sealed(1000, raw)
    rec = records.get(asked)
    assert rec is not None and rec.position is asked
    moved = Recorded(local_store, "run")
    moved.keep_sealed(1001, raw)
    with pytest.raises(durable.CorruptRecordError, match="it holds position 1000"):
        moved.get(1001)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_does_not_take_the_parents_open_log_for_its_own(tmp_path: Path) -> None:
    """The process that opened a run's log is remembered by a fork hook, not
    asked of the system at every append: a child forked while the log is
    open must still see it as not open (it writes through a file of its own,
    never through the parent's descriptor, which the child closes)."""
    import warnings

    store = durable.open_store(tmp_path / "s")
    store.open_run(*RUN)
    try:
        store.save_record(*RUN, "steps/00000000", seal_record(b"\x01", None))
        log = store.records(*RUN).log
        assert log.is_open()
        with warnings.catch_warnings():  # 3.12+: forking a process that has threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(1 if log.is_open() else 0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert log.is_open()
    finally:
        store.end_run(*RUN)


def test_an_append_by_another_process_is_seen_by_the_open_log(tmp_path: Path) -> None:
    """The open log's direct append catches up with the file under its lock
    first: a record another process appended meanwhile at the same name is
    the one kept and returned (create-only, never overwritten or duplicated),
    and later appends land after it."""
    import subprocess
    import sys

    store = durable.open_store(tmp_path / "s")
    mine, theirs = seal_record(b"\x01mine", None), seal_record(b"\x02theirs", None)
    store.open_run(*RUN)
    try:
        assert store.save_record(*RUN, "steps/00000000", seal_record(b"\x00", None)) is None
        child = (
            "import sys, durable\n"
            "from durable._storage.records import seal_record\n"
            "s = durable.open_store(sys.argv[1])\n"
            "assert s.save_record('lean', 'r1', 'steps/00000001', seal_record(b'\\x02theirs', None)) is None\n"
        )
        subprocess.run([sys.executable, "-c", child, str(tmp_path / "s")], check=True)
        assert store.save_record(*RUN, "steps/00000001", mine) == theirs
        assert store.save_record(*RUN, "steps/00000002", seal_record(b"\x03", None)) is None
    finally:
        store.end_run(*RUN)
    kept = durable.open_store(tmp_path / "s").load_records(*RUN)
    assert sorted(kept) == ["steps/00000000", "steps/00000001", "steps/00000002"]
    assert kept["steps/00000001"] == theirs


# -- the direct path of a plain step (issue 13, item 2) ------------------------


def _plain_or_planned(store: durable.Store, tmp_path: Path, planned: bool) -> Any:
    """A step that registers an artifact and fails on its first call; with
    `planned`, a validator that accepts everything sends it through the plan."""
    options: dict[str, Any] = {"validate": lambda out: True} if planned else {}

    @durable.step(name="make", **options)
    def make(i: int) -> int:
        with open(tmp_path / "count", "a") as f:
            f.write(f"{i}\n")
        if not (tmp_path / "ok").exists():
            raise RuntimeError("not yet")
        durable.artifact(str(tmp_path / "ok"))
        return i + 1

    @durable.workflow(name="direct", store=store, run_id="r")
    def run() -> int:
        return make(1) + make(2)

    return run


def _observe(tmp_path: Path, planned: bool) -> tuple[list[Any], list[Any], str]:
    root = tmp_path / ("planned" if planned else "direct")
    root.mkdir()
    store = durable.open_store(root / "store")
    run = _plain_or_planned(store, root, planned)
    seen: list[Any] = []
    with durable.on_event(seen.append):
        with pytest.raises(RuntimeError, match="not yet"):
            run()
        (root / "ok").write_text("made")
        assert run() == 5
        assert run() == 5  # replayed
    recs = store.load_records("direct", "r")
    rows = []
    for name in sorted(recs):
        rec = StepRecord.from_bytes(recs[name][9:])
        rows.append((name, rec.kind, rec.name, rec.args_digest, rec.encoding, rec.value,
                     rec.persisted, [(a.type, a.message) for a in rec.attempts],
                     len(rec.artifacts)))  # fmt: skip
    events = [(type(e).__name__, getattr(e, "position", None), getattr(e, "attempt", None))
              for e in seen]  # fmt: skip
    return rows, events, (root / "count").read_text()


def test_a_plain_step_runs_without_a_plan_and_records_what_the_plan_records(
    tmp_path: Path,
) -> None:
    """The direct path (no cache, validator, artifacts= or retries) gives
    the same records, events, failure history and executions as the plan."""
    direct, planned = _observe(tmp_path, False), _observe(tmp_path, True)
    assert direct[0] == planned[0]  # failure kept, artifact listed, outputs
    assert direct[1] == planned[1]
    assert direct[2] == planned[2] == "1\n1\n2\n"  # each body ran once per try
    assert ("StepFailed", "0", 0) in direct[1]
    assert [row[7] for row in direct[0] if row[0].startswith("steps/")] == [
        [("RuntimeError", "not yet")],
        [],
    ]


def test_a_plain_steps_body_is_called_without_a_plan_driver(tmp_path: Path) -> None:
    """The common call runs its body with no generator plan between the
    step's call and its body (issue 13: the plan cost ~20 µs a step)."""
    callers: list[list[str]] = []

    @durable.step(name="plain")
    def plain(i: int) -> int:
        frame = inspect.currentframe()
        names = []
        while frame is not None and frame.f_code.co_name != "call_step":
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        callers.append(names)
        return i

    @durable.workflow(name="plain", store=durable.open_store(tmp_path), run_id="r")
    def run() -> int:
        return plain(1)

    assert run() == 1
    (names,) = callers
    assert "drive_sync" not in names and "_live_plan" not in names, names


SIZE_LIMITED = """
import resource, signal, sys
import durable

store_path, count, mode = sys.argv[1:4]


@durable.step(name="work")
def work(i: int) -> str:
    with open(count, "a") as f:
        f.write(f"{i}\\n")
    return "x" * (200_000 if i == 1 else 10)


@durable.workflow(name="lean", run_id="r1", store=durable.open_store(store_path, durability="none"))
def run() -> list:
    return [len(work(i)) for i in range(3)]


if mode == "limited":  # the disk takes 100 kB more of this process, as a full disk would
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
try:
    print("DONE", run())
except durable.StorageError as e:
    print("StorageError", e)
    sys.exit(3)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX file size limit")
def test_a_record_the_disk_refuses_is_a_storage_error_and_the_log_stays_whole(
    tmp_path: Path,
) -> None:
    """A run's record goes to the log it holds open: when the disk takes only
    part of it, the step fails with a StorageError naming the log (as an
    append that opens the file says), the part written is cut back, and a
    resume replays the records before it and runs the refused step again."""
    import subprocess

    script, store, count = tmp_path / "flow.py", tmp_path / "s", tmp_path / "count"
    script.write_text(SIZE_LIMITED)

    def run(mode: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(script), str(store), str(count), mode]
        env = dict(os.environ, PYTHONPATH=str(Path(durable.__file__).parents[1]))
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)

    refused = run("limited")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert refused.stdout.startswith("StorageError") and "appending to lean/r1" in refused.stdout
    done = run("free")
    assert done.returncode == 0 and done.stdout.split() == ["DONE", "[10,", "200000,", "10]"], done
    assert count.read_text().split() == ["0", "1", "1", "2"]
