"""A live holder's lease file deleted, replaced by another file at its path
(unlinked and made again, or renamed over), or renamed away, between two
steps: the holder's next check finds it and the step after runs no body
and writes nothing (the lease check of `FileLease.check`, whichever way it
asks the system)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import durable


def _unlinked_and_made_again(lease: Path) -> None:
    lease.unlink()
    lease.write_text("{}")  # as a starter that found no file would make it


def _renamed_over(lease: Path) -> None:
    other = lease.with_name("other")
    other.write_text("{}")
    os.replace(other, lease)


def _renamed_away(lease: Path) -> None:
    os.rename(lease, lease.with_name("lease.old"))


def _deleted(lease: Path) -> None:
    lease.unlink()


def _moved_under_holder(root: Path, move: Callable[[Path], None]) -> None:
    """Two steps recorded, the lease moved in the body, then the next step:
    it runs no body and nothing is written after it."""
    store = durable.open_store(root)
    ran: list[int] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(name="moved", run_id="r", store=store)
    def flow() -> list[int]:
        out = [work(0), work(1)]
        move(root / "moved" / "r" / "lease")  # in the body, between two steps: no step of ours is writing
        return [*out, work(2), work(3)]

    with pytest.raises(durable.LeaseLostError) as info:
        flow()
    assert ran == [0, 1]  # the body of step 2 never ran
    assert info.value.position == 2
    assert store.record_names("moved", "r") == ["steps/00000000", "steps/00000001"]


@pytest.mark.parametrize("move", [_unlinked_and_made_again, _renamed_over, _renamed_away, _deleted])
def test_a_lease_file_moved_under_the_holder_stops_it(
    tmp_path: Path, move: Callable[[Path], None]
) -> None:
    _moved_under_holder(tmp_path / "s", move)


@pytest.mark.parametrize("move", [_renamed_over, _deleted])
def test_a_lease_file_under_a_path_not_ascii_moved_under_the_holder_stops_it(
    tmp_path: Path, move: Callable[[Path], None]
) -> None:
    """The check stats the path as the file system spells it (encoded once):
    a folder name not in ASCII, and one with a byte the file system encoding
    cannot decode (held as a surrogate), name the same lease file."""
    root = tmp_path / "stör\udcff"  # b"st\xc3\xb6r\xff" on disk
    assert os.fsencode(root).endswith(b"st\xc3\xb6r\xff")
    _moved_under_holder(root, move)
