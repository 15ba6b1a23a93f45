"""Refusals a new user meets on every run of an ordinary script (stale60):
a settings object its main block configures from the command line, read
by a step, (1) holding a value made anew in each process (`datetime.now()`
at import), (2) nested deeper than 8 objects. Run as `python flow.py` would
(`runpy` as `__main__`, once per phase: each run makes the module's objects
anew, as a new process does); the step's executions counted in a file."""

from __future__ import annotations

import runpy
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.fingerprint import fingerprint_function
from durable.errors import ConfigurationError

# `wf` suspends after its step; `python flow.py NAME LEAF [resume]`.
TAIL = """
@durable.step
def greet(x):
    with open(COUNT, "a") as f:
        f.write("ran\\n")
    return SETTINGS.name * x


@durable.workflow(run_id="settings")
def wf(x):
    out = greet(x)
    durable.wait_for("go")
    return out


if __name__ == "__main__":
    SETTINGS.name = sys.argv[1]
    configure_leaf(int(sys.argv[2]))
    try:
        if len(sys.argv) > 3:
            print("value", wf.resume("settings", inputs={"go": 1}).value)
        else:
            wf(2)
    except durable.Suspended:
        print("suspended")
    except durable.DefinitionChangedError as e:
        print("refused", e)
"""

# (2) Twelve objects deep: the leaf's `k` is configuration like the rest.
DEEP = """
import sys
import types

import durable

COUNT = __file__ + ".count"


class Node:
    def __init__(self, child=None):
        self.child = child
        self.k = 0


node = Node()
for _ in range(12):
    node = Node(node)
SETTINGS = types.SimpleNamespace(name="x", tree=node)


def configure_leaf(k):
    n = SETTINGS.tree
    while n.child is not None:
        n = n.child
    n.k = k
"""


def _phase(script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    monkeypatch.setattr(sys, "argv", [str(script), *argv])
    runpy.run_path(str(script), run_name="__main__")
    return capsys.readouterr().out.strip()


def _ran(script: Path) -> int:
    count = Path(f"{script}.count")
    return len(count.read_text().split()) if count.exists() else 0


def _script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: str) -> Path:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    script = tmp_path / "flow.py"
    script.write_text(textwrap.dedent(head) + TAIL)
    return script


