"""A local run's log truncated by another process while its holder runs
(a cleanup script, a `truncate -s 0`, an older copy put back with `cp`):
the holder caught up with the shorter file as if it were another one,
read it from the start and went on recording after what was left, so the
run completed with records of steps it had run missing from its log, no
error said.
The holder now refuses at its next record (`CorruptRecordError` naming
the log, the bytes it had written and the bytes left), and so does every
later call, which runs nothing: the records lost are not run again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import durable

pytestmark = pytest.mark.slow

ran: list[int] = []


@durable.step(name="part")
def part(i: int) -> int:
    ran.append(i)
    if i == 2 and (cut := os.environ.pop("HUNT48_CUT", None)) is not None:
        how, log = cut.split(":", 1)
        size = os.path.getsize(log)
        keep = 0 if how == "emptied" else size // 2 + 7  # inside step 1's entry
        subprocess.run(["truncate", "-s", str(keep), str(log)], check=True)
    return i * 10


@durable.workflow(name="r", run_id="r")
def flow() -> int:
    return sum(part(i) for i in range(5))


@pytest.mark.parametrize("how", ["emptied", "halved"])
def test_a_log_truncated_under_its_holder_is_refused(tmp_path: Path, how: str) -> None:
    ran.clear()
    os.environ["HUNT48_CUT"] = f"{how}:{tmp_path / 'r' / 'r' / 'records.log'}"
    wf = flow.with_options(store=durable.open_store(tmp_path))
    with pytest.raises(durable.CorruptRecordError, match="truncated"):
        wf()  # was: completed, value 100, with steps 0 and 1 missing from its log
    assert ran == [0, 1, 2]
    with pytest.raises(durable.CorruptRecordError):
        wf()
    assert ran == [0, 1, 2]
