"""A run served a large value from the cache keeps the cache's blob alive
with a ref marker. A run removed and made again under the same id, in the
same process, is another run: it writes its own marker, so that clearing
the cache never takes the blob it still refers to (a resume would run the
finished step again). Every test counts executions of the step bodies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._manage import cache as manage

CALLS: Counter[str] = Counter()
FAIL = {"use": True}


@durable.step(cache=True)
def big(n: int) -> str:
    CALLS["big"] += 1
    return "x" * n


@durable.step
def use(text: str) -> int:
    CALLS["use"] += 1
    if FAIL["use"]:
        raise RuntimeError("use fails")
    return len(text)


def test_a_run_made_again_under_its_id_keeps_the_blob_it_refers_to(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path / "store"), blob_threshold=1000)
    CALLS.clear()
    FAIL["use"] = True

    @durable.workflow(store=store, run_id="again")
    def flow(n: int) -> int:
        return use(big(n))

    with pytest.raises(RuntimeError):
        flow(5000)
    flow.delete("again")
    manage.clear(store)  # the run is gone: its marker and the blob go
    with pytest.raises(RuntimeError):
        flow(5000)  # a new run: big() computes again, the blob is back
    assert CALLS == {"big": 2, "use": 2}
    manage.clear(store)  # the entry goes; the blob the new run refers to stays
    FAIL["use"] = False
    assert flow(5000) == 5000
    assert CALLS == {"big": 2, "use": 3}  # big() was replayed, not run again
