"""Under durability "none" a local run never syncs: not its records, not
its manifest (docs/storage.md, durability levels). Before, every attempt
wrote its manifest twice (start, end) with an fsync of the file and one of
its folder each: four syncs a resume, at 0.2-5 ms each the largest part of
resuming a short run. Under "fsync" and "batch" the manifest is still
synced: what it notes of the log must not survive a power loss the log's
records did not. The syscalls are counted by wrapping `os.fsync` and
`os.fdatasync` (the real ones still run)."""

from __future__ import annotations

import os
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
def flow(done: bool = False) -> int:
    total = sum(square(i) for i in range(3))
    if not done:
        durable.suspend("later")
    return total


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def counting(fd: int, _real: Any = real, _name: str = name) -> None:
            calls.append(_name)
            _real(fd)

        monkeypatch.setattr(os, name, counting)
    return calls


def _phases(tmp_path: Path, level: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Syncs made by: a first attempt that suspends, a resume that
    suspends, a resume that completes, a call of the completed run."""
    calls = _counted(monkeypatch)
    wf = flow.with_options(store=durable.open_store(tmp_path / "s", durability=level))
    counts = []
    for call in (wf, lambda: wf.resume("r"), lambda: wf.resume("r", done=True),
                 lambda: wf.resume("r", done=True)):  # fmt: skip
        before = len(calls)
        try:
            got = call()
            assert getattr(got, "value", got) == 5
        except durable.Suspended:
            pass
        counts.append(len(calls) - before)
    return counts


def test_none_never_syncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    del ran[:]
    assert _phases(tmp_path, "none", monkeypatch) == [0, 0, 0, 0]
    assert ran == [0, 1, 2]  # each step ran once; the resumes replayed them


@pytest.mark.parametrize("level", ["fsync", "batch"])
def test_other_levels_still_sync_the_manifest(
    tmp_path: Path, level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = _phases(tmp_path, level, monkeypatch)
    # A resume: the log synced once (at its end, or where the attempt noted
    # it at its start), the manifest twice (file and folder each).
    assert counts[1:] == [5, 5, 0]
    assert counts[0] >= 6
