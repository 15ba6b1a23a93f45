"""A run whose first attempt failed or was interrupted inside a
`loop_over(..., checkpoint_items=True)`, holding no record yet but the
items it finished, was flagged as made by no code (`lifecycle.made_nothing`
counted the items read at the attempt's start, not those it kept itself),
so a resume with the step's code edited was not refused under
on_change="refuse": the finished items ran again, silently (found by
review64). Such a run is now refused as any run holding records is."""

from __future__ import annotations

import importlib
import sys
import uuid
from pathlib import Path

import pytest

import durable

FLOW = """\
import durable

RAN = []
FAIL = []

@durable.step(name="work")
def work(x):
    RAN.append(x)
    if x in FAIL:
        raise RuntimeError("boom")
    return x * {k}

@durable.workflow(name="flow", run_id="r")
def wf():
    return durable.loop_over(work, [1, 2, 3], checkpoint_items=True)
"""


def test_items_kept_by_a_failed_first_attempt_are_made_by_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    names = [f"flow64_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    mods = []
    try:
        for name, k in zip(names, (10, 100), strict=True):  # the same flow, its step edited
            (tmp_path / f"{name}.py").write_text(FLOW.format(k=k))
            mods.append(importlib.import_module(name))
        old, new = mods
        old.FAIL.append(3)
        with pytest.raises(RuntimeError, match="boom"):
            old.wf()
        assert old.RAN == [1, 2, 3]  # 1 and 2 kept
        with pytest.raises(durable.DefinitionChangedError):
            new.wf()
        assert new.RAN == []  # [1, 2, 3] before: no refusal, items 1 and 2 ran again
        old.FAIL.clear()
        assert old.wf() == [10, 20, 30]  # the code that made them resumes it
        assert old.RAN == [1, 2, 3, 3]
    finally:
        for name in names:
            sys.modules.pop(name, None)
