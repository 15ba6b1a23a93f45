"""perf53: a step call of numbers keeps its canonical argument bytes in its
record (format 2), in place of their digest, and a replay compares the
call's own bytes with them: no hash made, and never "same" where the
digests would differ. Text is never kept (a token passed to a step stays
unwritten), nor long bytes. A log recorded before (format 1 rows, a digest
each: `tests/data/args_9c8c47c`) resumes with no step run again, and a
changed argument is not replayed in either format."""

from __future__ import annotations

import inspect
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core.identity import call_digest
from durable._storage import argdigest
from durable._storage.codec import unpack
from durable._storage.records import intact_body

OLD = Path(__file__).parent / "data" / "args_9c8c47c"


def _num(i: int, scale: float | None = 2.5) -> int:
    return i


def _txt(s: str, n: int = 1) -> str:
    return s


def test_a_call_of_numbers_keeps_its_bytes_in_place_of_their_digest(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")
    num, txt = durable.step(name="num")(_num), durable.step(name="txt")(_txt)

    @durable.workflow(name="w", store=store, run_id="r")
    def run() -> None:
        num(5)
        num(7, None)
        txt("token")
        num(2**300)  # 91 digits: past what a record keeps

    run()
    sealed = store.load_records("w", "r")
    rows = [unpack(intact_body(sealed[f"steps/{k:08d}"], None) or b"") for k in range(4)]
    assert [row[0] for row in rows] == [2, 2, 2, 2]
    assert [row[15] for row in rows] == [
        b"A2:s1:ii5;s5:scalef" + struct.pack(">d", 2.5),
        b"A2:s1:ii7;s5:scaleN",
        None,
        None,
    ]
    calls = [(_num, (5,)), (_num, (7, None)), (_txt, ("token",)), (_num, (2**300,))]
    for row, (fn, args) in zip(rows, calls, strict=True):
        digest = call_digest(inspect.signature(fn), args, {}, fn.__name__)
        # One or the other, never both; the bytes are what the digest hashes.
        assert row[5] == (None if row[15] else digest)
        assert row[15] is None or argdigest.digest_of(row[15]) == digest
    assert [s.position for s in run.history("r")][1:] == [0, 1, 2, 3]  # each decodes


def test_a_replay_makes_no_hash_and_a_changed_argument_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = durable.open_store(tmp_path / "s")
    calls: list[Any] = []

    @durable.step(name="echo")
    def echo(x: Any, scale: int = 2) -> Any:
        calls.append(x)
        return x

    @durable.workflow(name="args", store=store, run_id="a1")
    def run(x: Any) -> Any:
        out = [echo(x), echo(0), echo(5)]
        durable.suspend("here")
        return out

    with pytest.raises(durable.Suspended):
        run(1)
    hashed: list[bytes] = []
    real = argdigest._small_sha256

    def counted(data: bytes = b"") -> Any:
        hashed.append(data)
        return real(data)

    monkeypatch.setattr(argdigest, "_small_sha256", counted)
    with pytest.raises(durable.Suspended):
        run.resume("a1")  # the same calls: replayed on their bytes
    # A closure (never on `StepSpec.plain_in`'s path) too: the step writes nothing
    # another reads (`written.quiet`), so the call's bytes are its whole identity.
    assert calls == [1, 0, 5] and hashed == []
    for other in (2, True, 1.0, 2**64):  # another value, or another type of the same value
        with pytest.raises(durable.DefinitionChangedError, match="arguments changed") as e:
            run.resume("a1", x=other)
        assert e.value.position == 0
    assert calls == [1, 0, 5]


@pytest.mark.slow  # one child: the fixture's module is `flow`, as it was recorded
def test_a_log_recorded_before_resumes_and_a_changed_argument_runs_again(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    where = tmp_path / "old"
    shutil.copytree(OLD, where)
    child = subprocess.run(
        [sys.executable, "resume.py", "store", "0", "1", "1", "0"],
        cwd=where,
        env=dict(child_env, FLOW_COUNTS=str(where / "counts")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    # The same arguments: nine steps recorded by 9c8c47c, none run again. `shift=1`
    # changes the argument at position 7: it and the one after it run again (and
    # are recorded in format 2), the rest replays; then both formats replay, and
    # the argument changed back runs those two again.
    assert child.stdout.split("\n")[:4] == ["-", "one one", "-", "one one"]