@pytest.mark.parametrize(("argv", "resumed"), [(("ab", "1"), True), (("cd", "1"), False), (("ab", "2"), False)])
def test_settings_nested_deeper_than_eight_count_by_what_they_hold(
    argv: tuple[str, str],
    resumed: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same command line resumes (it was refused on every run: past 8
    levels the object counted as changed); another name, or another value
    twelve objects down, is a changed call."""
    script = _script(tmp_path, monkeypatch, DEEP)
    assert _phase(script, monkeypatch, capsys, "ab", "1") == "suspended"
    out = _phase(script, monkeypatch, capsys, *argv, "resume")
    if resumed:
        assert out == "value abab"
    else:
        assert out.startswith("refused") and "SETTINGS" in out, out
    assert _ran(script) == 1


CHAINED = """
    import types


    class Node:
        def __init__(self, child=None):
            self.child = child


    SETTINGS = types.SimpleNamespace(name="x", tree=None)
    for _ in range(5000):
        SETTINGS.tree = Node(SETTINGS.tree)


    def s(x):
        return SETTINGS.name * x
"""


def test_settings_nested_past_the_recursion_limit_count_as_changed_not_a_crash(load: Any) -> None:
    m = load("chained60", CHAINED)
    assert fingerprint_function(m.s).value != fingerprint_function(m.s).value


# (1) A value made anew in each process, in the object the step reads.
STARTED = """
import dataclasses
import datetime
import sys

import durable

COUNT = __file__ + ".count"


@dataclasses.dataclass
class Settings:
    name: str = "x"
    started: datetime.datetime = dataclasses.field(default_factory=datetime.datetime.now)


SETTINGS = Settings()


def configure_leaf(k):
    pass
"""


def test_a_value_made_anew_in_each_process_is_named_in_the_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The object the step reads holds another `started` in every process:
    a step reading it may return something else, so the resume is refused
    (fail closed), and the refusal says which attribute differs and what
    to do (before: only "now SETTINGS changed" and two hashes)."""
    script = _script(tmp_path, monkeypatch, STARTED)
    assert _phase(script, monkeypatch, capsys, "ab", "1") == "suspended"
    out = _phase(script, monkeypatch, capsys, "ab", "1", "resume")
    assert out.startswith("refused") and "SETTINGS.started differs" in out, out
    assert "name" not in out.split("SETTINGS.started differs")[1].split(";")[0], out  # only what differs
    assert "as an argument" in out, out
    assert _ran(script) == 1


def test_what_the_step_needs_passed_as_an_argument_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The way out the refusal gives: the name passed to the workflow and
    on to the step, neither reading the object: the same command line
    resumes, another is a changed call."""
    monkeypatch.setattr(
        sys.modules[__name__],
        "TAIL",
        TAIL.replace("def greet(x):", "def greet(x, name):")
        .replace("SETTINGS.name * x", "name * x")
        .replace("def wf(x):", "def wf(x, name):")
        .replace("greet(x)", "greet(x, name)")
        .replace('inputs={"go": 1})', 'inputs={"go": 1}, name=SETTINGS.name)')
        .replace("wf(2)", "wf(2, SETTINGS.name)"),
    )
    script = _script(tmp_path, monkeypatch, STARTED)
    assert _phase(script, monkeypatch, capsys, "ab", "1") == "suspended"
    assert _phase(script, monkeypatch, capsys, "ab", "1", "resume") == "value abab"
    assert _ran(script) == 1
    out = _phase(script, monkeypatch, capsys, "cd", "1", "resume")
    assert out.startswith("refused") and "arguments" in out, out
    assert _ran(script) == 1


# (3) A module making functions by `exec` of a text it holds.
EXECS = {
    "own_dict": """
        SRC = '''
        def made(x):
            return x + 1
        '''
        exec(SRC, globals())
        ITEMS = [1, 2]
    """,
    "other_dict": """
        SRC = '''
        def made(x):
            return x + 1
        '''
        NS = {}
        exec(SRC, NS)
        made = NS["made"]
        ITEMS = [1, 2]
    """,
}

STEPS = """
    import {mod}


    def reads_items(x):
        return sum({mod}.ITEMS) + x


    def calls_made(x):
        return {mod}.made(x)
"""


@pytest.mark.parametrize("kind", sorted(EXECS))
def test_functions_a_module_execs_from_a_text_it_holds_count_by_that_text(load: Any, kind: str) -> None:
    """A step reading the module's list (which reaches `made` through the
    module read whole) and a step calling `made`: fingerprinted the same
    in each fresh import (they raised ConfigurationError "cannot read the
    source of helper ?.made" at decoration), and changed by an edit of the
    text `made` is made from."""
    mod, flow = f"exec60_{kind}", f"exec60_{kind}_flow"

    def prints(body: str) -> tuple[str, str]:
        load(mod, body)
        m = load(flow, STEPS.format(mod=mod))
        return fingerprint_function(m.reads_items).value, fingerprint_function(m.calls_made).value

    first = prints(EXECS[kind])
    assert prints(EXECS[kind]) == first  # a new import: nothing changed
    edited = prints(EXECS[kind].replace("x + 1", "x + 2"))
    assert edited[1] != first[1]  # the code `made` runs changed


def test_a_function_execd_from_a_text_nothing_holds_still_asks_for_version(load: Any) -> None:
    """A text built at run time cannot be read: the error names the
    function, not `?.made`, and asks for version= (fail closed)."""
    load("exec60_built", 'NS = {}\nexec("def made(x):\\n    return x " + "+ 1", NS)\nmade = NS["made"]\n')
    m = load("exec60_built_flow", STEPS.format(mod="exec60_built"))
    with pytest.raises(ConfigurationError, match=r"helper made \(made by exec, in no module\).*version="):
        fingerprint_function(m.calls_made)

