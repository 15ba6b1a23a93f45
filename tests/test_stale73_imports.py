"""A module of your own reached in the workflow's body through
`importlib.import_module("p73.setup")` or `__import__("p73.helpers")`, by
its spelled name, counts as the same module imported at the top of the
file does: what a function of it changes from the environment
(`helpers.f = helpers.g`, module global `K`) makes the next step's call
changed when the environment changes, and the unchanged program replays.
Each mode runs in a process of its own (what `setup()` rebinds stays
rebound in that process), records its step, stops (suspended), and is
resumed in a new process: with the same environment, or another one.

Was: the spelled name was not resolved to the module (`callees.resolve`,
`outside._scan`, `heads`), so nothing the call changed counted, and the
resume replayed 6 (10) where running the program gives 500 (15). With
the name not spelled (`import_module(SETUP)`), the call is one only the
run knows: it may fill any global of a module of yours the step names,
which counts by content (`filled_from_outside`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow  # processes

HEAD = "import importlib, os, durable\nfrom p73 import helpers\nfrom c73 import count, stop\nSETUP = 'p73.setup'\n"
STEP = "@durable.step\ndef s(x):\n    count('s')\n    return {returns}\n"
WF = "@durable.workflow(run_id='r')\ndef wf(x):\n    {call}\n    out = s(x)\n    stop()\n    return out\n"
# mode: (what the step returns, the body's call reaching a module by its name)
MODES = {
    "rebind": ("helpers.f(x)", 'importlib.import_module("p73.setup").setup()'),
    "configure": ("helpers.K", 'importlib.import_module("p73.helpers").configure()'),
    "setattr": ("helpers.K", 'setattr(__import__("p73.helpers").helpers, "K", int(os.environ.get("KV", "10")))'),
    # A name not spelled: a call only the run knows, which may fill any global the step reads.
    "untold": ("helpers.f(x)", "importlib.import_module(SETUP).setup()"),
}
FILES = {
    "c73.py": "import os, durable\n\ndef count(name):\n    with open(os.environ['COUNT_FILE'], 'a') as f:\n"
    "        f.write(name + '\\n')\n\ndef stop():\n    if os.environ.get('STOP'):\n        durable.suspend('waiting')\n",
    "p73/__init__.py": "",
    "p73/helpers.py": "import os\nK = 10\n\ndef f(x):\n    return x + 1\n\ndef g(x):\n    return x * 100\n\n"
    "def configure():\n    global K\n    if os.environ.get('BIG'):\n        K = 15\n",
    "p73/setup.py": "import os\nfrom p73 import helpers\n\ndef setup():\n    if os.environ.get('BIG'):\n"
    "        helpers.f = helpers.g\n",
}
RUN = """
import durable, flow
try:
    print("value", flow.wf(5))
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError:
    print("refused then", flow.wf.with_options(on_change="rerun")(5))
"""
BEFORE = {"rebind": 6, "configure": 10, "setattr": 10, "untold": 6}
NOW = {"rebind": 500, "configure": 15, "setattr": 15, "untold": 500}


def test_a_module_imported_by_its_spelled_name_counts_what_it_changes(tmp_path: Path) -> None:
    folders = {f"{mode}-{kind}": tmp_path / f"{mode}-{kind}" for mode in MODES for kind in ("same", "changed")}
    for name, folder in folders.items():
        (folder / "p73").mkdir(parents=True)
        for file, text in FILES.items():
            (folder / file).write_text(text)
        returns, call = MODES[name.partition("-")[0]]
        (folder / "flow.py").write_text(HEAD + STEP.format(returns=returns) + WF.format(call=call))

    def between(name: str, folder: Path) -> dict[str, str]:
        return {"BIG": "1", "KV": "15"} if name.endswith("-changed") else {}

    done = twice(folders, RUN, between, first={"STOP": "1"})
    for name, (first, counted, second, counted_after) in done.items():
        mode = name.partition("-")[0]
        assert first.strip() == "suspended", (name, first)
        assert counted == ["s"], (name, counted)
        if name.endswith("-same"):  # no false refusal: replayed, run once in all
            assert second.strip() == f"value {BEFORE[mode]}", (name, second)
            assert counted_after == ["s"], (name, counted_after)
        else:  # was "value 6" / "value 10": the stale record replayed
            assert second.strip() == f"refused then {NOW[mode]}", (name, second)
            assert counted_after == ["s", "s"], (name, counted_after)
