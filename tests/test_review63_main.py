"""A run recorded by `python run.py` (its `__main__` a file) and called
again by `python -c` with the same code resumes:
`unseen` counted a global of another module by its contents only where
`__main__` has no file (code durable cannot read might have changed it),
so the two entry points gave one step two fingerprints and the resume was
refused ("now uses the contents of W"). Now a whole `python -c` program
that stores into nothing, names no changing method and no data of your
modules (`import flow; flow.wf(10)`) counts as that text run from a file
(`unseen._may_write`). One that does (`flow.W["k"] = 1`, even the same
value) still counts the contents: refused, the code differs (fail closed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, run_each, run_in

pytestmark = pytest.mark.slow  # processes

FLOW = """import os, durable
W = {"k": 1}

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    return x * W["k"]

@durable.step
def t(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("t\\n")
    return x + 1

@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return t(out)
"""


def test_run_py_and_python_c_of_the_same_code_resume_each_other(tmp_path: Path) -> None:
    folders = {}
    for name in ("same", "c_writes"):
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(FLOW)
        (place / "run.py").write_text(RUN_FLOW)
        assert "suspended" in run_in(place, "run.py", STOP="1")
    writes = RUN_FLOW.replace("import durable, flow\n", "import durable, flow\nflow.W['k'] = 1\n")
    same, written = run_each([(folders["same"], RUN_FLOW, {}), (folders["c_writes"], writes, {})])
    assert "value 11" in same, same  # was refused: "s: now uses the contents of W"
    assert "refused" in written and "contents of W" in written, written
    counts = {n: (f / "count").read_text().split() for n, f in folders.items()}
    assert counts == {"same": ["s", "t"], "c_writes": ["s"]}
