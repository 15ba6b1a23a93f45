"""A user's subclass of a pool with state of its own that a step reads
(`POOL.scale`, set from the command line in the script's main block):
it runs code, but what it holds beyond the library's attributes is an
input. stale60's `executors.runs_code_only` took it for a bare pool and
never counted its contents: the second run with another scale replayed
the first's output. The library's own attributes (thread names, a
client's id) still count by nothing. In-process, `runpy` per phase."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys
from concurrent.futures import ThreadPoolExecutor

import durable


class Pool(ThreadPoolExecutor):
    def __init__(self):
        super().__init__(2)
        self.scale = 1


POOL = Pool()
PLAIN = ThreadPoolExecutor(2)


@durable.step
def fetch(i):
    with open(__file__ + ".count", "a") as f:
        f.write("ran\\n")
    return i * POOL.scale + len(PLAIN._thread_name_prefix) * 0


@durable.workflow(run_id="pool")
def pipeline(i):
    return fetch(i)


if __name__ == "__main__":
    POOL.scale = int(sys.argv[1])
    try:
        print("value", pipeline(3))
    except durable.DefinitionChangedError as e:
        print("refused", e)
    POOL.shutdown()
    PLAIN.shutdown()
"""


def test_a_pool_subclass_counts_by_the_state_it_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    outs = []
    for scale in ("2", "2", "5"):  # the same again (the thread names differ: replayed), then another
        monkeypatch.setattr(sys, "argv", [str(script), scale])
        runpy.run_path(str(script), run_name="__main__")
        outs.append(capsys.readouterr().out.strip())
    assert outs[:2] == ["value 6", "value 6"]
    assert outs[2].startswith("refused") and "POOL" in outs[2], outs[2]  # was "value 6": stale
    assert "POOL.scale differs: if you set it otherwise" in outs[2], outs[2]  # was "one made anew in each process"
    assert len(Path(f"{script}.count").read_text().split()) == 1
