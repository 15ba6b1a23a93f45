"""What runs for a step, changed between two processes in the ways a
program changes it: a helper rebound before the run, by the body or by a
function of another module the body imports and calls; a
`functools.singledispatch` implementation registered; a base class's
method a step calls through `super()`, here or in another module; the
user's own decorator (a function with `functools.wraps`, or a class)
under or over the step, here or in another module; a callable object's
`__call__` as step; `importlib.reload` of a helper's module by the body; a
helper chosen at import by a flag from the environment. Each run records
its step, stops, and is resumed in a new process: unchanged, it replays
(the step ran once); changed, it is refused and, rerun as the refusal
offers, runs the step again with what runs now.

A body doing `import setup70; setup70.setup()`, where `setup` rebinds the
step's helper when a variable of the environment is set, replayed the
step's output of the old helper (`6` where running gives `105`): that the
global it fills is filled from the environment was not seen through a
module the body imports itself (`outside.reads_outside`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow  # processes, forked

HEAD = "import os, functools, importlib, durable\nfrom c70 import count, stop\n"
HELPERS = "def helper(x):\n    return x + 1\n\ndef other(x):\n    return x + 100\n"
WRAPS = "def traced(fn):\n    @functools.wraps(fn)\n    def wrapper(*a):\n        return fn(*a) + 1\n    return wrapper\n"
CLASS_WRAPS = (
    "class traced:\n    def __init__(self, fn):\n        functools.update_wrapper(self, fn)\n"
    "        self.fn = fn\n    def __call__(self, *a):\n        return self.fn(*a) + 1\n"
)
BASE = "class Base:\n    def run(self, x):\n        return x + 1\n"
CHILD = "class Child({base}):\n    def run(self, x):\n        return super().run(x) * 2\n"


def _step(mode: str, returns: str, under: str = "", over: str = "") -> str:
    return f"{over}@durable.step\n{under}def s(x):\n    count({mode!r})\n    return {returns}\n"


# mode: (its module's text after HEAD, the body's first statement)
MODES = {
    "rebound": (
        HELPERS + _step("rebound", "helper(x)"),
        "pass",
    ),  # rebound by the program before the run
    "body": (
        HELPERS + _step("body", "helper(x)"),
        "global helper\n    if os.environ.get('CHANGED'):\n        helper = other",
    ),
    "always": (
        HELPERS + _step("always", "helper(x)"),
        "global helper\n    helper = other",
    ),  # `other` edited
    "setup": (HELPERS + _step("setup", "helper(x)"), "import setup70\n    setup70.setup()"),
    "dispatch": (
        "@functools.singledispatch\ndef render(x):\n    return 'obj'\n"
        + _step("dispatch", "render(x)"),
        "pass",
    ),
    "sup": (BASE + CHILD.format(base="Base") + _step("sup", "Child().run(x)"), "pass"),
    "supx": (
        "import base70\n" + CHILD.format(base="base70.Base") + _step("supx", "Child().run(x)"),
        "pass",
    ),
    "wraps": (WRAPS + _step("wraps", "x", under="@traced\n"), "pass"),
    "wrapsout": (WRAPS + _step("wrapsout", "x", over="@traced\n"), "pass"),
    "decox": ("from deco70 import traced\n" + _step("decox", "x", under="@traced\n"), "pass"),
    "objwrap": (CLASS_WRAPS + _step("objwrap", "x", under="@traced\n"), "pass"),
    "callobj": (
        "def helper(x):\n    return x + 1\nclass Scorer:\n    def __init__(self, k):\n        self.k = k\n"
        "    def __call__(self, x):\n        count('callobj')\n        return helper(x) * self.k\n"
        "s = durable.step(Scorer(2).__call__)\n",
        "pass",
    ),
    "reload": ("import h70\n" + _step("reload", "h70.helper(x)"), "importlib.reload(h70)"),
    "flag": (
        "if os.environ.get('FAST'):\n    def helper(x):\n        return x\nelse:\n    def helper(x):\n"
        "        return x * 2\n" + _step("flag", "helper(x)"),
        "pass",
    ),
    "pick": (
        "def fast(x):\n    return x\ndef slow(x):\n    return x * 2\nhelper = fast if os.environ.get('FAST') else slow\n"
        + _step("pick", "helper(x)"),
        "pass",
    ),
}
WF = """
@durable.workflow(run_id="{mode}")
def wf(x):
    {first}
    out = s(x)
    stop()
    return out
