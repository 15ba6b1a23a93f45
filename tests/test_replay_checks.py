"""The replayed step's lean path (issue 13, item 3) keeps every check: a
changed argument, a changed helper, a record flagged as changed in place, a
damaged byte of the log and a store signed with another key are each
refused, re-executed or rebased exactly as the policy says, counted by the
executions of the step bodies (each appends a line to a file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core.identity import call_digest
from durable._core.replay import load_context, lookup
from durable._storage.keys import record_name

RUN = ("checks", "r1")


def ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def flow(store: durable.Store, log: Path, on_change: str = "refuse") -> Any:
    @durable.step(name="twice")
    def twice(i: int) -> int:
        with log.open("a") as f:
            f.write(f"twice{i}\n")
        return 2 * i

    @durable.step(name="add")
    def add(rows: list[int], i: int) -> int:
        with log.open("a") as f:
            f.write(f"add{i}\n")
        rows.append(i)  # changes the object it was given: its replay cannot
        return len(rows)

    @durable.workflow(name="checks", store=store, run_id="r1", on_change=on_change)
    def run(shift: int = 0, rows: bool = False, stop: bool = True) -> list[int]:
        out = [twice(i + (shift if i >= 2 else 0)) for i in range(4)]
        if rows:
            out.append(add([], 9))
        if stop:
            durable.suspend("checked later")
        return out

    return run


def record(store: durable.Store, log: Path, **kwargs: Any) -> Any:
    run = flow(store, log)
    with pytest.raises(durable.Suspended):
        run(**kwargs)
    return run


def test_the_same_call_replays_without_running(tmp_path: Path) -> None:
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    record(store, log)
    assert flow(store, log).resume("r1", stop=False).value == [0, 2, 4, 6]
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3"]


def test_a_changed_argument_is_refused_rerun_or_rebased(tmp_path: Path) -> None:
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    record(store, log)
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed") as err:
        flow(store, log).resume("r1", shift=10, stop=False)
    assert err.value.position == 2
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3"]
    rebased = flow(store, log).with_options(rebase=True).resume("r1", shift=10, stop=False)
    assert rebased.value == [0, 2, 4, 6]  # the old outputs, accepted for the new call
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3"]


def test_a_changed_argument_reruns_from_its_position(tmp_path: Path) -> None:
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    record(store, log)
    rerun = flow(store, log, on_change="rerun").resume("r1", shift=10, stop=False)
    assert rerun.value == [0, 2, 24, 26]
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3", "twice12", "twice13"]
    assert (rerun.steps_replayed, rerun.steps_executed) == (2, 2)


@pytest.mark.parametrize("on_change", ["refuse", "rerun"])
def test_a_record_flagged_in_place_is_never_replayed(tmp_path: Path, on_change: str) -> None:
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    with pytest.warns(UserWarning, match="changed an object it was given"):
        record(store, log, rows=True)
    assert ran(log)[-1] == "add9"
    run = flow(store, log, on_change=on_change)
    if on_change == "refuse":
        with pytest.raises(durable.DefinitionChangedError, match="changed an object") as err:
            run.resume("r1", rows=True, stop=False)
        assert err.value.position == 4
        assert ran(log).count("add9") == 1
    else:
        with pytest.warns(UserWarning, match="changed an object it was given"):
            assert run.resume("r1", rows=True, stop=False).value == [0, 2, 4, 6, 1]
        assert ran(log).count("add9") == 2
    assert ran(log).count("twice3") == 1


def test_a_damaged_byte_of_the_log_refuses_the_resume(tmp_path: Path) -> None:
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    record(store, log)
    path = tmp_path / "s" / "checks" / "r1" / "records.log"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x10  # the last entry's record, inside the entry's checksum
    path.write_bytes(bytes(data))
    with pytest.raises(durable.CorruptRecordError, match="entry checksum mismatch") as err:
        flow(store, log).resume("r1", stop=False)
    assert err.value.position == 3
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3"]


def test_a_store_signed_with_another_key_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "ran"
    record(durable.open_store(tmp_path / "s", signing_key="k1"), log)
    other = durable.open_store(tmp_path / "s", signing_key="k2")
    with pytest.raises(durable.IntegrityError, match="signature does not match"):
        flow(other, log).resume("r1", stop=False)
    unsigned = durable.open_store(tmp_path / "s")
    with pytest.raises(durable.IntegrityError, match="no signing key"):
        flow(unsigned, log).resume("r1", stop=False)
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3"]
    assert flow(durable.open_store(tmp_path / "s", signing_key="k1"), log).resume(
        "r1", stop=False
    ).value == [0, 2, 4, 6]
    assert ran(log) == ["twice0", "twice1", "twice2", "twice3"]


def test_a_replayed_record_keeps_the_calls_name_and_fingerprint(tmp_path: Path) -> None:
    """Records decoded for replay are not interned: the lookup shares the
    call's own strings once it compared them (a replay keeps every record),
    and a record that differs is not touched."""
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    record(store, log)
    ctx = load_context(store, *RUN, "refuse")
    raw = store.load_records(*RUN)[record_name(0)]
    spec = durable.step(name="twice")(lambda i: i).__durable_step__  # type: ignore[attr-defined]
    recorded = ctx.records.get(0)
    assert recorded is not None
    name, fp = "".join(["tw", "ice"]), "".join(recorded.fingerprint)  # equal, not identical
    digest = call_digest(spec.signature, (0,), {}, "twice")
    rec = lookup(ctx, 0, name, fp, digest)
    assert rec is recorded and rec.name is name and rec.fingerprint is fp
    assert raw == store.load_records(*RUN)[record_name(0)]


def test_local_log_hands_over_body_steps_by_position(tmp_path: Path) -> None:
    """A resume reads a local log's body steps by position, every other
    record by name; together they are what `load_records` gives."""
    store, log = durable.open_store(tmp_path / "s"), tmp_path / "ran"
    record(store, log)
    store.replace_record(*RUN, "timers/00000007", b"timer")
    everything = store.load_records(*RUN)
    steps: dict[Any, bytes] = {}
    named = store.load_sealed(*RUN, steps)
    assert sorted(steps) == [0, 1, 2, 3] and sorted(named) == ["timers/00000007"]
    assert {record_name(p): raw for p, raw in steps.items()} | named == everything
    memory = durable.open_store("memory://replay-checks")
    memory.replace_record(*RUN, "steps/00000000", b"x")
    held: dict[Any, bytes] = {}
    assert memory.load_sealed(*RUN, held) == {"steps/00000000": b"x"} and held == {}


HELPER_SCRIPT = """
import sys
import durable

