"""review56: a fingerprint that depended on which modules a process had
loaded, though none of them changed what the step reads.

A global a step reads by its statements (a path made from the module's
`__file__`, a dict) also counts the statements of the user's other loaded
modules that may change it (`elsewhere`). Handing a path to a call
(`cwd=HERE`) or calling its method (`HERE.joinpath("out")`,
`flow.HERE.joinpath("out")`) counted as such a change, though nothing
changes a path in place; so did handing a dict to a call that only reads
it (`json.dumps(CONFIG)`, `", ".join(CONFIG)`, `any(CONFIG)`). A run
started by a script that imports its tools module, resumed by a process
that does not, was refused ("flow.HERE is set by code of other loaded
modules: tools when recorded, none now"). The suite's helper `_count` met
it in pytest (`from tests.conftest import ROOT`, then `cwd=ROOT` in
test_hunt38/39). A tools module that may change the dict still refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, run_each

pytestmark = pytest.mark.slow  # two processes

FLOW = """
import os
from pathlib import Path

import durable

HERE = Path(__file__).resolve().parent
CONFIG = {"rate": 1}
PAIR = ({"rate": 1},)


@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    return x + len((HERE / "flow.py").read_text().splitlines()) * CONFIG["rate"] * PAIR[0]["rate"]


@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
TOOLS = {
    "handed": "import subprocess\nfrom flow import HERE\n\n\ndef build():\n    subprocess.run(['true'], cwd=HERE)\n",
    "method": "from flow import HERE\n\nOUT = HERE.joinpath('out')\n",
    "module_method": "import flow\n\nOUT = flow.HERE.joinpath('out')\n",
    "shown": "import json\nfrom flow import CONFIG\n\n\ndef show():\n    print(json.dumps(CONFIG), ', '.join(CONFIG), any(CONFIG))\n",
}
# One that may change it: refused, naming the module (fail closed: whether it ran is not known).
# A tuple handed on may be changed through what it holds (the lead, after review56's merge).
CHANGES = {
    "changes": "from flow import CONFIG\n\n\ndef tweak():\n    CONFIG.update(rate=1)\n",
    "tuple_handed": "from flow import PAIR\n\n\ndef bump(p):\n    p[0]['rate'] = 1\n\n\ndef tweak():\n    bump(PAIR)\n",
}


def test_a_path_other_modules_only_use_is_no_change_of_it(tmp_path: Path) -> None:
    folders = {}
    for name, text in {**TOOLS, **CHANGES}.items():
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(FLOW)
        (place / "tools.py").write_text(text)
    # Run by a script importing its tools, resumed by a process that does not.
    jobs = [job for f in folders.values() for job in ((f, "import tools\n" + RUN_FLOW, {"STOP": "1"}), (f, RUN_FLOW, {}))]
    outs = run_each(jobs)
    got = {
        name: (outs[2 * i].split(), outs[2 * i + 1].split()[:2], (place / "count").read_text().split())
        for i, (name, place) in enumerate(folders.items())
    }
    done = (["suspended"], ["value", str(10 + len(FLOW.splitlines()))], ["s"])  # s ran once
    refused = (["suspended"], ["refused", "run"], ["s"])
    assert got == {**dict.fromkeys(TOOLS, done), **dict.fromkeys(CHANGES, refused)}, outs
    assert "flow.CONFIG is set by code of other loaded modules: tools when recorded, none now" in outs[-1]
