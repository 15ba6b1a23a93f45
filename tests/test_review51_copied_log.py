"""review51: the sync mark (`syncmark`, under "fsync" since hunt48) is an
extended attribute of the log *file*, and a file written over in place
keeps it: another intact log of the run put there (a store copied to
another machine without xattrs, the run restarted there, the store copied
back with `cp -r`, which rewrites each file in place) was refused as a log
that lost synced records (`durable show` failed, and so did every call that
read it), its entries ending before the old log's mark. The mark now names
the first entry of the log it measured: a log starting with another intact
entry is another log, which the mark says nothing of; a log cut short or
zeroed from its first entry on is still refused (test_hunt48_fsync_tail)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

import durable

ran: list[int] = []


@durable.step(name="s")
def s(i: int) -> int:
    ran.append(i)
    return i


@durable.workflow(name="w", run_id="r")
def flow(n: int) -> int:
    return sum(s(i) for i in range(n))


def _log(store: Path) -> Path:
    return store / "w" / "r" / "records.log"


def test_another_log_written_over_a_marked_one_is_read(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except (AttributeError, OSError):
        pytest.skip("no extended attributes here: nothing is marked")
    here, there = tmp_path / "here", tmp_path / "there"
    assert flow.with_options(store=durable.open_store(here, sync_interval=1e-9))(5) == 10
    assert flow.with_options(store=durable.open_store(there))(2) == 1  # the run made anew
    copied, original = _log(there).read_bytes(), _log(here).read_bytes()
    for made in (there / "w").rglob("*"):  # as `cp -r there/. here` does: in place
        if made.is_file():
            _write_over(here / made.relative_to(there), made.read_bytes())
    assert _log(here).read_bytes() == copied
    store = durable.open_store(here)
    assert len(store.records("w", "r").read_all()) == 2  # was: CorruptRecordError, before byte N
    ran.clear()
    assert flow.with_options(store=store).resume("r").value == 1
    assert ran == []
    # Its own log put back cut short after its first entry: still refused.
    name_len, data_len = struct.unpack_from(">HI", original, 2)
    _write_over(_log(here), original[: 16 + name_len + data_len + 5])
    with pytest.raises(durable.CorruptRecordError, match="a sync covered"):
        durable.open_store(here).records("w", "r").read_all()


def _write_over(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.truncate(0)
        f.write(data)
