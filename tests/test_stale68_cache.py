"""A cached step's key counts the globals it reads that another step
changes (`STATE`, by value), and a step writing one is kept out of the
cache: a hit could be served another run's state, or could not redo the
write. Both looked at the step's own code only: `outer_get` reading
`STATE` through `helper(k)` or through the step `get(k)` (which runs
plainly inside it) was served run a's 5 in run b, where `STATE["a"]` is 7;
and `outer` calling the step `put`, which writes `STATE` that `get` reads,
was served in a new process (here: `STATE` as the import left it) without
the write, so `get` read None for 5."""

from __future__ import annotations

import importlib
import sys
import uuid
from pathlib import Path

import pytest

FLOW = """\
import durable

STATE = {}
RUNS = []

@durable.step
def put(k, v):
    STATE[k] = v
    return v

@durable.step
def get(k):
    return STATE.get(k)

def helper(k):
    return STATE.get(k)

@durable.step(cache=True)
def through_step(k):
    RUNS.append("through_step")
    return get(k)

@durable.step(cache=True)
def through_helper(k):
    RUNS.append("through_helper")
    return helper(k)

@durable.step(cache=True)
def outer(k):
    RUNS.append("outer")
    return put(k, 5)

@durable.workflow
def reads(v, name):
    put("a", v)
    return {"step": through_step, "helper": through_helper}[name]("a")

@durable.workflow
def writes(tag):
    outer("a")
    return get("a")
"""


def test_a_cached_step_counts_what_the_functions_it_runs_read_and_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"flow68_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(FLOW)
    mod = importlib.import_module(name)
    try:
        with pytest.warns(UserWarning, match="writes STATE"):  # outer: never served nor kept
            assert mod.writes("a") == 5
            mod.STATE.clear()  # what a new process's import leaves
            assert mod.writes("b") == 5  # None before: served, put not run
        assert mod.RUNS == ["outer", "outer"]
        mod.RUNS.clear()
        for how in ("step", "helper"):
            assert mod.reads(5, how) == 5
            assert mod.reads(7, how) == 7  # 5 before: run a's entry
            assert mod.reads(5, how) == 5  # run a's entry, served
        assert mod.RUNS == ["through_step"] * 2 + ["through_helper"] * 2
    finally:
        sys.modules.pop(name, None)
