"""What a workflow's body fills from the environment or a file counts for
the steps reading it (stale56's rule, `bound._filled_from_outside`), but
two ways of filling were left out, and a run resumed in a new process after
the file or the environment changed replayed what the old one computed:

- a function the body picks that way (`helper = fb if os.environ["MODE"]
  == "b" else fa`, `helpers.f = ...` in another module, or the code a file
  holds, `exec(open("patch.py").read(), globals())`): a step's fingerprint
  counts every function a global may be bound to, not which one it is, and
  the rule skipped functions (value 101 for 2, 101 for 8);
- globals the text does not name (`globals().update(json.load(f))`): the
  rule looked for each global by name and skipped the `*` the analysis
  gives them (value 101 for 8).

Each now counts by what it is (a function by its name and its code) as
the run's first step reading it finds it: the resume is refused, and under
on_change="rerun" computes with what the environment or file says now."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import run_each

pytestmark = pytest.mark.slow  # three processes

FLOW = """
import json, os
import durable
import helpers52 as helpers

def fa(x):
    return x + 1

def fb(x):
    return x + 100

helper = fa
K = 1

def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def local(x):
    counted("local")
    return helper(x)

@durable.step
def other(x):
    counted("other")
    return helpers.f(x)

@durable.step
def keyed(x):
    counted("keyed")
    return x + K

@durable.step
def patched(x):
    counted("patched")
    return patch(x)

def patch(x):
    return x

def stop(value):
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return value

@durable.workflow(run_id="r")
def picked():
    global helper
    helper = fb if os.environ["MODE52"] == "b" else fa
    helpers.f = helpers.fb if os.environ["MODE52"] == "b" else helpers.fa
    return stop([local(1), other(1)])

@durable.workflow(run_id="r")
def loaded():
    with open("cfg.json") as f:
        globals().update(json.load(f))
    return stop(keyed(1))

CONFIG = {}

@durable.step
def summed(x):
    counted("summed")
    return x + sum(CONFIG[k] for k in ("K",))  # read in a generator's own code (3.10, 3.11)

@durable.workflow(run_id="r")
def comprehended():
    with open("cfg.json") as f:
        CONFIG.update(json.load(f))
    return stop(summed(1))

@durable.workflow(run_id="r")
def executed():
    with open("patch.py") as f:
        exec(f.read(), globals())
    return stop(patched(1))
"""

HELPERS = """
def fa(x):
    return x + 1

def fb(x):
    return x + 100

f = fa
"""

# One workflow a process (two that share no global): a run's globals filled in one would be
# another's start.
RUN = """
import os, durable, flow52
for name in os.environ["WF52"].split(","):
    try:
        print("value", getattr(flow52, name)())
    except durable.Suspended:
        print("suspended")
    except durable.DefinitionChangedError:
        print("refused")
"""
HOWS = ("picked,comprehended", "loaded", "executed")


def _inputs(folder: Path, mode: str, k: int) -> dict[str, str]:
    (folder / "cfg.json").write_text(json.dumps({"K": k}))
    (folder / "patch.py").write_text(f"def patch(x):\n    return x + {k}\n")
    return {"MODE52": mode}


def test_what_the_body_fills_from_outside_is_no_replay_in_a_new_process(tmp_path: Path) -> None:
    (tmp_path / "flow52.py").write_text(FLOW)
    (tmp_path / "helpers52.py").write_text(HELPERS)
    env = {**_inputs(tmp_path, "b", 100), "STOP": "1"}
    assert "".join(run_each([(tmp_path, RUN, {**env, "WF52": how}) for how in HOWS])) == "suspended\n" * 4
    counts = (tmp_path / "count").read_text().split()
    assert sorted(counts) == ["keyed", "local", "other", "patched", "summed"]
    env = _inputs(tmp_path, "a", 7)
    second = "".join(run_each([(tmp_path, RUN, {**env, "WF52": how}) for how in HOWS]))
    # Was: value [101, 101], value 101, value 101, value 101 (what MODE52=b, K 100 and +100 computed).
    assert second == "refused\n" * 4, second
    env["DURABLE_ON_CHANGE"] = "rerun"
    third = "".join(run_each([(tmp_path, RUN, {**env, "WF52": how}) for how in HOWS]))
    assert third == "value [2, 2]\nvalue 8\nvalue 8\nvalue 8\n", third
    assert sorted((tmp_path / "count").read_text().split()) == sorted(counts * 2)  # each ran once more


LOADER = """
import json

