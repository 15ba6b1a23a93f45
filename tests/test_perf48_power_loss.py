"""What a power loss may leave of a local run written under durability
"none", which syncs nothing, its manifest included (docs/storage.md,
durability levels): any of the run's files missing, emptied, zeroed, or
the version before, in any combination, since the operating system writes
them back in no promised order. Whatever is left, a call either returns
the value the run's code gives for its arguments (replaying what survived,
running the rest again) or raises a clear `DurableError`: never a stale
value (the result of other arguments, a record of another attempt) nor a
damaged one. Each state is made by hand from the files the run really
wrote, in one process."""

from __future__ import annotations

import itertools
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import durable

ran: list[int] = []


@durable.step
def square(i: int) -> int:
    ran.append(i)
    return i * i


@durable.workflow(run_id="r")
def flow(base: int = 0, done: bool = False) -> int:
    total = sum(square(base + i) for i in range(3))
    if not done:
        durable.suspend("later")
    return total


def _value(base: int) -> int:
    return sum((base + i) ** 2 for i in range(3))


FILES = ("run", "records.log")


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {n: (folder / n).read_bytes() if (folder / n).exists() else None for n in FILES}


def _variants(versions: list[bytes | None]) -> list[bytes | None]:
    """What a power loss may leave of a file written these ways, none synced:
    any version, missing, empty, zeroed, or cut in half."""
    out: list[bytes | None] = [None, b""]
    for v in versions:
        if v:
            out += [v, bytes(len(v)), v[: len(v) // 2]]
    return out


def _wf(tmp_path: Path) -> Any:
    return flow.with_options(store=durable.open_store(tmp_path / "s", durability="none"))


def _states(tmp_path: Path, history: list[dict[str, bytes | None]], base: int) -> int:
    """Every state made from the versions in `history`; a call with `base`
    in each. Returns how many ended in an error (of 64)."""
    folder = tmp_path / "s" / "flow" / "r"
    errors = 0
    manifests = _variants([h["run"] for h in history])
    logs = _variants([h["records.log"] for h in history])
    for manifest, log in itertools.product(manifests, logs):
        for name, data in zip(FILES, (manifest, log), strict=True):
            (folder / name).unlink(missing_ok=True)
            if data is not None:
                (folder / name).write_bytes(data)
        before = len(ran)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # damage past what was synced is announced
                got = _wf(tmp_path).run(base=base, done=True).value
        except durable.DurableError:
            errors += 1
        else:
            assert got == _value(base), (manifest, log)
        assert len(ran) - before <= 3  # each step at most once per call
        shutil.rmtree(folder)
        folder.mkdir(parents=True)
    return errors


def test_a_suspended_then_completed_run(tmp_path: Path) -> None:
    wf, folder = _wf(tmp_path), tmp_path / "s" / "flow" / "r"
    with pytest.raises(durable.Suspended):
        wf()
    first = _snapshot(folder)
    assert wf.resume("r", done=True).value == _value(0)
    history = [first, _snapshot(folder)]
    # A damaged manifest is an error (restart=True starts afresh); a missing
    # one, a run started over; an older one, a resume from what survived.
    assert 0 < _states(tmp_path, history, 0) < 64


def test_a_run_restarted_with_other_arguments(tmp_path: Path) -> None:
    # The versions before belong to base=0: none of them may answer base=10.
    wf, folder = _wf(tmp_path), tmp_path / "s" / "flow" / "r"
    assert wf.run(done=True).value == _value(0)
    old = _snapshot(folder)
    with pytest.raises(durable.Suspended):
        wf.with_options(restart=True)(base=10)
    assert wf.resume("r", base=10, done=True).value == _value(10)
    assert 0 < _states(tmp_path, [old, _snapshot(folder)], 10) < 64
