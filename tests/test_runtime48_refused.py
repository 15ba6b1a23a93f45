"""A refused attempt (a call that does not match its record) put back the
manifest it found, or, for a run it had just made, left the one `start`
wrote: either way `running` with no holder, a dead holder's mark. The next
attempt announced `LeaseTakenOver` of a process that had ended normally
(refused), and counted a death nobody died (`killed.count_killed`). A
refused run found `running` or new now ends `failed` with the refusal; one
found otherwise (failed, suspended) keeps its status, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.manifest import read_manifest
from durable.events import LeaseTakenOver
from tests.scripts import run_each


def _taken_over(call: Any) -> tuple[str, int]:
    """What `call()` ended with, and how many takeovers it announced."""
    seen: list[object] = []
    with durable.on_event(seen.append):
        try:
            out = f"value {call()}"
        except durable.DurableError as e:
            out = type(e).__name__
    return out, sum(isinstance(e, LeaseTakenOver) for e in seen)


def test_a_new_run_refused_by_its_child_is_not_left_running(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path / "store"))
    arg, ran = tmp_path / "arg", []

    @durable.step
    def part(n: int) -> int:
        ran.append(n)
        return n

    @durable.step
    def flaky() -> int:
        ran.append(0)
        if len(ran) == 2:
            raise ValueError("first try fails")
        return 0

    @durable.workflow(name="child", store=store, run_id="c1")
    def child() -> int:
        return part(int(arg.read_text())) + flaky()  # read at run time: no part of the fingerprint

    @durable.workflow(name="parent", store=store, run_id="p1")
    def parent() -> int:
        return child()

    arg.write_text("1")
    with pytest.raises(ValueError):
        child()
    arg.write_text("2")  # the child's recorded call was part(1): refused
    assert _taken_over(parent) == ("DefinitionChangedError", 0)
    m = read_manifest(store, "parent", "p1")
    assert m is not None and (m.status, (m.error or {}).get("type")) == ("failed", "DefinitionChangedError")
    assert [r.status for r in parent.runs()] == ["failed"]
    assert _taken_over(parent) == ("DefinitionChangedError", 0)  # nobody died: nothing taken over
    arg.write_text("1")
    assert _taken_over(parent) == ("value 1", 0)
    assert ran == [1, 0, 0]


FLOW = """
import os, signal, durable

@durable.step
def a(n):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"a{n}\\n")
    return n

@durable.step
def b():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    if not os.path.exists("died"):
        open("died", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return 1

@durable.workflow(name="wf", run_id="r1")
def wf():
    with open("arg") as f:  # read at run time: no part of the fingerprint
        return a(int(f.read())) + b()

durable.on_event(lambda e: print(type(e).__name__) if type(e).__name__ == "LeaseTakenOver" else None)
try:
    print("value", wf())
except durable.DurableError as e:
    print("error", type(e).__name__)
"""


@pytest.mark.slow
def test_a_refused_resume_of_a_killed_run_is_taken_over_once(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    jobs = [(tmp_path, f"open('arg', 'w').write('{n}'); import flow", {}) for n in (1, 2, 1)]
    killed, refused = run_each(jobs[:2])
    assert killed == ""
    # The refused attempt took over from the killed one (a real death) ...
    assert refused.split() == ["LeaseTakenOver", "error", "DefinitionChangedError"]
    m = read_manifest(durable.open_store(str(tmp_path / "store")), "wf", "r1")
    assert m is not None and (m.status, (m.error or {}).get("type")) == ("failed", "DefinitionChangedError")
    # ... and ended: the next one takes over nothing, and runs b once more.
    assert run_each(jobs[2:]) == ["value 2\n"]
    assert (tmp_path / "count").read_text().split() == ["a1", "b", "b"]