"""
FILES = {
    "c70.py": "import os, durable\n\ndef count(name):\n    with open(os.environ['COUNT_FILE'], 'a') as f:\n"
    "        f.write(name + '\\n')\n\ndef stop():\n    if os.environ.get('STOP'):\n        durable.suspend('waiting')\n",
    "h70.py": "def helper(x):\n    return x + 1\n",
    "base70.py": BASE,
    "deco70.py": "import functools\n" + WRAPS,
    "setup70.py": "import os, m_setup\n\ndef setup():\n    if os.environ.get('CHANGED'):\n        m_setup.helper = m_setup.other\n",
    "plug70.py": "import m_dispatch\n\n@m_dispatch.render.register(int)\ndef _(x):\n    return 'int'\n",
}
# In the second process of `changed`: these files edited, CHANGED and FAST set.
EDITS = {
    "m_always.py": ("x + 100", "x + 200"),
    "m_sup.py": ("x + 1\n", "x + 2\n"),
    "base70.py": ("x + 1\n", "x + 2\n"),
    "m_wraps.py": ("fn(*a) + 1", "fn(*a) + 2"),
    "m_wrapsout.py": ("fn(*a) + 1", "fn(*a) + 2"),
    "deco70.py": ("fn(*a) + 1", "fn(*a) + 2"),
    "m_objwrap.py": ("self.fn(*a) + 1", "self.fn(*a) + 2"),
    "m_callobj.py": ("helper(x) * self.k", "helper(x) * self.k + 1"),
    "h70.py": ("x + 1", "x + 2"),
}
RUN = """
import importlib, os, durable
if os.environ.get("CHANGED"):
    import plug70  # registers an implementation for int on `render`
for mode in os.environ["MODES"].split():
    mod = importlib.import_module("m_" + mode)
    if os.environ.get("CHANGED") and mode == "rebound":
        mod.helper = mod.other
    try:
        print(mode, "value", mod.wf(5))
    except durable.Suspended:
        print(mode, "suspended")
    except durable.DefinitionChangedError:
        print(mode, "refused then", mod.wf.with_options(on_change="rerun")(5))
"""
# What a run gives with the code of the second process of `changed`.
NOW = {"rebound": 105, "body": 105, "always": 205, "setup": 105, "dispatch": "int", "sup": 14, "supx": 14,
       "wraps": 7, "wrapsout": 7, "decox": 7, "objwrap": 7, "callobj": 13, "reload": 7, "flag": 5, "pick": 5}  # fmt: skip
BEFORE = {"rebound": 6, "body": 6, "always": 105, "setup": 6, "dispatch": "obj", "sup": 12, "supx": 12,
          "wraps": 6, "wrapsout": 6, "decox": 6, "objwrap": 6, "callobj": 12, "reload": 6, "flag": 10, "pick": 10}  # fmt: skip


def test_what_runs_for_a_step_changed_between_processes_is_refused_and_unchanged_replays(
    tmp_path: Path,
) -> None:
    folders = {"same": tmp_path / "same", "changed": tmp_path / "changed"}
    for folder in folders.values():
        folder.mkdir()
        for name, text in FILES.items():
            (folder / name).write_text(text)
        for mode, (text, first) in MODES.items():
            (folder / f"m_{mode}.py").write_text(HEAD + text + WF.format(mode=mode, first=first))

    def between(name: str, folder: Path) -> dict[str, str]:
        if name == "same":
            return {"MODES": " ".join(MODES)}
        for file, (old, new) in EDITS.items():
            text = (folder / file).read_text()
            assert old in text, file
            (folder / file).write_text(text.replace(old, new))
        return {"MODES": " ".join(MODES), "CHANGED": "1", "FAST": "1"}

    done = twice(folders, RUN, between, first={"MODES": " ".join(MODES), "STOP": "1"})
    for first, counted, _, _ in done.values():
        assert first.split("\n")[: len(MODES)] == [f"{m} suspended" for m in MODES], first
        assert sorted(counted) == sorted(MODES), counted
    said = {
        line.split()[0]: line for line in done["same"][2].splitlines() if line.split()[0] in MODES
    }
    assert said == {m: f"{m} value {BEFORE[m]}" for m in MODES}, done["same"][2]
    assert sorted(done["same"][3]) == sorted(MODES)  # each replayed: run once, in the first process
    said = {
        line.split()[0]: line
        for line in done["changed"][2].splitlines()
        if line.split()[0] in MODES
    }
    # Was: "setup value 6", the step not run again.
    assert said == {m: f"{m} refused then {NOW[m]}" for m in MODES}, done["changed"][2]
    assert sorted(done["changed"][3]) == sorted(
        [*MODES, *MODES]
    )  # each run again once, in the second
