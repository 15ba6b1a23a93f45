"""A module of your own read only through names it binds (`helpers.f(x)`,
`p72.helpers.f(x)`, in a step or in the workflow's body) counts what it
names, as `from .helpers import f` does: an edit of another function or
constant of that module is no change of the step, and the resume replays.
A module used as a whole (`getattr(helpers, NAME)(x)`,
`helpers.__dict__["g"](x)`, `run(helpers)`) still counts whole, and an
edit of the function it names counts either way. Each run records its
step, stops (suspended), and is resumed in a new process.

The walk over the step's names found `helpers` itself in `helpers.f`, and
counted that module whole: after an edit of `helpers.g`, which the step
never calls, the resume was refused ("helper p72.helpers.g changed; module
helpers changed"), where the same edit with `from .helpers import f` replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow  # processes, forked

HEAD = "import os, durable\nimport p72.helpers\nfrom c72 import count, stop\nfrom . import helpers\n"


def _step(mode: str, returns: str) -> str:
    return f"@durable.step\ndef s(x):\n    count({mode!r})\n    return {returns}\n"


# mode: (its module's text after HEAD, the step's call in the body)
MODES = {
    "attr": (_step("attr", "helpers.f(x)"), "s(x)"),
    "dotted": (_step("dotted", "p72.helpers.f(x)"), "s(x)"),
    "body": (_step("body", "x + 1"), "s(helpers.f(x))"),
    "edited": (_step("edited", "helpers.h(x)"), "s(x)"),
    "getattr": ("NAME = 'h'\n" + _step("getattr", "getattr(helpers, NAME)(x)"), "s(x)"),
    "dunder": (_step("dunder", "helpers.__dict__['h'](x)"), "s(x)"),
    "whole": (_step("whole", "call(helpers, x)"), "s(x)"),
}
WF = """
@durable.workflow(run_id="{mode}")
def wf(x):
    out = {call}
    stop()
    return out
"""
FILES = {
    "c72.py": "import os, durable\n\ndef count(name):\n    with open(os.environ['COUNT_FILE'], 'a') as f:\n"
    "        f.write(name + '\\n')\n\ndef stop():\n    if os.environ.get('STOP'):\n        durable.suspend('waiting')\n",
    "p72/__init__.py": "",
    "p72/helpers.py": "K = 2\n\ndef f(x):\n    return x + 1\n\ndef g(x):\n    return x * K\n\n"
    "def h(x):\n    return x * 3\n\nclass Z:\n    def m(self):\n        return 1\n",
    "p72/runner.py": "def call(mod, x):\n    return mod.h(x)\n",
}
# In the second process of `changed`: what the steps of attr, dotted and body
# never run (g, K, Z.m), and h, which the others run.
EDITS = [("x * K", "x * K + 1"), ("K = 2", "K = 5"), ("return 1", "return 2"), ("x * 3", "x * 4")]
RUN = """
import importlib, os, durable
for mode in os.environ["MODES"].split():
    mod = importlib.import_module("p72.m_" + mode)
    try:
        print(mode, "value", mod.wf(5))
    except durable.Suspended:
        print(mode, "suspended")
    except durable.DefinitionChangedError:
        print(mode, "refused then", mod.wf.with_options(on_change="rerun")(5))
"""
BEFORE = {"attr": 6, "dotted": 6, "body": 7, "edited": 15, "getattr": 15, "dunder": 15, "whole": 15}
NOW = {**BEFORE, "edited": 20, "getattr": 20, "dunder": 20, "whole": 20}
REPLAYED = ("attr", "dotted", "body")


def test_a_module_read_through_its_names_counts_what_they_name(tmp_path: Path) -> None:
    folders = {"same": tmp_path / "same", "changed": tmp_path / "changed"}
    for folder in folders.values():
        (folder / "p72").mkdir(parents=True)
        for name, text in FILES.items():
            (folder / name).write_text(text)
        for mode, (text, call) in MODES.items():
            head = HEAD + ("from .runner import call\n" if mode == "whole" else "")
            (folder / f"p72/m_{mode}.py").write_text(head + text + WF.format(mode=mode, call=call))
    modes = {"MODES": " ".join(MODES)}

    def between(name: str, folder: Path) -> dict[str, str]:
        if name == "changed":
            helpers = folder / "p72/helpers.py"
            for old, new in EDITS:
                assert old in helpers.read_text(), old
                helpers.write_text(helpers.read_text().replace(old, new))
        return modes

    done = twice(folders, RUN, between, first={**modes, "STOP": "1"})
    for first, counted, _, _ in done.values():
        assert first.split("\n")[: len(MODES)] == [f"{m} suspended" for m in MODES], first
        assert sorted(counted) == sorted(MODES), counted

    def said(out: str) -> dict[str, str]:
        return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in MODES}

    assert said(done["same"][2]) == {m: f"{m} value {BEFORE[m]}" for m in MODES}, done["same"][2]
    assert sorted(done["same"][3]) == sorted(MODES)  # each replayed: run once, in the first process
    # Was: "attr refused then 6", "dotted refused then 6", "body refused then 7" (run again).
    want = {m: f"{m} value {BEFORE[m]}" if m in REPLAYED else f"{m} refused then {NOW[m]}" for m in MODES}
    assert said(done["changed"][2]) == want, done["changed"][2]
    assert sorted(done["changed"][3]) == sorted([*MODES, *(m for m in MODES if m not in REPLAYED)])
