"""Errors say the truth: what is damaged, where, and a way on that works."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable


def two_steps(store: durable.Store, counts: Counter[str], **options: Any) -> Any:
    @durable.step(name="one")
    def one() -> str:
        counts["one"] += 1
        return "first value"

    @durable.step(name="two")
    def two(x: str) -> str:
        counts["two"] += 1
        return x + " and second value"

    @durable.workflow(name="logged", store=store, **options)
    def logged(fail: bool = False) -> str:
        value = two(one())
        if fail:
            raise RuntimeError("the run stops after its two steps")
        return value

    return logged


def test_a_damaged_log_entry_names_run_position_and_file_and_restart_works(
    tmp_path: Path,
) -> None:
    store = durable.open_store(tmp_path / "store")
    counts: Counter[str] = Counter()
    wf = two_steps(store, counts, run_id="r")
    with pytest.raises(RuntimeError):
        wf(fail=True)
    log = tmp_path / "store" / "logged" / "r" / "records.log"
    blob = bytearray(log.read_bytes())
    at = blob.index(b"and second value")  # inside the entry of position 1
    blob[at] ^= 0x01
    log.write_bytes(bytes(blob))
    with pytest.raises(durable.CorruptRecordError) as info:
        wf.resume("r", fail=False)
    err = info.value
    text = str(err)
    assert err.run_id == "r" and err.position == 1
    assert str(log) in text and "manifest" not in text and "restart=True" in text
    assert counts == {"one": 1, "two": 1}
    # The advice works: restart discards the damaged log and runs afresh.
    assert wf.with_options(restart=True)() == "first value and second value"
    assert counts == {"one": 2, "two": 2}


@pytest.mark.parametrize("what", ["run id", "workflow name"])
def test_an_over_long_id_is_refused_before_the_store_is_touched(
    tmp_path: Path, what: str
) -> None:
    root = tmp_path / "never-created"
    long = "x" * 300

    def body() -> int:
        return 1

    with pytest.raises(durable.ConfigurationError, match="at most 200 bytes"):
        if what == "run id":
            durable.workflow(store=str(root), run_id=long)(body)()
        else:
            durable.workflow(name=long, store=str(root))(body)
    assert not root.exists()


def test_an_open_file_returned_by_a_step_is_refused_at_record_time(
    store: durable.Store, tmp_path: Path
) -> None:
    counts: Counter[str] = Counter()
    path = tmp_path / "data.txt"
    path.write_text("content")
    handles: list[Any] = []

    @durable.step(name="opener")
    def opener() -> Any:
        counts["opener"] += 1
        handles.append(open(path))
        return {"handle": handles[-1]}

    @durable.workflow(name="files", store=store, run_id="r")
    def files() -> Any:
        return opener()

    with pytest.raises(durable.SerializationError, match="open file") as info:
        files()
    assert "data.txt" in str(info.value)
    assert store.load_records("files", "r") == {}  # nothing recorded for it
    with pytest.raises(durable.SerializationError):
        files()
    assert counts == {"opener": 2}  # never replayed as a StringIO
    for handle in handles:
        handle.close()


POOLED = '''
import concurrent.futures as cf
import multiprocessing
import sys

import durable


@durable.workflow(run_id="held")
def held() -> int:
    return 1


def in_worker(run_id: str) -> int:
    return held.resume(run_id).value


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        try:
            pool.submit(in_worker, "no-such-run").result(timeout=60)
        except durable.RunNotFoundError as missing:
            print(type(missing).__name__, missing.run_id)
'''


@pytest.mark.parametrize("start", ["spawn", "fork"])
def test_an_error_raised_in_a_pool_worker_reaches_the_parent_whole(
    tmp_path: Path, child_env: dict[str, str], start: str
) -> None:
    # Before: the worker's RunNotFoundError could not be unpickled in the
    # parent (TypeError in its __init__), so the pool broke instead.
    (tmp_path / "pooled.py").write_text(POOLED)
    done = subprocess.run(
        [sys.executable, "pooled.py", start], cwd=tmp_path, env=child_env,
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["RunNotFoundError", "no-such-run"]


@pytest.mark.parametrize("error", [
    durable.RunNotFoundError("wf", "r1", "/store"),
    durable.NondeterminismError("r1", (2, 0, 1), "fetch", "parse"),
    durable.RunLockedError("r1", "pid 7 on vm", 1.0, 2.0),
    durable.LeaseLostError("r1", 3, why="its lease file was deleted or replaced"),
    durable.SerializationError("fetch", "lock", "TypeError: no"),
    durable.StorageError("s3://b", "timed out"),
    durable.Suspended("r1", "waiting for a person"),
    durable.Cancelled("wf", "r1"),
    durable.ConfigurationError("bad value"),
])
def test_errors_keep_message_and_fields_through_pickle(error: BaseException) -> None:
    if hasattr(error, "add_note"):  # Python 3.11+: a note travels with the error too
        error.add_note("resume with ...")
    else:
        error.__notes__ = ["resume with ..."]  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (str(copy), copy.__dict__) == (str(error), error.__dict__)


def test_a_graceful_stop_keeps_its_exit_code_through_pickle() -> None:
    copy = pickle.loads(pickle.dumps(durable.Stopped(signal.SIGTERM)))
    assert (copy.code, copy.signum) == (143, signal.SIGTERM)


def test_a_step_that_changed_its_object_in_place_is_named_as_the_likely_cause(
    store: durable.Store,
) -> None:
    """A step method that appends to `self.history` changes its argument in
    place; replaying it returns the recorded value but does not append
    again. Its record is a changed call (it warned when it ran), and the
    refusal says why, rather than leaving the user to look for an edit."""
    asked: list[str] = []
    stop = {"on": True}

    class Agent:
        def __init__(self) -> None:
            self.history: list[str] = []

        @durable.step(name="ask")
        def ask(self, q: str) -> str:
            asked.append(q)
            self.history.append(q)
            return f"answer {len(self.history)}"

    @durable.workflow(name="chat", store=store, run_id="c")
    def chat() -> list[str]:
        agent = Agent()
        out = [agent.ask("q0"), agent.ask("q1")]
        if stop["on"]:
            raise RuntimeError("the run stops after its two steps")
        return out

    with pytest.warns(UserWarning, match="changed an object it was given"):
        with pytest.raises(RuntimeError):
            chat()
    stop["on"] = False
    with pytest.raises(durable.DefinitionChangedError) as refused:
        chat()
    message = str(refused.value)
    assert "position 0" in message and "changed an object it was given" in message
    assert "cannot redo" in message
    assert asked == ["q0", "q1"]  # nothing ran again


class Lossy:
    """Pickles as Lossy(a): its __init__ takes two, so it cannot be rebuilt."""

    def __init__(self, a: int, b: int) -> None:
        self.a, self.b = a, b

    def __reduce__(self) -> Any:
        return (Lossy, (self.a,))


def test_an_output_that_cannot_be_loaded_back_names_its_step_and_a_way_on(
    tmp_path: Path,
) -> None:
    """The output pickled, so it was recorded; every resume then raised the
    class's own TypeError, naming neither the run nor the position. It is
    refused as a record that cannot be loaded, with a fork that works."""
    counts: Counter[str] = Counter()
    store = durable.open_store(str(tmp_path))

    @durable.step(name="make")
    def make(x: int) -> Lossy:
        counts["make"] += 1
        return Lossy(x, x)

    @durable.workflow(name="lossy", store=store)
    def lossy(fail: bool) -> int:
        made = make(1)
        if fail:
            raise RuntimeError("stops after the step")
        return made.a

    with pytest.raises(RuntimeError, match="stops after"):
        lossy.with_options(run_id="r")(True)
    with pytest.raises(durable.CorruptRecordError) as refused:
        lossy.with_options(run_id="r")(False)
    text = str(refused.value)
    assert "position 0" in text and "cannot be loaded" in text and "is damaged" not in text
    assert "TypeError" in text and "durable fork r --workflow lossy --at 0" in text
    assert counts["make"] == 1  # never run again behind the user's back
    # A refusal leaves the run as it was: its arguments are the first attempt's.
    assert lossy.fork("r", at=0, new_run_id="again", fail=False).value == 1
    assert counts["make"] == 2


def test_an_output_that_cannot_be_loaded_back_is_final_when_the_body_catches_it(
    tmp_path: Path,
) -> None:
    """The body caught the refusal (`except Exception`) and completed the
    run with its fallback, for good: the recorded output was never returned,
    not even once the class was put back, as the refusal advises."""
    counts: Counter[str] = Counter()
    store = durable.open_store(str(tmp_path))

    @durable.step(name="make")
    def make(x: int) -> Lossy:
        counts["make"] += 1
        return Lossy(x, x)

    @durable.workflow(name="caught", store=store)
    def caught(fail: bool) -> Any:
        try:
            made = make(1).a
        except Exception as e:
            made = f"fallback {type(e).__name__}"
        if fail:
            raise RuntimeError("stops after the step")
        return made

    with pytest.raises(RuntimeError, match="stops after"):
        caught.with_options(run_id="r")(True)
    for _ in range(2):
        with pytest.raises(durable.CorruptRecordError, match="cannot be loaded"):
            caught.with_options(run_id="r")(False)
    assert counts["make"] == 1
    assert [i.status for i in caught.runs()] == ["failed"]


def test_a_child_run_refused_on_its_record_ends_a_parent_that_catches_it(
    tmp_path: Path,
) -> None:
    """The child's refusal (a record it cannot load) reached its parent as a
    plain exception: a parent that caught it completed with its fallback,
    for good, the child's recorded work never used."""
    counts: Counter[str] = Counter()
    store = durable.open_store(str(tmp_path))
    flag = tmp_path / "fail"
    flag.touch()

    @durable.step(name="make")
    def make() -> Lossy:
        counts["make"] += 1
        return Lossy(1, 1)

    @durable.step(name="then")
    def then(x: int) -> int:
        if flag.exists():
            raise RuntimeError("the child stops after its first step")
        return x

    @durable.workflow(name="inner", store=store)
    def inner() -> int:
        return then(make().a)

    @durable.workflow(name="outer", store=store, run_id="p")
    def outer() -> Any:
        try:
            return inner()
        except durable.CorruptRecordError as e:
            return f"fallback {type(e).__name__}"

    with pytest.raises(RuntimeError, match="child stops"):
        outer()
    flag.unlink()
    for _ in range(2):
        with pytest.raises(durable.CorruptRecordError, match="cannot be loaded"):
            outer()
    assert counts["make"] == 1
    assert [i.status for i in outer.runs()] == ["failed"]


def test_a_cache_entry_that_cannot_be_loaded_back_is_a_miss(tmp_path: Path) -> None:
    """It raised the class's TypeError at every plain call: computed again."""
    counts: Counter[str] = Counter()

    @durable.step(name="made", cache=True)
    def made(x: int) -> Lossy:
        counts["made"] += 1
        return Lossy(x, x)

    durable.configure(store=str(tmp_path))
    try:
        assert made(2).b == made(2).b == 2
    finally:
        durable.configure(store=None)
    assert counts["made"] == 2
