"""What runs for a step, changed between two processes in ways stale70 did
not try: a helper rebound by a function the body imports relatively (`from
. import setup71; setup71.setup()`, `from .setup71 import setup as go`, in
a package); a handler picked from a dict filled at import
(`HANDLERS[kind]`) and edited; a method a class decorator's mixin
supplies, edited; a `functools.partial` of
a helper kept at module level, the helper edited; a helper chosen by
`getattr(module, NAME)` with NAME from the environment or a JSON file read
at import; a lambda kept in a module's dict, edited. Each run records its
step, stops (suspended), and is resumed in a new process: unchanged, it
replays (the step ran once); changed, it is refused and, rerun as the
refusal offers, runs the step again with what runs now.

`from . import setup71; setup71.setup()`, where `setup` rebinds the step's
helper when a variable of the environment is set, replayed the step's old
output (`6` where running gives `105`): the body's relative imports were
not resolved (`fills.imported_in`). The others were refused before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow  # processes, forked

HEAD = "import os, functools, durable\nfrom c71 import count, stop\n"
HELPERS = "def helper(x):\n    return x + 1\n\ndef other(x):\n    return x + 100\n"


def _step(mode: str, returns: str, params: str = "x") -> str:
    return f"@durable.step\ndef s({params}):\n    count({mode!r})\n    return {returns}\n"


# mode: (its module's text after HEAD, the body's first statement, the step's call)
MODES = {
    "rel": (HELPERS + _step("rel", "helper(x)"), "from . import setup71\n    setup71.setup()", "s(x)"),
    "relfrom": (HELPERS + _step("relfrom", "helper(x)"), "from .setup71 import setup as go\n    go()", "s(x)"),
    "handlers": (
        "def ha(x):\n    return x + 1\ndef hb(x):\n    return x + 2\nHANDLERS = {}\nHANDLERS['a'] = ha\n"
        "HANDLERS['b'] = hb\n" + _step("handlers", "HANDLERS[kind](x)", "kind, x"),
        "pass",
        "s('a', x)",
    ),
    "mixin": (
        "from .mix71 import with_mixin\n@with_mixin\nclass Thing:\n    k = 2\n"
        + _step("mixin", "Thing().run(x)"),
        "pass",
        "s(x)",
    ),
    "partial": (
        "def helper(x, k):\n    return x * k\nP = functools.partial(helper, k=2)\n" + _step("partial", "P(x)"),
        "pass",
        "s(x)",
    ),
    "getattr": (
        "from . import hs71\nNAME = os.environ.get('PICK71', 'slow')\n"
        + _step("getattr", "getattr(hs71, NAME)(x)"),
        "pass",
        "s(x)",
    ),
    "lambda": (
        "OPS = {'inc': lambda x: x + 1, 'dec': lambda x: x - 1}\n" + _step("lambda", "OPS['inc'](x)"),
        "pass",
        "s(x)",
    ),
    "getattrconf": (
        "import json\nfrom . import hs71\nwith open(os.path.join(os.path.dirname(__file__), 'conf71.json')) as f:\n"
        "    NAME = json.load(f)['helper']\n" + _step("getattrconf", "getattr(hs71, NAME)(x)"),
        "pass",
        "s(x)",
    ),
}
WF = """
@durable.workflow(run_id="{mode}")
def wf(x):
    {first}
    out = {call}
    stop()
    return out
"""
FILES = {
    "c71.py": "import os, durable\n\ndef count(name):\n    with open(os.environ['COUNT_FILE'], 'a') as f:\n"
    "        f.write(name + '\\n')\n\ndef stop():\n    if os.environ.get('STOP'):\n        durable.suspend('waiting')\n",
    "p71/__init__.py": "",
    "p71/setup71.py": "import os\nfrom . import m_rel, m_relfrom\n\ndef setup():\n    if os.environ.get('CHANGED'):\n"
    "        m_rel.helper = m_rel.other\n        m_relfrom.helper = m_relfrom.other\n",
    "p71/mix71.py": "class Mixin:\n    def run(self, x):\n        return x * self.k\n\n"
    "def with_mixin(cls):\n    return type(cls.__name__, (Mixin, cls), {})\n",
    "p71/hs71.py": "def slow(x):\n    return x * 2\n\ndef fast(x):\n    return x\n\n"
    "",
    "p71/conf71.json": '{"helper": "slow"}',
}
# In the second process of `changed`: these files edited, CHANGED and PICK71 set.
EDITS = {
    "p71/m_handlers.py": ("x + 1", "x + 3"),
    "p71/mix71.py": ("x * self.k", "x * self.k + 1"),
    "p71/hs71.py": ("x * 2", "x * 3"),
    "p71/conf71.json": ('"slow"', '"fast"'),
    "p71/m_partial.py": ("x * k", "x * k + 1"),
    "p71/m_lambda.py": ("x + 1", "x + 4"),
}
RUN = """
import importlib, os, durable
for mode in os.environ["MODES"].split():
    mod = importlib.import_module("p71.m_" + mode)
    try:
        print(mode, "value", mod.wf(5))
    except durable.Suspended:
        print(mode, "suspended")
    except durable.DefinitionChangedError:
        print(mode, "refused then", mod.wf.with_options(on_change="rerun")(5))
"""
# What a run gives with the code of the first process, and of the second of `changed`.
BEFORE = {"rel": 6, "relfrom": 6, "handlers": 6, "mixin": 10, "partial": 10, "getattr": 10, "lambda": 6, "getattrconf": 10}
NOW = {"rel": 105, "relfrom": 105, "handlers": 8, "mixin": 11, "partial": 11, "getattr": 5, "lambda": 9, "getattrconf": 5}


def test_what_runs_for_a_step_changed_between_processes_is_refused_and_unchanged_replays(
    tmp_path: Path,
) -> None:
    folders = {"same": tmp_path / "same", "changed": tmp_path / "changed"}
    for folder in folders.values():
        (folder / "p71").mkdir(parents=True)
        for name, text in FILES.items():
            (folder / name).write_text(text)
        for mode, (text, first, call) in MODES.items():
            (folder / f"p71/m_{mode}.py").write_text(HEAD + text + WF.format(mode=mode, first=first, call=call))

    def between(name: str, folder: Path) -> dict[str, str]:
        if name == "same":
            return {"MODES": " ".join(MODES)}
        for file, (old, new) in EDITS.items():
            text = (folder / file).read_text()
            assert old in text, file
            (folder / file).write_text(text.replace(old, new))
        return {"MODES": " ".join(MODES), "CHANGED": "1", "PICK71": "fast"}

    done = twice(folders, RUN, between, first={"MODES": " ".join(MODES), "STOP": "1"})
    for first, counted, _, _ in done.values():
        assert first.split("\n")[: len(MODES)] == [f"{m} suspended" for m in MODES], first
        assert sorted(counted) == sorted(MODES), counted

    def said(out: str) -> dict[str, str]:
        return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in MODES}

    assert said(done["same"][2]) == {m: f"{m} value {BEFORE[m]}" for m in MODES}, done["same"][2]
    assert sorted(done["same"][3]) == sorted(MODES)  # each replayed: run once, in the first process
    # Was: "rel value 6", "relfrom value 6", the step not run again.
    assert said(done["changed"][2]) == {m: f"{m} refused then {NOW[m]}" for m in MODES}, done["changed"][2]
    assert sorted(done["changed"][3]) == sorted([*MODES, *MODES])  # each run again once, in the second