def fill(path):
    with open(path) as f:
        return json.load(f)

def apply(settings, path):
    settings.update(fill(path))
"""

# Two modules: the body's `loader52.apply(...)` in the first made its `CFG` count anyway.
IMPORTED = """
import os
import durable
import loader52

class Cfg:
    def __init__(self, d):
        self.k = d["k"]

CFG = Cfg(loader52.fill("cfg.json"))

@durable.step
def at_import(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("at_import\\n")
    return x + CFG.k

@durable.workflow(run_id="r")
def imported():
    out = at_import(1)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

HANDED = """
import os
import durable
import loader52

SETTINGS = {}

@durable.step
def in_body(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("in_body\\n")
    return x + SETTINGS["k"]

@durable.workflow(run_id="r")
def handed():
    loader52.apply(SETTINGS, "cfg.json")
    out = in_body(1)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

# Run as a script is (`python run.py`): code with no file counts what it may change (`unseen`).
RUN_LOADED = """
import os, durable, imported52, handed52
__file__ = os.path.abspath("run.py")
for wf in (imported52.imported, handed52.handed):
    try:
        print("value", wf())
    except durable.Suspended:
        print("suspended")
    except durable.DefinitionChangedError:
        print("refused")
"""


def test_a_file_read_by_a_function_called_through_its_module_counts(tmp_path: Path) -> None:
    """`loader.fill(path)` (a function of another module of yours, called
    through the module) reading a file was not followed, where `from loader
    import fill` was: a global made by it at import (`CFG =
    Cfg(loader.fill("cfg.json"))`) counted by its class alone, and one the
    body fills by it (`loader.apply(SETTINGS, path)`) not at all; resumed
    after cfg.json changed, both replayed what the old file computed."""
    (tmp_path / "loader52.py").write_text(LOADER)
    (tmp_path / "imported52.py").write_text(IMPORTED)
    (tmp_path / "handed52.py").write_text(HANDED)
    (tmp_path / "cfg.json").write_text(json.dumps({"k": 2}))
    assert run_each([(tmp_path, RUN_LOADED, {"STOP": "1"})]) == ["suspended\nsuspended\n"]
    (tmp_path / "cfg.json").write_text(json.dumps({"k": 3}))
    second, third = run_each([(tmp_path, RUN_LOADED, {}), (tmp_path, RUN_LOADED, {"DURABLE_ON_CHANGE": "rerun"})])
    assert second == "refused\nrefused\n", second  # was: value 3, value 3
    assert third == "value 4\nvalue 4\n", third
    assert sorted((tmp_path / "count").read_text().split()) == ["at_import", "at_import", "in_body", "in_body"]


SAME = """
    import json, os
    import durable

    K = 1
    CALLS = []
    STOP = [1]

    @durable.step
    def keyed(x):
        CALLS.append(x)
        return x + K

    @durable.workflow(run_id="r")
    def loaded(folder):
        with open(os.path.join(folder, "cfg.json")) as f:
            globals().update(json.load(f))
        out = keyed(1)
        if STOP:
            durable.suspend("waiting")
        return out
"""


def test_globals_the_body_updated_are_no_change_to_a_resume_in_the_same_process(
    load: Any, tmp_path: Path
) -> None:
    """A false refusal: the body's `globals().update(json.load(f))` set a
    constant (K = 1 -> 100), so a notebook calling the suspended run again
    in its kernel was refused ('constant K changed'), where a new process,
    whose import leaves K = 1, resumes it: what a call's body leaves behind
    counted only for globals counted by their contents (`definition.
    left_behind`), not for a constant of a module whose any global it fills.
    Nor does what the module's own functions write (`CALLS.append(x)`)
    count as filled from the file: it is the state the steps keep."""
    durable.configure(store=str(tmp_path / "store"))
    m = load("review52_same", SAME)
    (tmp_path / "cfg.json").write_text(json.dumps({"K": 100}))
    with pytest.raises(durable.Suspended):
        m.loaded(str(tmp_path))
    (tmp_path / "cfg.json").write_text(json.dumps({"K": 7}))
    with pytest.raises(durable.DefinitionChangedError):  # the file changed: no replay of 101
        m.loaded(str(tmp_path))
    (tmp_path / "cfg.json").write_text(json.dumps({"K": 100}))
    m.STOP.clear()
    assert m.loaded(str(tmp_path)) == 101  # was DefinitionChangedError: constant K changed
    assert m.CALLS == [1]
