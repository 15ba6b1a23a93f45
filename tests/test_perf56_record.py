"""The record path of perf56: a large record goes into the run's log as
its entry's head and its data, put in the file together by one writev (the
data is not copied into an entry first), and a short write of such an
entry is cut back as any other's."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import pytest

import durable
from durable._storage import log as log_module
from durable._storage import logfile
from durable._storage.crc import LARGE
from durable._storage.log import RunLog

BIG = list(range(20_000))  # about 55 KB packed: a large record


def test_a_large_record_reaches_the_log_without_being_joined_into_its_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames: list[bytes | tuple[bytes, bytes]] = []
    real = logfile.write_all

    def seen(fd: int, frame: bytes | tuple[bytes, bytes]) -> None:
        frames.append(frame)
        real(fd, frame)

    monkeypatch.setattr(log_module, "write_all", seen)
    ran: list[int] = []
    store = durable.open_store(tmp_path, durability="none")

    @durable.step(name="big")
    def big(i: int) -> list[int]:
        ran.append(i)
        return BIG

    @durable.workflow(name="large", run_id="r", store=store)
    def flow(done: bool = False) -> int:
        total = sum(len(big(i)) for i in range(3))
        if not done:
            durable.suspend("read the records back")
        return total

    with pytest.raises(durable.Suspended):
        flow()
    large = [f for f in frames if type(f) is tuple]
    # The two after the first, which opens the log (`RunLog._write`, joined there).
    assert len(large) == 2 and all(len(data) >= LARGE for _, data in large)
    run = flow.resume("r", done=True)  # each record read back whole and replayed
    assert (run.value, run.steps_replayed, ran) == (3 * len(BIG), 3, [0, 1, 2])


@pytest.mark.parametrize("writev", [True, False])  # False: as on Windows, which has none
def test_a_short_write_of_a_large_entry_is_cut_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writev: bool
) -> None:
    if not writev:
        monkeypatch.setattr(logfile, "_WRITEV", None)
    path = tmp_path / "records.log"
    log = RunLog(str(path), "r")
    log.hold("none", 1.0)  # kept open: the second record goes through the open file
    assert log.create("steps/00000000", b"a" * 100) is None
    size = path.stat().st_size
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 50, old[1]))
    try:
        with pytest.raises(OSError):  # 50 bytes of it written, then the limit
            log.create("steps/00000001", b"b" * (2 * LARGE))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, handler)
    assert path.stat().st_size == size
    assert log.create("steps/00000002", b"c" * (2 * LARGE)) is None
    log.release()
    read = RunLog(str(path), "r").load()
    assert sorted(read) == ["steps/00000000", "steps/00000002"]
    assert read["steps/00000002"] == b"c" * (2 * LARGE)
