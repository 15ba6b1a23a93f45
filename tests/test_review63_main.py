"""A run recorded by `python run.py` (its `__main__` a file) and called
again by `python -c` with the same code resumes:
`unseen` counted a global of another module by its contents only where
`__main__` has no file (code durable cannot read might have changed it),
so the two entry points gave one step two fingerprints and the resume was
refused ("now uses the contents of W"). Now a whole `python -c` program
that stores into nothing, names no changing method and no data of your
modules (`import flow; flow.wf(10)`) counts as that text run from a file
(`unseen._may_write`). One that does (`flow.W["k"] = 1`, even the same
value) still counts the contents: refused, the code differs (fail closed).
A workflow recorded by `python flow.py` and called again by `import flow`
resumes once runtime50's names land too (`NAMED_ALIKE`); both are needed."""

from __future__ import annotations

import importlib.util
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
# The workflow run as a script (`python flow.py`): called again by `import flow`, it is
# the same workflow once runtime50's names land (`durable/_fingerprint/scriptnames.py`).
SCRIPT = FLOW + """
if __name__ == "__main__":
    try:
        print("value", wf(10))
    except durable.Suspended:
        print("suspended")
"""
NAMED_ALIKE = importlib.util.find_spec("durable._fingerprint.scriptnames") is not None


def test_run_py_and_python_c_of_the_same_code_resume_each_other(tmp_path: Path) -> None:
    folders = {}
    for name in ("same", "c_writes", "script"):
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(SCRIPT if name == "script" else FLOW)
        (place / "run.py").write_text(RUN_FLOW)
        assert "suspended" in run_in(place, "flow.py" if name == "script" else "run.py", STOP="1")
    writes = RUN_FLOW.replace("import durable, flow\n", "import durable, flow\nflow.W['k'] = 1\n")
    same, written, script = run_each([(folders["same"], RUN_FLOW, {}), (folders["c_writes"], writes, {}), (folders["script"], RUN_FLOW, {})])
    assert "value 11" in same, same  # was refused: "s: now uses the contents of W"
    assert "refused" in written and "contents of W" in written, written
    # With runtime50's names, the script's run resumed (was refused: the contents of W);
    # without, `flow.wf` is another workflow than `flow.py:wf`, whose run it starts.
    assert "value 11" in script, script
    counts = {n: (f / "count").read_text().split() for n, f in folders.items()}
    ran = ["s", "t"] if NAMED_ALIKE else ["s", "s", "t"]
    assert counts == {"same": ["s", "t"], "c_writes": ["s"], "script": ran}
