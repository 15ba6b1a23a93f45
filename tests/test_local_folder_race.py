"""A run's folders removed (`durable rm`, gc) while another process makes
them to start the run: the start makes them again and runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import durable
from durable._storage import localfs


def test_a_folder_removed_between_its_making_and_its_check_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault campaign's `rm against start` saw a start fail with
    StorageError ("taking the lease ...: No such file or directory"): its
    workflow's folder was made, then removed by the `rm` before the check
    that it is a real folder. A folder missing then is made again, as one
    missing when the lease or a record is written already was. The
    removal is done here at that very moment, by the real filesystem."""
    store = durable.open_store(str(tmp_path / "store"))
    real = localfs.real_folder
    removed: list[str] = []

    def removed_by_a_racing_rm(path: str) -> None:
        if not removed and os.path.basename(path) == "racing":
            removed.append(path)
            os.rmdir(path)
        real(path)

    monkeypatch.setattr(localfs, "real_folder", removed_by_a_racing_rm)
    ran: list[int] = []

    @durable.step
    def double(x: int) -> int:
        ran.append(x)
        return 2 * x

    @durable.workflow(name="racing", store=store, run_id="r")
    def racing(x: int) -> int:
        return double(x)

    assert racing(4) == 8
    assert removed and ran == [4]
    assert racing(4) == 8 and ran == [4]  # recorded: the second call replays