LOG, STORE, ON_CHANGE = sys.argv[1:4]


def helper(x):
    return x + OFFSET


@durable.step(name="plain")
def plain(i):
    with open(LOG, "a") as f:
        f.write(f"plain{i}\\n")
    return i


@durable.step(name="helped")
def helped(i):
    with open(LOG, "a") as f:
        f.write(f"helped{i}\\n")
    return helper(i)


@durable.workflow(name="helper", run_id="h1", store=durable.open_store(STORE), on_change=ON_CHANGE)
def flow():
    return [plain(i) for i in range(2)] + [helped(i) for i in range(2)]


try:
    print(flow())
except durable.DefinitionChangedError as e:
    print("refused:", sorted(e.changed_steps))
"""


@pytest.mark.parametrize("on_change", ["refuse", "rerun"])
def test_a_changed_helper_reruns_only_the_steps_that_call_it(
    tmp_path: Path, on_change: str
) -> None:
    """Each run is a process of its own, as editing the code takes; the
    helper's new code reaches only the step that calls it."""
    log = tmp_path / "ran"

    def run(offset: int, policy: str) -> str:
        script = tmp_path / "flow.py"
        script.write_text(HELPER_SCRIPT.replace("OFFSET", str(offset)))
        args = [sys.executable, str(script), str(log), str(tmp_path / "s"), policy]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run(100, "refuse") == "[0, 1, 100, 101]"
    assert run(100, "refuse") == "[0, 1, 100, 101]"  # the same code: replayed
    assert ran(log) == ["plain0", "plain1", "helped0", "helped1"]
    out = run(200, on_change)
    if on_change == "refuse":
        assert out.startswith("refused:") and "helped" in out and "plain" not in out
        assert ran(log) == ["plain0", "plain1", "helped0", "helped1"]
    else:
        assert out == "[0, 1, 200, 201]"
        assert ran(log) == ["plain0", "plain1", "helped0", "helped1", "helped0", "helped1"]
