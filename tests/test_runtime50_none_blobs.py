"""Under durability "none" a local run synced nothing of its records or
manifest, yet every output over the blob threshold cost an fsync of the
blob and one of its folder. A run's blobs now follow its level; a run at
a level that syncs, finding the blob an earlier "none" attempt of the run
wrote (the same bytes: not written again), syncs it before its record
names it. The syscalls are counted by wrapping `os.fsync` (the real one
still runs), each with the path of the file or folder synced."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import durable

BIG = "x" * 64  # over the stores' blob_threshold below


def _synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    paths: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def counting(fd: int, _real: Any = real) -> None:
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
            _real(fd)

        monkeypatch.setattr(os, name, counting)
    return paths


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names the synced files through /proc")
def test_blobs_follow_the_run_s_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    @durable.step
    def big(tag: str) -> str:
        ran.append(tag)
        return BIG

    @durable.workflow(run_id="r")
    def flow(more: bool = False) -> int:
        n = len(big("first"))
        if not more:
            durable.suspend("later")
        return n + len(big("second"))  # the same bytes: the same blob

    store = durable.open_store(tmp_path / "s", durability="none", blob_threshold=16)
    wf = flow.with_options(store=store)
    synced = _synced(monkeypatch)
    with pytest.raises(durable.Suspended):
        wf()
    assert synced == []  # "none": the blob neither
    blobs = list((tmp_path / "s").glob("*/r/blobs/*"))
    assert len(blobs) == 1
    assert wf.with_options(durability="fsync").resume("r", more=True).value == 128
    assert str(blobs[0]) in synced  # found, not written: synced before a record named it
    assert ran == ["first", "second"]
